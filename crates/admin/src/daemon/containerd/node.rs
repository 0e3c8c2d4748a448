//! Where containerd lives on a node and what needs the node to read: its
//! config's and socket's paths, the handlers and imports of its config
//! files, its binary's version, and what containerd 1.x's merge of imports
//! throws away. The pure edits are in [`super`].

use super::runtimes_path;
use crate::daemon::config::{dig, leaf_keys, Layout};
use crate::daemon::node::Handler;
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item};

pub const CONFIG: &str = "/etc/containerd/config.toml";

/// The daemons' CRI sockets at their packaged places.
pub const SOCKET: &str = "/run/containerd/containerd.sock";

/// The drop-in `install containerd --drop-in` writes, under the directory
/// of the main config file.
pub const DROP_IN: &str = "conf.d/99-userns-hostnet.toml";

/// The handlers of one containerd config document that run the wrapper.
/// A drop-in without `version` is read with `default_version`.
pub fn handlers(doc: &DocumentMut, file: &Path, default_version: i64) -> Vec<Handler> {
    let version = doc
        .get("version")
        .and_then(Item::as_integer)
        .unwrap_or(default_version);
    let layout = runtimes_path(version).map(|path| Layout {
        runtimes: path.to_vec(),
        binary: super::BINARY,
        default: None,
    });
    layout.map_or_else(Vec::new, |l| Handler::running_wrapper(&l, doc, file))
}

/// The names of every CRI runtime handler of one containerd config
/// document (read with `default_version` when it has no `version`).
pub fn handler_names(doc: &DocumentMut, default_version: i64) -> Vec<String> {
    let version = doc
        .get("version")
        .and_then(Item::as_integer)
        .unwrap_or(default_version);
    runtimes_path(version)
        .and_then(|p| dig(doc.as_item(), &p))
        .and_then(Item::as_table_like)
        .map(|t| t.iter().map(|(k, _)| k.to_owned()).collect())
        .unwrap_or_default()
}

/// The files a containerd config imports (`imports = [...]`), as (the
/// node's path, where to read it): relative paths resolved against the
/// directory of `config` as containerd was given it (the node's path, a
/// link's own directory when it is one), `*` in a file name expanded;
/// `map` turns a node's path into where to read it (under a root, links
/// followed inside it).
pub fn imports<E>(
    doc: &DocumentMut,
    config: &Path,
    map: &dyn Fn(&Path) -> Result<PathBuf, E>,
) -> Result<Vec<(PathBuf, PathBuf)>, E> {
    let Some(list) = doc.get("imports").and_then(Item::as_array) else {
        return Ok(Vec::new());
    };
    let dir = config.parent().unwrap_or(Path::new("/"));
    let mut out = Vec::new();
    for entry in list.iter().filter_map(|v| v.as_str()) {
        let p = dir.join(entry);
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !name.contains('*') {
            out.push((p.clone(), map(&p)?));
            continue;
        }
        let parent = p.parent().unwrap_or(Path::new("/"));
        let mut found: Vec<PathBuf> = std::fs::read_dir(map(parent)?)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .filter(|e| {
                        glob::Pattern::new(&name)
                            .is_ok_and(|g| g.matches(&e.file_name().to_string_lossy()))
                    })
                    .map(|e| parent.join(e.file_name()))
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        for node in found {
            let here = map(&node)?;
            out.push((node, here));
        }
    }
    Ok(out)
}

/// The version of the containerd binary `bin` (a path, or a name looked up
/// in PATH), by running `bin --version`.
pub fn binary_version(bin: &Path) -> Option<(u64, u64)> {
    let deadline = std::time::Instant::now() + userns_hostnet::probe::PROBE_TIMEOUT;
    let out = userns_hostnet::sys::deadline::run(bin, "--version", deadline).ok()?;
    if !out.status.success() {
        return None;
    }
    crate::matrix::parse_containerd_version(&String::from_utf8_lossy(&out.stdout))
        .map(|(major, minor, _)| (major, minor))
}

/// The plugin table an import replaced whole, as containerd before 2.0
/// merges imports: a plugin's table in a later file takes the place of the
/// earlier one, key by key nothing is kept (containerd 1.7's `mergeConfig`
/// assigns `to.Plugins[k] = from.Plugins[k]`; 2.0 merges them deeply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clobber {
    pub import: PathBuf,
    pub plugin: String,
    /// The settings of the earlier files that are lost (dotted keys).
    pub lost: Vec<String>,
}

