//! `userns-hostnet doctor` on prepared fake roots (`--root` for /etc
//! and /proc files), one per branch of each check. tests/e2e_doctor.rs runs
//! it on this machine.

mod common;

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const TOOL: &str = common::TOOL;

const MOUNTINFO_V2: &str =
    "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n";
const MOUNTINFO_HYBRID: &str =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
40 31 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
const MOUNTINFO_V1: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";

/// containerd 2.3.4 and CRI-O 1.36.3 (`make cri-tools` unpacks them),
/// Debian's containerd 1.6.20: doctor runs their `config` subcommands on
/// the fake root's files.
const CONTAINERD_23: &str = "target/containerd-2.3/containerd";
const CONTAINERD_16: &str = "/usr/bin/containerd";
/// Debian trixie's containerd 1.7.24 (`make cri-tools` unpacks it).
const CONTAINERD_17: &str = "target/containerd-1.7/usr/bin/containerd";
const CRIO: &str = "target/cri-o/crio";

/// A real daemon binary of this machine; its absence fails the test.
fn real(path: &str) -> PathBuf {
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
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn ready() -> Root {
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

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
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
    fn host_binary(&self, rel: &str, binary: &Path) {
        self.write(
            rel,
            &format!("#!/bin/sh\nexec {} \"$@\"\n", binary.display()),
        );
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A link at `rel` to `target`, a path of the node.
    fn link(&self, rel: &str, target: &Path) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&p);
        std::os::unix::fs::symlink(target, p).unwrap();
    }

    /// An executable file at `rel` (a runtime or conmon CRI-O looks for).
    fn exe(&self, rel: &str) {
        self.write(rel, "#!/bin/sh\n");
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn remove(&self, rel: &str) {
        let p = self.path(rel);
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }

    fn script(&self, name: &str, body: &str) {
        let p = self.path(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn doctor(&self) -> (i32, Value) {
        self.doctor_with(&["--runtime", self.path("runtime").to_str().unwrap()])
    }

    fn doctor_with(&self, extra: &[&str]) -> (i32, Value) {
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
fn as_root() -> &'static str {
    if nix::unistd::geteuid().is_root() {
        ""
    } else {
        "as root: "
    }
}

fn fix(v: &Value, name: &str) -> String {
    find(v, name)["fix"]
        .as_str()
        .unwrap_or_else(|| panic!("no fix for {name}: {v:#}"))
        .to_owned()
}

fn find<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {v:#}"))
}

fn status(v: &Value, name: &str) -> String {
    find(v, name)["status"].as_str().unwrap().to_owned()
}

fn message(v: &Value, name: &str) -> String {
    find(v, name)["message"].as_str().unwrap().to_owned()
}

#[test]
fn a_ready_root_passes_every_check() {
    let r = Root::ready();
    let (code, v) = r.doctor();
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], true);
    for c in v["checks"].as_array().unwrap() {
        // No kubelet in this root: every installed daemon is checked.
        let skipped = ["crio", "kubelet"];
        // Not root: the fake root's config file is this user's, which a
        // wrapper running as root would refuse.
        if c["name"] == "config" && !as_root().is_empty() {
            assert_eq!(c["status"], "warn", "{c}");
            continue;
        }
        let want = if skipped.iter().any(|n| c["name"] == *n) {
            "skip"
        } else {
            "ok"
        };
        assert_eq!(c["status"], want, "{c}");
        assert_eq!(c["fix"], Value::Null, "{c}");
    }
    assert!(message(&v, "subids").contains("room for 10 pods"));
    // The containerd that reads the config is asked, and named.
    assert!(
        message(&v, "containerd.config")
            .starts_with("containerd 2.3.4 at /usr/bin/containerd (first in PATH"),
        "{v:#}"
    );
    assert!(
        message(&v, "matrix.containerd").ends_with("asked containerd 2.3.4 at /usr/bin/containerd (first in PATH; no running containerd that doctor can see reads this file)"),
        "{v:#}"
    );
    assert!(message(&v, "containerd").contains("userns-hostnet -> /usr/bin/userns-hostnet-runtime"));
    assert!(message(&v, "ports").contains("every port"));
}

#[test]
fn text_output_has_one_line_per_check_and_the_fix() {
    let r = Root::ready();
    r.write("proc/sys/user/max_user_namespaces", "0\n");
    let out = Command::new(TOOL)
        .args(["doctor", "--root"])
        .arg(r.dir.path())
        .args(["--runtime", r.path("runtime").to_str().unwrap()])
        .env_remove("USERNS_HOSTNET_CONFIG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let t = String::from_utf8_lossy(&out.stdout);
    let line = t
        .lines()
        .find(|l| l.contains("kernel.user_namespaces"))
        .unwrap();
    assert!(line.starts_with("fail"), "{t}");
    assert!(
        t.contains("fix: sysctl -w user.max_user_namespaces="),
        "{t}"
    );
    assert!(t.ends_with("NOT ready: 1 failed, 0 warnings\n"), "{t}");
}

#[test]
fn kernel_and_port_branches() {
    let r = Root::ready();
    r.write("proc/sys/net/ipv4/ip_unprivileged_port_start", "1024\n");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "ports"), "ok");
    assert!(message(&v, "ports").contains("ports >= 1024 only"));
    r.write("proc/sys/net/ipv4/ip_unprivileged_port_start", "2000\n");
    r.remove("proc/sys/user/max_user_namespaces");
    let (code, v) = r.doctor();
    assert_eq!(code, 1);
    assert_eq!(status(&v, "ports"), "warn");
    assert_eq!(status(&v, "kernel.user_namespaces"), "fail");
    // The real kernel of this machine (>= 5.12) has mount_setattr.
    assert_eq!(status(&v, "kernel.mount_setattr"), "ok");
}

#[test]
fn cgroup_v1_and_hybrid_warn() {
    let r = Root::ready();
    r.write("proc/self/mountinfo", MOUNTINFO_HYBRID);
    let (code, v) = r.doctor();
    assert_eq!(code, 0, "a warning is not a failure");
    assert_eq!(status(&v, "cgroup"), "warn");
    assert!(message(&v, "cgroup").starts_with("hybrid"));
    assert!(find(&v, "cgroup")["fix"]
        .as_str()
        .unwrap()
        .contains("systemd.unified_cgroup_hierarchy=1"));
    r.write("proc/self/mountinfo", MOUNTINFO_V1);
    let (_, v) = r.doctor();
    assert!(message(&v, "cgroup").starts_with("cgroup v1"));
    r.write("proc/self/mountinfo", "");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "cgroup"), "warn");
}

