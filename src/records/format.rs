//! A record's format.
//!
//! Each record is a few lines of text, the first `userns-hostnet record
//! 1` (the format's version), then `policy`, `creator` or `init`,
//! `runtime`, `root` and `id` (the last two hex-encoded, as any bytes may
//! appear in them); unknown lines are ignored, so a later version can read
//! these.

use super::state::Process;
use crate::runtime::Kind;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use userns_hostnet_engine::policy::NetCapabilities;

/// The first line of every record: the format's version.
const VERSION: &str = "userns-hostnet record 1";

/// Where a record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Written at create by this process, which becomes the runtime's
    /// `create` (or `run`, `restore`): the container does not exist yet.
    Pending { creator: Process },
    /// The container's init, as its state names it.
    Bound { init: Process },
}

/// One converted container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub policy: NetCapabilities,
    pub stage: Stage,
    pub runtime: Kind,
    /// The state root: `dev:ino`, and the absolute path the runtime
    /// opens; `None` for a runtime whose default is not known, without
    /// `--root`.
    pub root: Option<(String, PathBuf)>,
    pub id: OsString,
}

impl Record {
    pub fn render(&self) -> Vec<u8> {
        let policy = match self.policy {
            NetCapabilities::Refuse => "refuse",
            _ => "drop",
        };
        let (word, p) = match self.stage {
            Stage::Pending { creator } => ("creator", creator),
            Stage::Bound { init } => ("init", init),
        };
        let mut s = format!(
            "{VERSION}\npolicy {policy}\n{word} {} {}\nruntime {}\n",
            p.pid,
            p.start,
            self.runtime.word()
        );
        if let Some((key, path)) = &self.root {
            s += &format!("root {key} {}\n", hex(path.as_os_str().as_bytes()));
        }
        s += &format!("id {}\n", hex(self.id.as_bytes()));
        s.into_bytes()
    }

    /// A record of this version or a later one (whose lines this one
    /// does not know are skipped); `None` for anything else.
    pub fn parse(bytes: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.lines();
        let version: u32 = lines
            .next()?
            .strip_prefix("userns-hostnet record ")?
            .parse()
            .ok()?;
        if version < 1 {
            return None;
        }
        let (mut policy, mut stage, mut runtime, mut root, mut id) = (None, None, None, None, None);
        let process = |pid: Option<&str>, start: Option<&str>| {
            Some(Process {
                pid: pid?.parse().ok()?,
                start: start?.parse().ok()?,
            })
        };
        for line in lines {
            let mut w = line.split(' ');
            match w.next() {
                // A record says "converted": a policy it cannot read is
                // the default one.
                Some("policy") => {
                    policy = Some(match w.next() {
                        Some("refuse") => NetCapabilities::Refuse,
                        _ => NetCapabilities::Drop,
                    })
                }
                Some("creator") => {
                    stage = process(w.next(), w.next()).map(|creator| Stage::Pending { creator })
                }
                Some("init") => {
                    stage = process(w.next(), w.next()).map(|init| Stage::Bound { init })
                }
                Some("runtime") => runtime = w.next().map(|w| Kind::named(Some(OsStr::new(w)))),
                Some("root") => {
                    let key = w.next()?.to_owned();
                    let path = OsString::from_vec(unhex(w.next()?)?);
                    root = Some((key, PathBuf::from(path)));
                }
                Some("id") => id = Some(OsString::from_vec(unhex(w.next()?)?)),
                _ => {}
            }
        }
        Some(Record {
            policy: policy?,
            stage: stage?,
            runtime: runtime?,
            root,
            id: id?,
        })
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}
