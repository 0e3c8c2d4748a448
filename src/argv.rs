//! Scanning runc's command line without owning it: find the global options
//! the wrapper cares about, the subcommand, and the bundle. The argv handed
//! to the real runtime is always the one received; when in doubt, the scan
//! says "pass through".

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// runc's global options that take a value.
const GLOBAL_WITH_VALUE: &[&str] = &[
    "root",
    "log",
    "log-format",
    "log-level",
    "criu",
    "rootless",
    "cgroup-manager",
];

/// Options of create, run and restore that take a value, so their value is
/// not mistaken for the container id or the bundle.
const SUBCOMMAND_WITH_VALUE: &[&str] = &[
    "bundle",
    "b",
    "console-socket",
    "pid-file",
    "preserve-fds",
    "image-path",
    "work-path",
    "parent-path",
    "manage-cgroups-mode",
    "empty-ns",
    "lsm-profile",
    "lsm-mount-context",
    "status-fd",
    "page-server",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The subcommands whose bundle the wrapper reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creating {
    Create,
    Run,
    Restore,
}

impl Creating {
    pub fn word(self) -> &'static str {
        match self {
            Creating::Create => "create",
            Creating::Run => "run",
            Creating::Restore => "restore",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// How the wrapper was called (not part of the scan; set by the caller).
    pub argv0: Option<OsString>,
    /// `Some` for create, run and restore; anything else passes through.
    pub creating: Option<Creating>,
    /// The subcommand word as given, if any.
    pub subcommand: Option<OsString>,
    /// `--bundle`/`-b`; `None` means the working directory.
    pub bundle: Option<PathBuf>,
    /// The option was given without a value: leave it to the runtime.
    pub bundle_missing_value: bool,
    /// The container id (first positional after the subcommand).
    pub container_id: Option<OsString>,
    pub log_file: Option<PathBuf>,
    pub log_format: LogFormat,
    pub debug: bool,
}

/// `--name value`, `--name=value`, `-name value`, `-name=value`: Go's flag
/// packages accept one or two dashes. Returns the name and an inline value.
fn split_option(arg: &OsStr) -> Option<(&[u8], Option<&[u8]>)> {
    let b = arg.as_bytes();
    let body = b.strip_prefix(b"--").or_else(|| b.strip_prefix(b"-"))?;
    if body.is_empty() {
        return None;
    }
    match body.iter().position(|&c| c == b'=') {
        Some(eq) => Some((&body[..eq], Some(&body[eq + 1..]))),
        None => Some((body, None)),
    }
}

fn takes_value(name: &[u8], table: &[&str]) -> bool {
    table.iter().any(|t| t.as_bytes() == name)
}

fn os(b: &[u8]) -> OsString {
    OsStr::from_bytes(b).to_os_string()
}

/// Scan `args` (without argv[0]).
pub fn scan(args: &[OsString]) -> Invocation {
    let mut inv = Invocation::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_os_str();
        if arg == "--" {
            i += 1;
            break;
        }
        let Some((name, inline)) = split_option(arg) else {
            break;
        };
        let value = match inline {
            Some(v) => Some(v.to_vec()),
            None if takes_value(name, GLOBAL_WITH_VALUE) => {
                i += 1;
                args.get(i).map(|v| v.as_bytes().to_vec())
            }
            None => None,
        };
        match (name, value) {
            (b"log", Some(v)) if !v.is_empty() => inv.log_file = Some(PathBuf::from(os(&v))),
            (b"log-format", Some(v)) => {
                inv.log_format = if v == b"json" {
                    LogFormat::Json
                } else {
                    LogFormat::Text
                }
            }
            (b"debug", None) => inv.debug = true,
            (b"debug", Some(v)) => inv.debug = v == b"true" || v == b"1",
            _ => {}
        }
        i += 1;
    }
    let Some(sub) = args.get(i) else {
        return inv;
    };
    inv.subcommand = Some(sub.clone());
    inv.creating = match sub.as_bytes() {
        b"create" => Some(Creating::Create),
        b"run" => Some(Creating::Run),
        b"restore" => Some(Creating::Restore),
        _ => None,
    };
    if inv.creating.is_some() {
        scan_subcommand(&args[i + 1..], &mut inv);
    }
    inv
}

fn scan_subcommand(args: &[OsString], inv: &mut Invocation) {
    let mut i = 0;
    let mut positional_only = false;
    while i < args.len() {
        let arg = args[i].as_os_str();
        if !positional_only && arg == "--" {
            positional_only = true;
        } else if let Some((name, inline)) = split_option(arg).filter(|_| !positional_only) {
            let value = match inline {
                Some(v) => Some(v),
                None if takes_value(name, SUBCOMMAND_WITH_VALUE) => {
                    i += 1;
                    args.get(i).map(|v| v.as_bytes())
                }
                None => None,
            };
            if name == b"bundle" || name == b"b" {
                match value {
                    Some(v) => {
                        inv.bundle = Some(PathBuf::from(os(v)));
                        inv.bundle_missing_value = false;
                    }
                    None => inv.bundle_missing_value = true,
                }
            }
        } else if inv.container_id.is_none() {
            inv.container_id = Some(arg.to_os_string());
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn containerd_shim_shape() {
        let inv = scan(&argv(include_str!("../tests/fixtures/ctr-default.argv")));
        assert_eq!(inv.creating, Some(Creating::Create));
        assert_eq!(inv.bundle, Some(PathBuf::from("BUNDLE")));
        assert_eq!(inv.log_file, Some(PathBuf::from("BUNDLE/log.json")));
        assert_eq!(inv.log_format, LogFormat::Json);
        assert_eq!(inv.container_id, Some("CONTAINER_ID".into()));
    }

    #[test]
    fn podman_shape() {
        let inv = scan(&argv(include_str!("../tests/fixtures/podman-default.argv")));
        assert_eq!(inv.creating, Some(Creating::Create));
        assert_eq!(
            inv.bundle,
            Some(PathBuf::from(
                "/var/lib/containers/storage/overlay-containers/ID/userdata"
            ))
        );
        assert_eq!(inv.log_file, None);
        assert_eq!(inv.container_id, Some("CONTAINER_ID".into()));
    }

    #[test]
    fn conmon_equals_forms() {
        let inv = scan(&argv(
            "--root=/run/runc --log=/x/log --log-format=json create --bundle=/b --pid-file /p --no-pivot id1",
        ));
        assert_eq!(inv.creating, Some(Creating::Create));
        assert_eq!(inv.bundle, Some(PathBuf::from("/b")));
        assert_eq!(inv.log_file, Some(PathBuf::from("/x/log")));
        assert_eq!(inv.log_format, LogFormat::Json);
        assert_eq!(inv.container_id, Some("id1".into()));
    }

    #[test]
    fn value_options_do_not_eat_the_subcommand() {
        let inv = scan(&argv(
            "--debug --systemd-cgroup --rootless false --criu /usr/sbin/criu --cgroup-manager disabled --log-level debug run -d -b /bundle ctr",
        ));
        assert!(inv.debug);
        assert_eq!(inv.creating, Some(Creating::Run));
        assert_eq!(inv.bundle, Some(PathBuf::from("/bundle")));
        assert_eq!(inv.container_id, Some("ctr".into()));
    }

    #[test]
    fn bundle_defaults_to_working_directory() {
        let inv = scan(&argv("create --pid-file p myid"));
        assert_eq!(inv.creating, Some(Creating::Create));
        assert_eq!(inv.bundle, None);
        assert!(!inv.bundle_missing_value);
        assert_eq!(inv.container_id, Some("myid".into()));
    }

    #[test]
    fn single_dash_and_restore() {
        let inv = scan(&argv("restore -image-path /img -bundle=/b -d id"));
        assert_eq!(inv.creating, Some(Creating::Restore));
        assert_eq!(inv.bundle, Some(PathBuf::from("/b")));
        assert_eq!(inv.container_id, Some("id".into()));
    }

    #[test]
    fn bundle_as_last_word_is_missing() {
        let inv = scan(&argv("create id --bundle"));
        assert!(inv.bundle_missing_value);
        assert_eq!(inv.bundle, None);
    }

    #[test]
    fn other_subcommands_pass_through() {
        for s in [
            "state x",
            "--root /r kill x KILL",
            "features",
            "--version",
            "-v",
            "--help",
            "",
            "frobnicate --bundle /b",
            "--log",
        ] {
            let inv = scan(&argv(s));
            assert_eq!(inv.creating, None, "{s}");
            assert_eq!(inv.bundle, None, "{s}");
        }
    }

    #[test]
    fn non_utf8_survives() {
        use std::os::unix::ffi::OsStringExt;
        let args = vec![
            OsString::from("create"),
            OsString::from("--bundle"),
            OsString::from_vec(b"/b\xff\n dir".to_vec()),
            OsString::from("id"),
        ];
        let inv = scan(&args);
        assert_eq!(inv.bundle.unwrap().as_os_str().as_bytes(), b"/b\xff\n dir");
    }
}
