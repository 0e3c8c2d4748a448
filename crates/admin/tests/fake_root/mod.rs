//! The fake roots doctor runs on (`--root` for /etc and /proc files), and
//! reading its `--json` answer: what admin_doctor (the host's checks) and
//! admin_doctor_daemons (containerd, CRI-O and the kubelet's choice) share.

#![allow(dead_code)]

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The admin tool, which cargo builds for this crate's tests.
pub const TOOL: &str = env!("CARGO_BIN_EXE_userns-hostnet");

pub const MOUNTINFO_V2: &str =
    "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n";
pub const MOUNTINFO_HYBRID: &str =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
40 31 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
pub const MOUNTINFO_V1: &str =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";

/// containerd 2.3.4 and CRI-O 1.36.3 (`make cri-tools` unpacks them),
/// Debian's containerd 1.6.20: doctor runs their `config` subcommands on
/// the fake root's files.
pub const CONTAINERD_23: &str = "target/containerd-2.3/containerd";
pub const CONTAINERD_16: &str = "/usr/bin/containerd";
/// Debian trixie's containerd 1.7.24 (`make cri-tools` unpacks it).
pub const CONTAINERD_17: &str = "target/containerd-1.7/usr/bin/containerd";
pub const CRIO: &str = "target/cri-o/crio";

/// A real daemon binary of this machine; its absence fails the test.
pub fn real(path: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    assert!(
        p.is_file(),
        "{} is missing: `make cri-tools` unpacks containerd 2.3 and CRI-O; `apt-get install containerd` gives Debian's",
        p.display()
    );
    p
}

/// A fake root that passes every check, to break one thing at a time.
pub struct Root {
    pub dir: tempfile::TempDir,
}

impl Root {
    pub fn ready() -> Root {
        let r = Root {
            dir: tempfile::tempdir().unwrap(),
        };
        r.write("proc/sys/user/max_user_namespaces", "63000\n");
        r.write("proc/sys/net/ipv4/ip_unprivileged_port_start", "0\n");
        r.write("proc/self/mountinfo", MOUNTINFO_V2);
        r.write("etc/subuid", "kubelet:1048576:655360\n");
        r.write("etc/subgid", "kubelet:1048576:655360\n");
        // The kubelet reads /etc/subuid only with a kubelet user and getsubids.
        r.write(
            "etc/passwd",
            "root:x:0:0::/root:/bin/sh\nkubelet:x:990:990::/:/usr/sbin/nologin\n",
        );
        r.write("usr/bin/getsubids", "");
        // Daemons are found by binary, and in use when their socket is there.
        r.host_binary("usr/bin/containerd", &real(CONTAINERD_23));
        r.write("run/containerd/containerd.sock", "");
        r.write(
            "etc/userns-hostnet/config.toml",
            "[idmap]\nallowed_ranges = { subid_user = \"kubelet\" }\n[log]\nfile = \"/var/log/userns-hostnet.log\"\n",
        );
        r.write("var/log/.keep", "");
        r.exe("usr/bin/userns-hostnet-runtime");
        r.write(
            "etc/containerd/config.toml",
            "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.userns-hostnet]\n  runtime_type = \"io.containerd.runc.v2\"\n  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.userns-hostnet.options]\n    BinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
        );
        r.script(
            "runtime",
            "case \"$1\" in features) echo '{\"mountOptions\":[\"rro\"],\"linux\":{\"namespaces\":[\"user\",\"network\"],\"mountExtensions\":{\"idmap\":{\"enabled\":true}}}}';; --version) echo 'runc version 1.2.0';; esac",
        );
        r
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        // A new file (mode 0644), never through a link nor over a binary.
        if p.is_symlink() || p.is_file() {
            std::fs::remove_file(&p).unwrap();
        }
        std::fs::write(p, text).unwrap();
    }

    /// The node's binary `rel`: a script that runs `binary`, one of this
    /// machine's. Not a link: doctor resolves the node's links inside the
    /// root, where this machine's paths are not.
    pub fn host_binary(&self, rel: &str, binary: &Path) {
        self.write(
            rel,
            &format!("#!/bin/sh\nexec {} \"$@\"\n", binary.display()),
        );
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A link at `rel` to `target`, a path of the node.
    pub fn link(&self, rel: &str, target: &Path) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&p);
        std::os::unix::fs::symlink(target, p).unwrap();
    }

    /// An executable file at `rel` (a runtime or conmon CRI-O looks for).
    pub fn exe(&self, rel: &str) {
        self.write(rel, "#!/bin/sh\n");
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    pub fn remove(&self, rel: &str) {
        let p = self.path(rel);
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }

    pub fn script(&self, name: &str, body: &str) {
        let p = self.path(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    pub fn doctor(&self) -> (i32, Value) {
        self.doctor_with(&["--runtime", self.path("runtime").to_str().unwrap()])
    }

    pub fn doctor_with(&self, extra: &[&str]) -> (i32, Value) {
        let out = Command::new(TOOL)
            .args(["doctor", "--json", "--root"])
            .arg(self.dir.path())
            .args(extra)
            .env_remove("USERNS_HOSTNET_CONFIG")
            .env_remove("USERNS_HOSTNET_RUNTIME")
            .output()
            .unwrap();
        let v = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        (out.status.code().unwrap(), v)
    }
}

/// What doctor puts before a command that changes the host, when this
/// test does not run as root.
pub fn as_root() -> &'static str {
    if nix::unistd::geteuid().is_root() {
        ""
    } else {
        "as root: "
    }
}

pub fn fix(v: &Value, name: &str) -> String {
    find(v, name)["fix"]
        .as_str()
        .unwrap_or_else(|| panic!("no fix for {name}: {v:#}"))
        .to_owned()
}

pub fn find<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {v:#}"))
}

pub fn status(v: &Value, name: &str) -> String {
    find(v, name)["status"].as_str().unwrap().to_owned()
}

pub fn message(v: &Value, name: &str) -> String {
    find(v, name)["message"].as_str().unwrap().to_owned()
}
