//! The Helm chart on a two-node cluster (`fleet_two_nodes_helm`): a
//! containerd 2.3.4 node and a CRI-O 1.36.3 node of one control plane
//! (tests/common/kubernetes.rs), installed with the previous version's
//! installer image (`make image-previous`), upgraded to this checkout's
//! with pods running, and removed with the chart (helm 4.3.2, `make
//! helm`).
//!
//! Prerequisites (root, runc, busybox-static, jq, openssl, podman,
//! python3-yaml, containernetworking-plugins, the CRI daemons of
//! `scripts/cri-tools.sh`, the components of `scripts/kubernetes.sh`, helm
//! and both installer images) fail the test when missing.

mod common;

use std::time::Instant;

use common::cri::{Cri, Stack};
use common::kube_deploy::*;
use common::kube_pods::{
    assert_hardened, assert_no_record_left, assert_nothing_left, fate, feature_deployment,
    feature_pod, look, records, records_of, WRAPPER_CLASS,
};
use common::kubernetes::{containerd_cluster_on, Cluster, KUBELET_UNDECLARED};
use serde_json::json;

/// The two-node cluster's release, handler and the label of its node pool
/// (the chart's nodeSelector value).
const FLEET_RELEASE: &str = "uhn-fleet";
const FLEET_HANDLER: &str = "uhn-k8s-fleet";
const FLEET_POOL: (&str, &str) = ("uhn-test/pool", "fleet");
/// The second node's name: an address of the loopback network the API
/// server dials by that name (the first node is `localhost`).
/// The CRI-O node's name: its address in a network namespace of its own,
/// linked to this one, where the API server serves at `FLEET_API`.
const SECOND_NODE: &str = "10.123.45.2";
const FLEET_API: &str = "10.123.45.1";
/// The previous version's installer image (scripts/image-previous.sh).
const INSTALLER_PREVIOUS: &str = "localhost/userns-hostnet-installer:previous";

/// One node's own view of the host's files, as a node of its own has
/// them: `/etc` and `/var/lib` are overlays whose writes go to the node's
/// directory (the installer's state, `/etc/userns-hostnet`, its binaries
/// under `/var/lib/uhn-fleet/bin`), the node's daemon config directory
/// is where that daemon's is on a node (`/etc/containerd` or `/etc/crio`;
/// the other daemon's is hidden, as are both daemons' sockets of this
/// machine's own), and the restart requests of the node's installer
/// arrive in a directory of the test's. A process holds the view; the
/// daemon's mount namespace is a copy of it (containerd) or is it
/// (CRI-O).
struct NodeView {
    dir: std::path::PathBuf,
    holder: Option<std::process::Child>,
}

impl NodeView {
    /// The view's script, for a node whose daemon's config directory is
    /// `config_dir`, shown at `at` (`/etc/containerd` or `/etc/crio`).
    fn script(dir: &std::path::Path, config_dir: &std::path::Path, at: &str) -> String {
        let d = dir.display();
        let other = if at == "/etc/containerd" {
            "/etc/crio"
        } else {
            "/etc/containerd"
        };
        format!(
            "set -e\n\
             mount -t overlay overlay -o lowerdir=/etc,upperdir={d}/etc.up,workdir={d}/etc.work /etc\n\
             mount -t overlay overlay -o lowerdir=/var/lib,upperdir={d}/lib.up,workdir={d}/lib.work /var/lib\n\
             for hide in /run/containerd /run/crio {other}; do if [ -d $hide ]; then mount -t tmpfs -o size=1m none $hide; fi; done\n\
             mkdir -p {at} /var/lib/uhn-fleet-requests\n\
             mount --bind {config} {at}\n\
             mount --bind {d}/requests /var/lib/uhn-fleet-requests\n",
            config = config_dir.display(),
        )
    }

