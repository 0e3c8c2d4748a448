//! `userns-hostnet doctor` on this machine, with its real kernel, runc and
//! cgroup mounts: the checks agree with what is there. crates/admin/tests/admin_doctor.rs
//! covers each branch on fake roots.

mod common;

use common::containerd::{Containerd, Launch};
use common::crio::{Crio, Mode};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const TOOL: &str = common::TOOL;

fn status(v: &Value, name: &str) -> String {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {v:#}"))["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn this_machine() {
    common::require_prerequisites(common::Runtime::Runc);
    let out = Command::new(TOOL)
        .args(["doctor", "--json"])
        .env_remove("USERNS_HOSTNET_CONFIG")
        .env_remove("USERNS_HOSTNET_RUNTIME")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["status"] == "fail");
    assert_eq!(out.status.code(), Some(i32::from(failed)));
    assert_eq!(v["ok"], !failed);
    assert_eq!(status(&v, "kernel.mount_setattr"), "ok");
    assert_eq!(status(&v, "runtime"), "ok", "{v:#}");
    assert_eq!(status(&v, "runtime.rro"), "ok");
    // The cgroup check agrees with what is mounted here.
    let cgroup2 = nix::sys::statfs::statfs("/sys/fs/cgroup")
        .map(|s| s.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC)
        .unwrap_or(false);
    assert_eq!(status(&v, "cgroup"), if cgroup2 { "ok" } else { "warn" });
    for c in v["checks"].as_array().unwrap() {
        assert_eq!(
            c["fix"].is_null(),
            c["status"] == "ok" || c["status"] == "skip",
            "{c}"
        );
    }
}

