//! Kubernetes itself drives the wrapper: a single-node cluster on loopback
//! (tests/common/kubernetes.rs: etcd 3.5, kube-apiserver, controller
//! manager, scheduler and kubelet 1.37.2 built by scripts/kubernetes.sh;
//! on some rows kubelet 1.35.4, the newest that sends the feature's pod to
//! a daemon that does not declare the feature) on each row of the version
//! matrix (docs/kubernetes.md), its CRI daemon the private one of
//! tests/common/cri.rs or tests/common/crio.rs.
//!
//! Each row runs the pods of the feature, `hostNetwork: true` +
//! `hostUsers: false`, through a RuntimeClass of the wrapper's handler and
//! one of the plain runtime's, and asserts what the pod saw, read through
//! `kubectl exec`; what the kubelet decided (events); and that deleting
//! leaves nothing behind. The rows run one after the other: each starts a
//! whole cluster, and two at once would starve a 2-core machine.
//!
//! One cluster has two nodes (`fleet_two_nodes_helm`): a containerd 2.3.4
//! node and a CRI-O 1.36.3 node, installed, upgraded from the previous
//! version's installer image (`make image-previous`) with pods running,
//! and removed with the Helm chart (helm 4.3.2, `make helm`).
//!
//! Prerequisites (root, runc, crun, busybox-static, jq, openssl,
//! containernetworking-plugins, the CRI daemons of `scripts/cri-tools.sh`
//! and the components of `scripts/kubernetes.sh`) fail the tests when
//! missing.

mod common;

use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

use common::cri::{handler, Cri, Stack, APP_IMAGE};
use common::kubernetes::{Cluster, NodeRuntime, KUBELET_UNDECLARED};
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
    containerd_cluster_with(cri, common::kubernetes::KUBELET_DEFAULT)
}

fn containerd_cluster_with(cri: &Cri, kubelet: &str) -> Cluster {
    containerd_cluster_on(cri, kubelet, "127.0.0.1")
}

/// The API server serving on `api_address`.
fn containerd_cluster_on(cri: &Cri, kubelet: &str, api_address: &str) -> Cluster {
    let d = cri.dir();
    Cluster::start_on(
        &NodeRuntime {
            socket: &d.join("sock"),
            cni_conf_dir: &d.join("cni/conf"),
            cni_bin_dir: &d.join("cni/bin"),
            cgroup_driver: "cgroupfs",
        },
        kubelet,
        api_address,
    )
}

