//! The daemon binary that serves a config file, and what that binary says
//! of the file. doctor asks the daemon that reads the file (the running
//! process started with it, else the binary named with `--containerd` or
//! `--crio`, else the first in PATH), never merely the first in PATH: a
//! host may carry several containerd builds, and only one reads the file.
//!
//! `containerd config dump` and `crio config` read the file as the daemon
//! does at start, but CRI-O checks the runtime and monitor (conmon)
//! binaries only when it starts for real (its validation "on execution"),
//! so those are checked here against the effective config CRI-O prints.

use super::DaemonModule;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use toml_edit::Item;
use userns_hostnet::sys::deadline::{self, RunError};

/// How long a daemon's config check may take: it reads files only.
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);

/// The PATH a daemon started by systemd has (systemd's default), for a
/// daemon whose own environment cannot be read.
pub const SERVICE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The config file `daemon` reads when started without `--config`.
pub fn default_config(daemon: &dyn DaemonModule) -> &'static str {
    daemon.service().map_or("", |s| s.config)
}

/// The option that names the binary to doctor: `--containerd`.
pub fn flag(daemon: &dyn DaemonModule) -> String {
    format!("--{}", daemon.name())
}

/// How the binary was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The running daemon that reads the file: its PID.
    Running(u32),
    /// Named on the command line.
    Named,
    /// The first in PATH (no running daemon reads the file).
    InPath,
}

/// The daemon binary to ask.
#[derive(Debug, Clone)]
pub struct Binary {
    pub daemon: &'static dyn DaemonModule,
    /// The host path (as shown).
    pub shown: PathBuf,
    /// Where to run it from (under doctor's `--root`).
    pub path: PathBuf,
    pub found: Found,
    /// The PATH the daemon looks binaries up in: the running daemon's
    /// own, else systemd's default.
    pub search_path: String,
    /// `--version`'s first line, when it answers.
    pub version: Option<String>,
}

impl Binary {
    /// "containerd 2.3.4 at /usr/bin/containerd (the running daemon, PID 7)".
    pub fn describe(&self) -> String {
        let how = match &self.found {
            Found::Running(pid) => format!("the running daemon, PID {pid}"),
            Found::Named => format!("{} on the command line", flag(self.daemon)),
            Found::InPath => format!(
                "first in PATH; no running {} that doctor can see reads this file",
                self.daemon.name()
            ),
        };
        let version = self
            .version
            .as_deref()
            .and_then(|v| self.daemon.release(v))
            .map_or(String::new(), |v| format!(" {v}"));
        format!(
            "{}{version} at {} ({how})",
            self.daemon.name(),
            self.shown.display()
        )
    }
}

/// The value of a Go command-line option in an argv: `--name V`,
/// `--name=V`, `-name V`, `-name=V`, and the short form likewise.
pub fn option_value<'a>(argv: &'a [String], long: &str, short: &str) -> Option<&'a str> {
    let mut it = argv.iter().skip(1);
    let mut found = None;
    while let Some(a) = it.next() {
        let Some(bare) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')) else {
            continue;
        };
        let (name, attached) = match bare.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (bare, None),
        };
        if name != long && name != short {
            continue;
        }
        found = match attached {
            Some(v) => Some(v),
            None => it.next().map(String::as_str),
        };
    }
    found
}

/// Lexically normal form of an absolute path (`.` and `..` and doubled
/// slashes gone), to compare a daemon's `--config` with a file.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// Is this command line the daemon serving, not one of its commands
/// (`containerd --version`, `crio config`, run by doctor or install while
/// they look)? urfave/cli runs a subcommand named anywhere among the
/// arguments' first non-flag words, and the version and help flags exit.
pub fn serves(daemon: &dyn DaemonModule, argv: &[String]) -> bool {
    let commands = daemon.config_check().map_or(&[][..], |c| c.commands);
    !argv.iter().skip(1).any(|a| {
        commands.contains(&a.as_str())
            || matches!(
                a.as_str(),
                "-v" | "--version" | "-h" | "--help" | "-version" | "-help"
            )
    })
}

