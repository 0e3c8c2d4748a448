//! `deploy --await-removal NAMESPACE/NAME`: the chart's pre-delete hook.
//! `helm uninstall` waits for a hook's Job, never for a DaemonSet; the
//! removal runs on every node in the cleanup DaemonSet NAME, whose pod is
//! ready once nothing of a deploy is left on its node. This Job exits 0
//! when every pod of it is ready, so helm deletes the installer, its RBAC
//! and namespace only after every node is as it was; until then it says
//! which nodes still wait (for the handler's containers, whose names the
//! cleanup pod's log gives).

use super::super::deploy_api::Api;
use super::DeployError;
use crate::say;
use serde_json::Value;
use std::time::Duration;

/// How often the DaemonSet is read again.
const POLL: Duration = Duration::from_secs(3);

/// Where the removal stands.
#[derive(Debug, PartialEq, Eq)]
enum Progress {
    /// Every node's pod of the current DaemonSet is ready: the count.
    Done(u64),
    /// The nodes whose pod is not ready yet (or `desired` pods not all
    /// scheduled and updated yet), of `desired`.
    Waiting { nodes: Vec<String>, desired: u64 },
}

fn count(v: &Value, field: &str) -> u64 {
    v.get(field).and_then(Value::as_u64).unwrap_or(0)
}

/// Whether the pod's Ready condition is True.
fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// The DaemonSet's status as its controller last saw the current spec,
/// and its pods: done only when the controller has seen this generation,
/// every desired pod is of it and every one is ready.
fn progress(daemonset: &Value, pods: &Value) -> Progress {
    let status = &daemonset["status"];
    let generation = daemonset
        .pointer("/metadata/generation")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let desired = count(status, "desiredNumberScheduled");
    let seen = count(status, "observedGeneration") >= generation && generation > 0;
    if seen
        && count(status, "updatedNumberScheduled") == desired
        && count(status, "numberReady") == desired
        && count(status, "numberUnavailable") == 0
    {
        return Progress::Done(desired);
    }
    // Only the pods of this DaemonSet, not those of an earlier one of the
    // same name still going away.
    let uid = daemonset.pointer("/metadata/uid");
    let mut nodes: Vec<String> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .filter(|p| {
            p.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|o| o.iter().any(|r| Some(&r["uid"]) == uid))
        })
        .filter(|p| !ready(p))
        .map(|p| {
            p.pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("(not scheduled)")
                .to_owned()
        })
        .collect();
    nodes.sort();
    Progress::Waiting { nodes, desired }
}

/// NAMESPACE/NAME, both non-empty and without another `/`.
fn target(arg: &str) -> Result<(&str, &str), DeployError> {
    match arg.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns, name))
        }
        _ => Err(DeployError::Usage(format!(
            "--await-removal {arg}: must be NAMESPACE/NAME of the cleanup DaemonSet"
        ))),
    }
}

/// Wait until the cleanup DaemonSet is ready on every node: 0 then; 1
/// when it is gone or may not be read (the line says why). A failing call
/// is said and tried again: helm's timeout bounds the wait.
pub fn run(arg: &str) -> Result<i32, DeployError> {
    let (ns, name) = target(arg)?;
    let api = Api::from_pod(None);
    let ds_path = format!("/apis/apps/v1/namespaces/{ns}/daemonsets/{name}");
    let pods_path =
        format!("/api/v1/namespaces/{ns}/pods?labelSelector=app.kubernetes.io%2Fname%3D{name}");
    let mut said = String::new();
    let mut tell = |line: String| {
        if line != said {
            say(&line);
            said = line;
        }
    };
    loop {
        let daemonset = match api.get(&ds_path) {
            Ok((200, v)) => v,
            Ok((404, _)) => {
                say(&format!(
                    "the cleanup DaemonSet {ns}/{name} is gone: the removal on the nodes is not known to be done"
                ));
                return Ok(1);
            }
            Ok((403, _)) => {
                say(&format!(
                    "may not read the DaemonSet {ns}/{name} (403): is the chart's RBAC in place?"
                ));
                return Ok(1);
            }
            failed => {
                let why = failed
                    .map_or_else(|e| e, |(code, _)| format!("the API server answered {code}"));
                tell(format!("reading {ns}/{name}: {why}; trying again"));
                std::thread::sleep(POLL);
                continue;
            }
        };
        let pods = match api.get(&pods_path) {
            Ok((200, v)) => v,
            _ => Value::Null,
        };
        match progress(&daemonset, &pods) {
            Progress::Done(n) => {
                say(&format!("the removal is done on every node ({n})"));
                return Ok(0);
            }
            Progress::Waiting { nodes, desired } => tell(format!(
                "waiting for the removal on {} of {desired} node(s): {}; a node waits while the handler's containers run there (kubectl -n {ns} logs -l app.kubernetes.io/name={name} names them)",
                nodes.len(),
                if nodes.is_empty() {
                    "(pods not started yet)".to_owned()
                } else {
                    nodes.join(", ")
                }
            )),
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ds(generation: u64, status: Value) -> Value {
        json!({"metadata": {"generation": generation, "uid": "u1"}, "status": status})
    }

    fn pod(node: &str, is_ready: bool) -> Value {
        json!({
            "metadata": {"ownerReferences": [{"kind": "DaemonSet", "uid": "u1"}]},
            "spec": {"nodeName": node},
            "status": {"conditions": [{"type": "Ready", "status": if is_ready { "True" } else { "False" }}]},
        })
    }

    #[test]
    fn done_only_when_every_pod_of_this_generation_is_ready() {
        let all = json!({"observedGeneration": 1, "desiredNumberScheduled": 2,
            "updatedNumberScheduled": 2, "numberReady": 2});
        assert_eq!(
            progress(&ds(1, all.clone()), &Value::Null),
            Progress::Done(2)
        );
        // A controller that has not seen the DaemonSet yet says nothing.
        assert_eq!(
            progress(&ds(1, json!({})), &Value::Null),
            Progress::Waiting {
                nodes: vec![],
                desired: 0
            }
        );
        assert!(matches!(
            progress(&ds(2, all), &Value::Null),
            Progress::Waiting { .. }
        ));
        let one = json!({"observedGeneration": 1, "desiredNumberScheduled": 2,
            "updatedNumberScheduled": 2, "numberReady": 1, "numberUnavailable": 1});
        let mut earlier = pod("c", false);
        earlier["metadata"]["ownerReferences"][0]["uid"] = json!("u0");
        let mut going = pod("d", false);
        going["metadata"]["deletionTimestamp"] = json!("2026-12-05T11:00:00Z");
        let pods = json!({"items": [pod("b", false), pod("a", true), earlier, going]});
        assert_eq!(
            progress(&ds(1, one), &pods),
            Progress::Waiting {
                nodes: vec!["b".into()],
                desired: 2
            }
        );
    }

    #[test]
    fn no_node_to_undo_is_done() {
        let none = json!({"observedGeneration": 1, "desiredNumberScheduled": 0,
            "updatedNumberScheduled": 0, "numberReady": 0});
        assert_eq!(progress(&ds(1, none), &Value::Null), Progress::Done(0));
    }

    #[test]
    fn the_target_is_namespace_and_name() {
        assert_eq!(target("ns/ds").unwrap(), ("ns", "ds"));
        for bad in ["ds", "/ds", "ns/", "ns/ds/x", ""] {
            assert!(target(bad).is_err(), "{bad}");
        }
    }
}
