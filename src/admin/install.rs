//! `userns-hostnet install` and `uninstall`: register the wrapper as a
//! runtime handler of containerd or CRI-O, editing their config with
//! `toml_edit` so comments, order and every other setting stay as they were.
//! A second install changes nothing. It never restarts a daemon: it says
//! which restart is needed.
//!
//! Ownership: the handler table install writes carries a comment line, the
//! install marker, with a fingerprint of the table's keys and values.
//! uninstall removes a handler only when the marker is there and the
//! fingerprint still matches: a handler the operator wrote (even one that
//! runs the wrapper), or one changed since install, stays, with a line
//! saying why. The marker travels with the file (backups, copies, config
//! management), so no state elsewhere can disagree with it.
//!
//! The real runtime: when the handler install copies its settings from
//! names its own runtime binary (containerd's `BinaryName`, CRI-O's
//! `runtime_path`), the new handler runs the wrapper through its own link,
//! `HANDLERS_DIR/NAME/userns-hostnet-runtime`, next to a link `runtime` to
//! that binary ([`crate::runtime::named_by_handler_link`]).

use super::daemon::{self, containerd, crio, hookfile, podman, Derived, Layout, Owner};
use super::daemons;
use super::files;
use crate::cli::{Engine, InstallArgs, InstallMore, UninstallArgs};
use crate::runtime::{self, HANDLER_RUNTIME_LINK};
use crate::sys::toml::{self, TomlError};
use std::path::{Path, PathBuf};
use toml_edit::{value, Array, DocumentMut, Item, Table, Value};

/// Where CRI-O keeps the wrapper's runtime state (`--root`).
pub const CRIO_RUNTIME_ROOT: &str = crio::RUNTIME_ROOT;