fn crio_cluster(crio: &common::crio::Crio, kubelet: &str) -> Cluster {
    let d = crio.dir();
    Cluster::start_with_kubelet(
        &NodeRuntime {
            socket: &d.join("crio.sock"),
            cni_conf_dir: &d.join("cni/net.d"),
            cni_bin_dir: &d.join("cni/bin"),
            cgroup_driver: "cgroupfs",
        },
        kubelet,
    )
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

/// A Deployment named `name` of `replicas` copies of `pod`'s spec (left
/// to the scheduler), stopped within 2 s when deleted.
fn feature_deployment(name: &str, replicas: u32, pod: Value) -> Value {
    let mut spec = pod["spec"].clone();
    spec["terminationGracePeriodSeconds"] = json!(2);
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
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
    let _row = one_row();
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

/// Every file under the wrapper's records of converted containers. Rows
/// run one at a time, so what a row adds is its own.
fn records() -> std::collections::BTreeSet<String> {
    fn walk(dir: &std::path::Path, out: &mut std::collections::BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&path, out);
            } else {
                out.insert(path.display().to_string());
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(
        std::path::Path::new("/run/userns-hostnet/converted"),
        &mut out,
    );
    out
}

/// No record of a converted container outlives its pod: what the row
/// added is gone once its pods are (allowing the kubelet's own pace).
fn assert_no_record_left(what: &str, before: &std::collections::BTreeSet<String>) {
    let deadline = Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let left: Vec<String> = records().difference(before).cloned().collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: records outlived their pods: {left:#?}"
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
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

/// A mount the node makes under /sys after the pod started (`daemon_pid`
/// holds the daemon's mount namespace, whose mounts are shared as a
/// systemd host's are): what the pod's container sees of it, in a word for
/// the matrix; through the wrapper it never arrives writable.
fn scenario_host_mounts_later(k: &Cluster, daemon_pid: u32, pod: Value, wrapper: bool) -> String {
    const LATER: &str = "/sys/kernel/mm";
    let name = pod["metadata"]["name"].as_str().unwrap().to_owned();
    let mut pod = pod;
    pod["spec"]["initContainers"] = json!([]);
    pod["spec"]["containers"] = json!([container("app")]);
    k.apply(&pod);
    k.wait_running(&name);
    let ns = format!("--target={daemon_pid}");
    let mounted = common::run_capture(Command::new("nsenter").args([
        ns.as_str(),
        "--mount",
        "mount",
        "-t",
        "tmpfs",
        "-o",
        "size=64k",
        "later",
        LATER,
    ]));
    assert!(mounted.success(), "{}", mounted.describe());
    let out = k.exec(&name, "app", &["cat", "/proc/self/mountinfo"]);
    let unmounted = common::run_capture(Command::new("nsenter").args([
        ns.as_str(),
        "--mount",
        "umount",
        LATER,
    ]));
    assert!(out.success(), "{}", out.describe());
    assert!(unmounted.success(), "{}", unmounted.describe());
    let seen: Vec<common::MountEntry> = common::parse_mountinfo(&out.stdout)
        .into_iter()
        .filter(|m| m.is_at_or_under(LATER))
        .collect();
    let word = if seen.is_empty() {
        "does not arrive"
    } else if seen.iter().any(|m| !m.has("ro")) {
        "arrives writable"
    } else {
        "arrives read-only"
    };
    eprintln!("{name}: a tmpfs the node mounted at {LATER} after the pod started {word}");
    if wrapper {
        assert_ne!(word, "arrives writable", "{name}: {seen:#?}");
    }
    k.delete_pod(&name);
    word.to_owned()
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
    let _row = one_row();
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
    let _row = one_row();
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
    let _row = one_row();
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

/// The installer image as deploy/ names it, and the tag of its rollout.
const INSTALLER: &str = "localhost/userns-hostnet-installer:0.1.0";
const INSTALLER_ROLLOUT: &str = "localhost/userns-hostnet-installer:0.1.0-rollout";
const DEPLOY_NS: &str = "userns-hostnet-system";
const DEPLOY_DS: &str = "userns-hostnet-deploy";
const CLEANUP_DS: &str = "userns-hostnet-cleanup";
/// The handler the DaemonSet registers (a name no other tier uses).
const DEPLOYED_HANDLER: &str = "uhn-k8s-deployed";
/// The node label deploy sets and the RuntimeClass selects on.
const LABEL: &str = "userns-hostnet.io/installed";

/// The node's CRI daemon as deploy/ meets it.
trait DeployNode {
    /// What the installer's USERNS_HOSTNET_DAEMON names.
    fn daemon(&self) -> &'static str;
    /// The configuration file the installer is given.
    fn config(&self) -> std::path::PathBuf;
    /// Every file of the daemon's configuration install may write, with
    /// its bytes: what removal must give back.
    fn config_files(&self) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>;
    /// Does the configuration define `handler`?
    fn registered(&self, handler: &str) -> bool;
    /// Restarts the daemon on its configuration, as its supervisor would.
    fn restart(&mut self);
    /// Imports the docker-archive `tar` (image `private`) into the node's
    /// image store under each of `names`.
    fn import_image(&self, tar: &std::path::Path, private: &str, names: &[&str]);
    /// What of its pods the daemon still holds (pods, containers, runtime
    /// state, mounts, processes).
    fn leftovers(&self) -> Vec<String>;
    /// crictl against the daemon.
    fn crictl(&self, args: &[&str]) -> common::Outcome;
}

impl DeployNode for Cri {
    fn daemon(&self) -> &'static str {
        "containerd"
    }
    fn config(&self) -> std::path::PathBuf {
        self.dir().join("config.toml")
    }
    fn config_files(&self) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
        let config = DeployNode::config(self);
        let bytes = std::fs::read(&config).unwrap();
        [(config, bytes)].into()
    }
    fn registered(&self, handler: &str) -> bool {
        std::fs::read_to_string(DeployNode::config(self))
            .unwrap()
            .contains(&format!("runtimes.{handler}]"))
    }
    fn restart(&mut self) {
        Cri::restart(self);
    }
    fn leftovers(&self) -> Vec<String> {
        Cri::leftovers(self)
    }
    fn crictl(&self, args: &[&str]) -> common::Outcome {
        common::crictl::Crictl::crictl(self, args)
    }
    fn import_image(&self, tar: &std::path::Path, private: &str, names: &[&str]) {
        let ctd = self.containerd();
        ctd.ctr(&["-n", "k8s.io", "images", "import", tar.to_str().unwrap()])
            .assert_success();
        for name in names {
            ctd.ctr(&["-n", "k8s.io", "images", "tag", private, name])
                .assert_success();
        }
    }
}

impl DeployNode for common::crio::Crio {
    fn daemon(&self) -> &'static str {
        "crio"
    }
    fn config(&self) -> std::path::PathBuf {
        self.dir().join("crio.conf")
    }
    /// crio.conf and every file of crio.conf.d, where install writes.
    fn config_files(&self) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
        let mut files = std::collections::BTreeMap::new();
        let config = DeployNode::config(self);
        files.insert(config.clone(), std::fs::read(&config).unwrap());
        for e in std::fs::read_dir(self.dir().join("crio.conf.d")).unwrap() {
            let path = e.unwrap().path();
            files.insert(path.clone(), std::fs::read(&path).unwrap());
        }
        files
    }
    fn registered(&self, handler: &str) -> bool {
        let table = format!("[crio.runtime.runtimes.{handler}]");
        self.config_files()
            .values()
            .any(|bytes| String::from_utf8_lossy(bytes).contains(&table))
    }
    fn restart(&mut self) {
        common::crio::Crio::restart(self);
    }
    fn leftovers(&self) -> Vec<String> {
        common::crio::Crio::leftovers(self)
    }
    fn crictl(&self, args: &[&str]) -> common::Outcome {
        common::crictl::Crictl::crictl(self, args)
    }
    fn import_image(&self, tar: &std::path::Path, _private: &str, names: &[&str]) {
        for name in names {
            common::crio::Crio::import_image(self, tar, name);
        }
    }
}

/// The installer image of this checkout (`make image` stages its static
/// binaries in target/image; built here under a private tag, as
/// tests/e2e_deploy.rs does, since podman's store is shared), saved and
/// imported into the node's image store (containerd's k8s.io namespace)
/// under the name deploy/ gives it and the rollout's tag: no registry.
fn import_installer(node: &dyn DeployNode, dir: &std::path::Path) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let stage = root.join("target/image");
    assert!(
        stage.join("userns-hostnet").is_file() && stage.join("userns-hostnet-runtime").is_file(),
        "{} holds no installer binaries: run `make image` first",
        stage.display()
    );
    let private = format!(
        "localhost/userns-hostnet-installer:uhn-k8s-{}",
        std::process::id()
    );
    let podman = |args: &[&str]| {
        common::run_capture(std::process::Command::new("podman").args(args)).assert_success();
    };
    let containerfile = root.join("Containerfile");
    podman(&[
        "build",
        "--quiet",
        "--file",
        containerfile.to_str().unwrap(),
        "--tag",
        &private,
        stage.to_str().unwrap(),
    ]);
    let tar = dir.join("installer.tar");
    podman(&[
        "save",
        "--format",
        "docker-archive",
        "--output",
        tar.to_str().unwrap(),
        &private,
    ]);
    node.import_image(&tar, &private, &[INSTALLER, INSTALLER_ROLLOUT]);
    podman(&["rmi", &private]);
}

