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
    /// The global `--root`, where the runtime keeps its containers' state.
    pub root: Option<OsString>,
    /// For `exec`: what the process gets besides the container's own spec.
    pub exec: Option<Exec>,
}

/// What `exec` is asked to give the process, for a container the wrapper
/// converted: the network capabilities must not come back through it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exec {
    /// `--process FILE` / `-p FILE`: the whole process, capabilities included.
    pub process: Option<PathBuf>,
    /// Every `--cap CAP` / `-c CAP`, with where it stands in argv.
    pub caps: Vec<CapArg>,
    /// An option this scan does not know: it cannot tell for certain which
    /// word is the container id, nor what the option adds.
    pub unknown_option: Option<OsString>,
    /// With an unknown option, the word after the one taken as the id: the
    /// id itself if the unknown option took a value.
    pub next_word: Option<OsString>,
}

/// One `--cap` of `exec`: `args[at..at + len]` (argv without argv[0]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapArg {
    pub at: usize,
    pub len: usize,
    pub value: OsString,
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
            (b"root", Some(v)) => inv.root = Some(os(&v)),
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
    } else if sub == "exec" {
        scan_exec(&args[i + 1..], i + 1, &mut inv);
    } else if sub == "delete" {
        // `delete [--force|-f] ID`: forgetting a record needs the id only.
        inv.container_id = args[i + 1..]
            .iter()
            .find(|a| !a.as_bytes().starts_with(b"-"))
            .cloned();
    }
    inv
}

