//! The runtimes' state files: which init a container's state names.
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
use crate::sys::procfs;
use nix::errno::Errno;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;
use serde_json::value::RawValue;
use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use userns_hostnet_engine::strict::folds_to;

/// A state file larger than this is not one a runtime wrote.
const STATE_LIMIT: u64 = 64 << 20;

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
        let stat = procfs::read(format!("/proc/{pid}/stat"), procfs::SMALL).ok()?;
        Some(Process {
            pid,
            start: start_time(&stat)?,
        })
    }

    pub(super) fn current() -> Option<Process> {
        let pid = std::process::id().try_into().ok()?;
        let stat = procfs::read("/proc/self/stat", procfs::SMALL).ok()?;
        Some(Process {
            pid,
            start: start_time(&stat)?,
        })
    }

    pub(super) fn alive(self) -> bool {
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
pub(super) fn plain(id: &[u8]) -> bool {
    !id.is_empty()
        && id.len() <= 255
        && id != b"."
        && id != b".."
        && !id.contains(&b'/')
        && !id.contains(&0)
}

/// runc's `validateID`: `^[\w+,.-]+$` (the class `[\w+-\.]` spans `+` to
/// `.`), and not `.` or `..`.
pub(super) fn runc_valid(id: &[u8]) -> bool {
    plain(id)
        && id
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b',' | b'-' | b'.'))
}

/// Go's `filepath.Abs`: relative to the working directory, then cleaned
/// lexically (`..` removes the component before it, links or not).
pub(super) fn go_abs(p: &Path) -> PathBuf {
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
pub(super) fn dir_key(root: &Path) -> std::io::Result<String> {
    let m = std::fs::metadata(root)?;
    if !m.is_dir() {
        return Err(std::io::Error::from_raw_os_error(nix::libc::ENOTDIR));
    }
    Ok(format!("{:x}:{:x}", m.dev(), m.ino()))
}

pub(super) fn missing(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(nix::libc::ENOTDIR)
}

/// crun's `append_paths`: a component's leading and trailing slashes go.
pub(super) fn trim_slashes(id: &[u8]) -> &[u8] {
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

/// The state file of container `id` under `root`, opened; `Ok(None)` when
/// no container there can be running. `key`, when given, must still be
/// the root's `dev:ino`.
pub(super) fn find_state(
    runtime: Kind,
    root: &Path,
    key: Option<&str>,
    id: &OsStr,
) -> Result<Option<(File, u64)>, String> {
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
    open_state(runtime, root, id)
}

/// The init of container `id` under `root` as the runtime will find it:
/// `Ok(None)` when no container there can be running (as [`find_state`]).
pub(super) fn read_init(
    runtime: Kind,
    root: &Path,
    key: Option<&str>,
    id: &OsStr,
) -> Result<Option<Process>, String> {
    let Some((mut file, len)) = find_state(runtime, root, key, id)? else {
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
