//! The operator's config file, `/etc/userns-hostnet/config.toml` (or the
//! file named by `USERNS_HOSTNET_CONFIG`). A missing file means the
//! defaults, which are the safe choices. Anything the file says that is not
//! understood is an error, never ignored: a misspelt key must not quietly
//! leave a policy weaker than the operator meant.
//!
//! The file names a binary that runs as root, so it is honoured only when
//! nobody but root can change it, as sudo and OpenSSH's StrictModes ask of
//! theirs: the file owned by root and writable by neither group nor others
//! (checked on the opened descriptor), and so is every directory from `/`
//! to it, on the path as named and on its real path (links resolved: a
//! link in a directory others can write could be pointed elsewhere),
//! except that a root-owned sticky
//! directory such as `/tmp` may be writable by all, since others cannot
//! rename or remove a file there they do not own. A process that is not
//! root (rootless podman) may also trust its own files: they let it run
//! nothing it could not run anyway.

use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::ffi::OsString;
use std::fmt;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use userns_hostnet_engine::policy::{IdmapPolicy, NetCapabilities, NetSysctls, SysfsFallback};
use userns_hostnet_engine::Policy;

/// The environment variable naming another config file.
pub const CONFIG_ENV: &str = "USERNS_HOSTNET_CONFIG";
/// Where the config file lives unless `USERNS_HOSTNET_CONFIG` says otherwise.
pub const DEFAULT_PATH: &str = "/etc/userns-hostnet/config.toml";
/// The shipped config file (packaging/config.toml): every setting at its
/// default, commented; `config default` prints it and deploy installs it.
pub const SHIPPED: &str = include_str!("../packaging/config.toml");
/// The tool's own log, where decisions are recorded.
pub const DEFAULT_LOG_FILE: &str = "/var/log/userns-hostnet.log";

/// The words `log.level` accepts, in any case.
pub const LOG_LEVELS: &[&str] = &["error", "warn", "info", "debug", "trace"];

/// How much goes into the log, from `log.level`: read once, with the
/// config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Level {
    Error,
    Warn,
    #[default]
    Info,
    /// `debug` and `trace`: the log has nothing finer than info lines.
    Debug,
}

impl Level {
    /// One of [`LOG_LEVELS`], in any case.
    pub fn from_word(word: &str) -> Option<Level> {
        match word.to_ascii_lowercase().as_str() {
            "error" => Some(Level::Error),
            "warn" => Some(Level::Warn),
            "info" => Some(Level::Info),
            "debug" | "trace" => Some(Level::Debug),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Level, D::Error> {
        let word = String::deserialize(d)?;
        Level::from_word(&word).ok_or_else(|| {
            de::Error::custom(format!(
                "unknown level \"{word}\", expected one of {}",
                LOG_LEVELS
                    .iter()
                    .map(|l| format!("\"{l}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }
}

/// The `[log]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    #[serde(deserialize_with = "absolute")]
    pub file: PathBuf,
    pub level: Level,
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            file: PathBuf::from(DEFAULT_LOG_FILE),
            level: Level::Info,
        }
    }
}

/// The node's config file (`/etc/userns-hostnet/config.toml`) as read, or
/// the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeConfig {
    /// The real runtime: names (looked up in PATH) or paths, tried in order.
    pub runtime: Vec<String>,
    pub policy: Policy,
    pub log: LogSettings,
    /// The file this was read from; `None` for the defaults.
    pub source: Option<PathBuf>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        File::default().into_config(None)
    }
}

/// Why the config file could not be used. Displayed on one line, starting
/// with the file (and the line, when the problem has one).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Not a regular file (a directory, a FIFO, a device).
    #[error("{}: not a regular file", path.display())]
    NotRegular { path: PathBuf },
    /// Someone other than root could change the file, or replace it: the
    /// runtime it names would run as root on their word.
    #[error("{}: not trusted: {reason}; fix: {}", path.display(), reason.fix(path))]
    Untrusted { path: PathBuf, reason: Distrust },
    /// The file was read but says something invalid.
    #[error("{}{}: {message}", path.display(), Where { line: *line, key: key.as_deref() })]
    Invalid {
        path: PathBuf,
        /// 1-based, when the problem sits on a line.
        line: Option<usize>,
        /// The setting, as a dotted path (`capabilities.net`), when known.
        key: Option<String>,
        message: String,
    },
}

/// Who besides root could change the config file, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Distrust {
    #[error("owned by uid {uid}, not root")]
    FileOwner { uid: u32 },
    #[error("writable by {} (mode {mode:04o})", writers(*mode))]
    FileWritable { mode: u32 },
    #[error("its directory {} is owned by uid {uid}, not root", dir.display())]
    DirOwner { dir: PathBuf, uid: u32 },
    #[error(
        "its directory {} is writable by {} (mode {mode:04o}), who could replace the file",
        dir.display(),
        writers(*mode)
    )]
    DirWritable { dir: PathBuf, mode: u32 },
}

