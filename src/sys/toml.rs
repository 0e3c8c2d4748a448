//! The daemons' TOML config files (containerd, CRI-O), read as documents
//! that keep comments and order, with errors that name the file on one line.

use std::path::{Path, PathBuf};
use toml_edit::DocumentMut;

#[derive(Debug, thiserror::Error)]
pub enum TomlError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
}

/// The text of `path`; `None` when it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<String>, TomlError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TomlError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// `text`, read from `path`, as a document.
pub fn parse(path: &Path, text: &str) -> Result<DocumentMut, TomlError> {
    text.parse::<DocumentMut>().map_err(|e| TomlError::Parse {
        path: path.to_owned(),
        message: e.to_string().trim().to_owned(),
    })
}

/// The document at `path`, which must exist.
pub fn read(path: &Path) -> Result<DocumentMut, TomlError> {
    let text = std::fs::read_to_string(path).map_err(|source| TomlError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        assert!(read_optional(&p).unwrap().is_none());
        let e = read(&p).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: ", p.display())), "{e}");
        std::fs::write(&p, "version = 2\n[plugins\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: ", p.display())), "{e}");
        assert!(!e.ends_with('\n'), "{e}");
        std::fs::write(&p, "version = 2\n").unwrap();
        assert_eq!(read(&p).unwrap()["version"].as_integer(), Some(2));
        assert_eq!(read_optional(&p).unwrap().as_deref(), Some("version = 2\n"));
    }
}