    fn dirs(dir: &std::path::Path) {
        for sub in ["etc.up", "etc.work", "lib.up", "lib.work", "requests"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
    }

    /// A view held by a process of its own (for containerd, which starts
    /// each time in a copy of it).
    fn held(dir: &std::path::Path, config_dir: &std::path::Path, at: &str) -> NodeView {
        NodeView::dirs(dir);
        let script = format!(
            "{}exec sleep infinity\n",
            NodeView::script(dir, config_dir, at)
        );
        let holder = std::process::Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(script)
            .stdin(std::process::Stdio::null())
            .spawn()
            .expect("start the node's view");
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_to_string(format!("/proc/{}/comm", holder.id())).unwrap_or_default()
            != "sleep\n"
        {
            assert!(Instant::now() < deadline, "the node's view did not come up");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        NodeView {
            dir: dir.to_owned(),
            holder: Some(holder),
        }
    }

    /// The view made in the mount namespace process `pid` holds (CRI-O's).
    fn within(pid: u32, dir: &std::path::Path, config_dir: &std::path::Path, at: &str) -> NodeView {
        NodeView::dirs(dir);
        common::run_capture(
            std::process::Command::new("nsenter")
                .arg(format!("--mount=/proc/{pid}/ns/mnt"))
                .args(["sh", "-c"])
                .arg(NodeView::script(dir, config_dir, at)),
        )
        .assert_success();
        NodeView {
            dir: dir.to_owned(),
            holder: None,
        }
    }

    fn pid(&self) -> u32 {
        self.holder.as_ref().expect("a held view").id()
    }

    /// The restart the node's installer asks for, if any.
    fn request(&self) -> std::path::PathBuf {
        self.dir.join("requests/restart")
    }
}

impl Drop for NodeView {
    fn drop(&mut self) {
        if let Some(mut holder) = self.holder.take() {
            let _ = holder.kill();
            let _ = holder.wait();
        }
    }
}

/// The restart command of the chart's release: the node's installer asks
/// the test (the daemon's supervisor here) through its view's request
/// directory and waits until it is done.
const FLEET_RESTART: &str = "touch /var/lib/uhn-fleet-requests/restart && while [ -e /var/lib/uhn-fleet-requests/restart ]; do sleep 0.2; done";

/// helm 4.3.2 (`make helm`), with its config, data and cache under `home`
/// and the post-renderer of this cluster (see `fleet_post_renderer`).
fn helm_command(k: &Cluster, home: &std::path::Path, args: &[&str]) -> std::process::Command {
    let bin = std::path::Path::new("/var/cache/userns-hostnet/helm/v4.3.2/helm");
    assert!(
        bin.is_file(),
        "helm v4.3.2 is missing at {}: run `make helm` (scripts/helm.sh)",
        bin.display()
    );
    eprintln!(
        "helm {}",
        args.iter()
            .filter(|a| !a.starts_with("--post-renderer"))
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut cmd = std::process::Command::new(bin);
    // The release lives in the installer's namespace, where the chart
    // puts its objects (`helm -n`, as an operator installs it).
    cmd.args(args)
        .arg(format!("--kubeconfig={}", k.kubeconfig().display()))
        .arg(format!("--namespace={DEPLOY_NS}"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_PLUGINS", home.join("plugins"));
    cmd
}

fn helm(k: &Cluster, home: &std::path::Path, args: &[&str]) -> common::Outcome {
    let started = Instant::now();
    let out = common::run_capture(&mut helm_command(k, home, args));
    eprintln!(
        "  helm {} {}: {:.1?}",
        args[0],
        if out.success() { "done" } else { "failed" },
        started.elapsed()
    );
    out
}

/// What an operator of these nodes adds to the chart's objects, as the
/// kustomize overlay of the one-node rows does (see `write_overlay` for
/// why each): the installer, the cleanup and the uninstall hook's Job on
/// the node's network, dialing
/// the API server at its address (no kube-proxy), the service account's
/// token and CA from a host directory, and `/` bound without propagation.
/// A Helm 4 post-renderer plugin (python3-yaml) in `home`/plugins.
fn fleet_post_renderer(k: &Cluster, home: &std::path::Path, service_account: &std::path::Path) {
    let dir = home.join("plugins/uhn-node");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.yaml"),
        "apiVersion: v1\nname: uhn-node\nversion: 0.1.0\ntype: postrenderer/v1\nruntime: subprocess\n\
         runtimeConfig:\n  platformCommand:\n  - command: \"${HELM_PLUGIN_DIR}/render.py\"\n",
    )
    .unwrap();
    let script = format!(
        r#"#!/usr/bin/python3
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
for d in docs:
    if d.get("kind") not in ("DaemonSet", "Job"):
        continue
    spec = d["spec"]["template"]["spec"]
    spec["hostNetwork"] = True
    spec["automountServiceAccountToken"] = False
    spec.setdefault("volumes", []).append({{"name": "service-account", "hostPath": {{"path": "{sa}", "type": "Directory"}}}})
    c = spec["containers"][0]
    c.setdefault("env", []).extend([{{"name": "KUBERNETES_SERVICE_HOST", "value": "{host}"}}, {{"name": "KUBERNETES_SERVICE_PORT", "value": "{port}"}}])
    for m in c.setdefault("volumeMounts", []):
        if m["name"] == "host-root":
            m["mountPropagation"] = "None"
    c["volumeMounts"].append({{"name": "service-account", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}})
yaml.safe_dump_all(docs, sys.stdout)
"#,
        sa = service_account.display(),
        host = k.api().0,
        port = k.api().1,
    );
    common::containerd::write_script(&dir.join("render.py"), &script);
}

/// The installer's namespace and service account, made ahead of the
/// release as Helm adopts them (its labels and annotations), and its token
/// from the TokenRequest API with the cluster's CA in a host directory.
fn fleet_credentials(k: &Cluster, work: &std::path::Path) -> std::path::PathBuf {
    let meta = json!({
        "labels": {"app.kubernetes.io/managed-by": "Helm"},
        "annotations": {
            "meta.helm.sh/release-name": FLEET_RELEASE,
            "meta.helm.sh/release-namespace": DEPLOY_NS,
        },
    });
    let mut ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta.clone()});
    ns["metadata"]["name"] = json!(DEPLOY_NS);
    k.apply(&ns);
    let mut sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta});
    sa["metadata"]["name"] = json!(DEPLOY_DS);
    sa["metadata"]["namespace"] = json!(DEPLOY_NS);
    k.apply(&sa);
    service_account_dir(k, work)
}

