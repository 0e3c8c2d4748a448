//! Errors where operators look: runc writes logrus lines to the file named by
//! `--log`, and containerd reports the last `"level":"error"` line of it in
//! the pod's events. A refusal is appended there in the same format. Only
//! errors go there; the wrapper's own debug output goes to stderr.

use crate::argv::LogFormat;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::SystemTime;

/// One logrus-format error line, newline included.
pub fn error_line(format: LogFormat, msg: &str, now: SystemTime) -> String {
    let time = humantime::format_rfc3339_seconds(now).to_string();
    match format {
        LogFormat::Json => {
            let line = serde_json::json!({"level": "error", "msg": msg, "time": time});
            format!("{line}\n")
        }
        LogFormat::Text => format!("time=\"{time}\" level=error msg={}\n", quote(msg)),
    }
}

/// logrus quotes a text value when it holds anything but plain characters,
/// with Go's strconv.Quote rules; a JSON string literal is the same for
/// everything a message holds.
fn quote(msg: &str) -> String {
    serde_json::Value::String(msg.to_owned()).to_string()
}

/// Append one error line to the runtime's log file, creating it as runc
/// would. The file is opened close-on-exec so the real runtime does not
/// inherit the descriptor.
pub fn append_error(path: &Path, format: LogFormat, msg: &str) -> std::io::Result<()> {
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc_cloexec())
        .open(path)?;
    f.write_all(error_line(format, msg, SystemTime::now()).as_bytes())
}

fn libc_cloexec() -> i32 {
    nix::fcntl::OFlag::O_CLOEXEC.bits()
}

/// Debug lines on stderr, only when asked for (`--debug` or
/// `USERNS_HOSTNET_DEBUG`): the wrapper is silent on success.
pub fn init_debug(enabled: bool) {
    if !enabled {
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .with_max_level(tracing::Level::DEBUG)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn t0() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_673_017)
    }

    #[test]
    fn json_line_is_what_containerd_parses() {
        let line = error_line(LogFormat::Json, "sysctl: linux.sysctl: \"x\"", t0());
        assert_eq!(
            line,
            "{\"level\":\"error\",\"msg\":\"sysctl: linux.sysctl: \\\"x\\\"\",\"time\":\"2025-12-02T10:56:57Z\"}\n"
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["level"], "error");
    }

    #[test]
    fn text_line_is_logrus() {
        assert_eq!(
            error_line(LogFormat::Text, "a \"b\"\nc", t0()),
            "time=\"2025-12-02T10:56:57Z\" level=error msg=\"a \\\"b\\\"\\nc\"\n"
        );
    }

    #[test]
    fn append_keeps_existing_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.json");
        std::fs::write(&p, "{\"level\":\"info\",\"msg\":\"before\"}\n").unwrap();
        append_error(&p, LogFormat::Json, "refused").unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[1].contains("\"msg\":\"refused\""));
    }
}
