//! What install and uninstall do with a plan: print it (text, a diff, or
//! one JSON document), or write it, links before the configs that name
//! them on install and after on uninstall.

use super::*;

/// What install registers, in the lines it prints.
pub(super) fn subject(args: &Registration) -> String {
    if args.hook {
        "the createRuntime hook".to_owned()
    } else {
        format!("{} {}", args.daemon.registers(), args.handler)
    }
}

/// What install or uninstall tells: lines of text as it goes, or with
/// `--json` one document at the end.
pub(super) struct Report {
    json: bool,
    files: Vec<serde_json::Value>,
    links: Vec<serde_json::Value>,
}

impl Report {
    fn line(&self, text: &str) {
        if !self.json {
            say(text);
        }
    }
}

pub(super) fn link_json(l: &LinkChange) -> serde_json::Value {
    let (path, target, action) = match l {
        LinkChange::Create { path, target } => (path, target, "create"),
        LinkChange::Remove { path, target } => (path, target, "remove"),
    };
    serde_json::json!({"path": path, "target": target, "action": action})
}

pub(super) fn file_action(c: &FileChange) -> &'static str {
    match (&c.old, &c.new) {
        (None, None) => "absent",
        (None, Some(_)) => "create",
        (Some(_), None) => "remove",
        (Some(o), Some(n)) if o == n => "unchanged",
        _ => "modify",
    }
}

/// Print the plan (`--check`, `--dry-run`, nothing to change) or write it;
/// the exit status.
pub(super) fn apply(
    args: &Registration,
    plan: &InstallPlan,
    install: bool,
) -> Result<i32, InstallError> {
    let changed: Vec<&FileChange> = plan.files.iter().filter(|c| c.changes()).collect();
    let would_change = !changed.is_empty() || !plan.links.is_empty();
    let restart = (!changed.is_empty()
        && (!args.hook || plan.restart)
        && args.daemon.without_restart(&args.handler, true).is_none())
    .then(|| format!("systemctl restart {}", args.daemon.name()));
    let run = Run {
        args,
        plan,
        install,
        changed,
        would_change,
        restart,
    };
    let mut report = Report {
        json: args.json,
        files: Vec::new(),
        links: Vec::new(),
    };
    let status = i32::from(if args.check { would_change } else { plan.left });
    if args.check {
        run.check(&report);
    } else if !would_change {
        run.unchanged(&report);
    } else if args.dry_run {
        run.dry_run(&report);
    } else {
        run.write(&mut report)?;
    }
    Ok(status)
}

/// One install or uninstall's plan, as `apply` prints or writes it.
struct Run<'a> {
    args: &'a Registration,
    plan: &'a InstallPlan,
    install: bool,
    /// The files the plan changes.
    changed: Vec<&'a FileChange>,
    /// Whether any file or link changes.
    would_change: bool,
    /// The daemon's restart, when a change needs one.
    restart: Option<String>,
}

impl Run<'_> {
    fn daemon(&self) -> &'static str {
        self.args.daemon.name()
    }

    fn done(&self) -> &'static str {
        if self.install {
            "installed"
        } else {
            "removed"
        }
    }

    /// `--check`: what would change, or that it is in place.
    fn check(&self, report: &Report) {
        for c in &self.changed {
            report.line(&format!("would {} {}", file_action(c), c.path.display()));
        }
        for l in &self.plan.links {
            report.line(&match l {
                LinkChange::Create { path, .. } => format!("would link {}", path.display()),
                LinkChange::Remove { path, .. } => format!("would remove {}", path.display()),
            });
        }
        if !self.would_change {
            report.line(&format!(
                "in place: {} is {} for {}",
                subject(self.args),
                self.done(),
                self.daemon()
            ));
        }
        self.finish(report, false);
    }

    /// Nothing to change: said so (unless something is left that the
    /// notes tell of).
    fn unchanged(&self, report: &Report) {
        if !self.plan.left {
            report.line(&format!(
                "nothing to change: {} is already {} for {}",
                subject(self.args),
                self.done(),
                self.daemon()
            ));
        }
        self.notes(report);
        self.finish(report, false);
    }

    /// `--dry-run`: each file's diff and each link, nothing written.
    fn dry_run(&self, report: &Report) {
        for c in &self.changed {
            if !report.json {
                let diff = files::unified_diff(&c.path, c.old.as_deref(), c.new.as_deref());
                let _ = crate::print(diff.as_bytes());
            }
        }
        // Links are not lines of a file: worded apart from the diff's
        // `+`/`-` lines.
        for l in &self.plan.links {
            report.line(&match l {
                LinkChange::Create { path, target } => {
                    format!("would link {} -> {}", path.display(), target.display())
                }
                LinkChange::Remove { path, target } => {
                    format!(
                        "would remove link {} -> {}",
                        path.display(),
                        target.display()
                    )
                }
            });
        }
        self.notes(report);
        report.line("(dry run: nothing written)");
        self.finish(report, false);
    }

    /// The writes, in the order that keeps the node working.
    fn write(&self, report: &mut Report) -> Result<(), InstallError> {
        // An interrupt waits until the change is whole (then ends the run):
        // cut short, it would leave links no config names, or a temporary
        // file beside the config.
        let _held = Held::signals();
        // The links exist before a config names them, and go after none does.
        if self.install {
            apply_links(&self.plan.links, report)?;
            pause_between_links_and_files();
        }
        for c in &self.changed {
            write_file(self.args, c, report)?;
        }
        if !self.install {
            apply_links(&self.plan.links, report)?;
        }
        self.notes(report);
        if !self.changed.is_empty() {
            report.line(&done_line(self.args, self.plan, self.install));
        }
        self.finish(report, true);
        Ok(())
    }

    fn notes(&self, report: &Report) {
        for n in &self.plan.notes {
            report.line(n);
        }
    }

    /// With `--json`, the one document: what was written, or (`written`
    /// false) what the plan would write.
    fn finish(&self, report: &Report, written: bool) {
        if !report.json {
            return;
        }
        let plan = self.plan;
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
            "command": if self.install { "install" } else { "uninstall" },
            "daemon": self.daemon(),
            "subject": subject(self.args),
            "written": written,
            "changed": self.would_change,
            "files": files,
            "links": links,
            "notes": plan.notes,
            "left": plan.left,
            "restart": if written { self.restart.clone() } else { None },
        });
        say(&format!("{doc:#}"));
    }
}

