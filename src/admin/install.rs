//! `userns-hostnet install` and `uninstall`: register the wrapper as a
//! runtime handler of containerd or CRI-O, editing their config with
//! `toml_edit` so comments, order and every other setting stay as they were.
//! A second install changes nothing; an uninstall removes exactly what the
//! install added. It never restarts a daemon: it says which restart is
//! needed.

use super::daemons::{self, dig};
use super::files;
use crate::cli::{Daemon, InstallArgs};
use crate::sys::toml;
use std::path::{Path, PathBuf};
use toml_edit::{value, Array, DocumentMut, Item, Table, Value};

/// Where CRI-O keeps the wrapper's runtime state (`--root`).
pub const CRIO_RUNTIME_ROOT: &str = "/run/userns-hostnet-runtime";

/// One file's change: `None` is an absent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    pub old: Option<String>,
    pub new: Option<String>,
}

impl FileChange {
    fn changes(&self) -> bool {
        self.old != self.new
    }
}

/// Run `install`; the exit status.
pub fn run(args: &InstallArgs) -> anyhow::Result<i32> {
    let plan = match args.daemon {
        Daemon::Containerd => plan_containerd(args, true)?,
        Daemon::Crio => plan_crio(args, true)?,
    };
    apply(args, &plan, "installed")
}

/// `uninstall`: the exit status.
pub fn run_uninstall(args: &InstallArgs) -> anyhow::Result<i32> {
    let plan = match args.daemon {
        Daemon::Containerd => plan_containerd(args, false)?,
        Daemon::Crio => plan_crio(args, false)?,
    };
    apply(args, &plan, "removed")
}

/// Standard output, where a closed pipe is not an error worth a panic.
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Marks an `imports` line that install added, so uninstall removes the
/// whole line again rather than leaving an empty list behind.
const IMPORTS_MARK: &str = " # added by userns-hostnet install";

fn daemon_name(d: Daemon) -> &'static str {
    match d {
        Daemon::Containerd => "containerd",
        Daemon::Crio => "crio",
    }
}

fn apply(args: &InstallArgs, plan: &[FileChange], done: &str) -> anyhow::Result<i32> {
    let daemon = daemon_name(args.daemon);
    let changed: Vec<&FileChange> = plan.iter().filter(|c| c.changes()).collect();
    if changed.is_empty() {
        say(&format!(
            "nothing to change: runtime handler {} is already {done} for {daemon}\n",
            args.handler
        ));
        return Ok(0);
    }
    if args.dry_run {
        for c in &changed {
            say(&files::unified_diff(
                &c.path,
                c.old.as_deref(),
                c.new.as_deref(),
            ));
        }
        say("(dry run: nothing written)\n");
        return Ok(0);
    }
    for c in &changed {
        match (&c.old, &c.new) {
            (_, None) => {
                std::fs::remove_file(&c.path)
                    .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", c.path.display()))?;
                say(&format!("removed {}\n", c.path.display()));
            }
            (old, Some(new)) => {
                if old.is_some() {
                    let b = files::backup(&c.path)
                        .map_err(|e| anyhow::anyhow!("cannot back up {}: {e}", c.path.display()))?;
                    say(&format!("backup {}\n", b.display()));
                }
                files::write_atomic(&c.path, new.as_bytes())
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", c.path.display()))?;
                say(&format!("wrote {}\n", c.path.display()));
            }
        }
    }
    say(&format!("runtime handler {} {done}; restart {daemon} for it to take effect: systemctl restart {daemon}\n",
        args.handler));
    Ok(0)
}

/// The table at `path` below `root`, created (implicit, so that it prints
/// no header of its own and vanishes again when emptied) where missing.
fn table_at<'a>(root: &'a mut Table, path: &[&str]) -> anyhow::Result<&'a mut Table> {
    let mut t = root;
    for key in path {
        if !t.contains_key(key) {
            let mut new = Table::new();
            new.set_implicit(true);
            t.insert(key, Item::Table(new));
        }
        t = t
            .get_mut(key)
            .and_then(Item::as_table_mut)
            .ok_or_else(|| anyhow::anyhow!("{key} is not a table"))?;
    }
    Ok(t)
}

