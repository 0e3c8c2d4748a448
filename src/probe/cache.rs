//! The runtime's answer, cached per runtime binary in a directory only the
//! wrapper's user can write: a changed binary, or a new wrapper, is asked
//! again.

use super::ProbeError;
use crate::sys::atomic;
use nix::libc;
use serde::{Deserialize, Serialize};
use std::fs::{DirBuilder, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A cache file is a few hundred bytes.
const MAX_CACHE_FILE: u64 = 64 << 10;

/// The wrapper that asked: a new one asks again.
const WRAPPER: &str = concat!(env!("CARGO_PKG_NAME"), " ", env!("CARGO_PKG_VERSION"));

/// What identifies a runtime binary: a changed binary is asked again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    path: PathBuf,
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
}

impl Identity {
    pub fn of(runtime: &Path) -> Option<Identity> {
        let path = crate::sys::realpath::realpath(runtime).ok()?;
        let m = std::fs::metadata(&path).ok()?;
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Some(Identity {
            size: m.size(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
            ino: m.ino(),
            path,
        })
    }

    pub fn file_name(&self) -> String {
        format!(
            "rro-{:016x}.json",
            crate::hash::fnv1a(self.path.as_os_str().as_encoded_bytes())
        )
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    runtime: Identity,
    rro: Result<String, ProbeError>,
    wrapper: String,
}

/// Only a directory and files that nobody else can write are trusted: a
/// planted answer must not make the wrapper promise what it cannot do.
fn trusted(m: &std::fs::Metadata) -> bool {
    m.uid() == nix::unistd::geteuid().as_raw() && m.permissions().mode() & 0o022 == 0
}

fn trusted_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && trusted(&m))
}

/// The answer cached in `dir` for this binary, if there is a trusted one.
pub fn read(dir: &Path, id: &Identity) -> Option<Result<String, ProbeError>> {
    if !trusted_dir(dir) {
        return None;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join(id.file_name()))
        .ok()?;
    let m = file.metadata().ok()?;
    if !m.is_file() || !trusted(&m) || m.len() > MAX_CACHE_FILE {
        return None;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let entry: Entry = serde_json::from_slice(&bytes).ok()?;
    (entry.runtime == *id && entry.wrapper == WRAPPER).then_some(entry.rro)
}

/// Cache `answer` for this binary in `dir`, created (0700) if missing.
pub fn write(
    dir: &Path,
    id: &Identity,
    answer: &Result<String, ProbeError>,
) -> std::io::Result<()> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if !trusted_dir(dir) {
        return Err(std::io::Error::new(
            ErrorKind::PermissionDenied,
            "cache directory is not ours alone",
        ));
    }
    let entry = Entry {
        runtime: id.clone(),
        rro: answer.clone(),
        wrapper: WRAPPER.to_owned(),
    };
    let json = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
    let attrs = atomic::Attrs {
        mode: 0o600,
        owner: None,
    };
    // A lost entry only means the runtime is asked again.
    Ok(atomic::replace(
        &dir.join(id.file_name()),
        &json,
        attrs,
        atomic::Durability::Contents,
    )?)
}
