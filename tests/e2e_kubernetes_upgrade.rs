//! The installer's DaemonSet (deploy/, `kubectl apply -k`) on a one-node
//! cluster of tests/common/kubernetes.rs: installed, rolled out to a new
//! tag of its image (the upgrade of the installer) with the handler's pods
//! running, its pod deleted, and removed with the cleanup DaemonSet
//! (tests/common/kube_deploy.rs). The Helm chart's upgrade from the
//! previous version, on two nodes, is in tests/e2e_kubernetes_fleet.rs.
//!
//! Prerequisites (root, runc, busybox-static, jq, openssl, podman,
//! containernetworking-plugins, CRI-O of `scripts/cri-tools.sh`, the
//! components of `scripts/kubernetes.sh` and the installer's binaries of
//! `make image`) fail the test when missing.

mod common;

use common::kube_deploy::scenario_daemonset;
use common::kube_pods::{
    assert_nothing_left, bound_pod, runtime_classes, scenario_host_mounts_later, PLAIN_CLASS,
    WRAPPER_CLASS,
};
use common::kubernetes::{crio_cluster, KUBELET_UNDECLARED};
use serde_json::json;

/// deploy/ on CRI-O 1.36.3 (runc 1.4.3 behind its default handler, which
/// the deployed handler derives from) under kubelet 1.35.4: the
/// DaemonSet's pod registers the handler in crio.conf.d, CRI-O is
/// restarted, the node labelled; the feature's pods (bound: this kubelet
/// declares no features) run hardened through the deployed handler,
/// through a rollout and the installer pod's deletion; the cleanup gives
/// crio.conf and crio.conf.d back byte for byte.
#[test]
fn crio_deploy_kubelet_1_35() {
    use common::crio::{handler as crio_handler, Crio, Mode};
    let mut crio = Crio::start_node_on_runc_14(Mode::DropInfra);
    let k = crio_cluster(&crio, KUBELET_UNDECLARED);
    runtime_classes(&k, crio_handler::WRAPPER, crio_handler::RUNC);
    // This node's mounts are shared, as a systemd host's are.
    let ns = crio.namespace_pid();
    let through = scenario_host_mounts_later(&k, ns, bound_pod(&k, "later", WRAPPER_CLASS), true);
    let alone =
        scenario_host_mounts_later(&k, ns, bound_pod(&k, "later-plain", PLAIN_CLASS), false);
    eprintln!("CRI-O 1.36.3 + runc 1.4.3, a mount the node makes under /sys later: alone {alone}, through the wrapper {through}");
    assert_nothing_left("the pods of the later mount", &|| crio.leftovers());
    let node = k.node.clone();
    scenario_daemonset(&k, &mut crio, &|mut pod| {
        pod["spec"]["nodeName"] = json!(node);
        pod
    });
    // The deleted pods' sandboxes go with the kubelet's garbage
    // collection, not with their deletion; what stays is shown by name,
    // with the kubelet's errors.
    assert_nothing_left("the row", &|| {
        let mut left = crio.leftovers();
        if !left.is_empty() {
            for args in [&["pods"][..], &["ps", "--all"][..]] {
                let out = crio.crictl(args).stdout;
                left.extend(
                    out.lines()
                        .map(|l| format!("crictl {}: {l}", args.join(" "))),
                );
            }
            let kubelet = k.log("kubelet");
            let errors: Vec<&str> = kubelet.lines().filter(|l| l.starts_with('E')).collect();
            let from = errors.len().saturating_sub(15);
            left.extend(errors[from..].iter().map(|l| format!("kubelet: {l}")));
        }
        left
    });
    drop(k);
    let left = crio.leftovers();
    assert!(left.is_empty(), "left behind: {left:#?}");
}
