//! Kubernetes itself drives the wrapper: a single-node cluster on loopback
//! (tests/common/kubernetes.rs: etcd 3.5, kube-apiserver, controller
//! manager, scheduler and kubelet 1.37.2 built by scripts/kubernetes.sh)
//! on each row of the version matrix (docs/kubernetes.md), its CRI daemon
//! the private one of tests/common/cri.rs or tests/common/crio.rs.
//!
//! Each row runs the pods of the feature, `hostNetwork: true` +
//! `hostUsers: false`, through a RuntimeClass of the wrapper's handler and
//! one of the plain runtime's, and asserts what the pod saw, read through
//! `kubectl exec`; what the kubelet decided (events); and that deleting
//! leaves nothing behind. The rows run one after the other: each starts a
//! whole cluster, and two at once would starve a 2-core machine.
//!
//! Prerequisites (root, runc, crun, busybox-static, jq, openssl,
//! containernetworking-plugins, the CRI daemons of `scripts/cri-tools.sh`
//! and the components of `scripts/kubernetes.sh`) fail the tests when
//! missing.

mod common;

use std::sync::Mutex;
use std::time::Instant;

use common::cri::{handler, Cri, Stack, APP_IMAGE};
use common::kubernetes::{Cluster, NodeRuntime};
use common::{has_cap_bit, Probe, NET_CAP_BITS};
use serde_json::{json, Value};

/// One cluster at a time.
static ROW: Mutex<()> = Mutex::new(());

fn one_row() -> std::sync::MutexGuard<'static, ()> {
    ROW.lock().unwrap_or_else(|e| e.into_inner())
}

/// The RuntimeClasses every row offers: the wrapper's handler and the plain
/// runtime's.
const WRAPPER_CLASS: &str = "userns-hostnet";
const PLAIN_CLASS: &str = "plain";

fn containerd_cluster(cri: &Cri) -> Cluster {
    let d = cri.dir();
    Cluster::start(&NodeRuntime {
        socket: &d.join("sock"),
        cni_conf_dir: &d.join("cni/conf"),
        cni_bin_dir: &d.join("cni/bin"),
        cgroup_driver: "cgroupfs",
    })
}

fn runtime_classes(k: &Cluster, wrapper: &str, plain: &str) {
    for (name, handler) in [(WRAPPER_CLASS, wrapper), (PLAIN_CLASS, plain)] {
        k.apply(&json!({
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name},
            "handler": handler,
        }));
    }
}

fn container(name: &str) -> Value {
    json!({
        "name": name,
        "image": APP_IMAGE,
        "imagePullPolicy": "Never",
        "env": [{"name": "HOSTNAME_TAG", "value": name}],
    })
}

/// The feature's pod: host network, own user namespace, two containers and
/// an init container, on `class`.
fn feature_pod(name: &str, class: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "hostNetwork": true,
            "hostUsers": false,
            "runtimeClassName": class,
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "terminationGracePeriodSeconds": 2,
            "initContainers": [{
                "name": "init",
                "image": APP_IMAGE,
                "imagePullPolicy": "Never",
                "command": ["/bin/sh", "-c", "echo init-done"],
            }],
            "containers": [container("app"), container("second")],
        },
    })
}

/// What a container of a running pod saw, through `kubectl exec`.
fn look(k: &Cluster, pod: &str, container: &str) -> Probe {
    let out = k.exec(pod, container, &["/bin/sh", "-c", common::PROBE_SCRIPT]);
    assert!(
        out.success(),
        "kubectl exec into {pod}/{container} failed\n{}\n{}",
        out.describe(),
        k.logs_tail()
    );
    Probe::parse(&out.stdout)
}

/// The container sees its own cgroup: the topmost mount at /sys/fs/cgroup
/// is a cgroup2 whose root is `/` (made in its cgroup namespace).
fn sees_own_cgroup(p: &Probe) -> bool {
    p.topmost("/sys/fs/cgroup")
        .is_some_and(|m| m.fstype == "cgroup2" && m.root == "/")
}

fn net_caps(p: &Probe) -> Vec<u32> {
    let bnd = p.cap_bnd();
    NET_CAP_BITS
        .iter()
        .copied()
        .filter(|b| has_cap_bit(bnd, *b))
        .collect()
}

/// One line for the test log and the docs' matrix.
fn summary(what: &str, p: &Probe) -> String {
    let writable: Vec<String> = common::writable_under_sys(p)
        .iter()
        .map(|m| m.mount_point.clone())
        .collect();
    format!(
        "{what}: CapBnd {:016x} (net caps present: {:?}), writable under /sys: {:?}, own cgroup: {}, uid_map: {}",
        p.cap_bnd(),
        net_caps(p),
        writable,
        sees_own_cgroup(p),
        p.uid_map.split_whitespace().collect::<Vec<_>>().join(" ")
    )
}

