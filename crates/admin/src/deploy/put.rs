//! Files and links put on the host by deploy, each recorded in the state
//! file for the undo before it is made: the binaries, the shipped config
//! file, and install's plan (its links, then the configs naming them).

use super::undo::*;
use super::DeployError;
use super::{io, Host, Source, ADMIN_NAME, CONFIG_FILE, RUNTIME_LINKS};
use crate::cli::DeployArgs;
use crate::daemon::register::edit::LinkChange;
use crate::say;
use std::path::Path;
use userns_hostnet::sys::atomic::{self, Attrs};

/// Creates the node's `dir` and its missing parents, recording each one
/// created.
pub(super) fn make_dirs(host: &Host, state: &mut State, dir: &Path) -> Result<(), DeployError> {
    let mut missing: Vec<&Path> = Vec::new();
    for d in dir.ancestors() {
        if host.file(d)?.exists() {
            break;
        }
        missing.push(d);
    }
    missing.reverse();
    for d in missing {
        let here = host.entry(d)?;
        std::fs::create_dir(&here).map_err(io("cannot create", &here))?;
        if !state.created_dirs.iter().any(|c| c == d) {
            state.created_dirs.push(d.to_owned());
        }
    }
    Ok(())
}

/// `path` holds `bytes` (mode `mode`), replaced by rename when it differs.
pub(super) fn put_file(
    host: &Host,
    state: &mut State,
    path: &Path,
    bytes: &[u8],
    mode: u32,
) -> Result<bool, DeployError> {
    let here = host.entry(path)?;
    if std::fs::symlink_metadata(&here).is_ok_and(|m| m.is_file())
        && std::fs::read(&here).is_ok_and(|old| old == bytes)
    {
        return Ok(false);
    }
    put(host, state, path, after_file(bytes), || {
        atomic::replace(
            &here,
            bytes,
            Attrs {
                mode,
                owner: Some((0, 0)),
            },
            atomic::Durability::ContentsAndName,
        )?;
        Ok(format!("wrote {}", path.display()))
    })
}

/// Records what `path` held, makes the change `make` (which says what
/// it did), and records the state: the steps of every change deploy makes.
fn put(
    host: &Host,
    state: &mut State,
    path: &Path,
    after: After,
    make: impl FnOnce() -> Result<String, DeployError>,
) -> Result<bool, DeployError> {
    if let Some(dir) = path.parent() {
        make_dirs(host, state, dir)?;
    }
    remember(host, state, path, false, after)?;
    let said = make()?;
    save_state(host, state)?;
    say(&said);
    Ok(true)
}

/// A symbolic link made beside `path` and renamed over it.
pub(super) fn link_atomic(path: &Path, target: &Path) -> Result<(), DeployError> {
    let tmp = atomic::temp_path(path);
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).map_err(io("cannot create", &tmp))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io("cannot rename onto", path)(e)
    })
}

pub(super) fn put_link(
    host: &Host,
    state: &mut State,
    path: &Path,
    target: &Path,
) -> Result<bool, DeployError> {
    let here = host.entry(path)?;
    if std::fs::read_link(&here).is_ok_and(|t| t == target) {
        return Ok(false);
    }
    let after = After::Link {
        target: target.to_owned(),
    };
    put(host, state, path, after, || {
        link_atomic(&here, target)?;
        Ok(format!("linked {} -> {}", path.display(), target.display()))
    })
}

/// The wrapper, the admin tool, the runtime links to the wrapper and
/// (unless the operator has one) the shipped config file.
pub(super) fn put_binaries(
    host: &Host,
    state: &mut State,
    args: &DeployArgs,
    source: &Source,
) -> Result<(), DeployError> {
    let bin = &args.bin_dir;
    put_file(
        host,
        state,
        &bin.join(userns_hostnet::WRAPPER_NAME),
        &source.wrapper,
        0o755,
    )?;
    put_file(host, state, &bin.join(ADMIN_NAME), &source.admin, 0o755)?;
    for link in RUNTIME_LINKS {
        put_link(
            host,
            state,
            &bin.join(link),
            Path::new(userns_hostnet::WRAPPER_NAME),
        )?;
    }
    let config_file = Path::new(CONFIG_FILE);
    if std::fs::symlink_metadata(host.entry(config_file)?).is_err() {
        put_file(
            host,
            state,
            config_file,
            userns_hostnet::config::SHIPPED.as_bytes(),
            0o644,
        )?;
    } else if state.entry(config_file).is_none() {
        say(&format!("kept {}: the operator's", config_file.display()));
    }
    Ok(())
}

/// install's plan made on the node: its links, then the configs naming
/// them, then its notes. Whether a config changed (a restart is then due,
/// recorded so that a later deploy still does it).
pub(super) fn register_handler(
    host: &Host,
    state: &mut State,
    args: &DeployArgs,
    plan: &crate::daemon::register::edit::InstallPlan,
) -> Result<bool, DeployError> {
    for l in &plan.links {
        if let LinkChange::Create { path, target } = l {
            put_link(host, state, &host.node_path(path), target)?;
        }
    }
    let mut changed = false;
    for c in plan.files.iter().filter(|c| c.old != c.new) {
        let Some(new) = &c.new else { continue };
        let node = host.node_path(&c.path);
        if let Some(dir) = node.parent() {
            make_dirs(host, state, dir)?;
        }
        remember(host, state, &node, true, after_file(new.as_bytes()))?;
        crate::files::write_atomic(&c.path, new.as_bytes()).map_err(io("cannot write", &c.path))?;
        say(&format!(
            "registered runtime handler {} in {}",
            args.handler,
            node.display()
        ));
        changed = true;
    }
    for n in &plan.notes {
        say(n);
    }
    if changed {
        state.restart_pending = true;
        state.registered = Moment::now();
        save_state(host, state)?;
    }
    Ok(changed)
}
