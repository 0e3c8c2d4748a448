//! deploy's undo: the state file that records what each file and link
//! was before deploy changed it, and the removal that puts them back.

use super::*;

/// What a path held before deploy first changed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Before {
    Absent,
    /// A file, whose bytes are kept in `STATE_DIR/saved`.
    File {
        saved: String,
        mode: u32,
        uid: u32,
        gid: u32,
    },
    Link {
        target: PathBuf,
    },
}

/// What deploy left at a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum After {
    File { len: u64, fnv1a: String },
    Link { target: PathBuf },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub path: PathBuf,
    /// A daemon configuration file: undone before the rest, and with
    /// `uninstall`'s rules when edited since.
    #[serde(default)]
    pub daemon_config: bool,
    pub before: Before,
    pub after: After,
}

/// The version of the state's format this build writes, and the newest it
/// reads. A field added where an earlier version's reading ignores it
/// keeps the number (serde skips unknown fields; a missing one takes its
/// default); one that would change what an earlier version undoes raises
/// it, and that earlier version then refuses the state instead of undoing
/// the wrong thing. States written before the number existed read as 1.
pub const STATE_FORMAT: u32 = 1;

fn format_one() -> u32 {
    1
}

/// Everything a deploy changed on the host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Its format: [`save_state`] writes [`STATE_FORMAT`].
    #[serde(default = "format_one")]
    pub format: u32,
    pub daemon: String,
    pub handler: String,
    pub daemon_config: PathBuf,
    pub unit: String,
    pub entries: Vec<Entry>,
    /// Directories deploy created, parents first.
    pub created_dirs: Vec<PathBuf>,
    /// The daemon config changed and the daemon was not restarted since.
    #[serde(default)]
    pub restart_pending: bool,
    /// When deploy last wrote the handler into the daemon's config: a
    /// daemon that started before it has not read it. Absent in a state
    /// of a version before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered: Option<Moment>,
}

/// A moment of one boot of the host: its boot ID and the clock ticks since
/// that boot (CLOCK_BOOTTIME, the clock of a process's start time in
/// /proc/PID/stat).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moment {
    pub boot_id: String,
    pub ticks: u64,
}

impl Moment {
    /// Now, on the host's kernel (the same in the installer's pod).
    pub fn now() -> Option<Moment> {
        let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME).ok()?;
        let hz =
            u64::try_from(nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??).ok()?;
        let ticks = u64::try_from(t.tv_sec()).ok()? * hz
            + u64::try_from(t.tv_nsec()).ok()? * hz / 1_000_000_000;
        Some(Moment {
            boot_id: boot_id.trim().to_owned(),
            ticks,
        })
    }
}

impl State {
    pub(super) fn entry(&self, path: &Path) -> Option<&Entry> {
        self.entries.iter().find(|e| e.path == path)
    }

    /// The daemon the state names (by its module's name; the first
    /// service of the registry for one no module has).
    pub(super) fn daemon(&self) -> &'static dyn crate::daemon::DaemonModule {
        let mut services = crate::daemon::services().map(|(d, _)| d);
        let first = services.next().expect("a daemon deploy registers with");
        std::iter::once(first)
            .chain(services)
            .find(|d| d.name() == self.daemon)
            .unwrap_or(first)
    }
}

pub(super) fn state_path(host: &Host) -> Result<PathBuf, DeployError> {
    host.entry(&Path::new(STATE_DIR).join(STATE_FILE))
}

/// Where a saved file's bytes are kept.
pub(super) fn saved_path(host: &Host, saved: &str) -> Result<PathBuf, DeployError> {
    host.entry(&Path::new(STATE_DIR).join(saved))
}

