//! Finding the real runtime and becoming it. `execve` keeps the pid, the
//! file descriptors (conmon's sync pipes, `--preserve-fds`, the console
//! socket), stdio, the environment and the exit status: to the caller the
//! wrapper is the runtime.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// The environment variable that names the real runtime and wins over
/// everything else.
pub const RUNTIME_ENV: &str = "USERNS_HOSTNET_RUNTIME";

/// Where to look when the caller gave no PATH at all.
pub use crate::sys::paths::FALLBACK_PATH;

/// Looked for in PATH, in order, when nothing names the runtime.
pub const DEFAULT_CANDIDATES: &[&str] = &["runc", "crun"];

/// The wrapper installed as `userns-hostnet-runtime-crun` runs crun: one
/// node can offer one runtime handler per real runtime without a second
/// config file.
pub const OWN_NAME_PREFIX: &str = "userns-hostnet-runtime-";

/// Where `install` gives a runtime handler its own link to the wrapper,
/// `HANDLERS_DIR/NAME/userns-hostnet-runtime`, next to a link `runtime`
/// to the real runtime of that handler (such as the `BinaryName` of the
/// handler it copied its settings from). The handler's `BinaryName` is the
/// first link: the wrapper knows its real runtime from the path it was
/// started by, without reading any file but that one link.
pub const HANDLERS_DIR: &str = "/etc/userns-hostnet/handlers";

/// The link, in a handler's directory, to that handler's real runtime.
pub const HANDLER_RUNTIME_LINK: &str = "runtime";

/// [`HANDLERS_DIR`]; builds with the `test-hooks` feature take another
/// from `USERNS_HOSTNET_HANDLERS_DIR`, so tests need not write to /etc.
pub fn handlers_dir() -> PathBuf {
    #[cfg(feature = "test-hooks")]
    if let Some(dir) = std::env::var_os("USERNS_HOSTNET_HANDLERS_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    PathBuf::from(HANDLERS_DIR)
}

/// The real runtime of the handler whose link the wrapper was started by
/// (`argv0` is `handlers/NAME/userns-hostnet-runtime`): where the link
/// `handlers/NAME/runtime` points, so the runtime sees its own path as
/// argv[0]; the link's own path when it is no symlink (a file put there),
/// or missing (the lookup then says that path cannot be run).
pub fn named_by_handler_link(argv0: &OsStr, handlers: &Path) -> Option<OsString> {
    let p = Path::new(argv0);
    if p.file_name()? != OsStr::new(crate::WRAPPER_NAME) {
        return None;
    }
    let dir = p.parent()?;
    if dir.parent()? != handlers || !p.is_absolute() {
        return None;
    }
    let link = dir.join(HANDLER_RUNTIME_LINK);
    let target = match std::fs::read_link(&link) {
        Ok(t) if t.is_absolute() => t,
        Ok(t) => dir.join(t),
        Err(_) => link,
    };
    Some(target.into_os_string())
}

/// The runtime named by the wrapper's own file name, if any: a handler's
/// link ([`HANDLERS_DIR`]), or a name such as `userns-hostnet-runtime-crun`.
pub fn named_by_own_name(argv0: &OsStr) -> Option<OsString> {
    if let Some(r) = named_by_handler_link(argv0, &handlers_dir()) {
        return Some(r);
    }
    let base = Path::new(argv0).file_name()?.as_bytes();
    let name = base.strip_prefix(OWN_NAME_PREFIX.as_bytes())?;
    (!name.is_empty()).then(|| OsStr::from_bytes(name).to_os_string())
}

/// The real runtime the wrapper becomes: its path, as found, and its
/// kind. Made once, at start, and handed to argv, the plan, the host
/// facts, the records and the probe: nothing else reads the runtime's
/// name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealRuntime {
    pub path: PathBuf,
    pub kind: Kind,
}