/// The environment an operator of this node gives the installer: its
/// containerd's config file and handler name, a bin directory, the restart
/// of a containerd systemd does not run (here: the test plays its
/// supervisor, asked through `request`), and the API server's address
/// (this cluster has no kube-proxy, so the installer runs on the host's
/// network and dials the API server directly).
fn installer_env(
    k: &Cluster,
    node: &dyn DeployNode,
    bin: &std::path::Path,
    request: &std::path::Path,
) -> Value {
    let restart = format!(
        "touch {r} && while [ -e {r} ]; do sleep 0.2; done",
        r = request.display()
    );
    json!([
        {"name": "KUBERNETES_SERVICE_HOST", "value": k.api().0},
        {"name": "KUBERNETES_SERVICE_PORT", "value": k.api().1.to_string()},
        {"name": "USERNS_HOSTNET_DAEMON", "value": node.daemon()},
        {"name": "USERNS_HOSTNET_DAEMON_CONFIG", "value": node.config()},
        {"name": "USERNS_HOSTNET_HANDLER", "value": DEPLOYED_HANDLER},
        {"name": "USERNS_HOSTNET_BIN_DIR", "value": bin},
        {"name": "USERNS_HOSTNET_RESTART_COMMAND", "value": restart},
    ])
}

/// A kustomize overlay of deploy/ (or deploy/cleanup/) in `dir`: the
/// installer's environment for this node, on the host's network, and the
/// RuntimeClass naming the handler it registers.
fn write_overlay(
    dir: &std::path::Path,
    base: &str,
    daemonset: &str,
    container: &str,
    env: &Value,
    service_account: &std::path::Path,
) {
    std::fs::create_dir_all(dir).unwrap();
    // kustomize takes a base by relative path only.
    let dir = std::fs::canonicalize(dir).unwrap();
    let up = "../".repeat(dir.components().count() - 1);
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(base);
    let base = format!("{up}{}", base.strip_prefix("/").unwrap().display());
    let mut patches = vec![json!({"path": "daemonset.yaml"})];
    let ds = json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": daemonset, "namespace": DEPLOY_NS},
        "spec": {"template": {"spec": {
            "hostNetwork": true,
            // The private containerd's mount namespace is private
            // (tests/common/containerd.rs), so its `/` can be bound only
            // without propagation; a node whose `/` is shared (systemd's)
            // takes deploy/'s HostToContainer as shipped.
            // The kubelet's projected volumes are tmpfs mounts in its own
            // private mount namespace, which the private containerd never
            // sees (tests/common/kubernetes.rs): the service account's
            // token (from the TokenRequest API) and CA reach the pod from
            // a host directory at the path Kubernetes mounts them.
            "automountServiceAccountToken": false,
            "volumes": [{"name": "service-account", "hostPath": {"path": service_account, "type": "Directory"}}],
            "containers": [{
                "name": container,
                "env": env,
                "volumeMounts": [
                    {
                        "name": "host-root",
                        "mountPath": "/host",
                        "mountPropagation": "None",
                    },
                    {
                        "name": "service-account",
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "readOnly": true,
                    },
                ],
            }],
        }}},
    });
    std::fs::write(dir.join("daemonset.yaml"), ds.to_string()).unwrap();
    if daemonset == DEPLOY_DS {
        let rc = json!({
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": WRAPPER_CLASS},
            "handler": DEPLOYED_HANDLER,
        });
        std::fs::write(dir.join("runtimeclass.yaml"), rc.to_string()).unwrap();
        patches.push(json!({"path": "runtimeclass.yaml"}));
    }
    let kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [base],
        "patches": patches,
    });
    std::fs::write(dir.join("kustomization.yaml"), kustomization.to_string()).unwrap();
}

