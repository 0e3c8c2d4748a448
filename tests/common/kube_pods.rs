//! The feature's pods on a cluster of tests/common/kubernetes.rs, as the
//! Kubernetes tier's tests make them (`hostNetwork: true` +
//! `hostUsers: false`, on the wrapper's RuntimeClass or the plain
//! runtime's), and what a test asserts of them: what a container saw
//! (capabilities, mounts under /sys, its cgroup view, its user namespace),
//! where a pod ended up, and that nothing of it (pods of the daemon, records
//! of converted containers) outlives it.

use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

use super::cri::APP_IMAGE;
use super::kubernetes::Cluster;
use super::{has_cap_bit, Probe, NET_CAP_BITS};

/// The RuntimeClasses every row offers: the wrapper's handler and the plain
/// runtime's.
pub const WRAPPER_CLASS: &str = "userns-hostnet";
pub const PLAIN_CLASS: &str = "plain";

pub fn runtime_classes(k: &Cluster, wrapper: &str, plain: &str) {
    for (name, handler) in [(WRAPPER_CLASS, wrapper), (PLAIN_CLASS, plain)] {
        k.apply(&json!({
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name},
            "handler": handler,
        }));
    }
}

pub fn container(name: &str) -> Value {
    json!({
        "name": name,
        "image": APP_IMAGE,
        "imagePullPolicy": "Never",
        "env": [{"name": "HOSTNAME_TAG", "value": name}],
    })
}