/// Why install or uninstall stops ([`super::EXIT_ERROR`]): one line,
/// which names its cause.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Usage(#[from] UsageError),
    #[error(transparent)]
    DaemonConfig(#[from] DaemonConfigError),
    #[error(transparent)]
    InTheWay(#[from] InTheWayError),
    #[error(transparent)]
    Toml(#[from] TomlError),
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
pub struct Plan {
    pub files: Vec<FileChange>,
    pub links: Vec<LinkChange>,
    /// Lines for the operator: the real runtime, what was left and why.
    pub notes: Vec<String>,
    /// uninstall: a handler of that name stays registered.
    pub left: bool,
    /// `--hook`: the daemon must restart to read a changed config.
    pub restart: bool,
}

impl Plan {
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
    if !is_executable(&on_host(args, &args.wrapper)) {
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
pub fn run_uninstall(args: &UninstallArgs) -> Result<i32, InstallError> {
    let args = &uninstall_as_install(args);
    reported(
        args,
        plan(args, false).and_then(|plan| apply(args, &plan, false)),
    )
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

/// Where the node's path `node` is on this host: under `--root`, else
/// itself.
fn on_host(args: &InstallArgs, node: &Path) -> PathBuf {
    match &args.more.root {
        Some(root) => root.join(node.strip_prefix("/").unwrap_or(node)),
        None => node.to_owned(),
    }
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

fn plan(args: &InstallArgs, install: bool) -> Result<Plan, InstallError> {
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

/// Standard output, where a closed pipe is not an error worth a panic.
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Marks an `imports` line that install added, so uninstall removes the
/// whole line again rather than leaving an empty list behind.
const IMPORTS_MARK: &str = " # added by userns-hostnet install";

fn daemon_name(d: Engine) -> &'static str {
    match d {
        Engine::Containerd => "containerd",
        Engine::Crio => "crio",
        Engine::Podman => "podman",
    }
}

/// What install registers, in the lines it prints.
fn subject(args: &InstallArgs) -> String {
    if args.more.hook {
        "the createRuntime hook".to_owned()
    } else if args.daemon == Engine::Podman {
        format!("podman runtime {}", args.handler)
    } else {
        format!("runtime handler {}", args.handler)
    }
}

/// What install or uninstall tells: lines of text as it goes, or with
/// `--json` one document at the end.
struct Report {
    json: bool,
    files: Vec<serde_json::Value>,
    links: Vec<serde_json::Value>,
}

impl Report {
    fn line(&self, text: &str) {
        if !self.json {
            say(&format!("{text}\n"));
        }
    }
}

fn link_json(l: &LinkChange) -> serde_json::Value {
    match l {
        LinkChange::Create { path, target } => {
            serde_json::json!({"path": path, "target": target, "action": "create"})
        }
        LinkChange::Remove { path, target } => {
            serde_json::json!({"path": path, "target": target, "action": "remove"})
        }
    }
}

fn file_action(c: &FileChange) -> &'static str {
    match (&c.old, &c.new) {
        (None, None) => "absent",
        (None, Some(_)) => "create",
        (Some(_), None) => "remove",
        (Some(o), Some(n)) if o == n => "unchanged",
        _ => "modify",
    }
}

fn apply(args: &InstallArgs, plan: &Plan, install: bool) -> Result<i32, InstallError> {
    let daemon = daemon_name(args.daemon);
    let done = if install { "installed" } else { "removed" };
    let changed: Vec<&FileChange> = plan.files.iter().filter(|c| c.changes()).collect();
    let would_change = !changed.is_empty() || !plan.links.is_empty();
    let mut report = Report {
        json: args.more.json,
        files: Vec::new(),
        links: Vec::new(),
    };
    let restart = if !changed.is_empty()
        && (!args.more.hook || plan.restart)
        && args.daemon != Engine::Podman
    {
        Some(format!("systemctl restart {daemon}"))
    } else {
        None
    };
    let status = if args.more.check {
        i32::from(would_change)
    } else {
        i32::from(plan.left)
    };
    let finish = |report: &Report, written: bool| {
        if !report.json {
            return;
        }
        let files: Vec<serde_json::Value> = if written {
            report.files.clone()
        } else {
            plan.files
                .iter()
                .map(|c| serde_json::json!({"path": c.path, "action": file_action(c)}))
                .collect()
        };
        let links: Vec<serde_json::Value> = if written {
            report.links.clone()
        } else {
            plan.links.iter().map(link_json).collect()
        };
        let doc = serde_json::json!({
            "command": if install { "install" } else { "uninstall" },
            "daemon": daemon,
            "subject": subject(args),
            "written": written,
            "changed": would_change,
            "files": files,
            "links": links,
            "notes": plan.notes,
            "left": plan.left,
            "restart": if written { restart.clone() } else { None },
        });
        say(&format!("{doc:#}\n"));
    };
    let notes = |report: &Report| {
        for n in &plan.notes {
            report.line(n);
        }
    };
    if args.more.check {
        for c in &changed {
            report.line(&format!("would {} {}", file_action(c), c.path.display()));
        }
        for l in &plan.links {
            report.line(&match l {
                LinkChange::Create { path, .. } => format!("would link {}", path.display()),
                LinkChange::Remove { path, .. } => format!("would remove {}", path.display()),
            });
        }
        if !would_change {
            report.line(&format!(
                "in place: {} is {done} for {daemon}",
                subject(args)
            ));
        }
        finish(&report, false);
        return Ok(status);
    }
    if !would_change {
        if !plan.left {
            report.line(&format!(
                "nothing to change: {} is already {done} for {daemon}",
                subject(args)
            ));
        }
        notes(&report);
        finish(&report, false);
        return Ok(status);
    }
    if args.dry_run {
        for c in &changed {
            if !report.json {
                say(&files::unified_diff(
                    &c.path,
                    c.old.as_deref(),
                    c.new.as_deref(),
                ));
            }
        }
        for l in &plan.links {
            report.line(&match l {
                LinkChange::Create { path, target } => {
                    format!("+link {} -> {}", path.display(), target.display())
                }
                LinkChange::Remove { path, target } => {
                    format!("-link {} -> {}", path.display(), target.display())
                }
            });
        }
        notes(&report);
        report.line("(dry run: nothing written)");
        finish(&report, false);
        return Ok(status);
    }
    // The links exist before a config names them, and go after none does.
    if install {
        apply_links(&plan.links, &mut report)?;
    }
    for c in &changed {
        match (&c.old, &c.new) {
            (old, None) => {
                std::fs::remove_file(&c.path)
                    .map_err(InstallError::io("cannot remove", &c.path))?;
                report.line(&format!("removed {}", c.path.display()));
                report
                    .files
                    .push(serde_json::json!({"path": c.path, "action": "remove"}));
                let made_dir = old.as_deref().is_some_and(|t| t.contains(MADE_DIR_MARK));
                if let Some(dir) = c.path.parent().filter(|_| made_dir) {
                    // Only when empty: a file put there since stays.
                    if std::fs::remove_dir(dir).is_ok() {
                        report.line(&format!("removed {}", dir.display()));
                        report
                            .files
                            .push(serde_json::json!({"path": dir, "action": "remove"}));
                    }
                }
            }
            (old, Some(new)) => {
                let mut backup = None;
                if old.is_some() && c.backup && args.more.backup {
                    let b = files::backup(&c.path)
                        .map_err(InstallError::io("cannot back up", &c.path))?;
                    report.line(&format!("backup {}", b.display()));
                    backup = Some(b);
                }
                files::write_atomic(&c.path, new.as_bytes())
                    .map_err(InstallError::io("cannot write", &c.path))?;
                report.line(&format!("wrote {}", c.path.display()));
                report.files.push(serde_json::json!({
                    "path": c.path,
                    "action": file_action(c),
                    "backup": backup,
                }));
            }
        }
    }
    if !install {
        apply_links(&plan.links, &mut report)?;
    }
    notes(&report);
    if !changed.is_empty() {
        if args.more.hook && plan.restart {
            report.line(&format!(
                "{} {done}; restart {daemon} for it to read its hooks_dir again: systemctl restart {daemon}",
                subject(args)
            ));
        } else if args.more.hook {
            report.line(&format!(
                "{} {done}; CRI-O and podman read their hooks directories for each new container: no restart needed",
                subject(args)
            ));
        } else if args.daemon == Engine::Podman {
            report.line(&format!(
                "{} {done}; podman reads containers.conf at every command: no restart needed{}",
                subject(args),
                if install {
                    format!("; run containers with podman --runtime {}", args.handler)
                } else {
                    String::new()
                }
            ));
        } else {
            report.line(&format!(
                "{} {done}; restart {daemon} for it to take effect: systemctl restart {daemon}",
                subject(args)
            ));
        }
    }
    finish(&report, true);
    Ok(status)
}

fn apply_links(links: &[LinkChange], report: &mut Report) -> Result<(), InstallError> {
    for l in links {
        match l {
            LinkChange::Create { path, target } => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(InstallError::io("cannot create", dir))?;
                }
                std::os::unix::fs::symlink(target, path)
                    .map_err(InstallError::io("cannot create", path))?;
                report.line(&format!(
                    "linked {} -> {}",
                    path.display(),
                    target.display()
                ));
                report.links.push(link_json(l));
            }
            LinkChange::Remove { path, .. } => {
                match std::fs::remove_file(path) {
                    Ok(()) => {
                        report.line(&format!("removed {}", path.display()));
                        report.links.push(link_json(l));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(InstallError::io("cannot remove", path)(e)),
                }
                // The handler's directory and the directory of handlers go
                // when empty; anything else put there keeps them.
                if let Some(dir) = path.parent() {
                    if std::fs::remove_dir(dir).is_ok() {
                        if let Some(up) = dir.parent() {
                            let _ = std::fs::remove_dir(up);
                        }
                    }
                }
            }
        }
    }
    Ok(())
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

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
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
        .find(|p| is_executable(&on_host(args, p)))
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
    if !is_executable(&on_host(args, &path)) {
        notes.push(format!(
            "warning: {} ({what}) is not an executable file: containers of this handler will not start until it is",
            path.display()
        ));
    }
    Ok(Some(path))
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
    config.starts_with("/etc") || daemons::rancher_distro(config).is_some()
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
    plan: &mut Plan,
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
        let path = on_host(args, &node);
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
            let path = on_host(args, &dir.join(n));
            let target = std::fs::read_link(&path).ok()?;
            Some(LinkChange::Remove { path, target })
        })
        .collect()
}

/// Notes for the settings a derived handler changed or could not carry.
fn derived_notes(name: &str, from: &str, d: &Derived, plan: &mut Plan) {
    if !d.carried.is_empty() {
        plan.notes.push(format!(
            "handler {name} carries every setting of handler {from}: {}",
            d.carried.join(", ")
        ));
    }
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
    plan: &mut Plan,
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
type MakeHandler<'a> = dyn Fn(&mut Plan) -> Result<Table, InstallError> + 'a;

/// The handler in `doc`: install adds the one `make` makes, uninstall
/// (`make` is `None`) removes it, when [`changes_handler`] says so;
/// `Ok(true)` when `doc` changed.
fn edit_handler(
    args: &InstallArgs,
    doc: &mut DocumentMut,
    layout: &Layout,
    file: &Path,
    make: Option<&MakeHandler>,
    plan: &mut Plan,
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

/// The containerd files `config` imports, as (node path, host path).
fn containerd_import_files(args: &InstallArgs, doc: &DocumentMut, config: &Path) -> Vec<PathBuf> {
    let host_config = on_host(args, config);
    daemons::containerd_imports(doc, &host_config, &|p| on_host(args, p))
}

/// What install (or uninstall) changes for containerd.
pub fn plan_containerd(args: &InstallArgs, install: bool) -> Result<Plan, InstallError> {
    let config = config_path(args, daemons::CONTAINERD_CONFIG)?;
    let host_config = on_host(args, &config);
    let Some(text) = toml::read_optional(&host_config)? else {
        return Err(DaemonConfigError::NoContainerdConfig(host_config).into());
    };
    let mut doc = match toml::parse(&host_config, &text) {
        Ok(d) => d,
        Err(parse) if text.contains("{{") && daemons::rancher_distro(&config).is_some() => {
            return Err(DaemonConfigError::GoTemplate {
                path: host_config,
                parse,
            }
            .into())
        }
        Err(e) => return Err(e.into()),
    };
    let version = containerd::version(&doc);
    if let Some(distro) = daemons::rancher_distro(&config)
        .filter(|_| config.file_name().is_some_and(|n| n == "config.toml"))
    {
        let template = config.with_file_name(if version >= 3 {
            "config-v3.toml.tmpl"
        } else {
            "config.toml.tmpl"
        });
        return Err(DaemonConfigError::Regenerated {
            path: config,
            template,
            distro,
        }
        .into());
    }
    let cri_off = containerd::cri_disabled(&doc);
    if version < 2 && cri_off.is_some() {
        return Err(DaemonConfigError::Docker(host_config).into());
    }
    if version < 2 {
        return Err(DaemonConfigError::Version1 { path: host_config }.into());
    }
    let Some(layout) = containerd::layout(version) else {
        return Err(DaemonConfigError::Version {
            path: host_config,
            version,
        }
        .into());
    };
    let mut plan = Plan::default();
    if install {
        if let Some(plugin) = cri_off {
            plan.notes.push(format!(
                "warning: {} lists {plugin:?} in disabled_plugins: containerd serves no CRI, so the kubelet cannot use any handler; remove it from disabled_plugins and restart containerd",
                host_config.display()
            ));
        }
    }
    let wrapper = wrapper_str(args)?;
    // The handler install adds is derived from the main config's default.
    let main = doc.clone();
    let make = |plan: &mut Plan| -> Result<Table, InstallError> {
        let source = containerd::source(&layout, &main);
        let named = source
            .as_ref()
            .and_then(|(_, h)| daemon::binary_of(&layout, h))
            .filter(|b| !b.is_empty());
        let (binary, implicit, what) = match (&source, named) {
            (Some((s, _)), Some(b)) => (
                b.to_owned(),
                false,
                format!("BinaryName of handler {s} in {}", config.display()),
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
        let real = carried_runtime(
            args,
            Some(&binary),
            implicit,
            &wrapper,
            &what,
            &mut plan.notes,
        )?;
        let bin = handler_binary(args, &config, &wrapper, real, &what, plan)?;
        let derived = containerd::derive(source.as_ref().map(|(_, h)| *h), &bin);
        if let Some((s, _)) = &source {
            derived_notes(&args.handler, s, &derived, plan);
        }
        Ok(daemon::marked(derived.table))
    };
    let make: Option<&MakeHandler> = if install { Some(&make) } else { None };
    if args.drop_in && install && version == 2 {
        refuse_1x_drop_in(args, &host_config)?;
    }
    if args.drop_in {
        if install && daemon::handler(&layout, &doc, &args.handler).is_some() {
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
        let absent = daemon::handler(&layout, &doc, &args.handler).is_none();
        if install && absent {
            refuse_imported_handler(args, &doc, &config, version)?;
        }
        let edited = edit_handler(args, &mut doc, &layout, &host_config, make, &mut plan)?;
        let new = if edited {
            doc.to_string()
        } else {
            if !install && absent {
                imported_handler(args, &doc, &config, version, &mut plan);
            }
            text.clone()
        };
        if !install && edited {
            keep_links_still_named(args, &doc, &config, version, &host_config, &mut plan);
        }
        if install && version == 2 {
            let new_doc = toml::parse(&host_config, &new)?;
            clobbered_handler(args, &config, new_doc, &mut plan);
        }
        plan.files.push(FileChange {
            path: host_config.clone(),
            old: Some(text),
            new: Some(new),
            backup: true,
        });
    }
    plan_default(args, install, &host_config, &layout, &mut plan)?;
    Ok(plan)
}

/// The handler names each file `config` imports registers.
fn imported_handlers(
    args: &InstallArgs,
    doc: &DocumentMut,
    config: &Path,
    version: i64,
) -> Vec<(PathBuf, DocumentMut)> {
    containerd_import_files(args, doc, config)
        .into_iter()
        .filter_map(|import| {
            let d = toml::read(&import).ok()?;
            daemons::containerd_handler_names(&d, version)
                .contains(&args.handler)
                .then_some((import, d))
        })
        .collect()
}

/// The drop-in's path as the node sees it.
fn containerd_drop_in(config: &Path) -> PathBuf {
    config
        .parent()
        .unwrap_or(Path::new("/"))
        .join(daemons::CONTAINERD_DROP_IN)
}

/// install without `--drop-in`: an import that registers the handler
/// already would make two definitions of it, the import's winning.
fn refuse_imported_handler(
    args: &InstallArgs,
    doc: &DocumentMut,
    config: &Path,
    version: i64,
) -> Result<(), InstallError> {
    let ours = on_host(args, &containerd_drop_in(config));
    if let Some((import, _)) = imported_handlers(args, doc, config, version)
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
fn imported_handler(
    args: &InstallArgs,
    doc: &DocumentMut,
    config: &Path,
    version: i64,
    plan: &mut Plan,
) {
    let ours = on_host(args, &containerd_drop_in(config));
    for (import, _) in imported_handlers(args, doc, config, version) {
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
}

/// uninstall: the links a removed handler used stay while another file
/// (the main config, an import) still registers a handler of that name
/// running them; a note says so.
fn keep_links_still_named(
    args: &InstallArgs,
    main: &DocumentMut,
    config: &Path,
    version: i64,
    edited: &Path,
    plan: &mut Plan,
) {
    if plan.links.is_empty() {
        return;
    }
    let Some(layout) = containerd::layout(version) else {
        return;
    };
    let mut others: Vec<(PathBuf, DocumentMut)> = vec![(on_host(args, config), main.clone())];
    others.extend(
        imported_handlers(args, main, config, version)
            .into_iter()
            .filter(|(f, _)| f != edited),
    );
    for (file, doc) in others {
        let Some(h) = daemon::handler(&layout, &doc, &args.handler) else {
            continue;
        };
        let binary = daemon::binary_of(&layout, h);
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
            return;
        }
    }
}

/// install into a version 2 config: on containerd 1.x, an import that
/// holds a CRI plugin table replaces the main config's, the new handler
/// with it.
fn clobbered_handler(args: &InstallArgs, config: &Path, doc: DocumentMut, plan: &mut Plan) {
    if daemons::containerd_binary_version(&args.containerd).is_some_and(|(major, _)| major >= 2) {
        return;
    }
    let imports = containerd_import_files(args, &doc, config);
    let mut files = vec![(config.to_owned(), doc)];
    for import in imports {
        if let Ok(d) = toml::read(&import) {
            files.push((import, d));
        }
    }
    let cri = daemons::containerd_cri_plugin(2).unwrap_or_default();
    for c in daemons::containerd_1x_clobbers(&files) {
        let prefix = format!("containerd.runtimes.{}.", args.handler);
        if c.plugin == cri && c.lost.iter().any(|k| k.starts_with(&prefix)) {
            plan.notes.push(format!(
                "warning: {} replaces the whole CRI plugin table of {} on containerd 1.x, runtime handler {} among it: move that file's settings into {1} (or carry the whole table there)",
                c.import.display(),
                config.display(),
                args.handler
            ));
        }
    }
}

/// `--drop-in` on a version 2 config: only when containerd is 2.0 or later.
/// Before 2.0, containerd replaces the whole table of a plugin with an
/// imported file's (its `mergeConfig` assigns each plugin's table as a
/// whole), so a drop-in holding only the handler would drop sandbox_image,
/// the CNI settings and every other handler of the main config. A drop-in
/// carrying a copy of the whole CRI table would be safe on the day it is
/// written, but would then shadow every later edit of that table in the
/// main config: the main config is the one place that cannot go wrong.
fn refuse_1x_drop_in(args: &InstallArgs, config: &Path) -> Result<(), DaemonConfigError> {
    match daemons::containerd_binary_version(&args.containerd) {
        Some((major, _)) if major >= 2 => Ok(()),
        Some((major, minor)) => Err(DaemonConfigError::DropInOn1x {
            path: config.to_owned(),
            containerd: args.containerd.clone(),
            major,
            minor,
        }),
        None => Err(DaemonConfigError::DropInUnknownContainerd {
            path: config.to_owned(),
            containerd: args.containerd.clone(),
        }),
    }
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
    plan: &mut Plan,
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

/// `--drop-in`: the handler in `conf.d/99-userns-hostnet.toml` next to the
/// main config, and the main config's `imports` naming it, unless an
/// entry there (a glob such as `conf.d/*.toml`) already does. The imports
/// entry goes when the drop-in goes: containerd refuses to start with an
/// import of a missing file.
fn plan_containerd_drop_in(
    args: &InstallArgs,
    config: &Path,
    text: &str,
    mut doc: DocumentMut,
    layout: &Layout,
    make: Option<&MakeHandler>,
    plan: &mut Plan,
) -> Result<(), InstallError> {
    let install = make.is_some();
    let host_config = on_host(args, config);
    let drop_in = containerd_drop_in(config);
    let host_drop_in = on_host(args, &drop_in);
    let drop_in_str = drop_in.to_string_lossy().into_owned();
    let old_drop_in = toml::read_optional(&host_drop_in)?;
    let dir = config.parent().unwrap_or(Path::new("/"));
    let covered = |doc: &DocumentMut| {
        doc.get("imports")
            .and_then(Item::as_array)
            .is_some_and(|list| {
                list.iter().filter_map(|v| v.as_str()).any(|entry| {
                    let full = dir.join(entry);
                    containerd::import_covers(&full.to_string_lossy(), &drop_in_str)
                })
            })
    };
    let version = containerd::version(&doc);
    let mut fresh = DocumentMut::new();
    fresh.decor_mut().set_prefix(format!(
        "# The userns-hostnet runtime handler, written by `userns-hostnet install containerd --drop-in`\n# and removed by `userns-hostnet uninstall containerd --drop-in`.\n{}",
        made_dir_line(&host_drop_in)
    ));
    fresh.insert("version", value(version));
    // A drop-in without `version` is read as the main config's.
    let drop_in_layout = match &old_drop_in {
        Some(old) => {
            let v = toml::parse(&host_drop_in, old)?
                .get("version")
                .and_then(Item::as_integer)
                .unwrap_or(version);
            containerd::layout(v).ok_or_else(|| DaemonConfigError::DropInVersion {
                path: host_drop_in.clone(),
                version: v,
            })?
        }
        None => layout.clone(),
    };
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
        keep_links_still_named(args, &doc, config, version, &host_drop_in, plan);
    }
    let main = if install {
        if covered(&doc) {
            text.to_owned()
        } else {
            match doc.get_mut("imports").and_then(Item::as_array_mut) {
                Some(list) => list.push(drop_in_str.as_str()),
                None => {
                    let mut list = Array::new();
                    list.push(drop_in_str.as_str());
                    let mut v = Value::Array(list);
                    v.decor_mut().set_suffix(IMPORTS_MARK);
                    doc.insert("imports", Item::Value(v));
                }
            }
            doc.to_string()
        }
    } else {
        let mut removed = false;
        if new_drop_in.is_none() {
            if let Some(list) = doc.get_mut("imports").and_then(Item::as_array_mut) {
                let before = list.len();
                list.retain(|v: &Value| v.as_str() != Some(drop_in_str.as_str()));
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
        }
        if removed {
            doc.to_string()
        } else {
            text.to_owned()
        }
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

/// The version of the `crio` in PATH (`crio version 1.36.3`), which
/// decides CRI-O's default handler when no file names one; not asked
/// under `--root`, where that binary is not the node's.
fn crio_version(args: &InstallArgs) -> Option<(u64, u64)> {
    if args.more.root.is_some() {
        return None;
    }
    let deadline = std::time::Instant::now() + crate::probe::PROBE_TIMEOUT;
    let out = crate::sys::deadline::run(Path::new("crio"), "--version", deadline).ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text.lines().next()?.strip_prefix("crio version ")?;
    let mut parts = v.trim().split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// What install (or uninstall) changes for CRI-O: one drop-in file.
pub fn plan_crio(args: &InstallArgs, install: bool) -> Result<Plan, InstallError> {
    let conf = config_path(args, daemons::CRIO_CONFIG)?;
    let host_conf = on_host(args, &conf);
    let path = on_host(
        args,
        &conf
            .parent()
            .unwrap_or(Path::new("/"))
            .join(daemons::CRIO_DROP_IN),
    );
    let layout = crio::layout();
    let old = toml::read_optional(&path)?;
    let mut plan = Plan::default();
    let mut others = Vec::new();
    if install {
        for file in daemons::crio_files(&host_conf) {
            if file != path {
                let doc = toml::read(&file)?;
                others.push((file, doc));
            }
        }
        let defined_elsewhere = others
            .iter()
            .find(|(_, d)| daemon::handler(&layout, d, &args.handler).is_some());
        let ours = old
            .as_deref()
            .and_then(|t| toml::parse(&path, t).ok())
            .is_some_and(|d| daemon::handler(&layout, &d, &args.handler).is_some());
        if let Some((file, _)) = defined_elsewhere.filter(|_| !ours) {
            return Err(InTheWayError::HandlerElsewhere {
                file: file.clone(),
                name: args.handler.clone(),
                what: "a second definition in CRI-O's drop-in",
                undo: format!("remove it from {} by hand", file.display()),
            }
            .into());
        }
    }
    let make = |plan: &mut Plan| -> Result<Table, InstallError> {
        let wrapper = wrapper_str(args)?;
        let builtin = crio::builtin_default(crio_version(args), &others);
        let source = crio::source(&others, &builtin);
        let implicit = source.runtime() == source.name;
        // No file defines the default handler and it is runc: CRI-O runs
        // `runc` from PATH, the wrapper's own first choice.
        let builtin_runc = source.table.is_none() && source.name == runtime::DEFAULT_CANDIDATES[0];
        let runtime = if builtin_runc {
            String::new()
        } else {
            source.runtime()
        };
        let what = source.runtime_from();
        let real = carried_runtime(
            args,
            Some(&runtime),
            implicit,
            &wrapper,
            &what,
            &mut plan.notes,
        )?;
        let bin = handler_binary(args, &conf, &wrapper, real, &what, plan)?;
        let derived = crio::derive(&source, &bin).map_err(|source| InstallError::Crio {
            path: host_conf.clone(),
            source,
        })?;
        derived_notes(&args.handler, &source.name, &derived, plan);
        Ok(daemon::marked(derived.table))
    };
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
    let new = match new {
        Some(text) if install && args.more.set_as_default => {
            let mut doc = toml::parse(&path, &text)?;
            let changed =
                daemon::set_default(&layout, &mut doc, &args.handler).map_err(|source| {
                    InstallError::Edit {
                        path: path.clone(),
                        source,
                    }
                })?;
            Some(if changed { doc.to_string() } else { text })
        }
        other => other,
    };
    plan.files.push(FileChange {
        path,
        old,
        new,
        backup: false,
    });
    Ok(plan)
}

fn crio_fresh(path: &Path) -> DocumentMut {
    let mut d = DocumentMut::new();
    d.decor_mut().set_prefix(format!(
        "# The userns-hostnet runtime handler, written by `userns-hostnet install crio`\n# and removed by `userns-hostnet uninstall crio`.\n{}",
        made_dir_line(path)
    ));
    d
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
    plan: &mut Plan,
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
    plan: &mut Plan,
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

/// podman's containers.conf files in the order podman reads them: the
/// vendor's, `config`, then `containers.conf.d/*.conf` next to it.
fn podman_files(
    args: &InstallArgs,
    config: &Path,
) -> Result<Vec<(PathBuf, DocumentMut)>, InstallError> {
    let mut paths = vec![on_host(args, Path::new(daemons::PODMAN_VENDOR_CONFIG))];
    paths.push(on_host(args, config));
    let dir = on_host(args, &config.with_file_name("containers.conf.d"));
    let mut drop_ins: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "conf"))
                .collect()
        })
        .unwrap_or_default();
    drop_ins.sort();
    paths.extend(drop_ins);
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
pub fn plan_podman(args: &InstallArgs, install: bool) -> Result<Plan, InstallError> {
    let config = config_path(args, daemons::PODMAN_CONFIG)?;
    let host_config = on_host(args, &config);
    let old = toml::read_optional(&host_config)?;
    let mut doc = match &old {
        Some(text) => toml::parse(&host_config, text)?,
        None => DocumentMut::new(),
    };
    let name = args.handler.as_str();
    let mut plan = Plan::default();
    let owner = podman::owner(&doc, name);
    let runs_wrapper = podman::runs_wrapper(&doc, name);
    let shown = host_config.display();
    let entry_binary = |doc: &DocumentMut| -> Option<String> {
        podman::runtimes(doc)?
            .get(name)?
            .as_array()?
            .iter()
            .next()?
            .as_str()
            .map(str::to_owned)
    };
    let new = match (install, owner) {
        (true, None) => {
            let wrapper = wrapper_str(args)?;
            let files = podman_files(args, &config)?;
            let source = podman::source(&files, name);
            let found = source.runtime(&|p| is_executable(&on_host(args, Path::new(p))));
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
            let real = carried_runtime(
                args,
                Some(&runtime),
                implicit,
                &wrapper,
                &what,
                &mut plan.notes,
            )?;
            let bin = handler_binary(args, &config, &wrapper, real, &what, &mut plan)?;
            podman::add(&mut doc, name, &bin).map_err(|source| InstallError::Edit {
                path: host_config.clone(),
                source,
            })?;
            Some(doc.to_string())
        }
        (false, None) => old.clone(),
        (_, Some(Owner::Install)) if install => old.clone(),
        (_, Some(Owner::Install)) => {
            plan.links
                .extend(handler_links(args, entry_binary(&doc).as_deref()));
            podman::remove(&mut doc, name);
            let text = doc.to_string();
            if old.is_some() && text.trim().is_empty() && daemon::holds_nothing(&doc) {
                None
            } else {
                Some(text)
            }
        }
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
                    "left podman runtime {name} in {shown}: {why}{}",
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

/// The hooks directory `--hook` writes to (as the node sees it), why that
/// one, and for CRI-O reading none but the vendor's, the drop-in (on this
/// host) that adds the administrator's.
fn hooks_dir(args: &InstallArgs) -> Result<(PathBuf, String, Option<PathBuf>), InstallError> {
    if let Some(d) = &args.more.hooks_dir {
        return Ok((d.clone(), "--hooks-dir".into(), None));
    }
    let (dirs, from, defaults, drop_in) = match args.daemon {
        Engine::Crio => {
            let conf = config_path(args, daemons::CRIO_CONFIG)?;
            let drop_in = on_host(
                args,
                &conf
                    .parent()
                    .unwrap_or(Path::new("/"))
                    .join(daemons::CRIO_HOOKS_DROP_IN),
            );
            (
                daemons::crio_hooks_dirs_except(&on_host(args, &conf), Some(&drop_in))?,
                format!("hooks_dir of {} and its crio.conf.d", conf.display()),
                &daemons::CRIO_DEFAULT_HOOKS_DIRS[..],
                Some(drop_in),
            )
        }
        _ => {
            let conf = config_path(args, daemons::PODMAN_CONFIG)?;
            let host = on_host(args, &conf);
            let dirs = match toml::read_optional(&host)? {
                Some(text) => podman::hooks_dirs(&toml::parse(&host, &text)?),
                None => None,
            };
            (
                dirs,
                format!("hooks_dir of {}", conf.display()),
                &daemons::PODMAN_DEFAULT_HOOKS_DIRS[..],
                None,
            )
        }
    };
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
    let Some(dir) = daemons::hooks_dir_to_write(&dirs) else {
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
fn hook_program(args: &InstallArgs) -> Result<String, InstallError> {
    use std::os::unix::fs::MetadataExt;
    let tool = match &args.more.root {
        Some(_) => PathBuf::from("/usr/bin/userns-hostnet"),
        None => std::env::current_exe().map_err(InstallError::OwnPath)?,
    };
    let uid = std::fs::metadata(on_host(args, &tool))
        .ok()
        .map(|m| m.uid());
    if let Some(why) = hookfile::unfit_tool(&tool, uid).filter(|_| !args.more.force) {
        return Err(UsageError::UnfitHookProgram { tool, why }.into());
    }
    tool.to_str()
        .map(str::to_owned)
        .ok_or_else(|| InstallError::NotUtf8(tool.clone()))
}

/// `--hook`: the hook definition file in the daemon's hooks directory.
fn plan_hook(args: &InstallArgs, install: bool) -> Result<Plan, InstallError> {
    let (dir, from, drop_in) = hooks_dir(args)?;
    let path = on_host(args, &dir.join(hookfile::FILE));
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(InstallError::io("cannot read", &path)(e)),
    };
    let mut plan = Plan::default();
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
                hookfile::definition(&tool, daemon_name(args.daemon))
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
fn plan_hooks_drop_in(install: bool, path: &Path, plan: &mut Plan) -> Result<(), InstallError> {
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
        };
        uninstall_as_install(&u)
    }

    #[test]
    fn root_maps_node_paths() {
        let a = args(Some(Path::new("/stage")));
        assert_eq!(
            on_host(&a, Path::new("/etc/crio/crio.conf")),
            PathBuf::from("/stage/etc/crio/crio.conf")
        );
        let a = args(None);
        assert_eq!(
            on_host(&a, Path::new("/etc/crio/crio.conf")),
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
