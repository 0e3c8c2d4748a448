//! install's planning for containerd: the main config, or `--drop-in`
//! and the `imports` entry naming it.

use crate::daemon::containerd::node::DROP_IN;
use crate::daemon::node::beside;
use crate::daemon::register::Registration;
use crate::daemon::register::{edit::*, error::*, handler::*, paths::*};
use crate::daemon::{self, config::Layout, containerd};
use std::path::{Path, PathBuf};
use toml_edit::{value, Array, DocumentMut, Item, Table, Value};
use userns_hostnet::sys::toml;

/// Marks an `imports` line that install added, so uninstall removes the
/// whole line again rather than leaving an empty list behind.
const IMPORTS_MARK: &str = " # added by userns-hostnet install";

/// The containerd files `config` (the node's path) imports, as (node
/// path, host path).
pub(crate) fn containerd_import_files(
    args: &Registration,
    doc: &DocumentMut,
    config: &Path,
) -> Result<Vec<(PathBuf, PathBuf)>, InstallError> {
    daemon::containerd::node::imports(doc, config, &|p| node_file(args, p))
}

/// What install (or uninstall) changes for containerd: the main config's
/// edit in the order containerd reads it (version, imports, the source
/// handler, the default).
pub fn plan(args: &Registration, install: bool) -> Result<InstallPlan, InstallError> {
    let config = config_path(args, daemon::containerd::node::CONFIG)?;
    let host_config = node_file(args, &config)?;
    let (text, doc) = read_main_config(&config, &host_config)?;
    let version = containerd::version(&doc);
    let cri_off = containerd::cri_disabled(&doc);
    let layout = supported_layout(&config, &host_config, version, cri_off.is_some())?;
    let mut plan = InstallPlan::default();
    if install {
        if let Some(plugin) = cri_off {
            plan.notes.push(format!(
                "warning: {} lists {plugin:?} in disabled_plugins: containerd serves no CRI, so the kubelet cannot use any handler; remove it from disabled_plugins and restart containerd",
                host_config.display()
            ));
        }
    }
    let wrapper = wrapper_str(args)?;
    // The handler install adds is derived from the default handler of the
    // config containerd reads: the main file with its imports merged in.
    let files = if install {
        read_imports(args, &doc, &config)?
    } else {
        Vec::new()
    };
    let imported: Vec<DocumentMut> = files.iter().map(|(_, d)| d.clone()).collect();
    let main = containerd::merged(&doc, &imported, merge_for(args, version));
    if install {
        if let Some(name) = containerd::missing_default(&layout, &main) {
            return Err(DaemonConfigError::DefaultHandlerMissing {
                path: host_config,
                name,
                imports: files.len(),
            }
            .into());
        }
    }
    let make = |plan: &mut InstallPlan| {
        derived_handler(args, &config, &wrapper, &layout, (&main, &files), plan)
    };
    let make: Option<&MakeHandler> = if install { Some(&make) } else { None };
    if args.drop_in && install && version == 2 {
        refuse_1x_drop_in(args, &host_config)?;
    }
    if args.drop_in {
        if install && daemon::config::handler(&layout, &doc, &args.handler).is_some() {
            return Err(InTheWayError::HandlerElsewhere {
                file: host_config,
                name: args.handler.clone(),
                what: "a drop-in",
                undo: undo_command(args, false),
            }
            .into());
        }
        plan_containerd_drop_in(args, &config, &text, doc, &layout, make, &mut plan)?;
    } else {
        plan_main_config(
            args,
            (&config, &host_config),
            text,
            doc,
            &layout,
            make,
            &mut plan,
        )?;
    }
    plan_default(args, install, &host_config, &layout, &mut plan)?;
    Ok(plan)
}

/// The main config's text and its parse. A config that does not parse
/// and is a Rancher distribution's with `{{` in it is a Go template that
/// the distribution renders, said so rather than as a TOML error.
fn read_main_config(
    config: &Path,
    host_config: &Path,
) -> Result<(String, DocumentMut), InstallError> {
    let Some(text) = toml::read_optional(host_config)? else {
        return Err(DaemonConfigError::NoContainerdConfig(host_config.to_path_buf()).into());
    };
    let doc = match toml::parse(host_config, &text) {
        Ok(d) => d,
        Err(parse)
            if text.contains("{{")
                && daemon::containerd::node::rancher_distro(config).is_some() =>
        {
            return Err(DaemonConfigError::GoTemplate {
                path: host_config.to_path_buf(),
                parse,
            }
            .into())
        }
        Err(e) => return Err(e.into()),
    };
    Ok((text, doc))
}