impl Distrust {
    /// The commands that make `file` trusted again.
    pub fn fix(&self, file: &Path) -> String {
        let target = match self {
            Distrust::FileOwner { .. } | Distrust::FileWritable { .. } => file,
            Distrust::DirOwner { dir, .. } | Distrust::DirWritable { dir, .. } => dir,
        };
        let t = target.display();
        format!("chown root:root {t}; chmod go-w {t}")
    }
}

/// "group", "others" or "group and others", for a mode with one of 022.
fn writers(mode: u32) -> &'static str {
    match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => "group and others",
        (true, false) => "group",
        _ => "others",
    }
}

/// Whether an owner may be trusted: root, or the user this process runs
/// as (`me`), who gains nothing by naming its own runtime.
fn trusted_owner(uid: u32, me: u32) -> bool {
    uid == 0 || uid == me
}

/// The config file itself, from its owner and mode (`st_uid`, `st_mode`),
/// for a process running as `me` (its effective uid).
pub fn check_file(uid: u32, mode: u32, me: u32) -> Result<(), Distrust> {
    if !trusted_owner(uid, me) {
        return Err(Distrust::FileOwner { uid });
    }
    if mode & 0o022 != 0 {
        return Err(Distrust::FileWritable {
            mode: mode & 0o7777,
        });
    }
    Ok(())
}

/// A directory on the way to the config file: owned by root (or `me`) and
/// not writable by group or others, unless sticky (others then cannot
/// rename or remove a file they do not own).
pub fn check_dir(dir: &Path, uid: u32, mode: u32, me: u32) -> Result<(), Distrust> {
    if !trusted_owner(uid, me) {
        return Err(Distrust::DirOwner {
            dir: dir.to_owned(),
            uid,
        });
    }
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(Distrust::DirWritable {
            dir: dir.to_owned(),
            mode: mode & 0o7777,
        });
    }
    Ok(())
}

/// The opened config file (its metadata from the descriptor), then every
/// directory of the path as named, then those of its real path, each from
/// `/` down.
fn check_trust(path: &Path, meta: &std::fs::Metadata) -> Result<(), ConfigError> {
    let me = nix::unistd::geteuid().as_raw();
    let untrusted = |reason| ConfigError::Untrusted {
        path: path.to_owned(),
        reason,
    };
    check_file(meta.uid(), meta.mode(), me).map_err(untrusted)?;
    let read_err = |source| ConfigError::Read {
        path: path.to_owned(),
        source,
    };
    let named = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().map_err(read_err)?.join(path)
    };
    let real = crate::sys::realpath::realpath(path).map_err(read_err)?;
    let mut dirs: Vec<&Path> = named.ancestors().skip(1).collect();
    dirs.reverse();
    let mut real_dirs: Vec<&Path> = real.ancestors().skip(1).collect();
    real_dirs.reverse();
    real_dirs.retain(|d| !dirs.contains(d));
    dirs.extend(real_dirs);
    for dir in dirs {
        let m = std::fs::metadata(dir).map_err(|source| ConfigError::Read {
            path: dir.to_owned(),
            source,
        })?;
        check_dir(dir, m.uid(), m.mode(), me).map_err(untrusted)?;
    }
    Ok(())
}

/// `:LINE` and `: KEY` of an invalid setting, each when known.
struct Where<'a> {
    line: Option<usize>,
    key: Option<&'a str>,
}

impl fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = self.key {
            write!(f, ": {key}")?;
        }
        Ok(())
    }
}

/// The config file to read: `USERNS_HOSTNET_CONFIG` if set and not empty,
/// else [`DEFAULT_PATH`].
pub fn path_from_env() -> PathBuf {
    path_from(std::env::var_os(CONFIG_ENV))
}

fn path_from(var: Option<OsString>) -> PathBuf {
    match var {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from(DEFAULT_PATH),
    }
}

/// Read the config file named by the environment, or the defaults when
/// there is no such file.
pub fn load() -> Result<NodeConfig, ConfigError> {
    load_from(&path_from_env())
}

