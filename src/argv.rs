//! Reading the command line the way the real runtime will: which
//! subcommand, which bundle, which spec file, which state directory. The
//! argv handed to the runtime is always the one received; for create, run
//! and restore the wrapper decides on exactly the argv the runtime will act
//! on, or reports a [`Problem`] that the wrapper refuses.
//!
//! runc parses with urfave/cli v1 on Go's `flag` package (one or two
//! dashes, `-opt=value`, whole names only, `--switch=false`, a
//! subcommand's options moved before its arguments first, which runc 1.1
//! and runc 1.2 or later do in two ways: a create, run or restore is read
//! both ways, and refused unless they agree); crun 1.8 with
//! argp (two dashes for long options, which any unambiguous prefix
//! abbreviates, `-bDIR`, grouped short options, options only before the
//! container id, `-f/--config FILE` naming the spec). An unknown runtime
//! gets both readings, and whatever they do not read alike is refused.

mod grammar;
mod tables;
#[cfg(test)]
mod tests;

use grammar::{Problem as ParseProblem, Reason, Set, Word};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use tables::{Key, Opt};

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

    fn from_word(w: &OsStr) -> Option<Creating> {
        match w.as_bytes() {
            b"create" => Some(Creating::Create),
            b"run" => Some(Creating::Run),
            b"restore" => Some(Creating::Restore),
            _ => None,
        }
    }
}

/// Whose command-line rules apply: those of the runtime exec'd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// runc 1.1 to 1.4: urfave/cli v1 on Go's flag package, both ways it
    /// reorders a subcommand's words.
    Runc,
    /// crun 1.8: argp.
    Crun,
    /// Any other runtime: only what runc and crun read alike.
    #[default]
    Strict,
}

/// An argument the wrapper cannot place with certainty, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The argument as given.
    pub arg: OsString,
    pub reason: String,
}

impl Problem {
    /// The argument on one line: control characters escaped.
    pub fn shown_arg(&self) -> String {
        printable(&self.arg)
    }
}

/// A word on one line: control characters escaped, invalid UTF-8 replaced.
fn printable(w: &OsStr) -> String {
    w.to_string_lossy()
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// How the wrapper was called (not part of the scan; set by the caller).
    pub argv0: Option<OsString>,
    /// The rules the scan followed.
    pub dialect: Dialect,
    /// `Some` for create, run and restore; anything else passes through.
    pub creating: Option<Creating>,
    /// The subcommand word as given, if any.
    pub subcommand: Option<OsString>,
    /// `--bundle`/`-b`; `None` means the working directory.
    pub bundle: Option<PathBuf>,
    /// crun's `-f/--config FILE`: the spec the runtime reads instead of
    /// the bundle's config.json. See [`Invocation::spec_file`].
    pub config_file: Option<PathBuf>,
    /// The container id (first positional after the subcommand).
    pub container_id: Option<OsString>,
    pub log_file: Option<PathBuf>,
    pub log_format: LogFormat,
    pub debug: bool,
    /// The runtime's state directory as given (runc `--root`; crun
    /// `--root`, `--rootless` or an abbreviation of either).
    pub root: Option<OsString>,
    /// For create, run and restore: an argument the wrapper cannot place
    /// with certainty. The wrapper refuses it; it never passes through.
    pub problem: Option<Problem>,
    /// For `exec`: what the process gets besides the container's own spec.
    pub exec: Option<Exec>,
}

impl Invocation {
    /// The spec file the runtime will read: `<bundle>/config.json`, or with
    /// crun's `-f FILE` that file (crun reads a FILE other than the very
    /// word `config.json` from the working directory before it enters the
    /// bundle, so a relative FILE is relative to the working directory).
    pub fn spec_file(&self) -> PathBuf {
        match &self.config_file {
            Some(f) if f.as_os_str() != "config.json" => f.clone(),
            _ => self
                .bundle
                .as_deref()
                .unwrap_or(Path::new("."))
                .join("config.json"),
        }
    }
}

