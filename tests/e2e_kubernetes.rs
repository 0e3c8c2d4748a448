//! Kubernetes itself drives the wrapper, one node per row: a single-node
//! cluster on loopback (tests/common/kubernetes.rs: etcd 3.5,
//! kube-apiserver, controller manager, scheduler and kubelet 1.37.2 built
//! by scripts/kubernetes.sh; on some rows kubelet 1.35.4, the newest that
//! sends the feature's pod to a daemon that does not declare the feature)
//! on each row of the version matrix (docs/kubernetes.md), its CRI daemon
//! the private one of tests/common/cri.rs or tests/common/crio.rs.
//!
//! Each row runs the pods of the feature, `hostNetwork: true` +
//! `hostUsers: false`, through a RuntimeClass of the wrapper's handler and
//! one of the plain runtime's (tests/common/kube_pods.rs), and asserts what
//! the pod saw, read through `kubectl exec`; what the kubelet decided
//! (events); and that deleting leaves nothing behind. Each row starts a
//! whole cluster of its own; scripts/kubernetes-tier.sh runs a few side by
//! side (a cluster mostly waits on the kubelet's pace).
//!
//! The installer's DaemonSet (deploy/) with its rollout is in
//! tests/e2e_kubernetes_upgrade.rs (and on the containerd 2.3.4 row here);
//! the two-node cluster with the Helm chart in tests/e2e_kubernetes_fleet.rs.
//!
//! Prerequisites (root, runc, crun, busybox-static, jq, openssl, uidmap,
//! containernetworking-plugins, the CRI daemons of `scripts/cri-tools.sh`
//! and the components of `scripts/kubernetes.sh`) fail the tests when
//! missing.

mod common;

use std::time::Instant;

use common::cri::{handler, Cri, Stack};
use common::kube_deploy::scenario_daemonset;
use common::kube_pods::*;
use common::kubernetes::{
    containerd_cluster, containerd_cluster_with, crio_cluster, Cluster, KUBELET_UNDECLARED,
};
use serde_json::{json, Value};

/// The feature pod through the wrapper: Running, hardened in both
/// containers, init container done, logs readable, then deleted with
/// nothing left behind.
fn scenario_hardened_pod(k: &Cluster, cri_leftovers: &dyn Fn() -> Vec<String>) {
    scenario_hardened(k, &feature_pod("hardened", WRAPPER_CLASS), cri_leftovers);
}