#[test]
fn subid_branches() {
    let r = Root::ready();
    let both = |text: &str| {
        r.write("etc/subuid", text);
        r.write("etc/subgid", text);
    };
    both("kubelet:1048576:65536\n");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "subids"), "ok");
    assert!(message(&v, "subids").contains("room for 1 pod "), "{v:#}");
    both("kubelet:1048576:1000\n");
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "subids")), (1, "fail".into()));
    both("kubelet:100000:65536\n");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "subids"), "warn", "100000 is not a multiple");
    // The kubelet needs one range, the same in both files.
    r.write("etc/subuid", "kubelet:1048576:65536\n");
    r.write("etc/subgid", "kubelet:1048576:131072\n");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "subids"), "fail", "{v:#}");
    both("kubelet:1048576:65536\nkubelet:2097152:65536\n");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "subids"), "fail", "{v:#}");
    both("kubelet:1048576:655360\n");
    // The configured user has no range: the wrapper would refuse everything.
    r.write("etc/subuid", "someone:1048576:65536\n");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "subids"), "fail");
    // A kubelet user with getsubids and no range: the kubelet cannot give
    // pods a user namespace.
    r.write("etc/userns-hostnet/config.toml", "");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "subids"), "fail", "{v:#}");
}

/// The kubelet reads /etc/subuid only when a `kubelet` user exists and
/// getsubids is installed (its getKubeletMappings); otherwise pods get its
/// built-in range, and advice to add subuid lines alone would be a trap.
#[test]
fn subids_without_a_kubelet_user() {
    let r = Root::ready();
    r.write("etc/passwd", "root:x:0:0::/root:/bin/sh\n");
    // The policy names kubelet's ranges, which the kubelet does not use.
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "subids")), (1, "fail".into()), "{v:#}");
    let m = message(&v, "subids");
    assert!(
        m.contains("no `kubelet` user") && m.contains("IDs 65536 to 4294967295"),
        "{m}"
    );
    let fix = find(&v, "subids")["fix"].as_str().unwrap().to_owned();
    assert!(
        fix.starts_with(&format!("{}useradd --system", as_root())),
        "{fix}"
    );
    // No policy: the subuid line is ignored, a warning.
    r.write("etc/userns-hostnet/config.toml", "");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "subids"), "warn", "{v:#}");
    assert!(message(&v, "subids").contains("which the kubelet ignores"));
    // No policy, no line: the built-in range, nothing to fix.
    r.remove("etc/subuid");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "subids"), "ok", "{v:#}");
    assert!(find(&v, "subids")["fix"].is_null());
    // The user exists but getsubids does not.
    r.write("etc/passwd", "kubelet:x:990:990::/:/usr/sbin/nologin\n");
    r.remove("usr/bin/getsubids");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "subids"), "ok", "{v:#}");
    assert!(message(&v, "subids").contains("no getsubids"), "{v:#}");
}

#[test]
fn config_and_log_branches() {
    let r = Root::ready();
    r.write(
        "etc/userns-hostnet/config.toml",
        "[capabilities]\nnet = \"dorp\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(code, 1);
    assert_eq!(status(&v, "config"), "fail");
    assert!(message(&v, "config").contains("capabilities.net"));
    r.remove("etc/userns-hostnet/config.toml");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "config"), "ok");
    assert!(message(&v, "config").contains("defaults"));
    r.write(
        "etc/userns-hostnet/config.toml",
        "[log]\nfile = \"/no/such/dir/x.log\"\n",
    );
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "log"), "fail");
}

/// A config file others can write names the runtime root runs: doctor
/// fails the check and gives the commands that fix it.
#[test]
fn a_config_file_others_can_write_fails_with_the_fix() {
    let r = Root::ready();
    r.write("etc/userns-hostnet/config.toml", "");
    let file = r.path("etc/userns-hostnet/config.toml");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (code, v) = r.doctor();
    assert_eq!(code, 1);
    assert_eq!(status(&v, "config"), "fail", "{v:#}");
    assert_eq!(
        message(&v, "config"),
        format!(
            "{}: not trusted: writable by group and others (mode 0666); the wrapper refuses every container with a user namespace until only root can change it",
            file.display()
        )
    );
    let f = file.display();
    assert_eq!(
        find(&v, "config")["fix"],
        format!("{}chown root:root {f}; chmod go-w {f}", as_root())
    );
}

