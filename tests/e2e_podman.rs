//! podman 4.3 with `--runtime`: conmon calls the wrapper with a scrubbed
//! environment and its sync pipes as inherited fds; the wrapper falls back to
//! the first runtime in PATH (runc) and converts the userns + host-network
//! container. podman binds /sys itself with `rbind,ro` (`rw` when
//! privileged): only the top mount is read-only, the host's submounts
//! (this host's cgroup v1 hierarchies) stay writable without the wrapper.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::podman::{GIDMAP, UIDMAP, ULIMITS};
use common::{show, wrapper, writable_under_sys, Outcome, Probe};
use tempfile::TempDir;

/// A private, writable copy of the rootfs: podman writes into it.
struct PodmanRootfs {
    tmp: TempDir,
}

impl PodmanRootfs {
    fn new() -> PodmanRootfs {
        common::podman::require_podman();
        common::podman::remove_dead_containers("uhn-pod-");
        PodmanRootfs {
            tmp: common::podman::writable_rootfs("uhn-podman-"),
        }
    }

    fn path(&self) -> PathBuf {
        self.tmp.path().join("rootfs")
    }
}

/// Names of the containers these tests create: `uhn-pod-PID-N`.
fn container_name() -> PodmanName {
    PodmanName {
        name: common::unique_id("pod"),
        cid_dir: tempfile::Builder::new()
            .prefix("uhn-podman-cid-")
            .tempdir()
            .unwrap(),
    }
}

/// A container name and the file podman writes its id to (`--cidfile`).
/// Dropping it removes what a failed test left: the podman container and,
/// through runc itself, a runc container podman no longer knows.
struct PodmanName {
    name: String,
    cid_dir: TempDir,
}

impl PodmanName {
    fn cidfile(&self) -> PathBuf {
        self.cid_dir.path().join("cid")
    }

    fn id(&self) -> Option<String> {
        std::fs::read_to_string(self.cidfile())
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// Fails the test if podman still knows the container or runc still
    /// holds its state.
    fn assert_gone(&self) {
        let out = podman(
            &["ps", "--all", "--quiet", "--filter"],
            &[&format!("name=^{}$", self.name)],
        );
        out.assert_success();
        assert!(
            out.stdout.trim().is_empty(),
            "podman still lists {}: {}",
            self.name,
            out.stdout
        );
        let id = self
            .id()
            .unwrap_or_else(|| panic!("podman wrote no id to {:?}", self.cidfile()));
        let state = runc_state(&id);
        assert!(
            state.is_none(),
            "runc still holds container {id} ({}) after podman removed it: {state:?}\n\
             podman calls `kill` and `delete` with no PATH in the environment; \
             the wrapper must still find the real runtime",
            self.name
        );
    }
}

/// runc's state of a podman container (podman runs runc with --root /run/runc).
fn runc_state(id: &str) -> Option<String> {
    let out = common::run_capture(Command::new(common::Runtime::Runc.path()).args([
        "--root",
        "/run/runc",
        "state",
        id,
    ]));
    out.success().then_some(out.stdout)
}

impl Drop for PodmanName {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "--force", "--ignore", "--time", "0", &self.name])
            .output();
        if let Some(id) = self.id() {
            if runc_state(&id).is_some() {
                let _ = Command::new(common::Runtime::Runc.path())
                    .args(["--root", "/run/runc", "delete", "--force", &id])
                    .output();
                let _ = Command::new("podman")
                    .args(["rm", "--force", "--ignore", "--time", "0", &self.name])
                    .output();
            }
        }
    }
}

/// `podman ARGS MORE`, its output captured.
fn podman(args: &[&str], more: &[&str]) -> Outcome {
    common::run_capture(Command::new("podman").args(args).args(more))
}

/// `podman --runtime RUNTIME run --rm --name NAME --network NET --uidmap
/// --gidmap [EXTRA] --rootfs ROOTFS ARGS`.
fn podman_run_with(
    runtime: &Path,
    rootfs: &Path,
    name: &PodmanName,
    network: &str,
    extra: &[&str],
    args: &[&str],
) -> Outcome {
    common::run_capture(
        Command::new("podman")
            .arg("--runtime")
            .arg(runtime)
            .args(["run", "--rm", "--name", &name.name, "--network", network])
            .args(UIDMAP)
            .args(GIDMAP)
            .args(ULIMITS)
            .arg("--cidfile")
            .arg(name.cidfile())
            .args(extra)
            .arg("--rootfs")
            .arg(rootfs)
            .args(args),
    )
}

/// A probe container that podman runs through RUNTIME on the host network,
/// with EXTRA options: what it saw, printed for the test log as WHAT. Fails
/// unless it ran and podman and runc forgot it afterwards.
fn probe_run(runtime: &Path, extra: &[&str], what: &str) -> Probe {
    let rootfs = PodmanRootfs::new();
    let name = container_name();
    let out = podman_run_with(
        runtime,
        &rootfs.path(),
        &name,
        "host",
        extra,
        &common::probe_args(),
    );
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    show(what, &probe);
    name.assert_gone();
    probe
}

