//! Whether a runtime handler still has containers on the node: the check
//! `uninstall`, deploy's removal and `registrations` share. A daemon
//! stops and deletes a container by running its handler's runtime again,
//! so taking the handler away (its table, its links) under a running pod
//! leaves a container nothing can stop (containerd: `fork/exec ...: no
//! such file or directory`; CRI-O: `failed to find runtime handler`).
//!
//! Where each daemon keeps its containers is its own module's knowledge
//! (its `live::Handler`); this module reads the node's files for them,
//! under `--root` or a deploy's host root, and words the refusal.

use crate::daemon::live::{Files, Handler, Live};
use std::path::Path;
use userns_hostnet::sys::in_root::NodeRoot;

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

/// The containers of `handler` on the node under `root`.
pub fn containers(root: &NodeRoot, handler: &dyn Handler) -> Vec<Live> {
    handler.containers(&NodeFiles(root))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_is_one_line_naming_each_container_and_the_way_out() {
        let e = InUse {
            handler: "uhn".into(),
            containers: vec![
                Live {
                    id: "9fae45856a1b0d19909a00275f87c2f6".into(),
                    pod: Some("web/api-0".into()),
                    name: Some("app".into()),
                },
                Live {
                    id: "42cd4f340c89a569b076cce069797e6d".into(),
                    pod: Some("web/api-0".into()),
                    name: Some("sandbox".into()),
                },
            ],
        };
        let line = e.to_string();
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.starts_with("runtime handler uhn still has 2 container(s) on this node: 9fae45856a1b0 (pod web/api-0, app), 42cd4f340c89a (pod web/api-0, sandbox); "),
            "{line}"
        );
        assert!(line.contains("kubectl drain NODE"), "{line}");
        assert!(
            line.ends_with("then run uninstall again (--force removes it anyway and strands them)"),
            "{line}"
        );
        let forced = e.forced();
        assert!(forced.starts_with("warning: --force: 2 container(s) of runtime handler uhn are stranded: 9fae45856a1b0 "), "{forced}");
    }

    #[test]
    fn node_files_read_under_the_root() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("run/x")).unwrap();
        std::fs::write(root.path().join("run/x/b"), "b").unwrap();
        std::fs::write(root.path().join("run/x/a"), "a").unwrap();
        let node = NodeRoot::new(Some(root.path())).unwrap();
        let files = NodeFiles(&node);
        assert_eq!(files.list(Path::new("/run/x")), ["a", "b"]);
        assert_eq!(files.read(Path::new("/run/x/a")).as_deref(), Some("a"));
        assert_eq!(files.read(Path::new("/run/none")), None);
        assert!(files.list(Path::new("/run/none")).is_empty());
    }
}
