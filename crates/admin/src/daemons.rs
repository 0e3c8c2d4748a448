//! Where containerd and CRI-O keep their runtime handlers, shared by
//! `doctor` (is one registered?) and `install` (register one): the paths
//! and sockets of the daemons, and the readings that need the host (files
//! in a directory, a daemon binary's version). The pure edits are in
//! [`super::daemon`].

pub use super::daemon::containerd::{
    cri_disabled as containerd_cri_disabled, runtimes_path as containerd_runtimes_path,
    version as containerd_version, RUNC_SHIM,
};
use super::daemon::leaf_keys;
pub use super::daemon::{dig, is_wrapper};
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item};

pub const CONTAINERD_CONFIG: &str = "/etc/containerd/config.toml";
/// The daemons' CRI sockets at their packaged places.
pub const CONTAINERD_SOCKET: &str = "/run/containerd/containerd.sock";
pub const CRIO_SOCKET: &str = "/run/crio/crio.sock";
/// The drop-in `install containerd --drop-in` writes, under the directory
/// of the main config file.
pub const CONTAINERD_DROP_IN: &str = "conf.d/99-userns-hostnet.toml";
pub const CRIO_CONFIG: &str = "/etc/crio/crio.conf";
/// The drop-in `install crio` writes, under the directory of crio.conf.
pub const CRIO_DROP_IN: &str = "crio.conf.d/99-userns-hostnet.conf";
/// The drop-in `install crio --hook` writes when no file sets CRI-O's
/// hooks_dir, adding the administrator's hooks directory to it.
pub const CRIO_HOOKS_DROP_IN: &str = "crio.conf.d/98-userns-hostnet-hooks.conf";

/// A runtime handler whose runtime binary is the wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    pub name: String,
    pub binary: String,
    pub file: PathBuf,
}

/// The handlers of one containerd config document that run the wrapper.
/// A drop-in without `version` is read with `default_version`.
pub fn containerd_handlers(doc: &DocumentMut, file: &Path, default_version: i64) -> Vec<Handler> {
    let version = doc
        .get("version")
        .and_then(Item::as_integer)
        .unwrap_or(default_version);
    let Some(path) = containerd_runtimes_path(version) else {
        return Vec::new();
    };
    let Some(runtimes) = dig(doc.as_item(), &path).and_then(Item::as_table_like) else {
        return Vec::new();
    };
    runtimes
        .iter()
        .filter_map(|(name, h)| {
            let binary = dig(h, &["options", "BinaryName"])?.as_str()?;
            is_wrapper(binary).then(|| Handler {
                name: name.to_owned(),
                binary: binary.to_owned(),
                file: file.to_owned(),
            })
        })
        .collect()
}