#[test]
fn podman_runs_userns_hostnet_container_through_wrapper() {
    let probe = probe_run(wrapper(), &[], "podman + wrapper + runc");
    // podman 4.3 drops CAP_NET_RAW and keeps CAP_NET_BIND_SERVICE by default:
    // the latter must be gone.
    assert!(
        !common::has_cap_bit(probe.cap_bnd(), 10),
        "CAP_NET_BIND_SERVICE kept: CapBnd {:016x}",
        probe.cap_bnd()
    );
    common::assert_converted_view(&probe, false);
    assert!(
        probe.under_sys().len() > 1,
        "the host's submounts of /sys should be there, read-only:\n{}",
        probe.table()
    );
}

/// podman 4.3 alone already replaces sysfs by a bind of /sys, but with
/// `rbind,ro`: the host's submounts stay writable at the mount level and the
/// network capabilities stay. This is what the wrapper fixes under podman.
#[test]
fn podman_with_plain_runc_leaves_host_submounts_writable() {
    let probe = probe_run(&common::Runtime::Runc.path(), &[], "podman + runc alone");
    assert!(
        !writable_under_sys(&probe).is_empty(),
        "podman alone is expected to leave host submounts of /sys writable:\n{}",
        probe.table()
    );
    assert!(
        common::has_cap_bit(probe.cap_bnd(), 10),
        "podman alone is expected to keep CAP_NET_BIND_SERVICE: CapBnd {:016x}",
        probe.cap_bnd()
    );
}

/// `--privileged` makes podman bind /sys `rw`: through the wrapper /sys and
/// every submount are read-only all the same.
#[test]
fn podman_privileged_through_wrapper_is_read_only_too() {
    let probe = probe_run(
        wrapper(),
        &["--privileged"],
        "podman --privileged + wrapper + runc",
    );
    common::assert_converted_view(&probe, false);
}

#[test]
fn podman_privileged_with_plain_runc_has_writable_sys() {
    let probe = probe_run(
        &common::Runtime::Runc.path(),
        &["--privileged"],
        "podman --privileged + runc alone",
    );
    let sys = probe.topmost("/sys").expect("/sys is mounted");
    assert!(
        sys.has("rw"),
        "podman --privileged alone binds /sys read-write: {:?}",
        sys.options
    );
}

/// With its own cgroup namespace podman adds a cgroup mount at
/// /sys/fs/cgroup. Through the wrapper /sys is mounted first, so that mount
/// is on top and shows the container's own cgroup (its pids limit); the host's
/// hierarchies below it are read-only.
#[test]
fn podman_cgroup_mount_keeps_working_through_wrapper() {
    const SCRIPT: &str = "echo '### mountinfo'; cat /proc/self/mountinfo; \
        echo '### status'; cat /proc/self/status; \
        echo '### uid_map'; cat /proc/self/uid_map; \
        echo '### pids'; cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max 2>/dev/null; \
        echo '### end'";
    let rootfs = PodmanRootfs::new();
    let name = container_name();
    let out = podman_run_with(
        wrapper(),
        &rootfs.path(),
        &name,
        "host",
        &["--cgroupns", "private", "--pids-limit", "777"],
        &["/bin/sh", "-c", SCRIPT],
    );
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    show("podman --cgroupns private + wrapper + runc", &probe);
    let table = probe.table();
    let pids = out
        .stdout
        .split("### pids\n")
        .nth(1)
        .and_then(|s| s.split("### end").next())
        .unwrap_or_default()
        .trim()
        .to_string();
    assert_eq!(
        pids, "777",
        "the container's own cgroup (pids.max) must be visible at /sys/fs/cgroup:\n{table}"
    );
    let top = probe
        .topmost("/sys/fs/cgroup")
        .unwrap_or_else(|| panic!("nothing at /sys/fs/cgroup:\n{table}"));
    // On cgroup v1 runc builds a container-private tmpfs for the hierarchies
    // (writable, it hides the host's tree); on v2 it is a read-only cgroup2.
    assert!(
        top.has("nosuid") && top.has("nodev") && top.has("noexec"),
        "/sys/fs/cgroup should be podman's cgroup mount, not the host's: {top:?}\n{table}"
    );
    for m in probe.under_sys() {
        let runc_cgroup_v1_tmpfs = m.id == top.id && m.fstype == "tmpfs";
        assert!(
            m.has("ro") || runc_cgroup_v1_tmpfs,
            "{} {} is writable: {:?}\n{table}",
            m.mount_point,
            m.fstype,
            m.options
        );
    }
    name.assert_gone();
}