/// The installer's service account, made ahead of deploy/ (whose apply
/// keeps it), and its token from the TokenRequest API with the cluster's CA
/// in a directory of the host: where the pod's are found.
fn installer_credentials(k: &Cluster, work: &std::path::Path) -> std::path::PathBuf {
    k.kubectl_ok(&["create", "namespace", DEPLOY_NS]);
    k.kubectl_ok(&["-n", DEPLOY_NS, "create", "serviceaccount", DEPLOY_DS]);
    service_account_dir(k, work)
}

/// A token of the installer's service account, the cluster's CA and the
/// namespace, laid out as a pod finds them.
fn service_account_dir(k: &Cluster, work: &std::path::Path) -> std::path::PathBuf {
    let token = k.kubectl_ok(&[
        "-n",
        DEPLOY_NS,
        "create",
        "token",
        DEPLOY_DS,
        "--duration=1h",
    ]);
    let dir = work.join("service-account");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("token"), token.trim()).unwrap();
    std::fs::copy(k.dir().join("pki/ca.crt"), dir.join("ca.crt")).unwrap();
    std::fs::write(dir.join("namespace"), DEPLOY_NS).unwrap();
    dir
}

/// Whether the node carries the installer's label.
fn node_labelled(k: &Cluster) -> bool {
    k.kubectl(&[
        "get",
        "node",
        "localhost",
        "-o",
        "jsonpath={.metadata.labels.userns-hostnet\\.io/installed}",
    ])
    .stdout
        == "true"
}

