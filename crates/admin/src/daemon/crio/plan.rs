//! install's planning for CRI-O: one drop-in in crio.conf.d.

use crate::daemon::node::beside;
use crate::daemon::register::Registration;
use crate::daemon::register::{edit::*, error::*, handler::*, paths::*};
use crate::daemon::{self, crio};
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item, Table};
use userns_hostnet::sys::toml;

/// The version of the `crio` in PATH (`crio version 1.36.3`), which
/// decides CRI-O's default handler when no file names one; not asked
/// under `--root`, where that binary is not the node's.
pub(crate) fn crio_version(args: &Registration) -> Option<(u64, u64)> {
    if args.root.is_some() {
        return None;
    }
    let deadline = std::time::Instant::now() + userns_hostnet::probe::PROBE_TIMEOUT;
    let out = userns_hostnet::sys::deadline::run(Path::new("crio"), "--version", deadline).ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text.lines().next()?.strip_prefix("crio version ")?;
    let mut parts = v.trim().split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// CRI-O's built-in handler `name`, as the `crio` in PATH prints its
/// defaults; not asked under `--root` (that binary is not the node's).
/// Err: why it could not be read, for the report.
pub(crate) fn crio_builtin_handler(args: &Registration, name: &str) -> Result<Table, String> {
    if args.root.is_some() {
        return Err("under --root, the crio in PATH is not the node's".into());
    }
    let deadline = std::time::Instant::now() + userns_hostnet::probe::PROBE_TIMEOUT;
    let argv = ["--config", "/dev/null", "--config-dir", "", "config"];
    let out = userns_hostnet::sys::deadline::run_args(Path::new("crio"), &argv, deadline)
        .map_err(|e| format!("crio {}: {e}", argv.join(" ")))?;
    if !out.status.success() {
        return Err(format!("crio {}: {}", argv.join(" "), out.status));
    }
    crio::builtin_handler(&String::from_utf8_lossy(&out.stdout), name)
        .ok_or_else(|| format!("`crio config` prints no built-in handler {name}"))
}

/// What install (or uninstall) changes for CRI-O: one drop-in file, edited
/// in the order CRI-O reads its files (the source handler, the default).
pub fn plan(args: &Registration, install: bool) -> Result<InstallPlan, InstallError> {
    let conf = config_path(args, daemon::crio::node::CONFIG)?;
    // Its own drop-in is made and removed as itself; the other files are
    // read through the node's links.
    let path = node_entry(args, &beside(&conf, daemon::crio::node::DROP_IN))?;
    let layout = crio::layout();
    let old = toml::read_optional(&path)?;
    let mut plan = InstallPlan::default();
    let others = if install {
        other_files(args, &conf, &path, old.as_deref())?
    } else {
        Vec::new()
    };
    let make = |plan: &mut InstallPlan| derived_handler(args, &conf, &path, &others, plan);
    let make: Option<&MakeHandler> = if install { Some(&make) } else { None };
    // The default runtime install set goes before the handler, so that a
    // drop-in left with nothing else in it is removed.
    let before = match &old {
        Some(text) if !install => {
            let mut doc = toml::parse(&path, text)?;
            if restore(&path, &layout, &mut doc, &args.handler, &mut plan)? {
                Some(doc.to_string())
            } else {
                Some(text.clone())
            }
        }
        other => other.clone(),
    };
    let new = plan_drop_in(
        args,
        &path,
        before.as_deref(),
        crio_fresh(&path),
        &layout,
        make,
        &mut plan,
    )?;
    plan.files.push(FileChange {
        path: path.clone(),
        old,
        new,
        backup: false,
    });
    if install {
        plan_default(args, install, &path, &layout, &mut plan)?;
    }
    Ok(plan)
}

/// CRI-O's other config files, read, in the order it reads them: where
/// the handler install adds is derived from. Refused: a handler of that
/// name another file defines, when the drop-in (`old`, at `path`) does
/// not (CRI-O would take the two as one).
fn other_files(
    args: &Registration,
    conf: &Path,
    path: &Path,
    old: Option<&str>,
) -> Result<Vec<(PathBuf, DocumentMut)>, InstallError> {
    let layout = crio::layout();
    let mut others = Vec::new();
    for file in daemon::crio::node::files(conf, &|p| node_file(args, p))? {
        if file != path {
            let doc = toml::read(&file)?;
            others.push((file, doc));
        }
    }
    let defined_elsewhere = others
        .iter()
        .find(|(_, d)| daemon::config::handler(&layout, d, &args.handler).is_some());
    let ours = old
        .and_then(|t| toml::parse(path, t).ok())
        .is_some_and(|d| daemon::config::handler(&layout, &d, &args.handler).is_some());
    if let Some((file, _)) = defined_elsewhere.filter(|_| !ours) {
        return Err(InTheWayError::HandlerElsewhere {
            file: file.clone(),
            name: args.handler.clone(),
            what: "a second definition in CRI-O's drop-in",
            undo: format!("remove it from {} by hand", file.display()),
        }
        .into());
    }
    Ok(others)
}

/// The handler install adds, derived from CRI-O's default handler in
/// `others` (or its built-in settings, when no file defines it) with the
/// wrapper in front of the runtime it runs.
fn derived_handler(
    args: &Registration,
    conf: &Path,
    path: &Path,
    others: &[(PathBuf, DocumentMut)],
    plan: &mut InstallPlan,
) -> Result<Table, InstallError> {
    let wrapper = wrapper_str(args)?;
    let builtin = crio::builtin_default(crio_version(args), others);
    let mut source = crio::source(others, &builtin);
    let implicit = source.runtime() == source.name;
    // No file defines the default handler and it is runc: CRI-O runs
    // `runc` from PATH, the wrapper's own first choice.
    let builtin_runc =
        source.table.is_none() && source.name == userns_hostnet::runtime::DEFAULT_CANDIDATES[0];
    if source.table.is_none() {
        match crio_builtin_handler(args, &source.name) {
            Ok(t) => source = crio::with_builtin(source, t, others),
            Err(why) => plan.notes.push(format!(
                "warning: no file defines CRI-O's handler {name} and its built-in settings could not be read ({why}): the new handler carries none of them (CRI-O gives its built-in {name} allowed_annotations, monitor_env, container_min_memory...); to carry them, define [crio.runtime.runtimes.{name}] in a file of {dir} and install again",
                name = source.name,
                dir = conf.with_extension("conf.d").display(),
            )),
        }
    }
    let runtime = if builtin_runc {
        String::new()
    } else {
        source.runtime()
    };
    let what = source.runtime_from();
    let bin = carried_handler_binary(args, conf, &wrapper, (&runtime, implicit, &what), plan)?;
    let derived = crio::derive(&source, &bin).map_err(|e| InstallError::Underived {
        path: path.to_path_buf(),
        source: Box::new(e),
    })?;
    derived_notes(&args.handler, &source.name, &derived, plan);
    Ok(daemon::config::marked(derived.table))
}

pub(crate) fn crio_fresh(path: &Path) -> DocumentMut {
    let mut d = DocumentMut::new();
    d.decor_mut().set_prefix(format!(
        "# The userns-hostnet runtime handler, written by `userns-hostnet install crio`\n# and removed by `userns-hostnet uninstall crio`.\n{}",
        made_dir_line(path)
    ));
    d
}

/// containers/storage's config, which names CRI-O's run root when its
/// own files do not.
const STORAGE_CONF: &str = "/etc/containers/storage.conf";

/// What tells the containers of the CRI-O handler `args.handler` apart:
/// CRI-O's run root and default handler (its files read as CRI-O reads
/// them), and the handler's `runtime_root` (`table`, as it was).
pub(crate) fn crio_handler(args: &Registration, table: Option<&Item>) -> crio::live::States {
    let files: Vec<(PathBuf, DocumentMut)> = config_path(args, daemon::crio::node::CONFIG)
        .ok()
        .and_then(|conf| daemon::crio::node::files(&conf, &|p| node_file(args, p)).ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| toml::read(&f).ok().map(|d| (f, d)))
        .collect();
    let storage = node_file(args, Path::new(STORAGE_CONF))
        .ok()
        .and_then(|f| toml::read(&f).ok());
    let default = crio::source(&files, &crio::builtin_default(None, &files)).name == args.handler;
    crio::live::States {
        runroot: PathBuf::from(crio::live::runroot(&files, storage.as_ref())),
        runtime_root: table.and_then(crio::live::runtime_root).map(PathBuf::from),
        name: args.handler.clone(),
        default,
    }
}

/// `--hook`: the hooks directories CRI-O's files name (its crio.conf and
/// crio.conf.d), and the drop-in that adds the administrator's.
pub(crate) fn hook_dirs(args: &Registration) -> Result<daemon::HookDirs, InstallError> {
    let conf = config_path(args, daemon::crio::node::CONFIG)?;
    let drop_in = node_entry(args, &beside(&conf, daemon::crio::node::HOOKS_DROP_IN))?;
    let files = daemon::crio::node::files(&conf, &|p| node_file(args, p))?;
    Ok(daemon::HookDirs {
        named: daemon::crio::node::hooks_dirs(&files, Some(&drop_in))?,
        from: format!("hooks_dir of {} and its crio.conf.d", conf.display()),
        defaults: &daemon::crio::node::DEFAULT_HOOKS_DIRS[..],
        drop_in: Some(drop_in),
    })
}
