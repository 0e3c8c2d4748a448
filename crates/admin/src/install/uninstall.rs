//! `userns-hostnet uninstall`: install's plan run backwards, refused while
//! containers of the handler are still on the node unless forced.

use super::*;

/// `uninstall`: the exit status.
pub fn run(u: &UninstallArgs) -> Result<i32, InstallError> {
    let args = &uninstall_registration(u);
    reported(
        args,
        plan(args, false).and_then(|mut plan| {
            orphan_links(args, &mut plan)?;
            guard(args, u.force, &mut plan)?;
            apply(args, &plan, false)
        }),
    )
}

/// An install cut short before it wrote the config (or a handler table
/// removed by hand) leaves the handler's links, which no daemon config
/// names: a plan that changes nothing else removes them. Links a config
/// of any daemon on the node still names stay.
fn orphan_links(args: &Registration, plan: &mut InstallPlan) -> Result<(), InstallError> {
    let d = args.daemon;
    let nothing_else = plan.links.is_empty() && plan.files.iter().all(|c| !c.changes());
    if args.hook || d.layouts().is_empty() || !nothing_else {
        return Ok(());
    }
    let dir = handlers_node_dir(args).join(&args.handler);
    let named = dir.to_string_lossy().into_owned();
    let root = args.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    let mut configs: Vec<PathBuf> = super::daemon::ALL
        .iter()
        .flat_map(|d| d.config_files(&root))
        .collect();
    if let Some(c) = &args.config {
        configs.extend(node_file(args, c).ok());
    }
    if configs
        .iter()
        .any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(&named)))
    {
        return Ok(());
    }
    for name in [userns_hostnet::WRAPPER_NAME, HANDLER_RUNTIME_LINK] {
        let path = node_entry(args, &dir.join(name))?;
        if let Ok(target) = std::fs::read_link(&path) {
            plan.links.push(LinkChange::Remove { path, target });
        }
    }
    if !plan.links.is_empty() {
        plan.notes.push(format!(
            "the links of handler {}, which no daemon config names (left by an install cut short), go",
            args.handler
        ));
    }
    Ok(())
}

/// The containers on the node of the handler an uninstall with `args`
/// would remove ([`in_use`]): deploy's removal asks before it undoes.
pub fn containers_in_use(
    args: &Registration,
) -> Result<Vec<super::daemon::live::Live>, InstallError> {
    let plan = plan(args, false)?;
    Ok(match handler_removed(args, &plan)? {
        Some(h) => in_use::containers(&node_root(args)?, h.as_ref()),
        None => Vec::new(),
    })
}

/// What tells the containers of the handler this plan removes apart
/// (from the handler's table as it was, the links the plan removes and
/// the daemon's config); `None` when the plan removes no handler (the
/// OCI hook, which runs at create only).
pub(super) fn handler_removed(
    args: &Registration,
    plan: &InstallPlan,
) -> Result<Option<Box<dyn daemon::live::Handler>>, InstallError> {
    let d = args.daemon;
    if args.hook {
        return Ok(None);
    }
    let root = node_root(args)?;
    // The handler's entry in a file the plan changes, when the new text
    // no longer has it.
    let find = |text: &str| -> Option<Item> {
        let doc = text.parse::<DocumentMut>().ok()?;
        d.handler_entry(&doc, &args.handler)
    };
    let removed: Vec<Item> = plan
        .files
        .iter()
        .filter(|c| c.changes())
        .filter(|c| c.new.as_deref().and_then(find).is_none())
        .filter_map(|c| c.old.as_deref().and_then(find))
        .collect();
    let links: Vec<String> = plan
        .links
        .iter()
        .filter_map(|l| match l {
            LinkChange::Remove { path, .. } => Some(root.node_path(path)),
            LinkChange::Create { .. } => None,
        })
        .filter(|p| p.file_name() == Some(userns_hostnet::WRAPPER_NAME.as_ref()))
        .filter_map(|p| p.to_str().map(str::to_owned))
        .collect();
    if removed.is_empty() && links.is_empty() {
        return Ok(None);
    }
    d.in_use(args, &removed, links)
}

/// uninstall's command line as the registration it removes (install's
/// own options at their defaults).
pub(super) fn uninstall_registration(u: &UninstallArgs) -> Registration {
    Registration {
        config: u.config.clone(),
        drop_in: u.drop_in,
        handlers_dir: u.handlers_dir.clone(),
        hook: u.hook,
        hooks_dir: u.hooks_dir.clone(),
        root: u.root.clone(),
        dry_run: u.dry_run,
        check: u.check,
        json: u.json,
        ..Registration::new(u.daemon, &u.handler)
    }
}
