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
//! that process (`pending/<pid>.<start>`), holding the state root and id,
//! and is *bound* to the container's init (`init/<pid>`, with its start
//! time) by the first start, exec, create or delete through the wrapper
//! that finds the container's state. A pending record whose creating
//! process is gone while its container does not exist (a failed create,
//! or one deleted before anything bound it) is removed by the same calls;
//! a bound record whose init is gone (pid absent, a zombie, or started at
//! another time) is removed by every create and delete. A record never matches a container
//! other than the one whose init it names: pid and start time together do
//! not repeat within a boot. `/run` is a tmpfs: records go at reboot.
//!
//! Each record is a few lines of text, the first `userns-hostnet record
//! 1` (the format's version), then `policy`, `creator` or `init`,
//! `runtime`, `root` and `id` (the last two hex-encoded, as any bytes may
//! appear in them); unknown lines are ignored, so a later version can read
//! these.
//!
//! The state is read as the runtime reads it: the root is the runtime's
//! `--root` or its default (runc cleans the path lexically first, as Go's
//! `filepath.Abs` does; crun and youki hand it to the kernel); runc
//! refuses any id that is not a plain name (`^[\w+,.-]+$`, not `.` or
//! `..`) and resolves the id inside the root as if the root were `/`;
//! youki 0.7 refuses an id with a `/`; crun joins the id to the root as a
//! path. A state file the wrapper cannot read the way the runtime would
//! (a second key the runtime may read as the pid, a value that is not a
//! plain integer, a state file that is a link or not a regular file) is
//! refused at exec while any record exists.

use crate::runtime::Kind;
use nix::errno::Errno;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;
use serde_json::value::RawValue;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use userns_hostnet_engine::policy::NetCapabilities;
use userns_hostnet_engine::strict::folds_to;

pub const DIR: &str = "/run/userns-hostnet/converted";

/// The first line of every record: the format's version.
const VERSION: &str = "userns-hostnet record 1";

/// A state file larger than this is not one a runtime wrote.
const STATE_LIMIT: u64 = 64 << 20;

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

/// A process by pid and start time (clock ticks after boot, field 22 of
/// `/proc/PID/stat`, what runc's `init_process_start` holds): the pair
/// does not repeat within a boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: i32,
    pub start: u64,
}

impl Process {
    /// `pid` as it runs now; `None` when there is no such process.
    pub fn of(pid: i32) -> Option<Process> {
        let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
        Some(Process {
            pid,
            start: start_time(&stat)?,
        })
    }

    fn current() -> Option<Process> {
        let pid = std::process::id().try_into().ok()?;
        let stat = std::fs::read("/proc/self/stat").ok()?;
        Some(Process {
            pid,
            start: start_time(&stat)?,
        })
    }

    fn alive(self) -> bool {
        Process::of(self.pid) == Some(self)
    }
}

/// Field 22 of a `/proc/PID/stat` line, counted after the command name
/// (which may hold spaces and parentheses: it ends at the last `)`);
/// `None` for a process that has exited and waits to be reaped (state
/// `Z` or `X`), which runc counts as stopped too.
pub fn start_time(stat: &[u8]) -> Option<u64> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// Where a record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Written at create by this process, which becomes the runtime's
    /// `create` (or `run`, `restore`): the container does not exist yet.
    Pending { creator: Process },
    /// The container's init, as its state names it.
    Bound { init: Process },
}

/// One converted container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub policy: NetCapabilities,
    pub stage: Stage,
    pub runtime: Kind,
    /// The state root: `dev:ino`, and the absolute path the runtime
    /// opens; `None` for a runtime whose default is not known, without
    /// `--root`.
    pub root: Option<(String, PathBuf)>,
    pub id: OsString,
}

impl Record {
    pub fn render(&self) -> Vec<u8> {
        let policy = match self.policy {
            NetCapabilities::Refuse => "refuse",
            _ => "drop",
        };
        let (word, p) = match self.stage {
            Stage::Pending { creator } => ("creator", creator),
            Stage::Bound { init } => ("init", init),
        };
        let mut s = format!(
            "{VERSION}\npolicy {policy}\n{word} {} {}\nruntime {}\n",
            p.pid,
            p.start,
            self.runtime.word()
        );
        if let Some((key, path)) = &self.root {
            s += &format!("root {key} {}\n", hex(path.as_os_str().as_bytes()));
        }
        s += &format!("id {}\n", hex(self.id.as_bytes()));
        s.into_bytes()
    }

