//! Where CRI-O lives on a node and what needs the node to read: its
//! config's and socket's paths, its drop-ins, the handlers of its config
//! files and its hooks directories. The pure edits are in [`super`].

use crate::daemon::config::dig;
use crate::daemon::node::{conf_drop_ins, string_list};
use std::path::{Path, PathBuf};

pub const CONFIG: &str = "/etc/crio/crio.conf";

/// Its CRI socket at its packaged place.
pub const SOCKET: &str = "/run/crio/crio.sock";

/// CRI-O's drop-in directory beside crio.conf.
pub const DROP_INS: &str = "/etc/crio/crio.conf.d";

/// The drop-in `install crio` writes, under the directory of crio.conf.
pub const DROP_IN: &str = "crio.conf.d/99-userns-hostnet.conf";

/// The drop-in `install crio --hook` writes when no file sets CRI-O's
/// hooks_dir, adding the administrator's hooks directory to it.
pub const HOOKS_DROP_IN: &str = "crio.conf.d/98-userns-hostnet-hooks.conf";

/// Where CRI-O looks for hook definitions when its config names no
/// `hooks_dir` (`crio config` prints it; /etc/containers/oci/hooks.d is
/// not among them).
pub const DEFAULT_HOOKS_DIRS: [&str; 1] = ["/usr/share/containers/oci/hooks.d"];

/// crio.conf (the node's `crio_conf`) and then the drop-ins of the
/// crio.conf.d beside it in name order, as CRI-O reads them; those that
/// exist, where `map` says to read them (under a root, links followed
/// inside it).
pub fn files<E>(
    crio_conf: &Path,
    map: &dyn Fn(&Path) -> Result<PathBuf, E>,
) -> Result<Vec<PathBuf>, E> {
    let mut files = Vec::new();
    let conf = map(crio_conf)?;
    if conf.is_file() {
        files.push(conf);
    }
    let dir = crate::daemon::node::beside(crio_conf, "crio.conf.d");
    files.extend(conf_drop_ins(&dir, map)?);
    Ok(files)
}

/// CRI-O's `[crio.runtime] hooks_dir` as it reads its `files` (those of
/// [`files`]: crio.conf, then the drop-ins in name order, the last
/// setting winning), one drop-in (`except`) left out; `None` when none
/// sets it.
pub fn hooks_dirs(
    files: &[PathBuf],
    except: Option<&Path>,
) -> Result<Option<Vec<String>>, userns_hostnet::sys::toml::TomlError> {
    let mut dirs = None;
    for file in files {
        if Some(file.as_path()) == except {
            continue;
        }
        let doc = userns_hostnet::sys::toml::read(file)?;
        if let Some(list) =
            dig(doc.as_item(), &["crio", "runtime", "hooks_dir"]).and_then(string_list)
        {
            dirs = Some(list);
        }
    }
    Ok(dirs)
}