/// The feature's pod: host network, own user namespace, two containers and
/// an init container, on `class`.
pub fn feature_pod(name: &str, class: &str) -> Value {
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
pub fn feature_deployment(name: &str, replicas: u32, pod: Value) -> Value {
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

/// The feature pod bound to the node directly: the scheduler is not asked,
/// the kubelet's admission decides.
pub fn bound_pod(k: &Cluster, name: &str, class: &str) -> Value {
    let mut pod = feature_pod(name, class);
    pod["spec"]["nodeName"] = json!(k.node);
    pod
}

/// After its CRI daemon restarted: waits until `kubectl exec` into the
/// pod's container goes through again. The kubelet's connection to the
/// daemon's socket backs off while the daemon is down (longer the longer
/// a busy machine takes to bring it back), and an exec fails fast until
/// it connects again.
pub fn wait_exec_again(k: &Cluster, pod: &str, container: &str) {
    k.wait_for(
        &format!("kubectl exec into {pod}/{container} after the restart"),
        || k.exec(pod, container, &["true"]).success(),
    );
}

/// What a container of a running pod saw, through `kubectl exec`.
pub fn look(k: &Cluster, pod: &str, container: &str) -> Probe {
    let out = k.exec(pod, container, &["/bin/sh", "-c", super::PROBE_SCRIPT]);
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
pub fn sees_own_cgroup(p: &Probe) -> bool {
    p.topmost("/sys/fs/cgroup")
        .is_some_and(|m| m.fstype == "cgroup2" && m.root == "/")
}

pub fn net_caps(p: &Probe) -> Vec<u32> {
    let bnd = p.cap_bnd();
    NET_CAP_BITS
        .iter()
        .copied()
        .filter(|b| has_cap_bit(bnd, *b))
        .collect()
}

/// One line for the test log and the docs' matrix.
pub fn summary(what: &str, p: &Probe) -> String {
    let writable: Vec<String> = super::writable_under_sys(p)
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
pub fn assert_own_uid_map(p: &Probe) {
    let map: Vec<&str> = p.uid_map.split_whitespace().collect();
    assert!(
        map.len() == 3 && map[0] == "0" && map[1] != "0" && map[2] == "65536",
        "uid_map is not a pod user namespace of the kubelet's: {}",
        p.uid_map
    );
    let (first, count) = super::kubernetes::KUBELET_IDS;
    let host: u64 = map[1].parse().unwrap();
    assert!(
        (first..first + count).contains(&host),
        "uid_map {} is outside the IDs given to the kubelet ({first}, {count} of them)",
        p.uid_map
    );
}

/// Running through the wrapper: hardened as the feature needs.
pub fn assert_hardened(p: &Probe, what: &str) {
    eprintln!("{}", summary(what, p));
    assert!(
        net_caps(p).is_empty(),
        "{what}: CapBnd {:016x} keeps network capabilities {:?}",
        p.cap_bnd(),
        net_caps(p)
    );
    let writable = super::writable_under_sys(p);
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
        has_cap_bit(p.cap_bnd(), super::CAP_CHOWN_BIT),
        "{what}: CAP_CHOWN went too"
    );
}

/// The kubelet removes a deleted pod's sandbox on its own schedule after
/// the API object is gone: allow it 90 s to leave nothing behind.
pub fn assert_nothing_left(what: &str, leftovers: &dyn Fn() -> Vec<String>) {
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

/// Every file under the wrapper's records of converted containers.
/// Clusters run side by side, so what a row adds is not only its own:
/// [`assert_no_record_left`] and [`records_of`] pick the row's out.
pub fn records() -> std::collections::BTreeSet<String> {
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

/// The record at `path`, parsed; `None` for one being written (a name
/// starting with `.`) or gone since it was listed.
fn record_at(path: &str) -> Option<userns_hostnet::records::Record> {
    userns_hostnet::records::Record::parse(&std::fs::read(path).ok()?)
}

/// The records among `paths` of the containers `ids` (another cluster's
/// records beside them are left out).
pub fn records_of<'a>(
    paths: impl IntoIterator<Item = &'a String>,
    ids: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    paths
        .into_iter()
        .filter(|p| record_at(p).is_some_and(|r| ids.contains(&*r.id.to_string_lossy())))
        .cloned()
        .collect()
}

/// Whether the container a record names is gone: no state directory under
/// the root the record names (a record without one, or one that cannot be
/// read, counts as gone: it can only be a leak).
fn record_outlived_container(path: &str) -> bool {
    if std::path::Path::new(path)
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
    {
        // A record being written, by a create now running.
        return false;
    }
    match record_at(path) {
        Some(r) => r
            .root
            .as_ref()
            .map_or(true, |(_, root)| !root.join(&r.id).exists()),
        None => std::path::Path::new(path).exists(),
    }
}

/// No record of a converted container outlives its pod: once the row's
/// pods are gone, no record added since `before` names a container that
/// no longer exists (allowing the kubelet's own pace). A record of a
/// container that still exists belongs to a cluster running beside this
/// one.
pub fn assert_no_record_left(what: &str, before: &std::collections::BTreeSet<String>) {
    let deadline = Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let left: Vec<String> = records()
            .difference(before)
            .filter(|p| record_outlived_container(p))
            .cloned()
            .collect();
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

/// Where a pod ended up within the start timeout: `Running`, or the first
/// event that says why not (a scheduling failure, the kubelet's refusal at
/// admission, a failed sandbox or container).
pub fn fate(k: &Cluster, pod: &str) -> String {
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

/// A mount the node makes under /sys after the pod started (`daemon_pid`
/// holds the daemon's mount namespace, whose mounts are shared as a
/// systemd host's are): what the pod's container sees of it, in a word for
/// the matrix; through the wrapper it never arrives writable.
pub fn scenario_host_mounts_later(
    k: &Cluster,
    daemon_pid: u32,
    pod: Value,
    wrapper: bool,
) -> String {
    const LATER: &str = "/sys/kernel/mm";
    let name = pod["metadata"]["name"].as_str().unwrap().to_owned();
    let mut pod = pod;
    pod["spec"]["initContainers"] = json!([]);
    pod["spec"]["containers"] = json!([container("app")]);
    k.apply(&pod);
    k.wait_running(&name);
    let ns = format!("--target={daemon_pid}");
    let mounted = super::run_capture(Command::new("nsenter").args([
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
    let unmounted =
        super::run_capture(Command::new("nsenter").args([ns.as_str(), "--mount", "umount", LATER]));
    assert!(out.success(), "{}", out.describe());
    assert!(unmounted.success(), "{}", unmounted.describe());
    let seen: Vec<super::MountEntry> = super::parse_mountinfo(&out.stdout)
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
