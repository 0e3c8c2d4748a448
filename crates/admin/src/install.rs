//! `userns-hostnet install` and `uninstall`: register the wrapper as a
//! runtime handler of containerd, CRI-O or podman (or the OCI hook of
//! CRI-O and podman), editing their config with `toml_edit` so comments,
//! order and every other setting stay as they were. A second install
//! changes nothing. It never restarts a daemon: it says which restart is
//! needed.
//!
//! This module is the shell: it gathers what the host holds (the files,
//! where a name resolves in PATH, links), all under `--root`, and hands it
//! to the pure edits of [`super::daemon`]; planning reads, and only
//! [`report::apply`] writes. One submodule per daemon plans its files.
//!
//! Ownership: the handler table install writes carries a comment line, the
//! install marker, with a fingerprint of the table's keys and values.
//! uninstall removes a handler only when the marker is there and the
//! fingerprint still matches: a handler the operator wrote (even one that
//! runs the wrapper), or one changed since install, stays, with a line
//! saying why. The marker travels with the file (backups, copies, config
//! management), so no state elsewhere can disagree with it.
//!
//! The real runtime: the new handler runs the runtime the handler it is
//! derived from ran (containerd's `BinaryName`, CRI-O's `runtime_path`,
//! podman's runtime paths, else that runtime's name in PATH), through its
//! own link, `HANDLERS_DIR/NAME/userns-hostnet-runtime`, next to a link
//! `runtime` to that binary ([`crate::runtime::named_by_handler_link`]).

use super::daemon::{self, containerd, crio, hookfile, podman, Derived, Layout, Owner};
use super::files;
use super::in_use;
use crate::cli::{Engine, InstallArgs, InstallMore, UninstallArgs};
use crate::runtime::{self, HANDLER_RUNTIME_LINK};
use crate::sys::in_root::{InRootError, NodeRoot};
use crate::sys::toml::{self, TomlError};
use std::path::{Path, PathBuf};
use toml_edit::{value, Array, DocumentMut, Item, Table, Value};

mod containerd_plan;
mod crio_plan;
mod hook_plan;
mod podman_plan;
mod report;

pub use containerd_plan::plan_containerd;
pub use crio_plan::plan_crio;
use hook_plan::plan_hook;
pub use podman_plan::plan_podman;
use report::{apply, daemon_name, say};

/// Where CRI-O keeps the wrapper's runtime state (`--root`).
pub const CRIO_RUNTIME_ROOT: &str = crio::RUNTIME_ROOT;

