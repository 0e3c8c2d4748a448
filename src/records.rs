//! Which containers the wrapper converted, so that `exec` gives an exec'd
//! process what `create` gave the container's init. containerd and CRI-O
//! build an exec'd process (`exec --process FILE`) from their own,
//! unconverted spec, so without this an exec probe or `kubectl exec` gets
//! the network capabilities back.
//!
//! A container is known by what the runtime acts on when it execs into
//! it: the init process its state names (runc's `state.json`
//! `init_process_pid` and `init_process_start`, crun's `status` `pid` and
//! `process-start-time`, youki's `state.json` `pid`), not by the name of
//! a directory entry. A copy or a link of a state directory, a hard link
//! of its state file, or an alias in the same root all name the same init,
//! so they find the same record.
//!
//! The init does not exist when the wrapper sees `create` (it becomes the
//! runtime's `create` by `execve`), so a record starts *pending*, named by
//! that process and tagged with a hash of the id
//! (`pending/<pid>.<start>.<tag>`), holding the state root and id,
//! and is *bound* to the container's init (`init/<pid>`, with its start
//! time) by that container's own start, create or delete through the
//! wrapper, or by an exec that looks for it, once the container's state
//! exists. A pending record whose creating process is gone while its
//! container does not exist (a failed create, or one deleted before
//! anything bound it) is removed by the next converting create, delete
//! or exec; a bound record whose init pid no process holds is removed by
//! every delete (one whose init is a zombie once it is reaped; one whose
//! pid a later process took once that one exits, matching nothing
//! meanwhile). A start reads only the pending records of its own id; a
//! converting create or a delete those too and the ones whose creating
//! process is gone (one `kill(pid, 0)` each, and of another id's only
//! whether its container exists), and a delete looks at each bound
//! record's pid (one `kill(pid, 0)` each, no file read), so that what a
//! call reads does not grow with the containers created or running
//! beside it; an exec of a container whose bound record it does not find
//! reads them all. A record never matches a container
//! other than the one whose init it names: pid and start time together do
//! not repeat within a boot. `/run` is a tmpfs: records go at reboot.
//!
//! The store is here; a record's format is in [`format`], the reading of
//! the runtimes' state files in [`state`].

mod format;
mod state;
#[cfg(test)]
mod tests;

pub use format::{Record, Stage};
pub use state::{init_in_state, start_time, Process};

use crate::runtime::Kind;
use nix::fcntl::OFlag;
use state::{dir_key, find_state, go_abs, missing, plain, read_init, runc_valid, trim_slashes};
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use userns_hostnet_engine::policy::NetCapabilities;

pub const DIR: &str = "/run/userns-hostnet/converted";

/// The records under one directory (the system's, or a test's).
#[derive(Debug, Clone)]
pub struct Records {
    dir: PathBuf,
}

/// A container as a command line names it.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub runtime: Kind,
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

impl Records {
    pub fn system() -> Records {
        Records::new(DIR)
    }

