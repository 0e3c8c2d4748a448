//! A handler `userns-hostnet install` writes into a real containerd 1.6's
//! config runs a container end to end, through crun.

mod common;

use common::containerd::Containerd;
use common::install::{dump, install, s, v2_handler};
use common::Bundle;
use serde_json::json;
use std::path::Path;

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