pub(super) fn load_state(host: &Host) -> Result<Option<State>, DeployError> {
    use std::io::{Error, ErrorKind::InvalidData};
    let p = state_path(host)?;
    let bytes = match std::fs::read(&p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        read => read.map_err(io("cannot read", &p))?,
    };
    let state: State = serde_json::from_slice(&bytes)
        .map_err(|e| io("cannot parse", &p)(Error::new(InvalidData, e)))?;
    if state.format > STATE_FORMAT {
        let why = format!(
            "format {} is of a newer version (this one reads up to {STATE_FORMAT}): run that version's deploy",
            state.format
        );
        return Err(io("cannot read", &p)(Error::new(InvalidData, why)));
    }
    Ok(Some(state))
}

pub(super) fn save_state(host: &Host, state: &State) -> Result<(), DeployError> {
    let p = state_path(host)?;
    // Written by this version: in its format.
    let state = &State {
        format: STATE_FORMAT,
        ..state.clone()
    };
    let mut bytes = serde_json::to_vec_pretty(state).unwrap_or_default();
    bytes.push(b'\n');
    if std::fs::read(&p).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    write_private(&p, &bytes)
}

/// Replace `path` with `bytes`, durably, readable by root alone: the
/// state and the saved files hold the node's configs as they were.
pub(super) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), DeployError> {
    let private = Attrs {
        mode: 0o600,
        owner: Some((0, 0)),
    };
    atomic::replace(path, bytes, private, atomic::Durability::ContentsAndName)?;
    Ok(())
}

/// A file as deploy wrote it: its length and FNV-1a, which tell whether
/// it still holds that.
pub(super) fn after_file(bytes: &[u8]) -> After {
    After::File {
        len: bytes.len() as u64,
        fnv1a: format!("{:016x}", userns_hostnet::hash::fnv1a(bytes)),
    }
}

/// What is at `path` now, in the terms of [`After`]; `None` when absent
/// or neither a file nor a link.
pub(super) fn current(path: &Path) -> Option<After> {
    let m = std::fs::symlink_metadata(path).ok()?;
    if m.file_type().is_symlink() {
        return std::fs::read_link(path)
            .ok()
            .map(|target| After::Link { target });
    }
    if m.is_file() {
        return std::fs::read(path).ok().map(|b| after_file(&b));
    }
    None
}

/// Records what `path` holds before deploy first changes it (a later run
/// keeps the first record).
pub(super) fn remember(
    host: &Host,
    state: &mut State,
    path: &Path,
    daemon_config: bool,
    after: After,
) -> Result<(), DeployError> {
    if let Some(e) = state.entries.iter_mut().find(|e| e.path == path) {
        e.after = after;
        return Ok(());
    }
    let here = host.entry(path)?;
    let before = match std::fs::symlink_metadata(&here) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Before::Absent,
        Err(e) => return Err(io("cannot inspect", &here)(e)),
        Ok(m) if m.file_type().is_symlink() => Before::Link {
            target: std::fs::read_link(&here).map_err(io("cannot read", &here))?,
        },
        Ok(m) if m.is_file() => {
            let bytes = std::fs::read(&here).map_err(io("cannot read", &here))?;
            let saved = format!("saved-{}", state.entries.len());
            let to = saved_path(host, &saved)?;
            write_private(&to, &bytes)?;
            Before::File {
                saved,
                mode: m.permissions().mode() & 0o7777,
                uid: m.uid(),
                gid: m.gid(),
            }
        }
        Ok(_) => {
            return Err(DeployError::Usage(format!(
                "{}: exists and is neither a file nor a link; leaving it alone",
                path.display()
            )))
        }
    };
    state.entries.push(Entry {
        path: path.to_owned(),
        daemon_config,
        before,
        after,
    });
    // The state is written after every change, so that an install cut
    // short is still undone whole.
    save_state(host, state)
}

/// What `before` looks like in the terms of [`current`].
pub(super) fn before_as_after(host: &Host, before: &Before) -> Option<After> {
    match before {
        Before::Absent => None,
        Before::Link { target } => Some(After::Link {
            target: target.clone(),
        }),
        Before::File { saved, .. } => std::fs::read(saved_path(host, saved).ok()?)
            .ok()
            .map(|b| after_file(&b)),
    }
}

