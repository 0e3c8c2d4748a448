//! install's planning for `--hook`: the hook definition in CRI-O's or
//! podman's hooks directory (and for CRI-O, the drop-in that makes it read
//! the administrator's).

use super::*;

/// The hooks directory `--hook` writes to (as the node sees it), why that
/// one, and for CRI-O reading none but the vendor's, the drop-in (on this
/// host) that adds the administrator's.
pub(super) fn hooks_dir(
    args: &Registration,
) -> Result<(PathBuf, String, Option<PathBuf>), InstallError> {
    if let Some(d) = &args.hooks_dir {
        return Ok((d.clone(), "--hooks-dir".into(), None));
    }
    let Some(lookup) = args.daemon.hooks() else {
        return Err(UsageError::ContainerdHook.into());
    };
    let daemon::HookDirs {
        named: dirs,
        from,
        defaults,
        drop_in,
    } = lookup(args)?;
    let (dirs, from, drop_in) = match (dirs, drop_in) {
        (Some(d), _) => (d, from, None),
        // CRI-O reads the vendor's directory alone by default: the
        // administrator's goes into its hooks_dir by a drop-in.
        (None, Some(drop_in)) => (
            vec![
                hookfile::VENDOR_DIR.to_owned(),
                hookfile::ADMIN_DIR.to_owned(),
            ],
            format!(
                "{from} is not set: CRI-O reads only {}, so {} adds {}",
                hookfile::VENDOR_DIR,
                drop_in.display(),
                hookfile::ADMIN_DIR
            ),
            Some(drop_in),
        ),
        (None, None) => (
            defaults.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            format!("the default, as {from} is not set"),
            None,
        ),
    };
    let Some(dir) = daemon::node::hooks_dir_to_write(&dirs) else {
        return Err(DaemonConfigError::NoHooksDir { from }.into());
    };
    if !dir.is_absolute() {
        return Err(DaemonConfigError::HooksDirRelative { from, dir }.into());
    }
    let from = if dir.starts_with("/etc") {
        format!("the administrator's; {from}")
    } else {
        format!("the vendor's, the only one of {from} (add {} to it to keep the hook apart from the packages' files)", hookfile::ADMIN_DIR)
    };
    Ok((dir, from, drop_in))
}

/// The program a hook definition runs: this one, unless it is a
/// temporary or build path or not root's (`--force` writes it anyway);
/// under `--root`, the installed /usr/bin/userns-hostnet of the node.
pub(super) fn hook_program(args: &Registration) -> Result<String, InstallError> {
    use std::os::unix::fs::MetadataExt;
    let tool = match &args.root {
        Some(_) => PathBuf::from("/usr/bin/userns-hostnet"),
        None => std::env::current_exe().map_err(InstallError::OwnPath)?,
    };
    let uid = node_root(args)?.metadata(&tool).ok().map(|m| m.uid());
    if let Some(why) = hookfile::unfit_tool(&tool, uid).filter(|_| !args.force) {
        return Err(UsageError::UnfitHookProgram { tool, why }.into());
    }
    tool.to_str()
        .map(str::to_owned)
        .ok_or_else(|| InstallError::NotUtf8(tool.clone()))
}

/// `--hook`: the hook definition file in the daemon's hooks directory.
pub(super) fn plan_hook(args: &Registration, install: bool) -> Result<InstallPlan, InstallError> {
    let (dir, from, drop_in) = hooks_dir(args)?;
    // A copy of a daemon's config names this host's hooks directory only
    // by default: writing there would change the host for a file that is
    // not its config.
    let copy = args.config.as_deref().filter(|c| !is_hosts_config(c));
    if let Some(config) = copy.filter(|_| {
        args.root.is_none()
            && args.hooks_dir.is_none()
            && !args.dry_run
            && !args.check
            && (dir.starts_with("/etc") || dir.starts_with("/usr"))
    }) {
        return Err(UsageError::HostHooksForCopy {
            config: config.to_owned(),
            dir,
        }
        .into());
    }
    let path = node_entry(args, &dir.join(hookfile::FILE))?;
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(InstallError::io("cannot read", &path)(e)),
    };
    let mut plan = InstallPlan::default();
    plan.notes
        .push(format!("hooks directory: {} ({from})", dir.display()));
    let owner = old.as_deref().map(hookfile::owner);
    let new = match (install, owner) {
        (_, Some(left @ (Owner::Changed | Owner::Operator))) => {
            let why = if left == Owner::Changed {
                "changed since install (its marker's fingerprint no longer matches)"
            } else {
                "not written by install (no install marker in its comment member)"
            };
            plan.leave(
                install,
                format!(
                    "left {}: {why}; remove it by hand if it should go",
                    path.display()
                ),
            );
            old.clone()
        }
        (true, _) => {
            let tool = hook_program(args)?;
            Some(
                hookfile::definition(&tool, args.daemon.name())
                    .map_err(InstallError::ShippedHook)?,
            )
        }
        (false, _) => None,
    };
    plan.files.push(FileChange {
        path,
        old,
        new,
        backup: false,
    });
    if let Some(drop_in) = drop_in {
        plan_hooks_drop_in(install, &drop_in, &mut plan)?;
    }
    Ok(plan)
}

/// CRI-O's drop-in adding the administrator's hooks directory: written
/// with the hook, removed with it while it holds what install wrote.
pub(super) fn plan_hooks_drop_in(
    install: bool,
    path: &Path,
    plan: &mut InstallPlan,
) -> Result<(), InstallError> {
    let old = toml::read_optional(path)?;
    let ours = hookfile::crio_hooks_drop_in();
    let new = match (&old, install) {
        (Some(text), _) if *text != ours => {
            plan.leave(
                install,
                format!(
                    "left {}: not as install wrote it; remove it by hand if it should go",
                    path.display()
                ),
            );
            old.clone()
        }
        (_, true) => Some(ours),
        (_, false) => None,
    };
    plan.restart = plan.restart || old != new;
    plan.files.push(FileChange {
        path: path.to_owned(),
        old,
        new,
        backup: false,
    });
    Ok(())
}
