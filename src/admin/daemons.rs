//! Where containerd and CRI-O keep their runtime handlers, shared by
//! `doctor` (is one registered?) and `install` (register one).

use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item};

pub const CONTAINERD_CONFIG: &str = "/etc/containerd/config.toml";
/// The drop-in `install containerd --drop-in` writes, under the directory
/// of the main config file.
pub const CONTAINERD_DROP_IN: &str = "conf.d/99-userns-hostnet.toml";
pub const CRIO_CONFIG: &str = "/etc/crio/crio.conf";
/// The drop-in `install crio` writes, under the directory of crio.conf.
pub const CRIO_DROP_IN: &str = "crio.conf.d/99-userns-hostnet.conf";
/// containerd's runc shim, which runs the runtime named by `BinaryName`.
pub const RUNC_SHIM: &str = "io.containerd.runc.v2";

/// A runtime handler whose runtime binary is the wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    pub name: String,
    pub binary: String,
    pub file: PathBuf,
}

/// Is this runtime binary the wrapper (under any of its names)?
pub fn is_wrapper(binary: &str) -> bool {
    Path::new(binary)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(crate::WRAPPER_NAME))
}

/// The config file's `version`: 1 when absent, as containerd reads it.
pub fn containerd_version(doc: &DocumentMut) -> i64 {
    doc.get("version").and_then(Item::as_integer).unwrap_or(1)
}

/// The keys of the CRI runtime handlers table for a config version.
pub fn containerd_runtimes_path(version: i64) -> Option<[&'static str; 4]> {
    match version {
        1 => Some(["plugins", "cri", "containerd", "runtimes"]),
        2 => Some([
            "plugins",
            "io.containerd.grpc.v1.cri",
            "containerd",
            "runtimes",
        ]),
        3 => Some([
            "plugins",
            "io.containerd.cri.v1.runtime",
            "containerd",
            "runtimes",
        ]),
        _ => None,
    }
}

/// The item at a path of keys.
pub fn dig<'a>(item: &'a Item, path: &[&str]) -> Option<&'a Item> {
    path.iter()
        .try_fold(item, |it, key| it.as_table_like()?.get(key))
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

/// The files a containerd config imports (`imports = [...]`), relative
/// paths resolved against its directory, `*` in a file name expanded;
/// `map` turns an absolute path into where to read it (a test root).
pub fn containerd_imports(
    doc: &DocumentMut,
    config: &Path,
    map: &dyn Fn(&Path) -> PathBuf,
) -> Vec<PathBuf> {
    let Some(list) = doc.get("imports").and_then(Item::as_array) else {
        return Vec::new();
    };
    let dir = config.parent().unwrap_or(Path::new("/"));
    let mut out = Vec::new();
    for entry in list.iter().filter_map(|v| v.as_str()) {
        let p = Path::new(entry);
        let p = if p.is_absolute() { map(p) } else { dir.join(p) };
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !name.contains('*') {
            out.push(p);
            continue;
        }
        let parent = p.parent().unwrap_or(Path::new("/"));
        let mut found: Vec<PathBuf> = std::fs::read_dir(parent)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .filter(|e| glob_match(&name, &e.file_name().to_string_lossy()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        out.extend(found);
    }
    out
}

/// Does `name` match `pattern`, where `*` matches any run of characters?
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(at) => rest = &rest[at + mid.len()..],
            None => return false,
        }
    }
    true
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

/// crio.conf and then the drop-ins of crio.conf.d in name order, as CRI-O
/// reads them; those that exist.
pub fn crio_files(crio_conf: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if crio_conf.is_file() {
        files.push(crio_conf.to_owned());
    }
    let dir = crio_conf
        .parent()
        .unwrap_or(Path::new("/"))
        .join("crio.conf.d");
    let mut drop_ins: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "conf"))
                .collect()
        })
        .unwrap_or_default();
    drop_ins.sort();
    files.extend(drop_ins);
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*.toml", "99-userns-hostnet.toml"));
        assert!(glob_match("99-*-hostnet.toml", "99-userns-hostnet.toml"));
        assert!(!glob_match("*.toml", "x.conf"));
        assert!(glob_match("a", "a"));
        assert!(!glob_match("a*a", "a"));
    }

    #[test]
    fn wrapper_names() {
        assert!(is_wrapper("/usr/bin/userns-hostnet-runtime"));
        assert!(is_wrapper("userns-hostnet-runtime-crun"));
        assert!(!is_wrapper("/usr/sbin/runc"));
    }
}