impl RealRuntime {
    /// `path` with its kind read from the file name it resolves to: one
    /// `readlink` per link of its last component.
    pub fn of(path: PathBuf) -> RealRuntime {
        let kind = Kind::named(resolved_name(&path).as_deref());
        RealRuntime { path, kind }
    }

    /// `path` for a command line the wrapper passes through (`state`,
    /// `kill`, `features`, ...): its name is not read, as nothing on that
    /// path asks for the kind; it is [`Kind::Other`].
    pub fn passing_through(path: PathBuf) -> RealRuntime {
        RealRuntime {
            path,
            kind: Kind::Other,
        }
    }
}

/// Which runtime, by its file name with links resolved (`/usr/bin/runc`
/// is runc, a link to crun is crun): what the wrapper knows of how it
/// reads its command line, where it keeps its state and in which format,
/// and how it departs from the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Runc,
    Crun,
    Youki,
    /// Any other: its command line gets the strict reading, its default
    /// root and its state file are not known (its containers are known by
    /// root and id alone).
    Other,
}

impl Kind {
    /// By a name: the runtime's file name, links resolved; a record's
    /// `runtime` line; the first word of a `--version` answer.
    pub fn named(name: Option<&OsStr>) -> Kind {
        match name.map(OsStr::as_bytes) {
            Some(b"runc") => Kind::Runc,
            Some(b"crun") => Kind::Crun,
            Some(b"youki") => Kind::Youki,
            _ => Kind::Other,
        }
    }

    /// The word [`Kind::named`] reads back (a record's `runtime` line).
    pub fn word(self) -> &'static str {
        match self {
            Kind::Runc => "runc",
            Kind::Crun => "crun",
            Kind::Youki => "youki",
            Kind::Other => "other",
        }
    }

    /// Whose command-line rules it follows: runc's and crun's their own,
    /// any other only what both read alike.
    pub fn dialect(self) -> crate::argv::Dialect {
        match self {
            Kind::Runc => crate::argv::Dialect::Runc,
            Kind::Crun => crate::argv::Dialect::Crun,
            Kind::Youki | Kind::Other => crate::argv::Dialect::Strict,
        }
    }

    /// The state root the runtime uses without `--root`, as each computes
    /// it for the user the wrapper runs as; `None` when not known.
    pub fn default_root(self) -> Option<PathBuf> {
        let xdg = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty());
        let root = nix::unistd::geteuid().is_root();
        let honours_xdg = match self {
            // runc honours XDG_RUNTIME_DIR only when not root.
            Kind::Runc => !root,
            // crun whenever it is set.
            Kind::Crun => true,
            Kind::Youki => !root,
            Kind::Other => return None,
        };
        Some(match xdg {
            Some(x) if honours_xdg => Path::new(&x).join(self.word()),
            _ => Path::new("/run").join(self.word()),
        })
    }

    /// The state file in a container's directory and how the runtime
    /// reads it: the member naming the init's pid, the one naming its
    /// start time if any, and whether keys are matched as Go's
    /// encoding/json matches them (without case, the last one winning).
    pub fn state_format(self) -> StateFormat {
        match self {
            Kind::Runc => StateFormat {
                file: "state.json",
                pid: "init_process_pid",
                start: Some("init_process_start"),
                go: true,
            },
            Kind::Crun => StateFormat {
                file: "status",
                pid: "pid",
                start: Some("process-start-time"),
                go: false,
            },
            Kind::Youki | Kind::Other => StateFormat {
                file: "state.json",
                pid: "pid",
                start: None,
                go: false,
            },
        }
    }

    /// runc and crun resolve a relative bind source in the bundle
    /// directory (runc joins the source to it, crun chdirs there); youki
    /// (0.7.0 seen) canonicalizes it in the working directory it was
    /// started in, the wrapper's own, and another runtime may do either.
    pub fn resolves_sources_in_bundle(self) -> bool {
        matches!(self, Kind::Runc | Kind::Crun)
    }

    /// youki (0.7.0 measured) mounts a container's cgroup v1 hierarchies
    /// read-write, its `ro` ignored; on a cgroup v2 host it mounts
    /// cgroup2 read-only as asked.
    pub fn cgroup_v1_mounts_writable(self) -> bool {
        self == Kind::Youki
    }

    /// crun binds a bind mount's submounts (since 1.9, `rbind` honoured):
    /// the bind of the host's /sys brings the host's cgroup2 to
    /// /sys/fs/cgroup, where mounting the container's cgroup2 fails with
    /// EBUSY, and crun 1.27.1 then mounts a tmpfs of its own there,
    /// read-write, under the container's cgroup2. A mount of another
    /// filesystem there first makes it take its normal path; crun 1.8.1,
    /// which binds without submounts, takes it either way.
    pub fn cgroup2_over_host_cgroup2_leaves_tmpfs(self) -> bool {
        self == Kind::Crun
    }

    /// The first version (major, minor) that knows the `rro` mount option;
    /// `None` for a runtime not known to.
    pub fn rro_since(self) -> Option<(u64, u64)> {
        match self {
            Kind::Runc => Some((1, 1)),
            Kind::Crun => Some((1, 4)),
            Kind::Youki => Some((0, 3)),
            Kind::Other => None,
        }
    }
}

