//! Every global option and every option of create, run and restore, as
//! runc 1.1 to 1.5 (urfave/cli v1 on Go's flag package) and crun 1.8 to
//! 1.27 (argp) define them, with what each one means to the wrapper.
//!
//! runc's tables are the union of its versions: runc 1.2 added
//! `--pidfd-socket` to create, run and exec, runc 1.4 dropped the global
//! `--criu`. An option one version lacks is one that version refuses
//! ("flag provided but not defined") wherever its parser reads it as an
//! option, and a value option of the other takes its value in the same
//! place: a command line read with the union is either read alike by that
//! version or refused by it, and then no container is created. Every other
//! option is the same in both, by name, short name and arity.
//!
//! crun's tables are the union of 1.8 and 1.27 the same way: crun 1.17
//! added the global `--log-level`, crun 1.27 `run --keep` and restore's
//! `--tcp-close`, `--network-lock`, `--lsm-profile` and
//! `--lsm-mount-context`, which crun 1.8 refuses. runc 1.5.3 reads the
//! same options as runc 1.4.

/// Does an option take a value?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// A switch (Go: a bool flag, which may still be given `=true`/`=false`).
    Flag,
    /// A value: attached (`--opt=v`, argp `-ov`) or the next argument.
    Value,
    /// argp's optional value: only an attached one counts.
    Optional,
}

/// What an option means to the wrapper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Root,
    Log,
    LogFormat,
    Debug,
    Bundle,
    /// crun's `-f/--config FILE`: the spec to read instead of config.json.
    Config,
    /// `exec --process FILE`: the whole process, capabilities included.
    Process,
    /// `exec --cap CAP`: one capability more.
    Cap,
    /// The runtime prints something (help, usage, version) and exits
    /// without running the subcommand.
    Exit,
    /// Anything else, by name: its value changes nothing the wrapper reads.
    Other(&'static str),
}

/// One option: its long name (empty for a short-only alias), its short
/// letter, whether it takes a value, and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt {
    pub long: &'static str,
    pub short: Option<u8>,
    pub arity: Arity,
    pub key: Key,
}

const fn opt(long: &'static str, short: Option<u8>, arity: Arity, key: Key) -> Opt {
    Opt {
        long,
        short,
        arity,
        key,
    }
}

const fn flag(long: &'static str) -> Opt {
    opt(long, None, Arity::Flag, Key::Other(long))
}

const fn value(long: &'static str) -> Opt {
    opt(long, None, Arity::Value, Key::Other(long))
}

use Arity::{Flag, Optional, Value};

/// runc 1.1 to 1.4 `main.go`, plus urfave/cli's `--help, -h` and
/// `--version, -v`. There is no `--log-level` and no `--cgroup-manager`;
/// `--criu` is gone in runc 1.4.
pub const RUNC_GLOBAL: &[Opt] = &[
    opt("debug", None, Flag, Key::Debug),
    opt("log", None, Value, Key::Log),
    opt("log-format", None, Value, Key::LogFormat),
    opt("root", None, Value, Key::Root),
    value("criu"),
    flag("systemd-cgroup"),
    value("rootless"),
    opt("help", Some(b'h'), Flag, Key::Exit),
    opt("version", Some(b'v'), Flag, Key::Exit),
];

/// runc 1.1 to 1.4 `create.go` (`--pidfd-socket` since runc 1.2), plus
/// urfave/cli's `--help, -h`.
pub const RUNC_CREATE: &[Opt] = &[
    opt("bundle", Some(b'b'), Value, Key::Bundle),
    value("console-socket"),
    value("pidfd-socket"),
    value("pid-file"),
    flag("no-pivot"),
    flag("no-new-keyring"),
    value("preserve-fds"),
    opt("help", Some(b'h'), Flag, Key::Exit),
];

/// runc 1.1 to 1.4 `run.go` (`--pidfd-socket` since runc 1.2).
pub const RUNC_RUN: &[Opt] = &[
    opt("bundle", Some(b'b'), Value, Key::Bundle),
    value("console-socket"),
    value("pidfd-socket"),
    opt("detach", Some(b'd'), Flag, Key::Other("detach")),
    flag("keep"),
    value("pid-file"),
    flag("no-subreaper"),
    flag("no-pivot"),
    flag("no-new-keyring"),
    value("preserve-fds"),
    opt("help", Some(b'h'), Flag, Key::Exit),
];

/// runc 1.1 to 1.4 `restore.go` (the same options).
pub const RUNC_RESTORE: &[Opt] = &[
    value("console-socket"),
    value("image-path"),
    value("work-path"),
    flag("tcp-established"),
    flag("ext-unix-sk"),
    flag("shell-job"),
    flag("file-locks"),
    value("manage-cgroups-mode"),
    opt("bundle", Some(b'b'), Value, Key::Bundle),
    opt("detach", Some(b'd'), Flag, Key::Other("detach")),
    value("pid-file"),
    flag("no-subreaper"),
    flag("no-pivot"),
    value("empty-ns"),
    flag("auto-dedup"),
    flag("lazy-pages"),
    value("lsm-profile"),
    value("lsm-mount-context"),
    opt("help", Some(b'h'), Flag, Key::Exit),
];

