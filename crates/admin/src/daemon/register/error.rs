//! Why install or uninstall stops: each refusal one line naming the
//! field and the reason.

use super::*;

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
        source: daemon::config::EditError,
    },
    #[error("{}: {source}", path.display())]
    Underived {
        path: PathBuf,
        /// The daemon's own reason (CRI-O: its default starts a VM).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
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
    #[error("{}: config version {version} is newer than this install knows (2, 3 and 4): install a newer userns-hostnet, or add the handler table by hand (`--dry-run` on a copy with version = {newest} shows it)", path.display())]
    Version {
        path: PathBuf,
        version: i64,
        newest: i64,
    },
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
    #[error("{}: refused: {} replaces the whole CRI plugin table of that file on containerd {major}.{minor} ({}), so runtime handler {handler} would never be served (containerd before 2.0 keeps an imported file's table of a plugin whole): move that file's CRI settings into {0} (or carry the whole table there), then install again", path.display(), import.display(), containerd.display())]
    ImportReplacesCri {
        path: PathBuf,
        import: PathBuf,
        handler: String,
        containerd: PathBuf,
        major: u64,
        minor: u64,
    },
    #[error("{from} is an empty list: name a directory with --hooks-dir")]
    NoHooksDir { from: String },
    #[error("{from} names {}, not an absolute path", dir.display())]
    HooksDirRelative { from: String, dir: PathBuf },
}

/// The restart that makes k3s or RKE2 read their template again.
pub(crate) fn rancher_restart(distro: &str) -> &'static str {
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
    /// The error of an edit of the document of `path` failing.
    pub(crate) fn edit(path: &Path) -> impl FnOnce(daemon::config::EditError) -> InstallError + '_ {
        move |source| InstallError::Edit {
            path: path.to_owned(),
            source,
        }
    }

    /// The error of `what` (`cannot write`...) failing on `path`.
    pub(crate) fn io<'a>(
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