fn node_label(k: &Cluster, node: &str) -> String {
    k.kubectl(&[
        "get",
        "node",
        node,
        "-o",
        "jsonpath={.metadata.labels.userns-hostnet\\.io/installed}",
    ])
    .stdout
}

/// (ready, desired, updated) pods of a DaemonSet; zeros when it is absent.
fn daemonset_counts(k: &Cluster, name: &str) -> (u32, u32, u32) {
    let out = k.kubectl(&[
        "-n",
        DEPLOY_NS,
        "get",
        "daemonset",
        name,
        "-o",
        "jsonpath={.status.numberReady} {.status.desiredNumberScheduled} {.status.updatedNumberScheduled}",
    ]);
    let n: Vec<u32> = out
        .stdout
        .split_whitespace()
        .map(|w| w.parse().unwrap_or(0))
        .collect();
    (
        n.first().copied().unwrap_or(0),
        n.get(1).copied().unwrap_or(0),
        n.get(2).copied().unwrap_or(0),
    )
}

/// Node name -> the names of the pods of the DaemonSet `name` on it.
fn daemonset_pods_by_node(
    k: &Cluster,
    name: &str,
) -> std::collections::BTreeMap<String, Vec<String>> {
    let out = k.kubectl_ok(&[
        "-n",
        DEPLOY_NS,
        "get",
        "pods",
        "-l",
        &format!("app.kubernetes.io/name={name}"),
        "-o",
        "jsonpath={range .items[*]}{.spec.nodeName} {.metadata.name}{\"\\n\"}{end}",
    ]);
    let mut by = std::collections::BTreeMap::<String, Vec<String>>::new();
    for line in out.lines() {
        if let Some((node, pod)) = line.split_once(' ') {
            by.entry(node.to_owned()).or_default().push(pod.to_owned());
        }
    }
    by
}

/// A node of the two-node cluster as the test plays its daemon's
/// supervisor: its view (where its installer's restart requests arrive)
/// and its daemon.
struct FleetNode<'a> {
    name: &'static str,
    view: &'a NodeView,
    daemon: &'a mut dyn DeployNode,
    restarts: usize,
}

