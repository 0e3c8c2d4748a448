//! The runtime handler install writes or uninstall removes, shared by the
//! daemons' planners: which binary it runs, its links, its table carried
//! from the daemon's default, the drop-in and the default it may set.

use super::*;

/// Does this handler run the wrapper (its binary at `layout.binary`)?
pub(crate) fn runs_wrapper(layout: &Layout, handler: &Item) -> bool {
    daemon::config::binary_of(layout, handler).is_some_and(daemon::config::is_wrapper)
}

/// The runtime the source handler runs, which the new handler keeps as
/// its real runtime: `binary` (read where `what` says; `implicit` when no
/// setting names it and the daemon looks the name up in PATH), unless the
/// wrapper's own name already names one or that binary is the wrapper.
pub(crate) fn carried_runtime(
    args: &Registration,
    binary: Option<&str>,
    implicit: bool,
    wrapper: &str,
    what: &str,
    notes: &mut Vec<String>,
) -> Result<Option<PathBuf>, InTheWayError> {
    let Some(binary) = binary.filter(|b| !b.is_empty()) else {
        return Ok(None);
    };
    let own = Path::new(wrapper)
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(runtime::OWN_NAME_PREFIX))
        .is_some_and(|r| !r.is_empty());
    if own || daemon::config::is_wrapper(binary) {
        return Ok(None);
    }
    let path = if binary.contains('/') {
        let p = PathBuf::from(binary);
        if !p.is_absolute() {
            return Err(InTheWayError::RuntimeRelative {
                what: what.to_owned(),
                binary: binary.to_owned(),
            });
        }
        p
    } else {
        match find_in_path(args, binary) {
            Some(p) => p,
            None if implicit => {
                notes.push(format!(
                    "warning: the {what} is not there: the wrapper will choose its real runtime when it runs"
                ));
                return Ok(None);
            }
            None => {
                return Err(InTheWayError::RuntimeNotInPath {
                    what: what.to_owned(),
                    binary: binary.to_owned(),
                })
            }
        }
    };
    if !is_executable_on_node(args, &path) {
        notes.push(format!(
            "warning: {} ({what}) is not an executable file: containers of this handler will not start until it is",
            path.display()
        ));
    }
    Ok(Some(path))
}

/// The binary a new handler names: [`handler_binary`] with the runtime
/// [`carried_runtime`] carries from the source handler.
pub(crate) fn carried_handler_binary(
    args: &Registration,
    config: &Path,
    wrapper: &str,
    (binary, implicit, what): (&str, bool, &str),
    plan: &mut InstallPlan,
) -> Result<String, InstallError> {
    let real = carried_runtime(args, Some(binary), implicit, wrapper, what, &mut plan.notes)?;
    handler_binary(args, config, wrapper, real, what, plan)
}

/// The binary a new handler names, and the links it needs: the wrapper
/// itself, or with a runtime carried from the source (`real`, read where
/// `what` says) the handler's own link to it.
pub(crate) fn handler_binary(
    args: &Registration,
    config: &Path,
    wrapper: &str,
    real: Option<PathBuf>,
    what: &str,
    plan: &mut InstallPlan,
) -> Result<String, InstallError> {
    let name = args.handler.as_str();
    let Some(real) = real else {
        plan.notes.push(format!(
            "real runtime of handler {name}: as the wrapper chooses ({}, else `runtime` in /etc/userns-hostnet/config.toml, else runc or crun in PATH), as no handler of the config names one",
            runtime::RUNTIME_ENV
        ));
        return Ok(wrapper.to_owned());
    };
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(UsageError::HandlerNotDirName(name.to_owned()).into());
    }
    let handlers = handlers_node_dir(args);
    if args.root.is_none()
        && args.handlers_dir.is_none()
        && !is_hosts_config(config)
        && !args.dry_run
        && !args.check
    {
        return Err(UsageError::HostLinksForCopy {
            config: config.to_owned(),
            handlers,
        }
        .into());
    }
    let dir = handlers.join(name);
    let link = dir.join(userns_hostnet::WRAPPER_NAME);
    for (node, target) in [
        (link.clone(), PathBuf::from(wrapper)),
        (dir.join(HANDLER_RUNTIME_LINK), real.clone()),
    ] {
        let path = node_entry(args, &node)?;
        match std::fs::read_link(&path) {
            Ok(t) if t == target => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                plan.links.push(LinkChange::Create { path, target });
            }
            Ok(found) => {
                return Err(InTheWayError::LinkElsewhere {
                    path,
                    found,
                    wanted: target,
                }
                .into())
            }
            Err(_) => return Err(InTheWayError::NotALink(path).into()),
        }
    }
    let bin = link
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| InstallError::NotUtf8(link.clone()))?;
    plan.notes.push(format!(
        "real runtime of handler {name}: {} (the {what})",
        real.display()
    ));
    Ok(bin)
}

