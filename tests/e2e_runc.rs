//! userns + host-network containers through the wrapper, backed by runc.

mod common;

use common::Runtime;

#[test]
fn wrapper_runs_userns_hostnet_container() {
    common::scenarios::converted_run(Runtime::Runc, true);
}

#[test]
fn plain_runc_fails_with_sysfs_eperm() {
    common::scenarios::plain_runtime_fails_with_eperm(Runtime::Runc);
}

#[test]
fn cgroup_namespace_gets_read_only_cgroup_mount() {
    common::scenarios::cgroupns_gets_own_cgroup_mount(Runtime::Runc, true);
}

#[test]
fn sys_is_mounted_before_the_cgroup_mount() {
    common::scenarios::sys_moves_before_cgroup(Runtime::Runc);
}

/// The same with runc 1.4.3 (what containerd 2.3.4 pins), unpacked by
/// scripts/cri-tools.sh: it knows `rro` and reads its argv as runc 1.1
/// does where the wrapper reads it at all.
mod runc_1_4 {
    use super::common::{self, Runtime};

    #[test]
    fn wrapper_runs_userns_hostnet_container() {
        common::scenarios::converted_run(Runtime::Runc14, true);
    }

    #[test]
    fn plain_runc_fails_with_sysfs_eperm() {
        common::scenarios::plain_runtime_fails_with_eperm(Runtime::Runc14);
    }

    #[test]
    fn cgroup_namespace_gets_read_only_cgroup_mount() {
        common::scenarios::cgroupns_gets_own_cgroup_mount(Runtime::Runc14, true);
    }

    #[test]
    fn sys_is_mounted_before_the_cgroup_mount() {
        common::scenarios::sys_moves_before_cgroup(Runtime::Runc14);
    }
}

/// The same with runc 1.5.3 (what containerd 2.4.2 pins, runtime-spec
/// 1.3), unpacked by scripts/cri-tools.sh.
mod runc_1_5 {
    use super::common::{self, Runtime};

    #[test]
    fn wrapper_runs_userns_hostnet_container() {
        common::scenarios::converted_run(Runtime::Runc15, true);
    }

    #[test]
    fn plain_runc_fails_with_sysfs_eperm() {
        common::scenarios::plain_runtime_fails_with_eperm(Runtime::Runc15);
    }

    #[test]
    fn cgroup_namespace_gets_read_only_cgroup_mount() {
        common::scenarios::cgroupns_gets_own_cgroup_mount(Runtime::Runc15, true);
    }

    #[test]
    fn sys_is_mounted_before_the_cgroup_mount() {
        common::scenarios::sys_moves_before_cgroup(Runtime::Runc15);
    }
}
