//! The bundle's config.json: read without following links or blocking on
//! odd files, and replaced atomically (temporary file in the bundle
//! directory, fsync, rename; the directory is not fsynced, see
//! `sys::atomic::Durability::Contents`) with its mode, owner and extended
//! attributes (SELinux label, ACLs) kept, so a crash or a power loss leaves
//! either the old or the new document, never a mix.

use crate::sys::atomic::{self, AtomicError, Attrs};
use nix::fcntl::OFlag;
use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use userns_hostnet_engine::{Refusal, Spec};

pub const CONFIG: &str = "config.json";

/// Remove the temporary files that killed runs left in a bundle: see
/// [`atomic::remove_stale_temporaries`].
pub use crate::sys::atomic::remove_stale_temporaries;

/// Test-only switch, compiled in only with the `test-hooks` feature (which
/// release builds and packages do not enable): when set, `SpecFile::replace`
/// stops itself (SIGSTOP) after writing and syncing the temporary file,
/// before the rename, so a test can kill it at exactly that point.
#[cfg(feature = "test-hooks")]
pub const TEST_PAUSE_ENV: &str = "USERNS_HOSTNET_TEST_PAUSE_BEFORE_RENAME";

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("bundle: {path}: is a symbolic link; refusing to follow it")]
    Symlink { path: PathBuf },
    #[error("bundle: {path}: not a regular file")]
    NotRegular { path: PathBuf },
    #[error("bundle: {path}: larger than {cap} bytes, the most read")]
    TooLarge { path: PathBuf, cap: u64 },
    #[error("bundle: {path}: {what}: {source}")]
    Io {
        path: PathBuf,
        what: std::borrow::Cow<'static, str>,
        source: std::io::Error,
    },
}

impl From<AtomicError> for BundleError {
    fn from(e: AtomicError) -> Self {
        BundleError::Io {
            path: e.path,
            what: e.what,
            source: e.source,
        }
    }
}

impl BundleError {
    /// A file over the size cap is refused as a spec, naming the file and
    /// the cap; the other errors are not about the spec.
    pub fn refusal(&self) -> Option<userns_hostnet_engine::Refusal> {
        match self {
            BundleError::TooLarge { path, .. } => {
                let mut r = userns_hostnet_engine::strict::too_large(
                    userns_hostnet_engine::strict::MAX_BYTES + 1,
                );
                r.field = path.display().to_string();
                Some(r)
            }
            _ => None,
        }
    }
}

fn io<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(std::io::Error) -> BundleError + 'a {
    move |source| BundleError::Io {
        path: path.to_owned(),
        what: what.into(),
        source,
    }
}

/// A spec file (config.json, or the process file of `exec --process`) as
/// read, with what the rewrite must keep.
#[derive(Debug)]
pub struct SpecFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    mode: u32,
    uid: u32,
    gid: u32,
    /// The file as opened (close-on-exec): its extended attributes go to
    /// the replacement.
    file: std::fs::File,
}

/// Why a spec file was not read as create reads it.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("refused: {0}")]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Bundle(#[from] BundleError),
}

