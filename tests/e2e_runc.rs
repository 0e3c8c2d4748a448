//! userns + host-network containers through the wrapper, backed by runc.

mod common;

use common::Runtime;

#[test]
fn wrapper_runs_userns_hostnet_container() {
    common::scenario_converted_run(Runtime::Runc, true);
}

#[test]
fn plain_runc_fails_with_sysfs_eperm() {
    common::scenario_plain_runtime_fails_with_eperm(Runtime::Runc);
}

#[test]
fn cgroup_namespace_gets_read_only_cgroup_mount() {
    common::scenario_cgroupns_gets_own_cgroup_mount(Runtime::Runc, true);
}

#[test]
fn sys_is_mounted_before_the_cgroup_mount() {
    common::scenario_sys_moves_before_cgroup(Runtime::Runc);
}
