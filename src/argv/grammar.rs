//! The two option grammars, as their parsers read a command line:
//! Go's `flag` package behind urfave/cli v1 (runc; two ways of reordering a
//! subcommand's words, before and after v1.22.14), and glibc's
//! `getopt_long` behind argp (crun). Pure: words in, options read out.

use super::tables::{Arity, Key, Opt};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// An argument with its index in the argv the wrapper was given (without
/// argv[0]), so that whatever is read names the word it came from.
pub type Word<'a> = (usize, &'a OsStr);

/// One option as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Set {
    pub opt: &'static Opt,
    /// The name as written (Go: which of the option's names was used).
    pub name: Vec<u8>,
    /// The value; for a switch, `None`.
    pub value: Option<OsString>,
    /// A switch given `=false` (Go only).
    pub off: bool,
    /// Where the option stands.
    pub at: usize,
    /// How many words it takes there: 1, or 2 with its value the next word.
    pub len: usize,
    /// It shares its word with other short options (argp's `-dcCAP`).
    pub grouped: bool,
}

/// Why a parser stops short of the command line, as the runtime would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Not an option of this parser.
    Unknown,
    /// A prefix of several options that differ (argp).
    Ambiguous(Vec<&'static str>),
    /// An option that takes a value is the last argument.
    MissingValue,
    /// `--switch=value` (argp).
    NoValueAllowed,
    /// `-switch=x` with x not a Go boolean.
    NotBool,
    /// `---x`, `-=x` (Go).
    BadSyntax,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub at: usize,
    pub reason: Reason,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub sets: Vec<Set>,
    /// The first argument after the options (a `--` that ended them is
    /// consumed), as an index into the words given.
    pub rest: usize,
    /// argp stopped at an option that prints and exits.
    pub exited: bool,
    pub problem: Option<Problem>,
}

/// Go's `strconv.ParseBool`.
fn go_bool(v: &[u8]) -> Option<bool> {
    match v {
        b"1" | b"t" | b"T" | b"TRUE" | b"true" | b"True" => Some(true),
        b"0" | b"f" | b"F" | b"FALSE" | b"false" | b"False" => Some(false),
        _ => None,
    }
}

/// Go's `flag.FlagSet.Parse`: one or two dashes, `name=value`, a value
/// option takes the next argument whatever it is, a bool flag never does;
/// it stops at the first word that is not a flag, or after `--`. Names
/// are matched whole; a short name is just another name.
pub fn go(words: &[Word<'_>], table: &'static [Opt]) -> Parsed {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < words.len() {
        let (at, word) = words[i];
        let s = word.as_bytes();
        if s.len() < 2 || s[0] != b'-' {
            break;
        }
        let mut dashes = 1;
        if s[1] == b'-' {
            dashes = 2;
            if s.len() == 2 {
                i += 1;
                break;
            }
        }
        let body = &s[dashes..];
        if body.is_empty() || body[0] == b'-' || body[0] == b'=' {
            out.problem = Some(Problem {
                at,
                reason: Reason::BadSyntax,
            });
            break;
        }
        i += 1;
        let (name, inline) = match body[1..].iter().position(|&c| c == b'=') {
            Some(p) => (&body[..p + 1], Some(&body[p + 2..])),
            None => (body, None),
        };
        let Some(opt) = table
            .iter()
            .find(|o| o.long.as_bytes() == name || o.short.is_some_and(|c| [c] == name))
        else {
            out.problem = Some(Problem {
                at,
                reason: Reason::Unknown,
            });
            break;
        };
        let mut set = Set {
            opt,
            name: name.to_vec(),
            value: None,
            off: false,
            at,
            len: 1,
            grouped: false,
        };
        if opt.arity == Arity::Flag {
            if let Some(v) = inline {
                match go_bool(v) {
                    Some(on) => set.off = !on,
                    None => {
                        out.problem = Some(Problem {
                            at,
                            reason: Reason::NotBool,
                        });
                        break;
                    }
                }
            }
        } else if let Some(v) = inline {
            set.value = Some(OsStr::from_bytes(v).to_os_string());
        } else if let Some(&(_, next)) = words.get(i) {
            set.value = Some(next.to_os_string());
            set.len = 2;
            i += 1;
        } else {
            out.problem = Some(Problem {
                at,
                reason: Reason::MissingValue,
            });
            break;
        }
        out.sets.push(set);
    }
    out.rest = i;
    out
}

/// urfave/cli v1's `reorderArgs` up to v1.22.1 (runc 1.1), run on a
/// subcommand's words before Go's parser: every word that starts with `-` moves to the front, each taking
/// the word after it along (as its presumed value) unless it contains `=`
/// or that word starts with `-`; from `--` on, everything stays behind.
pub fn urfave_reorder<'a>(words: &[Word<'a>]) -> Vec<Word<'a>> {
    let mut flags = Vec::new();
    let mut others = Vec::new();
    let mut takes_next = false;
    for (k, &(at, word)) in words.iter().enumerate() {
        let s = word.as_bytes();
        if s == b"--" {
            others.extend_from_slice(&words[k..]);
            break;
        }
        if takes_next && !s.starts_with(b"-") {
            takes_next = false;
            flags.push((at, word));
            continue;
        }
        takes_next = false;
        if s != b"-" && s.starts_with(b"-") {
            flags.push((at, word));
            takes_next = !s.contains(&b'=');
        } else {
            others.push((at, word));
        }
    }
    flags.extend(others);
    flags
}

