//! podman's runtimes: `[engine.runtimes] NAME = [paths...]` in
//! containers.conf (podman tries the paths in order and runs the first
//! that exists), `[engine] runtime` naming the default. install adds an
//! entry running the wrapper; its real runtime is the one podman ran for
//! the default runtime, a custom path (`runc = ["/opt/runc/runc-custom"]`)
//! included.

pub mod live;
pub mod node;
pub mod plan;

use super::config::{
    dig, dig_table_mut, fingerprint, marker_in, marker_line, owner_by_marker, table_at, EditError,
    Owner,
};
use super::node::string_list;
use super::register::edit::InstallPlan;
use super::register::error::{InstallError, UsageError};
use super::register::Registration;
use std::path::{Path, PathBuf};
use toml_edit::{Array, DocumentMut, Item, Table, Value};

pub const RUNTIMES: &[&str] = &["engine", "runtimes"];
/// podman's default runtime when no file sets `[engine] runtime`.
pub const BUILTIN_DEFAULT: &str = "crun";

/// Who the entry `name` belongs to: install's marker is the comment line
/// above its key.
pub fn owner(doc: &DocumentMut, name: &str) -> Option<Owner> {
    let runtimes = dig(doc.as_item(), RUNTIMES)?.as_table()?;
    let (key, item) = runtimes.get_key_value(name)?;
    let prefix = key.leaf_decor().prefix().and_then(|p| p.as_str());
    Some(owner_by_marker(prefix.and_then(marker_in), || {
        fingerprint(item)
    }))
}

/// Does the entry `name` (a list of paths podman tries in order) run the
/// wrapper?
pub fn runs_wrapper(doc: &DocumentMut, name: &str) -> bool {
    dig(doc.as_item(), &["engine", "runtimes", name])
        .and_then(Item::as_array)
        .and_then(|a| a.iter().next())
        .and_then(|v| v.as_str())
        .is_some_and(super::config::is_wrapper)
}

/// The comment line below the marker when install made the
/// `[engine.runtimes]` header for its entry: uninstall removes the header
/// only then. A table that was there before install (podman's shipped
/// containers.conf has one holding only comments) stays, its comments
/// with it.
pub const TABLE_MADE: &str = "# and the [engine.runtimes] header above, which it added\n";

/// Add the marked entry `name = [binary]`.
pub fn add(doc: &mut DocumentMut, name: &str, binary: &str) -> Result<(), EditError> {
    let mut list = Array::new();
    list.push(binary);
    let item = Item::Value(Value::Array(list));
    let fp = fingerprint(&item);
    // An implicit table prints no header until it holds a key.
    let made = dig(doc.as_item(), RUNTIMES)
        .and_then(Item::as_table)
        .map_or(true, Table::is_implicit);
    let runtimes = table_at(doc.as_table_mut(), RUNTIMES)?;
    runtimes.insert(name, item);
    if let Some(mut key) = runtimes.key_mut(name) {
        let mut prefix = marker_line(fp, "userns-hostnet uninstall podman");
        if made {
            prefix.push_str(TABLE_MADE);
        }
        key.leaf_decor_mut().set_prefix(prefix);
    }
    Ok(())
}

/// Remove the entry `name`; the `[engine.runtimes]` header goes with it
/// only when install made it (or it prints none anyway).
pub fn remove(doc: &mut DocumentMut, name: &str) {
    let Some(t) = dig_table_mut(doc, RUNTIMES) else {
        return;
    };
    let made = t
        .get_key_value(name)
        .and_then(|(k, _)| k.leaf_decor().prefix())
        .and_then(|p| p.as_str())
        .is_some_and(|p| p.contains(TABLE_MADE));
    t.remove(name);
    if t.is_empty() && made {
        t.set_implicit(true);
    }
}

/// The runtime podman runs by default, read from its containers.conf
/// files in order (the last setting wins): its name, and the paths its
/// `[engine.runtimes]` entry lists (empty: podman's built-in list, which
/// finds the name in the usual bin directories), with where they were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub name: String,
    pub paths: Vec<String>,
    pub file: Option<PathBuf>,
}

pub fn source(files: &[(PathBuf, DocumentMut)], own: &str) -> Source {
    let mut out = Source {
        name: BUILTIN_DEFAULT.to_owned(),
        paths: Vec::new(),
        file: None,
    };
    for (_, doc) in files {
        if let Some(r) = dig(doc.as_item(), &["engine", "runtime"]).and_then(Item::as_str) {
            out.name = r.to_owned();
        }
    }
    if out.name == own {
        // The wrapper made the default by hand: its real runtime is the
        // wrapper's choice.
        out.name = BUILTIN_DEFAULT.to_owned();
    }
    for (file, doc) in files {
        if let Some(list) =
            dig(doc.as_item(), &["engine", "runtimes", &out.name]).and_then(string_list)
        {
            out.paths = list;
            out.file = Some(file.clone());
        }
    }
    out
}

impl Source {
    /// The path podman runs: the first of the entry's paths that exists
    /// (`exists` tells), `None` when the entry lists none that does (the
    /// name is then looked up as podman does, in PATH).
    pub fn runtime(&self, exists: &dyn Fn(&str) -> bool) -> Option<String> {
        self.paths.iter().find(|p| exists(p)).cloned()
    }
}

/// The `[engine] hooks_dir` list of one containers.conf document.
pub fn hooks_dirs(doc: &DocumentMut) -> Option<Vec<String>> {
    dig(doc.as_item(), &["engine", "hooks_dir"]).and_then(string_list)
}

