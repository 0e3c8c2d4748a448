//! What the daemons share of reading a node: a handler found running the
//! wrapper, the host's process IDs, drop-in directories and hooks
//! directories. Each daemon's own readings are in its `node.rs`.

use crate::daemon::config::Layout;
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item};
use userns_hostnet::sys::in_root::NodeRoot;

/// A runtime handler whose runtime binary is the wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    pub name: String,
    pub binary: String,
    pub file: PathBuf,
}

impl Handler {
    /// The handlers of `doc`, read from `file`, that run the wrapper.
    pub fn running_wrapper(layout: &Layout, doc: &DocumentMut, file: &Path) -> Vec<Handler> {
        let found = crate::daemon::config::wrapper_handlers(layout, doc).into_iter();
        found
            .map(|(name, binary)| Handler {
                name,
                binary,
                file: file.to_owned(),
            })
            .collect()
    }
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

/// Does `pattern`, a path glob as containerd expands an `imports` entry
/// (Go's filepath.Glob) and logrotate a stanza's path (glob(3)): `*` and
/// `?` never cross a `/`, name `path`?
pub fn glob_covers(pattern: &str, path: &str) -> bool {
    let opts = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    glob::Pattern::new(pattern).is_ok_and(|p| p.matches_with(path, opts))
}

/// The file `name` (a relative path) in the directory of `config`.
pub fn beside(config: &Path, name: &str) -> PathBuf {
    config.parent().unwrap_or(Path::new("/")).join(name)
}

/// A `hooks_dir` list, as CRI-O and podman write it.
pub fn string_list(item: &Item) -> Option<Vec<String>> {
    Some(
        item.as_array()?
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
    )
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

/// The `*.conf` files of the node's drop-in directory `dir`, in the order
/// the daemons (CRI-O, podman) read them: sorted by name; none when it
/// cannot be read. `map` says where a node's path is read.
pub fn conf_drop_ins<E>(
    dir: &Path,
    map: &dyn Fn(&Path) -> Result<PathBuf, E>,
) -> Result<Vec<PathBuf>, E> {
    let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(map(dir)?)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name())
                .filter(|n| Path::new(n).extension().is_some_and(|e| e == "conf"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.iter().map(|n| map(&dir.join(n))).collect()
}

/// Where the node's `path` is read under `root`, its links followed
/// inside the root ([`NodeRoot`]); one that cannot be resolved there comes
/// back as a name no file has (the scan reads what it can).
pub fn under(root: &Path, path: &str) -> PathBuf {
    NodeRoot::new(Some(root))
        .ok()
        .and_then(|n| n.file(Path::new(path)).ok())
        .unwrap_or_else(|| PathBuf::from(format!("{path} (unresolved)")))
}

/// A config file and the files of its drop-in directory, as host paths
/// under `root`: the main file first.
pub fn main_and_drop_ins(root: &Path, config: &str, drop_ins: &str) -> Vec<PathBuf> {
    let mut files = vec![under(root, config)];
    files.extend(files_in(&under(root, drop_ins)));
    files
}

/// Regular files (or links to them) directly in `dir`, sorted.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() || p.is_symlink())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}
