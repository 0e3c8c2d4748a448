//! What the podman suites share: the prerequisite check, a writable rootfs
//! podman accepts with `--rootfs`, and removal of containers that earlier,
//! killed test processes left behind.

use std::path::Path;
use std::process::Command;
use tempfile::TempDir;

/// Fails (never skips) without runc and podman.
pub fn require_podman() {
    super::require_prerequisites(super::Runtime::Runc);
    assert!(
        super::find_in_path("podman").is_some(),
        "`podman` is missing: install the Debian package podman"
    );
}

/// A temp dir holding `rootfs/`: a private busybox rootfs owned by the
/// container's root, with the `run/.containerenv` podman writes into.
pub fn writable_rootfs(prefix: &str) -> TempDir {
    let tmp = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
    let rootfs = tmp.path().join("rootfs");
    super::build_rootfs(&rootfs);
    std::fs::create_dir_all(rootfs.join("run")).unwrap();
    std::fs::write(rootfs.join("run/.containerenv"), "").unwrap();
    super::run_ok(
        Command::new("chown")
            .args(["-R", "-h", "100000:100000"])
            .arg(&rootfs),
    );
    tmp
}

/// Remove podman containers named `<prefix><pid>-...` whose test process
/// (pid) is gone.
pub fn remove_dead_containers(prefix: &str) {
    let Ok(out) = Command::new("podman")
        .args(["ps", "--all", "--format", "{{.Names}}"])
        .output()
    else {
        return;
    };
    for name in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        let Some(pid) = name
            .strip_prefix(prefix)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("podman")
                .args(["rm", "--force", "--ignore", "--time", "0", name])
                .output();
        }
    }
}

/// `--uidmap` for the container's root on host ID 100000, as the other
/// suites map it.
pub const UIDMAP: &[&str] = &["--uidmap", "0:100000:65536"];
/// `--gidmap`, the same range.
pub const GIDMAP: &[&str] = &["--gidmap", "0:100000:65536"];
/// Limits at or below the current hard limits: root lacks CAP_SYS_RESOURCE
/// on these machines, and podman's defaults would raise them.
pub const ULIMITS: &[&str] = &[
    "--ulimit",
    "nofile=20000:20000",
    "--ulimit",
    "nproc=1000:1000",
];
