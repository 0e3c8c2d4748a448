//! userns + host-network containers through the wrapper, backed by youki
//! 0.7.0 (built from crates.io by scripts/youki.sh into target/youki).

mod common;

use common::Runtime;

#[test]
fn wrapper_runs_userns_hostnet_container() {
    common::scenario_converted_run(Runtime::Youki, true);
}

#[test]
fn plain_youki_fails_with_sysfs_eperm() {
    common::scenario_plain_runtime_fails_with_eperm(Runtime::Youki);
}

#[test]
fn cgroup_namespace_gets_read_only_cgroup_mount() {
    common::scenario_cgroupns_gets_own_cgroup_mount(Runtime::Youki, true);
}

#[test]
fn sys_is_mounted_before_the_cgroup_mount() {
    common::scenario_sys_moves_before_cgroup(Runtime::Youki);
}