/// Polls `done`, restarting each node's daemon its installer asks for
/// (counted per node); fails with the cluster's state after 300 s.
fn fleet_wait(
    k: &Cluster,
    nodes: &mut [FleetNode<'_>],
    what: &str,
    mut done: impl FnMut(&Cluster) -> bool,
) {
    let deadline = Instant::now() + std::time::Duration::from_secs(300);
    loop {
        for n in nodes.iter_mut() {
            if n.view.request().exists() {
                n.daemon.restart();
                std::fs::remove_file(n.view.request()).unwrap();
                n.restarts += 1;
                eprintln!(
                    "{}: {} restarted as its installer asked",
                    n.name,
                    n.daemon.daemon()
                );
            }
        }
        if done(k) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}\n{}\n{}\n{}",
            k.kubectl(&["-n", DEPLOY_NS, "get", "pods", "-o", "wide"])
                .describe(),
            k.kubectl(&["-n", DEPLOY_NS, "describe", "pods"]).describe(),
            k.kubectl(&[
                "-n",
                DEPLOY_NS,
                "logs",
                "--tail=40",
                "--prefix",
                "-l",
                "app.kubernetes.io/name"
            ])
            .describe(),
            k.logs_tail()
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// Pod name -> (node, every container's ID and restart count) of the pods
/// of the default namespace.
fn pod_containers(k: &Cluster) -> std::collections::BTreeMap<String, String> {
    let out = k.kubectl_ok(&[
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{range .status.containerStatuses[*]} {.name}={.containerID}/{.restartCount}{end}{\"\\n\"}{end}",
    ]);
    out.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(pod, rest)| (pod.to_owned(), rest.to_owned()))
        .collect()
}

/// The container IDs in [`pod_containers`]'s lines (`NAME=SCHEME://ID/RESTARTS`).
fn container_ids(
    pods: &std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeSet<String> {
    pods.values()
        .flat_map(|line| line.split(' ').skip(1))
        .filter_map(|c| c.split_once("://")?.1.split('/').next())
        .map(str::to_owned)
        .collect()
}

/// The chart on two nodes, a containerd 2.3.4 node (`localhost`, kubelet
/// 1.37.2, on this machine's network) and a CRI-O 1.36.3 node
/// (`10.123.45.2`, kubelet 1.35.4, which declares no features: its pods
/// of the feature are bound; it, its kubelet and its host-network pods in
/// network and UTS namespaces of their own, linked to this one, where the
/// API server serves at 10.123.45.1), each kubelet with its own name,
/// address, port, root directory and daemon, each daemon with
/// its own view of the host's files (`NodeView`: its own installer state,
/// binaries and config at a node's paths). Installed with `helm install`
/// of the previous version's image, with the chart's nodeSelector naming
/// a pool only the containerd node is in: the CRI-O node gets neither the
/// installer nor the label nor the feature's pods until it joins the
/// pool; then both are registered and labelled (time to ready and daemon
/// restarts per node printed). `helm upgrade` to this checkout's image
/// with pods of the handler running on both nodes: no pod restarted, each
/// still hardened, no daemon restarted (the handler's settings are the
/// same); the records the previous version wrote are read by this one,
/// and none is left once the pods are gone. `helm uninstall` while those
/// pods still run: with a short timeout it fails naming both nodes and
/// leaves both installs as they were; with time to wait, its hooks take
/// the labels off and wait, the handlers registered, no daemon restarted,
/// helm not returning; the pods deleted, it finishes by itself: each
/// daemon's config byte for byte, one restart per node, nothing left on
/// either node.
#[test]
fn fleet_two_nodes_helm() {
    use common::crio::{Crio, Mode};
    let run = Instant::now();
    let records_before = records();
    assert!(
        common::run_capture(std::process::Command::new("podman").args([
            "image",
            "exists",
            INSTALLER_PREVIOUS
        ]))
        .success(),
        "{INSTALLER_PREVIOUS} is missing: run `make image-previous` (scripts/image-previous.sh)"
    );
    // The nodes' views read through to the host's /etc and /var/lib.
    let _host = common::host_deploy_lock();
    let mut cri = Cri::start_on(Stack::Containerd23);
    let mut crio = Crio::start_node_apart(Mode::DropInfra, "uhn-node-b");
    let node_b_namespaces = crio.namespace_pid();
    let _link = common::kubernetes::Link::connect(node_b_namespaces, FLEET_API, SECOND_NODE);
    let views = tempfile::Builder::new()
        .prefix(&format!("uhn-k8s-{}-views-", std::process::id()))
        .tempdir_in("/tmp")
        .unwrap();
    let view_a = NodeView::held(&views.path().join("a"), cri.dir(), "/etc/containerd");
    cri.restart_in_mount_namespace_of(view_a.pid());
    let view_b = NodeView::within(
        crio.namespace_pid(),
        &views.path().join("b"),
        crio.dir(),
        "/etc/crio",
    );
    let original_a = DeployNode::config_files(&cri);
    let original_b = DeployNode::config_files(&crio);

    let started = Instant::now();
    let mut k = containerd_cluster_on(&cri, common::kubernetes::KUBELET_DEFAULT, FLEET_API);
    eprintln!(
        "control plane and node localhost Ready after {:.1?}",
        started.elapsed()
    );
    let d = crio.dir().to_path_buf();
    let second = k.add_node(
        &common::kubernetes::NodeRuntime {
            socket: &d.join("crio.sock"),
            cni_conf_dir: &d.join("cni/net.d"),
            cni_bin_dir: &d.join("cni/bin"),
            cgroup_driver: "cgroupfs",
        },
        KUBELET_UNDECLARED,
        SECOND_NODE,
        Some(crio.namespace_pid()),
    );
    eprintln!("node {SECOND_NODE} Ready after {second:.1?}");

    // Both images on both nodes, no registry: this checkout's under the
    // chart's default tag, the previous version's as `previous`.
    let work = k.dir().join("fleet");
    std::fs::create_dir_all(&work).unwrap();
    for (node, sub) in [(&cri as &dyn DeployNode, "a"), (&crio, "b")] {
        std::fs::create_dir_all(work.join(sub)).unwrap();
        import_installer(node, &work.join(sub));
    }
    let tar = work.join("previous.tar");
    common::run_capture(std::process::Command::new("podman").args([
        "save",
        "--format",
        "docker-archive",
        "--output",
        tar.to_str().unwrap(),
        INSTALLER_PREVIOUS,
    ]))
    .assert_success();
    DeployNode::import_image(&cri, &tar, INSTALLER_PREVIOUS, &[INSTALLER_PREVIOUS]);
    DeployNode::import_image(&crio, &tar, INSTALLER_PREVIOUS, &[INSTALLER_PREVIOUS]);

    let home = work.join("helm");
    let service_account = fleet_credentials(&k, &work);
    fleet_post_renderer(&k, &home, &service_account);
    let chart = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/helm/userns-hostnet");
    let pool = format!("{}={}", FLEET_POOL.0, FLEET_POOL.1);
    k.kubectl_ok(&["label", "node", "localhost", &pool]);
    let mut nodes = [
        FleetNode {
            name: "localhost (containerd 2.3.4)",
            view: &view_a,
            daemon: &mut cri,
            restarts: 0,
        },
        FleetNode {
            name: "10.123.45.2 (CRI-O 1.36.3)",
            view: &view_b,
            daemon: &mut crio,
            restarts: 0,
        },
    ];

    // helm install of the previous version, the CRI-O node outside the pool.
    let install = Instant::now();
    helm(
        &k,
        &home,
        &[
            "install",
            FLEET_RELEASE,
            chart,
            "--post-renderer=uhn-node",
            "--set",
            "image.tag=previous",
            "--set",
            "image.pullPolicy=Never",
            "--set",
            &format!("handler={FLEET_HANDLER}"),
            "--set",
            "binDir=/var/lib/uhn-fleet/bin",
            "--set",
            &format!("restartCommand={FLEET_RESTART}"),
            "--set-string",
            &format!(
                "nodeSelector.{}={}",
                FLEET_POOL.0.replace('.', "\\."),
                FLEET_POOL.1
            ),
        ],
    )
    .assert_success();
    fleet_wait(&k, &mut nodes, "the installer on localhost", |k| {
        daemonset_counts(k, DEPLOY_DS) == (1, 1, 1) && node_label(k, "localhost") == "true"
    });
    let ready_a = install.elapsed();
    eprintln!(
        "localhost: installer ready and node labelled {ready_a:.1?} after helm install, {} containerd restart(s)",
        nodes[0].restarts
    );
    // The node outside the pool: no installer pod, no label.
    let by_node = daemonset_pods_by_node(&k, DEPLOY_DS);
    assert!(
        !by_node.contains_key(SECOND_NODE),
        "the installer runs on {SECOND_NODE}, outside the chart's nodeSelector: {by_node:?}"
    );
    assert_eq!(node_label(&k, SECOND_NODE), "", "{SECOND_NODE} labelled");

    // The feature's pods, left to the scheduler, land only on the
    // labelled node: two replicas of a Deployment.
    k.apply(&feature_deployment(
        "fleet",
        2,
        feature_pod("unused", WRAPPER_CLASS),
    ));
    k.wait_for("the Deployment's two pods to run", || {
        k.kubectl(&[
            "get",
            "deployment",
            "fleet",
            "-o",
            "jsonpath={.status.readyReplicas}",
        ])
        .stdout
            == "2"
    });
    let placed = pod_containers(&k);
    eprintln!("the feature's pods: {placed:#?}");
    for (pod, seen) in &placed {
        assert!(
            seen.starts_with("localhost "),
            "{pod} runs outside the labelled node: {seen}"
        );
        let selector = k.kubectl_ok(&["get", "pod", pod, "-o", "jsonpath={.spec.nodeSelector}"]);
        assert!(
            selector.contains(LABEL),
            "the RuntimeClass's nodeSelector is not on {pod}: {selector}"
        );
    }
    // Even bound to the excluded node, a pod of the class never runs
    // there: the kubelet refuses it, the RuntimeClass's selector unmet.
    let mut excluded = feature_pod("excluded", WRAPPER_CLASS);
    excluded["spec"]["nodeName"] = json!(SECOND_NODE);
    k.apply(&excluded);
    let f = fate(&k, "excluded");
    eprintln!("a pod of the class bound to {SECOND_NODE}, outside the pool: {f}");
    assert!(
        f.starts_with("Failed NodeAffinity"),
        "excluded: {f}\n{}",
        k.describe("excluded")
    );
    k.delete_pod("excluded");

    // The CRI-O node joins the pool: the installer comes, registers the
    // handler, restarts CRI-O once and labels it.
    let join = Instant::now();
    k.kubectl_ok(&["label", "node", SECOND_NODE, &pool]);
    fleet_wait(&k, &mut nodes, "the installer on both nodes", |k| {
        daemonset_counts(k, DEPLOY_DS) == (2, 2, 2) && node_label(k, SECOND_NODE) == "true"
    });
    let ready_b = join.elapsed();
    eprintln!(
        "{SECOND_NODE}: installer ready and node labelled {ready_b:.1?} after it joined the pool, {} CRI-O restart(s)",
        nodes[1].restarts
    );
    assert_eq!(
        (nodes[0].restarts, nodes[1].restarts),
        (1, 1),
        "one restart per node"
    );
    assert!(nodes[0].daemon.registered(FLEET_HANDLER) && nodes[1].daemon.registered(FLEET_HANDLER));
    k.apply(&json!({
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "uhn-check"},
        "handler": FLEET_HANDLER,
    }));
    let mut bound = feature_pod("fleet-crio", WRAPPER_CLASS);
    bound["spec"]["nodeName"] = json!(SECOND_NODE);
    k.apply(&bound);
    k.wait_running("fleet-crio");
    // Each node's host-network pods have its network and host name: the
    // CRI-O node's, those of its namespaces; the containerd node's, the
    // machine's.
    let own = |pid: &str| {
        let net = std::fs::read_link(format!("/proc/{pid}/ns/net")).unwrap();
        let host = common::run_capture(
            std::process::Command::new("nsenter")
                .arg(format!("--uts=/proc/{pid}/ns/uts"))
                .args(["cat", "/proc/sys/kernel/hostname"]),
        );
        host.assert_success();
        (net.display().to_string(), host.stdout.trim().to_owned())
    };
    let node_b = own(&node_b_namespaces.to_string());
    let machine = own("self");
    assert_eq!(node_b.1, "uhn-node-b");
    assert_ne!(node_b.0, machine.0);
    for (pod, want) in [
        ("fleet-crio".to_owned(), &node_b),
        (
            pod_containers(&k)
                .into_keys()
                .find(|p| p.starts_with("fleet-") && p != "fleet-crio")
                .unwrap(),
            &machine,
        ),
    ] {
        let seen = k.exec(
            &pod,
            "app",
            &[
                "sh",
                "-c",
                "readlink /proc/self/ns/net; cat /proc/sys/kernel/hostname",
            ],
        );
        seen.assert_success();
        let got: Vec<&str> = seen.stdout.lines().collect();
        assert_eq!(
            got,
            [want.0.as_str(), want.1.as_str()],
            "{pod}: the network namespace and host name of its node"
        );
    }
    eprintln!(
        "host-network pods: on {SECOND_NODE} {} ({}), on localhost {} ({})",
        node_b.0, node_b.1, machine.0, machine.1
    );

    // What the previous version's wrapper recorded for these pods' containers
    // (clusters beside this one add their own), read by this one.
    let written = records_of(
        records().difference(&records_before),
        &container_ids(&pod_containers(&k)),
    );
    assert!(
        !written.is_empty(),
        "the previous version recorded no container"
    );
    for path in &written {
        let bytes = std::fs::read(path).unwrap();
        assert!(
            userns_hostnet::records::Record::parse(&bytes).is_some(),
            "{path}, written by the previous version, is not read by this one: {:?}",
            String::from_utf8_lossy(&bytes)
        );
    }
    eprintln!(
        "{} record(s) written by the previous version read by this one",
        written.len()
    );
    let before = pod_containers(&k);
    for pod in before.keys() {
        assert_hardened(&look(&k, pod, "app"), &format!("{pod}, previous version"));
    }

    // helm upgrade to this checkout's image with those pods running.
    let restarts_before = (nodes[0].restarts, nodes[1].restarts);
    let upgrade = Instant::now();
    helm(
        &k,
        &home,
        &[
            "upgrade",
            FLEET_RELEASE,
            chart,
            "--post-renderer=uhn-node",
            "--reuse-values",
            "--set",
            "image.tag=",
        ],
    )
    .assert_success();
    fleet_wait(&k, &mut nodes, "the upgrade on both nodes", |k| {
        daemonset_counts(k, DEPLOY_DS) == (2, 2, 2)
            && k.kubectl(&[
                "-n",
                DEPLOY_NS,
                "get",
                "pods",
                "-l",
                &format!("app.kubernetes.io/name={DEPLOY_DS}"),
                "-o",
                "jsonpath={.items[*].spec.containers[0].image}",
            ])
            .stdout
                == format!("{INSTALLER} {INSTALLER}")
    });
    let upgrade_restarts = (
        nodes[0].restarts - restarts_before.0,
        nodes[1].restarts - restarts_before.1,
    );
    let after = pod_containers(&k);
    let restarted: Vec<&String> = before
        .keys()
        .filter(|p| before.get(*p) != after.get(*p))
        .collect();
    eprintln!(
        "helm upgrade previous -> {INSTALLER}: rolled out in {:.1?} with {} pods of the handler running, {} restarted; daemon restarts: localhost {}, {SECOND_NODE} {}",
        upgrade.elapsed(),
        before.len(),
        restarted.len(),
        upgrade_restarts.0,
        upgrade_restarts.1
    );
    assert!(
        restarted.is_empty(),
        "pods restarted by the upgrade: {before:#?} -> {after:#?}"
    );
    assert_eq!(upgrade_restarts, (0, 0), "the upgrade restarted a daemon");
    for pod in before.keys() {
        for c in ["app", "second"] {
            assert_hardened(&look(&k, pod, c), &format!("{pod} {c}, after the upgrade"));
        }
    }
    assert_eq!(
        (node_label(&k, "localhost"), node_label(&k, SECOND_NODE)),
        ("true".to_owned(), "true".to_owned())
    );

    // Removal while the handler's pods still run on both nodes. A
    // `helm uninstall` whose timeout ends first fails, naming the nodes
    // that wait, and leaves both installs in place.
    let removal = Instant::now();
    let restarts_before = (nodes[0].restarts, nodes[1].restarts);
    let refused = helm(&k, &home, &["uninstall", FLEET_RELEASE, "--timeout=20s"]);
    let said = format!("{}{}", refused.stdout, refused.stderr);
    eprintln!("helm uninstall --timeout=20s with the pods running: {said}");
    assert!(
        !refused.success()
            && said.contains(&format!(
                "waiting for the removal on 2 of 2 node(s): {SECOND_NODE}, localhost"
            )),
        "helm uninstall did not fail naming both nodes: {}",
        refused.describe()
    );
    let installed_a = nodes[0].daemon.config_files();
    let installed_b = nodes[1].daemon.config_files();
    let still_installed = |nodes: &[FleetNode<'_>], when: &str| {
        for n in nodes {
            assert!(
                n.daemon.registered(FLEET_HANDLER),
                "{}: the handler went while its pods run ({when})",
                n.name
            );
        }
        assert_eq!(
            (nodes[0].restarts, nodes[1].restarts),
            restarts_before,
            "a daemon restarted while the handler's pods run ({when})"
        );
        assert!(
            nodes[0].daemon.config_files() == installed_a
                && nodes[1].daemon.config_files() == installed_b,
            "a daemon's config changed while the handler's pods run ({when})"
        );
    };
    still_installed(&nodes, "after the refused uninstall");
    for pod in before.keys() {
        assert_hardened(
            &look(&k, pod, "app"),
            &format!("{pod}, after the refused uninstall"),
        );
    }

    // `helm uninstall` with time to wait: its hooks take the labels off at
    // once, then wait on both nodes, the handlers registered, and helm
    // does not return.
    let helm_log = work.join("helm-uninstall.log");
    let log = std::fs::File::create(&helm_log).unwrap();
    let mut uninstall = helm_command(&k, &home, &["uninstall", FLEET_RELEASE, "--timeout=10m"])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start helm");
    let waiting = |k: &Cluster| -> Vec<String> {
        daemonset_pods_by_node(k, CLEANUP_DS)
            .into_iter()
            .filter_map(|(node, pods)| {
                let log = k.kubectl(&["-n", DEPLOY_NS, "logs", &pods[0]]).stdout;
                log.lines()
                    .find(|l| l.contains("waiting: "))
                    .map(|l| format!("{node}: {l}"))
            })
            .collect()
    };
    let hook_log = |k: &Cluster| {
        k.kubectl(&["-n", DEPLOY_NS, "logs", "job/userns-hostnet-uninstall"])
            .stdout
    };
    fleet_wait(&k, &mut nodes, "the removal to wait on both nodes", |k| {
        waiting(k).len() == 2 && hook_log(k).contains("on 2 of 2 node(s)")
    });
    for line in waiting(&k) {
        eprintln!("{line}");
    }
    eprintln!("the uninstall hook: {}", hook_log(&k).trim());
    assert!(
        uninstall.try_wait().unwrap().is_none(),
        "helm uninstall returned while the handler's pods run: {}",
        std::fs::read_to_string(&helm_log).unwrap_or_default()
    );
    still_installed(&nodes, "while helm uninstall waits");
    assert_eq!(
        (node_label(&k, "localhost"), node_label(&k, SECOND_NODE)),
        (String::new(), String::new()),
        "the removal did not take the labels off first"
    );

    // The pods stopped and deleted: the removal goes on by itself and
    // helm uninstall returns.
    k.kubectl_ok(&["delete", "deployment", "fleet", "--wait=true"]);
    k.delete_pod("fleet-crio");
    fleet_wait(&k, &mut nodes, "helm uninstall to return", |_| {
        uninstall.try_wait().unwrap().is_some()
    });
    let status = uninstall.wait().unwrap();
    eprintln!("  helm uninstall {status}: {:.1?}", removal.elapsed());
    assert!(
        status.success(),
        "helm uninstall failed: {}",
        std::fs::read_to_string(&helm_log).unwrap_or_default()
    );
    for what in [
        vec!["get", "daemonset", "-n", DEPLOY_NS],
        vec!["get", "job", "-n", DEPLOY_NS],
    ] {
        let left = k.kubectl(&[&what[..], &["-o", "name"]].concat()).stdout;
        assert!(left.trim().is_empty(), "helm uninstall left {left}");
    }
    // Nothing of the feature's pods is left on either node, no record.
    for n in &nodes {
        assert_nothing_left(&format!("the feature's pods on {}", n.name), &|| {
            let mut left = Vec::new();
            for args in [&["pods"][..], &["ps", "-a"][..]] {
                let mut args = args.to_vec();
                args.extend(["--label", "io.kubernetes.pod.namespace=default", "-q"]);
                let out = n.daemon.crictl(&args);
                let what = args[0];
                left.extend(out.stdout.lines().map(|l| format!("{what}: {l}")));
            }
            left
        });
    }
    assert_no_record_left("the two-node cluster's pods", &records_before);
    for n in &nodes {
        assert_nothing_left(&format!("the release on {}", n.name), &|| {
            n.daemon.leftovers()
        });
    }
    let removal_restarts = (
        nodes[0].restarts - restarts_before.0,
        nodes[1].restarts - restarts_before.1,
    );
    eprintln!(
        "removal (waiting for the pods included) in {:.1?}: daemon restarts localhost {}, {SECOND_NODE} {}",
        removal.elapsed(),
        removal_restarts.0,
        removal_restarts.1
    );
    assert_eq!(removal_restarts, (1, 1), "one restart per node on removal");
    assert!(
        DeployNode::config_files(&cri) == original_a,
        "containerd's config differs after the removal"
    );
    assert!(
        DeployNode::config_files(&crio) == original_b,
        "CRI-O's config differs after the removal"
    );
    for (name, view) in [("localhost", &view_a), (SECOND_NODE, &view_b)] {
        let bin = view.dir.join("lib.up/uhn-fleet/bin/userns-hostnet-runtime");
        assert!(!bin.exists(), "{name}: the removal left {}", bin.display());
    }
    eprintln!(
        "two nodes: time to ready localhost {ready_a:.1?}, {SECOND_NODE} {ready_b:.1?}; the test took {:.1?}",
        run.elapsed()
    );
    k.kubectl_ok(&["delete", "runtimeclass", "uhn-check", "--ignore-not-found"]);
    drop(k);
    drop(view_b);
    drop(view_a);
}
