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
    let real = std::fs::canonicalize(path).map_err(read_err)?;
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
mod tests {
    use super::*;
    use userns_hostnet_engine::policy::{AllowedRanges, IdRange};

    fn origin() -> &'static Path {
        Path::new("/etc/userns-hostnet/config.toml")
    }

    fn err(text: &str) -> String {
        parse(text, origin()).unwrap_err().to_string()
    }

    fn without_source(mut c: NodeConfig) -> NodeConfig {
        c.source = None;
        c
    }

    #[test]
    fn missing_file_means_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let c = load_from(&dir.path().join("config.toml")).unwrap();
        assert_eq!(c, NodeConfig::default());
        assert_eq!(c.source, None);
        assert_eq!(c.runtime, ["runc", "crun"]);
        assert_eq!(c.log.file, Path::new("/var/log/userns-hostnet.log"));
        assert_eq!(c.log.level, Level::Info);
        assert_eq!(c.policy, Policy::default());
    }

    #[test]
    fn empty_file_means_defaults_with_its_source() {
        let c = parse("", origin()).unwrap();
        assert_eq!(c.source.as_deref(), Some(origin()));
        assert_eq!(without_source(c), NodeConfig::default());
    }

    #[test]
    fn every_setting_is_read() {
        let text = r#"
runtime = ["/usr/local/bin/youki", "crun"]
[sysfs]
fallback = "ro"
[capabilities]
net = "refuse"
[sysctl]
net = "drop"
[idmap]
allow_host_root = true
allowed_ranges = { uid = [{ start = 100000, size = 65536 }], gid = [{ start = 200000, size = 10 }, { start = 300000, size = 1 }] }
require_process_user_mapped = false
[cgroup]
own_view = false
allow_writable_v1 = true
[log]
file = "/tmp/u.log"
level = "debug"
"#;
        let c = parse(text, origin()).unwrap();
        assert_eq!(
            c,
            NodeConfig {
                runtime: vec!["/usr/local/bin/youki".into(), "crun".into()],
                policy: Policy {
                    sysfs_fallback: SysfsFallback::Ro,
                    net_capabilities: NetCapabilities::Refuse,
                    net_sysctls: NetSysctls::Drop,
                    own_cgroup_view: false,
                    allow_writable_cgroup_v1: true,
                    idmap: IdmapPolicy {
                        allow_host_root: true,
                        allowed_ranges: AllowedRanges::Explicit {
                            uid: vec![IdRange {
                                start: 100000,
                                size: 65536
                            }],
                            gid: vec![
                                IdRange {
                                    start: 200000,
                                    size: 10
                                },
                                IdRange {
                                    start: 300000,
                                    size: 1
                                }
                            ],
                        },
                        require_process_user_mapped: false,
                    },
                },
                log: LogSettings {
                    file: "/tmp/u.log".into(),
                    level: Level::Debug,
                },
                source: Some(origin().to_owned()),
            }
        );
    }

    #[test]
    fn each_enum_value_is_read() {
        let get = |t: &str| parse(t, origin()).unwrap().policy;
        assert_eq!(
            get("[sysfs]\nfallback = \"refuse\"").sysfs_fallback,
            SysfsFallback::Refuse
        );
        assert_eq!(
            get("[capabilities]\nnet = \"drop\"").net_capabilities,
            NetCapabilities::Drop
        );
        assert_eq!(
            get("[capabilities]\nnet = \"keep\"").net_capabilities,
            NetCapabilities::Keep
        );
        assert_eq!(
            get("[sysctl]\nnet = \"refuse\"").net_sysctls,
            NetSysctls::Refuse
        );
        assert_eq!(
            get("[idmap]\nallowed_ranges = { subid_user = \"kubelet\" }")
                .idmap
                .allowed_ranges,
            AllowedRanges::SubidUser("kubelet".into())
        );
        let levels = [
            Level::Error,
            Level::Warn,
            Level::Info,
            Level::Debug,
            Level::Debug,
        ];
        assert_eq!(LOG_LEVELS.len(), levels.len());
        for (word, level) in LOG_LEVELS.iter().zip(levels) {
            let c = parse(&format!("[log]\nlevel = \"{word}\""), origin()).unwrap();
            assert_eq!(c.log.level, level, "{word}");
        }
        let c = parse("[log]\nlevel = \"WARN\"", origin()).unwrap();
        assert_eq!(c.log.level, Level::Warn);
    }

    #[test]
    fn runtime_is_a_string_or_a_list() {
        let get = |t: &str| parse(t, origin()).unwrap().runtime;
        assert_eq!(get("runtime = \"crun\""), ["crun"]);
        assert_eq!(
            get("runtime = \"/usr/local/bin/youki\""),
            ["/usr/local/bin/youki"]
        );
        assert_eq!(get("runtime = [\"crun\"]"), ["crun"]);
        assert_eq!(get("runtime = [\"crun\", \"runc\"]"), ["crun", "runc"]);
        assert_eq!(
            err("runtime = []"),
            "/etc/userns-hostnet/config.toml:1: runtime: lists no runtime"
        );
        assert_eq!(
            err("runtime = \"\""),
            "/etc/userns-hostnet/config.toml:1: runtime: a runtime must be a name or a path, not empty"
        );
        assert_eq!(
            err("\nruntime = 3"),
            "/etc/userns-hostnet/config.toml:2: runtime: invalid type: integer \"3\", expected a runtime name or path, or a list of them"
        );
        assert_eq!(
            err("runtime = [\"runc\", 3]"),
            "/etc/userns-hostnet/config.toml:1: runtime[1]: invalid type: integer \"3\", expected a string"
        );
    }

    #[test]
    fn unknown_value_names_file_line_and_key() {
        let text = "runtime = \"runc\"\n\n# comment\n\n[capabilities]\n\nnet = \"dorp\"\n";
        assert_eq!(
            err(text),
            r#"/etc/userns-hostnet/config.toml:7: capabilities.net: unknown variant "dorp", expected one of "drop", "keep", "refuse""#
        );
        assert_eq!(
            err("[sysfs]\nfallback = \"rro\""),
            r#"/etc/userns-hostnet/config.toml:2: sysfs.fallback: unknown variant "rro", expected "refuse" or "ro""#
        );
        assert_eq!(
            err("[sysctl]\nnet = \"keep\""),
            r#"/etc/userns-hostnet/config.toml:2: sysctl.net: unknown variant "keep", expected "refuse" or "drop""#
        );
        assert_eq!(
            err("[cgroup]\nown_view = \"yes\""),
            r#"/etc/userns-hostnet/config.toml:2: cgroup.own_view: invalid type: string "yes", expected a boolean"#
        );
        assert_eq!(
            err("[log]\n\nlevel = \"verbose\""),
            r#"/etc/userns-hostnet/config.toml:3: log.level: unknown level "verbose", expected one of "error", "warn", "info", "debug", "trace""#
        );
        assert_eq!(
            err("[log]\nfile = \"userns.log\""),
            r#"/etc/userns-hostnet/config.toml:2: log.file: "userns.log" is not an absolute path"#
        );
    }

    #[test]
    fn unknown_keys_are_errors() {
        assert_eq!(
            err("[sysfs]\nfallback = \"refuse\"\nfalback = \"ro\"\n"),
            r#"/etc/userns-hostnet/config.toml:3: sysfs.falback: unknown field "falback", expected "fallback""#
        );
        assert_eq!(
            err("runtimes = \"crun\""),
            r#"/etc/userns-hostnet/config.toml:1: runtimes: unknown field "runtimes", expected one of "runtime", "sysfs", "capabilities", "sysctl", "idmap", "cgroup", "log""#
        );
        assert_eq!(
            err("[idmaps]\nallow_host_root = false"),
            r#"/etc/userns-hostnet/config.toml:1: idmaps: unknown field "idmaps", expected one of "runtime", "sysfs", "capabilities", "sysctl", "idmap", "cgroup", "log""#
        );
        // A setting written before its section lands at the top level.
        assert!(err("net = \"keep\"\n[capabilities]\n")
            .starts_with(r#"/etc/userns-hostnet/config.toml:1: net: unknown field "net""#));
        assert!(err("[idmap]\nallowed_ranges = { uid = [{ start = 1, size = 1, end = 2 }], gid = [] }")
            .starts_with(r#"/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.uid[0].end: unknown field "end""#));
        assert!(err("[idmap]\nallowed_ranges = { subid_users = \"k\" }")
            .starts_with(r#"/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.subid_users: unknown field "subid_users""#));
    }

    #[test]
    fn bad_ranges_are_refused_clearly() {
        let ranges = |v: &str| err(&format!("[idmap]\nallowed_ranges = {v}\n"));
        assert_eq!(
            ranges("{ uid = [{ start = 100000, size = 0 }], gid = [{ start = 1, size = 1 }] }"),
            "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.uid[0]: range at 100000 has size 0"
        );
        assert_eq!(
            ranges("{ uid = [{ start = 1, size = 1 }], gid = [{ start = 4294967295, size = 2 }] }"),
            "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.gid[0]: range of 2 IDs at 4294967295 goes past the highest ID, 4294967295"
        );
        assert_eq!(
            ranges("{ uid = [{ start = 9223372036854775807, size = 1 }], gid = [{ start = 1, size = 1 }] }"),
            "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.uid[0]: range of 1 IDs at 9223372036854775807 goes past the highest ID, 4294967295"
        );
        assert!(ranges("{ uid = [{ start = -1, size = 1 }], gid = [] }").starts_with(
            "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.uid[0].start: invalid value: integer \"-1\""
        ));
        assert_eq!(
            ranges("{ uid = [{ start = 1 }], gid = [] }"),
            r#"/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.uid[0]: missing field "size""#
        );
        assert_eq!(
            ranges("{ uid = [{ start = 1, size = 1 }] }"),
            "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges: give both the uid and the gid lists"
        );
        assert_eq!(
            ranges("{ uid = [], gid = [] }"),
            "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges: an empty uid or gid list would refuse every container; remove allowed_ranges to allow any range"
        );
        assert_eq!(
            ranges("{ subid_user = \"kubelet\", uid = [{ start = 1, size = 1 }], gid = [{ start = 1, size = 1 }] }"),
            "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges: give either subid_user or the uid and gid lists, not both"
        );
        assert_eq!(
            ranges("{}"),
            "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges: empty: give subid_user, or the uid and gid lists, or remove allowed_ranges to allow any range"
        );
        assert_eq!(
            ranges("{ subid_user = \"\" }"),
            "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges: subid_user is empty: name the user whose /etc/subuid and /etc/subgid entries apply"
        );
        // The highest range that fits is accepted.
        let c = parse(
            "[idmap]\nallowed_ranges = { uid = [{ start = 0, size = 4294967296 }], gid = [{ start = 4294967295, size = 1 }] }",
            origin(),
        )
        .unwrap();
        assert_eq!(
            c.policy.idmap.allowed_ranges,
            AllowedRanges::Explicit {
                uid: vec![IdRange {
                    start: 0,
                    size: 1 << 32
                }],
                gid: vec![IdRange {
                    start: u32::MAX.into(),
                    size: 1
                }],
            }
        );
    }

    #[test]
    fn syntax_errors_name_file_and_line_on_one_line() {
        let e = err("[sysfs]\nfallback = \n");
        assert!(e.starts_with("/etc/userns-hostnet/config.toml:2: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = err("[log]\nlevel = \"info\"\n[log]\n");
        assert!(e.starts_with("/etc/userns-hostnet/config.toml:3: "), "{e}");
        assert!(e.contains("duplicate key"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn read_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            load_from(dir.path()).unwrap_err().to_string(),
            format!("{}: not a regular file", dir.path().display())
        );
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, b"runtime = \"\xff\"\n").unwrap();
        let e = load_from(&bad).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}: cannot read: ", bad.display())),
            "{e}"
        );
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "\n[sysctl]\nnet = \"allow\"\n").unwrap();
        assert_eq!(
            load_from(&file).unwrap_err().to_string(),
            format!(
                r#"{}:3: sysctl.net: unknown variant "allow", expected "refuse" or "drop""#,
                file.display()
            )
        );
        std::fs::write(&file, "[sysctl]\nnet = \"drop\"\n").unwrap();
        let c = load_from(&file).unwrap();
        assert_eq!(c.source.as_deref(), Some(file.as_path()));
        assert_eq!(c.policy.net_sysctls, NetSysctls::Drop);
    }

    #[test]
    fn a_fifo_does_not_hang() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("config.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(matches!(
            load_from(&fifo),
            Err(ConfigError::NotRegular { .. })
        ));
    }

    #[test]
    fn env_names_another_file() {
        assert_eq!(path_from(None), Path::new(DEFAULT_PATH));
        assert_eq!(path_from(Some("".into())), Path::new(DEFAULT_PATH));
        assert_eq!(
            path_from(Some("/srv/u.toml".into())),
            Path::new("/srv/u.toml")
        );

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("other.toml");
        std::fs::write(&file, "runtime = \"crun\"\n").unwrap();
        // The only test that touches this variable.
        std::env::set_var(CONFIG_ENV, &file);
        let from_env = path_from_env();
        let loaded = load();
        std::env::remove_var(CONFIG_ENV);
        assert_eq!(from_env, file);
        let c = loaded.unwrap();
        assert_eq!(c.runtime, ["crun"]);
        assert_eq!(c.source.as_deref(), Some(file.as_path()));
    }

    #[test]
    fn shipped_sample_equals_the_defaults() {
        let c = parse(SHIPPED, Path::new("packaging/config.toml")).unwrap();
        assert_eq!(without_source(c), NodeConfig::default());
    }

    /// A commented-out setting: `# key = value` (defaults) or, indented
    /// further, `#   key = value` (examples of other values).
    fn setting(line: &str) -> Option<(&str, bool)> {
        let rest = line.strip_prefix("# ")?;
        let body = rest.trim_start();
        let key_len = body
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(body.len());
        if key_len == 0 || !body[key_len..].starts_with(" = ") {
            return None;
        }
        Some((body, rest.len() == body.len()))
    }

    /// The `# [section]` header in force at each line.
    fn sections(text: &str) -> Vec<Option<&str>> {
        let mut current = None;
        text.lines()
            .map(|l| {
                if let Some(h) = l.strip_prefix("# [") {
                    if h.ends_with(']') {
                        current = Some(&l[2..]);
                    }
                }
                current
            })
            .collect()
    }

    #[test]
    fn every_sample_setting_parses_when_uncommented() {
        let secs = sections(SHIPPED);
        let mut defaults = 0;
        let mut examples = 0;
        for (i, line) in SHIPPED.lines().enumerate() {
            let Some((setting, is_default)) = setting(line) else {
                continue;
            };
            let text = match secs[i] {
                Some(header) => format!("{header}\n{setting}\n"),
                None => format!("{setting}\n"),
            };
            let c = parse(&text, origin()).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
            if is_default {
                defaults += 1;
                assert_eq!(without_source(c), NodeConfig::default(), "line {}", i + 1);
            } else {
                examples += 1;
                assert_ne!(without_source(c), NodeConfig::default(), "line {}", i + 1);
            }
        }
        // runtime, fallback, net (x2), allow_host_root,
        // require_process_user_mapped, own_view, file, level.
        assert_eq!(defaults, 9);
        assert!(examples >= 6, "{examples}");
    }

    #[test]
    fn sample_uncommented_as_a_whole_equals_the_defaults() {
        let secs = sections(SHIPPED);
        let text: String = SHIPPED
            .lines()
            .enumerate()
            .map(|(i, line)| match setting(line) {
                Some((s, true)) => format!("{s}\n"),
                _ if secs[i].is_some_and(|h| line == format!("# {h}")) => {
                    format!("{}\n", &line[2..])
                }
                _ => format!("{line}\n"),
            })
            .collect();
        assert!(text.contains("\n[idmap]\n") && text.contains("\nnet = \"drop\"\n"));
        let c = parse(&text, origin()).unwrap();
        assert_eq!(without_source(c), NodeConfig::default());
    }

    #[test]
    fn error_line_of_offsets() {
        assert_eq!(line_of("", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }

    #[test]
    fn trust_of_the_file_from_its_owner_and_mode() {
        let f = Path::new("/etc/userns-hostnet/config.toml");
        assert_eq!(check_file(0, 0o100644, 0), Ok(()));
        assert_eq!(check_file(0, 0o100600, 0), Ok(()));
        assert_eq!(check_file(0, 0o100755, 0), Ok(()));
        // Not root's: unless the process runs as that user.
        assert_eq!(
            check_file(1000, 0o100644, 0),
            Err(Distrust::FileOwner { uid: 1000 })
        );
        assert_eq!(check_file(1000, 0o100644, 1000), Ok(()));
        let e = check_file(0, 0o100664, 0).unwrap_err();
        assert_eq!(e, Distrust::FileWritable { mode: 0o664 });
        assert_eq!(e.to_string(), "writable by group (mode 0664)");
        assert_eq!(
            check_file(0, 0o100646, 0).unwrap_err().to_string(),
            "writable by others (mode 0646)"
        );
        assert_eq!(
            check_file(0, 0o104666, 0).unwrap_err().to_string(),
            "writable by group and others (mode 4666)"
        );
        assert_eq!(
            e.fix(f),
            "chown root:root /etc/userns-hostnet/config.toml; chmod go-w /etc/userns-hostnet/config.toml"
        );
        let e = ConfigError::Untrusted {
            path: f.to_owned(),
            reason: Distrust::FileOwner { uid: 1000 },
        };
        assert_eq!(
            e.to_string(),
            "/etc/userns-hostnet/config.toml: not trusted: owned by uid 1000, not root; fix: chown root:root /etc/userns-hostnet/config.toml; chmod go-w /etc/userns-hostnet/config.toml"
        );
    }

    #[test]
    fn trust_of_a_directory_on_the_way() {
        let d = Path::new("/etc/userns-hostnet");
        assert_eq!(check_dir(d, 0, 0o40755, 0), Ok(()));
        assert_eq!(check_dir(d, 0, 0o40700, 0), Ok(()));
        // Root's sticky /tmp: others cannot replace a file they do not own.
        assert_eq!(check_dir(Path::new("/tmp"), 0, 0o41777, 0), Ok(()));
        assert_eq!(check_dir(d, 0, 0o41770, 0), Ok(()));
        let e = check_dir(d, 0, 0o40777, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "its directory /etc/userns-hostnet is writable by group and others (mode 0777), who could replace the file"
        );
        assert_eq!(
            e.fix(Path::new("/etc/userns-hostnet/config.toml")),
            "chown root:root /etc/userns-hostnet; chmod go-w /etc/userns-hostnet"
        );
        assert!(check_dir(d, 0, 0o40775, 0).is_err());
        // Sticky but someone else's: its owner can replace anything in it.
        let e = check_dir(d, 1000, 0o41777, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "its directory /etc/userns-hostnet is owned by uid 1000, not root"
        );
        assert_eq!(check_dir(d, 1000, 0o40755, 1000), Ok(()));
    }

    #[test]
    fn a_file_others_can_change_is_not_loaded() {
        use std::os::unix::fs::PermissionsExt;
        let set = |p: &Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("etc");
        std::fs::create_dir(&sub).unwrap();
        let file = sub.join("config.toml");
        std::fs::write(&file, "runtime = \"crun\"\n").unwrap();
        set(&file, 0o644);
        set(&sub, 0o755);
        assert_eq!(load_from(&file).unwrap().runtime, ["crun"]);

        set(&file, 0o666);
        let e = load_from(&file).unwrap_err();
        assert!(
            matches!(
                &e,
                ConfigError::Untrusted {
                    reason: Distrust::FileWritable { mode: 0o666 },
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "{f}: not trusted: writable by group and others (mode 0666); fix: chown root:root {f}; chmod go-w {f}",
                f = file.display()
            )
        );
        set(&file, 0o644);

        // A directory others can write: they could swap the file.
        set(&sub, 0o777);
        let e = load_from(&file).unwrap_err().to_string();
        let real = std::fs::canonicalize(&sub).unwrap();
        assert!(
            e.contains(&format!(
                "not trusted: its directory {} is writable by group and others (mode 0777)",
                real.display()
            )),
            "{e}"
        );
        // Sticky, as /tmp: they cannot.
        set(&sub, 0o1777);
        assert!(load_from(&file).is_ok());
        set(&sub, 0o755);

        // Through a link: the directories of the real file count.
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(load_from(&link).is_ok());
        set(&sub, 0o757);
        assert!(matches!(
            load_from(&link),
            Err(ConfigError::Untrusted {
                reason: Distrust::DirWritable { .. },
                ..
            })
        ));
        set(&sub, 0o755);
        // And so do those of the link: others could point it elsewhere.
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        let link = open.join("config.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(load_from(&link).is_ok());
        set(&open, 0o777);
        assert_eq!(
            load_from(&link).unwrap_err().to_string(),
            format!(
                "{l}: not trusted: its directory {d} is writable by group and others (mode 0777), who could replace the file; fix: chown root:root {d}; chmod go-w {d}",
                l = link.display(),
                d = open.display()
            )
        );
        set(&open, 0o755);
    }
}