/// Read `path`; the defaults when it does not exist.
pub fn load_from(path: &Path) -> Result<NodeConfig, ConfigError> {
    let read_err = |source| ConfigError::Read {
        path: path.to_owned(),
        source,
    };
    // O_NONBLOCK: a FIFO put where the file should be must not hang
    // container starts. std opens close-on-exec.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(NodeConfig::default()),
        Err(e) => return Err(read_err(e)),
    };
    let meta = file.metadata().map_err(read_err)?;
    if !meta.is_file() {
        return Err(ConfigError::NotRegular {
            path: path.to_owned(),
        });
    }
    check_trust(path, &meta)?;
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(read_err)?;
    parse(&text, path)
}

/// Parse the text of a config file; `origin` names it in errors and
/// becomes [`NodeConfig::source`].
pub fn parse(text: &str, origin: &Path) -> Result<NodeConfig, ConfigError> {
    let file: File =
        serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            ConfigError::Invalid {
                path: origin.to_owned(),
                line: inner.span().map(|s| line_of(text, s.start)),
                // serde_path_to_error names the document root ".".
                key: (!path.is_empty() && path != ".").then_some(path),
                message: one_line(inner.message()),
            }
        })?;
    Ok(file.into_config(Some(origin)))
}

/// The 1-based line holding byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    1 + text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The parser's message on one line, quoting with `"` as TOML does.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
        .replace('`', "\"")
}

// The file as written: its sections, holding the engine's own policy
// types. Every table rejects keys it does not know; a missing key or
// section keeps its default.

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct File {
    #[serde(deserialize_with = "runtimes")]
    runtime: Runtimes,
    sysfs: SysfsSection,
    capabilities: NetSection<NetCapabilities>,
    sysctl: NetSection<NetSysctls>,
    idmap: IdmapPolicy,
    cgroup: CgroupSection,
    log: LogSettings,
}

impl File {
    fn into_config(self, origin: Option<&Path>) -> NodeConfig {
        NodeConfig {
            runtime: self.runtime.0,
            policy: Policy {
                sysfs_fallback: self.sysfs.fallback,
                net_capabilities: self.capabilities.net,
                net_sysctls: self.sysctl.net,
                own_cgroup_view: self.cgroup.own_view,
                allow_writable_cgroup_v1: self.cgroup.allow_writable_v1,
                idmap: self.idmap,
            },
            log: self.log,
            source: origin.map(Path::to_owned),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct SysfsSection {
    fallback: SysfsFallback,
}

/// `[capabilities]` and `[sysctl]`: one `net` setting each.
#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct NetSection<T: Default> {
    net: T,
}

#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct CgroupSection {
    own_view: bool,
    allow_writable_v1: bool,
}

impl Default for CgroupSection {
    fn default() -> Self {
        CgroupSection {
            own_view: Policy::default().own_cgroup_view,
            allow_writable_v1: Policy::default().allow_writable_cgroup_v1,
        }
    }
}

/// `runtime`: the candidates, by default those of
/// [`crate::runtime::DEFAULT_CANDIDATES`].
struct Runtimes(Vec<String>);

impl Default for Runtimes {
    fn default() -> Self {
        Runtimes(
            crate::runtime::DEFAULT_CANDIDATES
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        )
    }
}

/// `runtime`: one name or path, or a list of them.
fn runtimes<'de, D: Deserializer<'de>>(d: D) -> Result<Runtimes, D::Error> {
    struct Visitor;

    impl<'de> de::Visitor<'de> for Visitor {
        type Value = Vec<String>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a runtime name or path, or a list of them")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<String>, E> {
            Ok(vec![v.to_owned()])
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut out = Vec::new();
            while let Some(v) = seq.next_element::<String>()? {
                out.push(v);
            }
            Ok(out)
        }
    }

    let list = d.deserialize_any(Visitor)?;
    if list.is_empty() {
        return Err(de::Error::custom("lists no runtime"));
    }
    if list.iter().any(|r| r.is_empty() || r.contains('\0')) {
        return Err(de::Error::custom(
            "a runtime must be a name or a path, not empty",
        ));
    }
    Ok(Runtimes(list))
}

fn absolute<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    let file = PathBuf::deserialize(d)?;
    if file.is_absolute() {
        Ok(file)
    } else {
        Err(de::Error::custom(format!(
            "\"{}\" is not an absolute path",
            file.display()
        )))
    }
}

#[cfg(test)]
mod tests;