    /// A record of this version or a later one (whose lines this one
    /// does not know are skipped); `None` for anything else.
    pub fn parse(bytes: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.lines();
        let version: u32 = lines
            .next()?
            .strip_prefix("userns-hostnet record ")?
            .parse()
            .ok()?;
        if version < 1 {
            return None;
        }
        let (mut policy, mut stage, mut runtime, mut root, mut id) = (None, None, None, None, None);
        let process = |pid: Option<&str>, start: Option<&str>| {
            Some(Process {
                pid: pid?.parse().ok()?,
                start: start?.parse().ok()?,
            })
        };
        for line in lines {
            let mut w = line.split(' ');
            match w.next() {
                // A record says "converted": a policy it cannot read is
                // the default one.
                Some("policy") => {
                    policy = Some(match w.next() {
                        Some("refuse") => NetCapabilities::Refuse,
                        _ => NetCapabilities::Drop,
                    })
                }
                Some("creator") => {
                    stage = process(w.next(), w.next()).map(|creator| Stage::Pending { creator })
                }
                Some("init") => {
                    stage = process(w.next(), w.next()).map(|init| Stage::Bound { init })
                }
                Some("runtime") => runtime = w.next().map(|w| Kind::named(Some(OsStr::new(w)))),
                Some("root") => {
                    let key = w.next()?.to_owned();
                    let path = OsString::from_vec(unhex(w.next()?)?);
                    root = Some((key, PathBuf::from(path)));
                }
                Some("id") => id = Some(OsString::from_vec(unhex(w.next()?)?)),
                _ => {}
            }
        }
        Some(Record {
            policy: policy?,
            stage: stage?,
            runtime: runtime?,
            root,
            id: id?,
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The init a state file names, as the runtime reads the file: `pid`
/// and, when the file has it, the start time. `Ok(None)` when it names
/// no process that can be running (no pid, or 0 or less).
pub fn init_in_state(runtime: Kind, bytes: &[u8]) -> Result<Option<(i32, Option<u64>)>, String> {
    let members = members(bytes)?;
    let format = runtime.state_format();
    let (pid_field, start_field, go) = (format.pid, format.start, format.go);
    let Some(pid) = integer(member(&members, pid_field, go)?, pid_field)? else {
        return Ok(None);
    };
    if pid <= 0 {
        return Ok(None);
    }
    let pid = i32::try_from(pid).map_err(|_| format!("{pid_field}: {pid}: not a pid"))?;
    let start = match start_field {
        Some(f) => match integer(member(&members, f, go)?, f)? {
            Some(s) => Some(u64::try_from(s).map_err(|_| format!("{f}: {s}: not a start time"))?),
            None => None,
        },
        None => None,
    };
    // runc's zero is a start time no process has (runc then reports the
    // container stopped); crun's means "not recorded".
    let start = match runtime {
        Kind::Runc => Some(start.unwrap_or(0)),
        _ => start.filter(|&s| s != 0),
    };
    Ok(Some((pid, start)))
}

/// The members of a JSON object in file order, duplicates kept.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(e) = m.next_entry::<String, &'de RawValue>()? {
                    out.push(e);
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

fn members(bytes: &[u8]) -> Result<Members<'_>, String> {
    serde_json::from_slice(bytes)
        .map_err(|e| format!("not a JSON object as the runtime writes one: {e}"))
}

/// The one member the runtime reads as `field`: runc (Go) matches keys
/// without case and takes the last, crun the first exact one, youki
/// refuses duplicates. A second candidate, or for Go another spelling,
/// is refused rather than guessed.
fn member<'a>(m: &Members<'a>, field: &str, go: bool) -> Result<Option<&'a RawValue>, String> {
    let mut found =
        m.0.iter()
            .filter(|(k, _)| if go { folds_to(k, field) } else { k == field });
    let Some((key, value)) = found.next() else {
        return Ok(None);
    };
    if found.next().is_some() {
        return Err(format!(
            "more than one member the runtime may read as {field}"
        ));
    }
    if key != field {
        return Err(format!(
            "{key:?}: a member the runtime reads as {field}, spelled otherwise"
        ));
    }
    Ok(Some(value))
}

/// A plain integer (`null` is none: Go leaves the field at zero); a
/// fraction, an exponent or another type is refused.
fn integer(v: Option<&RawValue>, field: &str) -> Result<Option<i128>, String> {
    let Some(v) = v else { return Ok(None) };
    let text = v.get();
    if text == "null" {
        return Ok(None);
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || digits.len() > 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{field}: {text}: not a plain integer"));
    }
    text.parse()
        .map(Some)
        .map_err(|_| format!("{field}: {text}: not a plain integer"))
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

/// crun's `append_paths`: a component's leading and trailing slashes go.
fn trim_slashes(id: &[u8]) -> &[u8] {
    let start = id.iter().position(|&b| b != b'/').unwrap_or(id.len());
    let end = id.iter().rposition(|&b| b != b'/').map_or(start, |e| e + 1);
    &id[start..end.max(start)]
}

/// The state file of container `id` under `root`, opened as the runtime
/// opens it; `Ok(None)` when there is none (no such container).
fn open_state(runtime: Kind, root: &Path, id: &OsStr) -> Result<Option<(File, u64)>, String> {
    let gone = |e: Errno| matches!(e, Errno::ENOENT | Errno::ENOTDIR);
    let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let opened = match runtime {
        Kind::Runc => {
            if !runc_valid(id.as_bytes()) {
                // runc refuses the id: no container of runc has it.
                return Ok(None);
            }
            let dir = match nix::fcntl::open(
                root,
                OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => unsafe { OwnedFd::from_raw_fd(fd) },
                Err(e) if gone(e) => return Ok(None),
                Err(e) => {
                    return Err(format!(
                        "cannot open its state directory {}: {e}",
                        root.display()
                    ))
                }
            };
            // runc joins the id inside the root as if the root were `/`
            // (securejoin). A state.json that is a link is refused: runc
            // 1.1 follows it inside the container's directory, later
            // versions anywhere.
            let how = OpenHow::new()
                .flags(flags | OFlag::O_NOFOLLOW)
                .resolve(ResolveFlag::RESOLVE_IN_ROOT);
            match openat2(
                dir.as_raw_fd(),
                &Path::new(id).join(runtime.state_format().file),
                how,
            ) {
                Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
                Err(e) => Err(e),
            }
        }
        Kind::Crun | Kind::Youki | Kind::Other => {
            if runtime == Kind::Youki && id.as_bytes().contains(&b'/') {
                return Ok(None);
            }
            let name = runtime.state_format().file;
            let path = root
                .join(OsStr::from_bytes(trim_slashes(id.as_bytes())))
                .join(name);
            nix::fcntl::open(&path, flags, Mode::empty())
                .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
        }
    };
    let fd = match opened {
        Ok(fd) => fd,
        Err(e) if gone(e) => return Ok(None),
        Err(Errno::ELOOP) => return Err("its state file is a symbolic link".into()),
        Err(e) => return Err(format!("cannot open its state file: {e}")),
    };
    let file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read its state file: {e}"))?;
    if !meta.is_file() || meta.len() > STATE_LIMIT {
        return Err("its state file is not a regular file of a runtime's size".into());
    }
    let len = meta.len();
    Ok(Some((file, len)))
}

/// The init of container `id` under `root` as the runtime will find it:
/// `Ok(None)` when no container there can be running. `key`, when given,
/// must still be the root's `dev:ino`.
fn read_init(
    runtime: Kind,
    root: &Path,
    key: Option<&str>,
    id: &OsStr,
) -> Result<Option<Process>, String> {
    if let Some(key) = key {
        match dir_key(root) {
            Ok(k) if k == key => {}
            Ok(_) => return Ok(None),
            Err(e) if missing(&e) => return Ok(None),
            Err(e) => {
                return Err(format!(
                    "cannot read its state directory {}: {e}",
                    root.display()
                ))
            }
        }
    }
    let Some((mut file, len)) = open_state(runtime, root, id)? else {
        return Ok(None);
    };
    // Room for the whole file and the read that finds its end: one read
    // each, not a doubling series.
    let mut bytes = Vec::with_capacity(len as usize + 1);
    Read::by_ref(&mut file)
        .take(STATE_LIMIT)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read its state file: {e}"))?;
    let Some((pid, start)) =
        init_in_state(runtime, &bytes).map_err(|e| format!("its state file: {e}"))?
    else {
        return Ok(None);
    };
    Ok(match start {
        Some(start) => Some(Process { pid, start }),
        // No start time in the state: the runtime acts on whatever runs
        // under that pid.
        None => Process::of(pid),
    })
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
    /// the container by other spellings. Records of containers that are
    /// gone are removed first.
    pub fn mark(&self, t: &Target<'_>, policy: NetCapabilities) -> Result<(), RecordError> {
        if policy == NetCapabilities::Keep {
            self.forget(t);
            return Ok(());
        }
        let id = t.id.as_bytes();
        if t.runtime == Kind::Runc && !runc_valid(id) {
            // runc refuses the id itself: no container to record.
            self.forget(t);
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
        self.sweep(None);
        if root.is_none() {
            // Whether an earlier container of this id still exists cannot
            // be told without its root: the latest create's record stands
            // for the id, as the runtime allows one container per id.
            for (path, r) in self.pending_records() {
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
        let path = self
            .pending()
            .join(format!("{}.{}", creator.pid, creator.start));
        write_record(&path, &record).map_err(|source| write_error(t.id, &path, source))
    }

    /// At a create that converts nothing: records left by creates that
    /// failed go, so that none is bound to this container.
    pub fn forget(&self, _t: &Target<'_>) {
        self.settle(None, None);
    }

    /// At delete: every record whose container is gone goes (the one of
    /// `t` once its init has stopped: a delete the runtime refuses, of a
    /// running container, leaves it). A runtime whose state the wrapper
    /// cannot read loses the record of that id at its delete.
    pub fn release(&self, t: &Target<'_>) {
        let nameless = (t.runtime == Kind::Other).then_some(t.id);
        self.sweep(nameless);
    }

    /// At start: a container created through the wrapper is bound to its
    /// init before anything else can act on its state. A start of a
    /// container the wrapper did not convert costs one look at an empty
    /// directory.
    pub fn bind_created(&self) {
        self.settle(None, None);
    }

    /// Every record, pending and bound (for tests and diagnostics).
    pub fn all(&self) -> Vec<Record> {
        let bound = entries(&self.bound()).filter_map(|p| Record::parse(&read_small(&p).ok()?));
        self.pending_records()
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
        self.settle(Some(init), None)
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
            let real = match std::fs::canonicalize(&joined) {
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
        self.pending_records().find_map(|(_, r)| {
            (r.runtime == Kind::Other
                && r.root.as_ref().map(|(k, _)| k.as_str()) == key
                && r.id == id)
                .then_some(r.policy)
        })
    }

    fn pending_records(&self) -> impl Iterator<Item = (PathBuf, Record)> {
        entries(&self.pending()).filter_map(|p| {
            let r = Record::parse(&read_small(&p).ok()?)?;
            Some((p, r))
        })
    }

    /// Bind every pending record whose container now exists to its init,
    /// and remove those whose create is over without a container. The
    /// policy of the one bound to `want`, if any. `nameless`: an id whose
    /// record, of a runtime the wrapper cannot read, goes (its delete).
    fn settle(&self, want: Option<Process>, nameless: Option<&OsStr>) -> Option<NetCapabilities> {
        let mut found = None;
        for (path, r) in self.pending_records() {
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

    /// Settle pending records, and remove every bound one whose init is
    /// gone.
    fn sweep(&self, nameless: Option<&OsStr>) {
        self.settle(None, nameless);
        for path in entries(&self.bound()) {
            let pid = path.file_name().and_then(|n| n.to_str()?.parse().ok());
            let Some(now) = pid.and_then(Process::of) else {
                let _ = std::fs::remove_file(&path);
                continue;
            };
            // One this version cannot read stays while its pid runs.
            let parsed = read_small(&path).ok().and_then(|b| Record::parse(&b));
            if parsed.is_some_and(|r| r.stage != Stage::Bound { init: now }) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    /// No record at all.
    fn is_empty(&self) -> bool {
        entries(&self.pending()).next().is_none() && entries(&self.bound()).next().is_none()
    }
}

/// The records in `dir` (a name starting with `.` is one being written).
/// The records in `dir`; a temporary file of a writer that died before
/// its rename is removed on the way (see [`orphan_temp`]), so that a
/// listing is the one read of the directory.
fn entries(dir: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            if !name.as_bytes().starts_with(b".") {
                return true;
            }
            if orphan_temp(name.as_bytes()) {
                let _ = std::fs::remove_file(e.path());
            }
            false
        })
        .map(|e| e.path())
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

fn read_small(path: &Path) -> std::io::Result<Vec<u8>> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).bits())
        .open(path)?;
    let mut bytes = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn t<'a>(runtime: Kind, root: &'a Path, id: &'a str) -> Target<'a> {
        Target {
            runtime,
            root: Some(root.as_os_str()),
            id: OsStr::new(id),
        }
    }

    fn me() -> Process {
        Process::current().unwrap()
    }

    /// A state file as each runtime writes it, naming `p` as the init.
    fn write_state(runtime: Kind, root: &Path, id: &str, p: Process) {
        let dir = root.join(id);
        fs::create_dir_all(&dir).unwrap();
        let (name, text) = match runtime {
            Kind::Runc => (
                "state.json",
                format!(
                    r#"{{"id":"{id}","init_process_pid":{},"init_process_start":{},"created":"2026-01-01T00:00:00Z","config":{{"rootfs":"/r"}}}}"#,
                    p.pid, p.start
                ),
            ),
            Kind::Crun => (
                "status",
                format!(
                    r#"{{"pid":{},"process-start-time":{},"cgroup-path":"","rootfs":"/r","systemd-cgroup":false,"bundle":"/b","created":"2026-01-01T00:00:00Z","detached":true}}"#,
                    p.pid, p.start
                ),
            ),
            _ => (
                "state.json",
                format!(
                    r#"{{"ociVersion":"1.0.2","id":"{id}","status":"running","pid":{},"bundle":"/b"}}"#,
                    p.pid
                ),
            ),
        };
        fs::write(dir.join(name), text).unwrap();
    }

    /// A process that has exited, as a record would name it.
    fn gone() -> Process {
        let mut child = std::process::Command::new("sleep")
            .arg("100")
            .spawn()
            .unwrap();
        let p = Process::of(child.id() as i32).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        p
    }

    #[test]
    fn start_time_of_a_stat_line() {
        let line = b"42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(start_time(line), Some(98765));
        let zombie = b"42 (x) Z 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(start_time(zombie), None);
        assert_eq!(start_time(b"42 (x) S 1"), None);
        assert_eq!(start_time(b"garbage"), None);
        assert!(me().alive());
        assert!(!gone().alive());
    }

    #[test]
    fn the_current_format_reads_back() {
        let r = Record {
            policy: NetCapabilities::Refuse,
            stage: Stage::Pending {
                creator: Process {
                    pid: 12,
                    start: 345,
                },
            },
            runtime: Kind::Crun,
            root: Some(("fe00:1a".into(), PathBuf::from("/run/crun"))),
            id: OsString::from_vec(b"a\nb c".to_vec()),
        };
        let text = r.render();
        assert_eq!(
            std::str::from_utf8(&text).unwrap(),
            "userns-hostnet record 1\npolicy refuse\ncreator 12 345\nruntime crun\nroot fe00:1a 2f72756e2f6372756e\nid 610a622063\n"
        );
        assert_eq!(Record::parse(&text), Some(r.clone()));
        // As written on a node by this version.
        let bound = b"userns-hostnet record 1\npolicy drop\ninit 4321 99\nruntime runc\nroot 803:2 2f72756e2f72756e63\nid 6331\n";
        let b = Record::parse(bound).unwrap();
        assert_eq!(
            b.stage,
            Stage::Bound {
                init: Process {
                    pid: 4321,
                    start: 99
                }
            }
        );
        assert_eq!(
            (b.policy, b.runtime, b.id.as_os_str()),
            (NetCapabilities::Drop, Kind::Runc, OsStr::new("c1"))
        );
        assert_eq!(b.root, Some(("803:2".into(), PathBuf::from("/run/runc"))));
        // A later version's extra lines are skipped; a policy it names
        // that this one does not know reads as the default.
        let later =
            b"userns-hostnet record 2\npolicy audit\nnew thing\ninit 1 2\nruntime kata\nid 6331\n";
        let l = Record::parse(later).unwrap();
        assert_eq!(
            (l.policy, l.runtime, l.root),
            (NetCapabilities::Drop, Kind::Other, None)
        );
        for bad in [
            &b"drop"[..],
            b"userns-hostnet record 0\npolicy drop\ninit 1 2\nruntime runc\nid 61\n",
            b"userns-hostnet record 1\npolicy drop\nruntime runc\nid 61\n",
            b"userns-hostnet record 1\npolicy drop\ninit 1 2\nruntime runc\nid 6\n",
        ] {
            assert_eq!(
                Record::parse(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn the_init_as_each_runtime_reads_its_state() {
        let runc = |s: &str| init_in_state(Kind::Runc, s.as_bytes());
        assert_eq!(
            runc(r#"{"init_process_pid":7,"init_process_start":8}"#),
            Ok(Some((7, Some(8))))
        );
        // Go leaves a missing or null start at zero, which no process has.
        assert_eq!(
            runc(r#"{"init_process_pid":7,"init_process_start":null}"#),
            Ok(Some((7, Some(0))))
        );
        assert_eq!(runc(r#"{"init_process_pid":0}"#), Ok(None));
        assert_eq!(runc(r#"{"init_process_pid":-3}"#), Ok(None));
        assert_eq!(runc(r#"{"id":"x"}"#), Ok(None));
        // What Go would read as the pid but the wrapper could misread.
        for bad in [
            r#"{"init_process_pid":7,"INIT_PROCESS_PID":9}"#,
            r#"{"Init_Process_Pid":7}"#,
            "{\"init_proce\u{17f}s_pid\":7}",
            r#"{"init_process_pid":7,"init_process_pid":9}"#,
            r#"{"init_process_pid":7.0}"#,
            r#"{"init_process_pid":"7"}"#,
            r#"{"init_process_pid":1e3}"#,
            r#"{"init_process_pid":99999999999}"#,
            r#"{"init_process_pid":7,"init_process_start":-1}"#,
            r#"[1]"#,
            r#"{"init_process_pid":7} trailing"#,
        ] {
            assert!(runc(bad).is_err(), "{bad}");
        }
        let crun = |s: &str| init_in_state(Kind::Crun, s.as_bytes());
        assert_eq!(
            crun(r#"{"pid":7,"process-start-time":8}"#),
            Ok(Some((7, Some(8))))
        );
        // crun's zero: not recorded; the live process's is used.
        assert_eq!(
            crun(r#"{"pid":7,"process-start-time":0}"#),
            Ok(Some((7, None)))
        );
        assert_eq!(crun(r#"{"pid":7}"#), Ok(Some((7, None))));
        // crun compares exactly: another case is another member.
        assert_eq!(crun(r#"{"pid":7,"PID":9}"#), Ok(Some((7, None))));
        assert!(crun(r#"{"pid":7,"pid":9}"#).is_err());
        let youki = |s: &str| init_in_state(Kind::Youki, s.as_bytes());
        assert_eq!(
            youki(r#"{"pid":7,"status":"running"}"#),
            Ok(Some((7, None)))
        );
        assert_eq!(youki(r#"{"pid":null}"#), Ok(None));
    }

    #[test]
    fn an_exec_finds_the_container_through_any_entry_naming_its_init() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        for rt in [Kind::Runc, Kind::Crun, Kind::Youki] {
            let root = dir.path().join(format!("{rt:?}"));
            let c = t(rt, &root, "c1");
            assert_eq!(r.lookup(&c).unwrap(), None);
            r.mark(&c, NetCapabilities::Drop).unwrap();
            assert!(root.is_dir(), "the root is made as the runtime makes it");
            // Created: the runtime's state names the init (this process:
            // it started no later than the create's).
            write_state(rt, &root, "c1", me());
            assert_eq!(r.lookup(&c).unwrap(), Some(NetCapabilities::Drop), "{rt:?}");
            assert!(
                matches!(
                    r.all()[..],
                    [Record {
                        stage: Stage::Bound { .. },
                        ..
                    }]
                ),
                "{:?}",
                r.all()
            );
            // A link to the directory, a copy elsewhere, a hard link.
            std::os::unix::fs::symlink("c1", root.join("alias")).unwrap();
            let other = dir.path().join(format!("{rt:?}-copy"));
            write_state(rt, &other, "copy", me());
            fs::create_dir(root.join("hard")).unwrap();
            for f in fs::read_dir(root.join("c1")).unwrap() {
                let f = f.unwrap();
                fs::hard_link(f.path(), root.join("hard").join(f.file_name())).unwrap();
            }
            for (at, id) in [
                (&root, "alias"),
                (&other, "copy"),
                (&root, "hard"),
                (&root, "c1"),
            ] {
                assert_eq!(
                    r.lookup(&t(rt, at, id)).unwrap(),
                    Some(NetCapabilities::Drop),
                    "{rt:?} {id}"
                );
            }
            // The root spelled otherwise: the same state file.
            let spelled = |s: &str| PathBuf::from(format!("{}{s}", root.display()));
            std::os::unix::fs::symlink(&root, dir.path().join(format!("{rt:?}-link"))).unwrap();
            let link = dir.path().join(format!("{rt:?}-link"));
            for at in [spelled("/"), spelled("//"), spelled("/./"), link] {
                assert!(
                    r.lookup(&t(rt, &at, "c1")).unwrap().is_some(),
                    "{rt:?} {}",
                    at.display()
                );
            }
            // Another init is another container.
            write_state(rt, &other, "else", Process::of(1).unwrap());
            assert_eq!(r.lookup(&t(rt, &other, "else")).unwrap(), None);
            fs::remove_file(r.bound().join(me().pid.to_string())).unwrap();
        }
    }

    #[test]
    fn records_of_containers_that_are_gone_go() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        let root = dir.path().join("state");
        fs::create_dir(&root).unwrap();
        let key = dir_key(&root).unwrap();
        let pending = |id: &str, creator: Process| {
            let rec = Record {
                policy: NetCapabilities::Drop,
                stage: Stage::Pending { creator },
                runtime: Kind::Runc,
                root: Some((key.clone(), root.clone())),
                id: id.into(),
            };
            write_record(
                &r.pending()
                    .join(format!("{}.{}", creator.pid, creator.start)),
                &rec,
            )
            .unwrap();
        };
        let dead = gone();
        // A create that failed: its process is gone, no container.
        pending("failed", dead);
        // One still running: its container is not there yet.
        pending("creating", me());
        // A bound record whose init has exited.
        let old = Record {
            policy: NetCapabilities::Drop,
            stage: Stage::Bound { init: dead },
            runtime: Kind::Runc,
            root: None,
            id: "old".into(),
        };
        write_record(&r.bound().join(dead.pid.to_string()), &old).unwrap();
        r.release(&t(Kind::Runc, &root, "old"));
        let ids: Vec<_> = r.all().into_iter().map(|x| x.id).collect();
        assert_eq!(ids, ["creating"]);
        // A container made later under a failed create's id is not its
        // own: the failed create's record went at the next create.
        pending("again", dead);
        r.forget(&t(Kind::Runc, &root, "again"));
        write_state(Kind::Runc, &root, "again", me());
        assert_eq!(r.lookup(&t(Kind::Runc, &root, "again")).unwrap(), None);
    }

    #[test]
    fn temporary_files_of_writers_that_died_go() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        let root = dir.path().join("state");
        fs::create_dir(&root).unwrap();
        let dead = gone();
        let mine = std::process::id();
        for sub in [r.pending(), r.bound()] {
            fs::create_dir_all(&sub).unwrap();
            fs::write(sub.join(format!(".7.8.{}", dead.pid)), "").unwrap();
            fs::write(sub.join(format!(".9.{mine}")), "").unwrap();
            fs::write(sub.join(".not-ours"), "").unwrap();
        }
        r.release(&t(Kind::Runc, &root, "any"));
        for sub in [r.pending(), r.bound()] {
            let mut left: Vec<_> = fs::read_dir(&sub)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            left.sort();
            assert_eq!(left, [format!(".9.{mine}"), ".not-ours".to_string()]);
        }
    }

    #[test]
    fn a_state_the_wrapper_cannot_read_is_refused_while_records_exist() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        let root = dir.path().join("state");
        fs::create_dir_all(root.join("c1")).unwrap();
        fs::write(
            root.join("c1/state.json"),
            r#"{"init_process_pid":7,"INIT_PROCESS_PID":8}"#,
        )
        .unwrap();
        let c = t(Kind::Runc, &root, "c1");
        assert_eq!(r.lookup(&c).unwrap(), None, "no record: nothing to protect");
        r.mark(&t(Kind::Runc, &root, "c2"), NetCapabilities::Drop)
            .unwrap();
        let e = r.lookup(&c).unwrap_err();
        assert!(
            e.to_string()
                .contains("the wrapper cannot tell whether it converted it"),
            "{e}"
        );
        // A state file that is a link: runc versions follow it differently.
        fs::create_dir_all(root.join("c3")).unwrap();
        std::os::unix::fs::symlink("../c1/state.json", root.join("c3/state.json")).unwrap();
        assert!(r.lookup(&t(Kind::Runc, &root, "c3")).is_err());
        // No container, or an id runc refuses: nothing there to exec into.
        assert_eq!(r.lookup(&t(Kind::Runc, &root, "none")).unwrap(), None);
        assert_eq!(
            r.lookup(&t(Kind::Runc, &root, "../state/c1")).unwrap(),
            None
        );
    }

    #[test]
    fn ids_that_are_paths_are_refused_at_create() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        let root = dir.path().join("state");
        for id in ["./c2", "c2/", "a/b", "..", "."] {
            let e = r
                .mark(&t(Kind::Crun, &root, id), NetCapabilities::Drop)
                .unwrap_err();
            assert!(e.to_string().contains("not a plain name"), "{e}");
            // runc refuses such ids itself: nothing to record.
            r.mark(&t(Kind::Runc, &root, id), NetCapabilities::Drop)
                .unwrap();
        }
        assert!(r.all().is_empty());
        // crun joins an id to the root as a path.
        r.mark(&t(Kind::Crun, &root, "c1"), NetCapabilities::Drop)
            .unwrap();
        write_state(Kind::Crun, &root, "c1", me());
        for id in ["./c1", "c1/", "/c1", "../state/c1"] {
            assert!(
                r.lookup(&t(Kind::Crun, &root, id)).unwrap().is_some(),
                "{id}"
            );
        }
    }

    #[test]
    fn an_unknown_runtime_is_known_by_root_and_id() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        let none = Target {
            runtime: Kind::Other,
            root: None,
            id: OsStr::new("c1"),
        };
        r.mark(&none, NetCapabilities::Drop).unwrap();
        assert!(r.lookup(&none).unwrap().is_some());
        // Another create of the id replaces its record.
        r.mark(&none, NetCapabilities::Refuse).unwrap();
        assert_eq!(r.lookup(&none).unwrap(), Some(NetCapabilities::Refuse));
        assert_eq!(r.all().len(), 1);
        let root = dir.path().join("state");
        r.mark(&t(Kind::Other, &root, "c2"), NetCapabilities::Refuse)
            .unwrap();
        assert_eq!(
            r.lookup(&t(Kind::Other, &root, "c2")).unwrap(),
            Some(NetCapabilities::Refuse)
        );
        assert_eq!(r.lookup(&t(Kind::Other, &root, "c1")).unwrap(), None);
        let path = Target {
            runtime: Kind::Other,
            root: None,
            id: OsStr::new("./c2"),
        };
        assert!(r.lookup(&path).is_err());
    }

    #[test]
    fn keep_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path().join("records"));
        r.mark(
            &t(Kind::Runc, &dir.path().join("s"), "c1"),
            NetCapabilities::Keep,
        )
        .unwrap();
        assert!(r.all().is_empty());
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
        assert_eq!(unhex(&hex(b"\x00a/\xff")), Some(b"\x00a/\xff".to_vec()));
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_the_container() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        fs::write(&file, "").unwrap();
        let root = dir.path().join("state");
        let e = Records::new(&file)
            .mark(&t(Kind::Runc, &root, "c1"), NetCapabilities::Drop)
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot record that container c1 was converted"),
            "{e}"
        );
    }
}