/// Where and how a runtime keeps the state of a container
/// ([`Kind::state_format`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateFormat {
    /// The file in the container's directory under the root.
    pub file: &'static str,
    /// The member that names the init's pid.
    pub pid: &'static str,
    /// The member that names its start time, if the runtime writes one.
    pub start: Option<&'static str>,
    /// Keys matched without case, the last one winning (Go).
    pub go: bool,
}

/// The file name `runtime.canonicalize()` ends in (the path itself when it
/// cannot be resolved), found by following the links of the last
/// component only: the directories on the way cannot change the name, and
/// one `readlink` per link is all an exec pays (a full canonicalize costs
/// one per component). A link whose target does not end in a plain name
/// (`..`, `.`, `/`), or an error other than "no such file", is left to
/// canonicalize itself.
fn resolved_name(runtime: &Path) -> Option<OsString> {
    let slow = || {
        let real = crate::sys::realpath::realpath(runtime).unwrap_or_else(|_| runtime.to_owned());
        real.file_name().map(OsStr::to_os_string)
    };
    let mut p = runtime.to_owned();
    // The kernel's own limit on links followed in one lookup.
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(target) => {
                if !matches!(target.components().next_back(), Some(Component::Normal(_))) {
                    return slow();
                }
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            // Not a link: its name is the name.
            Err(e) if e.raw_os_error() == Some(nix::libc::EINVAL) => {
                return match p.components().next_back() {
                    Some(Component::Normal(n)) => Some(n.to_os_string()),
                    _ => slow(),
                };
            }
            // A dangling link: canonicalize fails, the name as given.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return runtime.file_name().map(OsStr::to_os_string);
            }
            Err(_) => return slow(),
        }
    }
    slow()
}

/// Who named the runtime, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedBy {
    Env,
    OwnName,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LookupError {
    #[error("{RUNTIME_ENV}={0}: not found or not executable")]
    EnvNotFound(String),
    #[error("runtime {0}, named by this wrapper's file name, is not an executable in PATH")]
    OwnNameNotFound(String),
    #[error("runtime {0}, the real runtime of this wrapper's runtime handler link, is not an executable")]
    HandlerLinkNotFound(String),
    #[error("no real runtime found: none of {0} is an executable in PATH (set {RUNTIME_ENV})")]
    NoCandidate(String),
    #[error("{0} is this wrapper itself, not a real runtime")]
    IsSelf(String),
}

