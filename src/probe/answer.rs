//! Reading a runtime's answers: the `features` document and the first line
//! of `--version`.

use crate::runtime::Kind;
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;

/// Why a `--version` line does not show a runtime that knows `rro`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum VersionError {
    #[error("no \"features\" answer and its version is unknown (\"{line}\")")]
    Unknown { line: String },
    #[error("no \"features\" answer and \"{line}\" is not a runtime known to support rro")]
    NotKnown { line: String },
    #[error("{name} {}.{} predates rro (needs {name} {}.{})", found.0, found.1, since.0, since.1)]
    Predates {
        name: String,
        found: (u64, u64),
        since: (u64, u64),
    },
}

/// `Some` when the output is a features document that lists mount options
/// (OCI runtime features: a missing `mountOptions` means unknown).
pub fn features_list_rro(stdout: &[u8]) -> Option<bool> {
    let doc: serde_json::Value = serde_json::from_slice(stdout).ok()?;
    let options = doc.get("mountOptions")?.as_array()?;
    Some(options.iter().any(|o| o.as_str() == Some("rro")))
}

/// The first line of `--version`: `runc version 1.1.5+ds1`,
/// `crun version 1.8.1`, `youki version 0.7.0`. `Ok` says how `rro` is
/// known.
pub fn version_knows_rro(first_line: &str) -> Result<String, VersionError> {
    let mut words = first_line.split_whitespace();
    let (name, word, version) = (words.next(), words.next(), words.next());
    let parsed = match (name, word, version) {
        // youki 0.7.0 says `youki version: 0.7.0`.
        (Some(name), Some("version" | "version:"), Some(v)) => major_minor(v).map(|mm| (name, mm)),
        _ => None,
    };
    let Some((name, found)) = parsed else {
        return Err(VersionError::Unknown {
            line: printable(first_line),
        });
    };
    let Some(since) = Kind::named(Some(OsStr::new(name))).rro_since() else {
        return Err(VersionError::NotKnown {
            line: printable(first_line),
        });
    };
    if found >= since {
        Ok(format!(
            "{name} {}.{} (rro since {name} {}.{})",
            found.0, found.1, since.0, since.1
        ))
    } else {
        Err(VersionError::Predates {
            name: name.to_owned(),
            found,
            since,
        })
    }
}

/// `1.1.5+ds1` -> (1, 1).
pub fn major_minor(v: &str) -> Option<(u64, u64)> {
    let v = v.strip_prefix('v').unwrap_or(v);
    let mut parts = v.split('.');
    let num = |p: Option<&str>| -> Option<u64> {
        let p = p?;
        let digits = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
        p[..digits].parse().ok()
    };
    Some((num(parts.next())?, num(parts.next())?))
}

/// Short and printable, for a one-line reason.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(60)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_lines() {
        assert!(version_knows_rro("runc version 1.1.0").is_ok());
        assert!(version_knows_rro("runc version 1.2.0-rc.1").is_ok());
        assert!(version_knows_rro("runc version 2.0.0").is_ok());
        assert!(version_knows_rro("runc version 1.0.3").is_err());
        assert!(version_knows_rro("crun version 1.4").is_ok());
        assert!(version_knows_rro("crun version 1.3.9").is_err());
        assert!(version_knows_rro("youki version 0.3.0").is_ok());
        assert!(version_knows_rro("youki version 0.2.9").is_err());
        assert!(version_knows_rro("youki version v0.4.1").is_ok());
        assert!(version_knows_rro("youki version: 0.7.0").is_ok());
        assert!(version_knows_rro("runc version").is_err());
        assert!(version_knows_rro("runc version x.y").is_err());
        assert!(version_knows_rro("").is_err());
        assert!(version_knows_rro("runc version 99999999999999999999999.1").is_err());
        let long = "x".repeat(500) + "\u{1b}";
        let e = version_knows_rro(&long).unwrap_err().to_string();
        assert!(e.len() < 150 && !e.contains('\u{1b}'), "{e}");
    }

    #[test]
    fn features_documents() {
        assert_eq!(
            features_list_rro(br#"{"mountOptions":["ro","rro"]}"#),
            Some(true)
        );
        assert_eq!(
            features_list_rro(br#"{"mountOptions":["ro"]}"#),
            Some(false)
        );
        assert_eq!(features_list_rro(br#"{"ociVersionMin":"1.0.0"}"#), None);
        assert_eq!(features_list_rro(b"usage: runc"), None);
    }
}