/// Puts the node's `e.path` back as it was before the first deploy.
pub(super) fn restore(host: &Host, e: &Entry) -> Result<(), DeployError> {
    let here = host.entry(&e.path)?;
    match &e.before {
        Before::Absent => match std::fs::remove_file(&here) {
            Ok(()) => say(&format!("removed {}", e.path.display())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(io("cannot remove", &here)(err)),
        },
        Before::Link { target } => {
            link_atomic(&here, target)?;
            say(&format!(
                "restored {} -> {}",
                e.path.display(),
                target.display()
            ));
        }
        Before::File {
            saved,
            mode,
            uid,
            gid,
        } => {
            let from = saved_path(host, saved)?;
            let bytes = std::fs::read(&from).map_err(io("cannot read", &from))?;
            let old = std::fs::File::open(&here).ok();
            atomic::replace_with(
                &here,
                &bytes,
                Attrs {
                    mode: *mode,
                    owner: Some((*uid, *gid)),
                },
                atomic::Durability::ContentsAndName,
                old.as_ref(),
                || {},
            )?;
            say(&format!("restored {}", e.path.display()));
        }
    }
    Ok(())
}

/// Undo: the daemon's config first (and a restart when asked), then the
/// rest in reverse order, then the directories deploy created and its
/// state. Refused, changing nothing, while the handler still has
/// containers on the node.
// Long: the undo's steps in the reverse order of the install's, each checked before the next, so that a failure leaves the node as it was.
pub(super) fn undo(host: &Host, args: &DeployArgs) -> Result<(), DeployError> {
    let Some(state) = load_state(host)? else {
        say("nothing to undo: no deploy state on this host");
        return Ok(());
    };
    let containers = containers_of(host, args, &state)?;
    if !containers.is_empty() {
        return Err(DeployError::InUse {
            handler: state.handler.clone(),
            containers,
        });
    }
    let mut config_changed = false;
    let (configs, rest): (Vec<&Entry>, Vec<&Entry>) =
        state.entries.iter().partition(|e| e.daemon_config);
    for e in configs {
        let here = host.entry(&e.path)?;
        if current(&here).as_ref() == Some(&e.after) {
            restore(host, e)?;
            config_changed = true;
            continue;
        }
        // Edited since: take out the handler alone, as uninstall would.
        let plan = state
            .daemon()
            .plan(&deployed(host, args, &state), false)
            .map_err(|e| host.on_node(e))?;
        for c in plan
            .files
            .iter()
            .filter(|c| c.path == here && c.old != c.new)
        {
            match &c.new {
                Some(new) => crate::files::write_atomic(&c.path, new.as_bytes())
                    .map_err(io("cannot write", &c.path))?,
                None => std::fs::remove_file(&c.path).map_err(io("cannot remove", &c.path))?,
            }
            say(&format!(
                "{}: changed since deploy; removed handler {} alone",
                e.path.display(),
                state.handler
            ));
            config_changed = true;
        }
        for n in &plan.notes {
            say(n);
        }
    }
    if config_changed && args.restart {
        restart(host, args, &state.unit)?;
    }
    for e in rest.iter().rev() {
        let now = current(&host.entry(&e.path)?);
        if now.as_ref() == Some(&e.after) {
            restore(host, e)?;
        } else if now == before_as_after(host, &e.before) {
            // Already put back, by an undo that stopped part way.
        } else {
            say(&format!("left {}: changed since deploy", e.path.display()));
        }
    }
    for e in &state.entries {
        if let Before::File { saved, .. } = &e.before {
            let _ = std::fs::remove_file(saved_path(host, saved)?);
        }
    }
    let _ = std::fs::remove_file(state_path(host)?);
    for d in state.created_dirs.iter().rev() {
        // Only when empty: anything put there since keeps it.
        if std::fs::remove_dir(host.entry(d)?).is_ok() {
            say(&format!("removed {}", d.display()));
        }
    }
    say("undone");
    Ok(())
}
