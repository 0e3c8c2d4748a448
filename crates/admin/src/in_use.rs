//! Whether a runtime handler still has containers on the node: the check
//! `uninstall`, deploy's removal and `registrations` share. A daemon
//! stops and deletes a container by running its handler's runtime again,
//! so taking the handler away (its table, its links) under a running pod
//! leaves a container nothing can stop (containerd: `fork/exec ...: no
//! such file or directory`; CRI-O: `failed to find runtime handler`).
//!
//! Where each daemon keeps its containers is its own module's knowledge
//! (`daemon::containerd::live_tasks`, `daemon::crio::live_of_handler`);
//! this module reads the node's files for them, under `--root` or a
//! deploy's host root, and words the refusal.

use crate::daemon::live::{Files, Live};
use crate::daemon::{containerd, crio};
use crate::sys::in_root::NodeRoot;
use std::path::{Path, PathBuf};

/// The node's files, read through its root ([`NodeRoot`]).
pub struct NodeFiles<'a>(pub &'a NodeRoot);

impl Files for NodeFiles<'_> {
    fn read(&self, node: &Path) -> Option<String> {
        std::fs::read_to_string(self.0.file(node).ok()?).ok()
    }

    fn list(&self, node_dir: &Path) -> Vec<String> {
        let Ok(dir) = self.0.file(node_dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

/// What tells a handler's containers apart, per daemon, as the node
/// names its paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handler {
    /// containerd: its state directory, and the runtime binaries the
    /// handler names (its link; a handler naming the wrapper itself
    /// shares that binary with any other handler that does, whose
    /// containers then count too).
    Containerd {
        state: PathBuf,
        binaries: Vec<String>,
    },
    /// CRI-O: its run root, the handler's `runtime_root`, its name, and
    /// whether it is CRI-O's default handler.
    Crio {
        runroot: PathBuf,
        runtime_root: Option<PathBuf>,
        name: String,
        default: bool,
    },
}

/// The containers of `handler` on the node under `root`.
pub fn containers(root: &NodeRoot, handler: &Handler) -> Vec<Live> {
    let files = NodeFiles(root);
    match handler {
        Handler::Containerd { state, binaries } => {
            containerd::live_tasks(&files, state, &|b| binaries.iter().any(|o| o == b))
        }
        Handler::Crio {
            runroot,
            runtime_root,
            name,
            default,
        } => crio::live_of_handler(&files, runroot, runtime_root.as_deref(), name, *default),
    }
}

/// The containers, one after the other, for a line.
pub fn listing(containers: &[Live]) -> String {
    containers
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What to do about them: the same advice wherever it is given.
pub const DRAIN: &str = "drain the node (kubectl drain NODE --ignore-daemonsets --delete-emptydir-data) or stop and remove them (crictl stop ID && crictl rm ID; a pod: crictl stopp ID && crictl rmp ID)";

/// A handler that still has containers: uninstall's refusal.
#[derive(Debug, thiserror::Error)]
#[error("runtime handler {handler} still has {n} container(s) on this node: {list}; removing it now would leave them impossible to stop (the daemon runs the handler's runtime to stop and delete each): {DRAIN}, then run uninstall again (--force removes it anyway and strands them)", n = containers.len(), list = listing(containers))]
pub struct InUse {
    pub handler: String,
    pub containers: Vec<Live>,
}

impl InUse {
    /// The warning of `uninstall --force`: what it strands.
    pub fn forced(&self) -> String {
        format!(
            "warning: --force: {n} container(s) of runtime handler {h} are stranded: {list}; the daemon cannot stop or delete them until the handler is installed again (userns-hostnet install ... --handler {h}); `userns-hostnet registrations` lists them until they are gone",
            n = self.containers.len(),
            h = self.handler,
            list = listing(&self.containers)
        )
    }
}