#[test]
fn runtime_branches() {
    let r = Root::ready();
    // containerd 1.7 asks no runtime for `features`: the runtime's own
    // checks alone decide.
    r.host_binary("usr/bin/containerd", &real(CONTAINERD_17));
    let (code, v) = r.doctor_with(&["--runtime", "/nonexistent/runc"]);
    assert_eq!(code, 1);
    assert_eq!(status(&v, "runtime"), "fail");
    assert!(message(&v, "runtime").contains("--runtime /nonexistent/runc"));
    // crun 1.8.1: no features, a version that knows rro.
    r.script(
        "runtime",
        "case \"$1\" in features) echo 'unknown command features' >&2; exit 1;; --version) echo 'crun version 1.8.1';; esac",
    );
    let (code, v) = r.doctor();
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(status(&v, "runtime.rro"), "ok");
    assert_eq!(status(&v, "runtime.features"), "warn");
    // features without rro, user namespaces or idmap.
    r.script(
        "runtime",
        "case \"$1\" in features) echo '{\"mountOptions\":[\"ro\"],\"linux\":{\"namespaces\":[\"network\"]}}';; --version) echo 'runc version 1.0.0';; esac",
    );
    let (code, v) = r.doctor();
    assert_eq!(code, 1);
    assert_eq!(status(&v, "runtime.rro"), "fail");
    assert_eq!(status(&v, "runtime.features"), "fail");
    // A runtime that does not run.
    r.script("runtime", "exit 3");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "runtime"), "fail");
}

#[test]
fn containerd_branches() {
    let r = Root::ready();
    // A handler in an imported drop-in counts.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n",
    );
    r.write(
        "etc/containerd/conf.d/99-userns-hostnet.toml",
        "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "ok", "{v:#}");
    assert!(message(&v, "containerd").contains("conf.d/99-userns-hostnet.toml"));
    // Version 3 keys.
    r.remove("etc/containerd/conf.d");
    r.write(
        "etc/containerd/config.toml",
        "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "ok", "{v:#}");
    // Only runc: not registered.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\nruntime_type = \"io.containerd.runc.v2\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "containerd")), (1, "fail".into()));
    assert!(find(&v, "containerd")["fix"]
        .as_str()
        .unwrap()
        .contains("userns-hostnet install containerd"));
    // The handler's binary is missing.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.uhn.options]\nBinaryName = \"/opt/userns-hostnet-runtime\"\n",
    );
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "fail");
    assert!(message(&v, "containerd").contains("does not exist"));
    // A handler that keeps its own runtime through install's links.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.uhn.options]\nBinaryName = \"/etc/userns-hostnet/handlers/uhn/userns-hostnet-runtime\"\n",
    );
    r.write("etc/userns-hostnet/handlers/uhn/userns-hostnet-runtime", "");
    r.write("opt/runc-1.4", "");
    std::os::unix::fs::symlink(
        "/opt/runc-1.4",
        r.path("etc/userns-hostnet/handlers/uhn/runtime"),
    )
    .unwrap();
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "ok", "{v:#}");
    assert!(
        message(&v, "containerd").contains("(real runtime /opt/runc-1.4)"),
        "{v:#}"
    );
    r.remove("opt/runc-1.4");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "fail", "{v:#}");
    assert!(
        message(&v, "containerd").contains("the real runtime /opt/runc-1.4, which does not exist"),
        "{v:#}"
    );
    // No config file; no containerd at all.
    r.remove("etc/containerd/config.toml");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "fail");
    r.remove("etc/containerd");
    r.remove("usr/bin/containerd");
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "containerd")), (0, "skip".into()));
}

/// No false failures: a daemon is found by its binary, not by a directory
/// in /etc; one installed but not running, or whose CRI plugin is off,
/// does not make the node "NOT ready"; a config named on the command line
/// is checked whatever runs, and the fix names it.
#[test]
fn daemons_in_use_and_named_configs() {
    let r = Root::ready();
    r.write(
        "etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\nruntime_type = \"io.containerd.runc.v2\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "containerd")), (1, "fail".into()));
    r.remove("run/containerd/containerd.sock");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd")),
        (0, "warn".into()),
        "{v:#}"
    );
    assert!(message(&v, "containerd").contains("containerd is not running"));

    // Named on the command line: checked, and the fix names it.
    // A host path: read under --root.
    let named = "/etc/containerd/config.toml";
    let runtime = r.path("runtime");
    let runtime = runtime.to_str().unwrap();
    let (code, v) = r.doctor_with(&["--runtime", runtime, "--containerd-config", named]);
    assert_eq!(
        (code, status(&v, "containerd")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert_eq!(
        find(&v, "containerd")["fix"].as_str().unwrap(),
        format!(
            "{}userns-hostnet install containerd --root {} --config {named}, then restart containerd",
            as_root(),
            r.dir.path().display()
        )
    );

    // Docker's containerd: no CRI, nothing to register.
    r.write("run/containerd/containerd.sock", "");
    r.write(
        "etc/containerd/config.toml",
        "disabled_plugins = [\"cri\"]\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd")),
        (0, "skip".into()),
        "{v:#}"
    );

    // /etc/crio left behind, no crio binary: not installed.
    r.write("etc/crio/crio.conf", "[crio.runtime]\n");
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "crio")), (0, "skip".into()), "{v:#}");
    // crio installed, not running: a warning.
    r.write("usr/bin/crio", "");
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "crio")), (0, "warn".into()), "{v:#}");
    // A crio.conf named on the command line, its drop-ins beside it.
    r.exe("usr/bin/conmon");
    let other = Path::new("/srv/crio/crio.conf");
    r.write("srv/crio/crio.conf", "[crio.runtime]\n");
    r.write(
        "srv/crio/crio.conf.d/99-userns-hostnet.conf",
        "[crio.runtime.runtimes.userns-hostnet]\nruntime_path = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (code, v) = r.doctor_with(&[
        "--runtime",
        runtime,
        "--crio-config",
        other.to_str().unwrap(),
    ]);
    assert_eq!((code, status(&v, "crio")), (0, "ok".into()), "{v:#}");
}

