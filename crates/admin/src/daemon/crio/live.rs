//! Which containers CRI-O still holds: its containers' states under its run
//! root, by handler, read through a `Files` view of the node.

use crate::daemon::config::dig;
use crate::daemon::live::{self, Files, Live};
use std::path::PathBuf;
use toml_edit::{DocumentMut, Item};

/// Where CRI-O keeps its containers' bundles (containers/storage's run
/// root) when neither its config nor storage.conf names one.
pub const DEFAULT_RUNROOT: &str = "/run/containers/storage";

/// A pod's handler, among its sandbox's annotations.
const RUNTIME_HANDLER: &str = "io.kubernetes.cri-o.RuntimeHandler";

const CONTAINER_TYPE: &str = "io.kubernetes.cri-o.ContainerType";

const SANDBOX_ID: &str = "io.kubernetes.cri-o.SandboxID";

/// CRI-O's run root: the last of its files that sets `[crio] runroot`,
/// else containers/storage's `[storage] runroot` (`storage`, the node's
/// storage.conf), else the default.
pub fn runroot(files: &[(PathBuf, DocumentMut)], storage: Option<&DocumentMut>) -> String {
    let set = |doc: &DocumentMut, path: &[&str]| {
        dig(doc.as_item(), path)
            .and_then(Item::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    files
        .iter()
        .rev()
        .find_map(|(_, d)| set(d, &["crio", "runroot"]))
        .or_else(|| storage.and_then(|d| set(d, &["storage", "runroot"])))
        .unwrap_or_else(|| DEFAULT_RUNROOT.to_owned())
}

/// A handler's `runtime_root`, where its runtime keeps its state.
pub fn runtime_root(handler: &Item) -> Option<String> {
    dig(handler, &["runtime_root"])
        .and_then(Item::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// One container CRI-O keeps in its run root: what its spec's
/// annotations say of it.
struct Kept {
    sandbox: String,
    is_sandbox: bool,
    handler: Option<String>,
    pod: Option<String>,
    name: Option<String>,
}

fn kept(id: &str, spec: &str) -> Kept {
    let a = live::annotations(spec);
    let is_sandbox = live::annotation(&a, CONTAINER_TYPE) == Some("sandbox");
    let name = live::annotation(&a, "io.kubernetes.cri-o.Metadata")
        .and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok())
        .and_then(|m| m.get("name")?.as_str().map(str::to_owned));
    Kept {
        sandbox: live::annotation(&a, SANDBOX_ID).unwrap_or(id).to_owned(),
        is_sandbox,
        handler: live::annotation(&a, RUNTIME_HANDLER).map(str::to_owned),
        pod: live::pod_name(&a, "io.kubernetes.pod.namespace", "io.kubernetes.pod.name"),
        name: if is_sandbox {
            Some("sandbox".to_owned())
        } else {
            name
        },
    }
}

/// A CRI-O handler's containers: CRI-O's run root, the handler's
/// `runtime_root`, its name, and whether it is CRI-O's default handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct States {
    pub runroot: PathBuf,
    pub runtime_root: Option<PathBuf>,
    pub name: String,
    pub default: bool,
}

impl live::Handler for States {
    /// The pods and containers of the handler CRI-O still holds: what its
    /// run root keeps (`*-containers/ID/userdata/config.json`, from create
    /// to removal; a pod's handler is its sandbox's annotation, which
    /// CRI-O keeps even when no infra container runs), and the containers
    /// whose state the handler's runtime keeps in `runtime_root` (several
    /// wrapper handlers share one: each container is decided by its pod's
    /// handler, and one whose pod cannot be read counts). A pod that names
    /// no handler runs CRI-O's default one.
    fn containers(&self, files: &dyn Files) -> Vec<Live> {
        let (runroot, handler) = (&self.runroot, self.name.as_str());
        let mut all: Vec<(String, Kept)> = Vec::new();
        for store in files.list(runroot) {
            if !store.ends_with("-containers") {
                continue;
            }
            let dir = runroot.join(&store);
            for id in files.list(&dir) {
                if let Some(spec) = files.read(&dir.join(&id).join("userdata/config.json")) {
                    let k = kept(&id, &spec);
                    all.push((id, k));
                }
            }
        }
        let ours = |h: Option<&str>| match h {
            Some(h) => h == handler,
            None => self.default,
        };
        let sandbox_of =
            |all: &[(String, Kept)], id: &str| -> Option<(Option<String>, Option<String>)> {
                all.iter()
                    .find(|(i, k)| i == id && k.is_sandbox)
                    .map(|(_, k)| (k.handler.clone(), k.pod.clone()))
            };
        let mut out = Vec::new();
        for (id, k) in &all {
            let Some((h, pod)) = sandbox_of(&all, &k.sandbox) else {
                continue;
            };
            if ours(h.as_deref()) {
                out.push(Live {
                    id: id.clone(),
                    pod,
                    name: k.name.clone(),
                });
            }
        }
        for (id, bundle) in self
            .runtime_root
            .as_deref()
            .map(|r| live::runtime_states(files, r))
            .unwrap_or_default()
        {
            if out.iter().any(|l| l.id == id) || all.iter().any(|(i, _)| *i == id) {
                continue;
            }
            // Not in the run root read above (CRI-O's is elsewhere): the
            // bundle's spec names its pod, whose own bundle is its sibling.
            let k = bundle
                .as_ref()
                .and_then(|b| files.read(&b.join("config.json")))
                .map(|spec| kept(&id, &spec));
            let pod = k.as_ref().and_then(|k| {
                let sandbox_spec = bundle
                    .as_ref()?
                    .parent()?
                    .parent()?
                    .join(&k.sandbox)
                    .join("userdata/config.json");
                files.read(&sandbox_spec).map(|s| kept(&k.sandbox, &s))
            });
            let unknown = pod.is_none();
            if unknown || pod.as_ref().is_some_and(|p| ours(p.handler.as_deref())) {
                out.push(Live {
                    id,
                    pod: pod.and_then(|p| p.pod),
                    name: k.and_then(|k| k.name),
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn live_of_handler(
        files: &dyn Files,
        runroot: &Path,
        runtime_root: Option<&Path>,
        name: &str,
        default: bool,
    ) -> Vec<Live> {
        use live::Handler;
        States {
            runroot: runroot.to_owned(),
            runtime_root: runtime_root.map(Path::to_owned),
            name: name.to_owned(),
            default,
        }
        .containers(files)
    }

    #[test]
    fn live_pods_of_a_handler_from_the_run_root() {
        use crate::daemon::live::tests::FakeNode;
        let rr = "/run/containers/storage/overlay-containers";
        let sandbox = |h: &str, name: &str| {
            format!(
                r#"{{"annotations":{{"io.kubernetes.cri-o.ContainerType":"sandbox","io.kubernetes.cri-o.RuntimeHandler":"{h}","io.kubernetes.pod.name":"{name}","io.kubernetes.pod.namespace":"ns"}}}}"#
            )
        };
        let app = |pod: &str| {
            format!(
                r#"{{"annotations":{{"io.kubernetes.cri-o.ContainerType":"container","io.kubernetes.cri-o.SandboxID":"{pod}","io.kubernetes.cri-o.Metadata":"{{\"name\":\"app\"}}"}}}}"#
            )
        };
        let node = FakeNode::default()
            .with(
                &format!("{rr}/p1/userdata/config.json"),
                &sandbox("uhn", "web"),
            )
            .with(&format!("{rr}/c1/userdata/config.json"), &app("p1"))
            .with(
                &format!("{rr}/p2/userdata/config.json"),
                &sandbox("uhn-crun", "db"),
            )
            .with(&format!("{rr}/c2/userdata/config.json"), &app("p2"))
            // State in the shared runtime root: c2 is another handler's,
            // x's bundle is gone (counted: it may be ours).
            .with(
                "/run/userns-hostnet-runtime/c2/state.json",
                &format!(r#"{{"config":{{"labels":["bundle={rr}/c2/userdata"]}}}}"#),
            )
            .with(
                "/run/userns-hostnet-runtime/x/state.json",
                r#"{"config":{"labels":["bundle=/gone/x/userdata"]}}"#,
            );
        let found = live_of_handler(
            &node,
            Path::new(DEFAULT_RUNROOT),
            Some(Path::new(super::super::RUNTIME_ROOT)),
            "uhn",
            false,
        );
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["c1 (pod ns/web, app)", "p1 (pod ns/web, sandbox)", "x"]
        );
        // Read from the runtime root alone, c1's pod still says its handler.
        let elsewhere = live_of_handler(
            &node,
            Path::new("/nowhere"),
            Some(Path::new(super::super::RUNTIME_ROOT)),
            "uhn-crun",
            false,
        );
        let shown: Vec<String> = elsewhere.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["c2 (pod ns/db, app)", "x"]);
    }

    #[test]
    fn runroot_from_crio_then_storage() {
        let files = |t: &str| vec![(PathBuf::from("/c"), t.parse::<DocumentMut>().unwrap())];
        let storage: DocumentMut = "[storage]\nrunroot = \"/srv/run\"\n".parse().unwrap();
        assert_eq!(
            runroot(&files("[crio]\nrunroot = \"/x\"\n"), Some(&storage)),
            "/x"
        );
        assert_eq!(runroot(&files("[crio]\n"), Some(&storage)), "/srv/run");
        assert_eq!(runroot(&files(""), None), DEFAULT_RUNROOT);
    }
}