/// Why install or uninstall stops ([`super::EXIT_ERROR`]): one line,
/// which names its cause.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// uninstall, while the handler still has containers on the node.
    #[error(transparent)]
    InUse(#[from] in_use::InUse),
    #[error(transparent)]
    DaemonConfig(#[from] DaemonConfigError),
    #[error(transparent)]
    InTheWay(#[from] InTheWayError),
    #[error(transparent)]
    Toml(#[from] TomlError),
    /// A node's path that cannot be resolved (under `--root`, or a
    /// config that is a link to nothing).
    #[error(transparent)]
    NodePath(#[from] InRootError),
    #[error("{}: {source}", path.display())]
    Edit {
        path: PathBuf,
        #[source]
        source: daemon::EditError,
    },
    #[error("{}: {source}", path.display())]
    Crio {
        path: PathBuf,
        #[source]
        source: crio::CrioRefusal,
    },
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `std::path::absolute` of the drop-in's path.
    #[error(transparent)]
    DropInPath(std::io::Error),
    #[error("{}: not UTF-8", .0.display())]
    NotUtf8(PathBuf),
    #[error("cannot tell this program's path: {0}")]
    OwnPath(#[source] std::io::Error),
    /// The hook definition built into this program does not parse.
    #[error(transparent)]
    ShippedHook(serde_json::Error),
}

/// Arguments install cannot work with.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("--handler {0:?}: not a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63), which a RuntimeClass handler must be")]
    HandlerNotDnsLabel(String),
    #[error("--handler {0:?}: not usable as a directory name for the handler's links")]
    HandlerNotDirName(String),
    #[error("--wrapper {}: not an absolute path; the daemon starts it from its own directory, so name it from /", .0.display())]
    WrapperRelative(PathBuf),
    #[error("--wrapper: not UTF-8")]
    WrapperNotUtf8,
    #[error("--hook: containerd reads no hooks directory; register the runtime handler instead (install containerd, without --hook)")]
    ContainerdHook,
    #[error("--set-as-default: for podman, set `runtime = \"{0}\"` under [engine] in containers.conf by hand")]
    PodmanDefault(String),
    #[error("--config {}: not this host's daemon config (it is outside /etc), yet its handler would need links in {} on this host; give --root DIR to stage a node's tree (links go under DIR), or use --dry-run to see the change", config.display(), handlers.display())]
    HostLinksForCopy { config: PathBuf, handlers: PathBuf },
    #[error("--config {}: not this host's daemon config (it is outside /etc), yet the hook would go to {} on this host; give --root DIR to stage a node's tree, or --hooks-dir DIR", config.display(), dir.display())]
    HostHooksForCopy { config: PathBuf, dir: PathBuf },
    #[error("--hook: the hook would run {} ({why}), which a hook definition must not name: install the program (e.g. /usr/bin/userns-hostnet) and run install from there, or pass --force", tool.display())]
    UnfitHookProgram { tool: PathBuf, why: String },
    #[error("--root {}: not a directory", .0.display())]
    RootNotADir(PathBuf),
    #[error("--root: {} is not an absolute path on the node", .0.display())]
    RelativeUnderRoot(PathBuf),
}

/// A daemon's config that install cannot edit, or cannot edit safely.
#[derive(Debug, thiserror::Error)]
pub enum DaemonConfigError {
    #[error("{p}: no such file; write containerd's defaults first (containerd config default > {p})", p = .0.display())]
    NoContainerdConfig(PathBuf),
    #[error("{parse}\n{}: a Go template, which install cannot edit: add the handler table to it by hand (`userns-hostnet install containerd --config COPY --dry-run` on a copy of the generated config.toml shows the table)", path.display())]
    GoTemplate {
        path: PathBuf,
        #[source]
        parse: TomlError,
    },
    #[error("{p}: {distro} writes this file anew at every start, so an edit here would be lost: register the handler in its template {t} instead, which {distro} uses in place of the generated file; to start the template as a copy of this file: cp {p} {t} && userns-hostnet install containerd --config {t}; then {restart}", p = path.display(), t = template.display(), restart = rancher_restart(distro))]
    Regenerated {
        path: PathBuf,
        template: PathBuf,
        distro: &'static str,
    },
    #[error("{p}: Docker's containerd config (version 1, disabled_plugins = [\"cri\"]): this containerd serves Docker, not the kubelet, and has no CRI runtime handlers; for Kubernetes, keep a copy and write containerd's own defaults (containerd config default > {p}), then install again", p = .0.display())]
    Docker(PathBuf),
    #[error("{}: config version 1 (no `version` line), the format containerd 2.0 removed, is not supported: add `version = 2` and rename [plugins.cri] to [plugins.\"io.containerd.grpc.v1.cri\"] (containerd 1.x), or write the defaults of the containerd that reads it (containerd config default > FILE); then install again", path.display())]
    Version1 { path: PathBuf },
    #[error("{}: config version {version} is newer than this install knows (2, 3 and 4): install a newer userns-hostnet, or add the handler table by hand (`--dry-run` on a copy with version = {newest} shows it)", path.display(), newest = containerd::NEWEST_VERSION)]
    Version { path: PathBuf, version: i64 },
    #[error("{}: config version {version} is not supported", path.display())]
    DropInVersion { path: PathBuf, version: i64 },
    #[error("{p}: --drop-in refused: containerd {major}.{minor} ({}) replaces the whole [plugins.\"io.containerd.grpc.v1.cri\"] table with an imported file's, so a drop-in holding the handler would drop sandbox_image, the CNI settings and every other handler; install without --drop-in (the handler goes into {p}, every other setting and comment kept)", containerd.display(), p = path.display())]
    DropInOn1x {
        path: PathBuf,
        containerd: PathBuf,
        major: u64,
        minor: u64,
    },
    #[error("{}: --drop-in refused: cannot tell which containerd reads it ({} --version gave no version); containerd before 2.0 replaces the whole CRI plugin table with an imported file's, so a drop-in is safe on 2.0 and later only: name the binary with --containerd PATH, or install without --drop-in", path.display(), containerd.display())]
    DropInUnknownContainerd { path: PathBuf, containerd: PathBuf },
    #[error("{}: default_runtime_name names handler {name}, which neither this file nor the {imports} file(s) it imports define: install derives the new handler from the default one and will not guess; define handler {name} (or name a defined one) and install again", path.display())]
    DefaultHandlerMissing {
        path: PathBuf,
        name: String,
        imports: usize,
    },
    #[error("{from} is an empty list: name a directory with --hooks-dir")]
    NoHooksDir { from: String },
    #[error("{from} names {}, not an absolute path", dir.display())]
    HooksDirRelative { from: String, dir: PathBuf },
}

/// The restart that makes k3s or RKE2 read their template again.
fn rancher_restart(distro: &str) -> &'static str {
    if distro == "k3s" {
        "systemctl restart k3s (k3s-agent on an agent)"
    } else {
        "systemctl restart rke2-server (rke2-agent on an agent)"
    }
}

/// Something of the handler's name, a link or a runtime binary, that
/// install does not own and will not replace.
#[derive(Debug, thiserror::Error)]
pub enum InTheWayError {
    #[error("{}: runtime handler {name} already exists and differs; uninstall it or choose another --handler", file.display())]
    HandlerDiffers { file: PathBuf, name: String },
    #[error("{}: runtime handler {name} does not run the wrapper; leaving it alone", file.display())]
    HandlerNotWrapper { file: PathBuf, name: String },
    #[error("{}: podman runtime {name} already exists and does not run the wrapper; leaving it alone (choose another --handler)", file.display())]
    PodmanRuntime { file: PathBuf, name: String },
    #[error("{}: exists and registers no wrapper handler; leaving it alone", .0.display())]
    ForeignDropIn(PathBuf),
    #[error("{}: already holds runtime handler {name}; {what} would register it twice: {undo} first, or choose another --handler", file.display())]
    HandlerElsewhere {
        file: PathBuf,
        name: String,
        what: &'static str,
        undo: String,
    },
    #[error("{}: exists and points to {}, not {}; remove it or choose another --handler", path.display(), found.display(), wanted.display())]
    LinkElsewhere {
        path: PathBuf,
        found: PathBuf,
        wanted: PathBuf,
    },
    #[error("{}: exists and is not a link; remove it or choose another --handler", .0.display())]
    NotALink(PathBuf),
    #[error("{what} = {binary:?} is a relative path; make it absolute, then install again")]
    RuntimeRelative { what: String, binary: String },
    #[error("{what} = {binary:?} is not an executable in PATH")]
    RuntimeNotInPath { what: String, binary: String },
}

impl InstallError {
    /// The error of `what` (`cannot write`...) failing on `path`.
    fn io<'a>(
        what: &'static str,
        path: &'a Path,
    ) -> impl FnOnce(std::io::Error) -> InstallError + 'a {
        move |source| InstallError::Io {
            what,
            path: path.to_owned(),
            source,
        }
    }
}

/// One file's change: `None` is an absent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    pub old: Option<String>,
    pub new: Option<String>,
    /// Copy the old file aside first; never in a drop-in directory, where
    /// the daemon could read the copy as one more drop-in.
    pub backup: bool,
}