/// The parsers the wrapper knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rt {
    /// runc 1.1: urfave/cli v1.22.1 reorders every word that starts with `-`.
    Runc,
    /// runc 1.2 and later: urfave/cli v1.22.14 and later reorder only the
    /// words that name an option of the subcommand.
    Runc12,
    /// crun before 1.22: `--rootless VALUE` sets the state directory.
    Crun,
    /// crun 1.22 and later: `--rootless VALUE` is read and ignored.
    Crun122,
}

impl Rt {
    fn name(self) -> &'static str {
        match self {
            Rt::Runc | Rt::Runc12 => "runc",
            Rt::Crun | Rt::Crun122 => "crun",
        }
    }

    /// Which versions, when two readings are compared.
    fn versions(self) -> &'static str {
        match self {
            Rt::Runc => "runc 1.1",
            Rt::Runc12 => "runc 1.2 or later",
            Rt::Crun => "crun before 1.22",
            Rt::Crun122 => "crun 1.22 or later",
        }
    }

    /// How a reading is named beside another's: the version when both
    /// are runc's, or both crun's.
    fn label(self, beside: Rt) -> &'static str {
        if self.name() == beside.name() {
            self.versions()
        } else {
            self.name()
        }
    }

    fn is_runc(self) -> bool {
        matches!(self, Rt::Runc | Rt::Runc12)
    }

    fn is_crun(self) -> bool {
        matches!(self, Rt::Crun | Rt::Crun122)
    }

    fn global(self, words: &[Word<'_>]) -> grammar::Parsed {
        match self {
            Rt::Runc | Rt::Runc12 => grammar::go(words, tables::RUNC_GLOBAL),
            Rt::Crun => grammar::argp(words, [tables::CRUN_GLOBAL, tables::ARGP_DEFAULTS]),
            Rt::Crun122 => grammar::argp(words, [tables::CRUN_1_22_GLOBAL, tables::ARGP_DEFAULTS]),
        }
    }

    fn table(self, creating: Creating) -> &'static [Opt] {
        match (self, creating) {
            (Rt::Runc | Rt::Runc12, Creating::Create) => tables::RUNC_CREATE,
            (Rt::Runc | Rt::Runc12, Creating::Run) => tables::RUNC_RUN,
            (Rt::Runc | Rt::Runc12, Creating::Restore) => tables::RUNC_RESTORE,
            (Rt::Crun | Rt::Crun122, Creating::Create) => tables::CRUN_CREATE,
            (Rt::Crun | Rt::Crun122, Creating::Run) => tables::CRUN_RUN,
            (Rt::Crun | Rt::Crun122, Creating::Restore) => tables::CRUN_RESTORE,
        }
    }

    /// The subcommand's options and its positional words.
    fn subcommand<'a>(
        self,
        creating: Creating,
        words: &[Word<'a>],
    ) -> (grammar::Parsed, Vec<Word<'a>>) {
        let table = self.table(creating);
        match self {
            Rt::Runc | Rt::Runc12 => {
                let reordered = if self == Rt::Runc {
                    grammar::urfave_reorder(words)
                } else {
                    grammar::urfave_reorder_known(words, table)
                };
                let parsed = grammar::go(&reordered, table);
                let rest = reordered[parsed.rest..].to_vec();
                (parsed, rest)
            }
            Rt::Crun | Rt::Crun122 => {
                let parsed = grammar::argp(words, [table, tables::ARGP_DEFAULTS]);
                let rest = words[parsed.rest..].to_vec();
                (parsed, rest)
            }
        }
    }

    /// How many words may follow the options: runc takes exactly the id;
    /// crun's restore takes one more, and ignores it.
    fn max_positionals(self, creating: Creating) -> usize {
        match (self, creating) {
            (Rt::Crun | Rt::Crun122, Creating::Restore) => 2,
            _ => 1,
        }
    }
}