/// CRI-O's packaging: each handler has its monitor_path, conmon is not in
/// PATH, runc and crun live in /usr/libexec/crio.
const CRIO_PACKAGING: &str = "[crio.runtime]\ndefault_runtime = \"crun\"\n\n[crio.runtime.runtimes.crun]\nruntime_path = \"/usr/libexec/crio/crun\"\nruntime_root = \"/run/crun\"\nmonitor_path = \"/usr/libexec/crio/conmon\"\nallowed_annotations = [\n    \"io.containers.trace-syscall\",\n]\n\n[crio.runtime.runtimes.runc]\nruntime_path = \"/usr/libexec/crio/runc\"\nruntime_root = \"/run/runc\"\nmonitor_path = \"/usr/libexec/crio/conmon\"\n";

#[test]
fn crio_branches() {
    let r = Root::ready();
    r.host_binary("usr/bin/crio", &real(CRIO));
    r.write("run/crio/crio.sock", "");
    r.exe("usr/bin/runc");
    r.exe("usr/bin/conmon");
    r.write(
        "etc/crio/crio.conf",
        "[crio.runtime]\ndefault_runtime = \"runc\"\n[crio.runtime.runtimes.runc]\nruntime_path = \"/usr/bin/runc\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "crio")), (1, "fail".into()));
    assert_eq!(status(&v, "crio.config"), "ok", "{v:#}");
    r.write(
        "etc/crio/crio.conf.d/99-userns-hostnet.conf",
        "[crio.runtime.runtimes.userns-hostnet]\nruntime_path = \"/usr/bin/userns-hostnet-runtime\"\nruntime_type = \"oci\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "crio")), (0, "ok".into()), "{v:#}");
    assert_eq!(
        message(&v, "crio.config"),
        "crio 1.36.3 at /usr/bin/crio (first in PATH; no running crio that doctor can see reads this file) accepts /etc/crio/crio.conf (`config`), and every handler's runtime and monitor is there"
    );
    // What CRI-O refuses to read, in its own words.
    r.write(
        "etc/crio/crio.conf.d/50-typo.conf",
        "[crio.runtime]\ndefault_runtime = \"nosuch\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    let m = message(&v, "crio.config");
    assert!(
        m.contains("refuses /etc/crio/crio.conf: ")
            && m.contains("default_runtime set to \"nosuch\"")
            && !m.contains('\n'),
        "{m}"
    );
    r.remove("etc/crio/crio.conf.d/50-typo.conf");
    r.write("etc/crio/crio.conf.d/10-broken.conf", "[crio\n");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "crio"), "fail");
    assert_eq!(status(&v, "crio.config"), "fail");
    r.remove("etc/crio/crio.conf.d/10-broken.conf");

    // The packaging's shape: no crio.conf, conmon only where each
    // handler's monitor_path names it. The wrapper's handler has none, so
    // CRI-O looks for conmon in PATH and exits ("monitor fields
    // translation ... executable file not found in $PATH").
    r.remove("etc/crio/crio.conf");
    r.remove("usr/bin/conmon");
    r.write("etc/crio/crio.conf.d/10-crio.conf", CRIO_PACKAGING);
    for exe in [
        "usr/libexec/crio/crun",
        "usr/libexec/crio/runc",
        "usr/libexec/crio/conmon",
    ] {
        r.exe(exe);
    }
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert_eq!(status(&v, "crio"), "ok", "{v:#}");
    assert_eq!(
        message(&v, "crio.config"),
        "/etc/crio/crio.conf, as crio 1.36.3 at /usr/bin/crio (first in PATH; no running crio that doctor can see reads this file) reads it: handler userns-hostnet: monitor_path is unset and \"conmon\" is not in the daemon's PATH (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin): crio will not start"
    );
    // The handler carrying the monitor_path: ready.
    r.write(
        "etc/crio/crio.conf.d/99-userns-hostnet.conf",
        "[crio.runtime.runtimes.userns-hostnet]\nruntime_path = \"/usr/bin/userns-hostnet-runtime\"\nruntime_type = \"oci\"\nmonitor_path = \"/usr/libexec/crio/conmon\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "crio.config")), (0, "ok".into()), "{v:#}");
    // A monitor_path naming a conmon that is not there.
    r.remove("usr/libexec/crio/conmon");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    let m = message(&v, "crio.config");
    for h in ["crun", "runc", "userns-hostnet"] {
        assert!(
            m.contains(&format!(
                "handler {h}: monitor_path /usr/libexec/crio/conmon does not exist"
            )),
            "{m}"
        );
    }
    // No crio binary to ask: the same check on the files doctor merges.
    r.write("usr/bin/crio", "");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "crio.config").starts_with("/etc/crio/crio.conf: handler crun: monitor_path /usr/libexec/crio/conmon does not exist"),
        "{v:#}"
    );
    // A runtime that is not there: the default's stops CRI-O, another's
    // handler is dropped (the wrapper's: a failure all the same).
    r.host_binary("usr/bin/crio", &real(CRIO));
    r.exe("usr/libexec/crio/conmon");
    r.remove("usr/libexec/crio/runc");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (0, "warn".into()),
        "{v:#}"
    );
    assert!(message(&v, "crio.config").contains("handler runc: runtime_path /usr/libexec/crio/runc does not exist: CRI-O drops those handlers"), "{v:#}");
    r.remove("usr/bin/userns-hostnet-runtime");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (1, "fail".into()),
        "{v:#}"
    );
}

