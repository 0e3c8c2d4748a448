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