/// The names of every CRI runtime handler of one containerd config
/// document (read with `default_version` when it has no `version`).
pub fn containerd_handler_names(doc: &DocumentMut, default_version: i64) -> Vec<String> {
    let version = doc
        .get("version")
        .and_then(Item::as_integer)
        .unwrap_or(default_version);
    containerd_runtimes_path(version)
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
pub fn containerd_imports<E>(
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

/// The process IDs under `proc` (the host's /proc, or where a test maps
/// it), in increasing order: the order doctor looks for a process in.
pub fn process_ids(proc: &Path) -> Option<Vec<u32>> {
    let mut pids: Vec<u32> = std::fs::read_dir(proc)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    Some(pids)
}

/// The version of the containerd binary `bin` (a path, or a name looked up
/// in PATH), by running `bin --version`.
pub fn containerd_binary_version(bin: &Path) -> Option<(u64, u64)> {
    let deadline = std::time::Instant::now() + crate::probe::PROBE_TIMEOUT;
    let out = crate::sys::deadline::run(bin, "--version", deadline).ok()?;
    if !out.status.success() {
        return None;
    }
    super::matrix::parse_containerd_version(&String::from_utf8_lossy(&out.stdout))
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
pub fn containerd_1x_clobbers(files: &[(PathBuf, DocumentMut)]) -> Vec<Clobber> {
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
pub fn containerd_cri_plugin(version: i64) -> Option<&'static str> {
    containerd_runtimes_path(version).map(|p| p[1])
}

/// The CRI-O handlers of one config file that run the wrapper:
/// `[crio.runtime.runtimes.NAME] runtime_path = ...`.
pub fn crio_handlers(doc: &DocumentMut, file: &Path) -> Vec<Handler> {
    let Some(runtimes) =
        dig(doc.as_item(), &["crio", "runtime", "runtimes"]).and_then(Item::as_table_like)
    else {
        return Vec::new();
    };
    runtimes
        .iter()
        .filter_map(|(name, h)| {
            let binary = dig(h, &["runtime_path"])?.as_str()?;
            is_wrapper(binary).then(|| Handler {
                name: name.to_owned(),
                binary: binary.to_owned(),
                file: file.to_owned(),
            })
        })
        .collect()
}

/// crio.conf (the node's `crio_conf`) and then the drop-ins of the
/// crio.conf.d beside it in name order, as CRI-O reads them; those that
/// exist, where `map` says to read them (under a root, links followed
/// inside it).
pub fn crio_files<E>(
    crio_conf: &Path,
    map: &dyn Fn(&Path) -> Result<PathBuf, E>,
) -> Result<Vec<PathBuf>, E> {
    let mut files = Vec::new();
    let conf = map(crio_conf)?;
    if conf.is_file() {
        files.push(conf);
    }
    let dir = crio_conf
        .parent()
        .unwrap_or(Path::new("/"))
        .join("crio.conf.d");
    for here in sorted_conf_files(&map(&dir)?) {
        if let Some(name) = here.file_name() {
            files.push(map(&dir.join(name))?);
        }
    }
    Ok(files)
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

/// podman's system-wide containers.conf, which `install podman` edits.
pub const PODMAN_CONFIG: &str = "/etc/containers/containers.conf";
/// The vendor's containers.conf, which podman reads first.
pub const PODMAN_VENDOR_CONFIG: &str = "/usr/share/containers/containers.conf";
/// Where CRI-O looks for hook definitions when its config names no
/// `hooks_dir` (`crio config` prints it; /etc/containers/oci/hooks.d is
/// not among them).
pub const CRIO_DEFAULT_HOOKS_DIRS: [&str; 1] = ["/usr/share/containers/oci/hooks.d"];
/// Where podman looks for hook definitions when containers.conf names no
/// `hooks_dir`.
pub const PODMAN_DEFAULT_HOOKS_DIRS: [&str; 2] = [
    "/usr/share/containers/oci/hooks.d",
    "/etc/containers/oci/hooks.d",
];

/// A `hooks_dir` list, as CRI-O and podman write it.
fn string_list(item: &Item) -> Option<Vec<String>> {
    Some(
        item.as_array()?
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
    )
}

/// CRI-O's `[crio.runtime] hooks_dir` as it reads its `files` (those of
/// [`crio_files`]: crio.conf, then the drop-ins in name order, the last
/// setting winning), one drop-in (`except`) left out; `None` when none
/// sets it.
pub fn crio_hooks_dirs(
    files: &[PathBuf],
    except: Option<&Path>,
) -> Result<Option<Vec<String>>, crate::sys::toml::TomlError> {
    let mut dirs = None;
    for file in files {
        if Some(file.as_path()) == except {
            continue;
        }
        let doc = crate::sys::toml::read(file)?;
        if let Some(list) =
            dig(doc.as_item(), &["crio", "runtime", "hooks_dir"]).and_then(string_list)
        {
            dirs = Some(list);
        }
    }
    Ok(dirs)
}

/// podman's `[engine] hooks_dir` in one containers.conf document.
pub fn podman_hooks_dirs(doc: &DocumentMut) -> Option<Vec<String>> {
    dig(doc.as_item(), &["engine", "hooks_dir"]).and_then(string_list)
}

/// The directory of a hooks_dir list that install writes to: the first
/// under /etc (the administrator's, which masks a same-named file under
/// /usr/share), else the first.
pub fn hooks_dir_to_write(dirs: &[String]) -> Option<PathBuf> {
    dirs.iter()
        .find(|d| d.starts_with("/etc/"))
        .or_else(|| dirs.first())
        .map(PathBuf::from)
}

/// The `*.conf` files of a drop-in directory, in the order the daemons
/// (CRI-O, podman) read them: sorted by name; none when it cannot be read.
pub fn sorted_conf_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "conf"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
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
            containerd_1x_clobbers(&files),
            vec![Clobber {
                import: PathBuf::from("/a"),
                plugin: "cri".into(),
                lost: vec!["cni.bin_dir".into()],
            }]
        );
    }
}
