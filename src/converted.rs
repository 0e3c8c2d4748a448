//! Which containers the wrapper converted, so that `exec` gives an exec'd
//! process what `create` gave the container's init. containerd and CRI-O
//! build an exec'd process (`exec --process FILE`) from their own,
//! unconverted spec, so without this an exec probe or `kubectl exec` gets
//! the network capabilities back.
//!
//! One small file per converted container,
//! `/run/userns-hostnet/converted/<root key>/<container id>`, written at
//! create (before config.json is replaced) and removed at delete. It holds
//! the capability policy that applied at create, so an exec reads neither
//! the config file nor the spec: one `open` decides, and a container the
//! wrapper does not know costs one failed `open`. `/run` is a tmpfs: the
//! records go with the containers at reboot.

use crate::engine::policy::NetCapabilities;
use nix::fcntl::OFlag;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub const DIR: &str = "/run/userns-hostnet/converted";

/// The records under one directory (the system's, or a test's).
#[derive(Debug, Clone)]
pub struct Records {
    dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot record that container {id} was converted ({path}): {source}")]
pub struct RecordError {
    id: String,
    path: String,
    source: std::io::Error,
}

impl Records {
    pub fn system() -> Records {
        Records::new(DIR)
    }

    pub fn new(dir: impl Into<PathBuf>) -> Records {
        Records { dir: dir.into() }
    }

    /// Container ids are keyed by the runtime's `--root` (as given; none
    /// means the runtime's default): two handlers may reuse an id.
    fn path(&self, root: Option<&OsStr>, id: &OsStr) -> Option<PathBuf> {
        let id_bytes = id.as_bytes();
        // runc and crun ids are file names in their own state directory;
        // anything else names no container they could have made.
        let plain = !id_bytes.is_empty()
            && id_bytes.len() <= 255
            && id_bytes != b"."
            && id_bytes != b".."
            && !id_bytes.contains(&b'/')
            && !id_bytes.contains(&0);
        plain.then(|| self.dir.join(root_key(root)).join(id))
    }

    /// Remember that `id` was converted under `policy`. A container whose
    /// exec needs nothing (`keep`) is forgotten instead.
    pub fn mark(
        &self,
        root: Option<&OsStr>,
        id: &OsStr,
        policy: NetCapabilities,
    ) -> Result<(), RecordError> {
        let word = match policy {
            NetCapabilities::Keep => {
                self.forget(root, id);
                return Ok(());
            }
            NetCapabilities::Drop => "drop",
            NetCapabilities::Refuse => "refuse",
        };
        let Some(path) = self.path(root, id) else {
            return Ok(());
        };
        let err = |source| RecordError {
            id: id.to_string_lossy().into_owned(),
            path: path.display().to_string(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(err)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits())
            .open(&path)
            .map_err(err)?;
        f.write_all(word.as_bytes()).map_err(err)
    }

    /// The policy `id` was converted under; `None` for a container the
    /// wrapper did not convert (or whose record cannot be read: it was
    /// written by a root-only process, so only a damaged /run gets here).
    pub fn lookup(&self, root: Option<&OsStr>, id: &OsStr) -> Option<NetCapabilities> {
        let path = self.path(root, id)?;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).bits())
            .open(path)
            .ok()?;
        let mut word = [0u8; 8];
        let n = f.read(&mut word).ok()?;
        match &word[..n] {
            b"drop" => Some(NetCapabilities::Drop),
            b"refuse" => Some(NetCapabilities::Refuse),
            // A record that says anything else still says "converted":
            // the safe reading is the default policy.
            _ => Some(NetCapabilities::Drop),
        }
    }

    /// Forget `id` (at delete, or at a create that needs no conversion).
    pub fn forget(&self, root: Option<&OsStr>, id: &OsStr) {
        if let Some(path) = self.path(root, id) {
            let _ = std::fs::remove_file(path);
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// A directory name for a runtime root: FNV-1a of its bytes, in hex (a
/// root path can be longer than a file name may be).
fn root_key(root: Option<&OsStr>) -> String {
    let Some(root) = root else {
        return "default".to_owned();
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in root.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mark_lookup_forget() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path());
        let root = Some(OsStr::new("/run/containerd/runc/k8s.io"));
        let id = OsStr::new("abc123");
        assert_eq!(r.lookup(root, id), None);
        r.mark(root, id, NetCapabilities::Drop).unwrap();
        assert_eq!(r.lookup(root, id), Some(NetCapabilities::Drop));
        // Another root, or the default one, is another container.
        assert_eq!(r.lookup(Some(OsStr::new("/run/other")), id), None);
        assert_eq!(r.lookup(None, id), None);
        r.mark(root, id, NetCapabilities::Refuse).unwrap();
        assert_eq!(r.lookup(root, id), Some(NetCapabilities::Refuse));
        r.mark(root, id, NetCapabilities::Keep).unwrap();
        assert_eq!(r.lookup(root, id), None);
        r.mark(None, id, NetCapabilities::Drop).unwrap();
        r.forget(None, id);
        assert_eq!(r.lookup(None, id), None);
        r.forget(None, OsStr::new("never-made"));
    }

    #[test]
    fn ids_that_are_no_file_name_are_never_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path());
        for id in ["", ".", "..", "../x", "a/b"] {
            r.mark(None, OsStr::new(id), NetCapabilities::Drop).unwrap();
            assert_eq!(r.lookup(None, OsStr::new(id)), None, "{id}");
        }
        let long = "x".repeat(256);
        r.mark(None, OsStr::new(&long), NetCapabilities::Drop)
            .unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn an_unreadable_directory_is_an_error_naming_the_container() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let e = Records::new(&file)
            .mark(None, OsStr::new("c1"), NetCapabilities::Drop)
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot record that container c1 was converted"),
            "{e}"
        );
    }

    #[test]
    fn root_keys_differ_and_fit_a_file_name() {
        let long = "/r".repeat(2000);
        let keys = [
            root_key(None),
            root_key(Some(OsStr::new("/run/runc"))),
            root_key(Some(OsStr::new("/run/crun"))),
            root_key(Some(OsStr::new(&long))),
        ];
        for (i, k) in keys.iter().enumerate() {
            assert!(k.len() <= 16);
            assert!(!keys[..i].contains(k));
        }
    }
}