/// A value with the argument it came from.
type At<T> = Option<(T, usize)>;

/// What one runtime's parser makes of the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Reading {
    sub_at: Option<usize>,
    creating: Option<Creating>,
    /// The runtime prints help or its version and exits.
    exits: bool,
    root: At<OsString>,
    log_file: At<PathBuf>,
    log_format: At<LogFormat>,
    debug: bool,
    bundle: At<PathBuf>,
    config_file: At<PathBuf>,
    container_id: At<OsString>,
    problem: Option<Problem>,
}

fn os(b: &[u8]) -> OsString {
    OsStr::from_bytes(b).to_os_string()
}

impl Reading {
    fn apply(&mut self, sets: &[Set]) {
        for s in sets {
            let value = s.value.clone().map(|v| (v, s.at));
            match s.opt.key {
                Key::Root => self.root = value,
                Key::Log => {
                    self.log_file = value
                        .filter(|(v, _)| !v.is_empty())
                        .map(|(v, at)| (PathBuf::from(v), at))
                }
                Key::LogFormat => {
                    self.log_format = value.map(|(v, at)| {
                        let f = if v == "json" {
                            LogFormat::Json
                        } else {
                            LogFormat::Text
                        };
                        (f, at)
                    })
                }
                Key::Debug => self.debug = !s.off,
                Key::Bundle => self.bundle = value.map(|(v, at)| (PathBuf::from(v), at)),
                Key::Config => self.config_file = value.map(|(v, at)| (PathBuf::from(v), at)),
                Key::Exit => self.exits |= !s.off,
                Key::Process | Key::Cap | Key::Other(_) => {}
            }
        }
    }

    fn refuse(&mut self, args: &[OsString], at: usize, reason: String) {
        self.problem = Some(Problem {
            arg: args[at].clone(),
            reason,
        });
    }
}

const WOULD_REFUSE: &str = "would refuse this command line";

fn reason_text(rt: Rt, scope: &str, reason: &Reason) -> String {
    let name = rt.name();
    match reason {
        Reason::Unknown => format!("not a {scope} option of {name}; {name} {WOULD_REFUSE}"),
        Reason::Ambiguous(names) => format!(
            "an abbreviation of more than one {scope} option of {name} (--{}); {name} {WOULD_REFUSE}",
            names.join(", --")
        ),
        Reason::MissingValue => {
            format!("needs a value and is the last argument; {name} {WOULD_REFUSE}")
        }
        Reason::NoValueAllowed => format!("takes no value; {name} {WOULD_REFUSE}"),
        Reason::NotBool => format!("not a boolean value; {name} {WOULD_REFUSE}"),
        Reason::BadSyntax => format!("bad flag syntax; {name} {WOULD_REFUSE}"),
    }
}

/// urfave/cli refuses an option given under two of its names (`-b` and
/// `--bundle`) in one command line.
fn two_forms(sets: &[Set]) -> Option<&Set> {
    // The first name each option was given under: a table has a few dozen
    // options, however long the command line.
    let mut first: Vec<(&Opt, &[u8])> = Vec::new();
    for s in sets {
        match first.iter().find(|(o, _)| *o == s.opt) {
            Some((_, name)) if *name != s.name.as_slice() => return Some(s),
            Some(_) => {}
            None => first.push((s.opt, &s.name)),
        }
    }
    None
}

fn two_forms_text(s: &Set) -> String {
    let short = s.opt.short.map(|c| c as char).unwrap_or('?');
    format!(
        "given both as -{short} and as --{}; runc {WOULD_REFUSE}",
        s.opt.long
    )
}

/// A create, run or restore word anywhere: when the options before the
/// subcommand cannot be read, the subcommand is not known either, and a
/// command line that may create a container is refused, not passed through.
fn lookahead(args: &[OsString]) -> Option<Creating> {
    args.iter().find_map(|a| Creating::from_word(a))
}