/// One option of a subcommand: long name, short letter, takes a value.
type OptionSpec = (&'static str, Option<u8>, bool);

/// `exec`'s options in runc 1.1 (urfave/cli) and crun 1.8 (argp).
const EXEC_OPTIONS: &[OptionSpec] = &[
    ("console-socket", None, true),
    ("cwd", None, true),
    ("env", Some(b'e'), true),
    ("tty", Some(b't'), false),
    ("user", Some(b'u'), true),
    ("additional-gids", Some(b'g'), true),
    ("process", Some(b'p'), true),
    ("detach", Some(b'd'), false),
    ("pid-file", None, true),
    ("process-label", None, true),
    ("apparmor", None, true),
    ("no-new-privs", None, false),
    ("cap", Some(b'c'), true),
    ("preserve-fds", None, true),
    ("cgroup", None, true),
    ("ignore-paused", None, false),
];

/// Which exec option an argument is, and a value attached to it. Long
/// names with one or two dashes (Go), unambiguous prefixes of long names
/// after two dashes and `-xVALUE` (argp).
fn exec_option(arg: &OsStr) -> Option<(&'static OptionSpec, Option<&[u8]>)> {
    let b = arg.as_bytes();
    let (long_only, body) = match b.strip_prefix(b"--") {
        Some(body) => (true, body),
        None => (false, b.strip_prefix(b"-")?),
    };
    let (name, inline) = match body.iter().position(|&c| c == b'=') {
        Some(eq) => (&body[..eq], Some(&body[eq + 1..])),
        None => (body, None),
    };
    if let Some(o) = EXEC_OPTIONS.iter().find(|o| o.0.as_bytes() == name) {
        return Some((o, inline));
    }
    if long_only {
        let mut prefixed = EXEC_OPTIONS
            .iter()
            .filter(|o| !name.is_empty() && o.0.as_bytes().starts_with(name));
        return match (prefixed.next(), prefixed.next()) {
            (Some(o), None) => Some((o, inline)),
            _ => None,
        };
    }
    let (&letter, rest) = body.split_first()?;
    let o = EXEC_OPTIONS.iter().find(|o| o.1 == Some(letter))?;
    match rest {
        [] => Some((o, None)),
        [b'=', v @ ..] => Some((o, Some(v))),
        v if o.2 => Some((o, Some(v))),
        _ => None,
    }
}

fn scan_exec(args: &[OsString], offset: usize, inv: &mut Invocation) {
    let mut exec = Exec::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_os_str();
        if arg == "--" {
            inv.container_id = args.get(i + 1).cloned();
            break;
        }
        if !arg.as_bytes().starts_with(b"-") || arg == "-" {
            inv.container_id = Some(arg.to_os_string());
            if exec.unknown_option.is_some() {
                exec.next_word = args.get(i + 1).cloned();
            }
            break;
        }
        let Some((&(name, _, takes_value), inline)) = exec_option(arg) else {
            exec.unknown_option = Some(arg.to_os_string());
            i += 1;
            continue;
        };
        let (value, len) = match inline {
            Some(v) => (Some(os(v)), 1),
            None if takes_value => (args.get(i + 1).cloned(), 2),
            None => (None, 1),
        };
        match name {
            "process" => exec.process = value.map(PathBuf::from),
            "cap" => exec.caps.push(CapArg {
                at: offset + i,
                len,
                value: value.unwrap_or_default(),
            }),
            _ => {}
        }
        i += len;
    }
    inv.exec = Some(exec);
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
    fn exec_as_containerd_and_cri_o_call_it() {
        let inv = scan(&argv(
            "--root /run/containerd/runc/k8s.io --log /b/log.json --log-format json exec --process /tmp/runc-process123 --detach --pid-file /b/p.pid c1",
        ));
        assert_eq!(inv.creating, None);
        assert_eq!(inv.root, Some("/run/containerd/runc/k8s.io".into()));
        assert_eq!(inv.container_id, Some("c1".into()));
        let exec = inv.exec.unwrap();
        assert_eq!(exec.process, Some(PathBuf::from("/tmp/runc-process123")));
        assert!(exec.caps.is_empty());
        assert_eq!(exec.unknown_option, None);
        let inv = scan(&argv("--root=/r exec -p=/p.json -d c2"));
        assert_eq!(inv.root, Some("/r".into()));
        assert_eq!(inv.container_id, Some("c2".into()));
        assert_eq!(inv.exec.unwrap().process, Some(PathBuf::from("/p.json")));
    }

    #[test]
    fn exec_caps_in_every_form_with_their_place() {
        let args = argv("exec --cap CAP_NET_RAW -c NET_ADMIN --cap=cap_net_bind_service -c12 -c=13 --ca 10 -t c1 sh -c --cap");
        let inv = scan(&args);
        let exec = inv.exec.unwrap();
        let got: Vec<(usize, usize, &str)> = exec
            .caps
            .iter()
            .map(|c| (c.at, c.len, c.value.to_str().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                (1, 2, "CAP_NET_RAW"),
                (3, 2, "NET_ADMIN"),
                (5, 1, "cap_net_bind_service"),
                (6, 1, "12"),
                (7, 1, "13"),
                (8, 2, "10"),
            ]
        );
        assert_eq!(inv.container_id, Some("c1".into()));
        assert_eq!(exec.unknown_option, None);
    }

    #[test]
    fn exec_with_an_unknown_option_keeps_both_candidate_ids() {
        let inv = scan(&argv("exec --frob x c1 sh"));
        let exec = inv.exec.unwrap();
        assert_eq!(exec.unknown_option, Some("--frob".into()));
        assert_eq!(inv.container_id, Some("x".into()));
        assert_eq!(exec.next_word, Some("c1".into()));
        // An ambiguous prefix and bundled short flags are unknown too.
        for a in ["exec --p x c1", "exec -dt c1"] {
            assert!(scan(&argv(a)).exec.unwrap().unknown_option.is_some(), "{a}");
        }
        let inv = scan(&argv("exec -- c3 sh"));
        assert_eq!(inv.container_id, Some("c3".into()));
    }

    #[test]
    fn delete_finds_the_id() {
        let inv = scan(&argv("--root /r delete --force c9"));
        assert_eq!(inv.container_id, Some("c9".into()));
        assert_eq!(inv.root, Some("/r".into()));
        assert_eq!(scan(&argv("delete -f c8")).container_id, Some("c8".into()));
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
