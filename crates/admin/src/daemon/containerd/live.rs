//! Which containers containerd still holds: its tasks' bundles under its
//! state directory, read through a `Files` view of the node.

use crate::daemon::live::{self, Files, Live};
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item};

/// Where containerd keeps its state without a `state` setting.
pub const DEFAULT_STATE: &str = "/run/containerd";

/// The runtime v2 tasks' bundles under the state directory, one directory
/// per namespace, then one per task.
pub const TASKS_DIR: &str = "io.containerd.runtime.v2.task";

/// containerd's state directory, as the config names it.
pub fn state_dir(doc: &DocumentMut) -> String {
    doc.get("state")
        .and_then(Item::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_STATE)
        .to_owned()
}

/// The runtime binary the runc shim of a task runs: the `binary_name` of
/// the handler's options it keeps in the bundle (`options.json`), else
/// the bundle's `runtime` file (containerd 2.x writes both).
pub fn task_binary(options: Option<&str>, runtime: Option<&str>) -> Option<String> {
    let from_options = options
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .and_then(|v| v.get("binary_name")?.as_str().map(str::to_owned))
        .filter(|b| !b.is_empty());
    from_options.or_else(|| {
        runtime
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
    })
}

/// A containerd handler's containers: containerd's state directory, and
/// the runtime binaries the handler names (its link; a handler naming the
/// wrapper itself shares that binary with any other handler that does,
/// whose containers then count too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tasks {
    pub state: PathBuf,
    pub binaries: Vec<String>,
}

impl live::Handler for Tasks {
    fn containers(&self, files: &dyn Files) -> Vec<Live> {
        live_tasks(files, &self.state, &|b| {
            self.binaries.iter().any(|o| o == b)
        })
    }
}

/// The tasks of every namespace under containerd's state directory
/// `state` whose runtime binary `runs` accepts: each keeps a shim that
/// runs that binary again to kill and delete it, whatever the config
/// says by then. A task's bundle lasts from its create to its delete.
pub fn live_tasks(files: &dyn Files, state: &Path, runs: &dyn Fn(&str) -> bool) -> Vec<Live> {
    let tasks = state.join(TASKS_DIR);
    let mut out = Vec::new();
    for ns in files.list(&tasks) {
        for id in files.list(&tasks.join(&ns)) {
            let b = tasks.join(&ns).join(&id);
            let binary = task_binary(
                files.read(&b.join("options.json")).as_deref(),
                files.read(&b.join("runtime")).as_deref(),
            );
            if !binary.is_some_and(|bin| runs(&bin)) {
                continue;
            }
            let a = live::annotations(&files.read(&b.join("config.json")).unwrap_or_default());
            let sandbox =
                live::annotation(&a, "io.kubernetes.cri.container-type") == Some("sandbox");
            out.push(Live {
                pod: live::pod_name(
                    &a,
                    "io.kubernetes.cri.sandbox-namespace",
                    "io.kubernetes.cri.sandbox-name",
                ),
                name: if sandbox {
                    Some("sandbox".to_owned())
                } else {
                    live::annotation(&a, "io.kubernetes.cri.container-name").map(str::to_owned)
                },
                id,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_tasks_of_a_binary_with_their_pods() {
        use crate::daemon::live::tests::FakeNode;
        let t = "/run/containerd/io.containerd.runtime.v2.task/k8s.io";
        let ours = r#"{"binary_name":"/etc/userns-hostnet/handlers/h/userns-hostnet-runtime","root":"/run/r"}"#;
        let node = FakeNode::default()
            .with(&format!("{t}/app1/options.json"), ours)
            .with(
                &format!("{t}/app1/config.json"),
                r#"{"annotations":{"io.kubernetes.cri.container-type":"container","io.kubernetes.cri.container-name":"app","io.kubernetes.cri.sandbox-name":"web","io.kubernetes.cri.sandbox-namespace":"ns"}}"#,
            )
            .with(&format!("{t}/pause/options.json"), ours)
            .with(
                &format!("{t}/pause/config.json"),
                r#"{"annotations":{"io.kubernetes.cri.container-type":"sandbox","io.kubernetes.cri.sandbox-name":"web","io.kubernetes.cri.sandbox-namespace":"ns"}}"#,
            )
            // Another handler's task in the same runc root.
            .with(&format!("{t}/other/options.json"), r#"{"binary_name":"/usr/bin/runc","root":"/run/r"}"#)
            // No options: the runtime file says.
            .with(&format!("{t}/old/runtime"), "/etc/userns-hostnet/handlers/h/userns-hostnet-runtime\n");
        let h = "/etc/userns-hostnet/handlers/h/userns-hostnet-runtime";
        let found = live_tasks(&node, Path::new(DEFAULT_STATE), &|b| b == h);
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "app1 (pod ns/web, app)",
                "old",
                "pause (pod ns/web, sandbox)"
            ]
        );
        assert!(live_tasks(&node, Path::new("/elsewhere"), &|b| b == h).is_empty());
    }

    #[test]
    fn state_dir_from_the_config() {
        let doc: DocumentMut = "version = 2\nstate = \"/srv/ctd\"\n".parse().unwrap();
        assert_eq!(state_dir(&doc), "/srv/ctd");
        assert_eq!(state_dir(&DocumentMut::new()), DEFAULT_STATE);
    }
}