impl FileChange {
    fn changes(&self) -> bool {
        self.old != self.new
    }
}

/// A symbolic link install makes or uninstall removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkChange {
    Create { path: PathBuf, target: PathBuf },
    Remove { path: PathBuf, target: PathBuf },
}

/// Everything one install or uninstall does, and what it says.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct InstallPlan {
    pub files: Vec<FileChange>,
    pub links: Vec<LinkChange>,
    /// Lines for the operator: the real runtime, what was left and why.
    pub notes: Vec<String>,
    /// uninstall: a handler of that name stays registered.
    pub left: bool,
    /// `--hook`: the daemon must restart to read a changed config.
    pub restart: bool,
}

impl InstallPlan {
    /// Something of that name stays as it is, for the reason `note` gives;
    /// for uninstall, that means the handler stays registered.
    fn leave(&mut self, install: bool, note: String) {
        self.notes.push(note);
        if !install {
            self.left = true;
        }
    }
}

/// Is `name` a DNS-1123 label, as a RuntimeClass `handler` must be?
pub fn is_dns_label(name: &str) -> bool {
    let b = name.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=63).contains(&b.len())
        && b.first().is_some_and(inner)
        && b.last().is_some_and(inner)
        && b.iter().all(|c| inner(c) || *c == b'-')
}

