//! install's planning for podman: an `[engine.runtimes]` entry in
//! containers.conf.

use crate::daemon::register::Registration;
use crate::daemon::register::{edit::*, error::*, handler::*, paths::*};
use crate::daemon::{self, config::Owner, podman};
use std::path::{Path, PathBuf};
use toml_edit::DocumentMut;
use userns_hostnet::sys::toml;

/// podman's containers.conf files in the order podman reads them: the
/// vendor's, `config`, then `containers.conf.d/*.conf` next to it.
pub(crate) fn podman_files(
    args: &Registration,
    config: &Path,
) -> Result<Vec<(PathBuf, DocumentMut)>, InstallError> {
    let mut paths = vec![node_file(
        args,
        Path::new(daemon::podman::node::VENDOR_CONFIG),
    )?];
    paths.push(node_file(args, config)?);
    let dir = config.with_file_name("containers.conf.d");
    paths.extend(daemon::node::conf_drop_ins(&dir, &|p| node_file(args, p))?);
    let mut out = Vec::new();
    for p in paths {
        if let Some(text) = toml::read_optional(&p)? {
            out.push((p.clone(), toml::parse(&p, &text)?));
        }
    }
    Ok(out)
}

/// `install podman`: an `[engine.runtimes]` entry in containers.conf, so
/// that `podman --runtime NAME` runs the wrapper, whose real runtime is
/// the one podman runs by default (a custom path of its entry included).
/// uninstall removes the entry with its marker line, leaving the file byte
/// for byte as it was (and no file where there was none).
pub fn plan(args: &Registration, install: bool) -> Result<InstallPlan, InstallError> {
    let config = config_path(args, daemon::podman::node::CONFIG)?;
    let host_config = node_file(args, &config)?;
    let old = toml::read_optional(&host_config)?;
    let mut doc = match &old {
        Some(text) => toml::parse(&host_config, text)?,
        None => DocumentMut::new(),
    };
    let name = args.handler.as_str();
    let mut plan = InstallPlan::default();
    let owner = podman::owner(&doc, name);
    let runs_wrapper = podman::runs_wrapper(&doc, name);
    let new = match (install, owner) {
        (true, None) => Some(with_entry(
            args,
            (&config, &host_config),
            &mut doc,
            &mut plan,
        )?),
        (false, None) => old.clone(),
        (_, Some(Owner::Install)) if install => old.clone(),
        (_, Some(Owner::Install)) => without_entry(args, &mut doc, old.is_some(), &mut plan),
        (_, Some(Owner::Operator)) if !runs_wrapper => {
            return Err(InTheWayError::PodmanRuntime {
                file: host_config,
                name: name.to_owned(),
            }
            .into())
        }
        // Changed since install, or the operator's entry for the wrapper.
        (_, Some(left)) => {
            let why = if left == Owner::Changed {
                "changed since install (its install marker's fingerprint no longer matches)"
            } else {
                "it runs the wrapper but was not added by install (no install marker)"
            };
            plan.leave(
                install,
                format!(
                    "left podman runtime {name} in {}: {why}{}",
                    host_config.display(),
                    if install {
                        ""
                    } else {
                        "; remove it by hand if it should go"
                    }
                ),
            );
            old.clone()
        }
    };
    plan.files.push(FileChange {
        path: host_config,
        old,
        new,
        backup: true,
    });
    Ok(plan)
}

/// The config with the entry install adds: the wrapper in front of the
/// runtime podman runs by default (the first existing path of its entry,
/// else its name in PATH).
fn with_entry(
    args: &Registration,
    (config, host_config): (&Path, &Path),
    doc: &mut DocumentMut,
    plan: &mut InstallPlan,
) -> Result<String, InstallError> {
    let name = args.handler.as_str();
    let wrapper = wrapper_str(args)?;
    let files = podman_files(args, config)?;
    let source = podman::source(&files, name);
    let found = source.runtime(&|p| is_executable_on_node(args, Path::new(p)));
    let (runtime, implicit, what) = match (&found, &source.file) {
        (Some(p), Some(f)) => (
            p.clone(),
            false,
            format!(
                "first path of podman runtime {} in {} that exists",
                source.name,
                f.display()
            ),
        ),
        _ => (
            source.name.clone(),
            true,
            format!("runtime podman runs by default: `{}` in PATH", source.name),
        ),
    };
    let bin = carried_handler_binary(args, config, &wrapper, (&runtime, implicit, &what), plan)?;
    podman::add(doc, name, &bin).map_err(InstallError::edit(host_config))?;
    Ok(doc.to_string())
}

/// The config without the entry install added (and the links it named
/// that go with it); no file when install made it and nothing else is
/// left in it (`existed`: a file was there).
fn without_entry(
    args: &Registration,
    doc: &mut DocumentMut,
    existed: bool,
    plan: &mut InstallPlan,
) -> Option<String> {
    let name = args.handler.as_str();
    plan.links
        .extend(handler_links(args, entry_binary(doc, name).as_deref()));
    podman::remove(doc, name);
    let text = doc.to_string();
    if existed && text.trim().is_empty() && daemon::config::holds_nothing(doc) {
        None
    } else {
        Some(text)
    }
}

/// The binary the entry `name` runs: the first path of its list.
fn entry_binary(doc: &DocumentMut, name: &str) -> Option<String> {
    podman::runtimes(doc)?
        .get(name)?
        .as_array()?
        .iter()
        .next()?
        .as_str()
        .map(str::to_owned)
}

/// `--hook`: the hooks directories containers.conf names.
pub(crate) fn hook_dirs(args: &Registration) -> Result<crate::daemon::HookDirs, InstallError> {
    let conf = config_path(args, super::node::CONFIG)?;
    let host = node_file(args, &conf)?;
    let named = match toml::read_optional(&host)? {
        Some(text) => super::hooks_dirs(&toml::parse(&host, &text)?),
        None => None,
    };
    Ok(crate::daemon::HookDirs {
        named,
        from: format!("hooks_dir of {}", conf.display()),
        defaults: &super::node::DEFAULT_HOOKS_DIRS[..],
        drop_in: None,
    })
}
