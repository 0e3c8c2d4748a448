//! `net.*` sysctls cannot apply to the host's network namespace: the wrapper
//! refuses such a container before the real runtime runs, where operators look
//! (stderr, and the `--log` file the containerd shim reads), leaving the bundle
//! untouched.

mod common;

use std::ffi::OsString;
use std::fs;

use common::{Bundle, Outcome, Runtime, Sandbox};
use serde_json::{json, Value};

const KEY: &str = "net.ipv4.ip_forward";

fn bundle_with_net_sysctl(own_network: bool) -> Bundle {
    let bundle = if own_network {
        Bundle::userns_ownnet(&["/bin/cat", "/proc/sys/net/ipv4/ip_forward"])
    } else {
        Bundle::userns_hostnet(&["/bin/true"])
    };
    bundle.edit(|spec| {
        spec["linux"]["sysctl"] = json!({ KEY: "1" });
    });
    bundle
}

fn assert_refused(out: &Outcome, sandbox: &Sandbox, id: &str) {
    assert_eq!(
        out.code(),
        Some(1),
        "expected exit status 1\n{}",
        out.describe()
    );
    assert!(
        out.stdout.is_empty(),
        "stdout must stay empty\n{}",
        out.describe()
    );
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr\n{}", out.describe());
    assert!(
        lines[0].starts_with("userns-hostnet-runtime: "),
        "stderr line must start with the program name\n{}",
        out.describe()
    );
    assert!(
        lines[0].contains(KEY),
        "stderr must name {KEY}\n{}",
        out.describe()
    );
    assert!(
        sandbox.real().state(id).is_none(),
        "no container may exist after a refusal"
    );
}

fn log_lines(path: &std::path::Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("log file {path:?}: {e}"));
    assert!(
        text.ends_with('\n'),
        "log lines must end with a newline: {text:?}"
    );
    text.lines().map(str::to_string).collect()
}

fn refused_with_json_log(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = bundle_with_net_sysctl(false);
    let snap = bundle.snapshot();
    let id = common::unique_id("refuse");
    let _guard = common::ContainerGuard::new(&sandbox, &id);
    let log = sandbox.path().join("log.json");
    // The shim's log may already hold lines: they stay, the error is appended.
    let earlier = r#"{"level":"warning","msg":"earlier line","time":"2024-01-01T00:00:00Z"}"#;
    fs::write(&log, format!("{earlier}\n")).unwrap();

    let argv: Vec<OsString> = vec![
        "--log".into(),
        log.clone().into(),
        "--log-format".into(),
        "json".into(),
        "create".into(),
        "--bundle".into(),
        bundle.dir().into(),
        id.clone().into(),
    ];
    let out = sandbox.wrapper().run(&argv);
    assert_refused(&out, &sandbox, &id);
    snap.assert_unchanged(&bundle.config_path(), "refusal");

    let lines = log_lines(&log);
    assert_eq!(lines.len(), 2, "one line appended expected: {lines:?}");
    assert_eq!(lines[0], earlier, "earlier log content must stay");
    let entry: Value = serde_json::from_str(&lines[1])
        .unwrap_or_else(|e| panic!("log line is not JSON ({e}): {}", lines[1]));
    assert_eq!(entry["level"], "error", "{entry}");
    let msg = entry["msg"].as_str().unwrap_or_default();
    assert!(msg.contains(KEY), "msg must name {KEY}: {entry}");
    let time = entry["time"].as_str().unwrap_or_default();
    assert!(
        time.len() >= 20 && time.as_bytes()[10] == b'T',
        "time must be RFC 3339: {entry}"
    );
}

#[test]
fn net_sysctl_refused_with_json_log_runc() {
    refused_with_json_log(Runtime::Runc);
}

#[test]
fn net_sysctl_refused_with_json_log_crun() {
    refused_with_json_log(Runtime::Crun);
}

fn text_log_line_ok(line: &str) -> bool {
    line.starts_with("time=") && line.contains(" level=error ") && line.contains(" msg=\"")
}

#[test]
fn net_sysctl_refused_with_text_log_by_default() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = bundle_with_net_sysctl(false);
    let snap = bundle.snapshot();
    let id = common::unique_id("refuse-text");
    let _guard = common::ContainerGuard::new(&sandbox, &id);
    let log = sandbox.path().join("log.txt");

    let argv: Vec<OsString> = vec![
        "--log".into(),
        log.clone().into(),
        "run".into(),
        "--bundle".into(),
        bundle.dir().into(),
        id.clone().into(),
    ];
    let out = sandbox.wrapper().run(&argv);
    assert_refused(&out, &sandbox, &id);
    snap.assert_unchanged(&bundle.config_path(), "refusal");
    let lines = log_lines(&log);
    assert_eq!(lines.len(), 1, "one log line expected: {lines:?}");
    assert!(
        text_log_line_ok(&lines[0]),
        "logrus text line: {}",
        lines[0]
    );
    assert!(lines[0].contains(KEY), "{}", lines[0]);
}

#[test]
fn net_sysctl_refused_with_equals_form_options() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = bundle_with_net_sysctl(false);
    let snap = bundle.snapshot();
    let id = common::unique_id("refuse-eq");
    let _guard = common::ContainerGuard::new(&sandbox, &id);
    let log = sandbox.path().join("log.txt");
    let mut log_opt = OsString::from("--log=");
    log_opt.push(&log);
    let mut bundle_opt = OsString::from("--bundle=");
    bundle_opt.push(bundle.dir());

    let argv: Vec<OsString> = vec![
        log_opt,
        "--log-format=text".into(),
        "create".into(),
        bundle_opt,
        id.clone().into(),
    ];
    let out = sandbox.wrapper().run(&argv);
    assert_refused(&out, &sandbox, &id);
    snap.assert_unchanged(&bundle.config_path(), "refusal");
    let lines = log_lines(&log);
    assert_eq!(lines.len(), 1, "one log line expected: {lines:?}");
    assert!(
        text_log_line_ok(&lines[0]),
        "logrus text line: {}",
        lines[0]
    );
}

/// Without `--log` only stderr carries the refusal.
#[test]
fn net_sysctl_refused_without_log() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = bundle_with_net_sysctl(false);
    let snap = bundle.snapshot();
    let id = common::unique_id("refuse-nolog");
    let _guard = common::ContainerGuard::new(&sandbox, &id);

    let out = sandbox.wrapper().run(&[
        "create".into(),
        "--bundle".into(),
        bundle.dir().as_os_str().to_owned(),
        OsString::from(&id),
    ]);
    assert_refused(&out, &sandbox, &id);
    snap.assert_unchanged(&bundle.config_path(), "refusal");
}

/// With its own network namespace the sysctl applies to the container's own
/// network: nothing is refused or rewritten.
#[test]
fn net_sysctl_allowed_with_own_network_namespace() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = bundle_with_net_sysctl(true);
    let snap = bundle.snapshot();
    let id = common::unique_id("ownnet-sysctl");
    let _guard = common::ContainerGuard::new(&sandbox, &id);

    let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
    out.assert_success();
    assert_eq!(out.stdout.trim(), "1", "{}", out.describe());
    snap.assert_unchanged(&bundle.config_path(), "own network namespace");
}