/// urfave/cli v1.22.14 and later (runc 1.2 and later), `reorderArgs`: only
/// the words that name one of the command's own options move to the
/// front (after its dashes, up to `=`: `---bundle=x` names `bundle`), each
/// taking the word after it along unless it contains `=` or that word
/// names an option itself (so an unknown `-x` there is a value, and so is
/// `--`); anything else stays behind in its order. A `--` that is no value
/// ends the reordering, and moves to the front of what stayed behind.
pub fn urfave_reorder_known<'a>(words: &[Word<'a>], table: &'static [Opt]) -> Vec<Word<'a>> {
    let is_option = |s: &[u8]| -> bool {
        if s == b"-" || s == b"--" || !s.starts_with(b"-") {
            return false;
        }
        let body = s.strip_prefix(b"--").unwrap_or(s);
        let body = body.strip_prefix(b"-").unwrap_or(body);
        let name = body.split(|&c| c == b'=').next().unwrap_or(body);
        table.iter().any(|o| {
            (!o.long.is_empty() && o.long.as_bytes() == name)
                || o.short.is_some_and(|c| [c] == name)
        })
    };
    let mut moved = Vec::new();
    let mut stayed = Vec::new();
    let mut may_be_value = false;
    for (k, &(at, word)) in words.iter().enumerate() {
        let s = word.as_bytes();
        if may_be_value && !is_option(s) {
            may_be_value = false;
            moved.push((at, word));
        } else if s == b"--" {
            stayed.insert(0, (at, word));
            stayed.extend_from_slice(&words[k + 1..]);
            break;
        } else if is_option(s) {
            moved.push((at, word));
            may_be_value = !s.contains(&b'=');
        } else {
            stayed.push((at, word));
        }
    }
    moved.extend(stayed);
    moved
}

