//! `userns-hostnet registrations`: what on this host still runs the
//! packaged binaries. The package's removal scripts ask it before deleting
//! /usr/bin/userns-hostnet-runtime: a daemon whose handler names a file
//! that is gone can neither start nor stop that handler's containers.
//!
//! A registration is anything a daemon reads that names a file the package
//! removes: a handler's links under /etc/userns-hostnet/handlers, a string
//! of a containerd, CRI-O or podman config file (main file and drop-ins),
//! an OCI hook definition in a hooks directory, a deploy that wrote into
//! /usr/bin. Registrations of binaries elsewhere (deploy's /usr/local/bin)
//! are not the package's and do not count. The scan reads only; every
//! path is taken under `root` so that a test can give a directory.

use super::daemon;
use super::daemon::node::{files_in, under};
use std::path::{Path, PathBuf};
use toml_edit::{Item, TableLike, Value};
use userns_hostnet::sys::in_root::NodeRoot;

/// The files the package owns that a daemon can be told to run.
pub const PACKAGE_FILES: [&str; 5] = [
    "/usr/bin/userns-hostnet-runtime",
    "/usr/bin/userns-hostnet-runtime-crun",
    "/usr/bin/userns-hostnet-runtime-youki",
    "/usr/bin/userns-hostnet",
    "/usr/share/userns-hostnet/hooks.d/userns-hostnet.json",
];

/// Hooks directories podman and CRI-O read by default.
const HOOKS_DIRS: [&str; 2] = [daemon::hookfile::ADMIN_DIR, daemon::hookfile::VENDOR_DIR];