/// The layout of a config install can edit; refused: a Rancher
/// distribution's `config.toml` (regenerated from its template at each
/// start), Docker's containerd (CRI disabled, version 1), version 1 and
/// versions this build does not know.
fn supported_layout(
    config: &Path,
    host_config: &Path,
    version: i64,
    cri_off: bool,
) -> Result<Layout, InstallError> {
    if let Some(distro) = daemon::containerd::node::rancher_distro(config)
        .filter(|_| config.file_name().is_some_and(|n| n == "config.toml"))
    {
        let template = config.with_file_name(if version >= 3 {
            "config-v3.toml.tmpl"
        } else {
            "config.toml.tmpl"
        });
        return Err(DaemonConfigError::Regenerated {
            path: config.to_path_buf(),
            template,
            distro,
        }
        .into());
    }
    if version < 2 && cri_off {
        return Err(DaemonConfigError::Docker(host_config.to_path_buf()).into());
    }
    if version < 2 {
        return Err(DaemonConfigError::Version1 {
            path: host_config.to_path_buf(),
        }
        .into());
    }
    containerd::layout(version).ok_or_else(|| {
        DaemonConfigError::Version {
            path: host_config.to_path_buf(),
            version,
            newest: containerd::NEWEST_VERSION,
        }
        .into()
    })
}

/// How containerd merges an import into the main config: a version 2
/// config read by containerd 1.x replaces whole plugin tables, anything
/// newer merges deeply.
fn merge_for(args: &Registration, version: i64) -> containerd::Merge {
    if version == 2
        && !daemon::containerd::node::binary_version(&args.reader)
            .is_some_and(|(major, _)| major >= 2)
    {
        containerd::Merge::WholePlugins
    } else {
        containerd::Merge::Deep
    }
}

/// The handler install adds, derived from the source handler of `main`
/// (the merged config; `files` its imports, for where the source was
/// read from) with the wrapper in front of the binary it runs.
fn derived_handler(
    args: &Registration,
    config: &Path,
    wrapper: &str,
    layout: &Layout,
    (main, files): (&DocumentMut, &[(PathBuf, DocumentMut)]),
    plan: &mut InstallPlan,
) -> Result<Table, InstallError> {
    // Which file the source handler was read from, for the notes.
    let defined_in = |name: &str| -> PathBuf {
        files
            .iter()
            .rev()
            .find(|(_, d)| daemon::config::handler(layout, d, name).is_some())
            .map_or_else(|| config.to_path_buf(), |(p, _)| p.clone())
    };
    let source = containerd::source(layout, main);
    let named = source
        .as_ref()
        .and_then(|(_, h)| daemon::config::binary_of(layout, h))
        .filter(|b| !b.is_empty());
    let (binary, implicit, what) = match (&source, named) {
        (Some((s, _)), Some(b)) => (
            b.to_owned(),
            false,
            format!("BinaryName of handler {s} in {}", defined_in(s).display()),
        ),
        (Some((s, _)), None) => (
            "runc".to_owned(),
            true,
            format!("runtime containerd's runc shim runs for handler {s}, which has no BinaryName: `runc` in PATH"),
        ),
        // No handler to derive from: containerd's built-in runc
        // handler runs `runc` from PATH, the wrapper's own first choice.
        (None, _) => (String::new(), true, String::new()),
    };
    let bin = carried_handler_binary(args, config, wrapper, (&binary, implicit, &what), plan)?;
    let derived = containerd::derive(source.as_ref().map(|(_, h)| *h), &bin);
    if let Some((s, _)) = &source {
        derived_notes(&args.handler, s, &derived, plan);
    }
    let marked = daemon::config::marked(derived.table);
    Ok(match &source {
        Some((_, h)) => daemon::config::styled_like(marked, h),
        None => marked,
    })
}

/// Without `--drop-in`: the handler edited in the main config itself.
/// Install refuses a handler of that name an import defines (containerd
/// would merge the two); uninstall of a handler only an import has says
/// where it is, and keeps the links another handler still names.
fn plan_main_config(
    args: &Registration,
    (config, host_config): (&Path, &Path),
    text: String,
    mut doc: DocumentMut,
    layout: &Layout,
    make: Option<&MakeHandler>,
    plan: &mut InstallPlan,
) -> Result<(), InstallError> {
    let install = make.is_some();
    let version = containerd::version(&doc);
    let absent = daemon::config::handler(layout, &doc, &args.handler).is_none();
    if install && absent {
        refuse_imported_handler(args, &doc, config, version)?;
    }
    let edited = edit_handler(args, &mut doc, layout, host_config, make, plan)?;
    let new = if edited {
        doc.to_string()
    } else {
        if !install && absent {
            imported_handler(args, &doc, config, version, plan)?;
        }
        text.clone()
    };
    if !install && edited {
        keep_links_still_named(args, &doc, config, version, host_config, plan)?;
    }
    if install && version == 2 {
        let new_doc = toml::parse(host_config, &new)?;
        clobbered_handler(args, config, new_doc, plan)?;
    }
    plan.files.push(FileChange {
        path: host_config.to_path_buf(),
        old: Some(text),
        new: Some(new),
        backup: true,
    });
    Ok(())
}