/// The config file a daemon with this command line (`cwd` its working
/// directory) reads, as its own root names it.
fn config_read(daemon: &dyn DaemonModule, argv: &[String], cwd: &Path) -> PathBuf {
    cwd.join(option_value(argv, "config", "c").unwrap_or(default_config(daemon)))
}

/// Whether the file the daemon of `proc_dir` (`/proc/PID`) reads as its
/// config (`theirs`) is `config` (where this process reads it) under
/// another name: a node whose config directory is bound where the
/// daemon's command line names another path, or a config reached through
/// a link. Compared by device and inode, through the daemon's own root.
fn reads_same_file(proc_dir: &Path, theirs: &Path, config: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let theirs = proc_dir
        .join("root")
        .join(theirs.strip_prefix("/").unwrap_or(theirs));
    match (std::fs::metadata(theirs), std::fs::metadata(config)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// A running daemon that reads `config`: its PID, executable (a host
/// path) and PATH. `map` turns a host path into where to read it. The one
/// that reads that very file (by identity, through its own root) comes
/// first: on a machine that runs another daemon of its own, whose command
/// line names the same path in another mount namespace, the node's is
/// found; else the first whose command line names it.
fn running(
    daemon: &dyn DaemonModule,
    config: &Path,
    map: &dyn Fn(&Path) -> PathBuf,
) -> Option<(u32, PathBuf, String)> {
    let proc = map(Path::new("/proc"));
    let mut named = None;
    for pid in crate::daemon::node::process_ids(&proc)? {
        let dir = proc.join(pid.to_string());
        let Some((exe, argv)) = daemon_process(&dir, daemon) else {
            continue;
        };
        let cwd = std::fs::read_link(dir.join("cwd")).unwrap_or_else(|_| PathBuf::from("/"));
        let theirs = config_read(daemon, &argv, &cwd);
        let same = reads_same_file(&dir, &theirs, &map(config));
        if !same && (named.is_some() || normal(&theirs) != normal(config)) {
            continue;
        }
        let path = std::fs::read(dir.join("environ"))
            .ok()
            .and_then(|env| {
                env.split(|b| *b == 0)
                    .find_map(|v| v.strip_prefix(b"PATH="))
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            })
            .unwrap_or_else(|| SERVICE_PATH.to_owned());
        if same {
            return Some((pid, exe, path));
        }
        named = Some((pid, exe, path));
    }
    named
}

/// The executable and command line of process `dir` (`/proc/PID`) when it
/// is `daemon` serving (not one of its subcommands).
fn daemon_process(dir: &Path, daemon: &dyn DaemonModule) -> Option<(PathBuf, Vec<String>)> {
    let exe = std::fs::read_link(dir.join("exe")).ok()?;
    let exe_text = exe.to_string_lossy();
    // A binary replaced on disk since it started: the name remains.
    let exe = PathBuf::from(exe_text.strip_suffix(" (deleted)").unwrap_or(&exe_text));
    if exe.file_name()? != daemon.name() {
        return None;
    }
    let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
    let argv: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    serves(daemon, &argv).then_some((exe, argv))
}

/// The running daemon that reads `config` (a host path), by pid, with its
/// start time in clock ticks since boot (`/proc/PID/stat`).
pub fn started(
    daemon: &dyn DaemonModule,
    config: &Path,
    map: &dyn Fn(&Path) -> PathBuf,
) -> Option<(u32, u64)> {
    let (pid, _, _) = running(daemon, config, map)?;
    let stat = std::fs::read(map(Path::new("/proc")).join(pid.to_string()).join("stat")).ok()?;
    Some((pid, userns_hostnet::records::start_time(&stat)?))
}

/// The first executable file `name` in the directories of `path`.
pub fn look_path(name: &str, path: &str, map: &dyn Fn(&Path) -> PathBuf) -> Option<PathBuf> {
    path.split(':')
        .filter(|d| d.starts_with('/'))
        .map(|d| Path::new(d).join(name))
        .find(|p| executable(&map(p)).is_ok())
}

/// Is `path` an executable file? Why not, when it is not.
pub fn executable(path: &Path) -> Result<(), &'static str> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err("does not exist"),
        Err(_) => Err("cannot be read"),
        Ok(m) if !m.is_file() => Err("is not a file"),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err("is not executable"),
        Ok(_) => Ok(()),
    }
}

