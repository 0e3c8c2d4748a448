//! Containers a daemon still holds, read from what the daemons and the
//! runtimes keep under /run: a container whose runtime binary goes away
//! can no longer be stopped or deleted by its daemon. What the daemons
//! share is here; where each keeps its containers is in its own module
//! (its [`Handler`]). Pure over
//! [`Files`], a read-only view of the node, so the tests give the files.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The node's files, as the listing reads them (paths as the node names
/// them; the caller resolves them, under `--root` or a deploy's host
/// root). Anything unreadable is `None` or empty: a container that
/// cannot be read is one the listing does not see.
pub trait Files {
    fn read(&self, node: &Path) -> Option<String>;
    /// The names in a directory, sorted.
    fn list(&self, node_dir: &Path) -> Vec<String>;
}

/// One container a daemon holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Live {
    pub id: String,
    /// `NAMESPACE/NAME` of its pod, when the CRI's annotations say.
    pub pod: Option<String>,
    /// The container's name, or `sandbox` for a pod's sandbox.
    pub name: Option<String>,
}

/// The id as crictl prints it: 13 characters, which every crictl
/// command accepts.
fn short(id: &str) -> &str {
    id.get(..13).unwrap_or(id)
}

impl std::fmt::Display for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", short(&self.id))?;
        match (&self.pod, &self.name) {
            (Some(p), Some(n)) => write!(f, " (pod {p}, {n})"),
            (Some(p), None) => write!(f, " (pod {p})"),
            (None, Some(n)) => write!(f, " ({n})"),
            (None, None) => Ok(()),
        }
    }
}

/// The bundle a runtime's state file names: runc keeps it among its
/// config's labels (`bundle=DIR`), crun's `status` and youki's
/// `state.json` as `bundle`.
pub fn bundle_of(state: &str) -> Option<PathBuf> {
    let v: Value = serde_json::from_str(state).ok()?;
    if let Some(b) = v.get("bundle").and_then(Value::as_str) {
        return Some(PathBuf::from(b));
    }
    v.pointer("/config/labels")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find_map(|l| l.strip_prefix("bundle="))
        .map(PathBuf::from)
}

/// A spec's annotations (empty when it has none or is not JSON).
pub fn annotations(spec: &str) -> Map<String, Value> {
    serde_json::from_str::<Value>(spec)
        .ok()
        .and_then(|v| v.get("annotations")?.as_object().cloned())
        .unwrap_or_default()
}

/// `key`'s string value among annotations.
pub fn annotation<'a>(a: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    a.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// `NAMESPACE/NAME` from two annotations.
pub fn pod_name(a: &Map<String, Value>, namespace: &str, name: &str) -> Option<String> {
    match (annotation(a, namespace), annotation(a, name)) {
        (Some(ns), Some(n)) => Some(format!("{ns}/{n}")),
        (None, Some(n)) => Some(n.to_owned()),
        _ => None,
    }
}

/// The containers a runtime keeps state for in `root` (runc and youki:
/// `ID/state.json`, crun: `ID/status`), with the bundle each names. The
/// state lasts from create to delete, the two calls that must reach the
/// runtime through the handler.
pub fn runtime_states(files: &dyn Files, root: &Path) -> Vec<(String, Option<PathBuf>)> {
    files
        .list(root)
        .into_iter()
        .filter_map(|id| {
            let dir = root.join(&id);
            let state = ["state.json", "status"]
                .iter()
                .find_map(|f| files.read(&dir.join(f)))?;
            Some((id, bundle_of(&state)))
        })
        .collect()
}

/// What tells a handler's containers apart, each daemon its own
/// (containerd: its state directory and the runtime binaries the handler
/// names; CRI-O: its run root and the handler's runtime root; podman: the
/// binaries its conmons name), as the node names its paths: what
/// uninstall's guard, deploy's removal and `registrations` ask.
pub trait Handler: std::fmt::Debug {
    /// The handler's containers among the node's files.
    fn containers(&self, files: &dyn Files) -> Vec<Live>;
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A node of a few files, for the daemons' tests.
    #[derive(Default)]
    pub struct FakeNode(pub BTreeMap<PathBuf, String>);

    impl FakeNode {
        pub fn with(mut self, path: &str, text: &str) -> FakeNode {
            self.0.insert(PathBuf::from(path), text.to_owned());
            self
        }
    }

    impl Files for FakeNode {
        fn read(&self, node: &Path) -> Option<String> {
            self.0.get(node).cloned()
        }
        fn list(&self, dir: &Path) -> Vec<String> {
            let mut names: Vec<String> = self
                .0
                .keys()
                .filter_map(|p| p.strip_prefix(dir).ok())
                .filter_map(|rest| rest.components().next())
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            names.dedup();
            names
        }
    }

    #[test]
    fn the_bundle_of_each_runtimes_state() {
        let runc = r#"{"id":"a","config":{"labels":["io.kubernetes.cri-o.ContainerType=container","bundle=/run/b/a/userdata"]}}"#;
        assert_eq!(bundle_of(runc), Some(PathBuf::from("/run/b/a/userdata")));
        let crun = r#"{"pid":1,"bundle":"/run/b/c","rootfs":"/r"}"#;
        assert_eq!(bundle_of(crun), Some(PathBuf::from("/run/b/c")));
        assert_eq!(bundle_of(r#"{"config":{"labels":[]}}"#), None);
        assert_eq!(bundle_of("not json"), None);
    }

    #[test]
    fn runtime_states_are_the_directories_with_a_state_file() {
        let node = FakeNode::default()
            .with(
                "/run/r/a/state.json",
                r#"{"config":{"labels":["bundle=/b/a"]}}"#,
            )
            .with("/run/r/c/status", r#"{"bundle":"/b/c"}"#)
            .with("/run/r/gone/other", "");
        assert_eq!(
            runtime_states(&node, Path::new("/run/r")),
            [
                ("a".to_owned(), Some(PathBuf::from("/b/a"))),
                ("c".to_owned(), Some(PathBuf::from("/b/c")))
            ]
        );
    }

    #[test]
    fn a_container_says_its_pod() {
        let live = Live {
            id: "9fae45856a1b0d19909a00275f87c2f62af948030672b6f1e226d434ac3e459b".into(),
            pod: Some("ns/web".into()),
            name: Some("app".into()),
        };
        assert_eq!(live.to_string(), "9fae45856a1b0 (pod ns/web, app)");
        let bare = Live {
            id: "x".into(),
            pod: None,
            name: None,
        };
        assert_eq!(bare.to_string(), "x");
    }
}
