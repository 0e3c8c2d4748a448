//! userns + host-network containers through the wrapper, backed by crun.
//!
//! crun 1.8.1 clones bind mounts in the host before entering the user
//! namespace, without their submounts: the host's bpffs and securityfs do not
//! appear under the container's /sys, so their presence is not required here.

mod common;

use common::{Bundle, ContainerGuard, Probe, Runtime, Sandbox};

const CRUN_KEEPS_HOST_SUBMOUNTS: bool = false;

#[test]
fn wrapper_runs_userns_hostnet_container() {
    common::scenarios::converted_run(Runtime::Crun, CRUN_KEEPS_HOST_SUBMOUNTS);
}

#[test]
fn cgroup_namespace_gets_read_only_cgroup_mount() {
    common::scenarios::cgroupns_gets_own_cgroup_mount(Runtime::Crun, CRUN_KEEPS_HOST_SUBMOUNTS);
}

#[test]
fn sys_is_mounted_before_the_cgroup_mount() {
    common::scenarios::sys_moves_before_cgroup(Runtime::Crun);
}

/// crun alone falls back to a bind of /sys when sysfs fails, but keeps the
/// network capabilities and loses the locked mount flags: the wrapper is what
/// makes the result least-privilege.
#[test]
fn plain_crun_keeps_network_caps_and_loses_sys_flags() {
    let sandbox = Sandbox::new(Runtime::Crun);
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    let snap = bundle.snapshot();
    let id = common::unique_id("plain");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = common::run_probe(&sandbox.real(), &bundle, &id);
    out.assert_success();
    snap.assert_unchanged(&bundle.config_path(), "crun");
    let probe = Probe::parse(&out.stdout);
    let bnd = probe.cap_bnd();
    assert!(
        common::NET_CAP_BITS
            .iter()
            .all(|bit| common::has_cap_bit(bnd, *bit)),
        "crun alone is expected to keep the network capabilities: CapBnd {bnd:016x}"
    );
    let sys = probe.topmost("/sys").expect("crun mounted /sys");
    assert!(
        !(sys.has("nosuid") && sys.has("nodev") && sys.has("noexec")),
        "crun 1.8.1's fallback is expected to drop nosuid/nodev/noexec on /sys: {:?}",
        sys.options
    );
}

/// The same with crun 1.27.1 (static, unpacked by scripts/cri-tools.sh),
/// run, as every runtime here, in the pure cgroup v2 view that its check
/// for hybrid cgroups needs.
mod crun_1_27 {
    use super::common::{self, Bundle, ContainerGuard, Probe, Runtime, Sandbox};

    /// crun 1.27.1 binds /sys with its submounts.
    const CRUN_127_KEEPS_HOST_SUBMOUNTS: bool = true;

    #[test]
    fn wrapper_runs_userns_hostnet_container() {
        common::scenarios::converted_run(Runtime::Crun127, CRUN_127_KEEPS_HOST_SUBMOUNTS);
    }

    #[test]
    fn cgroup_namespace_gets_read_only_cgroup_mount() {
        common::scenarios::cgroupns_gets_own_cgroup_mount(
            Runtime::Crun127,
            CRUN_127_KEEPS_HOST_SUBMOUNTS,
        );
    }

    #[test]
    fn sys_is_mounted_before_the_cgroup_mount() {
        common::scenarios::sys_moves_before_cgroup(Runtime::Crun127);
    }

    /// crun 1.27.1 alone also falls back to a bind of /sys when sysfs
    /// fails, read-only all the way down now, but it keeps the network
    /// capabilities: the wrapper is what drops them.
    #[test]
    fn plain_crun_keeps_network_caps() {
        let sandbox = Sandbox::new(Runtime::Crun127);
        let bundle = Bundle::userns_hostnet(&common::probe_args());
        let snap = bundle.snapshot();
        let id = common::unique_id("plain-127");
        let _guard = ContainerGuard::new(&sandbox, &id);

        let out = common::run_probe(&sandbox.real(), &bundle, &id);
        out.assert_success();
        snap.assert_unchanged(&bundle.config_path(), "crun 1.27.1");
        let probe = Probe::parse(&out.stdout);
        let bnd = probe.cap_bnd();
        eprintln!("crun 1.27.1 alone: CapBnd {bnd:016x}\n{}", probe.table());
        assert!(
            common::NET_CAP_BITS
                .iter()
                .all(|bit| common::has_cap_bit(bnd, *bit)),
            "crun 1.27.1 alone is expected to keep the network capabilities: CapBnd {bnd:016x}"
        );
        assert!(
            probe.topmost("/sys").is_some(),
            "crun 1.27.1 mounted no /sys"
        );
    }
}
