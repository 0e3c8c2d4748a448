//! Which containers the wrapper converted, so that `exec` gives an exec'd
//! process what `create` gave the container's init. containerd and CRI-O
//! build an exec'd process (`exec --process FILE`) from their own,
//! unconverted spec, so without this an exec probe or `kubectl exec` gets
//! the network capabilities back.
//!
//! One small file per converted container,
//! `/run/userns-hostnet/converted/<state root>/<container id>`, written at
//! create (before config.json is replaced) and removed at delete. It holds
//! the capability policy that applied at create, so an exec reads neither
//! the config file nor the spec: one `stat` of the state root and one
//! `open` decide, and a container the wrapper does not know costs one
//! failed `open`. `/run` is a tmpfs: the records go with the containers at
//! reboot.
//!
//! The key is what the runtime opens, not how the command line spells it:
//! the state root is the directory (device and inode) the runtime's
//! `--root` or its default names (runc cleans the path lexically first,
//! as Go's `filepath.Abs` does; crun and youki hand it to the kernel), so
//! a trailing or doubled slash, a symbolic link or the default given
//! explicitly all find the same record. The id is the container's name in
//! that directory: runc refuses any id that is not a plain name
//! (`^[\w+,.-]+$`, not `.` or `..`) and youki 0.7 any with a `/`; crun
//! joins the id to the root as a path (youki and unknown runtimes are
//! treated the same way, which costs nothing when they refuse it), so `./ID`, `ID/` or `../crun/ID` reach `ID`: at exec
//! such an id is resolved in the file system to the directory the runtime
//! will open, and at create it is refused for a converted container.

use crate::engine::policy::NetCapabilities;
use nix::fcntl::OFlag;
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

pub const DIR: &str = "/run/userns-hostnet/converted";

/// The records under one directory (the system's, or a test's).
#[derive(Debug, Clone)]
pub struct Records {
    dir: PathBuf,
}

/// Which runtime's rules name the state directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Runc,
    Crun,
    Youki,
    /// Any other: its default root is not known.
    Other,
}

impl Runtime {
    /// By the real runtime's file name, links resolved.
    pub fn from_file_name(name: Option<&OsStr>) -> Runtime {
        match name.map(OsStr::as_bytes) {
            Some(b"runc") => Runtime::Runc,
            Some(b"crun") => Runtime::Crun,
            Some(b"youki") => Runtime::Youki,
            _ => Runtime::Other,
        }
    }

    /// The state root the runtime uses without `--root`, as each computes
    /// it for the user the wrapper runs as; `None` when not known.
    fn default_root(self) -> Option<PathBuf> {
        let xdg = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty());
        let root = nix::unistd::geteuid().is_root();
        let (name, honours_xdg) = match self {
            // runc honours XDG_RUNTIME_DIR only when not root.
            Runtime::Runc => ("runc", !root),
            // crun whenever it is set.
            Runtime::Crun => ("crun", true),
            Runtime::Youki => ("youki", !root),
            Runtime::Other => return None,
        };
        Some(match xdg {
            Some(x) if honours_xdg => Path::new(&x).join(name),
            _ => Path::new("/run").join(name),
        })
    }
}

/// A container as a command line names it.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub runtime: Runtime,
    /// `--root` as given.
    pub root: Option<&'a OsStr>,
    pub id: &'a OsStr,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot record that container {id} was converted ({path}): {source}")]
    Write {
        id: String,
        path: String,
        source: std::io::Error,
    },
    /// The wrapper cannot tell which container the runtime will reach.
    #[error("{why}")]
    Unidentified { why: String },
}

/// Where a target's record is.
enum Place {
    /// The record's file (which may not exist).
    At(PathBuf),
    /// The runtime will find no container there (it refuses the id, or
    /// the directory does not exist).
    Nowhere,
    /// A runtime whose default root is unknown, no `--root`: any root.
    AnyRoot(OsString),
}

/// A plain file name: what a runtime's state directory can hold.
fn plain(id: &[u8]) -> bool {
    !id.is_empty()
        && id.len() <= 255
        && id != b"."
        && id != b".."
        && !id.contains(&b'/')
        && !id.contains(&0)
}

/// runc's `validateID`: `^[\w+,.-]+$` (the class `[\w+-\.]` spans `+` to
/// `.`), and not `.` or `..`.
fn runc_valid(id: &[u8]) -> bool {
    plain(id)
        && id
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b',' | b'-' | b'.'))
}