/// The handler table: the runc shim with the wrapper as its binary and
/// the other options of the existing runc handler (SystemdCgroup...), so
/// that cgroups are managed the same way.
fn containerd_handler(doc: &DocumentMut, runtimes: &[&str], wrapper: &str) -> Table {
    let mut options = Table::new();
    let mut runc_path = runtimes.to_vec();
    runc_path.extend(["runc", "options"]);
    if let Some(runc) = dig(doc.as_item(), &runc_path).and_then(Item::as_table_like) {
        for (k, v) in runc.iter() {
            if let Some(v) = v.as_value() {
                let mut v = v.clone();
                v.decor_mut().clear();
                options.insert(k, Item::Value(v));
            }
        }
    }
    options.insert("BinaryName", value(wrapper));
    let mut h = Table::new();
    h.insert("runtime_type", value(daemons::RUNC_SHIM));
    h.insert("options", Item::Table(options));
    h
}

fn same_handler(existing: &Item, wrapper: &str) -> bool {
    dig(existing, &["runtime_type"]).and_then(Item::as_str) == Some(daemons::RUNC_SHIM)
        && dig(existing, &["options", "BinaryName"]).and_then(Item::as_str) == Some(wrapper)
}

fn wrapper_str(args: &InstallArgs) -> anyhow::Result<String> {
    args.wrapper
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("--wrapper: not UTF-8"))
}

/// What install (or uninstall) changes for containerd.
pub fn plan_containerd(args: &InstallArgs, install: bool) -> anyhow::Result<Vec<FileChange>> {
    let config = args
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from(daemons::CONTAINERD_CONFIG));
    let Some(text) = toml::read_optional(&config)? else {
        anyhow::bail!(
            "{}: no such file; write containerd's defaults first (containerd config default > {0})",
            config.display()
        );
    };
    let mut doc = toml::parse(&config, &text)?;
    let version = daemons::containerd_version(&doc);
    let Some(runtimes) = daemons::containerd_runtimes_path(version).filter(|_| version >= 2) else {
        anyhow::bail!(
            "{}: config version {version} is not supported: use version 2 (containerd 1.x) or 3 (containerd 2.x)",
            config.display()
        );
    };
    let wrapper = wrapper_str(args)?;
    let name = args.handler.as_str();
    if args.drop_in {
        return plan_containerd_drop_in(args, install, &config, &text, doc, &runtimes, &wrapper);
    }
    let mut path = runtimes.to_vec();
    path.push(name);
    let existing = dig(doc.as_item(), &path).cloned();
    let new = if install {
        match existing {
            Some(e) if same_handler(&e, &wrapper) => text.clone(),
            Some(_) => anyhow::bail!(
                "{}: runtime handler {name} already exists and differs; uninstall it or choose another --handler",
                config.display()
            ),
            None => {
                let h = containerd_handler(&doc, &runtimes, &wrapper);
                table_at(doc.as_table_mut(), &runtimes)?.insert(name, Item::Table(h));
                doc.to_string()
            }
        }
    } else {
        match existing {
            None => text.clone(),
            Some(e) => {
                let binary = dig(&e, &["options", "BinaryName"]).and_then(Item::as_str);
                if !binary.is_some_and(daemons::is_wrapper) {
                    anyhow::bail!(
                        "{}: runtime handler {name} does not run the wrapper; leaving it alone",
                        config.display()
                    );
                }
                table_at(doc.as_table_mut(), &runtimes)?.remove(name);
                doc.to_string()
            }
        }
    };
    Ok(vec![FileChange {
        path: config,
        old: Some(text),
        new: Some(new),
    }])
}

