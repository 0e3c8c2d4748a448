//! `userns-hostnet version`: what was built, from which commit and when,
//! and which real runtime the wrapper would run, with that runtime's own
//! version line.

use super::AdminError;
use crate::cli::VersionArgs;
use serde::Serialize;
use std::path::Path;
use userns_hostnet::{config, runtime};

/// The `--json` document. Field names are stable (documented in docs/admin.md).
#[derive(Debug, Serialize)]
pub struct Versions {
    pub version: &'static str,
    pub commit: &'static str,
    pub build_date: &'static str,
    /// The real runtime the wrapper would run (with the same config file
    /// and environment); `null` when none is found.
    pub runtime: Option<String>,
    /// The first line of that runtime's `--version`.
    pub runtime_version: Option<String>,
    /// Why the runtime or its version is not known.
    pub runtime_error: Option<String>,
}

/// Gather the versions.
pub fn versions() -> Versions {
    let mut v = Versions {
        version: env!("CARGO_PKG_VERSION"),
        commit: userns_hostnet::COMMIT,
        build_date: userns_hostnet::BUILD_DATE,
        runtime: None,
        runtime_version: None,
        runtime_error: None,
    };
    let candidates = match config::load() {
        Ok(c) => c.runtime,
        Err(e) => {
            v.runtime_error = Some(format!(
                "config: {e} (the wrapper would refuse every container)"
            ));
            return v;
        }
    };
    match runtime::choose(None, &candidates) {
        Ok(rt) => {
            match first_version_line(&rt) {
                Ok(line) => v.runtime_version = Some(line),
                Err(e) => v.runtime_error = Some(e),
            }
            v.runtime = Some(rt.display().to_string());
        }
        Err(e) => v.runtime_error = Some(e.to_string()),
    }
    v
}

/// The first line `RUNTIME --version` prints.
fn first_version_line(rt: &Path) -> Result<String, String> {
    let out = std::process::Command::new(rt)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {} --version: {e}", rt.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) if out.status.success() => Ok(line.to_owned()),
        _ => Err(format!(
            "{} --version failed ({}): {}",
            rt.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// The text an operator reads.
pub fn render(v: &Versions) -> String {
    let mut s = format!(
        "{} {}\ncommit:     {}\nbuild date: {}\n",
        super::docs::BIN,
        v.version,
        v.commit,
        v.build_date
    );
    let runtime = match (&v.runtime, &v.runtime_version, &v.runtime_error) {
        (Some(rt), Some(ver), _) => format!("{rt} ({ver})"),
        (Some(rt), None, Some(e)) => format!("{rt} (version unknown: {e})"),
        (None, _, Some(e)) => format!("(none found: {e})"),
        _ => "(none found)".to_owned(),
    };
    s.push_str(&format!("runtime:    {runtime}\n"));
    s
}

/// Run the subcommand: 0, or 2 when standard output cannot be written.
pub fn run(args: &VersionArgs) -> Result<i32, AdminError> {
    super::report(args.json, &versions(), render)?;
    Ok(0)
}