/// The files `config` imports, read, in the order containerd merges them:
/// breadth first, an imported file's own imports after the files listed
/// before them, each file once (a listed file that does not exist is left
/// out, as a glob matching nothing is).
pub(crate) fn read_imports(
    args: &Registration,
    doc: &DocumentMut,
    config: &Path,
) -> Result<Vec<(PathBuf, DocumentMut)>, InstallError> {
    let mut seen = vec![node_file(args, config)?];
    let mut pending: std::collections::VecDeque<(PathBuf, PathBuf)> =
        containerd_import_files(args, doc, config)?.into();
    let mut out = Vec::new();
    while let Some((node, import)) = pending.pop_front() {
        if seen.contains(&import) {
            continue;
        }
        seen.push(import.clone());
        if let Some(text) = toml::read_optional(&import)? {
            let d = toml::parse(&import, &text)?;
            // Its own imports, relative to it as containerd names it.
            pending.extend(containerd_import_files(args, &d, &node)?);
            out.push((import, d));
        }
    }
    Ok(out)
}

/// The handler names each file `config` imports registers.
pub(crate) fn imported_handlers(
    args: &Registration,
    doc: &DocumentMut,
    config: &Path,
    version: i64,
) -> Result<Vec<(PathBuf, DocumentMut)>, InstallError> {
    Ok(containerd_import_files(args, doc, config)?
        .into_iter()
        .filter_map(|(_, import)| {
            let d = toml::read(&import).ok()?;
            daemon::containerd::node::handler_names(&d, version)
                .contains(&args.handler)
                .then_some((import, d))
        })
        .collect())
}

/// install without `--drop-in`: an import that registers the handler
/// already would make two definitions of it, the import's winning.
pub(crate) fn refuse_imported_handler(
    args: &Registration,
    doc: &DocumentMut,
    config: &Path,
    version: i64,
) -> Result<(), InstallError> {
    let ours = node_file(args, &beside(config, DROP_IN))?;
    if let Some((import, _)) = imported_handlers(args, doc, config, version)?
        .into_iter()
        .next()
    {
        let undo = if import == ours {
            undo_command(args, true)
        } else {
            format!("remove it from {} by hand", import.display())
        };
        return Err(InTheWayError::HandlerElsewhere {
            file: import,
            name: args.handler.clone(),
            what: "an install into the main config",
            undo,
        }
        .into());
    }
    Ok(())
}

/// uninstall without `--drop-in`, the main config holding no handler of
/// that name: an import may still register it, and it is not removed.
pub(crate) fn imported_handler(
    args: &Registration,
    doc: &DocumentMut,
    config: &Path,
    version: i64,
    plan: &mut InstallPlan,
) -> Result<(), InstallError> {
    let ours = node_file(args, &beside(config, DROP_IN))?;
    for (import, _) in imported_handlers(args, doc, config, version)? {
        let how = if import == ours {
            "userns-hostnet uninstall containerd --drop-in removes it".to_owned()
        } else {
            "remove it there by hand if it should go".to_owned()
        };
        plan.leave(
            false,
            format!(
                "runtime handler {} is registered by {}, which {} imports: {how}",
                args.handler,
                import.display(),
                config.display()
            ),
        );
    }
    Ok(())
}

/// uninstall: the links a removed handler used stay while another file
/// (the main config, an import) still registers a handler of that name
/// running them; a note says so.
pub(crate) fn keep_links_still_named(
    args: &Registration,
    main: &DocumentMut,
    config: &Path,
    version: i64,
    edited: &Path,
    plan: &mut InstallPlan,
) -> Result<(), InstallError> {
    if plan.links.is_empty() {
        return Ok(());
    }
    let Some(layout) = containerd::layout(version) else {
        return Ok(());
    };
    let mut others: Vec<(PathBuf, DocumentMut)> = vec![(node_file(args, config)?, main.clone())];
    others.extend(
        imported_handlers(args, main, config, version)?
            .into_iter()
            .filter(|(f, _)| f != edited),
    );
    for (file, doc) in others {
        let Some(h) = daemon::config::handler(&layout, &doc, &args.handler) else {
            continue;
        };
        let binary = daemon::config::binary_of(&layout, h);
        if handler_dir(args, binary).is_some() {
            plan.links.clear();
            plan.leave(
                false,
                format!(
                    "kept the links of handler {}: {} still registers it with them",
                    args.handler,
                    file.display()
                ),
            );
            return Ok(());
        }
    }
    Ok(())
}