/// The table holding the entries.
pub fn runtimes(doc: &DocumentMut) -> Option<&Table> {
    dig(doc.as_item(), RUNTIMES)?.as_table()
}

/// podman, as the commands ask it.
pub struct Podman;

impl super::DaemonModule for Podman {
    fn name(&self) -> &'static str {
        "podman"
    }

    fn plan(&self, args: &Registration, install: bool) -> Result<InstallPlan, InstallError> {
        if args.set_as_default {
            return Err(UsageError::PodmanDefault(args.handler.clone()).into());
        }
        plan::plan(args, install)
    }

    fn registers(&self) -> &'static str {
        "podman runtime"
    }

    fn without_restart(&self, handler: &str, install: bool) -> Option<String> {
        Some(format!(
            "podman reads containers.conf at every command: no restart needed{}",
            if install {
                format!("; run containers with podman --runtime {handler}")
            } else {
                String::new()
            }
        ))
    }

    fn hooks(&self) -> Option<super::HooksLookup> {
        Some(plan::hook_dirs)
    }

    fn hooks_dirs_under(&self, root: &Path) -> Vec<String> {
        self.config_files(root)
            .into_iter()
            .filter_map(|f| userns_hostnet::sys::toml::read(&f).ok())
            .filter_map(|doc| hooks_dirs(&doc))
            .flatten()
            .collect()
    }

    fn containers_running(
        &self,
        _root: &Path,
        files: &dyn super::live::Files,
        runs: &dyn Fn(&str) -> bool,
    ) -> Vec<(String, Option<&'static str>)> {
        live::live_conmons(files, runs)
            .into_iter()
            .map(|c| {
                (
                    format!("podman container {c} runs the wrapper (its conmon names it)"),
                    Some("podman stop ID && podman rm ID (with the runtime still registered)"),
                )
            })
            .collect()
    }

    fn in_use(
        &self,
        _args: &Registration,
        removed: &[Item],
        links: Vec<String>,
    ) -> Result<Option<Box<dyn super::live::Handler>>, InstallError> {
        let mut binaries = links;
        binaries.extend(removed.iter().filter_map(string_list).flatten());
        binaries.sort();
        binaries.dedup();
        Ok((!binaries.is_empty())
            .then(|| Box::new(live::Conmons { binaries }) as Box<dyn super::live::Handler>))
    }
    // doctor has no check of podman: it registers no CRI handler (the
    // trait's default, no check).

    fn handler_entry(&self, doc: &DocumentMut, name: &str) -> Option<Item> {
        runtimes(doc)?.get(name).cloned()
    }

    fn config_files(&self, root: &Path) -> Vec<PathBuf> {
        super::node::main_and_drop_ins(root, node::CONFIG, node::DROP_INS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_path_is_the_real_runtime() {
        let f: Vec<(PathBuf, DocumentMut)> = vec![
            (PathBuf::from("/usr/share/containers/containers.conf"), "[engine]\nruntime = \"crun\"\n".parse().unwrap()),
            (
                PathBuf::from("/etc/containers/containers.conf"),
                "[engine]\nruntime = \"runc\"\n[engine.runtimes]\nrunc = [\"/opt/x/runc-custom\", \"/usr/sbin/runc\"]\n".parse().unwrap(),
            ),
        ];
        let s = source(&f, "userns-hostnet");
        assert_eq!(s.name, "runc");
        assert_eq!(
            s.runtime(&|p| p == "/opt/x/runc-custom").as_deref(),
            Some("/opt/x/runc-custom")
        );
        assert_eq!(
            s.runtime(&|p| p == "/usr/sbin/runc").as_deref(),
            Some("/usr/sbin/runc")
        );
        assert_eq!(s.runtime(&|_| false), None);
    }

    #[test]
    fn add_then_remove_is_byte_for_byte() {
        for text in [
            "",
            "# mine\n[engine]\ncgroup_manager = \"systemd\"\n",
            "[engine.runtimes]\nkata = [\"/k\"]\n",
        ] {
            let mut doc: DocumentMut = text.parse().unwrap();
            add(&mut doc, "uhn", "/usr/bin/userns-hostnet-runtime").unwrap();
            let added = doc.to_string();
            let mut doc2: DocumentMut = added.parse().unwrap();
            assert_eq!(owner(&doc2, "uhn"), Some(Owner::Install), "{added}");
            assert!(runs_wrapper(&doc2, "uhn"));
            remove(&mut doc, "uhn");
            assert_eq!(doc.to_string(), text);
            // As uninstall sees it: the file install wrote, read again.
            remove(&mut doc2, "uhn");
            assert_eq!(doc2.to_string(), text);
        }
    }

    #[test]
    fn a_table_of_comments_install_did_not_make_stays() {
        // podman's shipped containers.conf: [engine] and [engine.runtimes]
        // hold only comments.
        let text = "[containers]\n# [engine] comments\n[engine]\n# runtime = \"crun\"\n\n# The runtimes\n[engine.runtimes]\n#runc = [\"/usr/bin/runc\"]\n\n[engine.volume_plugins]\n";
        let mut doc: DocumentMut = text.parse().unwrap();
        add(&mut doc, "uhn", "/usr/bin/userns-hostnet-runtime").unwrap();
        let added = doc.to_string();
        assert!(!added.contains(TABLE_MADE), "{added}");
        let mut doc: DocumentMut = added.parse().unwrap();
        remove(&mut doc, "uhn");
        assert_eq!(doc.to_string(), text);
    }
}
