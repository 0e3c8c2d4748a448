//! `userns-hostnet version`: the version, the commit and build date
//! build.rs recorded, and the real runtime the wrapper would run with the
//! first line of its own `--version`.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// The admin tool, which cargo builds for this crate's tests.
const TOOL: &str = env!("CARGO_BIN_EXE_userns-hostnet");

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The commit build.rs recorded: this checkout's HEAD.
fn head() -> String {
    stdout(
        Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .current_dir(env!("CARGO_MANIFEST_DIR")),
    )
    .trim()
    .to_owned()
}

fn runc() -> PathBuf {
    let out = stdout(Command::new("sh").args(["-c", "command -v runc"]));
    let p = PathBuf::from(out.trim());
    assert!(
        p.is_absolute(),
        "runc is not installed (Debian package runc)"
    );
    p
}

/// The tool with an empty config file and `runtime` as the real runtime.
fn version(args: &[&str], runtime: &std::ffi::OsStr) -> (String, i32) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let out = Command::new(TOOL)
        .arg("version")
        .args(args)
        .env("USERNS_HOSTNET_CONFIG", &config)
        .env("USERNS_HOSTNET_RUNTIME", runtime)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap(),
    )
}

#[test]
fn json_gives_version_commit_build_date_and_the_runtime_with_its_version() {
    let runc = runc();
    let (out, code) = version(&["--json"], runc.as_os_str());
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["commit"], head().as_str());
    assert_eq!(v["runtime"], runc.to_str().unwrap());
    let runc_first = stdout(Command::new(&runc).arg("--version"))
        .lines()
        .next()
        .unwrap()
        .to_owned();
    assert!(runc_first.starts_with("runc version "), "{runc_first}");
    assert_eq!(v["runtime_version"], runc_first.as_str());
    assert_eq!(v["runtime_error"], Value::Null);
    // The build date: RFC 3339 in UTC, as `date -u` prints it.
    let date = v["build_date"].as_str().unwrap();
    let parsed = stdout(Command::new("date").args(["-u", "-d", date, "+%Y-%m-%dT%H:%M:%SZ"]));
    assert_eq!(parsed.trim(), date);
    // A reproducible build's date is SOURCE_DATE_EPOCH's.
    if let Some(epoch) = option_env!("SOURCE_DATE_EPOCH") {
        let want = stdout(Command::new("date").args([
            "-u",
            "-d",
            &format!("@{epoch}"),
            "+%Y-%m-%dT%H:%M:%SZ",
        ]));
        assert_eq!(date, want.trim());
    }
    // The text says the same.
    let (text, code) = version(&[], runc.as_os_str());
    assert_eq!(code, 0);
    assert_eq!(
        text,
        format!(
            "userns-hostnet {}\ncommit:     {}\nbuild date: {date}\nruntime:    {} ({runc_first})\n",
            env!("CARGO_PKG_VERSION"),
            head(),
            runc.display()
        )
    );
}

#[test]
fn a_missing_runtime_is_said_and_the_rest_still_printed() {
    let (out, code) = version(&["--json"], "/nonexistent/runtime".as_ref());
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runtime"], Value::Null);
    assert_eq!(v["commit"], head().as_str());
    assert!(
        v["runtime_error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/runtime"),
        "{v}"
    );
    let (text, _) = version(&[], "/nonexistent/runtime".as_ref());
    assert!(text.contains("runtime:    (none found: "), "{text}");
}