/// What install checks of its arguments before reading any file.
fn validate(args: &InstallArgs) -> Result<Vec<String>, UsageError> {
    if !is_dns_label(&args.handler) {
        return Err(UsageError::HandlerNotDnsLabel(args.handler.clone()));
    }
    if !args.wrapper.is_absolute() {
        return Err(UsageError::WrapperRelative(args.wrapper.clone()));
    }
    let mut notes = Vec::new();
    if !is_executable_on_node(args, &args.wrapper) {
        notes.push(format!(
            "warning: --wrapper {} is not an executable file: containers of this handler will not start until it is installed there",
            args.wrapper.display()
        ));
    }
    Ok(notes)
}

/// Run `install`; the exit status.
pub fn run(args: &InstallArgs) -> Result<i32, InstallError> {
    reported(args, install(args))
}

fn install(args: &InstallArgs) -> Result<i32, InstallError> {
    let notes = if args.more.hook {
        Vec::new()
    } else {
        validate(args)?
    };
    let mut plan = plan(args, true)?;
    plan.notes.splice(0..0, notes);
    apply(args, &plan, true)
}

/// `uninstall`: the exit status.
pub fn run_uninstall(u: &UninstallArgs) -> Result<i32, InstallError> {
    let args = &uninstall_as_install(u);
    reported(
        args,
        plan(args, false).and_then(|mut plan| {
            guard(args, u.force, &mut plan)?;
            apply(args, &plan, false)
        }),
    )
}

/// uninstall refuses to take a handler away while containers of it are
/// on the node ([`in_use`]); `--force` warns instead, and so do
/// `--dry-run` and `--check`, which write nothing.
fn guard(args: &InstallArgs, force: bool, plan: &mut InstallPlan) -> Result<(), InstallError> {
    let Some(handler) = handler_removed(args, plan)? else {
        return Ok(());
    };
    let containers = in_use::containers(&node_root(args)?, &handler);
    if containers.is_empty() {
        return Ok(());
    }
    let e = in_use::InUse {
        handler: args.handler.clone(),
        containers,
    };
    if force {
        plan.notes.push(e.forced());
    } else if args.dry_run || args.more.check {
        plan.notes.push(format!("warning: {e}"));
    } else {
        return Err(e.into());
    }
    Ok(())
}

/// The containers on the node of the handler an uninstall with `args`
/// would remove ([`in_use`]): deploy's removal asks before it undoes.
pub fn containers_in_use(
    args: &InstallArgs,
) -> Result<Vec<super::daemon::live::Live>, InstallError> {
    let plan = plan(args, false)?;
    Ok(match handler_removed(args, &plan)? {
        Some(h) => in_use::containers(&node_root(args)?, &h),
        None => Vec::new(),
    })
}

