//! podman 4.3 with `--runtime`: conmon calls the wrapper with a scrubbed
//! environment and its sync pipes as inherited fds; the wrapper falls back to
//! the first runtime in PATH (runc) and converts the userns + host-network
//! container.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Outcome, Probe};
use tempfile::TempDir;

/// A private, writable copy of the rootfs: podman writes into it.
struct PodmanRootfs {
    tmp: TempDir,
}

impl PodmanRootfs {
    fn new() -> PodmanRootfs {
        common::require_prerequisites(common::Runtime::Runc);
        assert!(
            common::find_in_path("podman").is_some(),
            "`podman` is missing: install the Debian package podman"
        );
        let tmp = tempfile::Builder::new()
            .prefix("uhn-podman-")
            .tempdir()
            .unwrap();
        let dest = tmp.path().join("rootfs");
        common::build_rootfs(&dest);
        std::fs::create_dir_all(dest.join("run")).unwrap();
        std::fs::write(dest.join("run/.containerenv"), "").unwrap();
        common::run_ok(
            Command::new("chown")
                .arg("-R")
                .arg("-h")
                .arg("100000:100000")
                .arg(&dest),
        );
        PodmanRootfs { tmp }
    }

    fn path(&self) -> PathBuf {
        self.tmp.path().join("rootfs")
    }
}

/// Removes the named container if a failed run left it behind.
struct PodmanName(String);

impl Drop for PodmanName {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "--force", "--ignore", &self.0])
            .output();
    }
}

fn podman_run(runtime: &Path, rootfs: &Path, name: &str, args: &[&str]) -> Outcome {
    common::run_capture(
        Command::new("podman")
            .arg("--runtime")
            .arg(runtime)
            .args([
                "run",
                "--rm",
                "--name",
                name,
                "--network",
                "host",
                "--uidmap",
                "0:100000:65536",
                "--gidmap",
                "0:100000:65536",
                "--ulimit",
                "nofile=20000:20000",
                "--ulimit",
                "nproc=1000:1000",
                "--rootfs",
            ])
            .arg(rootfs)
            .args(args),
    )
}

#[test]
fn podman_runs_userns_hostnet_container_through_wrapper() {
    let rootfs = PodmanRootfs::new();
    let name = PodmanName(common::unique_id("podman"));
    let out = podman_run(
        Path::new(common::WRAPPER),
        &rootfs.path(),
        &name.0,
        &common::probe_args(),
    );
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    // podman 4.3 drops CAP_NET_RAW and keeps CAP_NET_BIND_SERVICE by default:
    // the latter must be gone.
    assert!(
        !common::has_cap_bit(probe.cap_bnd(), 10),
        "CAP_NET_BIND_SERVICE kept: CapBnd {:016x}",
        probe.cap_bnd()
    );
    common::assert_converted_view(&probe, false);
}

/// podman 4.3 alone already replaces sysfs by a bind of /sys, but with
/// `rbind,ro`: the host's submounts stay writable at the mount level and the
/// network capabilities stay. This is what the wrapper fixes under podman.
#[test]
fn podman_with_plain_runc_leaves_host_submounts_writable() {
    let rootfs = PodmanRootfs::new();
    let name = PodmanName(common::unique_id("podman-plain"));
    let out = podman_run(
        &common::Runtime::Runc.path(),
        &rootfs.path(),
        &name.0,
        &common::probe_args(),
    );
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    let writable: Vec<String> = probe
        .under_sys()
        .iter()
        .filter(|m| !m.has("ro"))
        .map(|m| format!("{} {}", m.mount_point, m.options.join(",")))
        .collect();
    assert!(
        !writable.is_empty(),
        "podman alone is expected to leave host submounts of /sys writable:\n{}",
        probe.table()
    );
    assert!(
        common::has_cap_bit(probe.cap_bnd(), 10),
        "podman alone is expected to keep CAP_NET_BIND_SERVICE: CapBnd {:016x}",
        probe.cap_bnd()
    );
}