/// Where to look: the inputs of the lookup, gathered by the caller so the
/// lookup itself is testable.
pub struct Lookup<'a> {
    /// `USERNS_HOSTNET_RUNTIME` if set and not empty, else the runtime the
    /// wrapper's own name carries.
    pub named: Option<(&'a OsStr, NamedBy)>,
    /// Names or paths to try in order when nothing is named.
    pub candidates: &'a [String],
    pub path_var: Option<&'a OsStr>,
    /// This executable, so a wrapper installed as `runc` earlier in PATH
    /// does not exec itself forever.
    pub self_id: Option<FileId>,
}

/// A file by device and inode: the wrapper under any path or link that
/// leads to it (`/proc/self/exe` is one `stat`, where comparing resolved
/// paths takes a `readlink` per component of both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The file `p` leads to, links followed.
    pub fn of(p: &Path) -> Option<FileId> {
        std::fs::metadata(p).ok().map(|m| FileId::from(&m))
    }
}

impl From<&std::fs::Metadata> for FileId {
    fn from(m: &std::fs::Metadata) -> FileId {
        FileId {
            dev: m.dev(),
            ino: m.ino(),
        }
    }
}

impl Lookup<'_> {
    pub fn find(&self) -> Result<PathBuf, LookupError> {
        if let Some((named, by)) = self.named {
            let shown = named.to_string_lossy().into_owned();
            let mut found = self.resolve(named).peekable();
            if found.peek().is_none() {
                return Err(match by {
                    NamedBy::Env => LookupError::EnvNotFound(shown),
                    // A file name holds no slash: a path came from a
                    // handler's link.
                    NamedBy::OwnName if shown.contains('/') => {
                        LookupError::HandlerLinkNotFound(shown)
                    }
                    NamedBy::OwnName => LookupError::OwnNameNotFound(shown),
                });
            }
            return found
                .find(|(_, id)| !self.is_self(*id))
                .map(|(p, _)| p)
                .ok_or(LookupError::IsSelf(shown));
        }
        self.candidates
            .iter()
            .flat_map(|c| self.resolve(OsStr::new(c)))
            .find(|(_, id)| !self.is_self(*id))
            .map(|(p, _)| p)
            .ok_or_else(|| LookupError::NoCandidate(self.candidates.join(", ")))
    }

    /// Every executable a name stands for: a name with a slash is a path
    /// (no PATH search); a bare name is looked up in each PATH directory in
    /// turn.
    fn resolve<'s>(&'s self, name: &'s OsStr) -> Box<dyn Iterator<Item = (PathBuf, FileId)> + 's> {
        if name.as_bytes().contains(&b'/') {
            let p = PathBuf::from(name);
            return Box::new(executable(&p).map(|id| (p, id)).into_iter());
        }
        let dirs = match self.path_var {
            Some(v) if !name.is_empty() => std::env::split_paths(v).collect(),
            _ => Vec::new(),
        };
        Box::new(
            dirs.into_iter()
                .filter(|dir| !dir.as_os_str().is_empty())
                .map(move |dir| dir.join(name))
                .filter_map(|p| executable(&p).map(|id| (p, id))),
        )
    }

    fn is_self(&self, found: FileId) -> bool {
        self.self_id == Some(found)
    }
}

/// The real runtime: `named` if given, else the first of `candidates` in
/// PATH, never this executable itself. podman 4.3 calls `kill` and
/// `delete` with no PATH at all: then look where a system's runtimes live
/// rather than fail its stop and cleanup.
pub fn find(
    named: Option<(&OsStr, NamedBy)>,
    candidates: &[String],
) -> Result<PathBuf, LookupError> {
    // A runtime named by a path needs no PATH.
    let bare = |n: &OsStr| !n.as_bytes().contains(&b'/');
    let path_var = named.map_or(true, |(n, _)| bare(n)).then(|| {
        std::env::var_os("PATH")
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| FALLBACK_PATH.into())
    });
    Lookup {
        named,
        candidates,
        path_var: path_var.as_deref(),
        self_id: FileId::of(Path::new("/proc/self/exe")),
    }
    .find()
}