/// What tells the containers of the handler this plan removes apart
/// (from the handler's table as it was, the links the plan removes and
/// the daemon's config); `None` when the plan removes no handler (the
/// OCI hook, which runs at create only; podman, whose containers are
/// not checked).
fn handler_removed(
    args: &InstallArgs,
    plan: &InstallPlan,
) -> Result<Option<in_use::Handler>, InstallError> {
    if args.more.hook || args.daemon == Engine::Podman {
        return Ok(None);
    }
    let root = node_root(args)?;
    // The handler's table in a file the plan changes, when the new text
    // no longer has it.
    let find = |text: &str| -> Option<Item> {
        let doc = text.parse::<DocumentMut>().ok()?;
        let layouts = match args.daemon {
            Engine::Crio => vec![crio::layout()],
            _ => [2, 3]
                .iter()
                .filter_map(|v| containerd::layout(*v))
                .collect(),
        };
        layouts
            .iter()
            .find_map(|l| daemon::handler(l, &doc, &args.handler).cloned())
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
        .filter(|p| p.file_name() == Some(crate::WRAPPER_NAME.as_ref()))
        .filter_map(|p| p.to_str().map(str::to_owned))
        .collect();
    if removed.is_empty() && links.is_empty() {
        return Ok(None);
    }
    Ok(Some(match args.daemon {
        Engine::Crio => crio_plan::crio_handler(args, removed.first()),
        _ => {
            let mut binaries = links;
            for h in &removed {
                let b = [2, 3]
                    .iter()
                    .filter_map(|v| containerd::layout(*v))
                    .find_map(|l| daemon::binary_of(&l, h).map(str::to_owned));
                binaries.extend(b);
            }
            binaries.sort();
            binaries.dedup();
            containerd_plan::containerd_handler(args, binaries)?
        }
    }))
}

/// uninstall's arguments in the shape planning reads (install's own
/// options at their defaults).
fn uninstall_as_install(u: &UninstallArgs) -> InstallArgs {
    InstallArgs {
        daemon: u.daemon,
        handler: u.handler.clone(),
        config: u.config.clone(),
        drop_in: u.drop_in,
        containerd: PathBuf::from("containerd"),
        dry_run: u.dry_run,
        wrapper: PathBuf::from(format!("/usr/bin/{}", crate::WRAPPER_NAME)),
        handlers_dir: u.handlers_dir.clone(),
        more: InstallMore {
            hook: u.hook,
            hooks_dir: u.hooks_dir.clone(),
            json: u.json,
            check: u.check,
            root: u.root.clone(),
            ..InstallMore::default()
        },
    }
}

/// The node install works on: under `--root`, else this host.
fn node_root(args: &InstallArgs) -> Result<NodeRoot, InstallError> {
    let root = args.more.root.as_deref();
    NodeRoot::new(root).map_err(InstallError::io(
        "cannot open",
        root.unwrap_or(Path::new("/")),
    ))
}

/// Where a daemon's config file (or one it imports) of the node is here:
/// read and written through the node's links, so that a config that is a
/// link stays one and its target changes (see [`crate::sys::in_root`]).
fn node_file(args: &InstallArgs, node: &Path) -> Result<PathBuf, InstallError> {
    Ok(node_root(args)?.file(node)?)
}

/// Where the node's own entry `node` is here: a link or file install
/// creates, replaces or removes as itself (its directories resolved under
/// `--root`, a link in its last component kept).
fn node_entry(args: &InstallArgs, node: &Path) -> Result<PathBuf, InstallError> {
    Ok(node_root(args)?.entry(node)?)
}

/// `--root`, checked: a directory.
fn check_root(args: &InstallArgs) -> Result<(), UsageError> {
    match &args.more.root {
        Some(r) if !r.is_dir() => Err(UsageError::RootNotADir(r.clone())),
        _ => Ok(()),
    }
}

/// Under `--json` an error is the one document on standard output,
/// `{"error": LINE}`, with the status of an error: a script reads one
/// document whatever happened. Otherwise the caller prints it on stderr.
fn reported(args: &InstallArgs, result: Result<i32, InstallError>) -> Result<i32, InstallError> {
    match result {
        Err(e) if args.more.json => {
            let doc = serde_json::json!({ "error": e.to_string() });
            say(&format!("{doc:#}\n"));
            Ok(super::EXIT_ERROR)
        }
        other => other,
    }
}

fn plan(args: &InstallArgs, install: bool) -> Result<InstallPlan, InstallError> {
    check_root(args)?;
    match (args.daemon, args.more.hook) {
        (Engine::Containerd, true) => Err(UsageError::ContainerdHook.into()),
        (Engine::Crio | Engine::Podman, true) => plan_hook(args, install),
        (Engine::Containerd, false) => plan_containerd(args, install),
        (Engine::Crio, false) => plan_crio(args, install),
        (Engine::Podman, false) if args.more.set_as_default => {
            Err(UsageError::PodmanDefault(args.handler.clone()).into())
        }
        (Engine::Podman, false) => plan_podman(args, install),
    }
}

/// Does this handler run the wrapper (its binary at `layout.binary`)?
fn runs_wrapper(layout: &Layout, handler: &Item) -> bool {
    daemon::binary_of(layout, handler).is_some_and(daemon::is_wrapper)
}

/// The daemon's config file as the node sees it: `--config`, else
/// `default`; made absolute (under `--root` it must be).
fn config_path(args: &InstallArgs, default: &str) -> Result<PathBuf, InstallError> {
    let p = args
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from(default));
    if p.is_absolute() {
        return Ok(p);
    }
    if args.more.root.is_some() {
        return Err(UsageError::RelativeUnderRoot(p).into());
    }
    std::path::absolute(&p).map_err(InstallError::DropInPath)
}

fn wrapper_str(args: &InstallArgs) -> Result<String, UsageError> {
    args.wrapper
        .to_str()
        .map(str::to_owned)
        .ok_or(UsageError::WrapperNotUtf8)
}

/// Whether the node runs `node` as a program: under `--root`, its links
/// are followed inside the root (a node's `/usr/sbin/runc ->
/// /etc/alternatives/runc` is the node's alternative, not this host's).
fn is_executable_on_node(args: &InstallArgs, node: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let meta = node_root(args).ok().and_then(|n| n.metadata(node).ok());
    meta.is_some_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where the node's PATH finds `name` (looked up under `--root`), as the
/// node names it.
fn find_in_path(args: &InstallArgs, name: &str) -> Option<PathBuf> {
    let path_var = std::env::var_os("PATH")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| runtime::FALLBACK_PATH.into());
    std::env::split_paths(&path_var)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| is_executable_on_node(args, p))
}