/// The user namespace the kubelet asked for: root maps to a non-zero host
/// ID, 65536 IDs.
fn assert_own_uid_map(p: &Probe) {
    let map: Vec<&str> = p.uid_map.split_whitespace().collect();
    assert!(
        map.len() == 3 && map[0] == "0" && map[1] != "0" && map[2] == "65536",
        "uid_map is not a pod user namespace of the kubelet's: {}",
        p.uid_map
    );
}

/// Running through the wrapper: hardened as the feature needs.
fn assert_hardened(p: &Probe, what: &str) {
    eprintln!("{}", summary(what, p));
    assert!(
        net_caps(p).is_empty(),
        "{what}: CapBnd {:016x} keeps network capabilities {:?}",
        p.cap_bnd(),
        net_caps(p)
    );
    let writable = common::writable_under_sys(p);
    assert!(
        !p.under_sys().is_empty() && writable.is_empty(),
        "{what}: mounts under /sys not read-only: {writable:?}\n{}",
        p.table()
    );
    assert_own_uid_map(p);
    assert!(
        sees_own_cgroup(p),
        "{what}: /sys/fs/cgroup is not the container's own cgroup2\n{}",
        p.table()
    );
    assert!(
        has_cap_bit(p.cap_bnd(), common::CAP_CHOWN_BIT),
        "{what}: CAP_CHOWN went too"
    );
}

/// The feature pod through the wrapper: Running, hardened in both
/// containers, init container done, logs readable, then deleted with
/// nothing left behind.
fn scenario_hardened_pod(k: &Cluster, cri_leftovers: &dyn Fn() -> Vec<String>) {
    let pod = "hardened";
    let started = Instant::now();
    k.apply(&feature_pod(pod, WRAPPER_CLASS));
    k.wait_running(pod);
    eprintln!("{pod}: Running after {:?}", started.elapsed());
    for c in ["app", "second"] {
        assert_hardened(&look(k, pod, c), &format!("through the wrapper, {c}"));
    }
    let init_exit = k.kubectl_ok(&[
        "get",
        "pod",
        pod,
        "-o",
        "jsonpath={.status.initContainerStatuses[0].state.terminated.exitCode}",
    ]);
    assert_eq!(init_exit, "0", "the init container did not finish well");
    let init_log = k.kubectl_ok(&["logs", pod, "-c", "init"]);
    assert!(init_log.contains("init-done"), "init log: {init_log:?}");
    for c in ["app", "second"] {
        let log = k.kubectl_ok(&["logs", pod, "-c", c]);
        assert!(
            log.contains(&format!("app-started-{c}")),
            "kubectl logs {pod} -c {c}: {log:?}"
        );
    }
    k.delete_pod(pod);
    assert_nothing_left(&format!("deleting {pod}"), cri_leftovers);
}

/// The kubelet removes a deleted pod's sandbox on its own schedule after
/// the API object is gone: allow it 90 s to leave nothing behind.
fn assert_nothing_left(what: &str, leftovers: &dyn Fn() -> Vec<String>) {
    let deadline = Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let left = leftovers();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "{what} left: {left:#?}");
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// Twenty of the feature's pods (one container each) applied at once all
/// run through the wrapper, each in a user namespace of its own, and
/// leave nothing behind.
fn scenario_twenty_at_once(k: &Cluster, cri_leftovers: &dyn Fn() -> Vec<String>) {
    let names: Vec<String> = (0..20).map(|i| format!("many-{i}")).collect();
    let pods: Vec<Value> = names
        .iter()
        .map(|name| {
            let mut pod = feature_pod(name, WRAPPER_CLASS);
            pod["spec"]["initContainers"] = json!([]);
            pod["spec"]["containers"] = json!([container("app")]);
            pod
        })
        .collect();
    let started = Instant::now();
    k.apply(
        &json!({"apiVersion": "v1", "kind": "List", "metadata": {"name": "many"}, "items": pods}),
    );
    let mut maps = std::collections::BTreeSet::new();
    for name in &names {
        k.wait_running(name);
    }
    eprintln!("20 pods at once: all Running after {:?}", started.elapsed());
    for name in &names {
        let p = look(k, name, "app");
        assert!(net_caps(&p).is_empty(), "{name}: {}", summary(name, &p));
        assert_own_uid_map(&p);
        maps.insert(
            p.uid_map
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_string(),
        );
    }
    assert_eq!(maps.len(), 20, "the 20 pods share host ID ranges: {maps:?}");
    k.kubectl_ok(&["delete", "pods", "--all", "--wait=true", "--timeout=180s"]);
    assert_nothing_left("deleting the 20 pods", cri_leftovers);
}

