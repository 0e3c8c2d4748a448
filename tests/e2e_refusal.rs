//! `net.*` sysctls cannot apply to the host's network namespace: the wrapper
//! refuses such a container before the real runtime runs, where operators look
//! (stderr, and the `--log` file the containerd shim reads), leaving the bundle
//! untouched.

mod common;

use std::ffi::OsString;
use std::fs;

use common::{Bundle, Runtime, Sandbox};
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

/// The wrapper's refusal, on stderr and in the runtime's `--log`.
const MESSAGE: &str = "userns-hostnet-runtime: refused: sysctl: linux.sysctl: \
    net.ipv4.ip_forward cannot be set: the container shares a network namespace \
    that its user namespace does not own (the host's), so net.* sysctls would \
    apply to it; remove them or give the container its own network namespace";

/// What the caller's `--log` file should end up holding.
#[derive(Clone, Copy, Debug)]
enum Log {
    /// No `--log`: only stderr carries the refusal.
    None,
    /// runc's JSON lines, as containerd's shim asks for. The shim's log may
    /// already hold lines: they stay, the error is appended.
    Json,
    /// logrus text lines, runc's default format.
    Text,
}

/// One way of calling the wrapper on a bundle with a `net.*` sysctl.
///
/// Every row: exit status 1, nothing on stdout, exactly MESSAGE on stderr,
/// the same in `--log` in the row's format, the bundle unchanged, no
/// container, and the refusal in the decision log.
macro_rules! refusals {
    ($($test:ident: $runtime:ident, $log:ident, [$($arg:literal),+ $(,)?];)+) => {
        $(
            #[test]
            fn $test() {
                refused(stringify!($test), Runtime::$runtime, Log::$log, &[$($arg),+]);
            }
        )+
    };
}

// `{log}`, `{bundle}` and `{id}` in an argv stand for the log file, the
// bundle directory and the container id.
refusals! {
    net_sysctl_refused_with_json_log_runc: Runc, Json,
        ["--log", "{log}", "--log-format", "json", "create", "--bundle", "{bundle}", "{id}"];
    net_sysctl_refused_with_json_log_crun: Crun, Json,
        ["--log", "{log}", "--log-format", "json", "create", "--bundle", "{bundle}", "{id}"];
    net_sysctl_refused_with_text_log_by_default: Runc, Text,
        ["--log", "{log}", "run", "--bundle", "{bundle}", "{id}"];
    net_sysctl_refused_with_equals_form_options: Runc, Text,
        ["--log={log}", "--log-format=text", "create", "--bundle={bundle}", "{id}"];
    net_sysctl_refused_without_log: Runc, None,
        ["create", "--bundle", "{bundle}", "{id}"];
}

fn refused(row: &str, runtime: Runtime, log_format: Log, argv: &[&str]) {
    let sandbox = Sandbox::new(runtime);
    let bundle = bundle_with_net_sysctl(false);
    let snap = bundle.snapshot();
    let id = common::unique_id("refuse");
    let _guard = common::ContainerGuard::new(&sandbox, &id);
    let log = sandbox.path().join("runtime.log");
    let earlier = r#"{"level":"warning","msg":"earlier line","time":"2024-01-01T00:00:00Z"}"#;
    if let Log::Json = log_format {
        fs::write(&log, format!("{earlier}\n")).unwrap();
    }
    let argv: Vec<OsString> = argv
        .iter()
        .map(|arg| {
            arg.replace("{log}", log.to_str().unwrap())
                .replace("{bundle}", bundle.dir().to_str().unwrap())
                .replace("{id}", &id)
                .into()
        })
        .collect();

    let out = sandbox.wrapper().run(&argv);
    let what = format!("{row}\n{}", out.describe());
    assert_eq!(out.code(), Some(1), "expected exit status 1: {what}");
    assert!(out.stdout.is_empty(), "stdout must stay empty: {what}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines, [MESSAGE], "one line on stderr: {what}");
    assert!(
        sandbox.real().state(&id).is_none(),
        "{row}: no container may exist after a refusal"
    );
    snap.assert_unchanged(&bundle.config_path(), row);

    match log_format {
        Log::None => assert!(!log.exists(), "{row}: no log file was asked for"),
        Log::Json => {
            let lines = log_lines(&log);
            assert_eq!(
                lines.len(),
                2,
                "{row}: one line appended expected: {lines:?}"
            );
            assert_eq!(lines[0], earlier, "{row}: earlier log content must stay");
            let entry: Value = serde_json::from_str(&lines[1])
                .unwrap_or_else(|e| panic!("{row}: log line is not JSON ({e}): {}", lines[1]));
            assert_eq!(entry["level"], "error", "{row}: {entry}");
            assert_eq!(entry["msg"], MESSAGE, "{row}: {entry}");
            let time = entry["time"].as_str().unwrap_or_default();
            assert!(
                time.len() >= 20 && time.as_bytes()[10] == b'T',
                "{row}: time must be RFC 3339: {entry}"
            );
        }
        Log::Text => {
            let lines = log_lines(&log);
            assert_eq!(lines.len(), 1, "{row}: one log line expected: {lines:?}");
            let line = &lines[0];
            assert!(
                line.starts_with("time=") && line.contains(" level=error "),
                "{row}: logrus text line: {line}"
            );
            assert!(
                line.ends_with(&format!(" msg=\"{MESSAGE}\"")),
                "{row}: the message, quoted: {line}"
            );
        }
    }

    let decisions = sandbox.decisions();
    let last = decisions
        .last()
        .unwrap_or_else(|| panic!("{row}: no decision log line"));
    assert_eq!(last["level"], "error", "{row}: {last}");
    assert_eq!(last["id"], id.as_str(), "{row}: {last}");
    assert_eq!(last["converted"], false, "{row}: {last}");
    assert_eq!(last["refused"]["rule"], "sysctl", "{row}: {last}");
    assert_eq!(last["refused"]["field"], "linux.sysctl", "{row}: {last}");
    assert_eq!(
        format!(
            "userns-hostnet-runtime: refused: sysctl: linux.sysctl: {}",
            last["refused"]["message"].as_str().unwrap_or_default()
        ),
        MESSAGE,
        "{row}: {last}"
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
