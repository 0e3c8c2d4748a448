//! `userns-hostnet doctor` on this machine, with its real kernel, runc and
//! cgroup mounts: the checks agree with what is there. tests/admin_doctor.rs
//! covers each branch on fake roots.

mod common;

use serde_json::Value;
use std::process::Command;

const TOOL: &str = env!("CARGO_BIN_EXE_userns-hostnet");

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
#[test]
fn version_matrix_with_the_real_binaries() {
    common::require_prerequisites(common::Runtime::Runc14);
    let containerd_23 =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/containerd-2.3");
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
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .starts_with("containerd 2.3.4 "),
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