/// The DaemonSet's ready pods and how many it wants.
fn daemonset_ready(k: &Cluster, name: &str) -> bool {
    let out = k.kubectl(&[
        "-n",
        DEPLOY_NS,
        "get",
        "daemonset",
        name,
        "-o",
        "jsonpath={.status.numberReady}/{.status.desiredNumberScheduled}/{.status.updatedNumberScheduled}",
    ]);
    out.stdout == "1/1/1"
}

/// Polls `done`, playing the supervisor of the private containerd: when
/// the installer's restart command asks (the request file exists), the
/// daemon is restarted on its config and the request removed. How many
/// restarts it made.
fn wait_serving_restarts(
    k: &Cluster,
    node: &mut dyn DeployNode,
    request: &std::path::Path,
    what: &str,
    done: impl Fn(&Cluster) -> bool,
) -> usize {
    let deadline = Instant::now() + std::time::Duration::from_secs(240);
    let mut restarts = 0;
    loop {
        if request.exists() {
            node.restart();
            std::fs::remove_file(request).unwrap();
            restarts += 1;
        }
        if done(k) {
            return restarts;
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
                "-l",
                "app.kubernetes.io/name"
            ])
            .describe(),
            k.logs_tail()
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// The one pod of a Deployment (or DaemonSet) selected by `app`.
fn pod_of(k: &Cluster, ns: &str, selector: &str) -> String {
    let out = k.kubectl(&[
        "-n",
        ns,
        "get",
        "pods",
        "-l",
        selector,
        "--field-selector=status.phase=Running",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    out.stdout
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_owned()
}

/// Undoes the installer's work on this host whatever happened (the
/// product's own undo, from its recorded state), so that a failed run
/// leaves no handler links or state behind.
struct HostUndo {
    daemon: &'static str,
    config: std::path::PathBuf,
}

impl Drop for HostUndo {
    fn drop(&mut self) {
        let out = common::run_capture(
            std::process::Command::new(common::TOOL)
                .args([
                    "deploy",
                    "--uninstall",
                    "--host-root",
                    "/",
                    "--daemon",
                    self.daemon,
                ])
                .arg("--daemon-config")
                .arg(&self.config)
                .args(["--handler", DEPLOYED_HANDLER])
                .env_remove("NODE_NAME")
                .env_remove("KUBERNETES_SERVICE_HOST"),
        );
        if !out.success() {
            eprintln!("undoing the installer's work failed\n{}", out.describe());
        }
    }
}

/// `kubectl apply -k` of deploy/ through an overlay for this node: the
/// DaemonSet's pod registers the handler with the product's own install
/// (nothing is registered beforehand), restarts the daemon through the
/// operator's restart command, labels the node; the RuntimeClass's
/// nodeSelector schedules a Deployment of the feature's pod, which runs
/// hardened. A rollout of the DaemonSet and a deletion of its pod leave
/// that pod running and exec-able, and pods of the class start during and
/// after. Removal is the deliberate cleanup DaemonSet: the label and the
/// handler go, the daemon's config is byte for byte what it was.
///
/// `place` puts a pod where it must go: as it is where the scheduler can
/// place the feature's pods, else bound to the node.
fn scenario_daemonset(k: &Cluster, node: &mut dyn DeployNode, place: &dyn Fn(Value) -> Value) {
    let scenario = Instant::now();
    let work = k.dir().join("deploy");
    std::fs::create_dir_all(&work).unwrap();
    let daemon = node.daemon();
    let original = node.config_files();
    assert!(
        !node.registered(DEPLOYED_HANDLER),
        "the handler is registered before the installer ran"
    );
    let request = work.join("restart-requested");
    let bin = work.join("bin");
    let _undo = HostUndo {
        daemon,
        config: node.config(),
    };
    import_installer(node, &work);
    let env = installer_env(k, node, &bin, &request);
    let overlay = work.join("overlay");
    let service_account = installer_credentials(k, &work);
    write_overlay(
        &overlay,
        "deploy",
        DEPLOY_DS,
        "deploy",
        &env,
        &service_account,
    );
    // The row's own RuntimeClass of that name goes: deploy/ brings its own.
    k.kubectl_ok(&[
        "delete",
        "runtimeclass",
        WRAPPER_CLASS,
        "--ignore-not-found",
    ]);

    let started = Instant::now();
    k.kubectl_ok(&["apply", "-k", overlay.to_str().unwrap()]);
    let restarts = wait_serving_restarts(k, node, &request, "the installer to be ready", |k| {
        daemonset_ready(k, DEPLOY_DS) && node_labelled(k)
    });
    eprintln!(
        "DaemonSet ready and node labelled after {:?} ({restarts} {daemon} restart(s) asked for)",
        started.elapsed()
    );
    // What an operator checks, for the record of a run.
    for args in [
        &["-n", DEPLOY_NS, "get", "pods", "-o", "wide"][..],
        &[
            "-n",
            DEPLOY_NS,
            "logs",
            "--tail=-1",
            "-l",
            "app.kubernetes.io/name",
        ][..],
        &["get", "node", "localhost", "--show-labels"][..],
    ] {
        eprintln!(
            "kubectl {}\n{}",
            args.join(" "),
            k.kubectl_ok(args).trim_end()
        );
    }
    assert_eq!(restarts, 1, "the installer asked for one restart");
    assert!(
        node.registered(DEPLOYED_HANDLER),
        "the installer did not register {DEPLOYED_HANDLER} in {}: {:#?}",
        node.config().display(),
        node.config_files().keys()
    );
    for name in ["userns-hostnet-runtime", "userns-hostnet"] {
        assert!(
            bin.join(name).is_file(),
            "{name} not copied to {}",
            bin.display()
        );
    }

    // The RuntimeClass's nodeSelector schedules a Deployment of the
    // feature's pod onto the labelled node.
    k.apply(&feature_deployment(
        "hardened-deployment",
        1,
        place(feature_pod("unused", WRAPPER_CLASS)),
    ));
    k.wait_for("the Deployment's pod to run", || {
        !pod_of(k, "default", "app=hardened-deployment").is_empty()
    });
    let pod = pod_of(k, "default", "app=hardened-deployment");
    let selector = k.kubectl_ok(&["get", "pod", &pod, "-o", "jsonpath={.spec.nodeSelector}"]);
    assert!(
        selector.contains(LABEL),
        "the RuntimeClass's nodeSelector is not on the pod: {selector}"
    );
    for c in ["app", "second"] {
        assert_hardened(&look(k, &pod, c), &format!("deployed handler, {c}"));
    }

    // A rollout (a new tag of the same image): the running pod keeps
    // running, and a pod of the class starts while it goes on.
    k.kubectl_ok(&[
        "-n",
        DEPLOY_NS,
        "set",
        "image",
        &format!("daemonset/{DEPLOY_DS}"),
        &format!("deploy={INSTALLER_ROLLOUT}"),
    ]);
    k.apply(&place(feature_pod("during-rollout", WRAPPER_CLASS)));
    let restarts = wait_serving_restarts(k, node, &request, "the rollout", |k| {
        daemonset_ready(k, DEPLOY_DS)
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
                == INSTALLER_ROLLOUT
    });
    assert_eq!(
        restarts, 0,
        "a rollout of the same binaries restarts nothing"
    );
    k.wait_running("during-rollout");
    assert_hardened(
        &look(k, "during-rollout", "app"),
        "a pod started during the rollout",
    );
    assert_eq!(k.phase(&pod), "Running", "{}", k.describe(&pod));
    assert_hardened(
        &look(k, &pod, "app"),
        "the Deployment's pod after the rollout",
    );
    assert!(node_labelled(k), "the rollout removed the node's label");

    // The DaemonSet's pod deleted: nothing is undone.
    let installer = pod_of(k, DEPLOY_NS, &format!("app.kubernetes.io/name={DEPLOY_DS}"));
    k.kubectl_ok(&["-n", DEPLOY_NS, "delete", "pod", &installer, "--wait=true"]);
    assert!(
        node_labelled(k),
        "deleting the installer's pod removed the label"
    );
    assert!(
        node.registered(DEPLOYED_HANDLER),
        "deleting the installer's pod removed the handler"
    );
    k.apply(&place(feature_pod("after-delete", WRAPPER_CLASS)));
    k.wait_running("after-delete");
    assert_hardened(
        &look(k, "after-delete", "app"),
        "a pod started after the installer's pod went",
    );
    assert_eq!(k.phase(&pod), "Running", "{}", k.describe(&pod));
    assert_hardened(
        &look(k, &pod, "app"),
        "the Deployment's pod after its installer's deletion",
    );
    wait_serving_restarts(k, node, &request, "the installer's new pod", |k| {
        daemonset_ready(k, DEPLOY_DS)
    });

    // Removal, as the operator does it: the workloads of the class go,
    // the installer goes (leaving the install), the cleanup DaemonSet
    // undoes it.
    k.kubectl_ok(&["delete", "deployment", "hardened-deployment", "--wait=true"]);
    k.delete_pod("during-rollout");
    k.delete_pod("after-delete");
    k.kubectl_ok(&[
        "-n",
        DEPLOY_NS,
        "delete",
        "daemonset",
        DEPLOY_DS,
        "--wait=true",
    ]);
    assert!(node_labelled(k), "deleting the installer removed the label");
    // A deleted pod's stopped containers stay on the node until the
    // kubelet's garbage collection removes them; CRI-O restarted without
    // the handler can no longer remove those of the class (it looks the
    // container's handler up to delete it), so the cleanup waits for them.
    assert_nothing_left("the deleted pods, before the cleanup", &|| node.leftovers());
    let cleanup = work.join("cleanup");
    write_overlay(
        &cleanup,
        "deploy/cleanup",
        CLEANUP_DS,
        "cleanup",
        &env,
        &service_account,
    );
    k.kubectl_ok(&["apply", "-k", cleanup.to_str().unwrap()]);
    let restarts = wait_serving_restarts(k, node, &request, "the cleanup", |k| {
        daemonset_ready(k, CLEANUP_DS) && !node_labelled(k)
    });
    assert_eq!(restarts, 1, "the cleanup asked for one restart");
    assert!(
        node.config_files() == original,
        "the cleanup left the daemon's config changed: {:#?} (was {:#?})",
        node.config_files().keys(),
        original.keys()
    );
    assert!(
        !bin.join("userns-hostnet-runtime").exists(),
        "the cleanup left the wrapper"
    );
    k.kubectl_ok(&["delete", "-k", cleanup.to_str().unwrap(), "--wait=true"]);
    // The DaemonSet is gone already: the documented command ignores it.
    k.kubectl_ok(&[
        "delete",
        "-k",
        overlay.to_str().unwrap(),
        "--ignore-not-found",
        "--wait=true",
    ]);
    eprintln!(
        "deploy/ applied, rolled out, its pod deleted and removed in {:?}",
        scenario.elapsed()
    );
}

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
    cmd.args(args)
        .arg(format!("--kubeconfig={}", k.kubeconfig().display()))
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
            "meta.helm.sh/release-namespace": "default",
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
    let _row = one_row();
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

    // What the previous version's wrapper recorded, read by this one.
    let written: Vec<String> = records().difference(&records_before).cloned().collect();
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