/// The command line as `rt` reads it.
fn read(args: &[OsString], rt: Rt) -> Reading {
    let words: Vec<Word<'_>> = args
        .iter()
        .enumerate()
        .map(|(i, a)| (i, a.as_os_str()))
        .collect();
    let mut r = Reading::default();
    let global = rt.global(&words);
    r.apply(&global.sets);
    if let Some(ParseProblem { at, reason }) = &global.problem {
        r.refuse(args, *at, reason_text(rt, "global", reason));
        r.creating = lookahead(args);
        return r;
    }
    if rt.is_runc() {
        if let Some(s) = two_forms(&global.sets) {
            r.refuse(args, s.at, two_forms_text(s));
            r.creating = lookahead(args);
            return r;
        }
    }
    if r.exits {
        return r;
    }
    let Some(sub) = args.get(global.rest) else {
        return r;
    };
    r.sub_at = Some(global.rest);
    r.creating = Creating::from_word(sub);
    let Some(creating) = r.creating else {
        return r;
    };
    let scope = format!("`{}`", creating.word());
    let (parsed, positionals) = rt.subcommand(creating, &words[global.rest + 1..]);
    r.apply(&parsed.sets);
    if let Some(ParseProblem { at, reason }) = &parsed.problem {
        r.refuse(args, *at, reason_text(rt, &scope, reason));
        return r;
    }
    if rt.is_runc() {
        if let Some(s) = two_forms(&parsed.sets) {
            r.refuse(args, s.at, two_forms_text(s));
            return r;
        }
    }
    if r.exits {
        // Help for the subcommand: the runtime prints it and creates nothing.
        r.creating = None;
        return r;
    }
    let name = rt.name();
    match positionals.first() {
        None => r.refuse(
            args,
            global.rest,
            format!("no container id; {name} {WOULD_REFUSE}"),
        ),
        Some(&(at, id)) => r.container_id = Some((id.to_os_string(), at)),
    }
    if let Some(&(at, _)) = positionals.get(rt.max_positionals(creating)) {
        let id = printable(positionals[0].1);
        let reason = if args[at].as_bytes().starts_with(b"-") && rt.is_crun() {
            format!(
                "after the container id {id}, where crun reads no options but one more argument; crun {WOULD_REFUSE}"
            )
        } else {
            format!("one argument too many after the container id {id}; {name} {WOULD_REFUSE}")
        };
        r.refuse(args, at, reason);
    }
    r
}

/// A field of a reading, for comparing two: its bytes and where it came
/// from.
type Field = (Option<Vec<u8>>, Option<usize>);

fn field<T: AsRef<OsStr>>(v: &At<T>) -> Field {
    match v {
        Some((v, at)) => (Some(v.as_ref().as_bytes().to_vec()), Some(*at)),
        None => (None, None),
    }
}

fn shown(v: &Option<Vec<u8>>) -> String {
    match v {
        Some(v) => format!("\"{}\"", printable(OsStr::from_bytes(v))),
        None => "nothing".to_owned(),
    }
}