/// SIGINT, SIGTERM and SIGHUP held (blocked) until dropped; one that came
/// meanwhile is then delivered, with its usual effect.
struct Held(Option<nix::sys::signal::SigSet>);

impl Held {
    fn signals() -> Held {
        use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};
        let set = SigSet::from_iter([Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP]);
        let mut old = SigSet::empty();
        let held = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), Some(&mut old)).is_ok();
        Held(held.then_some(old))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        use nix::sys::signal::{pthread_sigmask, SigmaskHow};
        if let Some(old) = &self.0 {
            let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(old), None);
        }
    }
}

/// The environment variable that stops install (SIGSTOP) after its links
/// and before its files, in builds with the `test-hooks` feature: a test
/// interrupts it there.
#[cfg(feature = "test-hooks")]
const TEST_PAUSE_ENV: &str = "USERNS_HOSTNET_TEST_PAUSE_INSTALL";

#[cfg(feature = "test-hooks")]
fn pause_between_links_and_files() {
    if std::env::var_os(TEST_PAUSE_ENV).is_some() {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
    }
}

#[cfg(not(feature = "test-hooks"))]
fn pause_between_links_and_files() {}

/// The temporary files an earlier run killed mid-write left beside `path`
/// ([`userns_hostnet::sys::atomic::stale_temps`]): removed, and said.
fn remove_stale_temps(path: &Path, report: &mut Report) {
    for t in userns_hostnet::sys::atomic::stale_temps(path) {
        if std::fs::remove_file(&t).is_ok() {
            report.line(&format!(
                "removed {}, left by an interrupted run",
                t.display()
            ));
        }
    }
}

/// Write or remove one file of the plan, with its backup, and report it.
fn write_file(
    args: &Registration,
    c: &FileChange,
    report: &mut Report,
) -> Result<(), InstallError> {
    remove_stale_temps(&c.path, report);
    match (&c.old, &c.new) {
        (old, None) => {
            std::fs::remove_file(&c.path).map_err(InstallError::io("cannot remove", &c.path))?;
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
            if old.is_some() && c.backup && args.backup {
                let b =
                    files::backup(&c.path).map_err(InstallError::io("cannot back up", &c.path))?;
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
    Ok(())
}

/// The last line of a run that changed files: what is done, and which
/// restart (if any) makes it take effect.
fn done_line(args: &Registration, plan: &InstallPlan, install: bool) -> String {
    let daemon = args.daemon.name();
    let done = if install { "installed" } else { "removed" };
    let then = if args.hook && plan.restart {
        format!("restart {daemon} for it to read its hooks_dir again: systemctl restart {daemon}")
    } else if args.hook {
        "CRI-O and podman read their hooks directories for each new container: no restart needed"
            .to_owned()
    } else if let Some(why) = args.daemon.without_restart(&args.handler, install) {
        why
    } else {
        format!("restart {daemon} for it to take effect: systemctl restart {daemon}")
    };
    format!("{} {done}; {then}", subject(args))
}

/// The name of the directory the handlers' directory is in by default.
const OWN_DIR: &str = "userns-hostnet";

pub(super) fn apply_links(links: &[LinkChange], report: &mut Report) -> Result<(), InstallError> {
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
                // The handler's directory, the directory of handlers and
                // the tool's own directory above it (/etc/userns-hostnet,
                // which install makes when no package did) go when empty;
                // anything else put there (the package's config.toml)
                // keeps them.
                let mut dirs = path.ancestors().skip(1).take(3);
                let (handler, handlers, own) = (dirs.next(), dirs.next(), dirs.next());
                if handler.is_some_and(|d| std::fs::remove_dir(d).is_ok())
                    && handlers.is_some_and(|d| std::fs::remove_dir(d).is_ok())
                {
                    if let Some(own) = own.filter(|d| d.file_name() == Some(OWN_DIR.as_ref())) {
                        let _ = std::fs::remove_dir(own);
                    }
                }
            }
        }
    }
    Ok(())
}