/// A `net.*` sysctl on a host-network pod never reaches the node: the API
/// server refuses the pod.
fn scenario_net_sysctl_refused(k: &Cluster) {
    let mut pod = feature_pod("sysctl", WRAPPER_CLASS);
    pod["spec"]["securityContext"] =
        json!({"sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]});
    let file = k.dir().join("sysctl-pod.json");
    std::fs::write(&file, serde_json::to_vec(&pod).unwrap()).unwrap();
    let out = k.kubectl(&["apply", "-f", file.to_str().unwrap()]);
    eprintln!("net.* sysctl pod: {}", out.stderr.trim());
    assert!(
        !out.success()
            && out
                .stderr
                .contains("may not be specified when 'hostNetwork' is true"),
        "the API server was expected to refuse a net.* sysctl on a host-network pod\n{}",
        out.describe()
    );
}

#[test]
fn containerd_2_3_kubelet_1_37() {
    let _row = one_row();
    let mut cri = Cri::start_on(Stack::Containerd23);
    let k = containerd_cluster(&cri);
    let declared = k.declared_features();
    eprintln!("containerd 2.3.4 node declares {declared:?}");
    runtime_classes(&k, handler::WRAPPER, handler::RUNC);

    scenario_hardened_pod(&k, &|| cri.leftovers());
    scenario_twenty_at_once(&k, &|| cri.leftovers());

    // containerd restarts under a running pod: the pod keeps running, can
    // be exec'd into and deleted afterwards.
    k.apply(&feature_pod("survivor", WRAPPER_CLASS));
    k.wait_running("survivor");
    cri.restart();
    assert_eq!(k.phase("survivor"), "Running", "{}", k.describe("survivor"));
    assert_hardened(&look(&k, "survivor", "app"), "after containerd restarted");
    k.delete_pod("survivor");
    assert_nothing_left("deleting the pod after the restart", &|| cri.leftovers());

    // The same pod on runc 1.4.3 alone runs too, as containerd 2.3.4
    // converts /sys itself; the network capabilities of the kubelet's
    // default set (NET_BIND_SERVICE, NET_RAW) stay, which the wrapper takes.
    k.apply(&feature_pod("plain", PLAIN_CLASS));
    k.wait_running("plain");
    let plain = look(&k, "plain", "app");
    eprintln!("{}", summary("without the wrapper", &plain));
    assert_own_uid_map(&plain);
    assert!(
        !net_caps(&plain).is_empty(),
        "containerd 2.3.4 + runc 1.4.3 alone was expected to keep network capabilities\n{}",
        summary("without the wrapper", &plain)
    );
    k.delete_pod("plain");

    scenario_net_sysctl_refused(&k);
    start_time_ratio(&k);
    assert_nothing_left("the row", &|| cri.leftovers());
}

/// Where a pod ended up within the start timeout: `Running`, or the first
/// event that says why not (a scheduling failure, the kubelet's refusal at
/// admission, a failed sandbox or container).
fn fate(k: &Cluster, pod: &str) -> String {
    let deadline = Instant::now() + std::time::Duration::from_secs(180);
    loop {
        let phase = k.phase(pod);
        if phase == "Running" {
            return "Running".to_string();
        }
        let events = k.events(pod);
        if let Some(e) = events.iter().find(|e| {
            e.starts_with("Warning ")
                && [
                    "FailedScheduling",
                    "FailedCreatePodSandBox",
                    "Failed:",
                    "UnexpectedAdmissionError",
                    "NodeDeclaredFeatures",
                    "UserNamespaces",
                ]
                .iter()
                .any(|r| e.contains(r))
        }) {
            return e.clone();
        }
        if phase == "Failed" {
            let reason = k.kubectl_ok(&[
                "get",
                "pod",
                pod,
                "-o",
                "jsonpath={.status.reason}: {.status.message}",
            ]);
            return format!("Failed {reason}");
        }
        assert!(
            Instant::now() < deadline,
            "pod {pod} neither ran nor failed\n{}\n{}",
            k.describe(pod),
            k.logs_tail()
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// The feature pod bound to the node directly: the scheduler is not asked,
/// the kubelet's admission decides.
fn bound_pod(k: &Cluster, name: &str, class: &str) -> Value {
    let mut pod = feature_pod(name, class);
    pod["spec"]["nodeName"] = json!(k.node);
    pod
}

/// containerd 1.7 reports no runtime features, so the node does not
/// declare UserNamespacesHostNetworkSupport: the scheduler finds no node
/// for the feature's pod, and the kubelet rejects one bound to it, with the
/// wrapper's handler as with runc's. The wrapper cannot change what the
/// daemon reports.
#[test]
fn containerd_1_7_kubelet_1_37() {
    let _row = one_row();
    let cri = Cri::start_on(Stack::Containerd17);
    let k = containerd_cluster(&cri);
    runtime_classes(&k, handler::WRAPPER, handler::RUNC);
    scenario_feature_not_declared(&k, "containerd 1.7.24");
    assert_nothing_left("the row", &|| cri.leftovers());
}

/// A node whose CRI daemon does not report `user_namespaces_host_network`
/// does not declare UserNamespacesHostNetworkSupport: the scheduler finds
/// no node for the feature's pod, and the kubelet rejects one bound to it,
/// with the wrapper's handler as with the plain runtime's. The wrapper
/// cannot change what the daemon reports.
fn scenario_feature_not_declared(k: &Cluster, label: &str) {
    let declared = k.declared_features();
    eprintln!("{label} node declares {declared:?}");
    assert!(
        !declared
            .iter()
            .any(|f| f == "UserNamespacesHostNetworkSupport"),
        "{label} was not expected to declare the feature: {declared:?}"
    );
    for (name, class) in [
        ("scheduled-wrapper", WRAPPER_CLASS),
        ("scheduled-plain", PLAIN_CLASS),
    ] {
        k.apply(&feature_pod(name, class));
        let f = fate(k, name);
        eprintln!("{name}: {f}");
        assert!(
            f.contains("FailedScheduling") && f.contains("didn't match Pod's required features"),
            "{name}: {f}\n{}",
            k.describe(name)
        );
    }
    for (name, class) in [
        ("bound-wrapper", WRAPPER_CLASS),
        ("bound-plain", PLAIN_CLASS),
    ] {
        k.apply(&bound_pod(k, name, class));
        let f = fate(k, name);
        eprintln!("{name}: {f}");
        assert!(
            f.contains("PodFeatureUnsupported")
                && f.contains("Pod requires node features that are not available: UserNamespacesHostNetworkSupport"),
            "{name}: {f}\n{}",
            k.describe(name)
        );
    }
    for name in [
        "scheduled-wrapper",
        "scheduled-plain",
        "bound-wrapper",
        "bound-plain",
    ] {
        k.delete_pod(name);
    }
}

/// Time from `kubectl apply` to Running for a host-network pod without a
/// user namespace, through the wrapper and through runc alone, 10 pods
/// each, alternating; printed (speed is not asserted).
fn start_time_ratio(k: &Cluster) {
    let mut times = [Vec::new(), Vec::new()];
    for i in 0..10 {
        for (slot, class) in [WRAPPER_CLASS, PLAIN_CLASS].into_iter().enumerate() {
            let name = format!("start-{class}-{i}");
            let mut pod = feature_pod(&name, class);
            pod["spec"]["hostUsers"] = json!(true);
            pod["spec"]["initContainers"] = json!([]);
            pod["spec"]["containers"] = json!([container("app")]);
            let started = Instant::now();
            k.apply(&pod);
            k.wait_running(&name);
            times[slot].push(started.elapsed().as_secs_f64());
        }
    }
    let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    let (w, p) = (mean(&times[0]), mean(&times[1]));
    eprintln!(
        "apply to Running, 10 pods each: wrapper {w:.2} s, runc alone {p:.2} s, ratio {:.2}\n  wrapper {:?}\n  runc {:?}",
        w / p,
        times[0],
        times[1]
    );
    k.kubectl_ok(&["delete", "pods", "--all", "--wait=true", "--timeout=180s"]);
}

fn crio_row(wrapper: &str, plain: &str) {
    use common::crio::{Crio, Mode};
    let _row = one_row();
    let crio = Crio::start_matrix(Mode::DropInfra);
    let d = crio.dir().to_path_buf();
    let k = Cluster::start(&NodeRuntime {
        socket: &d.join("crio.sock"),
        cni_conf_dir: &d.join("cni/net.d"),
        cni_bin_dir: &d.join("cni/bin"),
        cgroup_driver: "cgroupfs",
    });
    runtime_classes(&k, wrapper, plain);
    scenario_feature_not_declared(&k, "CRI-O 1.36.3");
    drop(k);
    let left = crio.leftovers();
    assert!(left.is_empty(), "left behind: {left:#?}");
}

#[test]
fn crio_runc_kubelet_1_37() {
    crio_row(common::crio::handler::WRAPPER, common::crio::handler::RUNC);
}

#[test]
fn crio_crun_kubelet_1_37() {
    use common::crio::matrix_handler;
    crio_row(matrix_handler::WRAPPER_CRUN, matrix_handler::CRUN_STEPPED);
}