/// The fields the wrapper acts on, as one reading has them.
fn fields(r: &Reading, args: &[OsString]) -> [(&'static str, Field); 8] {
    let sub = r.sub_at.map(|at| (args[at].clone(), at));
    let exits = r.exits.then(|| ("yes", r.sub_at.unwrap_or(0)));
    let format = r
        .log_format
        .map(|(f, at)| (if f == LogFormat::Json { "json" } else { "text" }, at));
    [
        ("the subcommand", field(&sub)),
        ("help or version", field(&exits)),
        ("the state directory", field(&r.root)),
        ("the log file", field(&r.log_file)),
        ("the log format", field(&format)),
        ("the bundle", field(&r.bundle)),
        ("the spec file", field(&r.config_file)),
        ("the container id", field(&r.container_id)),
    ]
}

/// The command line as every parser in `rts` reads it, or a problem: one
/// that some parser refuses while another accepts it, or one that they
/// read differently. `why` ends the reason: why they must agree.
fn agreed(args: &[OsString], rts: &[Rt], why: &str) -> Reading {
    let readings: Vec<(Rt, Reading)> = rts.iter().map(|&rt| (rt, read(args, rt))).collect();
    let creating = readings.iter().find_map(|(_, r)| r.creating);
    let refused = readings
        .iter()
        .find_map(|(rt, r)| r.problem.as_ref().map(|p| (rt, r, p.clone())));
    let accepting = readings.iter().find(|(_, r)| r.problem.is_none());
    match (refused, accepting) {
        (Some((rt, r, p)), Some((other, accepted))) => {
            // Which version refuses it, when another of the same runtime
            // accepts it.
            let tail = format!("; {} {WOULD_REFUSE}", rt.name());
            let reason = match p.reason.strip_suffix(&tail) {
                Some(head) if rt.name() == other.name() => {
                    format!("{head}; {} {WOULD_REFUSE}", rt.versions())
                }
                _ => p.reason,
            };
            let problem = Problem {
                arg: p.arg,
                reason: format!("{reason} (while {} accepts it); {why}", other.label(*rt)),
            };
            Reading {
                creating,
                problem: Some(problem),
                // Where the subcommand is, as the reading that found one
                // has it: an exec is then known as one, and refused.
                sub_at: r.sub_at.or(accepted.sub_at),
                ..r.clone()
            }
        }
        (Some((_, r, _)), None) => Reading {
            creating,
            ..r.clone()
        },
        (None, _) => {
            let (first_rt, first) = &readings[0];
            for (rt, r) in &readings[1..] {
                let differs = fields(first, args)
                    .into_iter()
                    .zip(fields(r, args))
                    .find(|((_, a), (_, b))| a.0 != b.0);
                let Some(((what, (a, a_at)), (_, (b, b_at)))) = differs else {
                    continue;
                };
                let at = b_at.or(a_at).unwrap_or(0).min(args.len().saturating_sub(1));
                let problem = args.get(at).map(|arg| Problem {
                    arg: arg.clone(),
                    reason: format!(
                        "{first} and {other} read it differently ({what}: {first} {}, {other} {}); {why}",
                        shown(&a),
                        shown(&b),
                        first = first_rt.label(*rt),
                        other = rt.label(*first_rt),
                    ),
                });
                return Reading {
                    creating,
                    problem,
                    ..first.clone()
                };
            }
            first.clone()
        }
    }
}

/// For runc: its versions must read the command line alike (the wrapper
/// does not ask which version it is about to exec).
fn runc_any_version(args: &[OsString]) -> Reading {
    agreed(
        args,
        &[Rt::Runc, Rt::Runc12],
        "the wrapper reads only what every runc version reads alike",
    )
}

/// For crun: its versions must read the command line alike (crun 1.22
/// stopped reading `--rootless VALUE` as the state directory).
fn crun_any_version(args: &[OsString]) -> Reading {
    agreed(
        args,
        &[Rt::Crun, Rt::Crun122],
        "the wrapper reads only what every crun version reads alike",
    )
}

/// For a runtime that is neither runc nor crun: the command line must read
/// the same to every parser, or it is refused.
fn strict(args: &[OsString]) -> Reading {
    agreed(
        args,
        &[Rt::Runc, Rt::Runc12, Rt::Crun, Rt::Crun122],
        "the real runtime is not known to be runc or crun",
    )
}

/// Whether any word is a subcommand the wrapper acts on (create, run,
/// restore, exec, delete): without one, no reading of the command line
/// gives the wrapper anything to do.
pub fn may_act_on(args: &[OsString]) -> bool {
    args.iter().any(|a| {
        Creating::from_word(a).is_some() || a.as_bytes() == b"exec" || a.as_bytes() == b"delete"
    })
}

/// Scan `args` (without argv[0]) with the rules of `dialect`.
pub fn scan(args: &[OsString], dialect: Dialect) -> Invocation {
    let r = match dialect {
        Dialect::Runc => runc_any_version(args),
        Dialect::Crun => crun_any_version(args),
        Dialect::Strict => strict(args),
    };
    let mut inv = Invocation {
        dialect,
        creating: r.creating,
        subcommand: r.sub_at.map(|at| args[at].clone()),
        bundle: r.bundle.map(|(v, _)| v),
        config_file: r.config_file.map(|(v, _)| v),
        container_id: r.container_id.map(|(v, _)| v),
        log_file: r.log_file.map(|(v, _)| v),
        log_format: r.log_format.map(|(v, _)| v).unwrap_or_default(),
        debug: r.debug,
        root: r.root.map(|(v, _)| v),
        problem: r.problem,
        ..Invocation::default()
    };
    if inv.creating.is_some() {
        if inv.subcommand.is_none() {
            inv.subcommand = inv.creating.map(|c| c.word().into());
        }
        return inv;
    }
    let Some(at) = r.sub_at else {
        return inv;
    };
    let rest = &args[at + 1..];
    if args[at] == "exec" {
        match dialect {
            Dialect::Runc => exec_as(args, at, Rt::Runc, &mut inv),
            Dialect::Crun => exec_as(args, at, Rt::Crun, &mut inv),
            Dialect::Strict => scan_exec(rest, at + 1, &mut inv),
        }
    } else if args[at] == "delete" || args[at] == "start" {
        // `delete [--force|-f] ID`, `start ID`: a record is found, bound or
        // forgotten by the id alone.
        inv.container_id = rest
            .iter()
            .find(|a| !a.as_bytes().starts_with(b"-"))
            .cloned();
    }
    inv
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
    /// It shares `args[at]` with other options (crun's `-dcCAP`): it cannot
    /// leave the argv alone.
    pub grouped: bool,
}

/// `exec` as runc or crun reads it: the options up to the container id
/// (runc does not reorder exec's arguments), every `--cap` in every form
/// that runtime takes, the process file. A command line the runtime would
/// refuse falls back to the generic scan below, which knows no more than
/// that it cannot place an option.
fn exec_as(args: &[OsString], sub_at: usize, rt: Rt, inv: &mut Invocation) {
    let words: Vec<Word<'_>> = args
        .iter()
        .enumerate()
        .skip(sub_at + 1)
        .map(|(i, a)| (i, a.as_os_str()))
        .collect();
    let parsed = match rt {
        Rt::Runc | Rt::Runc12 => grammar::go(&words, tables::RUNC_EXEC),
        Rt::Crun | Rt::Crun122 => grammar::argp(&words, [tables::CRUN_EXEC, tables::ARGP_DEFAULTS]),
    };
    let refused = parsed.problem.is_some() || (rt.is_runc() && two_forms(&parsed.sets).is_some());
    if refused {
        scan_exec(&args[sub_at + 1..], sub_at + 1, inv);
        return;
    }
    let mut exec = Exec::default();
    // Help: the runtime prints it and execs nothing.
    let exits = parsed.exited || parsed.sets.iter().any(|s| s.opt.key == Key::Exit && !s.off);
    if !exits {
        for s in &parsed.sets {
            match s.opt.key {
                Key::Process => exec.process = s.value.clone().map(PathBuf::from),
                Key::Cap => exec.caps.push(CapArg {
                    at: s.at,
                    len: s.len,
                    value: s.value.clone().unwrap_or_default(),
                    grouped: s.grouped,
                }),
                _ => {}
            }
        }
        inv.container_id = words.get(parsed.rest).map(|(_, w)| w.to_os_string());
    }
    inv.exec = Some(exec);
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
                grouped: false,
            }),
            _ => {}
        }
        i += len;
    }
    inv.exec = Some(exec);
}
