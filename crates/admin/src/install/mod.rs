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
//! [`report::apply`] writes. Each daemon's module plans its files
//! (`daemon::NAME::plan`), reached through [`daemon::DaemonModule`].
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
//! `runtime` to that binary ([`userns_hostnet::runtime::named_by_handler_link`]).

pub mod uninstall;
use uninstall::*;

use super::daemon::in_use;
use super::daemon::register::{edit::*, error::*, handler::*, paths::*, Registration};
use super::daemon::{self, config::Owner, hookfile};
use super::files;
use crate::cli::{InstallArgs, UninstallArgs};
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item};
use userns_hostnet::runtime::HANDLER_RUNTIME_LINK;
use userns_hostnet::sys::toml;

mod hook_plan;
mod report;

use crate::say;
use hook_plan::plan_hook;
use report::apply;

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
fn validate(args: &Registration) -> Result<Vec<String>, UsageError> {
    if !is_dns_label(&args.handler) {
        return Err(UsageError::HandlerNotDnsLabel(args.handler.clone()));
    }
    if !args.wrapper.is_absolute() {
        return Err(UsageError::WrapperRelative(args.wrapper.clone()));
    }
    let mut notes = Vec::new();
    // The wrapper the handler runs reads this file at every create.
    if let Ok(path) = node_file(args, Path::new(userns_hostnet::config::DEFAULT_PATH)) {
        if let Err(e) = userns_hostnet::config::load_from(&path) {
            notes.push(format!(
                "warning: {e}: the wrapper refuses every container with a user namespace until it parses (`userns-hostnet config default` documents every setting)"
            ));
        }
    }
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
    let args = &registration(args);
    reported(args, install(args))
}

/// install's command line as the registration it plans.
fn registration(a: &InstallArgs) -> Registration {
    Registration {
        config: a.config.clone(),
        drop_in: a.drop_in,
        reader: a.containerd.clone(),
        wrapper: a.wrapper.clone(),
        handlers_dir: a.handlers_dir.clone(),
        hook: a.hook,
        hooks_dir: a.hooks_dir.clone(),
        set_as_default: a.set_as_default,
        root: a.root.clone(),
        force: a.force,
        dry_run: a.dry_run,
        check: a.check,
        json: a.json,
        backup: a.backup,
        ..Registration::new(a.daemon, &a.handler)
    }
}

fn install(args: &Registration) -> Result<i32, InstallError> {
    let notes = if args.hook {
        Vec::new()
    } else {
        validate(args)?
    };
    let mut plan = plan(args, true)?;
    plan.notes.splice(0..0, notes);
    apply(args, &plan, true)
}

/// uninstall refuses to take a handler away while containers of it are
/// on the node ([`in_use`]); `--force` warns instead, and so do
/// `--dry-run` and `--check`, which write nothing.
fn guard(args: &Registration, force: bool, plan: &mut InstallPlan) -> Result<(), InstallError> {
    let Some(handler) = handler_removed(args, plan)? else {
        return Ok(());
    };
    let containers = in_use::containers(&node_root(args)?, handler.as_ref());
    if containers.is_empty() {
        return Ok(());
    }
    let e = in_use::InUse {
        handler: args.handler.clone(),
        containers,
    };
    if force {
        plan.notes.push(e.forced());
    } else if args.dry_run || args.check {
        plan.notes.push(format!("warning: {e}"));
    } else {
        return Err(e.into());
    }
    Ok(())
}

/// Under `--json` an error is the one document on standard output,
/// `{"error": LINE}`, with the status of an error: a script reads one
/// document whatever happened. Otherwise the caller prints it on stderr.
fn reported(args: &Registration, result: Result<i32, InstallError>) -> Result<i32, InstallError> {
    match result {
        Err(e) if args.json => {
            let doc = serde_json::json!({ "error": e.to_string() });
            say(&format!("{doc:#}"));
            Ok(super::EXIT_ERROR)
        }
        other => other,
    }
}

fn plan(args: &Registration, install: bool) -> Result<InstallPlan, InstallError> {
    check_root(args)?;
    if args.hook && args.daemon.hooks().is_none() {
        Err(UsageError::ContainerdHook.into())
    } else if args.hook {
        plan_hook(args, install)
    } else {
        args.daemon.plan(args, install)
    }
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

    fn args(root: Option<&Path>) -> Registration {
        let u = UninstallArgs {
            daemon: &daemon::containerd::Containerd,
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
        uninstall_registration(&u)
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
