//! The wrapper's decision-log line for a create whose bundle has no
//! config.json says why nothing was converted, and the real runtime still
//! gets the command (it reports the missing file in its own words).

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

const WRAPPER: &str = env!("CARGO_BIN_EXE_userns-hostnet-runtime");

#[test]
fn a_bundle_without_config_json_is_logged_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("decisions.log");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[log]\nfile = {:?}\n", log.display().to_string()),
    )
    .unwrap();
    // A runtime that records it ran and fails as runc does on a missing
    // config.json.
    let ran = dir.path().join("ran");
    let rt = dir.path().join("runtime");
    std::fs::write(
        &rt,
        format!(
            "#!/bin/sh\necho \"$@\" > {}\necho 'config.json: no such file or directory' >&2\nexit 1\n",
            ran.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&rt, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bundle = dir.path().join("empty-bundle");
    std::fs::create_dir(&bundle).unwrap();
    let out = Command::new(WRAPPER)
        .args([
            "create",
            "--bundle",
            bundle.to_str().unwrap(),
            "no-spec-ctr",
        ])
        .env("USERNS_HOSTNET_CONFIG", &config)
        .env("USERNS_HOSTNET_RUNTIME", &rt)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("config.json: no such file"),
        "{out:?}"
    );
    assert!(
        std::fs::read_to_string(&ran)
            .unwrap()
            .starts_with("create "),
        "the runtime did not get the command"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    let line = &lines[0];
    assert_eq!(line["command"], "create");
    assert_eq!(line["id"], "no-spec-ctr");
    assert_eq!(line["converted"], false);
    let spec = bundle.join("config.json");
    assert_eq!(
        line["reason"],
        format!(
            "no spec file {}: nothing to convert; passed to the runtime as it is, which reports the missing file",
            spec.display()
        ),
        "{line}"
    );
}
