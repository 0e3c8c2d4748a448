//! `userns-hostnet install` and `uninstall` as the tests run them: the
//! argument lists and the three outcomes (done, something left, refused).

use std::path::Path;
use std::process::{Command, Output};

pub const TOOL: &str = super::TOOL;

/// The tool; install and uninstall keep a handler's links in `handlers/`
/// next to the config file they edit, never under /etc.
pub fn tool(args: &[&str]) -> Output {
    let mut cmd = Command::new(TOOL);
    cmd.args(args);
    if matches!(args.first(), Some(&"install" | &"uninstall")) {
        if let Some(at) = args.iter().position(|a| *a == "--config") {
            let dir = Path::new(args[at + 1]).parent().unwrap();
            cmd.arg("--handlers-dir").arg(dir.join("handlers"));
        }
    }
    cmd.output().unwrap()
}

/// Standard output, then standard error.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The exit status and everything printed.
pub fn code(args: &[&str]) -> (Option<i32>, String) {
    let out = tool(args);
    (out.status.code(), text(&out))
}

/// The tool's standard output; it must succeed.
pub fn ok(args: &[&str]) -> String {
    let out = tool(args);
    assert!(out.status.success(), "{args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Everything printed; the tool must leave something in place and say so
/// (exit status 1).
pub fn left(args: &[&str]) -> String {
    let (status, text) = code(args);
    assert_eq!(status, Some(1), "{args:?}: {text}");
    text
}

/// The tool's standard error; it must refuse (exit status 2).
pub fn refused(args: &[&str]) -> String {
    let out = tool(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `COMMAND DAEMON --config CONFIG MORE...`.
pub fn args_for<'a>(
    command: &'a str,
    daemon: &'a str,
    config: &'a Path,
    more: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![command, daemon, "--config", s(config)];
    args.extend_from_slice(more);
    args
}

/// `install DAEMON --config CONFIG MORE...`, which must succeed: its output.
pub fn install(daemon: &str, config: &Path, more: &[&str]) -> String {
    ok(&args_for("install", daemon, config, more))
}

/// `uninstall DAEMON --config CONFIG MORE...`, which must succeed: its output.
pub fn uninstall(daemon: &str, config: &Path, more: &[&str]) -> String {
    ok(&args_for("uninstall", daemon, config, more))
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `BIN --config F config dump`: the merged config as that containerd
/// loads it.
pub fn dump_with(bin: &Path, config: &Path) -> toml::Value {
    let out = Command::new(bin)
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

/// `containerd --config F config dump`: the merged config as the first
/// containerd in PATH (Debian's 1.6) loads it.
pub fn dump(config: &Path) -> toml::Value {
    dump_with(Path::new("containerd"), config)
}

/// A runtime handler in a dump of a version 2 config (containerd 1.x).
pub fn v2_handler<'a>(doc: &'a toml::Value, name: &str) -> Option<&'a toml::Value> {
    doc.get("plugins")?
        .get("io.containerd.grpc.v1.cri")?
        .get("containerd")?
        .get("runtimes")?
        .get(name)
}