/// The default hooks directories and those CRI-O's and podman's configs
/// name under `root` (`hooks_dir`), each once; an unreadable config adds
/// nothing (the scan reads what it can and never fails).
fn hooks_dirs(root: &Path) -> Vec<String> {
    let mut dirs: Vec<String> = HOOKS_DIRS.iter().map(|d| d.to_string()).collect();
    let named = daemon::ALL.iter().flat_map(|d| d.hooks_dirs_under(root));
    for dir in named {
        if Path::new(&dir).is_absolute() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

const DEPLOY_STATE: &str = "/var/lib/userns-hostnet/deploy/state.json";

/// One thing that still runs a packaged binary, and the command that
/// undoes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Registration {
    /// What and where, e.g. `containerd handler NAME in FILE`.
    pub what: String,
    /// The command to run first.
    pub undo: String,
}

/// Whether `text` names a packaged file or a handler's link directory.
fn names_package(text: &str, handlers_dir: &str) -> bool {
    PACKAGE_FILES.iter().any(|f| text.contains(f)) || text.contains(handlers_dir)
}

/// The handler a string at `keys` belongs to: the key after the last
/// `runtimes` table (containerd, CRI-O, podman all keep handlers there).
fn handler_of(keys: &[String]) -> Option<&str> {
    let at = keys.iter().rposition(|k| k == "runtimes")?;
    keys.get(at + 1).map(String::as_str)
}

/// Every (keys, string) of a TOML document.
fn strings(item: &Item, keys: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let tables: Vec<&dyn TableLike> = match item {
        Item::Value(Value::String(s)) => return out.push((keys.clone(), s.value().clone())),
        Item::Value(Value::Array(a)) => {
            for v in a.iter() {
                strings(&Item::Value(v.clone()), keys, out);
            }
            return;
        }
        Item::ArrayOfTables(a) => a.iter().map(|t| t as &dyn TableLike).collect(),
        other => other.as_table_like().into_iter().collect(),
    };
    for (k, i) in tables.into_iter().flat_map(|t| t.iter()) {
        keys.push(k.to_owned());
        strings(i, keys, out);
        keys.pop();
    }
}

/// The handlers of one config file's text that name a packaged file, in
/// order, once each; a file that is not TOML is searched as text.
pub fn handlers_in(text: &str, handlers_dir: &str) -> Vec<String> {
    let Ok(doc) = text.parse::<toml_edit::DocumentMut>() else {
        return if names_package(text, handlers_dir) {
            vec![String::new()]
        } else {
            Vec::new()
        };
    };
    let mut found = Vec::new();
    strings(doc.as_item(), &mut Vec::new(), &mut found);
    let mut names: Vec<String> = Vec::new();
    for (keys, s) in found {
        if !names_package(&s, handlers_dir) {
            continue;
        }
        let name = handler_of(&keys).unwrap_or_default().to_owned();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// `link`'s target as an absolute path on the host (without `root`).
fn link_target(link: &Path, root: &Path) -> Option<PathBuf> {
    let t = std::fs::read_link(link).ok()?;
    let abs = if t.is_absolute() {
        t
    } else {
        link.parent()?
            .strip_prefix(root)
            .ok()
            .map(|d| Path::new("/").join(d).join(t))?
    };
    Some(abs)
}

fn is_package_file(p: &Path) -> bool {
    PACKAGE_FILES.iter().any(|f| Path::new(f) == p)
}

/// Everything under `root` that still runs a packaged binary: in the
/// daemons' configs, the handlers' links, the hook files, containers, and
/// a deploy's state.
pub fn scan(root: &Path, handlers_dir: &Path) -> Vec<Registration> {
    let handlers_text = handlers_dir.display().to_string();
    let (mut out, named) = in_daemon_configs(root, &handlers_text);
    out.extend(handlers_linked(root, &handlers_text, &named));
    out.extend(hook_files(root));
    out.extend(containers(root, &handlers_text));
    out.extend(deploy_state(root));
    out
}

/// The handlers the daemons' config files register, with the names of
/// those handlers (a handler's links are then not told of again).
fn in_daemon_configs(root: &Path, handlers_text: &str) -> (Vec<Registration>, Vec<String>) {
    let mut out = Vec::new();
    let mut named: Vec<String> = Vec::new();
    for m in daemon::ALL {
        let daemon = m.name();
        for file in m.config_files(root) {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let shown = Path::new("/").join(file.strip_prefix(root).unwrap_or(&file));
            let shown = shown.display();
            for name in handlers_in(&text, handlers_text) {
                let (what, undo) = if name.is_empty() {
                    (
                        format!("{shown} names {}", PACKAGE_FILES[0]),
                        format!("userns-hostnet uninstall {daemon} --config {shown}"),
                    )
                } else {
                    (
                        format!("{daemon} handler {name} in {shown}"),
                        format!(
                            "userns-hostnet uninstall {daemon} --handler {name} --config {shown}"
                        ),
                    )
                };
                named.push(name);
                out.push(Registration { what, undo });
            }
        }
    }
    (out, named)
}

/// The handlers' link directories with a link to a packaged binary, for
/// handlers no config file seen registers (`named`).
fn handlers_linked(root: &Path, handlers_text: &str, named: &[String]) -> Vec<Registration> {
    let mut out = Vec::new();
    let links_dir = under(root, handlers_text);
    let mut handler_dirs: Vec<PathBuf> = std::fs::read_dir(&links_dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    handler_dirs.sort();
    for dir in handler_dirs {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if named.contains(&name) {
            continue;
        }
        let Some((link, target)) = files_in(&dir)
            .into_iter()
            .filter_map(|l| link_target(&l, root).map(|t| (l, t)))
            .find(|(_, t)| is_package_file(t))
        else {
            continue;
        };
        let shown = Path::new("/").join(link.strip_prefix(root).unwrap_or(&link));
        out.push(Registration {
            what: format!("handler {name}: {} -> {}", shown.display(), target.display()),
            undo: format!(
                "userns-hostnet uninstall containerd --handler {name} --config FILE (or crio, podman: with the config file that registered it)"
            ),
        });
    }
    out
}

/// OCI hook files that link to or name a packaged binary.
fn hook_files(root: &Path) -> Vec<Registration> {
    let mut out = Vec::new();
    for dir in hooks_dirs(root) {
        for file in files_in(&under(root, &dir)) {
            let by_link = link_target(&file, root).is_some_and(|t| is_package_file(&t));
            let by_text = std::fs::read_to_string(&file)
                .is_ok_and(|t| PACKAGE_FILES.iter().any(|f| t.contains(f)));
            if !(by_link || by_text) {
                continue;
            }
            let shown = Path::new("/").join(file.strip_prefix(root).unwrap_or(&file));
            out.push(Registration {
                what: format!("OCI hook {}", shown.display()),
                undo: format!(
                    "userns-hostnet uninstall podman --hook --hooks-dir {dir} (or, linked by hand: rm {})",
                    shown.display()
                ),
            });
        }
    }
    out
}

/// A deploy whose state records a packaged binary's path (one into
/// /usr/bin).
fn deploy_state(root: &Path) -> Option<Registration> {
    let bytes = std::fs::read(under(root, DEPLOY_STATE)).ok()?;
    let state = serde_json::from_slice::<super::deploy::undo::State>(&bytes).ok()?;
    state
        .entries
        .iter()
        .any(|e| is_package_file(&e.path))
        .then(|| Registration {
            what: format!("a deploy into /usr/bin ({DEPLOY_STATE})"),
            undo: "userns-hostnet deploy --host-root / --bin-dir /usr/bin --uninstall".into(),
        })
}

/// Containers that still run a packaged binary, through a handler's
/// link or by its name: their daemon runs it again to stop and delete
/// them, whatever its config says by then (an `uninstall --force`, or
/// one made before uninstall checked). containerd's tasks (in the state
/// directory its main config names) and the state the wrapper's CRI-O
/// handlers keep in their own runtime root; podman's running containers
/// whose conmon runs it.
fn containers(root: &Path, handlers_dir: &str) -> Vec<Registration> {
    let Ok(node) = NodeRoot::new(Some(root)) else {
        return Vec::new();
    };
    let files = super::daemon::in_use::NodeFiles(&node);
    let drain = format!(
        "{} (with its handler registered: a container whose handler is gone needs it installed again first)",
        super::daemon::in_use::DRAIN
    );
    daemon::ALL
        .iter()
        .flat_map(|d| d.containers_running(root, &files, &|b| names_package(b, handlers_dir)))
        .map(|(what, undo)| Registration {
            what,
            undo: undo.map_or_else(|| drain.clone(), str::to_owned),
        })
        .collect()
}

/// Run `registrations`: each one a line (what: command), exit 1 when
/// there is any, 0 when none.
pub fn run(json: bool) -> Result<i32, super::AdminError> {
    let found = scan(Path::new("/"), &userns_hostnet::runtime::handlers_dir());
    super::report(json, &found, |found| {
        found
            .iter()
            .map(|r| format!("{}: {}\n", r.what, r.undo))
            .collect()
    })?;
    Ok(i32::from(!found.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HANDLERS: &str = "/etc/userns-hostnet/handlers";

    #[test]
    fn containerd_handler_naming_the_wrapper() {
        let text = r#"version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
BinaryName = "/usr/sbin/runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.uhn.options]
BinaryName = "/usr/bin/userns-hostnet-runtime"
"#;
        assert_eq!(handlers_in(text, HANDLERS), vec!["uhn".to_owned()]);
    }

    #[test]
    fn handler_through_its_link_directory() {
        let text = "[crio.runtime.runtimes.x]\nruntime_path = \"/etc/userns-hostnet/handlers/x/userns-hostnet-runtime\"\n";
        assert_eq!(handlers_in(text, HANDLERS), vec!["x".to_owned()]);
    }

    #[test]
    fn podman_runtime_array() {
        let text = "[engine.runtimes]\nuhn = [\"/usr/bin/userns-hostnet-runtime\"]\nrunc = [\"/usr/bin/runc\"]\n";
        assert_eq!(handlers_in(text, HANDLERS), vec!["uhn".to_owned()]);
    }

    #[test]
    fn a_config_of_other_binaries_is_not_a_registration() {
        let text = "[engine.runtimes]\nuhn = [\"/usr/local/bin/userns-hostnet-runtime\"]\n";
        assert!(handlers_in(text, HANDLERS).is_empty());
        assert!(handlers_in("not = [toml", HANDLERS).is_empty());
    }

    #[test]
    fn scan_finds_links_hooks_and_configs_under_a_root() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        assert!(scan(r, Path::new(HANDLERS)).is_empty());
        let h = r.join("etc/userns-hostnet/handlers/h");
        std::fs::create_dir_all(&h).unwrap();
        std::os::unix::fs::symlink(
            "/usr/bin/userns-hostnet-runtime",
            h.join("userns-hostnet-runtime"),
        )
        .unwrap();
        std::os::unix::fs::symlink("/usr/sbin/runc", h.join("runtime")).unwrap();
        let hooks = r.join("etc/containers/oci/hooks.d");
        std::fs::create_dir_all(&hooks).unwrap();
        std::os::unix::fs::symlink(
            "/usr/share/userns-hostnet/hooks.d/userns-hostnet.json",
            hooks.join("userns-hostnet.json"),
        )
        .unwrap();
        std::fs::write(
            hooks.join("other.json"),
            "{\"hook\":{\"path\":\"/bin/true\"}}",
        )
        .unwrap();
        let found = scan(r, Path::new(HANDLERS));
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(
            found[0].what,
            "handler h: /etc/userns-hostnet/handlers/h/userns-hostnet-runtime -> /usr/bin/userns-hostnet-runtime"
        );
        assert!(found[0].undo.contains("--handler h"), "{}", found[0].undo);
        assert_eq!(
            found[1].what,
            "OCI hook /etc/containers/oci/hooks.d/userns-hostnet.json"
        );

        // A config naming the handler's links: one line, with its file.
        std::fs::create_dir_all(r.join("etc/containerd")).unwrap();
        std::fs::write(
            r.join("etc/containerd/config.toml"),
            "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.h.options]\nBinaryName = \"/etc/userns-hostnet/handlers/h/userns-hostnet-runtime\"\n",
        )
        .unwrap();
        let found = scan(r, Path::new(HANDLERS));
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(
            found[0].undo,
            "userns-hostnet uninstall containerd --handler h --config /etc/containerd/config.toml"
        );
    }

    #[test]
    fn scan_follows_containerd_imports_and_configured_hooks_dirs() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        // An import outside conf.d, which imports another in turn (and
        // itself: a loop ends).
        std::fs::create_dir_all(r.join("etc/containerd")).unwrap();
        std::fs::create_dir_all(r.join("opt/cd/more")).unwrap();
        std::fs::write(
            r.join("etc/containerd/config.toml"),
            "version = 3\nimports = [\"/opt/cd/*.toml\"]\n",
        )
        .unwrap();
        std::fs::write(
            r.join("opt/cd/a.toml"),
            "imports = [\"more/b.toml\", \"/opt/cd/a.toml\"]\n",
        )
        .unwrap();
        std::fs::write(
            r.join("opt/cd/more/b.toml"),
            "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
        )
        .unwrap();
        // A hook in the hooks directory a CRI-O drop-in names.
        std::fs::create_dir_all(r.join("etc/crio/crio.conf.d")).unwrap();
        std::fs::write(
            r.join("etc/crio/crio.conf.d/10-hooks.conf"),
            "[crio.runtime]\nhooks_dir = [\"/srv/hooks\"]\n",
        )
        .unwrap();
        std::fs::create_dir_all(r.join("srv/hooks")).unwrap();
        std::os::unix::fs::symlink(
            "/usr/share/userns-hostnet/hooks.d/userns-hostnet.json",
            r.join("srv/hooks/uhn.json"),
        )
        .unwrap();
        let found = scan(r, Path::new(HANDLERS));
        let what: Vec<&str> = found.iter().map(|f| f.what.as_str()).collect();
        assert_eq!(
            what,
            [
                "containerd handler uhn in /opt/cd/more/b.toml",
                "OCI hook /srv/hooks/uhn.json"
            ]
        );
    }

    #[test]
    fn scan_finds_containers_that_still_run_the_wrapper() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let task = |id: &str, binary: &str| {
            let b = r
                .join("run/containerd/io.containerd.runtime.v2.task/k8s.io")
                .join(id);
            std::fs::create_dir_all(&b).unwrap();
            std::fs::write(
                b.join("options.json"),
                format!("{{\"binary_name\":\"{binary}\"}}"),
            )
            .unwrap();
        };
        task(
            "a1",
            "/etc/userns-hostnet/handlers/h/userns-hostnet-runtime",
        );
        task("b2", "/usr/sbin/runc");
        let crio = r.join("run/userns-hostnet-runtime/c3");
        std::fs::create_dir_all(&crio).unwrap();
        std::fs::write(crio.join("state.json"), "{}").unwrap();
        // podman's: a conmon running the wrapper, and one running runc.
        for (pid, runtime) in [
            ("41", "/usr/bin/userns-hostnet-runtime"),
            ("42", "/usr/bin/runc"),
        ] {
            std::fs::create_dir_all(r.join("proc").join(pid)).unwrap();
            std::fs::write(
                r.join("proc").join(pid).join("cmdline"),
                format!("/usr/bin/conmon\0-c\0d4{pid}\0-r\0{runtime}\0-n\0web\0"),
            )
            .unwrap();
        }
        let found = scan(r, Path::new(HANDLERS));
        let what: Vec<&str> = found.iter().map(|f| f.what.as_str()).collect();
        assert_eq!(
            what,
            [
                "containerd container a1 runs the wrapper",
                "CRI-O container c3 runs the wrapper (its state is in /run/userns-hostnet-runtime)",
                "podman container d441 (web) runs the wrapper (its conmon names it)"
            ]
        );
        assert!(found[0].undo.contains("kubectl drain"), "{}", found[0].undo);
    }
}