/// `podman exec`, `podman stop` and `podman rm` on a container created
/// through the wrapper go to runc unchanged.
#[test]
fn podman_exec_stop_rm_pass_through() {
    let rootfs = PodmanRootfs::new();
    let name = container_name();
    let w = common::WRAPPER;
    let started = common::run_capture(
        Command::new("podman")
            .args(["--runtime", w, "run", "--detach", "--name", &name.name])
            .arg("--cidfile")
            .arg(name.cidfile())
            .args(["--network", "host"])
            .args(UIDMAP)
            .args(GIDMAP)
            .args(ULIMITS)
            .arg("--rootfs")
            .arg(rootfs.path())
            .args([
                "/bin/sh",
                "-c",
                "trap 'exit 0' TERM; while :; do sleep 1; done",
            ]),
    );
    started.assert_success();
    let id = started.stdout.trim().to_string();
    assert_eq!(
        id.len(),
        64,
        "podman run -d prints the id: {}",
        started.describe()
    );

    let state = podman(
        &["--runtime", w, "inspect", "--format", "{{.State.Status}}"],
        &[&name.name],
    );
    assert_eq!(state.stdout.trim(), "running", "{}", state.describe());

    let exec = podman(
        &["--runtime", w, "exec", &name.name, "/bin/sh", "-c"],
        &[common::PROBE_SCRIPT],
    );
    exec.assert_success();
    let probe = Probe::parse(&exec.stdout);
    let writable = writable_under_sys(&probe);
    assert!(
        writable.is_empty(),
        "podman exec sees writable mounts under /sys: {writable:?}"
    );
    let exit = podman(
        &["--runtime", w, "exec", &name.name, "/bin/sh", "-c"],
        &["exit 3"],
    );
    assert_eq!(exit.code(), Some(3), "{}", exit.describe());

    let stop = podman(&["--runtime", w, "stop", "--time", "10"], &[&name.name]);
    stop.assert_success();
    let state = podman(
        &["--runtime", w, "inspect", "--format", "{{.State.Status}}"],
        &[&name.name],
    );
    assert_eq!(state.stdout.trim(), "exited", "{}", state.describe());
    podman(&["--runtime", w, "rm"], &[&name.name]).assert_success();
    name.assert_gone();
    let runc = common::run_capture(Command::new(common::Runtime::Runc.path()).args([
        "--root",
        "/run/runc",
        "list",
        "-q",
    ]));
    assert!(
        !runc.stdout.contains(&id),
        "runc still holds {id}:\n{}",
        runc.describe()
    );
}

/// A container with its own network namespace: through the wrapper podman
/// runs it exactly as with runc alone.
#[test]
fn podman_own_network_namespace_is_as_with_plain_runc() {
    let rootfs = PodmanRootfs::new();
    let (name, plain_name) = (container_name(), container_name());
    let via = podman_run_with(
        wrapper(),
        &rootfs.path(),
        &name,
        "none",
        &[],
        &common::probe_args(),
    );
    via.assert_success();
    let plain = podman_run_with(
        &common::Runtime::Runc.path(),
        &rootfs.path(),
        &plain_name,
        "none",
        &[],
        &common::probe_args(),
    );
    plain.assert_success();
    let (via, plain) = (Probe::parse(&via.stdout), Probe::parse(&plain.stdout));
    // podman itself orders /etc/hosts, /etc/hostname and .containerenv
    // differently from run to run: compare the mounts as sets.
    assert_eq!(
        sorted_lines(&via.table()),
        sorted_lines(&plain.table()),
        "mounts differ"
    );
    assert_eq!(via.cap_bnd(), plain.cap_bnd(), "capabilities differ");
    assert!(
        common::has_cap_bit(via.cap_bnd(), 10),
        "own network namespace: CAP_NET_BIND_SERVICE is effective and stays"
    );
    name.assert_gone();
    plain_name.assert_gone();
}

fn sorted_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines
}

/// docs/containers.conf, with the wrapper's installed path replaced by the
/// one under test, registers the runtime by name: `--runtime userns-hostnet`.
#[test]
fn podman_finds_the_wrapper_registered_in_containers_conf() {
    let rootfs = PodmanRootfs::new();
    let name = container_name();
    let snippet =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/containers.conf"))
            .expect("read docs/containers.conf");
    let installed = "\"/usr/bin/userns-hostnet-runtime\"";
    assert!(snippet.contains(installed), "{snippet}");
    let conf = name.cid_dir.path().join("containers.conf");
    std::fs::write(
        &conf,
        snippet.replace(installed, &format!("\"{}\"", common::WRAPPER)),
    )
    .unwrap();

    let mut cmd = Command::new("podman");
    cmd.env("CONTAINERS_CONF", &conf)
        .args([
            "--runtime",
            "userns-hostnet",
            "run",
            "--rm",
            "--name",
            &name.name,
        ])
        .arg("--cidfile")
        .arg(name.cidfile())
        .args(["--network", "host"])
        .args(UIDMAP)
        .args(GIDMAP)
        .args(ULIMITS)
        .arg("--rootfs")
        .arg(rootfs.path())
        .args(common::probe_args());
    let out = common::run_capture(&mut cmd);
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    common::assert_converted_view(&probe, false);
    name.assert_gone();
}
