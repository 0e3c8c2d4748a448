//! The admin tool's subcommands. Each shares the wrapper's engine: no rule
//! is implemented twice.

pub mod check;
pub mod cli;
pub mod configcmd;
pub mod daemon;
pub mod deploy;
pub mod deploy_api;
pub mod docs;
pub mod doctor;
pub mod explain;
pub mod files;
pub mod hook;
pub mod install;
pub mod matrix;
pub mod registrations;
pub mod version;

/// Exit status of the admin tool for an error that stops a subcommand.
pub const EXIT_ERROR: i32 = 2;

/// Why an admin subcommand stops, besides what it reports as its result.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("writing to standard output: {0}")]
    Stdout(#[from] std::io::Error),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// Write `bytes` to standard output.
pub fn print(bytes: &[u8]) -> Result<(), AdminError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}

/// One line on standard output, where a closed pipe is not worth
/// stopping for (a pod's log, a script that stopped reading).
pub fn say(line: &str) {
    let _ = print(format!("{line}\n").as_bytes());
}

/// A report on standard output: `value` as one JSON document under
/// `--json`, else the `text` an operator reads.
pub fn report<T: serde::Serialize>(
    json: bool,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<(), AdminError> {
    match json {
        true => print(&json_line(value)),
        false => print(text(value).as_bytes()),
    }
}

/// A value as indented JSON and a newline. Serializing our own report
/// types cannot fail.
pub fn json_line<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).unwrap_or_default();
    out.push(b'\n');
    out
}
