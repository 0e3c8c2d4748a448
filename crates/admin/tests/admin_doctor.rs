//! `userns-hostnet doctor` on prepared fake roots (`--root` for /etc
//! and /proc files), one per branch of each check of the host (kernel,
//! cgroups, subordinate IDs, config, log, runtime) and the fix lines.
//! The daemons' checks: admin_doctor_daemons. tests/e2e_doctor.rs runs
//! doctor on this machine.

mod fake_root;

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use fake_root::*;

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