/// As scenario_hardened_pod, for `pod` (the feature pod, scheduled or bound).
fn scenario_hardened(k: &Cluster, pod_object: &Value, cri_leftovers: &dyn Fn() -> Vec<String>) {
    let pod = pod_object["metadata"]["name"].as_str().unwrap();
    let started = Instant::now();
    k.apply(pod_object);
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

/// Twenty of the feature's pods (one container each, made by `pod_of`
/// from a name: scheduled or bound) applied at once all run through the
/// wrapper, each in a user namespace of its own, and leave nothing behind.
fn scenario_twenty_at_once(
    k: &Cluster,
    pod_of: &dyn Fn(&str) -> Value,
    cri_leftovers: &dyn Fn() -> Vec<String>,
) {
    let names: Vec<String> = (0..20).map(|i| format!("many-{i}")).collect();
    let pods: Vec<Value> = names
        .iter()
        .map(|name| {
            let mut pod = pod_of(name);
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
    let records_before = records();
    let mut cri = Cri::start_on(Stack::Containerd23);
    let k = containerd_cluster(&cri);
    let declared = k.declared_features();
    eprintln!("containerd 2.3.4 node declares {declared:?}");
    runtime_classes(&k, handler::WRAPPER, handler::RUNC);

    scenario_daemonset(&k, &mut cri, &|pod| pod);
    runtime_classes(&k, handler::WRAPPER, handler::RUNC);
    scenario_hardened_pod(&k, &|| cri.leftovers());
    scenario_twenty_at_once(&k, &|name| feature_pod(name, WRAPPER_CLASS), &|| {
        cri.leftovers()
    });

    // containerd restarts under a running pod: the pod keeps running, can
    // be exec'd into and deleted afterwards.
    k.apply(&feature_pod("survivor", WRAPPER_CLASS));
    k.wait_running("survivor");
    cri.restart();
    assert_eq!(k.phase("survivor"), "Running", "{}", k.describe("survivor"));
    wait_exec_again(&k, "survivor", "app");
    assert_hardened(&look(&k, "survivor", "app"), "after containerd restarted");
    k.delete_pod("survivor");
    assert_nothing_left("deleting the pod after the restart", &|| cri.leftovers());

    // The same pod on runc 1.4.3 alone runs too, as containerd 2.3.4
    // converts /sys itself; the network capabilities of the kubelet's
    // default set (NET_BIND_SERVICE, NET_RAW) stay, which the wrapper takes.
    scenario_plain_keeps_net_caps(
        &k,
        &feature_pod("plain", PLAIN_CLASS),
        "containerd 2.3.4 + runc 1.4.3",
    );

    scenario_net_sysctl_refused(&k);
    let daemon = cri.containerd().pid().expect("containerd runs");
    let through = scenario_host_mounts_later(&k, daemon, feature_pod("later", WRAPPER_CLASS), true);
    let alone =
        scenario_host_mounts_later(&k, daemon, feature_pod("later-plain", PLAIN_CLASS), false);
    eprintln!("containerd 2.3.4 + runc 1.4.3, a mount the node makes under /sys later: alone {alone}, through the wrapper {through}");
    scenario_host_sys_volume(&k, &|name| feature_pod(name, WRAPPER_CLASS));
    scenario_failing_creates_leave_no_record(&k, feature_pod("failing", WRAPPER_CLASS), &|| {
        cri.leftovers()
    });
    start_time_ratio(&k);
    assert_nothing_left("the row", &|| cri.leftovers());
    assert_no_record_left("the containerd 2.3.4 row", &records_before);
}

/// A pod whose container's create the runtime fails after the wrapper
/// converted it (its command does not exist): the kubelet retries it, and
/// once the pod is deleted no record of those creates is left.
fn scenario_failing_creates_leave_no_record(
    k: &Cluster,
    pod_object: Value,
    cri_leftovers: &dyn Fn() -> Vec<String>,
) {
    let before = records();
    let mut pod = pod_object;
    let name = pod["metadata"]["name"].as_str().unwrap().to_owned();
    pod["spec"]["initContainers"] = json!([]);
    let mut app = container("app");
    app["command"] = json!(["/no-such-command"]);
    pod["spec"]["containers"] = json!([app]);
    k.apply(&pod);
    // Three failed creates at least: the kubelet's back-off retries.
    let deadline = Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let restarts = k.kubectl_ok(&[
            "get",
            "pod",
            &name,
            "-o",
            "jsonpath={.status.containerStatuses[0].restartCount}",
        ]);
        let failed = k
            .events(&name)
            .iter()
            .filter(|e| e.contains("Failed"))
            .count();
        if restarts.parse::<u32>().unwrap_or(0) >= 2 || failed >= 3 {
            eprintln!("{name}: restarts {restarts:?}, failure events {failed}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: the kubelet did not retry the failing container\n{}",
            k.describe(&name)
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    k.delete_pod(&name);
    assert_nothing_left(&format!("deleting {name}"), cri_leftovers);
    assert_no_record_left(&format!("{name}'s failed creates"), &before);
}

/// A hostPath volume of the host's /sys, read-only and not: the daemons
/// ask for an idmapped bind, which sysfs cannot be; through the wrapper the
/// pod runs with the volume bound like its own /sys, read-only all the way
/// down, whatever it asked.
fn scenario_host_sys_volume(k: &Cluster, pod_of: &dyn Fn(&str) -> Value) {
    for read_only in [true, false] {
        let name = if read_only {
            "host-sys-ro"
        } else {
            "host-sys-rw"
        };
        let mut pod = pod_of(name);
        pod["spec"]["initContainers"] = json!([]);
        let mut app = container("app");
        app["volumeMounts"] =
            json!([{"name": "host-sys", "mountPath": "/host/sys", "readOnly": read_only}]);
        pod["spec"]["containers"] = json!([app]);
        pod["spec"]["volumes"] = json!([{"name": "host-sys", "hostPath": {"path": "/sys"}}]);
        k.apply(&pod);
        let f = fate(k, name);
        assert_eq!(f, "Running", "{name}: {f}\n{}", k.describe(name));
        let p = look(k, name, "app");
        assert_hardened(&p, name);
        let volume: Vec<&common::MountEntry> = p
            .mounts
            .iter()
            .filter(|m| m.is_at_or_under("/host/sys"))
            .collect();
        let writable: Vec<String> = volume
            .iter()
            .filter(|m| !m.has("ro"))
            .map(|m| format!("{} {} {}", m.mount_point, m.fstype, m.options.join(",")))
            .collect();
        assert!(
            !volume.is_empty() && writable.is_empty(),
            "{name}: the hostPath of /sys is not read-only all the way down: {writable:#?}\n{}",
            p.table()
        );
        eprintln!(
            "{name}: Running, /host/sys {} mounts, all read-only",
            volume.len()
        );
        k.delete_pod(name);
    }
}

/// The feature's pod `pod` on the plain runtime's class runs, in its own
/// user namespace, keeping network capabilities the wrapper would drop.
fn scenario_plain_keeps_net_caps(k: &Cluster, pod: &Value, stack: &str) {
    let name = pod["metadata"]["name"].as_str().unwrap();
    k.apply(pod);
    k.wait_running(name);
    let plain = look(k, name, "app");
    let what = format!("without the wrapper ({stack})");
    eprintln!("{}", summary(&what, &plain));
    assert_own_uid_map(&plain);
    assert!(
        !net_caps(&plain).is_empty(),
        "{stack} alone was expected to keep network capabilities\n{}",
        summary(&what, &plain)
    );
    k.delete_pod(name);
}

/// containerd 1.7 reports no runtime features, so the node does not
/// declare UserNamespacesHostNetworkSupport: the scheduler finds no node
/// for the feature's pod, and the kubelet rejects one bound to it, with the
/// wrapper's handler as with runc's. The wrapper cannot change what the
/// daemon reports.
#[test]
fn containerd_1_7_kubelet_1_37() {
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
    let crio = Crio::start_matrix(Mode::DropInfra);
    let k = crio_cluster(&crio, common::kubernetes::KUBELET_DEFAULT);
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

/// kubelet 1.35.4, the newest whose UserNamespacesHostNetworkSupport works
/// without NodeDeclaredFeatures (its alpha default, off), on containerd
/// 1.7.24 + runc 1.1.5. It runs pods there (one in the host's user
/// namespace, through the wrapper), but containerd 1.7 reports no runtime
/// handlers in its CRI status, so the kubelet takes every handler for one
/// without user namespaces and refuses the feature's pod before any
/// sandbox, the wrapper's as runc's: no kubelet that admits the feature
/// runs it on containerd 1.7, wrapper or not.
#[test]
fn containerd_1_7_kubelet_1_35() {
    let cri = Cri::start_on(Stack::Containerd17);
    let k = containerd_cluster_with(&cri, KUBELET_UNDECLARED);
    runtime_classes(&k, handler::WRAPPER, handler::RUNC);
    eprintln!(
        "containerd 1.7.24 node, kubelet {KUBELET_UNDECLARED}: runtimeHandlers {:?}",
        k.kubectl_ok(&[
            "get",
            "node",
            &k.node,
            "-o",
            "jsonpath={.status.runtimeHandlers}"
        ])
    );
    let mut host_users = feature_pod("host-users", WRAPPER_CLASS);
    host_users["spec"]["hostUsers"] = json!(true);
    k.apply(&host_users);
    k.wait_running("host-users");
    k.delete_pod("host-users");
    for (name, class) in [
        ("bound-wrapper", WRAPPER_CLASS),
        ("bound-plain", PLAIN_CLASS),
    ] {
        k.apply(&bound_pod(&k, name, class));
        let f = fate(&k, name);
        eprintln!("{name}: {f}");
        assert!(
            f.contains("FailedCreatePodSandBox") && f.contains("does not support user namespaces"),
            "{name}: {f}\n{}",
            k.describe(name)
        );
        k.delete_pod(name);
    }
    assert_nothing_left("the row", &|| cri.leftovers());
}

/// kubelet 1.35.4 on CRI-O 1.36.3 (`drop_infra_ctr = true`, its default).
/// CRI-O says a handler supports user namespaces when its runtime's
/// `features` lists idmapped mounts; the wrapper answers `features` with
/// its runtime's. So runc 1.1.5 and crun 1.8.1 handlers are refused by the
/// kubelet before any sandbox, wrapper or not; on runc 1.4.3 the kubelet
/// sends the feature's pod (bound to the node: the 1.37 scheduler wants
/// the feature declared, which this kubelet does not do). Alone it runs
/// with network capabilities; through the wrapper it runs hardened, twenty
/// at once too, survives a CRI-O restart, and is deleted with nothing
/// left; the start-time ratio is measured on this row as well.
#[test]
fn crio_kubelet_1_35() {
    use common::crio::{handler as crio_handler, matrix_handler, Crio, Mode};
    let records_before = records();
    let mut crio = Crio::start_matrix(Mode::DropInfra);
    let k = crio_cluster(&crio, KUBELET_UNDECLARED);
    eprintln!(
        "CRI-O 1.36.3 node, kubelet {KUBELET_UNDECLARED}: runtimeHandlers {}",
        k.kubectl_ok(&[
            "get",
            "node",
            &k.node,
            "-o",
            "jsonpath={.status.runtimeHandlers}"
        ])
    );
    for (class, handler) in [
        ("wrapper-runc115", crio_handler::WRAPPER),
        ("runc115", crio_handler::RUNC),
        ("wrapper-crun", matrix_handler::WRAPPER_CRUN),
        ("crun", matrix_handler::CRUN_STEPPED),
    ] {
        k.apply(&json!({
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": class},
            "handler": handler,
        }));
        let name = format!("bound-{class}");
        k.apply(&bound_pod(&k, &name, class));
        let f = fate(&k, &name);
        eprintln!("{name}: {f}");
        assert!(
            f.contains("FailedCreatePodSandBox")
                && f.contains(&format!(
                    "RuntimeClass handler \"{handler}\" does not support user namespaces"
                )),
            "{name}: {f}\n{}",
            k.describe(&name)
        );
        k.delete_pod(&name);
    }

    runtime_classes(&k, matrix_handler::WRAPPER_RUNC_14, matrix_handler::RUNC_14);
    // Left to the 1.37 scheduler, the pod finds no node: this kubelet
    // declares no features.
    k.apply(&feature_pod("scheduled", WRAPPER_CLASS));
    let f = fate(&k, "scheduled");
    eprintln!("scheduled: {f}");
    assert!(
        f.contains("FailedScheduling") && f.contains("didn't match Pod's required features"),
        "scheduled: {f}\n{}",
        k.describe("scheduled")
    );
    k.delete_pod("scheduled");
    scenario_plain_keeps_net_caps(
        &k,
        &bound_pod(&k, "plain", PLAIN_CLASS),
        "CRI-O 1.36.3 + runc 1.4.3",
    );

    scenario_hardened(&k, &bound_pod(&k, "hardened", WRAPPER_CLASS), &|| {
        crio.leftovers()
    });
    scenario_twenty_at_once(&k, &|name| bound_pod(&k, name, WRAPPER_CLASS), &|| {
        crio.leftovers()
    });

    // CRI-O restarts under a running pod: it keeps running, can be exec'd
    // into and deleted afterwards.
    k.apply(&bound_pod(&k, "survivor", WRAPPER_CLASS));
    k.wait_running("survivor");
    crio.restart();
    assert_eq!(k.phase("survivor"), "Running", "{}", k.describe("survivor"));
    wait_exec_again(&k, "survivor", "app");
    assert_hardened(&look(&k, "survivor", "app"), "after CRI-O restarted");
    k.delete_pod("survivor");
    assert_nothing_left("deleting the pod after the restart", &|| crio.leftovers());
    scenario_net_sysctl_refused(&k);
    scenario_host_sys_volume(&k, &|name| bound_pod(&k, name, WRAPPER_CLASS));
    scenario_failing_creates_leave_no_record(&k, bound_pod(&k, "failing", WRAPPER_CLASS), &|| {
        crio.leftovers()
    });
    start_time_ratio(&k);
    assert_nothing_left("the row", &|| crio.leftovers());
    assert_no_record_left("the CRI-O 1.36.3 row", &records_before);
    drop(k);
    let left = crio.leftovers();
    assert!(left.is_empty(), "left behind: {left:#?}");
}

/// As scenario_hardened, on crun 1.27.1 through the wrapper: Running,
/// both containers hardened (nothing under /sys writable: crun's cgroup2
/// goes onto the wrapper's read-only tmpfs at /sys/fs/cgroup), the init
/// container done, logs readable, deleted with nothing left behind.
fn scenario_hardened_on_crun_127(
    k: &Cluster,
    pod_object: &Value,
    cri_leftovers: &dyn Fn() -> Vec<String>,
) {
    let pod = pod_object["metadata"]["name"].as_str().unwrap();
    k.apply(pod_object);
    k.wait_running(pod);
    for c in ["app", "second"] {
        assert_hardened(
            &look(k, pod, c),
            &format!("through the wrapper onto crun 1.27.1, {c}"),
        );
    }
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

/// What a container of the feature's pod on `class` saw, for the matrix
/// of docs/kubernetes.md: CapBnd, every mount at or under /sys (read-only
/// or not), `/proc/self/cgroup`, what is mounted at /sys/fs/cgroup and
/// whether its root can write there (a file, or a cgroup, made and
/// removed).
fn stack_view(k: &Cluster, pod: Value) -> String {
    const CGROUP: &str = "cat /proc/self/cgroup | tr '\\n' ' '; \
         if touch /sys/fs/cgroup/uhn-w 2>/dev/null; then echo '| writable'; rm -f /sys/fs/cgroup/uhn-w; \
         elif mkdir /sys/fs/cgroup/uhn-w 2>/dev/null; then echo '| writable (mkdir)'; rmdir /sys/fs/cgroup/uhn-w; \
         else echo '| not writable'; fi";
    let name = pod["metadata"]["name"].as_str().unwrap().to_owned();
    let mut pod = pod;
    pod["spec"]["initContainers"] = json!([]);
    pod["spec"]["containers"] = json!([container("app")]);
    k.apply(&pod);
    k.wait_running(&name);
    let p = look(k, &name, "app");
    let cgroup = k.exec(&name, "app", &["/bin/sh", "-c", CGROUP]);
    assert!(cgroup.success(), "{}", cgroup.describe());
    k.delete_pod(&name);
    let sys = p.under_sys();
    let rw: Vec<String> = sys
        .iter()
        .filter(|m| !m.has("ro"))
        .map(|m| format!("{} {}", m.mount_point, m.fstype))
        .collect();
    let top = p
        .topmost("/sys/fs/cgroup")
        .map(|m| {
            format!(
                "{} root={} {}",
                m.fstype,
                m.root,
                if m.has("ro") { "ro" } else { "rw" }
            )
        })
        .unwrap_or_else(|| "nothing".into());
    format!(
        "CapBnd {:016x} (net caps {:?}); /sys: {} mounts, {} rw {rw:?}; /sys/fs/cgroup: {top}; /proc/self/cgroup: {}",
        p.cap_bnd(),
        net_caps(&p),
        sys.len(),
        rw.len(),
        cgroup.stdout.trim()
    )
}

/// The row's stack alone (the plain class) and through the wrapper, side
/// by side, printed for the matrix.
fn scenario_stack_views(k: &Cluster, label: &str, pod_of: &dyn Fn(&str, &str) -> Value) {
    let alone = stack_view(k, pod_of("view-plain", PLAIN_CLASS));
    let through = stack_view(k, pod_of("view-wrapper", WRAPPER_CLASS));
    eprintln!("{label} alone: {alone}\n{label} through the wrapper: {through}");
}

/// The row's RuntimeClasses, made again for other handlers (a
/// RuntimeClass's handler cannot change).
fn runtime_classes_again(k: &Cluster, wrapper: &str, plain: &str) {
    k.kubectl_ok(&[
        "delete",
        "runtimeclass",
        WRAPPER_CLASS,
        PLAIN_CLASS,
        "--ignore-not-found",
    ]);
    runtime_classes(k, wrapper, plain);
}

/// The newest stacks on one node, kubelet 1.37.2: containerd 2.4.2 with
/// runc 1.5.3 (its own runc, the `runc` handler and the wrapper's), then
/// crun 1.27.1 behind handlers of the same daemon (one cluster for both
/// rows). containerd 2.4.2 declares the feature: the scheduler places the
/// pods. On runc 1.5.3 the feature's pod runs hardened through the wrapper
/// (init container, two containers, logs, deletion), a hostPath of /sys is
/// read-only all the way down, failed creates leave no record, and a pod
/// survives a containerd restart. On crun 1.27.1 it runs hardened too,
/// nothing under /sys writable. On each, alone the pod
/// keeps network capabilities, and the stack alone and through the wrapper
/// are printed side by side.
#[test]
fn containerd_2_4_runc_1_5_and_crun_1_27_kubelet_1_37() {
    let records_before = records();
    let mut cri = Cri::start_on(Stack::Containerd24);
    let k = containerd_cluster(&cri);
    let declared = k.declared_features();
    eprintln!("containerd 2.4.2 node declares {declared:?}");
    assert!(
        declared
            .iter()
            .any(|f| f == "UserNamespacesHostNetworkSupport"),
        "containerd 2.4.2 was expected to declare the feature: {declared:?}"
    );
    let label = "containerd 2.4.2 + runc 1.5.3";
    runtime_classes(&k, handler::WRAPPER, handler::RUNC);
    scenario_hardened_pod(&k, &|| cri.leftovers());
    scenario_plain_keeps_net_caps(&k, &feature_pod("plain", PLAIN_CLASS), label);
    scenario_stack_views(&k, label, &feature_pod);
    scenario_host_sys_volume(&k, &|name| feature_pod(name, WRAPPER_CLASS));
    scenario_failing_creates_leave_no_record(&k, feature_pod("failing", WRAPPER_CLASS), &|| {
        cri.leftovers()
    });

    let label = "containerd 2.4.2 + crun 1.27.1";
    runtime_classes_again(&k, handler::WRAPPER_CRUN_127, handler::CRUN_127);
    scenario_hardened_on_crun_127(&k, &feature_pod("hardened", WRAPPER_CLASS), &|| {
        cri.leftovers()
    });
    scenario_plain_keeps_net_caps(&k, &feature_pod("plain", PLAIN_CLASS), label);
    scenario_stack_views(&k, label, &feature_pod);
    scenario_failing_creates_leave_no_record(&k, feature_pod("failing", WRAPPER_CLASS), &|| {
        cri.leftovers()
    });

    runtime_classes_again(&k, handler::WRAPPER, handler::RUNC);
    k.apply(&feature_pod("survivor", WRAPPER_CLASS));
    k.wait_running("survivor");
    cri.restart();
    assert_eq!(k.phase("survivor"), "Running", "{}", k.describe("survivor"));
    wait_exec_again(&k, "survivor", "app");
    assert_hardened(
        &look(&k, "survivor", "app"),
        "after containerd 2.4.2 restarted",
    );
    k.delete_pod("survivor");
    scenario_net_sysctl_refused(&k);
    assert_nothing_left("the row", &|| cri.leftovers());
    assert_no_record_left("the containerd 2.4.2 row", &records_before);
}

/// A Deployment of `n` of the feature's pods (one container each, left to
/// the scheduler) rolled out through the wrapper's class and through the
/// plain runtime's, in the order wrapper, plain, plain, wrapper (a drift
/// of the machine falls on both): the time from `kubectl apply` to all
/// `n` ready, printed (speed is not asserted: `bench/kubelet.sh`), every
/// pod Running, one of each wrapper rollout hardened, and nothing left
/// once each Deployment is deleted.
fn scenario_rollout(k: &Cluster, n: u32, cri_leftovers: &dyn Fn() -> Vec<String>) {
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for (i, class) in [WRAPPER_CLASS, PLAIN_CLASS, PLAIN_CLASS, WRAPPER_CLASS]
        .into_iter()
        .enumerate()
    {
        let name = format!("rollout-{i}");
        let mut pod = feature_pod("unused", class);
        pod["spec"]["initContainers"] = json!([]);
        pod["spec"]["containers"] = json!([container("app")]);
        let started = Instant::now();
        k.apply(&feature_deployment(&name, n, pod));
        k.wait_for(
            &format!("the {n} pods of {name} ({class}) to be ready"),
            || {
                k.kubectl(&[
                    "get",
                    "deployment",
                    &name,
                    "-o",
                    "jsonpath={.status.readyReplicas}",
                ])
                .stdout
                    == n.to_string()
            },
        );
        let took = started.elapsed().as_secs_f64();
        times[usize::from(class == PLAIN_CLASS)].push(took);
        let pods = k.kubectl_ok(&[
            "get",
            "pods",
            "-l",
            &format!("app={name}"),
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.status.phase}{\"\\n\"}{end}",
        ]);
        let running: Vec<&str> = pods
            .lines()
            .filter_map(|l| l.strip_suffix(" Running"))
            .collect();
        assert_eq!(running.len(), n as usize, "{name} ({class}): {pods}");
        if class == WRAPPER_CLASS {
            assert_hardened(
                &look(k, running[0], "app"),
                &format!("{name}'s {}", running[0]),
            );
        }
        k.kubectl_ok(&[
            "delete",
            "deployment",
            &name,
            "--wait=true",
            "--timeout=180s",
        ]);
        k.kubectl_ok(&[
            "wait",
            "--for=delete",
            "pods",
            "-l",
            &format!("app={name}"),
            "--timeout=180s",
        ]);
        assert_nothing_left(&format!("deleting {name} ({class})"), cri_leftovers);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (w, p) = (mean(&times[0]), mean(&times[1]));
    eprintln!(
        "a Deployment of {n} pods, apply to all ready: wrapper {w:.1} s, runc alone {p:.1} s, ratio {:.3} (wrapper {:?}, runc alone {:?})",
        w / p,
        times[0],
        times[1]
    );
}

/// The kubelet's load row: thirty of the feature's pods at once on the
/// newest containerd and runc, through the wrapper and runc alone
/// (`scenario_rollout`).
#[test]
fn containerd_2_4_rollout_of_thirty_kubelet_1_37() {
    let records_before = records();
    let cri = Cri::start_on(Stack::Containerd24);
    let k = containerd_cluster(&cri);
    runtime_classes(&k, handler::WRAPPER, handler::RUNC);
    scenario_rollout(&k, 30, &|| cri.leftovers());
    assert_nothing_left("the row", &|| cri.leftovers());
    assert_no_record_left("the rollout row", &records_before);
}

/// crun 1.27.1 behind CRI-O 1.36.3 under kubelet 1.35.4 (which sends the
/// feature's pod to a handler whose runtime's `features` lists idmapped
/// mounts, as crun 1.27.1's does; bound to the node: this kubelet declares
/// no features). Alone it runs with network capabilities; through the
/// wrapper it runs hardened, a hostPath of /sys read-only all the way
/// down; the stack alone and through the wrapper printed side by side.
#[test]
fn crio_crun_1_27_kubelet_1_35() {
    use common::crio::{matrix_handler, Crio, Mode};
    let records_before = records();
    let crio = Crio::start_matrix(Mode::DropInfra);
    let k = crio_cluster(&crio, KUBELET_UNDECLARED);
    let label = "CRI-O 1.36.3 + crun 1.27.1";
    runtime_classes(
        &k,
        matrix_handler::WRAPPER_CRUN_127,
        matrix_handler::CRUN_127,
    );
    scenario_plain_keeps_net_caps(&k, &bound_pod(&k, "plain", PLAIN_CLASS), label);
    scenario_stack_views(&k, label, &|name, class| bound_pod(&k, name, class));
    scenario_hardened_on_crun_127(&k, &bound_pod(&k, "hardened", WRAPPER_CLASS), &|| {
        crio.leftovers()
    });
    assert_nothing_left("the row", &|| crio.leftovers());
    assert_no_record_left("the CRI-O 1.36.3 + crun 1.27.1 row", &records_before);
    drop(k);
    let left = crio.leftovers();
    assert!(left.is_empty(), "left behind: {left:#?}");
}
