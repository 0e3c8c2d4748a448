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

use super::daemons::{self, dig};
use super::files;
use crate::cli::{Engine, InstallArgs};
use crate::runtime::{self, HANDLER_RUNTIME_LINK};
use crate::sys::toml::{self, TomlError};
use std::path::{Path, PathBuf};
use toml_edit::{value, Array, DocumentMut, Item, Table, Value};

/// Where CRI-O keeps the wrapper's runtime state (`--root`).
pub const CRIO_RUNTIME_ROOT: &str = "/run/userns-hostnet-runtime";

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
    #[error("{}: config version {version} (no `version` line is version 1, the format containerd 2.0 removed) is not supported: add `version = 2` and rename [plugins.cri] to [plugins.\"io.containerd.grpc.v1.cri\"] (containerd 1.x), or start from `containerd config default`; then install again", path.display())]
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
    #[error("{key} is not a table")]
    NotATable { key: String },
    #[error("{}: {key} is not a value", path.display())]
    NotAValue { path: PathBuf, key: String },
    #[error("{}: {key}: cannot read what install replaced ({was}): {source}", path.display())]
    Replaced {
        path: PathBuf,
        key: String,
        was: String,
        #[source]
        source: Box<toml_edit::TomlError>,
    },
    #[error("{}: {key}: cannot read what install replaced", path.display())]
    ReplacedNotAValue { path: PathBuf, key: String },
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
    if !is_executable(&args.wrapper) {
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
pub fn run_uninstall(args: &InstallArgs) -> Result<i32, InstallError> {
    reported(
        args,
        plan(args, false).and_then(|plan| apply(args, &plan, false)),
    )
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

/// The start of the comment line above a handler table install wrote.
const HANDLER_MARK: &str = "# Added by `userns-hostnet install` (fingerprint ";

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
    let restart = if !changed.is_empty() && !args.more.hook && args.daemon != Engine::Podman {
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
        if args.more.hook {
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

/// The table at `path` below `root`, created (implicit, so that it prints
/// no header of its own and vanishes again when emptied) where missing.
fn table_at<'a>(root: &'a mut Table, path: &[&str]) -> Result<&'a mut Table, DaemonConfigError> {
    let mut t = root;
    for key in path {
        if !t.contains_key(key) {
            let mut new = Table::new();
            new.set_implicit(true);
            t.insert(key, Item::Table(new));
        }
        t = t.get_mut(key).and_then(Item::as_table_mut).ok_or_else(|| {
            DaemonConfigError::NotATable {
                key: (*key).to_owned(),
            }
        })?;
    }
    Ok(t)
}

/// FNV-1a, 64 bits: a fingerprint, not a defence (the operator can edit
/// the marker as easily as the table).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The fingerprint of a handler's keys and values, whatever their layout,
/// order or comments.
fn fingerprint(handler: &Item) -> u64 {
    let mut d = DocumentMut::new();
    d.insert("h", handler.clone());
    let canonical = ::toml::from_str::<::toml::Value>(&d.to_string())
        .ok()
        .and_then(|v| serde_json::to_string(&v).ok())
        .unwrap_or_default();
    fnv1a(canonical.as_bytes())
}

/// `handler` with the install marker above its header.
fn marked(mut handler: Table) -> Table {
    let fp = fingerprint(&Item::Table(handler.clone()));
    handler.decor_mut().set_prefix(format!(
        "\n{HANDLER_MARK}{fp:016x}): `userns-hostnet uninstall` removes it while unchanged\n"
    ));
    handler
}

/// Who a handler table belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// Marked by install and unchanged since.
    Install,
    /// Marked by install, changed since.
    Changed,
    /// No marker: the operator's.
    Operator,
}

fn owner(handler: &Item) -> Owner {
    let prefix = handler
        .as_table()
        .and_then(|t| t.decor().prefix())
        .and_then(|p| p.as_str());
    owner_by_marker(prefix.and_then(handler_marker), || fingerprint(handler))
}

/// The fingerprint in the install marker somewhere in `comment`.
fn handler_marker(comment: &str) -> Option<u64> {
    comment
        .find(HANDLER_MARK)
        .and_then(|at| marker_hex(&comment[at + HANDLER_MARK.len()..]))
}

/// The 16 hex digits of a fingerprint at the start of `rest`.
fn marker_hex(rest: &str) -> Option<u64> {
    rest.get(..16)
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
}

/// Who wrote a thing marked with fingerprint `marked` (`None`: no marker)
/// whose fingerprint is now `now`.
fn owner_by_marker(marked: Option<u64>, now: impl FnOnce() -> u64) -> Owner {
    match marked {
        None => Owner::Operator,
        Some(fp) if fp == now() => Owner::Install,
        Some(_) => Owner::Changed,
    }
}

/// Does this handler run the wrapper (its binary at `binary_key`)?
fn runs_wrapper(handler: &Item, binary_key: &[&str]) -> bool {
    dig(handler, binary_key)
        .and_then(Item::as_str)
        .is_some_and(daemons::is_wrapper)
}

/// The daemon's config file: `--config`, else `default`.
fn config_path(args: &InstallArgs, default: &str) -> PathBuf {
    args.config
        .clone()
        .unwrap_or_else(|| PathBuf::from(default))
}

fn wrapper_str(args: &InstallArgs) -> Result<String, UsageError> {
    args.wrapper
        .to_str()
        .map(str::to_owned)
        .ok_or(UsageError::WrapperNotUtf8)
}

/// The handler install copies its settings from: the default runtime
/// handler when it is a runc shim handler, else the one named `runc`.
fn containerd_source<'a>(doc: &'a DocumentMut, runtimes: &[&str]) -> Option<(String, &'a Item)> {
    let all = dig(doc.as_item(), runtimes)?;
    let cri = &runtimes[..runtimes.len() - 1];
    let default = dig(doc.as_item(), cri)
        .and_then(|c| dig(c, &["default_runtime_name"]))
        .and_then(Item::as_str);
    let is_shim =
        |h: &Item| dig(h, &["runtime_type"]).and_then(Item::as_str) == Some(daemons::RUNC_SHIM);
    default.into_iter().chain(["runc"]).find_map(|name| {
        let h = dig(all, &[name])?;
        is_shim(h).then(|| (name.to_owned(), h))
    })
}