/// Go's `filepath.Abs`: relative to the working directory, then cleaned
/// lexically (`..` removes the component before it, links or not).
fn go_abs(p: &Path) -> PathBuf {
    let p = std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// The directory a state root names, as `dev:ino` (a file name).
fn dir_key(root: &Path) -> std::io::Result<String> {
    let m = std::fs::metadata(root)?;
    if !m.is_dir() {
        return Err(std::io::Error::from_raw_os_error(nix::libc::ENOTDIR));
    }
    Ok(format!("{:x}:{:x}", m.dev(), m.ino()))
}

fn missing(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(nix::libc::ENOTDIR)
}

impl Records {
    pub fn system() -> Records {
        Records::new(DIR)
    }

    pub fn new(dir: impl Into<PathBuf>) -> Records {
        Records { dir: dir.into() }
    }

    /// The state root as the runtime opens it: `None` when not known.
    fn root_path(t: &Target<'_>) -> Option<PathBuf> {
        let given = match t.root {
            Some(r) => PathBuf::from(r),
            None => t.runtime.default_root()?,
        };
        Some(match t.runtime {
            Runtime::Runc => go_abs(&given),
            _ => given,
        })
    }

    /// Where the record of `t` is, at create (`creating`: the root is made
    /// as the runtime would make it, 0700) or at exec and delete.
    fn place(&self, t: &Target<'_>, creating: bool) -> Result<Place, RecordError> {
        let id = t.id.as_bytes();
        if t.runtime == Runtime::Runc && !runc_valid(id) {
            // runc refuses the id itself: no container of runc has it.
            return Ok(Place::Nowhere);
        }
        let Some(root) = Self::root_path(t) else {
            if creating && !plain(id) {
                return Err(not_a_name(t.id));
            }
            if plain(id) {
                return Ok(if creating {
                    Place::At(self.dir.join("default").join(t.id))
                } else {
                    Place::AnyRoot(t.id.to_owned())
                });
            }
            return Err(RecordError::Unidentified {
                why: format!(
                    "container id {}: not a plain name, and the runtime's default state directory is not known: the wrapper cannot tell which container it names",
                    t.id.to_string_lossy()
                ),
            });
        };
        if plain(id) {
            if creating {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&root)
                    .map_err(|source| write_error(t.id, &root, source))?;
            }
            return match dir_key(&root) {
                Ok(key) => Ok(Place::At(self.dir.join(key).join(t.id))),
                Err(e) if missing(&e) => Ok(Place::Nowhere),
                Err(e) => Err(unreadable(t.id, &root, &e)),
            };
        }
        if creating {
            return Err(not_a_name(t.id));
        }
        // crun and youki join the id to the root as a path: resolve it to
        // the directory they will open.
        let joined = root.join(OsStr::from_bytes(trim_slashes(id)));
        let real = match std::fs::canonicalize(&joined) {
            Ok(r) => r,
            Err(e) if missing(&e) => return Ok(Place::Nowhere),
            Err(e) => return Err(unreadable(t.id, &joined, &e)),
        };
        let (Some(parent), Some(name)) = (real.parent(), real.file_name()) else {
            return Ok(Place::Nowhere);
        };
        match dir_key(parent) {
            Ok(key) => Ok(Place::At(self.dir.join(key).join(name))),
            Err(e) if missing(&e) => Ok(Place::Nowhere),
            Err(e) => Err(unreadable(t.id, parent, &e)),
        }
    }

    /// Remember that `t` was converted under `policy`. A container whose
    /// exec needs nothing (`keep`) is forgotten instead. An id that is not
    /// a plain name (crun, youki) is refused: exec could reach the
    /// container by other spellings.
    pub fn mark(&self, t: &Target<'_>, policy: NetCapabilities) -> Result<(), RecordError> {
        let word = match policy {
            NetCapabilities::Keep => {
                self.forget(t);
                return Ok(());
            }
            NetCapabilities::Drop => "drop",
            NetCapabilities::Refuse => "refuse",
        };
        let Place::At(path) = self.place(t, true)? else {
            return Ok(());
        };
        let err = |source| write_error(t.id, &path, source);
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

    /// The policy `t` was converted under; `None` for a container the
    /// wrapper did not convert (or whose record cannot be read: it was
    /// written by a root-only process, so only a damaged /run gets here).
    /// An error when the wrapper cannot tell which container it is.
    pub fn lookup(&self, t: &Target<'_>) -> Result<Option<NetCapabilities>, RecordError> {
        Ok(match self.place(t, false)? {
            Place::At(path) => read_record(&path).or_else(|| {
                // A runtime of unknown default: a container created
                // without --root may be this one.
                (t.runtime == Runtime::Other)
                    .then(|| read_record(&self.dir.join("default").join(t.id)))
                    .flatten()
            }),
            Place::Nowhere => None,
            Place::AnyRoot(id) => std::fs::read_dir(&self.dir)
                .into_iter()
                .flatten()
                .flatten()
                .find_map(|root| read_record(&root.path().join(&id))),
        })
    }

    /// Forget `t` (at delete, or at a create that needs no conversion).
    pub fn forget(&self, t: &Target<'_>) {
        if let Ok(Place::At(path)) = self.place(t, false) {
            let _ = std::fs::remove_file(path);
        }
        if t.runtime == Runtime::Other && plain(t.id.as_bytes()) {
            let _ = std::fs::remove_file(self.dir.join("default").join(t.id));
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn read_record(path: &Path) -> Option<NetCapabilities> {
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

/// crun's `append_paths`: a component's leading and trailing slashes go.
fn trim_slashes(id: &[u8]) -> &[u8] {
    let start = id.iter().position(|&b| b != b'/').unwrap_or(id.len());
    let end = id.iter().rposition(|&b| b != b'/').map_or(start, |e| e + 1);
    &id[start..end.max(start)]
}

fn not_a_name(id: &OsStr) -> RecordError {
    RecordError::Unidentified {
        why: format!(
            "container id {:?}: not a plain name; the runtime reads it as a path, so an exec could reach this converted container under other spellings",
            id.to_string_lossy()
        ),
    }
}

fn write_error(id: &OsStr, path: &Path, source: std::io::Error) -> RecordError {
    RecordError::Write {
        id: id.to_string_lossy().into_owned(),
        path: path.display().to_string(),
        source,
    }
}

fn unreadable(id: &OsStr, path: &Path, e: &std::io::Error) -> RecordError {
    RecordError::Unidentified {
        why: format!(
            "container {}: cannot read its state directory {}: {e}; the wrapper cannot tell whether it converted it",
            id.to_string_lossy(),
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t<'a>(runtime: Runtime, root: &'a Path, id: &'a str) -> Target<'a> {
        Target {
            runtime,
            root: Some(root.as_os_str()),
            id: OsStr::new(id),
        }
    }

    #[test]
    fn mark_lookup_forget() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        let root = dir.path().join("state");
        let c = t(Runtime::Runc, &root, "abc123");
        assert_eq!(r.lookup(&c).unwrap(), None);
        r.mark(&c, NetCapabilities::Drop).unwrap();
        assert!(root.is_dir(), "the root is made as the runtime makes it");
        assert_eq!(r.lookup(&c).unwrap(), Some(NetCapabilities::Drop));
        // Another root is another container.
        let other = dir.path().join("other");
        fs::create_dir(&other).unwrap();
        assert_eq!(r.lookup(&t(Runtime::Runc, &other, "abc123")).unwrap(), None);
        r.mark(&c, NetCapabilities::Refuse).unwrap();
        assert_eq!(r.lookup(&c).unwrap(), Some(NetCapabilities::Refuse));
        r.mark(&c, NetCapabilities::Keep).unwrap();
        assert_eq!(r.lookup(&c).unwrap(), None);
        r.mark(&c, NetCapabilities::Drop).unwrap();
        r.forget(&c);
        assert_eq!(r.lookup(&c).unwrap(), None);
        r.forget(&t(Runtime::Runc, &root, "never-made"));
    }

    use std::fs;

    #[test]
    fn every_spelling_of_the_root_finds_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        let root = dir.path().join("state");
        for rt in [Runtime::Runc, Runtime::Crun, Runtime::Youki] {
            r.mark(&t(rt, &root, "c1"), NetCapabilities::Drop).unwrap();
        }
        std::os::unix::fs::symlink(&root, dir.path().join("link")).unwrap();
        let spelled = |s: &str| PathBuf::from(format!("{}{s}", dir.path().display()));
        for rt in [Runtime::Runc, Runtime::Crun, Runtime::Youki] {
            for root in [
                spelled("/state/"),
                spelled("//state"),
                spelled("/./state//"),
                spelled("/link"),
                spelled("/link/"),
            ] {
                assert!(
                    r.lookup(&t(rt, &root, "c1")).unwrap().is_some(),
                    "{rt:?} {}",
                    root.display()
                );
            }
        }
        // runc cleans the path before the kernel sees it: `x/..` is gone
        // even when x does not exist.
        assert!(r
            .lookup(&t(Runtime::Runc, &spelled("/nonexistent/../state"), "c1"))
            .unwrap()
            .is_some());
        assert!(r
            .lookup(&t(Runtime::Crun, &spelled("/nonexistent/../state"), "c1"))
            .unwrap()
            .is_none());
    }

    #[test]
    fn ids_as_crun_and_youki_read_them_and_as_runc_refuses_them() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        let root = dir.path().join("state");
        let c = t(Runtime::Crun, &root, "c1");
        r.mark(&c, NetCapabilities::Drop).unwrap();
        // The runtime makes the container's directory.
        fs::create_dir(root.join("c1")).unwrap();
        for id in ["./c1", "c1/", "/c1", "c1//", "x/../c1", "../state/c1"] {
            if id.starts_with("x/") {
                fs::create_dir_all(root.join("x")).unwrap();
            }
            for rt in [Runtime::Crun, Runtime::Youki] {
                assert_eq!(
                    r.lookup(&t(rt, &root, id)).unwrap(),
                    Some(NetCapabilities::Drop),
                    "{rt:?} {id}"
                );
            }
            // runc refuses the id: no container of runc has it.
            assert_eq!(
                r.lookup(&t(Runtime::Runc, &root, id)).unwrap(),
                None,
                "{id}"
            );
        }
        // From another root, by a relative id.
        let other = dir.path().join("other");
        fs::create_dir(&other).unwrap();
        assert!(r
            .lookup(&t(Runtime::Crun, &other, "../state/c1"))
            .unwrap()
            .is_some());
        // At create, an id that is a path is refused.
        for id in ["./c2", "c2/", "a/b", "..", "."] {
            let e = r
                .mark(&t(Runtime::Crun, &root, id), NetCapabilities::Drop)
                .unwrap_err();
            assert!(e.to_string().contains("not a plain name"), "{e}");
            // runc refuses such ids itself: nothing to record.
            r.mark(&t(Runtime::Runc, &root, id), NetCapabilities::Drop)
                .unwrap();
        }
    }

    #[test]
    fn an_unknown_runtime_without_root_is_found_under_any_root() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        let none = Target {
            runtime: Runtime::Other,
            root: None,
            id: OsStr::new("c1"),
        };
        r.mark(&none, NetCapabilities::Drop).unwrap();
        assert!(r.lookup(&none).unwrap().is_some());
        let root = dir.path().join("state");
        fs::create_dir(&root).unwrap();
        // The default may be this root: the record counts.
        assert!(r.lookup(&t(Runtime::Other, &root, "c1")).unwrap().is_some());
        r.mark(&t(Runtime::Other, &root, "c2"), NetCapabilities::Drop)
            .unwrap();
        let c2 = Target {
            runtime: Runtime::Other,
            root: None,
            id: OsStr::new("c2"),
        };
        assert!(r.lookup(&c2).unwrap().is_some());
        let path = Target {
            runtime: Runtime::Other,
            root: None,
            id: OsStr::new("./c2"),
        };
        assert!(r.lookup(&path).is_err());
    }

    #[test]
    fn runc_ids() {
        for ok in ["abc", "a.b", "a+b,c-d_e", "..a"] {
            assert!(runc_valid(ok.as_bytes()), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "é", "a:b"] {
            assert!(!runc_valid(bad.as_bytes()), "{bad}");
        }
        assert_eq!(go_abs(Path::new("/a//b/../c/")), Path::new("/a/c"));
        assert_eq!(trim_slashes(b"//c1//"), b"c1");
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_the_container() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        fs::write(&file, "").unwrap();
        let root = dir.path().join("state");
        let e = Records::new(&file)
            .mark(&t(Runtime::Runc, &root, "c1"), NetCapabilities::Drop)
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot record that container c1 was converted"),
            "{e}"
        );
    }
}
