//! A handler `userns-hostnet install` writes into a real containerd 1.6's
//! config runs a container end to end, through crun.

mod common;

use common::containerd::Containerd;
use common::install::{install, s};
use common::Bundle;
use serde_json::json;
use std::path::Path;
use std::process::Command;

/// `containerd --config F config dump`: the merged config as containerd 1.6
/// loads it.
fn dump(config: &Path) -> toml::Value {
    let out = Command::new("containerd")
        .arg("--config")
        .arg(config)
        .args(["config", "dump"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "containerd cannot load {config:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    toml::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

fn v2_handler<'a>(doc: &'a toml::Value, name: &str) -> Option<&'a toml::Value> {
    doc.get("plugins")?
        .get("io.containerd.grpc.v1.cri")?
        .get("containerd")?
        .get("runtimes")?
        .get(name)
}

#[test]
fn installed_crun_handler_runs_a_container() {
    let mut ctd = Containerd::start();
    let cfg = ctd.dir().join("installed.toml");
    std::fs::copy(ctd.dir().join("config.toml"), &cfg).unwrap();
    let wrapper = ctd.wrapper_crun();
    install(
        "containerd",
        &cfg,
        &["--handler", "userns-hostnet-crun", "--wrapper", s(&wrapper)],
    );
    let d = dump(&cfg);
    let binary = v2_handler(&d, "userns-hostnet-crun").unwrap()["options"]["BinaryName"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(binary, s(&wrapper));

    let bundle = Bundle::userns_hostnet(&["sh", "-c", "grep ' /sys ' /proc/self/mounts"]);
    bundle.edit(|spec| spec["process"]["env"] = json!(["PATH=/bin"]));
    let id = common::unique_id("install-crun");
    let out = ctd.run(Path::new(&binary), &bundle.config_path(), &id);
    out.assert_success();
    assert!(out.stdout.contains(" /sys "), "{}", out.describe());
    assert!(
        out.stdout.contains("ro,"),
        "/sys is not read-only: {}",
        out.stdout
    );
    let leaked = ctd.stop();
    assert!(leaked.is_empty(), "left behind: {leaked:#?}");
}