impl SpecFile {
    /// Read a spec-like JSON file the runtime will read (config.json,
    /// crun's `-f FILE`, the process file of `exec --process`): never
    /// through a symlink, never a FIFO or other odd file, at most
    /// [`userns_hostnet_engine::strict::MAX_BYTES`]. `Ok(None)` when it
    /// does not exist: the real runtime reports that in its own words.
    pub fn read(path: &Path) -> Result<Option<SpecFile>, BundleError> {
        let path = path.to_owned();
        // O_NOFOLLOW: never read through a link out of the bundle; O_NONBLOCK:
        // a FIFO must not hang the container start.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC).bits())
            .open(&path);
        let mut file = match file {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
                return Err(BundleError::Symlink { path })
            }
            Err(e) => return Err(io(&path, "cannot open")(e)),
        };
        let meta = file.metadata().map_err(io(&path, "cannot stat"))?;
        if !meta.is_file() {
            return Err(BundleError::NotRegular { path });
        }
        // A file that says it is over the cap is refused unread; one that
        // grows meanwhile (or lies) is read to one byte over the cap at most.
        // A sparse file of 100 GB is refused here, not allocated; one within
        // the cap is read into room for its size (and the byte that tells it
        // grew): one read, no copies as the buffer grows.
        let cap = userns_hostnet_engine::strict::MAX_BYTES;
        if meta.len() > cap {
            return Err(BundleError::TooLarge { path, cap });
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize + 1);
        (&mut file)
            .take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(io(&path, "cannot read"))?;
        if bytes.len() as u64 > cap {
            return Err(BundleError::TooLarge { path, cap });
        }
        Ok(Some(SpecFile {
            path,
            bytes,
            mode: meta.permissions().mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
            file,
        }))
    }

    /// The spec file as create reads it: [`SpecFile::read`], a file over
    /// the size cap refused as a spec, then read strictly. `Ok(None)` when
    /// it does not exist. The wrapper's create and `explain` both read
    /// with this, so `explain` refuses exactly what create refuses, in the
    /// same words.
    pub fn read_spec(path: &Path) -> Result<Option<(SpecFile, Spec)>, SpecError> {
        let mut file = match SpecFile::read(path) {
            Ok(Some(file)) => file,
            Ok(None) => return Ok(None),
            Err(e) => return Err(e.refusal().map_or(e.into(), SpecError::from)),
        };
        let doc = Spec::read(std::mem::take(&mut file.bytes))?;
        Ok(Some((file, doc)))
    }

    /// Replace config.json with `bytes`, atomically, keeping its mode,
    /// owner and extended attributes (SELinux label, ACLs, `user.*`).
    pub fn replace(&self, bytes: &[u8]) -> Result<(), BundleError> {
        let attrs = Attrs {
            mode: self.mode,
            owner: Some((self.uid, self.gid)),
        };
        atomic::replace_with(
            &self.path,
            bytes,
            attrs,
            // The next create converts an old config.json again: see
            // Durability::Contents.
            atomic::Durability::Contents,
            Some(&self.file),
            pause_before_rename,
        )?;
        Ok(())
    }
}

/// Test-only: lets the crash tests kill the wrapper between the fsync and
/// the rename. Read here, on the write path only.
#[cfg(feature = "test-hooks")]
fn pause_before_rename() {
    if std::env::var_os(TEST_PAUSE_ENV).is_some() {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
    }
}

#[cfg(not(feature = "test-hooks"))]
fn pause_before_rename() {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn missing_config_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(SpecFile::read(&dir.path().join(CONFIG)).unwrap().is_none());
    }

    #[test]
    fn symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real.json"), "{}").unwrap();
        symlink("real.json", dir.path().join(CONFIG)).unwrap();
        let e = SpecFile::read(&dir.path().join(CONFIG)).unwrap_err();
        assert!(matches!(e, BundleError::Symlink { .. }));
        assert!(e.to_string().contains("symbolic link"));
    }

    #[test]
    fn fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&dir.path().join(CONFIG), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(
            SpecFile::read(&dir.path().join(CONFIG)).unwrap_err(),
            BundleError::NotRegular { .. }
        ));
    }

    #[test]
    fn a_file_over_the_cap_is_refused_without_reading_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(CONFIG);
        // Sparse: 100 GB claimed, nothing allocated on disk.
        std::fs::File::create(&p)
            .unwrap()
            .set_len(100 << 30)
            .unwrap();
        let e = SpecFile::read(&dir.path().join(CONFIG)).unwrap_err();
        assert!(matches!(e, BundleError::TooLarge { .. }), "{e}");
        let r = e.refusal().unwrap();
        assert_eq!(r.field, p.display().to_string());
        assert!(r.message.starts_with("larger than 64 MiB"), "{r}");
        // At the cap exactly: read.
        std::fs::File::create(&p)
            .unwrap()
            .set_len(userns_hostnet_engine::strict::MAX_BYTES)
            .unwrap();
        assert_eq!(
            SpecFile::read(&dir.path().join(CONFIG))
                .unwrap()
                .unwrap()
                .bytes
                .len() as u64,
            userns_hostnet_engine::strict::MAX_BYTES
        );
    }

    #[test]
    fn replace_keeps_mode_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(CONFIG);
        std::fs::write(&p, "{}").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let cfg = SpecFile::read(&dir.path().join(CONFIG)).unwrap().unwrap();
        cfg.replace(b"{\"a\":1}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"a\":1}");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
            0o640
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(CONFIG)]);
    }
}