/// The runtime as the wrapper would choose it for a create that does not
/// carry one in its own name, for the admin tool and the hooks: `named` (an
/// operator's choice, such as `doctor --runtime`) first, then
/// `USERNS_HOSTNET_RUNTIME`, then `candidates` (the config file's).
pub fn choose(named: Option<&OsStr>, candidates: &[String]) -> Result<PathBuf, LookupError> {
    let env = std::env::var_os(RUNTIME_ENV).filter(|v| !v.is_empty());
    let named = named.or(env.as_deref());
    find(named.map(|n| (n, NamedBy::Env)), candidates)
}

/// The file `p` names if it is an executable regular file: one `stat`.
fn executable(p: &Path) -> Option<FileId> {
    let m = std::fs::metadata(p).ok()?;
    (m.is_file() && m.permissions().mode() & 0o111 != 0).then(|| FileId::from(&m))
}

/// Replace this process with `runtime`, giving it `args` (without argv[0])
/// exactly as received. Returns only on failure.
pub fn exec(runtime: &Path, args: &[OsString]) -> std::io::Error {
    let to_c = |s: &OsStr| CString::new(s.as_bytes());
    let Ok(prog) = to_c(runtime.as_os_str()) else {
        return std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "runtime path has a NUL byte",
        );
    };
    let mut argv = Vec::with_capacity(args.len() + 1);
    argv.push(prog.clone());
    for a in args {
        // An argument cannot hold a NUL byte: it arrived through execve.
        match to_c(a) {
            Ok(c) => argv.push(c),
            Err(e) => return std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
        }
    }
    // Rust ignores SIGPIPE at startup; the runtime must start with the
    // disposition the caller gave us, which for every caller is the default.
    // SAFETY: restoring a default disposition installs no handler.
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        );
    }
    match nix::unistd::execv(&prog, &argv) {
        Ok(never) => match never {},
        Err(errno) => std::io::Error::from(errno),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// Only crun gets the read-only tmpfs under its cgroup mount; runc,
    /// youki and any other runtime convert as without it (the host's fact:
    /// `host::tests`).
    #[test]
    fn only_crun_leaves_a_tmpfs_under_its_cgroup2() {
        let kinds = [Kind::Runc, Kind::Crun, Kind::Youki, Kind::Other];
        let leaving: Vec<Kind> = kinds
            .into_iter()
            .filter(|k| k.cgroup2_over_host_cgroup2_leaves_tmpfs())
            .collect();
        assert_eq!(leaving, [Kind::Crun]);
    }

    #[test]
    fn the_kind_by_the_name_links_resolve_to() {
        use crate::argv::Dialect;
        let dialect = |p: &Path| RealRuntime::of(p.to_owned()).kind.dialect();
        let dir = tempfile::tempdir().unwrap();
        let crun = exe(dir.path(), "crun");
        let runc = exe(dir.path(), "runc");
        let other = exe(dir.path(), "youki");
        assert_eq!(dialect(&crun), Dialect::Crun);
        assert_eq!(dialect(&runc), Dialect::Runc);
        assert_eq!(dialect(&other), Dialect::Strict);
        // A `runc` that is a link to crun is crun.
        let sub = dir.path().join("bin");
        fs::create_dir(&sub).unwrap();
        std::os::unix::fs::symlink(&crun, sub.join("runc")).unwrap();
        assert_eq!(dialect(&sub.join("runc")), Dialect::Crun);
        std::os::unix::fs::symlink(&other, sub.join("crun")).unwrap();
        assert_eq!(dialect(&sub.join("crun")), Dialect::Strict);
    }

    #[test]
    fn the_dialect_by_file_name() {
        use crate::argv::Dialect;
        let dialect = |n: &str| Kind::named(Some(OsStr::new(n))).dialect();
        assert_eq!(dialect("runc"), Dialect::Runc);
        assert_eq!(dialect("crun"), Dialect::Crun);
        for other in ["youki", "runc.real", "crun-vm", "stub-runtime", ""] {
            assert_eq!(dialect(other), Dialect::Strict);
        }
    }

    #[test]
    fn resolved_name_is_the_name_canonicalize_ends_in() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        exe(d, "crun");
        fs::create_dir_all(d.join("a/b")).unwrap();
        std::os::unix::fs::symlink("../crun", d.join("a/runc")).unwrap();
        std::os::unix::fs::symlink("../runc", d.join("a/b/link")).unwrap();
        std::os::unix::fs::symlink(d.join("a/b/link"), d.join("abs")).unwrap();
        std::os::unix::fs::symlink("a/b", d.join("dirlink")).unwrap();
        std::os::unix::fs::symlink("nowhere/x", d.join("dangling")).unwrap();
        std::os::unix::fs::symlink("a/..", d.join("dots")).unwrap();
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        for p in [
            d.join("crun"),
            d.join("a/runc"),
            d.join("a/b/link"),
            d.join("abs"),
            d.join("dirlink/link"),
            d.join("dirlink/../runc"),
            d.join("dangling"),
            d.join("dots"),
            d.join("loop"),
            d.join("missing"),
            d.join("a/b/"),
            d.join("crun/."),
        ] {
            let slow = p.canonicalize().unwrap_or_else(|_| p.clone());
            assert_eq!(
                resolved_name(&p).as_deref(),
                slow.file_name(),
                "{}",
                p.display()
            );
        }
    }

    fn exe(dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        fs::write(&p, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn candidates() -> Vec<String> {
        DEFAULT_CANDIDATES.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn first_candidate_in_path_wins() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let crun = exe(a.path(), "crun");
        let runc = exe(b.path(), "runc");
        let path = std::env::join_paths([a.path(), b.path()]).unwrap();
        let c = candidates();
        let l = Lookup {
            named: None,
            candidates: &c,
            path_var: Some(&path),
            self_id: None,
        };
        assert_eq!(l.find().unwrap(), runc);
        fs::remove_file(&runc).unwrap();
        assert_eq!(l.find().unwrap(), crun);
    }

    #[test]
    fn env_names_a_path_or_a_name() {
        let a = tempfile::tempdir().unwrap();
        let youki = exe(a.path(), "youki");
        let path = a.path().as_os_str().to_owned();
        let c = candidates();
        let mut l = Lookup {
            named: Some((OsStr::new("youki"), NamedBy::Env)),
            candidates: &c,
            path_var: Some(&path),
            self_id: None,
        };
        assert_eq!(l.find().unwrap(), youki);
        l.named = Some((youki.as_os_str(), NamedBy::Env));
        assert_eq!(l.find().unwrap(), youki);
        l.named = Some((OsStr::new("/nonexistent/runc"), NamedBy::Env));
        assert_eq!(
            l.find().unwrap_err().to_string(),
            "USERNS_HOSTNET_RUNTIME=/nonexistent/runc: not found or not executable"
        );
    }

    #[test]
    fn non_executable_and_missing_are_skipped() {
        let a = tempfile::tempdir().unwrap();
        fs::write(a.path().join("runc"), "").unwrap();
        let path = a.path().as_os_str().to_owned();
        let c = candidates();
        let l = Lookup {
            named: None,
            candidates: &c,
            path_var: Some(&path),
            self_id: None,
        };
        assert_eq!(
            l.find().unwrap_err(),
            LookupError::NoCandidate("runc, crun".into())
        );
    }

    #[test]
    fn the_wrapper_never_finds_itself() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let me = exe(a.path(), "runc");
        let real = exe(b.path(), "runc");
        let path = std::env::join_paths([a.path(), b.path()]).unwrap();
        let c = candidates();
        let mut l = Lookup {
            named: None,
            candidates: &c,
            path_var: Some(&path),
            self_id: FileId::of(&me),
        };
        assert_eq!(l.find().unwrap(), real);
        l.named = Some((me.as_os_str(), NamedBy::Env));
        assert!(matches!(l.find(), Err(LookupError::IsSelf(_))));
        // Under any other name: a link, or a hard link.
        let link = b.path().join("runc-link");
        std::os::unix::fs::symlink(&me, &link).unwrap();
        l.named = Some((link.as_os_str(), NamedBy::Env));
        assert!(matches!(l.find(), Err(LookupError::IsSelf(_))));
        let hard = b.path().join("runc-hard");
        fs::hard_link(&me, &hard).unwrap();
        l.named = Some((hard.as_os_str(), NamedBy::Env));
        assert!(matches!(l.find(), Err(LookupError::IsSelf(_))));
    }

    #[test]
    fn a_handler_link_names_its_runtime() {
        let handlers = tempfile::tempdir().unwrap();
        let dir = handlers.path().join("uhn");
        fs::create_dir(&dir).unwrap();
        let bin = tempfile::tempdir().unwrap();
        let real = exe(bin.path(), "runc-1.4");
        std::os::unix::fs::symlink(&real, dir.join(HANDLER_RUNTIME_LINK)).unwrap();
        let argv0 = dir.join(crate::WRAPPER_NAME);
        let named = named_by_handler_link(argv0.as_os_str(), handlers.path()).unwrap();
        assert_eq!(named, real.as_os_str());
        // Only the wrapper's own name, directly in a handler's directory.
        for other in [
            dir.join("userns-hostnet-runtime-crun"),
            handlers.path().join(crate::WRAPPER_NAME),
            PathBuf::from("uhn").join(crate::WRAPPER_NAME),
            PathBuf::from("/usr/bin/userns-hostnet-runtime"),
        ] {
            assert_eq!(
                named_by_handler_link(other.as_os_str(), handlers.path()),
                None,
                "{other:?}"
            );
        }
        // A relative link resolves against the handler's directory.
        fs::remove_file(dir.join(HANDLER_RUNTIME_LINK)).unwrap();
        std::os::unix::fs::symlink("../../x/runc", dir.join(HANDLER_RUNTIME_LINK)).unwrap();
        assert_eq!(
            named_by_handler_link(argv0.as_os_str(), handlers.path()).unwrap(),
            dir.join("../../x/runc").as_os_str()
        );
        // A missing link: the lookup names the path that cannot be run.
        fs::remove_file(dir.join(HANDLER_RUNTIME_LINK)).unwrap();
        let named = named_by_handler_link(argv0.as_os_str(), handlers.path()).unwrap();
        let c = candidates();
        let l = Lookup {
            named: Some((&named, NamedBy::OwnName)),
            candidates: &c,
            path_var: Some(OsStr::new("/nonexistent")),
            self_id: None,
        };
        assert_eq!(
            l.find().unwrap_err(),
            LookupError::HandlerLinkNotFound(dir.join("runtime").display().to_string())
        );
    }

    #[test]
    fn own_name_carries_the_runtime() {
        assert_eq!(
            named_by_own_name(OsStr::new("/usr/bin/userns-hostnet-runtime-crun")),
            Some(OsString::from("crun"))
        );
        assert_eq!(
            named_by_own_name(OsStr::new("userns-hostnet-runtime")),
            None
        );
        assert_eq!(
            named_by_own_name(OsStr::new("userns-hostnet-runtime-")),
            None
        );
        assert_eq!(named_by_own_name(OsStr::new("/x/runc")), None);
        let c = candidates();
        let l = Lookup {
            named: Some((OsStr::new("no-such-runtime-here"), NamedBy::OwnName)),
            candidates: &c,
            path_var: Some(OsStr::new("/nonexistent")),
            self_id: None,
        };
        assert_eq!(
            l.find().unwrap_err().to_string(),
            "runtime no-such-runtime-here, named by this wrapper's file name, is not an executable in PATH"
        );
    }
}