/// The real runtime a new handler keeps: the binary its source handler
/// names (`what` says where it was read), unless the wrapper's own name
/// already names one or that binary is the wrapper. A bare name is looked
/// up in PATH now: a link needs a path.
fn carried_runtime(
    binary: Option<&str>,
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
    if own || daemons::is_wrapper(binary) {
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
        let path_var = std::env::var_os("PATH")
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| runtime::FALLBACK_PATH.into());
        std::env::split_paths(&path_var)
            .map(|d| d.join(binary))
            .find(|p| is_executable(p))
            .ok_or_else(|| InTheWayError::RuntimeNotInPath {
                what: what.to_owned(),
                binary: binary.to_owned(),
            })?
    };
    if !is_executable(&path) {
        notes.push(format!(
            "warning: {} ({what}) is not an executable file: containers of this handler will not start until it is",
            path.display()
        ));
    }
    Ok(Some(path))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The binary a new handler names, and the links it needs: the wrapper
/// itself, or with a runtime carried from `source` (the binary of the
/// handler it copies, read where `what` says) the handler's own link to it.
fn handler_binary(
    args: &InstallArgs,
    wrapper: &str,
    source: Option<&str>,
    what: &str,
    plan: &mut Plan,
) -> Result<String, InstallError> {
    let name = args.handler.as_str();
    let carried = carried_runtime(source, wrapper, what, &mut plan.notes)?;
    let Some(real) = carried.as_deref() else {
        plan.notes.push(format!(
            "real runtime of handler {name}: as the wrapper chooses ({}, else `runtime` in /etc/userns-hostnet/config.toml, else runc or crun in PATH)",
            runtime::RUNTIME_ENV
        ));
        return Ok(wrapper.to_owned());
    };
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(UsageError::HandlerNotDirName(name.to_owned()).into());
    }
    let dir = args
        .handlers_dir
        .clone()
        .unwrap_or_else(runtime::handlers_dir)
        .join(name);
    let link = dir.join(crate::WRAPPER_NAME);
    for (path, target) in [
        (link.clone(), PathBuf::from(wrapper)),
        (dir.join(HANDLER_RUNTIME_LINK), real.to_owned()),
    ] {
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

/// The handler's own directory of links, when `binary` is a handler's
/// link to the wrapper.
fn handler_dir(args: &InstallArgs, binary: Option<&str>) -> Option<PathBuf> {
    let handlers = args
        .handlers_dir
        .clone()
        .unwrap_or_else(runtime::handlers_dir);
    let link = Path::new(binary?);
    link.parent()
        .filter(|d| d.parent() == Some(handlers.as_path()))
        .filter(|_| link.file_name() == Some(crate::WRAPPER_NAME.as_ref()))
        .map(Path::to_owned)
}

fn is_handler_link(args: &InstallArgs, binary: Option<&str>) -> bool {
    handler_dir(args, binary).is_some()
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
            let path = dir.join(n);
            let target = std::fs::read_link(&path).ok()?;
            Some(LinkChange::Remove { path, target })
        })
        .collect()
}

/// The handler table: the runc shim with `binary` and the other options of
/// the source handler (SystemdCgroup...), so that cgroups are managed the
/// same way.
fn containerd_handler(source: Option<&Item>, binary: &str) -> Table {
    let mut options = Table::new();
    if let Some(opts) = source
        .and_then(|s| dig(s, &["options"]))
        .and_then(Item::as_table_like)
    {
        for (k, v) in opts.iter() {
            if let Some(v) = v.as_value() {
                let mut v = v.clone();
                v.decor_mut().clear();
                options.insert(k, Item::Value(v));
            }
        }
    }
    options.insert("BinaryName", value(binary));
    let mut h = Table::new();
    h.insert("runtime_type", value(daemons::RUNC_SHIM));
    h.insert("options", Item::Table(options));
    h
}

