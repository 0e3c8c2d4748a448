//! What the tests of the installer image and its `deploy` mode share
//! (e2e_deploy: the image on a fake host root; e2e_deploy_node: the daemon
//! restarted, the node labelled): the image built from the staged context
//! target/image (`make image`), a fake host root, and its files compared
//! before and after.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::run_capture;

pub const STAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/image");
pub const CONTAINERFILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/Containerfile");
/// podman with runc (crun refuses this host's hybrid cgroups).
pub const PODMAN_RUN: &[&str] = &["--runtime", "runc", "run"];
pub const OLD_ADMIN: &[u8] = b"#!/bin/sh\necho an older userns-hostnet\n";

/// One path under the fake root as a test compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Dir {
        mode: u32,
        owner: (u32, u32),
    },
    File {
        mode: u32,
        owner: (u32, u32),
        bytes: Vec<u8>,
    },
    Link {
        target: PathBuf,
    },
}

impl Node {
    fn describe(&self) -> String {
        match self {
            Node::Dir { mode, .. } => format!("dir {mode:o}"),
            Node::File { mode, bytes, .. } => format!("file {mode:o}, {} bytes", bytes.len()),
            Node::Link { target } => format!("link -> {}", target.display()),
        }
    }
}

pub type Snapshot = BTreeMap<PathBuf, Node>;

pub fn snapshot(root: &Path) -> Snapshot {
    let mut out = Snapshot::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let mode = m.permissions().mode() & 0o7777;
            let owner = (m.uid(), m.gid());
            let node = if m.file_type().is_symlink() {
                Node::Link {
                    target: fs::read_link(&p).unwrap(),
                }
            } else if m.is_dir() {
                todo.push(p.clone());
                Node::Dir { mode, owner }
            } else {
                Node::File {
                    mode,
                    owner,
                    bytes: fs::read(&p).unwrap(),
                }
            };
            out.insert(rel, node);
        }
    }
    out
}

/// (inode, mtime) of every file and link: what a rewrite would change even
/// with the same bytes.
pub fn identities(root: &Path, snap: &Snapshot) -> BTreeMap<PathBuf, (u64, i64, i64)> {
    snap.iter()
        .filter(|(_, n)| !matches!(n, Node::Dir { .. }))
        .map(|(p, _)| {
            let m = fs::symlink_metadata(root.join(p)).unwrap();
            (p.clone(), (m.ino(), m.mtime(), m.mtime_nsec()))
        })
        .collect()
}

/// What changed between two snapshots, one line a path.
pub fn changes(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (p, a) in after {
        match before.get(p) {
            None => out.push(format!("+ /{}: {}", p.display(), a.describe())),
            Some(b) if b != a => out.push(format!(
                "~ /{}: {} -> {}",
                p.display(),
                b.describe(),
                a.describe()
            )),
            Some(_) => {}
        }
    }
    for (p, b) in before {
        if !after.contains_key(p) {
            out.push(format!("- /{}: {}", p.display(), b.describe()));
        }
    }
    out
}

pub fn require(tool: &str, hint: &str) {
    assert!(
        super::find_in_path(tool).is_some(),
        "`{tool}` is missing: {hint}"
    );
}

/// The image, built here from the staged context with podman build.
pub fn build_image(tag: &str) -> String {
    require("podman", "install the Debian package podman");
    require("file", "install the Debian package file");
    for bin in ["userns-hostnet", "userns-hostnet-runtime"] {
        let p = Path::new(STAGE).join(bin);
        assert!(
            p.is_file(),
            "{} is missing: run `make image` first",
            p.display()
        );
        let desc = run_capture(Command::new("file").arg("-b").arg(&p));
        desc.assert_success();
        assert!(
            desc.stdout.contains("statically linked") || desc.stdout.contains("static-pie linked"),
            "{} is not static: {}",
            p.display(),
            desc.stdout
        );
    }
    let image = format!("localhost/userns-hostnet-installer:{tag}");
    run_capture(
        Command::new("podman")
            .args(["build", "--quiet", "--file", CONTAINERFILE, "--tag", &image])
            .arg(STAGE),
    )
    .assert_success();
    image
}

/// A fake host root: containerd's default config and an older admin tool
/// in usr/local/bin.
pub fn fake_host_root() -> tempfile::TempDir {
    require("containerd", "install the Debian package containerd");
    let root = tempfile::Builder::new()
        .prefix("uhn-deploy-root-")
        .tempdir_in("/tmp")
        .unwrap();
    let r = root.path();
    fs::create_dir_all(r.join("etc/containerd")).unwrap();
    fs::create_dir_all(r.join("usr/local/bin")).unwrap();
    let default = run_capture(Command::new("containerd").args(["config", "default"]));
    default.assert_success();
    fs::write(r.join("etc/containerd/config.toml"), &default.stdout).unwrap();
    let old = r.join("usr/local/bin/userns-hostnet");
    fs::write(&old, OLD_ADMIN).unwrap();
    fs::set_permissions(&old, fs::Permissions::from_mode(0o755)).unwrap();
    root
}

pub fn podman_run(image: &str, root: &Path, extra: &[&str], args: &[&str]) -> super::Outcome {
    let mut cmd = Command::new("podman");
    cmd.args(PODMAN_RUN)
        .args(["--rm", "--privileged", "--network", "none"])
        .args(super::podman::ULIMITS)
        .arg("--volume")
        .arg(format!("{}:/host", root.display()))
        .args(extra)
        .arg(image)
        .args(args);
    run_capture(&mut cmd)
}

/// The handler as containerd itself reads the config.
pub fn dumped_handler(config: &Path, handler: &str) -> Option<toml::Value> {
    let out = run_capture(
        Command::new("containerd")
            .arg("--config")
            .arg(config)
            .args(["config", "dump"]),
    );
    out.assert_success();
    let dump: toml::Value = toml::from_str(&out.stdout).expect("config dump is TOML");
    dump.get("plugins")?
        .get("io.containerd.grpc.v1.cri")?
        .get("containerd")?
        .get("runtimes")?
        .get(handler)
        .cloned()
}