/// The plugin tables of containerd config files, in the order containerd
/// loads them (the main file, then its imports), merged as containerd
/// before 2.0 does; the settings each import throws away.
pub fn clobbers_1x(files: &[(PathBuf, DocumentMut)]) -> Vec<Clobber> {
    let mut plugins: Vec<(String, Item)> = Vec::new();
    let mut out = Vec::new();
    for (file, doc) in files {
        let Some(table) = doc.get("plugins").and_then(Item::as_table_like) else {
            continue;
        };
        for (name, new) in table.iter() {
            if let Some(at) = plugins.iter().position(|(n, _)| n == name) {
                let (mut old_keys, mut new_keys) = (Vec::new(), Vec::new());
                leaf_keys(&plugins[at].1, "", &mut old_keys);
                leaf_keys(new, "", &mut new_keys);
                let lost: Vec<String> = old_keys
                    .into_iter()
                    .filter(|k| !new_keys.contains(k))
                    .collect();
                if !lost.is_empty() {
                    out.push(Clobber {
                        import: file.clone(),
                        plugin: name.to_owned(),
                        lost,
                    });
                }
                plugins[at].1 = new.clone();
            } else {
                plugins.push((name.to_owned(), new.clone()));
            }
        }
    }
    out
}

/// The CRI plugin's key in a config of this version.
pub fn cri_plugin(version: i64) -> Option<&'static str> {
    runtimes_path(version).map(|p| p[1])
}

/// k3s or RKE2, when `config` is in the directory where either generates
/// containerd's config (`/var/lib/rancher/k3s/agent/etc/containerd/`, the
/// same under `rke2`; any data dir whose last parts match).
pub fn rancher_distro(config: &Path) -> Option<&'static str> {
    let dir = config.parent()?;
    let parts: Vec<&str> = dir.iter().filter_map(|c| c.to_str()).collect();
    match parts.as_slice() {
        [.., "agent", "etc", "containerd"] => {
            let text = dir.to_string_lossy();
            if text.contains("/rancher/rke2/") || text.contains("/rke2/agent/") {
                Some("rke2")
            } else if text.contains("/rancher/k3s/") || text.contains("/k3s/agent/") {
                Some("k3s")
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Where containerd reads drop-ins when its config imports them.
pub const DROP_INS: &str = "/etc/containerd/conf.d";

/// Enough for any real chain of containerd imports; a loop stops here.
const MAX_CONFIG_FILES: usize = 256;

/// The files containerd reads under `root` (plain joins, its links
/// followed inside it): its config, conf.d, and what `imports` names
/// wherever it is, and what those files import in turn.
pub fn read_files(root: &Path) -> Vec<PathBuf> {
    use crate::daemon::node::{main_and_drop_ins, under};
    let mut files = main_and_drop_ins(root, CONFIG, DROP_INS);
    let mut at = 0;
    while at < files.len() && files.len() < MAX_CONFIG_FILES {
        let imported = std::fs::read_to_string(&files[at])
            .ok()
            .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
            .and_then(|doc| {
                let node = Path::new("/").join(files[at].strip_prefix(root).ok()?);
                imports(&doc, &node, &|p| {
                    Ok::<_, std::convert::Infallible>(under(root, &p.to_string_lossy()))
                })
                .ok()
            })
            .unwrap_or_default();
        for (_, f) in imported {
            if !files.contains(&f) {
                files.push(f);
            }
        }
        at += 1;
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1x_import_loses_what_its_plugin_table_lacks() {
        let doc = |t: &str| t.parse::<DocumentMut>().unwrap();
        let files = vec![
            (
                PathBuf::from("/main"),
                doc("[plugins.cri]\nsandbox_image = \"p\"\n[plugins.cri.cni]\nbin_dir = \"/b\"\n[plugins.other]\nx = 1\n"),
            ),
            (
                PathBuf::from("/a"),
                doc("[plugins.cri]\nsandbox_image = \"q\"\n[plugins.cri.runtimes.h]\nt = 1\n"),
            ),
            (PathBuf::from("/b"), doc("[plugins.more]\ny = 1\n")),
        ];
        assert_eq!(
            clobbers_1x(&files),
            vec![Clobber {
                import: PathBuf::from("/a"),
                plugin: "cri".into(),
                lost: vec!["cni.bin_dir".into()],
            }]
        );
    }
}