/// The version matrix with the real binaries: containerd 2.3.4 first in
/// PATH (scripts/cri-tools.sh unpacks it), then each real runtime. runc
/// 1.4.3 lists the user namespace and idmapped mounts; runc 1.1.5 lists no
/// idmap and crun 1.8.1 has no `features`: containerd 2.3.4 refuses their
/// user-namespaced containers, and doctor fails them with the fix. With
/// Debian's containerd 1.6 the kubelet's gate cannot admit the pods.
///
/// doctor asks the containerd that serves the config it checks, and only
/// when none runs the first in PATH: a containerd running on this machine
/// with /etc/containerd/config.toml would be asked instead of the one put
/// first here. So doctor checks a config file of this test's own, which no
/// running daemon reads, and the test holds with or without one.
#[test]
fn version_matrix_with_the_real_binaries() {
    common::require_prerequisites(common::Runtime::Runc14);
    let containerd_23 =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/containerd-2.3");
    let unread = tempfile::Builder::new()
        .prefix("userns-hostnet-doctor-matrix-")
        .tempdir_in("/tmp")
        .unwrap();
    let config = unread.path().join("config.toml");
    std::fs::write(&config, "version = 2\n").unwrap();
    let doctor = |path_first: Option<&std::path::Path>, runtime: &std::path::Path| -> Value {
        let mut path = std::env::var_os("PATH").unwrap_or_default();
        if let Some(dir) = path_first {
            let mut p = dir.as_os_str().to_owned();
            p.push(":");
            p.push(&path);
            path = p;
        }
        let out = Command::new(TOOL)
            .args(["doctor", "--json", "--runtime"])
            .arg(runtime)
            .arg("--containerd-config")
            .arg(&config)
            .env("PATH", path)
            .env_remove("USERNS_HOSTNET_CONFIG")
            .env_remove("USERNS_HOSTNET_RUNTIME")
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let find = |v: &Value, name: &str| -> Value {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name}: {v:#}"))
            .clone()
    };
    let runc_14 = common::Runtime::Runc14.path();
    let v = doctor(Some(&containerd_23), &runc_14);
    let c = find(&v, "matrix.containerd");
    assert_eq!(c["status"], "ok", "{c}");
    let m = c["message"].as_str().unwrap();
    assert!(m.starts_with("containerd 2.3.4 "), "{c}");
    assert!(
        m.ends_with(&format!(
            "; asked containerd 2.3.4 at {} (first in PATH; no running containerd that doctor can see reads this file)",
            containerd_23.join("containerd").display()
        )),
        "{c}"
    );
    for (runtime, missing) in [
        (common::Runtime::Runc.path(), "lists no idmapped mounts"),
        (common::Runtime::Crun.path(), "has no `features` answer"),
    ] {
        let v = doctor(Some(&containerd_23), &runtime);
        let c = find(&v, "matrix.containerd");
        assert_eq!(c["status"], "fail", "{c}");
        assert!(c["message"].as_str().unwrap().contains(missing), "{c}");
        assert!(c["fix"].as_str().unwrap().contains("runc >= 1.2"), "{c}");
        assert_eq!(v["ok"], false);
    }
    // Debian 12's containerd, wherever PATH finds it first.
    let system = common::find_in_path("containerd").expect("Debian's containerd is installed");
    let v = doctor(system.parent(), &runc_14);
    let c = find(&v, "matrix.containerd");
    assert!(
        c["message"].as_str().unwrap().contains(&format!(
            "; asked containerd 1.6.20 at {} (first in PATH",
            system.display()
        )),
        "{c}"
    );
    // Its CRI has no user namespaces: whatever the runtime, not ready.
    assert_eq!(c["status"], "fail", "{c}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .starts_with("containerd 1.6.20: its CRI has no user namespaces"),
        "{c}"
    );
    let k = find(&v, "matrix.kubelet");
    assert_eq!(k["status"], "warn", "{k}");
    assert!(
        k["message"]
            .as_str()
            .unwrap()
            .contains("UserNamespacesHostNetworkSupport will not admit"),
        "{k}"
    );
}

fn check(v: &Value, name: &str) -> Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {v:#}"))
        .clone()
}

fn doctor_json(args: &[&std::ffi::OsStr], path: &str) -> Value {
    let out = Command::new(TOOL)
        .args(["doctor", "--json"])
        .args(args)
        .env("PATH", path)
        .env_remove("USERNS_HOSTNET_CONFIG")
        .env_remove("USERNS_HOSTNET_RUNTIME")
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// A containerd 2.3 config (version 4, as `containerd config migrate`
/// of 2.3.4 writes it) served by a running containerd 2.3.4, while
/// Debian's containerd 1.6.20 is first in PATH: doctor asks the running
/// daemon, and says so; with no daemon running, it asks 1.6.20, which
/// ignores that file's plugin tables, and fails.
#[test]
fn the_running_containerd_is_asked_not_the_one_in_path() {
    let bin_23 = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/containerd-2.3");
    assert!(
        bin_23.join("containerd").is_file(),
        "{} is missing: make cri-tools",
        bin_23.display()
    );
    let system = common::find_in_path("containerd").expect("Debian's containerd is installed");
    let path = format!(
        "{}:{}",
        system.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut daemon = Containerd::launch(Launch {
        bin_dir: Some(&bin_23),
        install_hint: "make cri-tools",
        extra_config: &|_| String::new(),
        setup: &|_| {},
    });
    let config = daemon.dir().join("config.toml");
    // The running daemon's file, rewritten as 2.3.4 writes it.
    let migrated = Command::new(bin_23.join("containerd"))
        .arg("--config")
        .arg(&config)
        .args(["config", "migrate"])
        .output()
        .unwrap();
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    std::fs::write(&config, &migrated.stdout).unwrap();
    assert!(String::from_utf8_lossy(&migrated.stdout).starts_with("version = 4"));
    let pid = daemon.pid().expect("containerd runs");
    let args = [
        std::ffi::OsStr::new("--containerd-config"),
        config.as_os_str(),
    ];
    let v = doctor_json(&args, &path);
    let c = check(&v, "containerd.config");
    assert_eq!(c["status"], "ok", "{c}");
    // The daemon is started through a shell that execs it: its PID is the shell's.
    let m = c["message"].as_str().unwrap();
    assert!(
        m.starts_with(&format!(
            "containerd 2.3.4 at {} (the running daemon, PID ",
            bin_23.join("containerd").display()
        )),
        "{m} (daemon {pid})"
    );
    let matrix = check(&v, "matrix.containerd");
    assert!(
        matrix["message"]
            .as_str()
            .unwrap()
            .contains("asked containerd 2.3.4 at "),
        "{matrix}"
    );
    let _ = daemon.stop();
    // No daemon reads it now: the first in PATH, 1.6.20, is asked.
    let copy_dir = tempfile::Builder::new()
        .prefix("userns-hostnet-doctor-ctd-")
        .tempdir_in("/tmp")
        .unwrap();
    let config = copy_dir.path().join("config.toml");
    std::fs::write(&config, &migrated.stdout).unwrap();
    let args = [
        std::ffi::OsStr::new("--containerd-config"),
        config.as_os_str(),
    ];
    let v = doctor_json(&args, &path);
    let c = check(&v, "containerd.config");
    assert_eq!(c["status"], "fail", "{c}");
    assert_eq!(
        c["message"].as_str().unwrap(),
        format!(
            "containerd 1.6.20 at {} (first in PATH; no running containerd that doctor can see reads this file) reads config version 2 at most, and {} is version 4: it ignores that file's plugin tables, its runtime handlers included",
            system.display(),
            config.display()
        )
    );
    // Named: that one is asked.
    let bin_23_containerd = bin_23.join("containerd");
    let named = [
        args[0],
        args[1],
        std::ffi::OsStr::new("--containerd"),
        bin_23_containerd.as_os_str(),
    ];
    let v = doctor_json(&named, &path);
    let c = check(&v, "containerd.config");
    assert_eq!(c["status"], "ok", "{c}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("(--containerd on the command line) accepts"),
        "{c}"
    );
}

/// CRI-O's packaging drop-in (each handler with a monitor_path) naming a
/// conmon that is not there: doctor fails naming the handler and the
/// path, and the real crio refuses to start on the same files with CRI-O's
/// own "monitor fields translation" error. The running daemon of the
/// same tier is found by its --config.
#[test]
fn crio_packaging_drop_in_without_its_conmon() {
    let crio = Crio::start(Mode::DropInfra);
    let d = crio.dir();
    let crio_bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/cri-o/crio");
    let path = std::env::var("PATH").unwrap_or_default();
    let conf = d.join("crio.conf");
    let v = doctor_json(
        &[std::ffi::OsStr::new("--crio-config"), conf.as_os_str()],
        &path,
    );
    let c = check(&v, "crio.config");
    assert_eq!(c["status"], "ok", "{c}");
    assert!(
        c["message"].as_str().unwrap().starts_with(&format!(
            "crio 1.36.3 at {} (the running daemon, PID ",
            crio_bin.display()
        )),
        "{c}"
    );
    // The same daemon's files, elsewhere, with the packaging's crun handler.
    let e = tempfile::Builder::new()
        .prefix("userns-hostnet-doctor-crio-")
        .tempdir_in("/tmp")
        .unwrap();
    let e = e.path();
    let moved = |text: String| text.replace(&d.display().to_string(), &e.display().to_string());
    std::fs::create_dir_all(e.join("crio.conf.d")).unwrap();
    // What the daemon reads there (its runtime, the handler's links,
    // policy, hooks, CNI dirs) is the running daemon's.
    for shared in [
        "bin",
        "handlers",
        "policy.json",
        "hooks",
        "cni",
        "wrapper.toml",
    ] {
        std::os::unix::fs::symlink(d.join(shared), e.join(shared)).unwrap();
    }
    std::fs::write(
        e.join("crio.conf"),
        moved(std::fs::read_to_string(&conf).unwrap()),
    )
    .unwrap();
    for f in std::fs::read_dir(d.join("crio.conf.d")).unwrap() {
        let f = f.unwrap().path();
        std::fs::write(
            e.join("crio.conf.d").join(f.file_name().unwrap()),
            moved(std::fs::read_to_string(&f).unwrap()),
        )
        .unwrap();
    }
    assert!(
        !Path::new("/usr/libexec/crio/conmon").exists(),
        "this test needs /usr/libexec/crio/conmon absent"
    );
    std::fs::write(
        e.join("crio.conf.d/10-crio.conf"),
        format!(
            "[crio.runtime.runtimes.crun]\nruntime_path = \"{}\"\nruntime_root = \"/run/crun\"\nmonitor_path = \"/usr/libexec/crio/conmon\"\nallowed_annotations = [\n    \"io.containers.trace-syscall\",\n]\n",
            common::Runtime::Crun.path().display()
        ),
    )
    .unwrap();
    let conf_e = e.join("crio.conf");
    let v = doctor_json(
        &[std::ffi::OsStr::new("--crio-config"), conf_e.as_os_str()],
        &path,
    );
    let c = check(&v, "crio.config");
    assert_eq!(c["status"], "fail", "{c}");
    let m = c["message"].as_str().unwrap();
    assert!(
        m.contains("handler crun: monitor_path /usr/libexec/crio/conmon does not exist")
            && m.ends_with("crio will not start"),
        "{m}"
    );
    assert_eq!(v["ok"], false);
    // The real daemon agrees: it exits before it serves anything.
    let out = common::run_capture(
        Command::new("timeout")
            .arg("60")
            .arg(&crio_bin)
            .arg("--config")
            .arg(&conf_e)
            .arg("--config-dir")
            .arg(e.join("crio.conf.d")),
    );
    assert!(
        !out.success(),
        "crio started on {}: {}",
        e.display(),
        out.describe()
    );
    assert!(
        out.describe().contains(
            "monitor fields translation: failed to translate monitor fields for runtime crun"
        ),
        "{}",
        out.describe()
    );
    drop(crio);
}

/// The kubelet's view of each handler: doctor asks the running containerd
/// 2.3.4 of the CRI tier, through crictl, what it declares for each
/// handler that runs the wrapper. Over runc 1.4.3 the user namespace (and
/// the daemon's user_namespaces_host_network); over runc 1.1.5 none, so
/// the kubelet would refuse that handler's pods: a failure.
#[test]
fn the_kubelets_view_of_each_handler() {
    use common::cri::{handler, Cri, Stack};
    let cri = Cri::start_on(Stack::Containerd23);
    let config = cri.dir().join("config.toml");
    let crictl = common::cri::crictl_path();
    let path = format!(
        "{}:{}",
        crictl.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let args = [
        std::ffi::OsStr::new("--containerd-config"),
        config.as_os_str(),
    ];
    let v = doctor_json(&args, &path);
    let c = check(&v, "containerd.cri");
    let m = c["message"].as_str().unwrap();
    assert_eq!(c["status"], "fail", "{c}");
    assert!(
        m.contains(&format!(
            "containerd declares handler {} without user namespace support: the kubelet refuses its pods with hostUsers: false",
            handler::WRAPPER_RUNC_11
        )),
        "{m}"
    );
    assert!(
        m.contains(&format!(
            "containerd declares handler {} with user namespace support, and user_namespaces_host_network",
            handler::WRAPPER_RUNC_14
        )),
        "{m}"
    );
}