/// The handler's own directory of links (as the node sees it), when
/// `binary` is a handler's link to the wrapper.
pub(crate) fn handler_dir(args: &Registration, binary: Option<&str>) -> Option<PathBuf> {
    let handlers = handlers_node_dir(args);
    let link = Path::new(binary?);
    link.parent()
        .filter(|d| d.parent() == Some(handlers.as_path()))
        .filter(|_| link.file_name() == Some(userns_hostnet::WRAPPER_NAME.as_ref()))
        .map(Path::to_owned)
}

/// The links a removed handler leaves behind: those of its own directory,
/// when its binary is a handler's link to the wrapper.
pub(crate) fn handler_links(args: &Registration, binary: Option<&str>) -> Vec<LinkChange> {
    let Some(dir) = handler_dir(args, binary) else {
        return Vec::new();
    };
    [userns_hostnet::WRAPPER_NAME, HANDLER_RUNTIME_LINK]
        .into_iter()
        .filter_map(|n| {
            let path = node_entry(args, &dir.join(n)).ok()?;
            let target = std::fs::read_link(&path).ok()?;
            Some(LinkChange::Remove { path, target })
        })
        .collect()
}

/// Notes for the settings a derived handler changed or could not carry.
pub(crate) fn derived_notes(name: &str, from: &str, d: &Derived, plan: &mut InstallPlan) {
    if !d.carried.is_empty() {
        plan.notes.push(format!(
            "handler {name} carries every setting of handler {from}: {}",
            d.carried.join(", ")
        ));
    }
    plan.notes
        .push(format!("handler {name} changes: {}", d.changed.join("; ")));
    for dropped in &d.dropped {
        plan.notes.push(format!("warning: not carried: {dropped}"));
    }
}

/// Whether install adds the handler (`Ok(true)`: none of that name in
/// `file`) or uninstall removes it (`Ok(true)`: install's and unchanged,
/// its links with it), given the one already there (`existing`); when it
/// stays, a note says why.
pub(crate) fn changes_handler(
    args: &Registration,
    install: bool,
    existing: Option<&Item>,
    layout: &Layout,
    file: &Path,
    plan: &mut InstallPlan,
) -> Result<bool, InTheWayError> {
    let name = args.handler.as_str();
    let shown = file.display();
    let Some(e) = existing else {
        return Ok(install);
    };
    let binary = daemon::config::binary_of(layout, e);
    let why_left = match (daemon::config::owner(e), install) {
        (Owner::Install, true) => {
            if handler_dir(args, binary).is_some() && handler_links(args, binary).len() < 2 {
                plan.notes.push(format!(
                    "warning: runtime handler {name} in {shown} runs {}, whose links are not all there: its containers cannot start; uninstall and install it again",
                    binary.unwrap_or_default()
                ));
            }
            return Ok(false);
        }
        (Owner::Install, false) => {
            plan.links.extend(handler_links(args, binary));
            return Ok(true);
        }
        (Owner::Changed, true) => {
            format!("runtime handler {name} in {shown} was changed since install: left as it is")
        }
        (Owner::Changed, false) => format!(
            "left runtime handler {name} in {shown}: changed since install (its install marker's fingerprint no longer matches); remove it by hand if it should go"
        ),
        (Owner::Operator, true) if runs_wrapper(layout, e) => format!(
            "runtime handler {name} in {shown} runs the wrapper but was not added by install (no install marker): left as it is, and uninstall will leave it too"
        ),
        (Owner::Operator, false) if runs_wrapper(layout, e) => format!(
            "left runtime handler {name} in {shown}: not added by install (no install marker); remove it by hand if it should go"
        ),
        (Owner::Operator, true) => {
            return Err(InTheWayError::HandlerDiffers {
                file: file.to_owned(),
                name: name.to_owned(),
            })
        }
        (Owner::Operator, false) => {
            return Err(InTheWayError::HandlerNotWrapper {
                file: file.to_owned(),
                name: name.to_owned(),
            })
        }
    };
    plan.leave(install, why_left);
    Ok(false)
}

/// The handler in `doc`: install adds the one `make` makes, uninstall
/// (`make` is `None`) removes it, when [`changes_handler`] says so;
/// `Ok(true)` when `doc` changed.
pub(crate) fn edit_handler(
    args: &Registration,
    doc: &mut DocumentMut,
    layout: &Layout,
    file: &Path,
    make: Option<&MakeHandler>,
    plan: &mut InstallPlan,
) -> Result<bool, InstallError> {
    let name = args.handler.as_str();
    let existing = daemon::config::handler(layout, doc, name);
    if !changes_handler(args, make.is_some(), existing, layout, file, plan)? {
        return Ok(false);
    }
    match make {
        Some(make) => {
            let h = make(plan)?;
            daemon::config::add(layout, doc, name, h).map_err(InstallError::edit(file))?;
        }
        None => {
            daemon::config::remove(layout, doc, name);
        }
    }
    Ok(true)
}