/// containerd before 2.0 replaces a plugin's whole table with an import's:
/// a drop-in holding only a handler throws the main config's CRI settings
/// (and handlers) away. The containerd that reads the file is asked its
/// version: Debian trixie's 1.7 here.
#[test]
fn an_import_that_replaces_the_cri_table_fails() {
    let r = Root::ready();
    r.host_binary("usr/bin/containerd", &real(CONTAINERD_17));
    r.write(
        "etc/containerd/config.toml",
        "version = 2\nimports = [\"/etc/containerd/conf.d/99-userns-hostnet.toml\"]\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"mirror/pause:3.9\"\n[plugins.\"io.containerd.grpc.v1.cri\".cni]\nbin_dir = \"/opt/custom-cni/bin\"\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"runc\"\n",
    );
    r.write(
        "etc/containerd/conf.d/99-userns-hostnet.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.userns-hostnet.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd")),
        (1, "fail".into()),
        "{v:#}"
    );
    let m = message(&v, "containerd");
    for lost in [
        "sandbox_image",
        "cni.bin_dir",
        "containerd.default_runtime_name",
    ] {
        assert!(m.contains(lost), "{m}");
    }
    assert!(find(&v, "containerd")["fix"]
        .as_str()
        .unwrap()
        .contains("userns-hostnet uninstall containerd --drop-in"));

    // A handler of the main config that an import's CRI table replaces is
    // not registered, even when nothing else is lost.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\nimports = [\"/etc/containerd/conf.d/99-userns-hostnet.toml\"]\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    r.write(
        "etc/containerd/conf.d/99-userns-hostnet.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "containerd")), (0, "ok".into()), "{v:#}");
    assert!(message(&v, "containerd").contains("99-userns-hostnet.toml"));
    // Version 3 is read by containerd 2.x only, which merges deeply;
    // containerd 1.6 ignores its plugin tables (1.7 refuses the file).
    r.host_binary("usr/bin/containerd", &real(CONTAINERD_16));
    r.write(
        "etc/containerd/config.toml",
        "version = 3\nimports = [\"/etc/containerd/conf.d/99-userns-hostnet.toml\"]\n[plugins.\"io.containerd.cri.v1.images\"]\nsandbox_image = \"mirror/pause:3.9\"\n[plugins.\"io.containerd.cri.v1.runtime\".containerd]\ndefault_runtime_name = \"runc\"\n",
    );
    r.write(
        "etc/containerd/conf.d/99-userns-hostnet.toml",
        "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "containerd.config").contains("containerd 1.6.20 at /usr/bin/containerd (first in PATH; no running containerd that doctor can see reads this file) reads config version 2 at most, and /etc/containerd/config.toml is version 3"),
        "{v:#}"
    );
    r.host_binary("usr/bin/containerd", &real(CONTAINERD_23));
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "containerd")), (0, "ok".into()), "{v:#}");
    assert_eq!(status(&v, "containerd.config"), "ok", "{v:#}");
}

const KUBELET_CRIO: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///var/run/crio/crio.sock\nfeatureGates:\n  UserNamespacesSupport: true\n  UserNamespacesHostNetworkSupport: true\n";