/// `--drop-in`: the handler in `conf.d/99-userns-hostnet.toml` next to the
/// main config, and the main config's `imports` naming it.
fn plan_containerd_drop_in(
    args: &InstallArgs,
    install: bool,
    config: &Path,
    text: &str,
    mut doc: DocumentMut,
    runtimes: &[&str],
    wrapper: &str,
) -> anyhow::Result<Vec<FileChange>> {
    let dir = config.parent().unwrap_or(Path::new("/"));
    let drop_in = std::path::absolute(dir.join(daemons::CONTAINERD_DROP_IN))?;
    let drop_in_str = drop_in.to_string_lossy().into_owned();
    let old_drop_in = toml::read_optional(&drop_in)?;
    let covered = |doc: &DocumentMut| {
        daemons::containerd_imports(doc, config, &|p| p.to_owned())
            .iter()
            .any(|p| std::path::absolute(p).is_ok_and(|p| p == drop_in))
    };
    let version = daemons::containerd_version(&doc);
    let (new_main, new_drop_in) = if install {
        let mut d = DocumentMut::new();
        d.decor_mut().set_prefix(
            "# The userns-hostnet runtime handler, written by `userns-hostnet install containerd --drop-in`\n# and removed by `userns-hostnet uninstall containerd --drop-in`.\n",
        );
        d.insert("version", value(version));
        let h = containerd_handler(&doc, runtimes, wrapper);
        table_at(d.as_table_mut(), runtimes)?.insert(&args.handler, Item::Table(h));
        let mut path = runtimes.to_vec();
        path.push(&args.handler);
        let drop_in_text = match &old_drop_in {
            None => d.to_string(),
            Some(old) => {
                let theirs = toml::parse(&drop_in, old)?;
                if !dig(theirs.as_item(), &path).is_some_and(|e| same_handler(e, wrapper)) {
                    anyhow::bail!(
                        "{}: exists and holds something else; remove it or choose another --handler",
                        drop_in.display()
                    );
                }
                // Already there: left as it is.
                old.clone()
            }
        };
        let main = if covered(&doc) {
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
        };
        (main, Some(drop_in_text))
    } else {
        let mut removed = false;
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
        let main = if removed {
            doc.to_string()
        } else {
            text.to_owned()
        };
        (main, None)
    };
    Ok(vec![
        FileChange {
            path: config.to_owned(),
            old: Some(text.to_owned()),
            new: Some(new_main),
        },
        FileChange {
            path: drop_in,
            old: old_drop_in,
            new: new_drop_in,
        },
    ])
}

/// What install (or uninstall) changes for CRI-O: one drop-in file.
pub fn plan_crio(args: &InstallArgs, install: bool) -> anyhow::Result<Vec<FileChange>> {
    let conf = args
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from(daemons::CRIO_CONFIG));
    let path = conf
        .parent()
        .unwrap_or(Path::new("/"))
        .join(daemons::CRIO_DROP_IN);
    let old = toml::read_optional(&path)?;
    let new = if install {
        Some(crio_drop_in(&args.handler, &wrapper_str(args)?))
    } else {
        None
    };
    if let (Some(old), Some(_)) = (&old, &new) {
        let doc = toml::parse(&path, old)?;
        if daemons::crio_handlers(&doc, &path).is_empty() {
            anyhow::bail!(
                "{}: exists and registers no wrapper handler; leaving it alone",
                path.display()
            );
        }
    }
    Ok(vec![FileChange { path, old, new }])
}

/// The CRI-O drop-in's text.
pub fn crio_drop_in(handler: &str, wrapper: &str) -> String {
    let mut d = DocumentMut::new();
    d.decor_mut().set_prefix(
        "# The userns-hostnet runtime handler, written by `userns-hostnet install crio`\n# and removed by `userns-hostnet uninstall crio`.\n",
    );
    let mut h = Table::new();
    h.insert("runtime_path", value(wrapper));
    h.insert("runtime_type", value("oci"));
    h.insert("runtime_root", value(CRIO_RUNTIME_ROOT));
    let runtimes = match table_at(d.as_table_mut(), &["crio", "runtime", "runtimes"]) {
        Ok(t) => t,
        Err(_) => return String::new(),
    };
    runtimes.insert(handler, Item::Table(h));
    d.to_string()
}