/// The long option `name` stands for in getopt_long: an exact name, else
/// the only option it is a prefix of (several count as one when they are
/// the same option under other names, as crun's `--root`/`--rootless`).
fn long_option(name: &[u8], tables: [&'static [Opt]; 2]) -> Result<&'static Opt, Reason> {
    let all = || tables.into_iter().flatten().filter(|o| !o.long.is_empty());
    if let Some(o) = all().find(|o| o.long.as_bytes() == name) {
        return Ok(o);
    }
    let mut found = all().filter(|o| o.long.as_bytes().starts_with(name));
    let Some(first) = found.next() else {
        return Err(Reason::Unknown);
    };
    let others: Vec<&'static Opt> = found
        .filter(|o| o.key != first.key || o.arity != first.arity)
        .collect();
    if others.is_empty() {
        return Ok(first);
    }
    Err(Reason::Ambiguous(
        std::iter::once(first.long)
            .chain(others.iter().map(|o| o.long))
            .collect(),
    ))
}

/// argp in order (`ARGP_IN_ORDER`), that is glibc's `getopt_long`: long
/// options after two dashes only, by any unambiguous prefix, with
/// `--opt=value` or the value as the next word; short options after one
/// dash, grouped (`-db`), a value attached (`-bDIR`) or the next word; it
/// stops at the first word that is not an option, after `--`, or at an
/// option that prints and exits (help, usage, version).
pub fn argp(words: &[Word<'_>], tables: [&'static [Opt]; 2]) -> Parsed {
    let mut out = Parsed::default();
    let mut i = 0;
    let fail = |out: &mut Parsed, at, reason| {
        out.problem = Some(Problem { at, reason });
    };
    'words: while i < words.len() {
        let (at, word) = words[i];
        let s = word.as_bytes();
        if s == b"--" {
            i += 1;
            break;
        }
        if s.len() < 2 || s[0] != b'-' {
            break;
        }
        i += 1;
        if let Some(body) = s.strip_prefix(b"--") {
            let (name, inline) = match body.iter().position(|&c| c == b'=') {
                Some(p) => (&body[..p], Some(&body[p + 1..])),
                None => (body, None),
            };
            let opt = match long_option(name, tables) {
                Ok(o) => o,
                Err(reason) => {
                    fail(&mut out, at, reason);
                    break;
                }
            };
            let mut set = Set {
                opt,
                name: opt.long.as_bytes().to_vec(),
                value: None,
                off: false,
                at,
                len: 1,
                grouped: false,
            };
            match (opt.arity, inline) {
                (Arity::Flag, Some(_)) => {
                    fail(&mut out, at, Reason::NoValueAllowed);
                    break;
                }
                (Arity::Flag, None) | (Arity::Optional, None) => {}
                (_, Some(v)) => set.value = Some(OsStr::from_bytes(v).to_os_string()),
                (Arity::Value, None) => match words.get(i) {
                    Some(&(_, next)) => {
                        set.value = Some(next.to_os_string());
                        set.len = 2;
                        i += 1;
                    }
                    None => {
                        fail(&mut out, at, Reason::MissingValue);
                        break;
                    }
                },
            }
            out.sets.push(set);
            if opt.key == Key::Exit {
                out.exited = true;
                break;
            }
            continue;
        }
        let mut j = 1;
        while j < s.len() {
            let c = s[j];
            let Some(opt) = tables.into_iter().flatten().find(|o| o.short == Some(c)) else {
                fail(&mut out, at, Reason::Unknown);
                break 'words;
            };
            let mut set = Set {
                opt,
                name: vec![c],
                value: None,
                off: false,
                at,
                len: 1,
                grouped: j > 1,
            };
            let attached = &s[j + 1..];
            match opt.arity {
                Arity::Flag => {
                    j += 1;
                    // A switch followed by more letters groups them.
                    set.grouped |= j < s.len();
                }
                Arity::Optional => {
                    if !attached.is_empty() {
                        set.value = Some(OsStr::from_bytes(attached).to_os_string());
                    }
                    j = s.len();
                }
                Arity::Value => {
                    if !attached.is_empty() {
                        set.value = Some(OsStr::from_bytes(attached).to_os_string());
                    } else if let Some(&(_, next)) = words.get(i) {
                        set.value = Some(next.to_os_string());
                        set.len = 2;
                        i += 1;
                    } else {
                        fail(&mut out, at, Reason::MissingValue);
                        break 'words;
                    }
                    j = s.len();
                }
            }
            out.sets.push(set);
            if opt.key == Key::Exit {
                out.exited = true;
                break 'words;
            }
        }
    }
    out.rest = i;
    out
}