/// The kubelet's endpoint decides which daemon is checked: flags over its
/// config file, a running kubelet over the flag files.
#[test]
fn the_kubelet_chooses_the_daemon() {
    let r = Root::ready();
    // containerd has no handler: it would fail, were it the kubelet's.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\nruntime_type = \"io.containerd.runc.v2\"\n",
    );
    r.host_binary("usr/bin/crio", &real(CRIO));
    // CRI-O's default handler, crun, and its monitor.
    r.exe("usr/bin/crun");
    r.exe("usr/bin/conmon");
    r.write("run/crio/crio.sock", "");
    r.write(
        "etc/crio/crio.conf.d/99-userns-hostnet.conf",
        "[crio.runtime.runtimes.userns-hostnet]\nruntime_path = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    r.write("var/lib/kubelet/config.yaml", KUBELET_CRIO);
    let (code, v) = r.doctor();
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(status(&v, "kubelet"), "ok");
    assert!(
        message(&v, "kubelet").contains(
            "uses CRI-O (unix:///var/run/crio/crio.sock, from containerRuntimeEndpoint in"
        ),
        "{v:#}"
    );
    assert_eq!(status(&v, "containerd"), "skip");
    assert_eq!(message(&v, "containerd"), "the kubelet uses CRI-O");
    assert_eq!(status(&v, "crio"), "ok");
    // No version matrix for a containerd the kubelet does not use.
    assert!(
        !v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "matrix.containerd"),
        "{v:#}"
    );
    assert_eq!(status(&v, "kubelet.gates"), "ok");
    assert!(message(&v, "kubelet.gates")
        .ends_with("UserNamespacesSupport on, UserNamespacesHostNetworkSupport on"));

    // A named containerd config is checked all the same.
    let named = Path::new("/etc/containerd/config.toml");
    let runtime = r.path("runtime");
    let (code, v) = r.doctor_with(&[
        "--runtime",
        runtime.to_str().unwrap(),
        "--containerd-config",
        named.to_str().unwrap(),
    ]);
    assert_eq!(
        (code, status(&v, "containerd")),
        (1, "fail".into()),
        "{v:#}"
    );

    // kubeadm's flag wins over the config file.
    r.write(
        "var/lib/kubelet/kubeadm-flags.env",
        "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.10\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(code, 1, "{v:#}");
    assert!(message(&v, "kubelet").contains("uses containerd (unix:///run/containerd/containerd.sock, from --container-runtime-endpoint in /var/lib/kubelet/kubeadm-flags.env)"), "{v:#}");
    assert_eq!(status(&v, "containerd"), "fail");
    assert_eq!(message(&v, "crio"), "the kubelet uses containerd");

    // A running kubelet's command line wins over the files, and its
    // --config is the config read.
    r.write("proc/4242/comm", "kubelet\n");
    r.write(
        "proc/4242/cmdline",
        "/usr/bin/kubelet\0--config\0/etc/kubernetes/kubelet.yaml\0",
    );
    r.write(
        "etc/kubernetes/kubelet.yaml",
        "kind: KubeletConfiguration\ncontainerRuntimeEndpoint: \"unix:///var/run/crio/crio.sock\"\nfeatureGates: {UserNamespacesSupport: false}\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(code, 0, "{v:#}");
    assert!(
        message(&v, "kubelet").contains("kubelet (running) uses CRI-O"),
        "{v:#}"
    );
    assert!(
        message(&v, "kubelet").contains("/etc/kubernetes/kubelet.yaml"),
        "{v:#}"
    );
    assert_eq!(status(&v, "kubelet.gates"), "warn");
    assert!(
        message(&v, "kubelet.gates")
            .contains("UserNamespacesSupport off, UserNamespacesHostNetworkSupport not set"),
        "{v:#}"
    );
    let fix = find(&v, "kubelet.gates")["fix"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        fix.starts_with("set UserNamespacesSupport to true under featureGates in ")
            && fix.contains("etc/kubernetes/kubelet.yaml"),
        "{fix}"
    );
    r.write(
        "proc/4242/cmdline",
        "/usr/bin/kubelet\0--config=/etc/kubernetes/kubelet.yaml\0--container-runtime-endpoint\0unix:///run/cri-dockerd.sock\0",
    );
    let (code, v) = r.doctor();
    assert_eq!(status(&v, "kubelet"), "warn", "{v:#}");
    assert!(
        message(&v, "kubelet")
            .contains("the running kubelet's --container-runtime-endpoint (PID 4242)"),
        "{v:#}"
    );
    assert_eq!(
        message(&v, "containerd"),
        "the kubelet uses another runtime"
    );
    assert_eq!(code, 0);
}

/// A kubelet config with no endpoint: the kubelet's default, containerd.
#[test]
fn a_kubelet_config_without_an_endpoint_means_containerd() {
    let r = Root::ready();
    r.write("usr/bin/crio", "");
    r.write(
        "var/lib/kubelet/config.yaml",
        "kind: KubeletConfiguration\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(code, 0, "{v:#}");
    assert!(
        message(&v, "kubelet").contains(
            "uses containerd (unix:///run/containerd/containerd.sock, from the kubelet's default"
        ),
        "{v:#}"
    );
    assert_eq!(status(&v, "crio"), "skip");
    assert!(
        message(&v, "kubelet.gates").contains("UserNamespacesSupport not set"),
        "{v:#}"
    );
}

/// Every fix names the daemon config doctor was given, the config file it
/// read, and the runtime it was asked about.
#[test]
fn fix_lines_carry_the_flags_given() {
    let r = Root::ready();
    let runtime = r.path("runtime");
    let runtime = runtime.to_str().unwrap();
    // Both daemons in use, neither with a handler, both configs named.
    r.write("usr/bin/crio", "");
    r.write("run/crio/crio.sock", "");
    r.write("srv/crio/crio.conf", "[crio.runtime]\n");
    r.write("srv/containerd.toml", "version = 2\n");
    let (crio, containerd) = ("/srv/crio/crio.conf", "/srv/containerd.toml");
    let (code, v) = r.doctor_with(&[
        "--runtime",
        runtime,
        "--containerd-config",
        containerd,
        "--crio-config",
        crio,
    ]);
    assert_eq!(code, 1, "{v:#}");
    let p = as_root();
    // The configs are the root's: install is told the same root, which
    // it needs for a config outside /etc.
    let root = r.dir.path().display();
    assert_eq!(
        fix(&v, "containerd"),
        format!(
            "{p}userns-hostnet install containerd --root {root} --config {containerd}, then restart containerd"
        )
    );
    assert_eq!(
        fix(&v, "crio"),
        format!("{p}userns-hostnet install crio --root {root} --config {crio}, then restart crio")
    );
    // The command the fix names is one install runs (it refused a config
    // outside /etc without the root).
    let out = Command::new(TOOL)
        .args(["install", "containerd", "--root"])
        .arg(r.dir.path())
        .args(["--config", containerd])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    r.write("srv/containerd.toml", "version = 2\n");
    // A handler whose wrapper is gone: reinstall with the same config.
    r.write(
        "srv/containerd.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.userns-hostnet.options]\nBinaryName = \"/opt/gone/userns-hostnet-runtime\"\n",
    );
    let (_, v) = r.doctor_with(&["--runtime", runtime, "--containerd-config", containerd]);
    assert!(
        fix(&v, "containerd").ends_with(&format!(
            "{p}userns-hostnet uninstall containerd --root {root} --config {containerd} && userns-hostnet install containerd --root {root} --config {containerd}"
        )),
        "{v:#}"
    );

    // --runtime names a runtime that is not there: the fix is about that
    // flag, not about the config file.
    let (code, v) = r.doctor_with(&["--runtime", "/no/such/runc"]);
    assert_eq!(code, 1);
    let f = fix(&v, "runtime");
    assert!(
        f.starts_with("install /no/such/runc, or give --runtime the path"),
        "{f}"
    );

    // A setting to change names the file the wrapper reads.
    let elsewhere = r.path("srv/userns-hostnet.toml");
    r.write(
        "srv/userns-hostnet.toml",
        "[log]\nfile = \"/no/such/dir/x.log\"\n",
    );
    let out = Command::new(TOOL)
        .args(["doctor", "--json", "--root"])
        .arg(r.dir.path())
        .args(["--runtime", runtime])
        .env("USERNS_HOSTNET_CONFIG", "/srv/userns-hostnet.toml")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status(&v, "log"), "fail", "{v:#}");
    assert!(
        fix(&v, "log").ends_with(&format!(
            "userns-hostnet config set log.file=/path/to/userns-hostnet.log --file {}",
            elsewhere.display()
        )),
        "{v:#}"
    );
}

/// Run by another user than root, every command that changes the host
/// says "as root", and what only root can check is a warning whose fix
/// is this same doctor command, flags included, run as root.
#[test]
fn fix_lines_as_another_user() {
    use std::os::unix::process::CommandExt;
    let r = Root::ready();
    std::fs::set_permissions(r.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // The log directory only root can write to.
    std::fs::set_permissions(r.path("var/log"), std::fs::Permissions::from_mode(0o755)).unwrap();
    r.write("proc/sys/net/ipv4/ip_unprivileged_port_start", "2000\n");
    r.write("etc/containerd/config.toml", "version = 2\n");
    let runtime = r.path("runtime");
    let runtime = runtime.to_str().unwrap();
    let containerd = "/etc/containerd/config.toml";
    let mut cmd = Command::new(TOOL);
    cmd.args(["doctor", "--json", "--root"])
        .arg(r.dir.path())
        .args(["--runtime", runtime, "--containerd-config", containerd])
        .env_remove("USERNS_HOSTNET_CONFIG")
        .env_remove("USERNS_HOSTNET_RUNTIME");
    // Root runs it as nobody, whose config file it makes; anyone else is
    // not root already, and owns the file.
    if nix::unistd::geteuid().is_root() {
        cmd.uid(65534).gid(65534);
        let file = r.path("etc/userns-hostnet/config.toml");
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    }
    let out = cmd.output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(fix(&v, "ports").starts_with("as root: sysctl -w"), "{v:#}");
    assert_eq!(
        fix(&v, "containerd"),
        format!("as root: userns-hostnet install containerd --root {} --config {containerd}, then restart containerd", r.dir.path().display())
    );
    assert_eq!(status(&v, "log"), "warn", "{v:#}");
    assert!(
        message(&v, "log").contains("the wrapper runs as root, and doctor runs as uid"),
        "{v:#}"
    );
    assert_eq!(
        fix(&v, "log"),
        format!("run it as root: sudo userns-hostnet doctor --runtime {runtime} --containerd-config {containerd}")
    );
    // Its own config file: trusted by its own wrapper, not by root's.
    let file = r.path("etc/userns-hostnet/config.toml");
    let file = file.display();
    assert_eq!(status(&v, "config"), "warn", "{v:#}");
    assert!(
        message(&v, "config").contains(
            "one running as root (containerd, CRI-O) refuses every container with a user namespace: owned by uid"
        ),
        "{v:#}"
    );
    assert_eq!(
        fix(&v, "config"),
        format!("as root: chown root:root {file}; chmod go-w {file}")
    );
}

/// The containerd asked is the one that reads the config: the running
/// daemon started with it (its /proc entry), else the one named with
/// --containerd, else the first in PATH; each answer says which.
#[test]
fn the_daemon_that_serves_the_config_is_asked() {
    let r = Root::ready();
    let config_23 = "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.userns-hostnet]\n  runtime_type = \"io.containerd.runc.v2\"\n  [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.userns-hostnet.options]\n    BinaryName = \"/usr/bin/userns-hostnet-runtime\"\n";
    r.write("etc/containerd/config.toml", config_23);
    // Debian's 1.6 first in PATH: it ignores a version 3 file's plugins.
    r.host_binary("usr/bin/containerd", &real(CONTAINERD_16));
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "containerd.config").starts_with("containerd 1.6.20 at /usr/bin/containerd (first in PATH; no running containerd that doctor can see reads this file) reads config version 2 at most"),
        "{v:#}"
    );
    // Named: that one is asked.
    r.host_binary("opt/containerd-2.3/containerd", &real(CONTAINERD_23));
    let (code, v) = r.doctor_with(&[
        "--runtime",
        r.path("runtime").to_str().unwrap(),
        "--containerd",
        "/opt/containerd-2.3/containerd",
    ]);
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (0, "ok".into()),
        "{v:#}"
    );
    assert_eq!(
        message(&v, "containerd.config"),
        "containerd 2.3.4 at /opt/containerd-2.3/containerd (--containerd on the command line) accepts /etc/containerd/config.toml (`config dump`), and every handler's runtime is there"
    );
    assert!(
        message(&v, "matrix.containerd").starts_with("containerd 2.3.4 "),
        "{v:#}"
    );
    // Running with this file (by default, no --config): asked before both.
    r.link("proc/4242/exe", Path::new("/opt/containerd-2.3/containerd"));
    r.write(
        "proc/4242/cmdline",
        "/opt/containerd-2.3/containerd\0--log-level\0info\0",
    );
    r.write("proc/4242/environ", "PATH=/opt/bin:/usr/bin\0");
    // Another containerd, running with another file: not this one's.
    r.link("proc/99/exe", Path::new("/usr/bin/containerd"));
    r.write("proc/99/cmdline", "containerd\0--config=/srv/other.toml\0");
    let (code, v) = r.doctor_with(&[
        "--runtime",
        r.path("runtime").to_str().unwrap(),
        "--containerd",
        "/usr/bin/containerd",
    ]);
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (0, "ok".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "containerd.config").starts_with("containerd 2.3.4 at /opt/containerd-2.3/containerd (the running daemon, PID 4242) accepts"),
        "{v:#}"
    );
    // The other daemon's file: PID 99, containerd 1.6.
    r.write("srv/other.toml", "version = 2\n");
    let (_, v) = r.doctor_with(&[
        "--runtime",
        r.path("runtime").to_str().unwrap(),
        "--containerd-config",
        "/srv/other.toml",
    ]);
    assert!(
        message(&v, "containerd.config").starts_with("containerd 1.6.20 at /usr/bin/containerd (the running daemon, PID 99) accepts /srv/other.toml"),
        "{v:#}"
    );
    // What containerd refuses, in its words, on one line.
    r.write(
        "srv/other.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"\n",
    );
    let (code, v) = r.doctor_with(&[
        "--runtime",
        r.path("runtime").to_str().unwrap(),
        "--containerd-config",
        "/srv/other.toml",
    ]);
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    let m = message(&v, "containerd.config");
    assert!(
        m.starts_with("containerd 1.6.20 at /usr/bin/containerd (the running daemon, PID 99) refuses /srv/other.toml: containerd: failed to load TOML") && !m.contains('\n'),
        "{m}"
    );
    // A handler whose runtime is not executable.
    r.remove("usr/bin/userns-hostnet-runtime");
    r.write("usr/bin/userns-hostnet-runtime", "");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "containerd.config").contains("handler userns-hostnet: BinaryName /usr/bin/userns-hostnet-runtime is not executable: the wrapper's handler cannot run a container"),
        "{v:#}"
    );
}