/// The binary that serves `config` (a host path): the running daemon
/// that reads it, else `named`, else the first in `path_env`.
pub fn find(
    daemon: &'static dyn DaemonModule,
    config: &Path,
    named: Option<&Path>,
    path_env: &str,
    map: &dyn Fn(&Path) -> PathBuf,
) -> Option<Binary> {
    let (shown, found, search_path) = if let Some((pid, exe, path)) = running(daemon, config, map) {
        (exe, Found::Running(pid), path)
    } else if let Some(n) = named {
        (n.to_owned(), Found::Named, SERVICE_PATH.to_owned())
    } else {
        let p = look_path(daemon.name(), path_env, map)?;
        (p, Found::InPath, SERVICE_PATH.to_owned())
    };
    let path = map(&shown);
    let version = deadline::run(
        &path,
        "--version",
        Instant::now() + userns_hostnet::probe::PROBE_TIMEOUT,
    )
    .ok()
    .filter(|o| o.status.success())
    .and_then(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .map(|l| l.trim().to_owned())
    });
    Some(Binary {
        daemon,
        shown,
        path,
        found,
        search_path,
        version,
    })
}

/// What the daemon's own check said.
#[derive(Debug)]
pub enum Verdict {
    /// It accepts the file: the effective config it printed.
    Accepts(String),
    /// It refuses the file: its message, on one line.
    Refuses(String),
    /// It could not be asked.
    NotRun(String),
}

/// Ask the daemon's own config check: `containerd --config F config dump`,
/// `crio --config F --config-dir D config`.
pub fn check_config(bin: &Binary, config: &Path, config_dir: Option<&Path>) -> Verdict {
    use std::ffi::OsStr;
    let mut args: Vec<&OsStr> = vec![OsStr::new("--config"), config.as_os_str()];
    if let Some(d) = config_dir {
        args.extend([OsStr::new("--config-dir"), d.as_os_str()]);
    }
    let verb = bin.daemon.config_check().map_or("", |c| c.verb);
    args.extend(verb.split_whitespace().map(OsStr::new));
    let (Ok(out), Ok(err)) = (memfd("stdout"), memfd("stderr")) else {
        return Verdict::NotRun("cannot make a buffer for its output".to_owned());
    };
    let (Ok(out2), Ok(err2)) = (out.try_clone(), err.try_clone()) else {
        return Verdict::NotRun("cannot make a buffer for its output".to_owned());
    };
    let status = deadline::run_status(
        &bin.path,
        &args,
        Stdio::from(out2),
        Stdio::from(err2),
        Instant::now() + CHECK_TIMEOUT,
    );
    let read = |f: std::fs::File| {
        use std::io::{Read, Seek};
        let mut f = f;
        let mut s = String::new();
        let _ = f.rewind();
        let _ = f.take(deadline::MAX_OUTPUT as u64).read_to_string(&mut s);
        s
    };
    match status {
        Ok(s) if s.success() => Verdict::Accepts(read(out)),
        Ok(s) => {
            let said = one_line(&read(err));
            Verdict::Refuses(if said.is_empty() {
                format!("it exits with {s} and says nothing")
            } else {
                said
            })
        }
        Err(RunError::Timeout) => Verdict::NotRun("it did not answer in time".to_owned()),
        Err(e) => Verdict::NotRun(e.to_string()),
    }
}

