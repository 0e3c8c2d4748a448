//! The node's paths as install sees them: under `--root` (resolved inside
//! it) or the host's, the config's default place, the wrapper and PATH.

use super::*;

/// The node install works on: under `--root`, else this host.
pub(crate) fn node_root(args: &Registration) -> Result<NodeRoot, InstallError> {
    let root = args.root.as_deref();
    NodeRoot::new(root).map_err(InstallError::io(
        "cannot open",
        root.unwrap_or(Path::new("/")),
    ))
}

/// Where a daemon's config file (or one it imports) of the node is here:
/// read and written through the node's links, so that a config that is a
/// link stays one and its target changes (see [`userns_hostnet::sys::in_root`]).
pub(crate) fn node_file(args: &Registration, node: &Path) -> Result<PathBuf, InstallError> {
    Ok(node_root(args)?.file(node)?)
}

/// Where the node's own entry `node` is here: a link or file install
/// creates, replaces or removes as itself (its directories resolved under
/// `--root`, a link in its last component kept).
pub(crate) fn node_entry(args: &Registration, node: &Path) -> Result<PathBuf, InstallError> {
    Ok(node_root(args)?.entry(node)?)
}

/// `--root`, checked: a directory.
pub(crate) fn check_root(args: &Registration) -> Result<(), UsageError> {
    match &args.root {
        Some(r) if !r.is_dir() => Err(UsageError::RootNotADir(r.clone())),
        _ => Ok(()),
    }
}

/// The daemon's config file as the node sees it: `--config`, else
/// `default`; made absolute (under `--root` it must be).
pub(crate) fn config_path(args: &Registration, default: &str) -> Result<PathBuf, InstallError> {
    let p = args
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from(default));
    if p.is_absolute() {
        return Ok(p);
    }
    if args.root.is_some() {
        return Err(UsageError::RelativeUnderRoot(p).into());
    }
    std::path::absolute(&p).map_err(InstallError::DropInPath)
}

pub(crate) fn wrapper_str(args: &Registration) -> Result<String, UsageError> {
    args.wrapper
        .to_str()
        .map(str::to_owned)
        .ok_or(UsageError::WrapperNotUtf8)
}

/// Whether the node runs `node` as a program: under `--root`, its links
/// are followed inside the root (a node's `/usr/sbin/runc ->
/// /etc/alternatives/runc` is the node's alternative, not this host's).
pub(crate) fn is_executable_on_node(args: &Registration, node: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let meta = node_root(args).ok().and_then(|n| n.metadata(node).ok());
    meta.is_some_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where the node's PATH finds `name` (looked up under `--root`), as the
/// node names it.
pub(crate) fn find_in_path(args: &Registration, name: &str) -> Option<PathBuf> {
    let path_var = std::env::var_os("PATH")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| runtime::FALLBACK_PATH.into());
    std::env::split_paths(&path_var)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| is_executable_on_node(args, p))
}

/// The handlers directory as the node sees it.
pub(crate) fn handlers_node_dir(args: &Registration) -> PathBuf {
    args.handlers_dir
        .clone()
        .unwrap_or_else(runtime::handlers_dir)
}

/// Is `config` the config of a daemon of this host (under /etc, or a k3s
/// or RKE2 template), so that links on this host serve it?
pub(crate) fn is_hosts_config(config: &Path) -> bool {
    config.starts_with("/etc") || daemon::containerd::node::rancher_distro(config).is_some()
}