/// The package's logrotate stanza names the default log file only: a
/// log.file elsewhere that no stanza names is a warning whose fix is the
/// stanza; one a stanza (or its glob) names is rotated.
#[test]
fn a_log_file_elsewhere_needs_its_own_rotation() {
    let r = Root::ready();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/logrotate"),
    )
    .unwrap();
    r.write("etc/logrotate.d/userns-hostnet", &shipped);
    let (_, v) = r.doctor();
    assert!(
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["name"] != "log.rotate"),
        "the default log file is the package's: {v:#}"
    );
    r.write(
        "etc/userns-hostnet/config.toml",
        "[idmap]\nallowed_ranges = { subid_user = \"kubelet\" }\n[log]\nfile = \"/srv/log/decisions.jsonl\"\n",
    );
    r.write("srv/log/.keep", "");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "log.rotate")),
        (0, "warn".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "log.rotate")
            .starts_with("/srv/log/decisions.jsonl (log.file) is named by no logrotate stanza"),
        "{v:#}"
    );
    assert_eq!(
        fix(&v, "log.rotate"),
        format!("{}write /etc/logrotate.d/userns-hostnet-log: /srv/log/decisions.jsonl {{ weekly maxsize 100M rotate 8 compress delaycompress missingok notifempty create 0640 root root }}", as_root())
    );
    r.write(
        "etc/logrotate.d/site",
        "# site logs\n/srv/log/*.jsonl /srv/other.log {\n\tdaily\n}\n",
    );
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "log.rotate"), "ok", "{v:#}");
    assert!(
        message(&v, "log.rotate").ends_with("etc/logrotate.d/site"),
        "{v:#}"
    );
}