/// An anonymous in-memory file.
fn memfd(name: &str) -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    let name = std::ffi::CString::new(name).unwrap_or_default();
    // SAFETY: a plain system call with a valid C string; the descriptor
    // it returns is owned by the File alone.
    let fd = unsafe { nix::libc::memfd_create(name.as_ptr(), nix::libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor no one else owns.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// A daemon's error output on one line: a logrus line gives its `msg`,
/// info and warning lines are left out, the rest joined with "; ".
pub fn one_line(stderr: &str) -> String {
    const MAX: usize = 600;
    let mut parts: Vec<String> = Vec::new();
    for line in stderr.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let level = logrus_field(line, "level");
        if matches!(
            level.as_deref(),
            Some("info" | "debug" | "trace" | "warning")
        ) {
            continue;
        }
        let text = logrus_field(line, "msg").unwrap_or_else(|| line.to_owned());
        if !parts.contains(&text) {
            parts.push(text);
        }
    }
    let mut s = parts.join("; ");
    if s.len() > MAX {
        let mut cut = MAX;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

/// A `key=value` or `key="quoted value"` field of a logrus text line.
fn logrus_field(line: &str, key: &str) -> Option<String> {
    let at = line
        .match_indices(&format!("{key}="))
        .find(|(i, _)| *i == 0 || line.as_bytes()[i - 1] == b' ')?
        .0;
    let rest = &line[at + key.len() + 1..];
    if let Some(quoted) = rest.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = quoted.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(chars.next()?),
                '"' => return Some(out),
                c => out.push(c),
            }
        }
        Some(out)
    } else {
        Some(rest.split(' ').next().unwrap_or("").to_owned())
    }
}

/// A binary a daemon's handler needs that is not there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub handler: String,
    /// What the binary is: "runtime_path", "monitor_path", "BinaryName".
    pub role: &'static str,
    /// The path, or for a lookup the name and the PATH searched.
    pub what: String,
    pub why: &'static str,
    /// The daemon will not start (else: the handler alone is lost).
    pub fatal: bool,
}

impl Missing {
    pub fn sentence(&self) -> String {
        let why = if self.why.is_empty() {
            String::new()
        } else {
            format!(" {}", self.why)
        };
        format!("handler {}: {} {}{why}", self.handler, self.role, self.what)
    }
}

/// The item of a table at `key`, as a string.
pub fn str_at<'a>(t: &'a dyn toml_edit::TableLike, key: &str) -> Option<&'a str> {
    t.get(key).and_then(Item::as_str)
}