/// Whether install adds the handler (`Ok(true)`: none of that name in
/// `file`) or uninstall removes it (`Ok(true)`: install's and unchanged,
/// its links with it), given the one already there (`existing`); when it
/// stays, a note says why.
fn changes_handler(
    args: &InstallArgs,
    install: bool,
    existing: Option<&Item>,
    binary_key: &[&str],
    file: &Path,
    plan: &mut Plan,
) -> Result<bool, InTheWayError> {
    let name = args.handler.as_str();
    let shown = file.display();
    let Some(e) = existing else {
        return Ok(install);
    };
    let binary = dig(e, binary_key).and_then(Item::as_str);
    let why_left = match (owner(e), install) {
        (Owner::Install, true) => {
            if is_handler_link(args, binary) && handler_links(args, binary).len() < 2 {
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
        (Owner::Operator, true) if runs_wrapper(e, binary_key) => format!(
            "runtime handler {name} in {shown} runs the wrapper but was not added by install (no install marker): left as it is, and uninstall will leave it too"
        ),
        (Owner::Operator, false) if runs_wrapper(e, binary_key) => format!(
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

/// The handler `name` in `doc`'s table at `runtimes`.
fn handler_in<'a>(doc: &'a DocumentMut, runtimes: &[&str], name: &str) -> Option<&'a Item> {
    dig(doc.as_item(), runtimes).and_then(|all| dig(all, &[name]))
}

/// The handler in `doc`'s table at `runtimes`: install adds the one `make`
/// makes, uninstall (`make` is `None`) removes it, when
/// [`changes_handler`] says so; `Ok(true)` when `doc` changed.
fn edit_handler(
    args: &InstallArgs,
    doc: &mut DocumentMut,
    runtimes: &[&str],
    binary_key: &[&str],
    file: &Path,
    make: Option<&MakeHandler>,
    plan: &mut Plan,
) -> Result<bool, InstallError> {
    let name = args.handler.as_str();
    let existing = handler_in(doc, runtimes, name);
    if !changes_handler(args, make.is_some(), existing, binary_key, file, plan)? {
        return Ok(false);
    }
    match make {
        Some(make) => {
            let h = make(plan)?;
            table_at(doc.as_table_mut(), runtimes)?.insert(name, Item::Table(h));
        }
        None => {
            table_at(doc.as_table_mut(), runtimes)?.remove(name);
        }
    }
    Ok(true)
}

/// Makes the handler table install adds, noting the links it needs.
type MakeHandler<'a> = dyn Fn(&mut Plan) -> Result<Table, InstallError> + 'a;

const CONTAINERD_BINARY: &[&str] = &["options", "BinaryName"];
const CRIO_BINARY: &[&str] = &["runtime_path"];
const CRIO_RUNTIMES: &[&str] = &["crio", "runtime", "runtimes"];

/// What install (or uninstall) changes for containerd.
pub fn plan_containerd(args: &InstallArgs, install: bool) -> Result<Plan, InstallError> {
    let config = config_path(args, daemons::CONTAINERD_CONFIG);
    let Some(text) = toml::read_optional(&config)? else {
        return Err(DaemonConfigError::NoContainerdConfig(config).into());
    };
    let mut doc = match toml::parse(&config, &text) {
        Ok(d) => d,
        Err(parse) if text.contains("{{") && daemons::rancher_distro(&config).is_some() => {
            return Err(DaemonConfigError::GoTemplate {
                path: config,
                parse,
            }
            .into())
        }
        Err(e) => return Err(e.into()),
    };
    let version = daemons::containerd_version(&doc);
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
    let cri_off = daemons::containerd_cri_disabled(&doc);
    if version < 2 && cri_off.is_some() {
        return Err(DaemonConfigError::Docker(config).into());
    }
    let Some(runtimes) = daemons::containerd_runtimes_path(version).filter(|_| version >= 2) else {
        return Err(DaemonConfigError::Version {
            path: config,
            version,
        }
        .into());
    };
    let mut plan = Plan::default();
    if install {
        if let Some(plugin) = cri_off {
            plan.notes.push(format!(
                "warning: {} lists {plugin:?} in disabled_plugins: containerd serves no CRI, so the kubelet cannot use any handler; remove it from disabled_plugins and restart containerd",
                config.display()
            ));
        }
    }
    let wrapper = wrapper_str(args)?;
    // The handler install adds copies its settings from the main config's.
    let main = doc.clone();
    let make = |plan: &mut Plan| -> Result<Table, InstallError> {
        let source = containerd_source(&main, &runtimes);
        let what = match &source {
            Some((s, _)) => format!("BinaryName of handler {s} in {}", config.display()),
            None => String::new(),
        };
        let binary = source
            .as_ref()
            .and_then(|(_, h)| dig(h, CONTAINERD_BINARY))
            .and_then(Item::as_str);
        let bin = handler_binary(args, &wrapper, binary, &what, plan)?;
        Ok(marked(containerd_handler(source.map(|(_, h)| h), &bin)))
    };
    let make: Option<&MakeHandler> = if install { Some(&make) } else { None };
    if args.drop_in && install && version == 2 {
        refuse_1x_drop_in(args, &config)?;
    }
    if args.drop_in {
        plan_containerd_drop_in(args, &config, &text, doc, &runtimes, make, &mut plan)?;
    } else {
        let absent = handler_in(&doc, &runtimes, &args.handler).is_none();
        let edited = edit_handler(
            args,
            &mut doc,
            &runtimes,
            CONTAINERD_BINARY,
            &config,
            make,
            &mut plan,
        )?;
        let new = if edited {
            doc.to_string()
        } else {
            if !install && absent {
                imported_handler(args, &doc, &config, version, &mut plan);
            }
            text.clone()
        };
        if install && version == 2 {
            let new_doc = toml::parse(&config, &new)?;
            clobbered_handler(args, &config, new_doc, &mut plan);
        }
        plan.files.push(FileChange {
            path: config.clone(),
            old: Some(text),
            new: Some(new),
            backup: true,
        });
    }
    let cri = &runtimes[..runtimes.len() - 1];
    plan_default(
        args,
        install,
        &config,
        cri,
        "default_runtime_name",
        &mut plan,
    )?;
    Ok(plan)
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
    let ours = config
        .parent()
        .map(|d| d.join(daemons::CONTAINERD_DROP_IN))
        .and_then(|p| std::path::absolute(p).ok());
    for import in daemons::containerd_imports(doc, config, &|p| p.to_owned()) {
        let Ok(d) = toml::read(&import) else {
            continue;
        };
        if !daemons::containerd_handler_names(&d, version).contains(&args.handler) {
            continue;
        }
        let how = if std::path::absolute(&import).ok() == ours {
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

/// install into a version 2 config: on containerd 1.x, an import that
/// holds a CRI plugin table replaces the main config's, the new handler
/// with it.
fn clobbered_handler(args: &InstallArgs, config: &Path, doc: DocumentMut, plan: &mut Plan) {
    if daemons::containerd_binary_version(&args.containerd).is_some_and(|(major, _)| major >= 2) {
        return;
    }
    let mut files = vec![(config.to_owned(), doc)];
    for import in daemons::containerd_imports(&files[0].1, config, &|p| p.to_owned()) {
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

/// Is this drop-in, once the handler is gone, empty of settings (its
/// `version` aside)?
fn holds_nothing(doc: &DocumentMut) -> bool {
    fn empty(t: &dyn toml_edit::TableLike) -> bool {
        t.iter().all(|(_, v)| v.as_table_like().is_some_and(empty))
    }
    doc.iter()
        .all(|(k, v)| k == "version" || v.as_table_like().is_some_and(empty))
}

/// A drop-in file that holds handlers: install adds the handler `make`
/// makes (to a new file `fresh`, or to an existing one that already
/// registers the wrapper); uninstall (`make` is `None`) removes it, and the file when nothing
/// else is left in it. The new text, `None` for no file.
#[allow(clippy::too_many_arguments)]
fn plan_drop_in(
    args: &InstallArgs,
    path: &Path,
    old: Option<&str>,
    fresh: DocumentMut,
    runtimes: &[&str],
    binary_key: &[&str],
    make: Option<&MakeHandler>,
    plan: &mut Plan,
) -> Result<Option<String>, InstallError> {
    let install = make.is_some();
    let Some(old) = old else {
        if !install {
            return Ok(None);
        }
        let mut d = fresh;
        edit_handler(args, &mut d, runtimes, binary_key, path, make, plan)?;
        return Ok(Some(d.to_string()));
    };
    let mut doc = toml::parse(path, old)?;
    if install && handler_in(&doc, runtimes, &args.handler).is_none() {
        let wrapper_handlers = dig(doc.as_item(), runtimes)
            .and_then(Item::as_table_like)
            .is_some_and(|t| t.iter().any(|(_, h)| runs_wrapper(h, binary_key)));
        if !wrapper_handlers {
            return Err(InTheWayError::ForeignDropIn(path.to_owned()).into());
        }
    }
    if !edit_handler(args, &mut doc, runtimes, binary_key, path, make, plan)? {
        return Ok(Some(old.to_owned()));
    }
    if !install {
        if holds_nothing(&doc) {
            return Ok(None);
        }
        plan.notes
            .push(format!("kept {}: it holds other settings", path.display()));
    }
    Ok(Some(doc.to_string()))
}

/// `--drop-in`: the handler in `conf.d/99-userns-hostnet.toml` next to the
/// main config, and the main config's `imports` naming it. The imports
/// entry goes when the drop-in goes: containerd refuses to start with an
/// import of a missing file.
fn plan_containerd_drop_in(
    args: &InstallArgs,
    config: &Path,
    text: &str,
    mut doc: DocumentMut,
    runtimes: &[&str],
    make: Option<&MakeHandler>,
    plan: &mut Plan,
) -> Result<(), InstallError> {
    let install = make.is_some();
    let dir = config.parent().unwrap_or(Path::new("/"));
    let drop_in = std::path::absolute(dir.join(daemons::CONTAINERD_DROP_IN))
        .map_err(InstallError::DropInPath)?;
    let drop_in_str = drop_in.to_string_lossy().into_owned();
    let old_drop_in = toml::read_optional(&drop_in)?;
    let covered = |doc: &DocumentMut| {
        daemons::containerd_imports(doc, config, &|p| p.to_owned())
            .iter()
            .any(|p| std::path::absolute(p).is_ok_and(|p| p == drop_in))
    };
    let version = daemons::containerd_version(&doc);
    let mut fresh = DocumentMut::new();
    fresh.decor_mut().set_prefix(format!(
        "# The userns-hostnet runtime handler, written by `userns-hostnet install containerd --drop-in`\n# and removed by `userns-hostnet uninstall containerd --drop-in`.\n{}",
        made_dir_line(&drop_in)
    ));
    fresh.insert("version", value(version));
    // A drop-in without `version` is read as the main config's.
    let drop_in_runtimes: Vec<&str> = match &old_drop_in {
        Some(old) => {
            let v = toml::parse(&drop_in, old)?
                .get("version")
                .and_then(Item::as_integer)
                .unwrap_or(version);
            daemons::containerd_runtimes_path(v)
                .filter(|_| v >= 2)
                .map(|p| p.to_vec())
                .ok_or_else(|| DaemonConfigError::DropInVersion {
                    path: drop_in.clone(),
                    version: v,
                })?
        }
        None => runtimes.to_vec(),
    };
    let new_drop_in = plan_drop_in(
        args,
        &drop_in,
        old_drop_in.as_deref(),
        fresh,
        &drop_in_runtimes,
        CONTAINERD_BINARY,
        make,
        plan,
    )?;
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
        path: config.to_owned(),
        old: Some(text.to_owned()),
        new: Some(main),
        backup: true,
    });
    plan.files.push(FileChange {
        path: drop_in,
        old: old_drop_in,
        new: new_drop_in,
        backup: false,
    });
    Ok(())
}

/// The real runtime of CRI-O's default handler, as CRI-O reads its files
/// (crio.conf, then the drop-ins in name order, the last setting winning;
/// the wrapper's own drop-in aside): `default_runtime` (else `runc`) and
/// that handler's `runtime_path`, with where it was read.
fn crio_source(conf: &Path, own: &Path) -> Result<Option<(String, String)>, TomlError> {
    let mut default = None;
    let mut paths: Vec<(String, String, PathBuf)> = Vec::new();
    for file in daemons::crio_files(conf) {
        if file == own {
            continue;
        }
        let doc = toml::read(&file)?;
        if let Some(d) =
            dig(doc.as_item(), &["crio", "runtime", "default_runtime"]).and_then(Item::as_str)
        {
            default = Some(d.to_owned());
        }
        if let Some(all) = dig(doc.as_item(), CRIO_RUNTIMES).and_then(Item::as_table_like) {
            for (name, h) in all.iter() {
                if let Some(p) = dig(h, CRIO_BINARY).and_then(Item::as_str) {
                    paths.retain(|(n, ..)| n != name);
                    paths.push((name.to_owned(), p.to_owned(), file.clone()));
                }
            }
        }
    }
    let default = default.unwrap_or_else(|| "runc".to_owned());
    Ok(paths
        .into_iter()
        .find(|(n, ..)| *n == default)
        .map(|(n, p, f)| (p, format!("runtime_path of handler {n} in {}", f.display()))))
}

/// What install (or uninstall) changes for CRI-O: one drop-in file.
pub fn plan_crio(args: &InstallArgs, install: bool) -> Result<Plan, InstallError> {
    let conf = config_path(args, daemons::CRIO_CONFIG);
    let path = conf
        .parent()
        .unwrap_or(Path::new("/"))
        .join(daemons::CRIO_DROP_IN);
    let old = toml::read_optional(&path)?;
    let mut plan = Plan::default();
    let make = |plan: &mut Plan| -> Result<Table, InstallError> {
        let wrapper = wrapper_str(args)?;
        let source = crio_source(&conf, &path)?;
        let (binary, what) = match &source {
            Some((b, w)) => (Some(b.as_str()), w.as_str()),
            None => (None, ""),
        };
        let bin = handler_binary(args, &wrapper, binary, what, plan)?;
        Ok(marked(crio_handler(&bin)))
    };
    let make: Option<&MakeHandler> = if install { Some(&make) } else { None };
    // The default runtime install set goes before the handler, so that a
    // drop-in left with nothing else in it is removed.
    let before = match &old {
        Some(text) if !install => Some(restore_default(
            &path,
            text,
            CRIO_RUNTIME,
            "default_runtime",
            &args.handler,
            &mut plan,
        )?),
        other => other.clone(),
    };
    let new = plan_drop_in(
        args,
        &path,
        before.as_deref(),
        crio_fresh(&path),
        CRIO_RUNTIMES,
        CRIO_BINARY,
        make,
        &mut plan,
    )?;
    let new = match new {
        Some(text) if install && args.more.set_as_default => Some(set_default(
            &path,
            &text,
            CRIO_RUNTIME,
            "default_runtime",
            &args.handler,
        )?),
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

const CRIO_RUNTIME: &[&str] = &["crio", "runtime"];

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

fn crio_handler(binary: &str) -> Table {
    let mut h = Table::new();
    h.insert("runtime_path", value(binary));
    h.insert("runtime_type", value("oci"));
    h.insert("runtime_root", value(CRIO_RUNTIME_ROOT));
    h
}

/// The comment after a default runtime install set: what was there, to
/// put back on uninstall (the value's own text and comment, or UNSET).
const DEFAULT_MARK: &str =
    " # set by `userns-hostnet install --set-as-default`; uninstall puts back: ";
const UNSET: &str = "(unset)";

/// The text between a value's `=` and the value itself.
fn value_prefix(v: &Value) -> &str {
    v.decor().prefix().and_then(|s| s.as_str()).unwrap_or(" ")
}

/// The text after a value on its line: spaces and a comment.
fn value_suffix(v: &Value) -> &str {
    v.decor().suffix().and_then(|s| s.as_str()).unwrap_or("")
}

/// `--set-as-default`: `key` in `table` names handler `name`, with what it
/// was kept in the marker comment.
fn set_default(
    path: &Path,
    text: &str,
    table: &[&str],
    key: &str,
    name: &str,
) -> Result<String, InstallError> {
    let mut doc = toml::parse(path, text)?;
    let t = table_at(doc.as_table_mut(), table)?;
    let (was, prefix) = match t.get(key) {
        Some(Item::Value(v)) if v.as_str() == Some(name) => return Ok(text.to_owned()),
        Some(Item::Value(v)) => {
            let mut bare = v.clone();
            bare.decor_mut().set_prefix("");
            bare.decor_mut().set_suffix("");
            (
                format!("{bare}{}", value_suffix(v)),
                value_prefix(v).to_owned(),
            )
        }
        Some(_) => {
            return Err(DaemonConfigError::NotAValue {
                path: path.to_owned(),
                key: key.to_owned(),
            }
            .into())
        }
        None => (UNSET.to_owned(), " ".to_owned()),
    };
    let mut v = Value::from(name);
    v.decor_mut().set_prefix(prefix);
    v.decor_mut().set_suffix(format!("{DEFAULT_MARK}{was}"));
    match t.get_mut(key) {
        Some(item) => *item = Item::Value(v),
        None => {
            t.insert(key, Item::Value(v));
        }
    }
    Ok(doc.to_string())
}

/// uninstall: put back the default runtime install set, when `key` still
/// names handler `name` with install's marker; a note when it names it
/// without one.
fn restore_default(
    path: &Path,
    text: &str,
    table: &[&str],
    key: &str,
    name: &str,
    plan: &mut Plan,
) -> Result<String, InstallError> {
    let mut doc = toml::parse(path, text)?;
    let Some(t) = dig_table_mut(&mut doc, table) else {
        return Ok(text.to_owned());
    };
    let Some(v) = t.get(key).and_then(Item::as_value) else {
        return Ok(text.to_owned());
    };
    if v.as_str() != Some(name) {
        return Ok(text.to_owned());
    }
    let Some(was) = value_suffix(v)
        .strip_prefix(DEFAULT_MARK)
        .map(str::to_owned)
    else {
        plan.notes.push(format!(
            "warning: {key} in {} still names {name}, set by hand: containers asking for no handler will fail once it is gone; set it to another handler",
            path.display()
        ));
        return Ok(text.to_owned());
    };
    let prefix = value_prefix(v).to_owned();
    if was == UNSET {
        t.remove(key);
    } else {
        let parsed: DocumentMut = format!("x ={prefix}{was}\n").parse().map_err(|source| {
            DaemonConfigError::Replaced {
                path: path.to_owned(),
                key: key.to_owned(),
                was: was.clone(),
                source: Box::new(source),
            }
        })?;
        let old = parsed
            .get("x")
            .and_then(Item::as_value)
            .cloned()
            .ok_or_else(|| DaemonConfigError::ReplacedNotAValue {
                path: path.to_owned(),
                key: key.to_owned(),
            })?;
        if let Some(item) = t.get_mut(key) {
            *item = Item::Value(old);
        }
    }
    Ok(doc.to_string())
}

/// Apply `--set-as-default` (install) or put the old default back
/// (uninstall) in the new text of `file` in the plan.
fn plan_default(
    args: &InstallArgs,
    install: bool,
    file: &Path,
    table: &[&str],
    key: &str,
    plan: &mut Plan,
) -> Result<(), InstallError> {
    let Some(i) = plan.files.iter().position(|c| c.path == file) else {
        return Ok(());
    };
    let Some(text) = plan.files[i].new.clone() else {
        return Ok(());
    };
    let new = if install && args.more.set_as_default {
        set_default(file, &text, table, key, &args.handler)?
    } else if install {
        text
    } else {
        restore_default(file, &text, table, key, &args.handler, plan)?
    };
    plan.files[i].new = Some(new);
    Ok(())
}

const PODMAN_RUNTIMES: &[&str] = &["engine", "runtimes"];

/// Who the `runtimes` entry `name` of a containers.conf table belongs to:
/// install's marker is the comment line above its key.
fn podman_owner(runtimes: &Table, name: &str) -> Option<Owner> {
    let (key, item) = runtimes.get_key_value(name)?;
    let prefix = key.leaf_decor().prefix().and_then(|p| p.as_str());
    Some(owner_by_marker(prefix.and_then(handler_marker), || {
        fingerprint(item)
    }))
}

/// Does this `runtimes` entry (a list of paths podman tries in order) run
/// the wrapper?
fn podman_runs_wrapper(item: &Item) -> bool {
    item.as_array()
        .and_then(|a| a.iter().next())
        .and_then(|v| v.as_str())
        .is_some_and(daemons::is_wrapper)
}

/// `install podman`: an `[engine.runtimes]` entry in containers.conf, so
/// that `podman --runtime NAME` runs the wrapper. uninstall removes the
/// entry with its marker line, leaving the file byte for byte as it was
/// (and no file where there was none).
pub fn plan_podman(args: &InstallArgs, install: bool) -> Result<Plan, InstallError> {
    let config = config_path(args, daemons::PODMAN_CONFIG);
    let old = toml::read_optional(&config)?;
    let mut doc = match &old {
        Some(text) => toml::parse(&config, text)?,
        None => DocumentMut::new(),
    };
    let name = args.handler.as_str();
    let mut plan = Plan::default();
    let owner = dig(doc.as_item(), PODMAN_RUNTIMES)
        .and_then(Item::as_table)
        .and_then(|t| podman_owner(t, name));
    let runs_wrapper =
        dig(doc.as_item(), &["engine", "runtimes", name]).is_some_and(podman_runs_wrapper);
    let shown = config.display();
    let new = match (install, owner) {
        (true, None) => {
            let mut list = Array::new();
            list.push(wrapper_str(args)?);
            let item = Item::Value(Value::Array(list));
            let fp = fingerprint(&item);
            let runtimes = table_at(doc.as_table_mut(), PODMAN_RUNTIMES)?;
            runtimes.insert(name, item);
            if let Some(mut key) = runtimes.key_mut(name) {
                key.leaf_decor_mut().set_prefix(format!(
                    "{HANDLER_MARK}{fp:016x}): `userns-hostnet uninstall podman` removes it while unchanged\n"
                ));
            }
            plan.notes.push(format!(
                "real runtime of podman runtime {name}: as the wrapper chooses ({}, else `runtime` in /etc/userns-hostnet/config.toml, else runc or crun in PATH)",
                runtime::RUNTIME_ENV
            ));
            Some(doc.to_string())
        }
        (false, None) => old.clone(),
        (_, Some(Owner::Install)) if install => old.clone(),
        (_, Some(Owner::Install)) => {
            // Tables left empty print no header, as before install made
            // them (an empty `[engine.runtimes]` written by hand goes too).
            for depth in (1..=PODMAN_RUNTIMES.len()).rev() {
                if let Some(t) = dig_table_mut(&mut doc, &PODMAN_RUNTIMES[..depth]) {
                    if depth == PODMAN_RUNTIMES.len() {
                        t.remove(name);
                    }
                    if t.is_empty() {
                        t.set_implicit(true);
                    }
                }
            }
            let text = doc.to_string();
            if old.is_some() && text.trim().is_empty() && holds_nothing(&doc) {
                None
            } else {
                Some(text)
            }
        }
        (_, Some(Owner::Operator)) if !runs_wrapper => {
            return Err(InTheWayError::PodmanRuntime {
                file: config,
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
        path: config,
        old,
        new,
        backup: true,
    });
    Ok(plan)
}

fn dig_table_mut<'a>(doc: &'a mut DocumentMut, path: &[&str]) -> Option<&'a mut Table> {
    path.iter()
        .try_fold(doc.as_table_mut(), |t, key| t.get_mut(key)?.as_table_mut())
}

/// The createRuntime hook definition the package ships inert.
const SHIPPED_HOOK: &str = include_str!("../../hooks.d/userns-hostnet.json");
/// The name install gives it in a hooks directory: the name the package
/// ships, so that a definition under /etc masks one under /usr/share
/// instead of running the hook twice.
pub const HOOK_FILE: &str = "userns-hostnet.json";
/// The start of the `comment` member of a hook definition install wrote
/// (JSON has no comments; CRI-O and podman ignore unknown members).
const HOOK_MARK: &str = "Added by `userns-hostnet install` (fingerprint ";

/// A JSON value with every object's members in name order, so that a
/// fingerprint does not depend on their layout.
fn sorted_json(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            serde_json::Value::Object(
                keys.into_iter()
                    .filter_map(|k| Some((k.clone(), sorted_json(m.get(k)?))))
                    .collect(),
            )
        }
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.iter().map(sorted_json).collect())
        }
        other => other.clone(),
    }
}

/// The fingerprint of a hook definition, its `comment` aside.
fn hook_fingerprint(def: &serde_json::Value) -> u64 {
    let mut def = def.clone();
    if let Some(m) = def.as_object_mut() {
        m.remove("comment");
    }
    fnv1a(sorted_json(&def).to_string().as_bytes())
}

/// The shipped definition, run by `tool`, with the install marker.
fn hook_definition(tool: &str, daemon: &str) -> Result<String, InstallError> {
    let mut def: serde_json::Value =
        serde_json::from_str(SHIPPED_HOOK).map_err(InstallError::ShippedHook)?;
    if let Some(hook) = def.get_mut("hook").and_then(|h| h.as_object_mut()) {
        hook.insert("path".into(), serde_json::Value::from(tool));
    }
    let fp = hook_fingerprint(&def);
    let mut out = serde_json::Map::new();
    out.insert(
        "comment".into(),
        serde_json::Value::from(format!(
            "{HOOK_MARK}{fp:016x}): `userns-hostnet uninstall {daemon} --hook` removes this file while unchanged"
        )),
    );
    if let Some(m) = def.as_object() {
        out.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    // A JSON value always serializes.
    Ok(serde_json::to_string_pretty(&serde_json::Value::Object(out)).unwrap_or_default() + "\n")
}

/// Who a hook definition file belongs to.
fn hook_owner(text: &str) -> Owner {
    let Ok(def) = serde_json::from_str::<serde_json::Value>(text) else {
        return Owner::Operator;
    };
    let marked = def
        .get("comment")
        .and_then(|c| c.as_str())
        .and_then(|c| c.strip_prefix(HOOK_MARK))
        .and_then(marker_hex);
    owner_by_marker(marked, || hook_fingerprint(&def))
}

/// The hooks directory `--hook` writes to, and why that one.
fn hooks_dir(args: &InstallArgs) -> Result<(PathBuf, String), InstallError> {
    if let Some(d) = &args.more.hooks_dir {
        return Ok((d.clone(), "--hooks-dir".into()));
    }
    let (dirs, from, defaults) = match args.daemon {
        Engine::Crio => {
            let conf = config_path(args, daemons::CRIO_CONFIG);
            (
                daemons::crio_hooks_dirs(&conf)?,
                format!("hooks_dir of {} and its crio.conf.d", conf.display()),
                &daemons::CRIO_DEFAULT_HOOKS_DIRS[..],
            )
        }
        _ => {
            let conf = config_path(args, daemons::PODMAN_CONFIG);
            let dirs = match toml::read_optional(&conf)? {
                Some(text) => daemons::podman_hooks_dirs(&toml::parse(&conf, &text)?),
                None => None,
            };
            (
                dirs,
                format!("hooks_dir of {}", conf.display()),
                &daemons::PODMAN_DEFAULT_HOOKS_DIRS[..],
            )
        }
    };
    let (dirs, from) = match dirs {
        Some(d) => (d, from),
        None => (
            defaults.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            format!("the default, as {from} is not set"),
        ),
    };
    let Some(dir) = daemons::hooks_dir_to_write(&dirs) else {
        return Err(DaemonConfigError::NoHooksDir { from }.into());
    };
    if !dir.is_absolute() {
        return Err(DaemonConfigError::HooksDirRelative { from, dir }.into());
    }
    Ok((dir, from))
}

/// `--hook`: the hook definition file in the daemon's hooks directory.
fn plan_hook(args: &InstallArgs, install: bool) -> Result<Plan, InstallError> {
    let (dir, from) = hooks_dir(args)?;
    let path = dir.join(HOOK_FILE);
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(InstallError::io("cannot read", &path)(e)),
    };
    let mut plan = Plan::default();
    plan.notes
        .push(format!("hooks directory: {} ({from})", dir.display()));
    let owner = old.as_deref().map(hook_owner);
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
            let tool = std::env::current_exe().map_err(InstallError::OwnPath)?;
            let tool = tool
                .to_str()
                .ok_or_else(|| InstallError::NotUtf8(tool.clone()))?;
            Some(hook_definition(tool, daemon_name(args.daemon))?)
        }
        (false, _) => None,
    };
    plan.files.push(FileChange {
        path,
        old,
        new,
        backup: false,
    });
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handler(text: &str) -> Item {
        let doc: DocumentMut = text.parse().unwrap();
        doc["h"].clone()
    }

    #[test]
    fn the_fingerprint_ignores_layout_and_sees_values() {
        let a = handler("[h]\nruntime_type = \"x\"\n[h.options]\nA = 1\nB = [\"p\", \"q\"]\n");
        let b = handler(
            "# c\n[h]\n  runtime_type   =   \"x\"  # why\n\n[h.options]\n  B = [ \"p\",\n    \"q\" ]\n  A = 1\n",
        );
        let c = handler("[h]\nruntime_type = \"x\"\n[h.options]\nA = 2\nB = [\"p\", \"q\"]\n");
        let d = handler(
            "[h]\nruntime_type = \"x\"\n[h.options]\nA = 1\nB = [\"p\", \"q\"]\nC = true\n",
        );
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
        assert_ne!(fingerprint(&a), fingerprint(&d));
    }

    #[test]
    fn owner_reads_the_marker() {
        let mut doc = DocumentMut::new();
        let mut t = Table::new();
        t.insert("runtime_path", value("/usr/bin/userns-hostnet-runtime"));
        doc.insert("h", Item::Table(marked(t)));
        let text = doc.to_string();
        assert!(text.contains(HANDLER_MARK), "{text}");
        assert_eq!(owner(&handler(&text)), Owner::Install);
        let edited = text.replace("/usr/bin/", "/usr/local/bin/");
        assert_eq!(owner(&handler(&edited)), Owner::Changed);
        let unmarked: String = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(owner(&handler(&unmarked)), Owner::Operator);
        let garbled = text.replace("(fingerprint ", "(fingerprint zz");
        assert_eq!(owner(&handler(&garbled)), Owner::Operator);
        // An inline table carries no marker.
        assert_eq!(owner(&handler("h = { a = 1 }\n")), Owner::Operator);
    }

    #[test]
    fn an_emptied_drop_in_holds_nothing() {
        let mut doc: DocumentMut = "version = 2\n[plugins.x.runtimes.h]\na = 1\n"
            .parse()
            .unwrap();
        assert!(!holds_nothing(&doc));
        table_at(doc.as_table_mut(), &["plugins", "x", "runtimes"])
            .unwrap()
            .remove("h");
        assert!(holds_nothing(&doc));
        let doc: DocumentMut = "version = 2\n[plugins.x]\nsandbox_image = \"p\"\n"
            .parse()
            .unwrap();
        assert!(!holds_nothing(&doc));
    }

    #[test]
    fn the_hook_marker_is_checked() {
        let def = hook_definition("/usr/bin/userns-hostnet", "crio").unwrap();
        assert_eq!(hook_owner(&def), Owner::Install, "{def}");
        let v: serde_json::Value = serde_json::from_str(&def).unwrap();
        assert_eq!(v["hook"]["path"], "/usr/bin/userns-hostnet");
        assert_eq!(v["stages"][0], "createRuntime");
        // Layout does not count, values do.
        let compact = serde_json::to_string(&v).unwrap();
        assert_eq!(hook_owner(&compact), Owner::Install);
        assert_eq!(
            hook_owner(&def.replace("\"timeout\": 10", "\"timeout\": 30")),
            Owner::Changed
        );
        assert_eq!(hook_owner(SHIPPED_HOOK), Owner::Operator);
        assert_eq!(hook_owner("not json"), Owner::Operator);
    }

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

    #[test]
    fn which_binary_is_carried() {
        let mut notes = Vec::new();
        let w = "/usr/bin/userns-hostnet-runtime";
        let carried = |b: Option<&str>, w: &str, notes: &mut Vec<String>| {
            carried_runtime(b, w, "BinaryName of handler runc", notes)
        };
        assert_eq!(carried(None, w, &mut notes).unwrap(), None);
        assert_eq!(carried(Some(""), w, &mut notes).unwrap(), None);
        // The wrapper's own name names its runtime: it wins.
        assert_eq!(
            carried(
                Some("/usr/sbin/runc"),
                "/usr/bin/userns-hostnet-runtime-crun",
                &mut notes
            )
            .unwrap(),
            None
        );
        // A source handler that already runs the wrapper.
        assert_eq!(carried(Some(w), w, &mut notes).unwrap(), None);
        assert_eq!(
            carried(Some("/opt/runc-1.4"), w, &mut notes).unwrap(),
            Some(PathBuf::from("/opt/runc-1.4"))
        );
        assert!(
            notes[0].starts_with(
                "warning: /opt/runc-1.4 (BinaryName of handler runc) is not an executable file"
            ),
            "{notes:?}"
        );
        let e = carried(Some("bin/runc"), w, &mut notes).unwrap_err();
        assert!(matches!(e, InTheWayError::RuntimeRelative { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "BinaryName of handler runc = \"bin/runc\" is a relative path; make it absolute, then install again"
        );
        let e = carried(Some("no-such-runtime-anywhere"), w, &mut notes).unwrap_err();
        assert!(matches!(e, InTheWayError::RuntimeNotInPath { .. }), "{e:?}");
        assert!(e.to_string().contains("not an executable in PATH"), "{e}");
    }
}