/// The root's links are followed inside it: a config that is an absolute
/// link (to /etc/k0s/...) is the root's file, and a link loop fails the
/// `root` check, naming it, rather than being read on this host.
#[test]
fn the_roots_links_resolve_inside_the_root() {
    let r = Root::ready();
    let config = r.path("etc/containerd/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    r.write("etc/uhn-k0s/containerd.toml", &text);
    std::fs::remove_file(&config).unwrap();
    std::os::unix::fs::symlink("/etc/uhn-k0s/containerd.toml", &config).unwrap();
    assert!(!Path::new("/etc/uhn-k0s").exists());
    let (code, v) = r.doctor();
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(status(&v, "containerd"), "ok", "{v:#}");
    assert!(v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["name"] != "root"));
    std::fs::remove_file(&config).unwrap();
    std::os::unix::fs::symlink("config.toml", &config).unwrap();
    let (code, v) = r.doctor();
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(status(&v, "root"), "fail", "{v:#}");
    assert!(
        message(&v, "root").contains(&format!(
            "{}: too many levels of symbolic links (a loop)",
            config.display()
        )),
        "{v:#}"
    );
}

/// A CRI-O node as its packages make it (`default_runtime = "crun"`),
/// whose handler `install crio` builds on Debian's crun 1.8.1: no
/// `features` answer, and it refuses every ociVersion but 1.0. The
/// runtime doctor finds in PATH (`--runtime`) lists everything; the
/// handler's own runtime does not, so the node is not ready.
#[test]
fn a_handler_is_judged_by_the_runtime_it_runs() {
    let r = Root::ready();
    r.host_binary("usr/bin/crio", &real(CRIO));
    r.write("run/crio/crio.sock", "");
    r.remove("usr/bin/containerd");
    r.remove("etc/containerd/config.toml");
    r.write("etc/crio/crio.conf.d/10-crio.conf", CRIO_PACKAGING);
    r.exe("usr/libexec/crio/conmon");
    r.exe("usr/libexec/crio/runc");
    r.host_binary("usr/libexec/crio/crun", Path::new("/usr/bin/crun"));
    let out = Command::new(TOOL)
        .args(["install", "crio", "--root"])
        .arg(r.dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (code, v) = r.doctor();
    assert_eq!(status(&v, "crio"), "ok", "{v:#}");
    // The runtime named on the command line is fine: doctor used to stop there.
    assert_eq!(status(&v, "runtime.features"), "ok", "{v:#}");
    assert_eq!(
        (code, status(&v, "crio.runtime")),
        (1, "fail".into()),
        "{v:#}"
    );
    let m = message(&v, "crio.runtime");
    assert!(
        m.starts_with("handler userns-hostnet runs crun version 1.8.1 (/usr/libexec/crio/crun), which has no `features` answer: "),
        "{m}"
    );
    assert!(m.contains("unknown version specified"), "{m}");
    assert!(fix(&v, "crio.runtime").contains("runc >= 1.2"), "{v:#}");
    // The same handler on a runtime that lists what the kubelet asks for.
    r.script(
        "usr/libexec/crio/crun",
        "case \"$1\" in features) echo '{\"mountOptions\":[\"rro\"],\"linux\":{\"namespaces\":[\"user\",\"network\"],\"mountExtensions\":{\"idmap\":{\"enabled\":true}}}}';; --version) echo 'crun version 1.19.1';; esac",
    );
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.runtime")),
        (0, "ok".into()),
        "{v:#}"
    );
}