/// `path` when set must be an executable file; when empty, `name` must be
/// found in `search_path`.
pub fn binary_missing(
    handler: &str,
    role: &'static str,
    path: &str,
    name: &str,
    search_path: &str,
    map: &dyn Fn(&Path) -> PathBuf,
) -> Option<Missing> {
    let (what, why) = if path.is_empty() {
        if look_path(name, search_path, map).is_some() {
            return None;
        }
        (
            format!("is unset and {name:?} is not in the daemon's PATH ({search_path})"),
            "",
        )
    } else {
        match executable(&map(Path::new(path))) {
            Ok(()) => return None,
            Err(why) => (path.to_owned(), why),
        }
    };
    Some(Missing {
        handler: handler.to_owned(),
        role,
        what,
        why,
        fatal: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads_same_file(
        proc_dir: &Path,
        daemon: &dyn DaemonModule,
        argv: &[String],
        cwd: &Path,
        config: &Path,
    ) -> bool {
        super::reads_same_file(proc_dir, &config_read(daemon, argv, cwd), config)
    }

    fn reads_config(daemon: &dyn DaemonModule, argv: &[String], cwd: &Path, config: &Path) -> bool {
        normal(&config_read(daemon, argv, cwd)) == normal(config)
    }

    /// A daemon of the registry, by name.
    fn daemon(name: &str) -> &'static dyn DaemonModule {
        crate::daemon::named(name).expect("a daemon of the registry")
    }

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn option_values_in_every_go_spelling() {
        for line in [
            "containerd --config /a.toml",
            "containerd --config=/a.toml",
            "containerd -c /a.toml",
            "containerd -config /a.toml --log-level debug",
            "containerd -c=/a.toml",
        ] {
            assert_eq!(
                option_value(&argv(line), "config", "c"),
                Some("/a.toml"),
                "{line}"
            );
        }
        assert_eq!(
            option_value(&argv("containerd --log-level debug"), "config", "c"),
            None
        );
        assert_eq!(
            option_value(&argv("crio -d /x --config-dir /y"), "config-dir", "d"),
            Some("/y")
        );
    }

    #[test]
    fn a_command_of_the_daemon_binary_is_not_the_daemon() {
        for line in [
            "containerd --version",
            "containerd -v",
            "containerd config dump",
            "containerd --config /a.toml config migrate",
            "containerd --help",
        ] {
            assert!(!serves(daemon("containerd"), &argv(line)), "{line}");
        }
        for line in [
            "crio version",
            "crio --config /a config",
            "crio wipe",
            "crio -v",
        ] {
            assert!(!serves(daemon("crio"), &argv(line)), "{line}");
        }
        for line in [
            "containerd",
            "containerd --config /etc/containerd/config.toml --log-level debug",
        ] {
            assert!(serves(daemon("containerd"), &argv(line)), "{line}");
        }
        assert!(serves(daemon("crio"), &argv("crio --log-level info")));
    }

    #[test]
    fn a_daemon_reading_the_same_file_by_another_name_serves_it() {
        let t = tempfile::tempdir().unwrap();
        // The daemon's root (what /proc/PID/root leads to) and its config.
        let root = t.path().join("root");
        std::fs::create_dir_all(root.join("srv/node")).unwrap();
        std::fs::write(root.join("srv/node/config.toml"), "version = 2\n").unwrap();
        let proc_dir = t.path().join("proc-1");
        std::fs::create_dir(&proc_dir).unwrap();
        std::os::unix::fs::symlink(&root, proc_dir.join("root")).unwrap();
        // Where this process reads the node's config: the same file.
        std::fs::create_dir_all(t.path().join("etc/containerd")).unwrap();
        let ours = t.path().join("etc/containerd/config.toml");
        std::fs::hard_link(root.join("srv/node/config.toml"), &ours).unwrap();
        let line = argv("containerd --config /srv/node/config.toml");
        assert!(!reads_config(
            daemon("containerd"),
            &line,
            Path::new("/"),
            &ours
        ));
        assert!(reads_same_file(
            &proc_dir,
            daemon("containerd"),
            &line,
            Path::new("/"),
            &ours
        ));
        // Relative to its working directory, as it opens it.
        let rel = argv("containerd -c node/config.toml");
        assert!(reads_same_file(
            &proc_dir,
            daemon("containerd"),
            &rel,
            Path::new("/srv"),
            &ours
        ));
        // Another file of the same text is another file.
        let other = t.path().join("other.toml");
        std::fs::write(&other, "version = 2\n").unwrap();
        assert!(!reads_same_file(
            &proc_dir,
            daemon("containerd"),
            &line,
            Path::new("/"),
            &other
        ));
        assert!(!reads_same_file(
            &proc_dir,
            daemon("containerd"),
            &argv("containerd --config /missing.toml"),
            Path::new("/"),
            &ours
        ));
    }

    #[test]
    fn a_daemon_without_config_reads_its_default() {
        let root = Path::new("/");
        assert!(reads_config(
            daemon("containerd"),
            &argv("containerd"),
            root,
            Path::new("/etc/containerd/config.toml")
        ));
        assert!(!reads_config(
            daemon("containerd"),
            &argv("containerd"),
            root,
            Path::new("/srv/c.toml")
        ));
        assert!(reads_config(
            daemon("crio"),
            &argv("crio --config ../srv/./c.conf"),
            Path::new("/tmp"),
            Path::new("/srv/c.conf")
        ));
        assert!(reads_config(
            daemon("crio"),
            &argv("crio"),
            root,
            Path::new("/etc/crio/crio.conf")
        ));
    }

    #[test]
    fn one_line_keeps_the_errors_only() {
        let said = "time=\"2026\" level=info msg=\"Updating config\"\n\
time=\"2026\" level=fatal msg=\"validating runtime config: monitor fields translation: failed: exec: \\\"conmon\\\": executable file not found in $PATH\"\n";
        assert_eq!(
            one_line(said),
            "validating runtime config: monitor fields translation: failed: exec: \"conmon\": executable file not found in $PATH"
        );
        assert_eq!(
            one_line("time=\"x\" level=error msg=\"containerd config version `4` is not supported\"\ncontainerd: failed to load TOML from c.toml: unsupported config version `4`\n"),
            "containerd config version `4` is not supported; containerd: failed to load TOML from c.toml: unsupported config version `4`"
        );
    }
}