/// install into a version 2 config: on containerd 1.x, an import that
/// holds a CRI plugin table replaces the main config's, the new handler
/// with it. Refused when the containerd binary says it is 1.x (the
/// handler would never be served); a warning when it cannot tell.
pub(crate) fn clobbered_handler(
    args: &Registration,
    config: &Path,
    doc: DocumentMut,
    plan: &mut InstallPlan,
) -> Result<(), InstallError> {
    let binary = daemon::containerd::node::binary_version(&args.reader);
    if binary.is_some_and(|(major, _)| major >= 2) {
        return Ok(());
    }
    // install has read (and refused) the imports already.
    let imports = containerd_import_files(args, &doc, config).unwrap_or_default();
    let mut files = vec![(config.to_owned(), doc)];
    for (_, import) in imports {
        if let Ok(d) = toml::read(&import) {
            files.push((import, d));
        }
    }
    let cri = daemon::containerd::node::cri_plugin(2).unwrap_or_default();
    let prefix = format!("containerd.runtimes.{}.", args.handler);
    for c in daemon::containerd::node::clobbers_1x(&files) {
        if c.plugin != cri || !c.lost.iter().any(|k| k.starts_with(&prefix)) {
            continue;
        }
        if let Some((major, minor)) = binary {
            return Err(DaemonConfigError::ImportReplacesCri {
                path: config.to_owned(),
                import: c.import.clone(),
                handler: args.handler.clone(),
                containerd: args.reader.clone(),
                major,
                minor,
            }
            .into());
        }
        plan.notes.push(format!(
            "warning: {} replaces the whole CRI plugin table of {} on containerd 1.x, runtime handler {} among it: move that file's settings into {1} (or carry the whole table there)",
            c.import.display(),
            config.display(),
            args.handler
        ));
    }
    Ok(())
}

/// `--drop-in` on a version 2 config: only when containerd is 2.0 or later.
/// Before 2.0, containerd replaces the whole table of a plugin with an
/// imported file's (its `mergeConfig` assigns each plugin's table as a
/// whole), so a drop-in holding only the handler would drop sandbox_image,
/// the CNI settings and every other handler of the main config. A drop-in
/// carrying a copy of the whole CRI table would be safe on the day it is
/// written, but would then shadow every later edit of that table in the
/// main config: the main config is the one place that cannot go wrong.
pub(crate) fn refuse_1x_drop_in(
    args: &Registration,
    config: &Path,
) -> Result<(), DaemonConfigError> {
    match daemon::containerd::node::binary_version(&args.reader) {
        Some((major, _)) if major >= 2 => Ok(()),
        Some((major, minor)) => Err(DaemonConfigError::DropInOn1x {
            path: config.to_owned(),
            containerd: args.reader.clone(),
            major,
            minor,
        }),
        None => Err(DaemonConfigError::DropInUnknownContainerd {
            path: config.to_owned(),
            containerd: args.reader.clone(),
        }),
    }
}

/// `--drop-in`: the handler in `conf.d/99-userns-hostnet.toml` next to the
/// main config, and the main config's `imports` naming it, unless an
/// entry there (a glob such as `conf.d/*.toml`) already does. The imports
/// entry goes when the drop-in goes: containerd refuses to start with an
/// import of a missing file.
pub(crate) fn plan_containerd_drop_in(
    args: &Registration,
    config: &Path,
    text: &str,
    mut doc: DocumentMut,
    layout: &Layout,
    make: Option<&MakeHandler>,
    plan: &mut InstallPlan,
) -> Result<(), InstallError> {
    let install = make.is_some();
    let host_config = node_file(args, config)?;
    let drop_in = beside(config, DROP_IN);
    let host_drop_in = node_entry(args, &drop_in)?;
    let drop_in_str = drop_in.to_string_lossy().into_owned();
    let old_drop_in = toml::read_optional(&host_drop_in)?;
    let version = containerd::version(&doc);
    let fresh = fresh_drop_in(&host_drop_in, version);
    let drop_in_layout = drop_in_layout(&host_drop_in, old_drop_in.as_deref(), version, layout)?;
    let new_drop_in = plan_drop_in(
        args,
        &host_drop_in,
        old_drop_in.as_deref(),
        fresh,
        &drop_in_layout,
        make,
        plan,
    )?;
    if !install && new_drop_in != old_drop_in {
        keep_links_still_named(args, &doc, config, version, &host_drop_in, plan)?;
    }
    let main = if install {
        let dir = config.parent().unwrap_or(Path::new("/"));
        with_import(&mut doc, text, dir, &drop_in_str)
    } else if new_drop_in.is_none() {
        without_import(&mut doc, text, &drop_in_str)
    } else {
        text.to_owned()
    };
    plan.files.push(FileChange {
        path: host_config,
        old: Some(text.to_owned()),
        new: Some(main),
        backup: true,
    });
    plan.files.push(FileChange {
        path: host_drop_in,
        old: old_drop_in,
        new: new_drop_in,
        backup: false,
    });
    Ok(())
}