/// The runtime the source handler runs, which the new handler keeps as
/// its real runtime: `binary` (read where `what` says; `implicit` when no
/// setting names it and the daemon looks the name up in PATH), unless the
/// wrapper's own name already names one or that binary is the wrapper.
fn carried_runtime(
    args: &InstallArgs,
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
    if own || daemon::is_wrapper(binary) {
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
fn carried_handler_binary(
    args: &InstallArgs,
    config: &Path,
    wrapper: &str,
    (binary, implicit, what): (&str, bool, &str),
    plan: &mut InstallPlan,
) -> Result<String, InstallError> {
    let real = carried_runtime(args, Some(binary), implicit, wrapper, what, &mut plan.notes)?;
    handler_binary(args, config, wrapper, real, what, plan)
}

/// The handlers directory as the node sees it.
fn handlers_node_dir(args: &InstallArgs) -> PathBuf {
    args.handlers_dir
        .clone()
        .unwrap_or_else(runtime::handlers_dir)
}

/// Is `config` the config of a daemon of this host (under /etc, or a k3s
/// or RKE2 template), so that links on this host serve it?
fn is_hosts_config(config: &Path) -> bool {
    config.starts_with("/etc") || daemon::containerd::node::rancher_distro(config).is_some()
}

/// The binary a new handler names, and the links it needs: the wrapper
/// itself, or with a runtime carried from the source (`real`, read where
/// `what` says) the handler's own link to it.
fn handler_binary(
    args: &InstallArgs,
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
    if args.more.root.is_none()
        && args.handlers_dir.is_none()
        && !is_hosts_config(config)
        && !args.dry_run
        && !args.more.check
    {
        return Err(UsageError::HostLinksForCopy {
            config: config.to_owned(),
            handlers,
        }
        .into());
    }
    let dir = handlers.join(name);
    let link = dir.join(crate::WRAPPER_NAME);
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
fn handler_dir(args: &InstallArgs, binary: Option<&str>) -> Option<PathBuf> {
    let handlers = handlers_node_dir(args);
    let link = Path::new(binary?);
    link.parent()
        .filter(|d| d.parent() == Some(handlers.as_path()))
        .filter(|_| link.file_name() == Some(crate::WRAPPER_NAME.as_ref()))
        .map(Path::to_owned)
}

/// The links a removed handler leaves behind: those of its own directory,
/// when its binary is a handler's link to the wrapper.
fn handler_links(args: &InstallArgs, binary: Option<&str>) -> Vec<LinkChange> {
    let Some(dir) = handler_dir(args, binary) else {
        return Vec::new();
    };
    [crate::WRAPPER_NAME, HANDLER_RUNTIME_LINK]
        .into_iter()
        .filter_map(|n| {
            let path = node_entry(args, &dir.join(n)).ok()?;
            let target = std::fs::read_link(&path).ok()?;
            Some(LinkChange::Remove { path, target })
        })
        .collect()
}

/// Notes for the settings a derived handler changed or could not carry.
fn derived_notes(name: &str, from: &str, d: &Derived, plan: &mut InstallPlan) {
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
fn changes_handler(
    args: &InstallArgs,
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
    let binary = daemon::binary_of(layout, e);
    let why_left = match (daemon::owner(e), install) {
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

/// Makes the handler table install adds, noting the links it needs.
type MakeHandler<'a> = dyn Fn(&mut InstallPlan) -> Result<Table, InstallError> + 'a;

/// The handler in `doc`: install adds the one `make` makes, uninstall
/// (`make` is `None`) removes it, when [`changes_handler`] says so;
/// `Ok(true)` when `doc` changed.
fn edit_handler(
    args: &InstallArgs,
    doc: &mut DocumentMut,
    layout: &Layout,
    file: &Path,
    make: Option<&MakeHandler>,
    plan: &mut InstallPlan,
) -> Result<bool, InstallError> {
    let name = args.handler.as_str();
    let existing = daemon::handler(layout, doc, name);
    if !changes_handler(args, make.is_some(), existing, layout, file, plan)? {
        return Ok(false);
    }
    let edit = |source| InstallError::Edit {
        path: file.to_owned(),
        source,
    };
    match make {
        Some(make) => {
            let h = make(plan)?;
            daemon::add(layout, doc, name, h).map_err(edit)?;
        }
        None => {
            daemon::remove(layout, doc, name);
        }
    }
    Ok(true)
}

/// The command that undoes an install of these arguments.
fn undo_command(args: &InstallArgs, drop_in: bool) -> String {
    let mut cmd = format!("userns-hostnet uninstall {}", daemon_name(args.daemon));
    if drop_in {
        cmd.push_str(" --drop-in");
    }
    if args.handler != "userns-hostnet" {
        cmd.push_str(&format!(" --handler {}", args.handler));
    }
    if let Some(c) = &args.config {
        cmd.push_str(&format!(" --config {}", c.display()));
    }
    if let Some(r) = &args.more.root {
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
fn plan_drop_in(
    args: &InstallArgs,
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
        && daemon::handler(layout, &doc, &args.handler).is_none()
        && daemon::wrapper_handlers(layout, &doc).is_empty()
    {
        return Err(InTheWayError::ForeignDropIn(path.to_owned()).into());
    }
    if !edit_handler(args, &mut doc, layout, path, make, plan)? {
        return Ok(Some(old.to_owned()));
    }
    if !install {
        if daemon::holds_nothing(&doc) {
            return Ok(None);
        }
        plan.notes
            .push(format!("kept {}: it holds other settings", path.display()));
    }
    Ok(Some(doc.to_string()))
}

/// Says, in a new drop-in, that install makes its directory, so that
/// uninstall removes the directory again once empty (and leaves one the
/// operator made).
const MADE_DIR_MARK: &str = "# install made this directory; uninstall removes it when empty.";

fn made_dir_line(drop_in: &Path) -> String {
    match drop_in.parent() {
        Some(dir) if !dir.exists() => format!("{MADE_DIR_MARK}\n"),
        _ => String::new(),
    }
}

/// uninstall: put back the default handler install set in `doc` (`path`
/// on this host); whether `doc` changed. A default naming the handler set
/// by hand gets a warning.
fn restore(
    path: &Path,
    layout: &Layout,
    doc: &mut DocumentMut,
    name: &str,
    plan: &mut InstallPlan,
) -> Result<bool, InstallError> {
    match daemon::restore_default(layout, doc, name) {
        Ok(daemon::Restored::Restored) => Ok(true),
        Ok(daemon::Restored::NotDefault) => Ok(false),
        Ok(daemon::Restored::SetByHand) => {
            let key = layout.default.as_ref().map_or("", |(_, k)| k);
            plan.notes.push(format!(
                "warning: {key} in {} still names {name}, set by hand: containers asking for no handler will fail once it is gone; set it to another handler",
                path.display()
            ));
            Ok(false)
        }
        Err(source) => Err(InstallError::Edit {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Apply `--set-as-default` (install) or put the old default back
/// (uninstall) in the new text of `file` (on this host) in the plan.
fn plan_default(
    args: &InstallArgs,
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
    if install && !args.more.set_as_default {
        return Ok(());
    }
    let mut doc = toml::parse(file, &text)?;
    let changed = if install {
        daemon::set_default(layout, &mut doc, &args.handler).map_err(|source| {
            InstallError::Edit {
                path: file.to_owned(),
                source,
            }
        })?
    } else {
        restore(file, layout, &mut doc, &args.handler, plan)?
    };
    if changed {
        plan.files[i].new = Some(doc.to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_names_are_dns_labels() {
        for ok in ["userns-hostnet", "a", "runc-1-4", &"a".repeat(63)] {
            assert!(is_dns_label(ok), "{ok}");
        }
        for bad in [
            "",
            "Bad_Name",
            "bad name!",
            "-a",
            "a-",
            "a.b",
            &"a".repeat(64),
        ] {
            assert!(!is_dns_label(bad), "{bad}");
        }
    }

    /// The lines operators and scripts know, word for word.
    #[test]
    fn error_lines() {
        let p = Path::new("/etc/containerd/config.toml");
        let e = InstallError::from(DaemonConfigError::NoContainerdConfig(p.to_owned()));
        assert_eq!(
            e.to_string(),
            "/etc/containerd/config.toml: no such file; write containerd's defaults first (containerd config default > /etc/containerd/config.toml)"
        );
        let dir = Path::new("/var/lib/rancher/k3s/agent/etc/containerd");
        let e = DaemonConfigError::Regenerated {
            path: dir.join("config.toml"),
            template: dir.join("config.toml.tmpl"),
            distro: "k3s",
        };
        assert_eq!(
            e.to_string(),
            format!(
                "{0}/config.toml: k3s writes this file anew at every start, so an edit here would be lost: register the handler in its template {0}/config.toml.tmpl instead, which k3s uses in place of the generated file; to start the template as a copy of this file: cp {0}/config.toml {0}/config.toml.tmpl && userns-hostnet install containerd --config {0}/config.toml.tmpl; then systemctl restart k3s (k3s-agent on an agent)",
                dir.display()
            )
        );
        let e = InstallError::io("cannot write", p)(std::io::Error::from_raw_os_error(30));
        assert_eq!(
            e.to_string(),
            "cannot write /etc/containerd/config.toml: Read-only file system (os error 30)"
        );
        assert!(std::error::Error::source(&e).is_some());
    }

    fn args(root: Option<&Path>) -> InstallArgs {
        let u = UninstallArgs {
            daemon: Engine::Containerd,
            handler: "userns-hostnet".into(),
            config: None,
            drop_in: false,
            dry_run: false,
            handlers_dir: None,
            hook: false,
            hooks_dir: None,
            json: false,
            check: false,
            root: root.map(Path::to_owned),
            force: false,
        };
        uninstall_as_install(&u)
    }

    #[test]
    fn root_maps_node_paths() {
        let dir = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(r.join("etc/containerd")).unwrap();
        std::fs::create_dir_all(r.join("etc/k0s")).unwrap();
        std::fs::write(r.join("etc/k0s/containerd.toml"), "").unwrap();
        std::os::unix::fs::symlink(
            "/etc/k0s/containerd.toml",
            r.join("etc/containerd/config.toml"),
        )
        .unwrap();
        let a = args(Some(&r));
        let config = Path::new("/etc/containerd/config.toml");
        // The node's config: its link followed inside the root.
        assert_eq!(
            node_file(&a, config).unwrap(),
            r.join("etc/k0s/containerd.toml")
        );
        // The node's own entry: kept as the link it is.
        assert_eq!(
            node_entry(&a, config).unwrap(),
            r.join("etc/containerd/config.toml")
        );
        assert_eq!(
            node_file(&a, Path::new("/etc/crio/crio.conf")).unwrap(),
            r.join("etc/crio/crio.conf")
        );
        let a = args(None);
        assert_eq!(
            node_entry(&a, Path::new("/etc/crio/crio.conf")).unwrap(),
            PathBuf::from("/etc/crio/crio.conf")
        );
    }

    #[test]
    fn which_binary_is_carried() {
        let mut notes = Vec::new();
        let a = args(None);
        let w = "/usr/bin/userns-hostnet-runtime";
        let carried = |b: Option<&str>, implicit: bool, w: &str, notes: &mut Vec<String>| {
            carried_runtime(&a, b, implicit, w, "BinaryName of handler runc", notes)
        };
        assert_eq!(carried(None, false, w, &mut notes).unwrap(), None);
        assert_eq!(carried(Some(""), false, w, &mut notes).unwrap(), None);
        // The wrapper's own name names its runtime: it wins.
        assert_eq!(
            carried(
                Some("/usr/sbin/runc"),
                false,
                "/usr/bin/userns-hostnet-runtime-crun",
                &mut notes
            )
            .unwrap(),
            None
        );
        assert_eq!(carried(Some(w), false, w, &mut notes).unwrap(), None);
        assert_eq!(
            carried(Some("/opt/runc-1.4"), false, w, &mut notes).unwrap(),
            Some(PathBuf::from("/opt/runc-1.4"))
        );
        assert!(
            notes[0].starts_with(
                "warning: /opt/runc-1.4 (BinaryName of handler runc) is not an executable file"
            ),
            "{notes:?}"
        );
        let e = carried(Some("bin/runc"), false, w, &mut notes).unwrap_err();
        assert_eq!(
            e.to_string(),
            "BinaryName of handler runc = \"bin/runc\" is a relative path; make it absolute, then install again"
        );
        let e = carried(Some("no-such-runtime-anywhere"), false, w, &mut notes).unwrap_err();
        assert!(e.to_string().contains("not an executable in PATH"), "{e}");
        // A name no setting gave: the wrapper chooses, with a warning.
        assert_eq!(
            carried(Some("no-such-runtime-anywhere"), true, w, &mut notes).unwrap(),
            None
        );
        assert!(notes.last().unwrap().contains("is not there"), "{notes:?}");
    }
}