/// The options argp adds to every parser (after the parser's own):
/// `--help`/`-?`, `--usage`, and the hidden `--program-name=NAME` and
/// `--HANG[=SECS]`.
pub const ARGP_DEFAULTS: &[Opt] = &[
    opt("help", Some(b'?'), Flag, Key::Exit),
    opt("usage", None, Flag, Key::Exit),
    value("program-name"),
    opt("HANG", None, Optional, Key::Other("HANG")),
];

/// crun 1.8 `crun.c`. `--rootless` is the same option as `--root` in its
/// table: `--rootless VALUE` sets the state directory (until crun 1.22).
/// `--log-level LEVEL` since crun 1.17.
pub const CRUN_GLOBAL: &[Opt] = &[
    opt("debug", None, Flag, Key::Debug),
    value("cgroup-manager"),
    flag("systemd-cgroup"),
    opt("log", None, Value, Key::Log),
    opt("log-format", None, Value, Key::LogFormat),
    value("log-level"),
    opt("root", None, Value, Key::Root),
    opt("rootless", None, Value, Key::Root),
    opt("version", Some(b'v'), Flag, Key::Exit),
    opt("", Some(b'V'), Flag, Key::Exit),
];

/// crun 1.22 and later: `--rootless VALUE` is read and ignored (so that
/// a runc command line does not fail); the rest as before.
pub const CRUN_1_22_GLOBAL: &[Opt] = &[
    opt("debug", None, Flag, Key::Debug),
    value("cgroup-manager"),
    flag("systemd-cgroup"),
    opt("log", None, Value, Key::Log),
    opt("log-format", None, Value, Key::LogFormat),
    value("log-level"),
    opt("root", None, Value, Key::Root),
    value("rootless"),
    opt("version", Some(b'v'), Flag, Key::Exit),
    opt("", Some(b'V'), Flag, Key::Exit),
];

/// crun 1.8 `create.c`.
pub const CRUN_CREATE: &[Opt] = &[
    opt("bundle", Some(b'b'), Value, Key::Bundle),
    opt("config", Some(b'f'), Value, Key::Config),
    value("console-socket"),
    value("preserve-fds"),
    flag("no-pivot"),
    value("pid-file"),
    flag("no-subreaper"),
    flag("no-new-keyring"),
];

/// crun 1.8 `run.c`; `--keep` since crun 1.27.
pub const CRUN_RUN: &[Opt] = &[
    opt("bundle", Some(b'b'), Value, Key::Bundle),
    opt("config", Some(b'f'), Value, Key::Config),
    opt("detach", Some(b'd'), Flag, Key::Other("detach")),
    value("console-socket"),
    value("preserve-fds"),
    value("pid-file"),
    flag("no-subreaper"),
    flag("no-new-keyring"),
    flag("no-pivot"),
    flag("keep"),
];

/// crun 1.8 `restore.c` (built only with CRIU); crun 1.27 adds
/// `--tcp-close`, `--network-lock`, `--lsm-profile VALUE` and
/// `--lsm-mount-context VALUE`.
pub const CRUN_RESTORE: &[Opt] = &[
    opt("bundle", Some(b'b'), Value, Key::Bundle),
    value("image-path"),
    value("work-path"),
    flag("tcp-established"),
    flag("ext-unix-sk"),
    flag("shell-job"),
    opt("detach", Some(b'd'), Flag, Key::Other("detach")),
    value("pid-file"),
    value("console-socket"),
    flag("file-locks"),
    value("manage-cgroups-mode"),
    flag("tcp-close"),
    flag("network-lock"),
    value("lsm-profile"),
    value("lsm-mount-context"),
];

/// runc 1.1 to 1.4 `exec.go` (`--pidfd-socket` since runc 1.2; its
/// arguments are not reordered in any version: options stop at the
/// container id).
pub const RUNC_EXEC: &[Opt] = &[
    value("console-socket"),
    value("pidfd-socket"),
    value("cwd"),
    opt("env", Some(b'e'), Value, Key::Other("env")),
    opt("tty", Some(b't'), Flag, Key::Other("tty")),
    opt("user", Some(b'u'), Value, Key::Other("user")),
    opt(
        "additional-gids",
        Some(b'g'),
        Value,
        Key::Other("additional-gids"),
    ),
    opt("process", Some(b'p'), Value, Key::Process),
    opt("detach", Some(b'd'), Flag, Key::Other("detach")),
    value("pid-file"),
    value("process-label"),
    value("apparmor"),
    flag("no-new-privs"),
    opt("cap", Some(b'c'), Value, Key::Cap),
    value("preserve-fds"),
    value("cgroup"),
    flag("ignore-paused"),
    opt("help", Some(b'h'), Flag, Key::Exit),
];

/// crun 1.8 `exec.c`: `--tty` takes an optional value (`-tVALUE`).
pub const CRUN_EXEC: &[Opt] = &[
    value("console-socket"),
    opt("tty", Some(b't'), Optional, Key::Other("tty")),
    opt("process", Some(b'p'), Value, Key::Process),
    value("cwd"),
    value("cgroup"),
    opt("detach", Some(b'd'), Flag, Key::Other("detach")),
    opt("user", Some(b'u'), Value, Key::Other("user")),
    opt("env", Some(b'e'), Value, Key::Other("env")),
    opt("cap", Some(b'c'), Value, Key::Cap),
    value("pid-file"),
    value("preserve-fds"),
    flag("no-new-privs"),
    value("process-label"),
    value("apparmor"),
];