/// A new drop-in: its header saying what wrote it and what removes it,
/// and the main config's `version`.
fn fresh_drop_in(host_drop_in: &Path, version: i64) -> DocumentMut {
    let mut fresh = DocumentMut::new();
    fresh.decor_mut().set_prefix(format!(
        "# The userns-hostnet runtime handler, written by `userns-hostnet install containerd --drop-in`\n# and removed by `userns-hostnet uninstall containerd --drop-in`.\n{}",
        made_dir_line(host_drop_in)
    ));
    fresh.insert("version", value(version));
    fresh
}

/// The layout of the drop-in: its own `version`, or (a drop-in without
/// one is read as the main config's) the main config's.
fn drop_in_layout(
    host_drop_in: &Path,
    old_drop_in: Option<&str>,
    version: i64,
    layout: &Layout,
) -> Result<Layout, InstallError> {
    Ok(match old_drop_in {
        Some(old) => {
            let v = toml::parse(host_drop_in, old)?
                .get("version")
                .and_then(Item::as_integer)
                .unwrap_or(version);
            containerd::layout(v).ok_or_else(|| DaemonConfigError::DropInVersion {
                path: host_drop_in.to_path_buf(),
                version: v,
            })?
        }
        None => layout.clone(),
    })
}

/// The main config with `drop_in` in its `imports` (a list install adds
/// marked as its own), unchanged when an entry there (a glob such as
/// `conf.d/*.toml`, relative to `dir`) already covers it.
fn with_import(doc: &mut DocumentMut, text: &str, dir: &Path, drop_in: &str) -> String {
    let covered = doc
        .get("imports")
        .and_then(Item::as_array)
        .is_some_and(|list| {
            list.iter().filter_map(|v| v.as_str()).any(|entry| {
                let full = dir.join(entry);
                daemon::node::glob_covers(&full.to_string_lossy(), drop_in)
            })
        });
    if covered {
        return text.to_owned();
    }
    match doc.get_mut("imports").and_then(Item::as_array_mut) {
        Some(list) => list.push(drop_in),
        None => {
            let mut list = Array::new();
            list.push(drop_in);
            let mut v = Value::Array(list);
            v.decor_mut().set_suffix(IMPORTS_MARK);
            doc.insert("imports", Item::Value(v));
        }
    }
    doc.to_string()
}

/// The main config without `drop_in` in its `imports` (the whole list
/// when install added it and it is left empty), unchanged when no entry
/// names it.
fn without_import(doc: &mut DocumentMut, text: &str, drop_in: &str) -> String {
    let mut removed = false;
    if let Some(list) = doc.get_mut("imports").and_then(Item::as_array_mut) {
        let before = list.len();
        list.retain(|v: &Value| v.as_str() != Some(drop_in));
        removed = list.len() != before;
        let ours = list
            .decor()
            .suffix()
            .and_then(|s| s.as_str())
            .is_some_and(|s| s == IMPORTS_MARK);
        if list.is_empty() && removed && ours {
            doc.remove("imports");
        }
    }
    if removed {
        doc.to_string()
    } else {
        text.to_owned()
    }
}

/// What tells the containers of a containerd handler whose runtime
/// binaries are `binaries` apart: containerd's state directory, as the
/// main config names it.
pub(crate) fn containerd_handler(
    args: &Registration,
    binaries: Vec<String>,
) -> Result<containerd::live::Tasks, InstallError> {
    let config = config_path(args, daemon::containerd::node::CONFIG)?;
    let doc = toml::read_optional(&node_file(args, &config)?)?
        .and_then(|t| t.parse::<DocumentMut>().ok())
        .unwrap_or_default();
    Ok(containerd::live::Tasks {
        state: PathBuf::from(containerd::live::state_dir(&doc)),
        binaries,
    })
}