/// The command that undoes an install of these arguments.
pub(crate) fn undo_command(args: &Registration, drop_in: bool) -> String {
    let mut cmd = format!("userns-hostnet uninstall {}", args.daemon.name());
    if drop_in {
        cmd.push_str(" --drop-in");
    }
    if args.handler != "userns-hostnet" {
        cmd.push_str(&format!(" --handler {}", args.handler));
    }
    if let Some(c) = &args.config {
        cmd.push_str(&format!(" --config {}", c.display()));
    }
    if let Some(r) = &args.root {
        cmd.push_str(&format!(" --root {}", r.display()));
    }
    cmd
}

/// A drop-in file that holds handlers (`path` on this host): install adds
/// the handler `make` makes (to a new file `fresh`, or to an existing one
/// that already registers the wrapper); uninstall (`make` is `None`)
/// removes it, and the file when nothing else is left in it. The new
/// text, `None` for no file.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_drop_in(
    args: &Registration,
    path: &Path,
    old: Option<&str>,
    fresh: DocumentMut,
    layout: &Layout,
    make: Option<&MakeHandler>,
    plan: &mut InstallPlan,
) -> Result<Option<String>, InstallError> {
    let install = make.is_some();
    let Some(old) = old else {
        if !install {
            return Ok(None);
        }
        let mut d = fresh;
        edit_handler(args, &mut d, layout, path, make, plan)?;
        return Ok(Some(d.to_string()));
    };
    let mut doc = toml::parse(path, old)?;
    if install
        && daemon::config::handler(layout, &doc, &args.handler).is_none()
        && daemon::config::wrapper_handlers(layout, &doc).is_empty()
    {
        return Err(InTheWayError::ForeignDropIn(path.to_owned()).into());
    }
    if !edit_handler(args, &mut doc, layout, path, make, plan)? {
        return Ok(Some(old.to_owned()));
    }
    if !install {
        if daemon::config::holds_nothing(&doc) {
            return Ok(None);
        }
        plan.notes
            .push(format!("kept {}: it holds other settings", path.display()));
    }
    Ok(Some(doc.to_string()))
}

pub(crate) fn made_dir_line(drop_in: &Path) -> String {
    match drop_in.parent() {
        Some(dir) if !dir.exists() => format!("{MADE_DIR_MARK}\n"),
        _ => String::new(),
    }
}

/// uninstall: put back the default handler install set in `doc` (`path`
/// on this host); whether `doc` changed. A default naming the handler set
/// by hand gets a warning.
pub(crate) fn restore(
    path: &Path,
    layout: &Layout,
    doc: &mut DocumentMut,
    name: &str,
    plan: &mut InstallPlan,
) -> Result<bool, InstallError> {
    match daemon::config::restore_default(layout, doc, name) {
        Ok(daemon::config::Restored::Restored) => Ok(true),
        Ok(daemon::config::Restored::NotDefault) => Ok(false),
        Ok(daemon::config::Restored::SetByHand) => {
            let key = layout.default.as_ref().map_or("", |(_, k)| k);
            plan.notes.push(format!(
                "warning: {key} in {} still names {name}, set by hand: containers asking for no handler will fail once it is gone; set it to another handler",
                path.display()
            ));
            Ok(false)
        }
        Err(e) => Err(InstallError::edit(path)(e)),
    }
}

/// Apply `--set-as-default` (install) or put the old default back
/// (uninstall) in the new text of `file` (on this host) in the plan.
pub(crate) fn plan_default(
    args: &Registration,
    install: bool,
    file: &Path,
    layout: &Layout,
    plan: &mut InstallPlan,
) -> Result<(), InstallError> {
    let Some(i) = plan.files.iter().position(|c| c.path == file) else {
        return Ok(());
    };
    let Some(text) = plan.files[i].new.clone() else {
        return Ok(());
    };
    if install && !args.set_as_default {
        return Ok(());
    }
    let mut doc = toml::parse(file, &text)?;
    let changed = if install {
        daemon::config::set_default(layout, &mut doc, &args.handler)
            .map_err(InstallError::edit(file))?
    } else {
        restore(file, layout, &mut doc, &args.handler, plan)?
    };
    if changed {
        plan.files[i].new = Some(doc.to_string());
    }
    Ok(())
}

/// Says, in a new drop-in, that install makes its directory, so that
/// uninstall removes the directory again once empty (and leaves one the
/// operator made).
pub(crate) const MADE_DIR_MARK: &str =
    "# install made this directory; uninstall removes it when empty.";

/// Makes the handler table install adds, noting the links it needs.
pub(crate) type MakeHandler<'a> = dyn Fn(&mut InstallPlan) -> Result<Table, InstallError> + 'a;