    pub fn new(dir: impl Into<PathBuf>) -> Records {
        Records { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn pending(&self) -> PathBuf {
        self.dir.join("pending")
    }

    fn bound(&self) -> PathBuf {
        self.dir.join("init")
    }

    /// The state root as the runtime opens it, absolute: `None` when not
    /// known.
    fn root_path(t: &Target<'_>) -> Option<PathBuf> {
        let given = match t.root {
            Some(r) => PathBuf::from(r),
            None => t.runtime.default_root()?,
        };
        Some(match t.runtime {
            Kind::Runc => go_abs(&given),
            _ => std::path::absolute(&given).unwrap_or(given),
        })
    }

    /// Remember that `t` is being created converted, under `policy`. A
    /// container whose exec needs nothing (`keep`) is not recorded. An id
    /// that is not a plain name (crun, youki) is refused: exec could reach
    /// the container by other spellings. The pending records of earlier
    /// creates of the same id are settled first, and those of other ids
    /// whose create is over go if it left no container (a failed one's);
    /// the others are left to their own start, exec or delete, so that a
    /// create costs about the same however many containers are created
    /// beside it.
    pub fn mark(&self, t: &Target<'_>, policy: NetCapabilities) -> Result<(), RecordError> {
        if policy == NetCapabilities::Keep {
            self.bind_pending(Some(t.id));
            return Ok(());
        }
        let id = t.id.as_bytes();
        if t.runtime == Kind::Runc && !runc_valid(id) {
            // runc refuses the id itself: no container to record.
            self.bind_pending(Some(t.id));
            return Ok(());
        }
        if !plain(id) {
            return Err(not_a_name(t.id));
        }
        let root = match Self::root_path(t) {
            Some(root) => {
                // Made as the runtime makes it, to know its dev:ino.
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&root)
                    .map_err(|source| write_error(t.id, &root, source))?;
                let key = dir_key(&root).map_err(|source| write_error(t.id, &root, source))?;
                Some((key, root))
            }
            None => None,
        };
        let creator = Process::current().ok_or_else(|| {
            write_error(
                t.id,
                Path::new("/proc/self/stat"),
                std::io::Error::other("cannot read this process's start time"),
            )
        })?;
        // Its own id's records, and those of failed creates of other ids:
        // a converting create is the kubelet's retry of one that failed.
        let scope = Scope::OwnAndOver(id_tag(t.id));
        self.settle(scope, None, None);
        if root.is_none() {
            // Whether an earlier container of this id still exists cannot
            // be told without its root: the latest create's record stands
            // for the id, as the runtime allows one container per id.
            for (path, r) in self.pending_records(scope) {
                if r.root.is_none() && r.id == t.id {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
        let record = Record {
            policy,
            stage: Stage::Pending { creator },
            runtime: t.runtime,
            root,
            id: t.id.to_owned(),
        };
        let path = self.pending().join(pending_name(creator, t.id));
        write_record(&path, &record).map_err(|source| write_error(t.id, &path, source))
    }

    /// The pending records of the container `id` (`None`: not known,
    /// every one) bound to its init if the container now exists, and gone
    /// if their create is over without one. At start, so that a container
    /// created through the wrapper is bound to its init before anything
    /// else can act on its state (an exec through another spelling of the
    /// id binds it then); at a create that converts nothing, so that no
    /// record left by a create of that id that failed is bound to this
    /// container. It reads no record of another id: one look at the
    /// directory, however many containers are created beside it.
    pub fn bind_pending(&self, id: Option<&OsStr>) {
        let scope = id.map_or(Scope::All, |id| Scope::Own(id_tag(id)));
        self.settle(scope, None, None);
    }

    /// At delete: the pending records of `t`'s id are settled, as at a
    /// start; those of other ids whose create is over go if it left no
    /// container (a failed create: converting creates and deletes collect
    /// them, not starts), and every bound record
    /// whose init pid no process holds goes (the one of `t` once its init
    /// has stopped and been reaped: a delete the runtime refuses, of a
    /// running container, leaves it). A runtime whose state the wrapper
    /// cannot read loses the record of that id at its delete. What a
    /// delete reads does not grow with the containers created or running
    /// beside it: a bound record of another container costs one
    /// `kill(pid, 0)`, nothing read.
    pub fn release(&self, t: &Target<'_>) {
        let nameless = (t.runtime == Kind::Other).then_some(t.id);
        self.settle(Scope::OwnAndOver(id_tag(t.id)), None, nameless);
        self.sweep_bound();
    }

    /// Every record, pending and bound (for tests and diagnostics).
    pub fn all(&self) -> Vec<Record> {
        let bound = entries(&self.bound()).filter_map(|p| Record::parse(&read_small(&p).ok()?));
        self.pending_records(Scope::All)
            .map(|(_, r)| r)
            .chain(bound)
            .collect()
    }

    /// The policy `t` was converted under; `None` for a container the
    /// wrapper did not convert. An error when the wrapper cannot tell
    /// which container the runtime will act on while records exist.
    pub fn lookup(&self, t: &Target<'_>) -> Result<Option<NetCapabilities>, RecordError> {
        let id = t.id.as_bytes();
        let Some(root) = Self::root_path(t) else {
            if !plain(id) {
                return Err(RecordError::Unidentified {
                    why: format!(
                        "container id {}: not a plain name, and the runtime's default state directory is not known: the wrapper cannot tell which container it names",
                        t.id.to_string_lossy()
                    ),
                });
            }
            return Ok(self.by_name(None, t.id));
        };
        if t.runtime == Kind::Other {
            return self.other_by_name(&root, t.id);
        }
        match read_init(t.runtime, &root, None, t.id) {
            Ok(None) => Ok(None),
            Ok(Some(init)) => Ok(self.by_init(init)),
            Err(why) if self.is_empty() => {
                tracing::debug!(why, "exec: container not identified, and no records");
                Ok(None)
            }
            Err(why) => Err(RecordError::Unidentified {
                why: format!(
                    "container {}: {why}; the wrapper cannot tell whether it converted it",
                    t.id.to_string_lossy()
                ),
            }),
        }
    }

    /// The record bound to `init`, or a pending one that binds to it now.
    fn by_init(&self, init: Process) -> Option<NetCapabilities> {
        if let Ok(bytes) = read_small(&self.bound().join(init.pid.to_string())) {
            match Record::parse(&bytes) {
                Some(r) if r.stage == (Stage::Bound { init }) => return Some(r.policy),
                Some(_) => {}
                // A record the wrapper cannot read still says "converted".
                None => return Some(NetCapabilities::Drop),
            }
        }
        self.settle(Scope::All, Some(init), None)
    }

    /// A runtime whose state the wrapper cannot read: the record of the
    /// same root and id (the id resolved as crun resolves it).
    fn other_by_name(
        &self,
        root: &Path,
        id: &OsStr,
    ) -> Result<Option<NetCapabilities>, RecordError> {
        let unreadable = |p: &Path, e: &std::io::Error| {
            RecordError::Unidentified {
            why: format!(
                "container {}: cannot read its state directory {}: {e}; the wrapper cannot tell whether it converted it",
                id.to_string_lossy(),
                p.display()
            ),
        }
        };
        let (dir, name) = if plain(id.as_bytes()) {
            (root.to_owned(), id.to_owned())
        } else {
            let joined = root.join(OsStr::from_bytes(trim_slashes(id.as_bytes())));
            let real = match crate::sys::realpath::realpath(&joined) {
                Ok(r) => r,
                Err(e) if missing(&e) => return Ok(None),
                Err(e) => return Err(unreadable(&joined, &e)),
            };
            match (real.parent(), real.file_name()) {
                (Some(p), Some(n)) => (p.to_owned(), n.to_owned()),
                _ => return Ok(None),
            }
        };
        match dir_key(&dir) {
            Ok(key) => Ok(self.by_name(Some(&key), &name)),
            Err(e) if missing(&e) => Ok(None),
            Err(e) => Err(unreadable(&dir, &e)),
        }
    }

    /// A pending record of an unknown runtime with this root and id.
    fn by_name(&self, key: Option<&str>, id: &OsStr) -> Option<NetCapabilities> {
        self.pending_records(Scope::All).find_map(|(_, r)| {
            (r.runtime == Kind::Other
                && r.root.as_ref().map(|(k, _)| k.as_str()) == key
                && r.id == id)
                .then_some(r.policy)
        })
    }

    /// The pending records in `scope`, read.
    fn pending_records(&self, scope: Scope) -> impl Iterator<Item = (PathBuf, Record)> {
        entries(&self.pending()).filter_map(move |p| {
            if !scope.may_hold(&p) {
                return None;
            }
            let r = Record::parse(&read_small(&p).ok()?)?;
            Some((p, r))
        })
    }

    /// Bind every pending record of the scope's id (of every id, for
    /// [`Scope::All`]) whose container now exists to its init, and remove
    /// every one whose create is over without a container. The policy of
    /// the one bound to `want`, if any. `nameless`: an id whose
    /// record, of a runtime the wrapper cannot read, goes (its delete).
    fn settle(
        &self,
        scope: Scope,
        want: Option<Process>,
        nameless: Option<&OsStr>,
    ) -> Option<NetCapabilities> {
        let mut found = None;
        for (path, r) in self.pending_records(scope) {
            let Stage::Pending { creator } = r.stage else {
                continue;
            };
            // First whether the create is over: once it is, its state is
            // final (the runtime writes it before it exits).
            let over = !creator.alive();
            let Some((key, root)) = &r.root else {
                if over && nameless == Some(r.id.as_os_str()) {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            };
            if r.runtime == Kind::Other {
                let exists = dir_key(root).is_ok_and(|k| &k == key)
                    && std::fs::symlink_metadata(root.join(&r.id)).is_ok();
                if over && (!exists || nameless == Some(r.id.as_os_str())) {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            if !scope.owns(&r.id) {
                // Another id's record, read because its create is over:
                // whether that create left a container is all this call
                // needs to know. Its own start, delete, or an exec binds
                // it; binding it here as well had every call beside it
                // read and parse its state and write the same bound
                // record (at fifty at once, about 2.4 binds a container).
                if over && matches!(find_state(r.runtime, root, Some(key), &r.id), Ok(None)) {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            match read_init(r.runtime, root, Some(key), &r.id) {
                // An init started after this create began is its own.
                Ok(Some(init)) if init.start >= creator.start => {
                    let bound = Record {
                        stage: Stage::Bound { init },
                        ..r.clone()
                    };
                    let at = self.bound().join(init.pid.to_string());
                    if write_record(&at, &bound).is_ok() {
                        let _ = std::fs::remove_file(&path);
                    }
                    if want == Some(init) {
                        found = Some(r.policy);
                    }
                }
                Ok(_) if over => {
                    let _ = std::fs::remove_file(&path);
                }
                _ => {}
            }
        }
        found
    }

    /// Remove every bound record whose init pid no process holds, one
    /// `kill(pid, 0)` each: at fifty containers at once a look through a
    /// pidfd (open, poll, close) cost a delete 5 to 7 µs a record. An
    /// init that has exited and waits to be reaped keeps its record until
    /// it is reaped (by the shim, at once), and a later delete removes it;
    /// it matches nothing meanwhile, as its pid cannot be taken while it
    /// is a zombie. One whose pid a later process took stays until that one
    /// exits: it names its init's start time too, so it never matches
    /// another process (`by_init`), and a container whose init gets that
    /// pid has its record written over it.
    fn sweep_bound(&self) {
        for path in entries(&self.bound()) {
            let name = path.file_name().map_or(&b""[..], |n| n.as_bytes());
            if no_process_has(name) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    /// No record at all.
    fn is_empty(&self) -> bool {
        entries(&self.pending()).next().is_none() && entries(&self.bound()).next().is_none()
    }
}

/// The records in `dir`; a temporary file of a writer that died before
/// its rename is removed on the way (see [`orphan_temp`]), so that a
/// listing is the one read of the directory.
fn entries(dir: &Path) -> std::vec::IntoIter<PathBuf> {
    let names = crate::sys::dir::names(dir).unwrap_or_default();
    let mut paths = Vec::with_capacity(names.len());
    for name in names {
        if !name.as_bytes().starts_with(b".") {
            paths.push(dir.join(name));
        } else if orphan_temp(name.as_bytes()) {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }
    paths.into_iter()
}

/// A temporary file of [`write_record`] (`.NAME.PID`) whose writer died
/// before its rename (a wrapper killed in the middle of a create): no
/// process has that pid any more.
fn orphan_temp(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(b".") else {
        return false;
    };
    rest.rsplit(|&b| b == b'.')
        .next()
        .and_then(|p| std::str::from_utf8(p).ok()?.parse::<i32>().ok())
        .is_some_and(|pid| Process::of(pid).is_none())
}

/// Which pending records a call reads: every one (an exec that must
/// find its container's), those of one id (a start: its tag in the name;
/// a name without one, of an earlier version, may be of any id), or those
/// and the records whose creating process is certainly gone (a converting
/// create or a delete, which remove those of failed creates of other
/// ids), known from the name by one `kill(pid, 0)`: a create in flight
/// beside it costs no read.
#[derive(Debug, Clone, Copy)]
enum Scope {
    All,
    Own(u64),
    OwnAndOver(u64),
}

impl Scope {
    /// Whether a record of `id` is this call's own (every record is a
    /// call's own that reads them all).
    fn owns(self, id: &OsStr) -> bool {
        match self {
            Scope::All => true,
            Scope::Own(tag) | Scope::OwnAndOver(tag) => id_tag(id) == tag,
        }
    }

    fn may_hold(self, path: &Path) -> bool {
        let (tag, over_too) = match self {
            Scope::All => return true,
            Scope::Own(tag) => (tag, false),
            Scope::OwnAndOver(tag) => (tag, true),
        };
        let name = path.file_name().map_or(&b""[..], |n| n.as_bytes());
        let mut parts = name.split(|&b| b == b'.');
        let (Some(pid), Some(_start), Some(t), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return true;
        };
        let of_this_id = std::str::from_utf8(t)
            .ok()
            .and_then(|t| u64::from_str_radix(t, 16).ok())
            .map_or(true, |t| t == tag);
        of_this_id || (over_too && no_process_has(pid))
    }
}

/// No process has this pid (a pid that is not a number, or not above 0,
/// counts as none: a pending record of that name is read, and then judged
/// by the record's own creator).
fn no_process_has(pid: &[u8]) -> bool {
    let Some(pid) = pid_in_name(pid) else {
        return true;
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH)
}

/// A pid as a record's name (or its first part) spells it: a number above 0.
fn pid_in_name(name: &[u8]) -> Option<nix::libc::pid_t> {
    std::str::from_utf8(name)
        .ok()?
        .parse()
        .ok()
        .filter(|&p| p > 0)
}

/// The tag of a container id in its pending record's name.
fn id_tag(id: &OsStr) -> u64 {
    crate::hash::fnv1a(id.as_bytes())
}

/// A pending record's name: its creating process, then its id's tag, so
/// that a call about one container reads only the records of that id.
fn pending_name(creator: Process, id: &OsStr) -> String {
    format!("{}.{}.{:016x}", creator.pid, creator.start, id_tag(id))
}

fn read_small(path: &Path) -> std::io::Result<Vec<u8>> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).bits())
        .open(path)?;
    // A record is about a hundred bytes: one read, not a doubling series.
    let mut bytes = Vec::with_capacity(512);
    f.take(64 << 10).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Written whole under a temporary name, then renamed into place: a
/// reader sees the old record or the new one.
fn write_record(path: &Path, r: &Record) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits())
        .open(&tmp)?;
    f.write_all(&r.render())?;
    drop(f);
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
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
