//! Kubernetes pods through containerd's CRI, on two stacks (containerd
//! 1.7.24 with runc 1.1.5, containerd 2.3.4 with runc 1.4.3: every scenario
//! runs on both, as `containerd_1_7::NAME` and `containerd_2_3::NAME`), the
//! requests made the way the kubelet makes them for `hostNetwork: true` + `hostUsers: false`
//! (tests/common/cri.rs): RunPodSandbox with network NODE, pid CONTAINER,
//! ipc POD and a POD user namespace with a host ID range of its own, app
//! containers repeating the sandbox's user namespace options, ExecSync,
//! streaming exec, logs, stop and removal. Each scenario asserts what the
//! container itself saw, read through exec.
//!
//! Prerequisites (root, runc, crun, busybox-static, jq, and containerd
//! 1.7.24, containerd 2.3.4 with runc 1.4.3, and crictl from
//! `scripts/cri-tools.sh`) fail the tests when missing.

mod common;

use std::time::{Duration, Instant};

use common::cri::{self, handler, Cri, Stack, Userns};
use common::crictl::{
    app_config, assert_converted_decision, assert_no_leftovers, assert_passed_through, cri_error,
    pods_at_once, run_pod, tear_down, userns_pod, wait_for_log, Pod, Seen,
};
use serde_json::{json, Value};

/// The mount a process in the container finds at `path` (a mount point),
/// by path lookup: the mount that serves the nearest mount point above it,
/// then, among the mounts at `path` stacked on that one, the topmost. A
/// mount made at /sys/fs/cgroup before /sys is mounted over its parent
/// stays in mountinfo, hidden: listing order or "nothing on top of it"
/// alone would pick it.
fn visible_at<'a>(probe: &'a common::Probe, path: &str) -> Option<&'a common::MountEntry> {
    let parent = match path.rfind('/') {
        _ if path == "/" => None,
        Some(0) => visible_at(probe, "/"),
        Some(i) => visible_at(probe, &path[..i]),
        None => None,
    };
    let here = probe.at(path);
    let mut top = match parent {
        Some(p) => here.iter().find(|m| m.parent == p.id).copied(),
        // The root: the one mount at / whose parent is not at / too.
        None => here
            .iter()
            .find(|m| !here.iter().any(|o| o.id == m.parent))
            .copied(),
    };
    let Some(mut current) = top else {
        return parent;
    };
    while let Some(next) = here.iter().find(|m| m.parent == current.id) {
        current = next;
        top = Some(next);
    }
    top
}

/// The mount a process in the container finds at /sys/fs/cgroup.
fn cgroup_on_top(seen: &Seen) -> &common::MountEntry {
    visible_at(&seen.exec, "/sys/fs/cgroup")
        .unwrap_or_else(|| panic!("nothing at /sys/fs/cgroup:\n{}", seen.exec.table()))
}

/// Whether the container sees its own cgroup at /sys/fs/cgroup: a cgroup2
/// mount made in its cgroup namespace shows root `/`; the host's tree,
/// seen from that namespace, shows the way up to the host's root (`/..`).
fn sees_own_cgroup(seen: &Seen) -> bool {
    let top = cgroup_on_top(seen);
    top.fstype == "cgroup2" && top.root == "/"
}

fn assert_own_cgroup(seen: &Seen) {
    assert!(
        sees_own_cgroup(seen),
        "the topmost mount at /sys/fs/cgroup must be the container's own cgroup2 (root /), \
         not the host's tree:\n{}",
        seen.exec.table()
    );
}

/// What a converted pod's container must have seen: every mount at or
/// under /sys read-only, nosuid,nodev,noexec on /sys, the host's bpffs and
/// securityfs there read-only (when the runtime keeps submounts), its own
/// cgroup at /sys/fs/cgroup, no network capability in the bounding set of
/// pid 1 nor of the exec'd process, and the pod's own ID mapping.
fn assert_converted_inside(seen: &Seen, host_id: u64, expect_host_submounts: bool) {
    common::assert_converted_view_mapped(&seen.exec, expect_host_submounts, host_id);
    assert_own_cgroup(seen);
    let pid1 = common::parse_cap_mask(&seen.pid1_status, "CapBnd");
    for bit in common::NET_CAP_BITS {
        assert!(
            !common::has_cap_bit(pid1, *bit),
            "pid 1's CapBnd {pid1:016x} still has bit {bit} (network capability)"
        );
    }
    assert!(
        common::has_cap_bit(pid1, common::CAP_CHOWN_BIT),
        "pid 1's CapBnd {pid1:016x} lost CAP_CHOWN"
    );
}

fn show(what: &str, seen: &Seen) {
    let sys: Vec<String> = seen
        .exec
        .under_sys()
        .iter()
        .map(|m| {
            format!(
                "  {} {} {} {} root {} id {} parent {}",
                m.mount_point,
                m.fstype,
                m.source,
                m.options.join(","),
                m.root,
                m.id,
                m.parent
            )
        })
        .collect();
    eprintln!(
        "{what}: pid 1 CapBnd {:016x}, exec CapBnd {:016x}, under /sys:\n{}",
        common::parse_cap_mask(&seen.pid1_status, "CapBnd"),
        seen.exec.cap_bnd(),
        sys.join("\n")
    );
}

/// runc's failure on a fresh sysfs in a user namespace on the host network.
fn assert_sysfs_eperm(out: &common::Outcome) {
    assert!(
        !out.success(),
        "RunPodSandbox should fail\n{}",
        out.describe()
    );
    let err = cri_error(out);
    assert!(
        err.contains("error mounting \"sysfs\" to rootfs at \"/sys\"")
            && err.contains("operation not permitted"),
        "expected runc's sysfs EPERM\n{}",
        out.describe()
    );
}

/// The refusal line the wrapper wrote to the runtime's --log, as containerd
/// passed it back in the RunPodSandbox error.
fn assert_refused(out: &common::Outcome, needles: &[&str]) {
    assert!(
        !out.success(),
        "RunPodSandbox should fail\n{}",
        out.describe()
    );
    assert!(
        out.stderr.contains("userns-hostnet-runtime: refused:"),
        "the CRI error should carry the wrapper's refusal\n{}",
        out.describe()
    );
    let err = cri_error(out);
    for n in needles {
        assert!(
            err.contains(n),
            "the CRI error lacks `{n}`\n{}",
            out.describe()
        );
    }
}

/// Scenario 1: one app container; ExecSync, a streaming exec, the log,
/// ContainerStatus. That the wrapper logged its decisions in the daemon's
/// directory shows containerd 1.7.24 passed its environment
/// (`USERNS_HOSTNET_CONFIG`) through the shim to the runtime.
fn pod_with_one_app_container(stack: Stack) {
    let cri = Cri::start_on(stack);
    let (userns, config) = userns_pod(&cri, "one");
    let host_id = userns.host_id().unwrap();
    let pod = run_pod(&cri, handler::WRAPPER, &config);
    assert_converted_decision(&cri, &pod.id);
    common::assert_converted_spec(&cri.bundle_spec(&pod.id));
    // The wrapper ran the stack's runc, the first in the daemon's PATH.
    let runtime = cri.decisions_for(&pod.id)[0]["runtime"].clone();
    let version = common::run_capture(
        std::process::Command::new(runtime.as_str().expect("the decision names the runtime"))
            .arg("--version"),
    );
    assert!(
        version
            .stdout
            .starts_with(&format!("runc version {}", stack.runc_version())),
        "{}: the wrapper ran {runtime}\n{}",
        stack.label(),
        version.describe()
    );

    let app = cri.create_and_start(&pod, &app_config(userns));
    assert_converted_decision(&cri, &app);
    common::assert_converted_spec(&cri.bundle_spec(&app));
    let status = cri.inspect(&app);
    assert_eq!(status["status"]["state"], "CONTAINER_RUNNING", "{status:#}");

    let seen = cri.look_inside(&app);
    show("CRI + wrapper + runc, app container", &seen);
    assert_converted_inside(&seen, host_id, true);

    let streamed = cri.exec_stream(&app, &["cat", "/proc/self/uid_map"]);
    streamed.assert_success();
    assert_eq!(
        streamed.stdout.split_whitespace().collect::<Vec<_>>(),
        [
            "0".to_string(),
            host_id.to_string(),
            common::ID_RANGE.to_string()
        ],
        "uid_map through a streaming exec\n{}",
        streamed.describe()
    );
    let failing = cri.exec_sync(&app, &["/no/such/binary"]);
    assert!(
        !failing.success(),
        "ExecSync of a missing binary must fail\n{}",
        failing.describe()
    );

    wait_for_log(&cri, &app, "app-started-app");

    // The wrapper found its config (and so its decision log) through the
    // daemon's environment: the shims hold it too.
    let want = format!(
        "USERNS_HOSTNET_CONFIG={}",
        cri.dir().join("wrapper.toml").display()
    );
    let shims = cri.shim_environments();
    assert!(!shims.is_empty(), "no shim found for the running pod");
    for (pid, env) in &shims {
        assert!(env.contains(&want), "shim {pid} lacks {want}: {env:?}");
    }
    tear_down(cri, &pod, &[app]);
}

/// Scenario 2: two app containers in one pod, each converted, each with
/// its own pid namespace, both in the pod's user namespace.
fn pod_with_two_app_containers(stack: Stack) {
    let cri = Cri::start_on(stack);
    let (userns, config) = userns_pod(&cri, "two");
    let host_id = userns.host_id().unwrap();
    let pod = run_pod(&cri, handler::WRAPPER, &config);

    let first = cri.create_and_start(
        &pod,
        &cri::container_config("first", userns, cri::APP_SCRIPT),
    );
    let second = cri.create_and_start(
        &pod,
        &cri::container_config("second", userns, cri::APP_SCRIPT),
    );
    for id in [&first, &second] {
        assert_converted_decision(&cri, id);
        let seen = cri.look_inside(id);
        assert_converted_inside(&seen, host_id, true);
    }
    let user_ns = |id: &str| {
        let out = cri.exec_sync(id, &["readlink", "/proc/self/ns/user"]);
        out.assert_success();
        out.stdout.trim().to_string()
    };
    assert_eq!(
        user_ns(&first),
        user_ns(&second),
        "both containers must be in the pod's user namespace"
    );
    wait_for_log(&cri, &first, "app-started-first");
    wait_for_log(&cri, &second, "app-started-second");
    tear_down(cri, &pod, &[first, second]);
}

/// Scenario 3: a `net.*` sysctl on a host-network userns pod would apply to
/// the host: the wrapper refuses the sandbox, and the kubelet sees why.
fn net_sysctl_in_the_sandbox_is_refused(stack: Stack) {
    let mut cri = Cri::start_on(stack);
    let (_, mut config) = userns_pod(&cri, "sysctl");
    config["linux"]["sysctls"] = json!({ "net.ipv4.ip_forward": "1" });
    let out = cri
        .run_pod(handler::WRAPPER, &config)
        .err()
        .expect("RunPodSandbox with a net.* sysctl must fail");
    assert_refused(&out, &["refused: sysctl:", "net.ipv4.ip_forward"]);
    assert_no_leftovers(&mut cri);
}

/// Scenario 4: a mapping that includes host root is refused the same way.
fn mapping_of_host_root_is_refused(stack: Stack) {
    let mut cri = Cri::start_on(stack);
    let userns = Userns::Pod { host_id: 0 };
    let config = cri::pod_config("hostroot", userns, &cri.log_dir("hostroot"));
    let out = cri
        .run_pod(handler::WRAPPER, &config)
        .err()
        .expect("RunPodSandbox mapping host root must fail");
    assert_refused(&out, &["refused: idmap:", "maps host root"]);
    assert_no_leftovers(&mut cri);
}

const PARALLEL_PODS: usize = 20;

/// Scenario 5: 20 userns pods started at once, each with an app container
/// and its own ID range: all run, each sees its own mapping, and after
/// removal nothing is left (runc state under the handlers' roots, task
/// bundles, mounts under the daemon's directory, shims).
fn twenty_pods_in_parallel_leave_nothing_behind(stack: Stack) {
    let mut cri = Cri::start_on(stack);
    pods_at_once(&cri, handler::WRAPPER, PARALLEL_PODS, |id, host_id| {
        let map = cri.exec_sync(id, &["cat", "/proc/self/uid_map"]);
        map.assert_success();
        assert_eq!(
            map.stdout.split_whitespace().nth(1),
            Some(host_id.to_string().as_str()),
            "{id} runs with another pod's mapping: {}",
            map.stdout
        );
    });
    assert_no_leftovers(&mut cri);
}

/// containerd's spec for one pod, made comparable with another pod's: the
/// ids and the sandbox's pid replaced by placeholders.
fn normalized(spec: &Value, pod: &Pod, container: &str, sandbox_pid: u64) -> Value {
    let text = serde_json::to_string(spec)
        .unwrap()
        .replace(&pod.id, "SANDBOX-ID")
        .replace(container, "CONTAINER-ID")
        .replace(&format!("/proc/{sandbox_pid}/"), "/proc/SANDBOX-PID/");
    serde_json::from_str(&text).unwrap()
}

/// Runs a pod without a user namespace and one app container on `handler`;
/// returns the normalized specs of both and the app's CapBnd.
fn hostusers_pod(cri: &Cri, handler: &str, userns: Userns) -> (Value, Value, u64) {
    let config = cri::pod_config("hostusers", userns, &cri.log_dir("hostusers"));
    let pod = run_pod(cri, handler, &config);
    let app = cri.create_and_start(&pod, &app_config(userns));
    let pid = cri.sandbox_pid(&pod);
    let sandbox_spec = normalized(&cri.bundle_spec(&pod.id), &pod, &app, pid);
    let app_spec = normalized(&cri.bundle_spec(&app), &pod, &app, pid);
    let seen = cri.look_inside(&app);
    let bnd = seen.exec.cap_bnd();
    cri.stop_and_remove(&app);
    cri.stop_and_remove_pod(&pod);
    assert_passed_through(cri, &[&pod.id, &app], handler == handler::WRAPPER);
    (sandbox_spec, app_spec, bnd)
}

/// Scenario 6: a pod without a user namespace (no `userns_options`, or
/// mode NODE) on the wrapper's handler is passed through: the wrapper
/// decides `no-user-namespace`, and the sandbox's and the container's
/// config.json are what the plain runc handler gets for the same pod (ids
/// aside); the container keeps the network capabilities.
fn pod_without_user_namespace_is_passed_through(stack: Stack) {
    let mut cri = Cri::start_on(stack);
    let (plain_sandbox, plain_app, plain_bnd) = hostusers_pod(&cri, handler::RUNC, Userns::Absent);
    for userns in [Userns::Absent, Userns::Node] {
        let (via_sandbox, via_app, via_bnd) = hostusers_pod(&cri, handler::WRAPPER, userns);
        assert_eq!(
            via_sandbox, plain_sandbox,
            "{userns:?}: the sandbox's spec differs"
        );
        assert_eq!(
            via_app, plain_app,
            "{userns:?}: the app container's spec differs"
        );
        assert_eq!(via_bnd, plain_bnd, "{userns:?}: CapBnd differs");
    }
    // containerd's default set holds CAP_NET_BIND_SERVICE (10) and
    // CAP_NET_RAW (13).
    assert!(
        [10, 13].iter().all(|b| common::has_cap_bit(plain_bnd, *b)),
        "without a user namespace the network capabilities stay: CapBnd {plain_bnd:016x}"
    );
    assert_no_leftovers(&mut cri);
}

/// An app container whose create the runtime fails (its command does not
/// exist) after the wrapper converted it, retried as the kubelet retries
/// it: each create's record goes by the next call through the wrapper,
/// and none is left once the pod is gone.
fn failed_creates_leave_no_records(stack: Stack) {
    let cri = Cri::start_on(stack);
    let (userns, config) = userns_pod(&cri, "failing");
    let pod = run_pod(&cri, handler::WRAPPER, &config);
    let app = app_config(userns);
    let mut failing = app.clone();
    failing["command"] = serde_json::json!(["/no/such/binary"]);
    let mut ids = Vec::new();
    for attempt in 1..=3 {
        // The kubelet's retry: the same container, the next attempt.
        failing["metadata"]["attempt"] = serde_json::json!(attempt);
        let id = cri.create(&pod, &failing).expect("CreateContainer");
        let out = cri.start_container(&id);
        assert!(
            !out.success() && out.describe().contains("/no/such/binary"),
            "{}",
            out.describe()
        );
        ids.push(id);
        let left = cri.records();
        eprintln!("after failed start {attempt}: {left:?}");
        // The pod's sandbox, bound at its start, and at most the last
        // failed create's.
        assert!(left.len() <= 2, "after failed start {attempt}: {left:#?}");
    }
    tear_down(cri, &pod, &ids);
}

/// Scenario 7, the baseline: the stack's runc alone on the userns
/// host-network pod. containerd 1.7 asks for a fresh sysfs, which runc
/// 1.1.5 cannot mount there: the sandbox fails with EPERM. containerd 2.3.4
/// binds the host's /sys itself (`rbind,rro`) and runc 1.4.3 joins the
/// sandbox's namespaces in two stages, so the pod runs, read-only all the
/// way down; but containerd lists /sys after the cgroup mount, so the
/// host's cgroup tree covers the container's, and the network capabilities
/// stay in pid 1's bounding set: what the wrapper changes on this stack.
fn plain_runc_handler_on_the_userns_pod(stack: Stack) {
    let mut cri = Cri::start_on(stack);
    let (userns, config) = userns_pod(&cri, "plain");
    match stack {
        Stack::Containerd17 => {
            let out = cri
                .run_pod(handler::RUNC, &config)
                .err()
                .expect("runc alone must fail the userns host-network sandbox");
            assert_sysfs_eperm(&out);
            assert_no_leftovers(&mut cri);
        }
        Stack::Containerd23 | Stack::Containerd24 => {
            let host_id = userns.host_id().unwrap();
            let pod = run_pod(&cri, handler::RUNC, &config);
            let app = cri.create_and_start(&pod, &app_config(userns));
            let seen = cri.look_inside(&app);
            show("CRI + runc 1.4.3 alone, app container", &seen);
            for m in seen.exec.under_sys() {
                assert!(
                    m.has("ro"),
                    "{} is writable without the wrapper:\n{}",
                    m.mount_point,
                    seen.exec.table()
                );
            }
            assert_eq!(
                seen.exec.uid_map.split_whitespace().nth(1),
                Some(host_id.to_string().as_str()),
                "uid_map: {}",
                seen.exec.uid_map
            );
            assert!(
                !sees_own_cgroup(&seen),
                "containerd 2.3.4 was expected to cover the container's cgroup with the \
                 host's tree:\n{}",
                seen.exec.table()
            );
            let pid1 = common::parse_cap_mask(&seen.pid1_status, "CapBnd");
            assert!(
                [10, 13].iter().all(|b| common::has_cap_bit(pid1, *b)),
                "containerd 2.3.4 was expected to keep CAP_NET_BIND_SERVICE and CAP_NET_RAW: \
                 CapBnd {pid1:016x}"
            );
            assert!(
                cri.decisions().is_empty(),
                "the plain handler ran the wrapper"
            );
            tear_down(cri, &pod, &[app]);
        }
    }
}

/// Scenario 8a: the createRuntime hook from hooks.d/containerd-base-spec.json
/// as a runc handler's `base_runtime_spec`, without the wrapper. containerd
/// (1.7 and 2.3.4 alike) builds a sandbox's spec from its defaults and never
/// from the handler's base spec. On containerd 1.7 the fresh sysfs mount
/// fails before any hook could run: the pod fails with runc's EPERM and the
/// hook never ran, as docs/hooks.md says. On containerd 2.3.4
/// the pod runs (see scenario 7) and the hook verifies the app container's
/// /sys, but a hook cannot change the spec: the network capabilities and
/// the host's cgroup tree stay.
fn base_spec_hook_alone_on_the_userns_pod(stack: Stack) {
    let mut cri = Cri::start_on(stack);
    let (userns, config) = userns_pod(&cri, "hook");
    let hook_lines = |cri: &Cri| -> Vec<Value> {
        cri.decisions()
            .into_iter()
            .filter(|d| d["command"] == "hook create-runtime")
            .collect()
    };
    match stack {
        Stack::Containerd17 => {
            let out = cri
                .run_pod(handler::RUNC_HOOK, &config)
                .err()
                .expect("the hook cannot rescue a fresh sysfs");
            assert_sysfs_eperm(&out);
            let lines = hook_lines(&cri);
            assert!(lines.is_empty(), "the hook ran: {lines:#?}");
            assert_no_leftovers(&mut cri);
        }
        Stack::Containerd23 | Stack::Containerd24 => {
            let pod = run_pod(&cri, handler::RUNC_HOOK, &config);
            let app = cri.create_and_start(&pod, &app_config(userns));
            let lines = hook_lines(&cri);
            assert!(
                lines.len() == 1
                    && lines[0]["id"] == app.as_str()
                    && lines[0]["error"].is_null()
                    && lines[0]["refused"].is_null(),
                "one clean hook line for the app container expected: {lines:#?}"
            );
            let seen = cri.look_inside(&app);
            show("CRI + runc 1.4.3 + base spec hook, app container", &seen);
            let pid1 = common::parse_cap_mask(&seen.pid1_status, "CapBnd");
            assert!(
                common::has_cap_bit(pid1, 13) && !sees_own_cgroup(&seen),
                "a hook was not expected to change capabilities or mounts: CapBnd {pid1:016x}\n{}",
                seen.exec.table()
            );
            tear_down(cri, &pod, &[app]);
        }
    }
}

/// Scenario 8b: the same base spec behind the wrapper. The sandbox's spec
/// carries no hook (containerd does not apply base specs to sandboxes);
/// the app container's does, and the hook verifies the wrapper's conversion
/// in the running container and logs it.
fn base_spec_hook_behind_the_wrapper_verifies_app_containers(stack: Stack) {
    let cri = Cri::start_on(stack);
    let (userns, config) = userns_pod(&cri, "hookwrap");
    let host_id = userns.host_id().unwrap();
    let pod = run_pod(&cri, handler::WRAPPER_HOOK, &config);
    let sandbox_spec = cri.bundle_spec(&pod.id);
    assert!(
        sandbox_spec["hooks"].is_null(),
        "containerd was expected to leave the sandbox without the base spec's hooks: {:#}",
        sandbox_spec["hooks"]
    );
    let app = cri.create_and_start(&pod, &app_config(userns));
    let app_spec = cri.bundle_spec(&app);
    assert!(
        app_spec["hooks"]["createRuntime"][0]["args"]
            == json!(["userns-hostnet", "hook", "create-runtime"]),
        "the app container's spec lacks the base spec's hook: {:#}",
        app_spec["hooks"]
    );
    common::assert_converted_spec(&app_spec);
    let hook: Vec<Value> = cri
        .decisions_for(&app)
        .into_iter()
        .filter(|d| d["command"] == "hook create-runtime")
        .collect();
    assert_eq!(
        hook.len(),
        1,
        "one hook line for {app}: {:#?}",
        cri.decisions()
    );
    assert!(
        hook[0]["error"].is_null() && hook[0]["refused"].is_null(),
        "{:#}",
        hook[0]
    );
    let seen = cri.look_inside(&app);
    assert_converted_inside(&seen, host_id, true);
    tear_down(cri, &pod, &[app]);
}

/// What containerd writes as `ociVersion`: crun 1.8.1 accepts only a
/// version containing "1.0".
fn default_spec_version(stack: Stack) -> &'static str {
    match stack {
        Stack::Containerd17 => "1.2.0",
        Stack::Containerd23 | Stack::Containerd24 => "1.3.0",
    }
}

/// Scenario 9a: crun 1.8.1 alone under containerd fails every pod, user
/// namespace or not, with "unknown version specified": crun accepts only an
/// `ociVersion` containing "1.0", and containerd 1.7.24 as Debian builds it
/// (against runtime-spec 1.2) writes "1.2.0", containerd 2.3.4 "1.3.0", which
/// `ctr oci spec` shows. Not the wrapper's doing: it fails a pod the wrapper
/// never sees. crun 1.15 dropped the check.
fn crun_alone_refuses_the_spec_version(stack: Stack) {
    let mut cri = Cri::start_on(stack);
    let default_spec = cri.containerd().ctr(&["oci", "spec"]);
    default_spec.assert_success();
    let version =
        serde_json::from_str::<Value>(&default_spec.stdout).unwrap()["ociVersion"].clone();
    assert_eq!(
        version,
        default_spec_version(stack),
        "{}: the default spec version",
        stack.label()
    );

    let config = cri::pod_config("crun", Userns::Absent, &cri.log_dir("crun"));
    let out = cri
        .run_pod(handler::CRUN, &config)
        .err()
        .expect("crun 1.8.1 alone was expected to refuse the spec version");
    assert!(
        out.stderr.contains("unknown version specified"),
        "expected crun's version refusal\n{}",
        out.describe()
    );
    assert_no_leftovers(&mut cri);
}

/// containerd 2.3.4's refusal of a user-namespaced container whose runtime
/// answers no usable `features` (crun 1.8.1 has no such command).
const CRUN_FEATURES_REFUSED: &str =
    "failed to validate OCI runtime features: unmarshal runtime features";

/// Scenario 9b: the wrapper installed as `userns-hostnet-runtime-crun` on a
/// userns pod, with the test-only version step in front of crun. On
/// containerd 1.7 the sandbox and an app container run converted; crun
/// 1.8.1 clones the /sys bind without the host's submounts. containerd
/// 2.3.4 starts the sandbox but validates the runtime's `features` before
/// a user-namespaced app container, and crun 1.8.1 has none: the wrapper
/// passes `features` through, so containerd refuses it as it refuses crun
/// alone.
fn wrapper_onto_crun_on_the_userns_pod(stack: Stack) {
    let cri = Cri::start_on(stack);
    let (userns, config) = userns_pod(&cri, "wcrun");
    let host_id = userns.host_id().unwrap();
    let pod = run_pod(&cri, handler::WRAPPER_CRUN, &config);
    assert_converted_decision(&cri, &pod.id);
    let runtime = cri.decisions_for(&pod.id)[0]["runtime"].clone();
    assert_eq!(
        runtime,
        json!(cri.dir().join("bin/crun").display().to_string()),
        "the wrapper named ...-crun must run crun"
    );
    let app_config = app_config(userns);
    match stack {
        Stack::Containerd17 => {
            let app = cri.create_and_start(&pod, &app_config);
            let seen = cri.look_inside(&app);
            show("CRI + wrapper + crun, app container", &seen);
            assert_converted_inside(&seen, host_id, false);
            tear_down(cri, &pod, &[app]);
        }
        Stack::Containerd23 | Stack::Containerd24 => {
            let refused = match cri.create(&pod, &app_config) {
                Err(out) => out,
                Ok(id) => cri.start_container(&id),
            };
            assert!(
                !refused.success() && refused.stderr.contains(CRUN_FEATURES_REFUSED),
                "containerd 2.3.4 was expected to refuse crun 1.8.1's features\n{}",
                refused.describe()
            );
            let mut cri = cri;
            cri.stop_and_remove_pod(&pod);
            assert_no_leftovers(&mut cri);
        }
    }
}

/// Scenario 9c: the wrapper in front of crun 1.27.1 (what Fedora, RHEL
/// and OpenShift nodes run) on containerd 2.4.2: crun 1.27.1 answers
/// `features` (user namespaces, idmapped mounts, `rro`), so containerd
/// runs the userns pod on it; through the wrapper the sandbox and an app
/// container run converted, an exec into it gets no network capability,
/// and a `net.*` sysctl and a mapping of host root are refused.
fn wrapper_onto_crun_1_27_on_the_userns_pod(stack: Stack) {
    let cri = Cri::start_on(stack);
    let (_, mut sysctl) = userns_pod(&cri, "sysctl127");
    sysctl["linux"]["sysctls"] = json!({ "net.ipv4.ip_forward": "1" });
    let out = cri
        .run_pod(handler::WRAPPER_CRUN_127, &sysctl)
        .err()
        .expect("RunPodSandbox with a net.* sysctl must fail");
    assert_refused(&out, &["refused: sysctl:", "net.ipv4.ip_forward"]);
    let hostroot = cri::pod_config(
        "hostroot127",
        Userns::Pod { host_id: 0 },
        &cri.log_dir("hostroot127"),
    );
    let out = cri
        .run_pod(handler::WRAPPER_CRUN_127, &hostroot)
        .err()
        .expect("RunPodSandbox mapping host root must fail");
    assert_refused(&out, &["refused: idmap:", "maps host root"]);

    let (userns, config) = userns_pod(&cri, "wcrun127");
    let host_id = userns.host_id().unwrap();
    let pod = run_pod(&cri, handler::WRAPPER_CRUN_127, &config);
    assert_converted_decision(&cri, &pod.id);
    let runtime = cri.decisions_for(&pod.id)[0]["runtime"].clone();
    assert_eq!(
        runtime,
        json!(cri.dir().join("bin/crun127").display().to_string()),
        "the wrapper named ...-crun127 must run crun 1.27.1"
    );
    common::assert_converted_spec(&cri.bundle_spec(&pod.id));
    let app = cri.create_and_start(&pod, &app_config(userns));
    assert_converted_decision(&cri, &app);
    common::assert_converted_spec(&cri.bundle_spec(&app));
    let seen = cri.look_inside(&app);
    show("CRI + wrapper + crun 1.27.1, app container", &seen);
    // Converted: crun 1.27.1's cgroup2 goes onto the wrapper's read-only
    // tmpfs at /sys/fs/cgroup, and no tmpfs of its own stays writable.
    assert!(
        common::writable_under_sys(&seen.exec).is_empty(),
        "mounts under /sys not read-only: {:?}\n{}",
        common::writable_under_sys(&seen.exec),
        seen.exec.table()
    );
    assert_own_cgroup(&seen);
    let pid1 = common::parse_cap_mask(&seen.pid1_status, "CapBnd");
    for bnd in [pid1, seen.exec.cap_bnd()] {
        assert!(
            common::NET_CAP_BITS
                .iter()
                .all(|b| !common::has_cap_bit(bnd, *b))
                && common::has_cap_bit(bnd, common::CAP_CHOWN_BIT),
            "CapBnd {bnd:016x}: network capabilities kept or CAP_CHOWN lost"
        );
    }
    assert_eq!(
        seen.exec.uid_map.split_whitespace().nth(1),
        Some(host_id.to_string().as_str()),
        "uid_map: {}",
        seen.exec.uid_map
    );
    let streamed = cri.exec_stream(&app, &["cat", "/proc/self/uid_map"]);
    streamed.assert_success();
    assert_eq!(
        streamed.stdout.split_whitespace().nth(1),
        Some(host_id.to_string().as_str()),
        "uid_map through a streaming exec\n{}",
        streamed.describe()
    );
    tear_down(cri, &pod, &[app]);
}

/// The features each handler declares to the kubelet (`crictl info`:
/// `runtimeHandlers`), by handler name, and the runtime's own (`features`).
fn handler_features(cri: &Cri) -> (std::collections::BTreeMap<String, Value>, Value) {
    let out = cri.crictl(&["info", "--output", "json"]);
    out.assert_success();
    let info: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("crictl info is not JSON ({e})\n{}", out.describe()));
    let handlers = info["runtimeHandlers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|h| {
            (
                h["name"].as_str().unwrap_or_default().to_string(),
                h["features"].clone(),
            )
        })
        .collect();
    (handlers, info["features"].clone())
}

/// Scenario 10: the wrapper passes `features` through byte for byte, so
/// containerd 2.3.4 declares for a wrapper handler exactly what it declares
/// for the real runtime behind it: the kubelet admits userns pods on either
/// or on neither. runc 1.4.3 declares user namespaces and rro; runc 1.1.5
/// rro only (its `features` has no idmap entry); crun 1.8.1 nothing (it has
/// no `features`). containerd 2.3.4 declares `user_namespaces_host_network`;
/// containerd 1.7.24 declares no features at all.
fn handlers_declare_the_real_runtimes_features(stack: Stack) {
    let mut cri = Cri::start_on(stack);
    let (features, runtime) = handler_features(&cri);
    // What the kubelet's UserNamespacesHostNetworkSupport looks for.
    let host_network = runtime["user_namespaces_host_network"] == true;
    assert_eq!(
        host_network,
        stack.is_2x(),
        "{}: user_namespaces_host_network in crictl info's features: {runtime:#}",
        stack.label()
    );
    if stack == Stack::Containerd17 {
        assert!(
            features.is_empty(),
            "containerd 1.7.24 was expected to declare no handler features: {features:#?}"
        );
        assert_no_leftovers(&mut cri);
        return;
    }
    let declared = |h: &str, feature: &str| features.get(h).map(|f| f[feature] == true);
    assert_eq!(declared(handler::RUNC_14, "user_namespaces"), Some(true));
    assert_eq!(
        declared(handler::RUNC_14, "recursive_read_only_mounts"),
        Some(true)
    );
    assert_eq!(declared(handler::RUNC_11, "user_namespaces"), Some(false));
    assert_eq!(
        declared(handler::RUNC_11, "recursive_read_only_mounts"),
        Some(true)
    );
    assert_eq!(
        features.get(handler::CRUN),
        Some(&Value::Null),
        "{features:#?}"
    );
    for (plain, wrapped) in [
        (handler::CRUN, handler::WRAPPER_CRUN),
        (handler::RUNC, handler::WRAPPER),
        (handler::RUNC_11, handler::WRAPPER_RUNC_11),
        (handler::RUNC_14, handler::WRAPPER_RUNC_14),
        (handler::RUNC_15, handler::WRAPPER_RUNC_15),
        (handler::CRUN_127, handler::WRAPPER_CRUN_127),
    ] {
        assert!(
            features.contains_key(plain),
            "{plain} missing: {features:#?}"
        );
        assert_eq!(
            features.get(wrapped),
            features.get(plain),
            "{}: {wrapped} declares other features than {plain}",
            stack.label()
        );
    }
    assert_no_leftovers(&mut cri);
}

/// One cell of the version matrix, one way: what the pod's app container
/// saw, or why the pod did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ran {
    Yes {
        sys_read_only: bool,
        own_cgroup: bool,
        net_caps_dropped: bool,
    },
    No(&'static str),
}

impl Ran {
    fn text(&self) -> String {
        match self {
            Ran::Yes {
                sys_read_only,
                own_cgroup,
                net_caps_dropped,
            } => {
                let yes = |b: &bool| if *b { "yes" } else { "no" };
                format!(
                    "runs (/sys ro all the way: {}, own cgroup: {}, net caps dropped: {})",
                    yes(sys_read_only),
                    yes(own_cgroup),
                    yes(net_caps_dropped)
                )
            }
            Ran::No(why) => format!("fails: {why}"),
        }
    }
}

/// The failures the matrix meets, by what containerd passed back.
fn why_not(out: &common::Outcome) -> &'static str {
    let err = cri_error(out);
    [
        ("error mounting \"sysfs\"", "sysfs mount EPERM"),
        ("unknown version specified", "crun refuses the ociVersion"),
        (
            "idmap mounts not supported",
            "containerd: features lists no idmap",
        ),
        (
            "unmarshal runtime features",
            "containerd: runtime has no features",
        ),
        ("failed to setns", "setns EPERM"),
    ]
    .into_iter()
    .find(|(needle, _)| err.contains(needle))
    .map_or("another error (see the test output)", |(_, why)| why)
}

/// A userns host-network pod with one app container on `handler`: what
/// the container saw, then everything removed.
fn run_cell(cri: &Cri, handler: &str, name: &str) -> Ran {
    let (userns, config) = userns_pod(cri, name);
    let pod = match cri.run_pod(handler, &config) {
        Ok(pod) => pod,
        Err(out) => {
            eprintln!("{handler}: RunPodSandbox failed\n{}", out.describe());
            return Ran::No(why_not(&out));
        }
    };
    let app_config = app_config(userns);
    let app = match cri.create(&pod, &app_config) {
        Ok(id) => id,
        Err(out) => {
            eprintln!("{handler}: CreateContainer failed\n{}", out.describe());
            cri.stop_and_remove_pod(&pod);
            return Ran::No(why_not(&out));
        }
    };
    let started = cri.start_container(&app);
    if !started.success() {
        eprintln!("{handler}: StartContainer failed\n{}", started.describe());
        cri.stop_and_remove(&app);
        cri.stop_and_remove_pod(&pod);
        return Ran::No(why_not(&started));
    }
    let seen = cri.look_inside(&app);
    let pid1 = common::parse_cap_mask(&seen.pid1_status, "CapBnd");
    let ran = Ran::Yes {
        sys_read_only: seen.exec.under_sys().iter().all(|m| m.has("ro")),
        own_cgroup: sees_own_cgroup(&seen),
        net_caps_dropped: common::NET_CAP_BITS
            .iter()
            .all(|b| !common::has_cap_bit(pid1, *b)),
    };
    cri.stop_and_remove(&app);
    cri.stop_and_remove_pod(&pod);
    ran
}

/// The columns of the matrix: the real runtime, its handler alone and
/// behind the wrapper.
const MATRIX_COLUMNS: [(&str, &str, &str); 4] = [
    ("runc 1.1.5", handler::RUNC_11, handler::WRAPPER_RUNC_11),
    ("runc 1.4.3", handler::RUNC_14, handler::WRAPPER_RUNC_14),
    ("crun 1.8.1", handler::CRUN, handler::WRAPPER_CRUN),
    (
        "crun 1.8.1, spec version lowered",
        handler::CRUN_STEPPED,
        handler::WRAPPER_CRUN,
    ),
];

/// The columns of containerd 2.4.2's matrix: the runtimes of the newest
/// stacks.
const MATRIX_COLUMNS_24: [(&str, &str, &str); 2] = [
    ("runc 1.5.3", handler::RUNC_15, handler::WRAPPER_RUNC_15),
    ("crun 1.27.1", handler::CRUN_127, handler::WRAPPER_CRUN_127),
];

fn matrix_columns(stack: Stack) -> &'static [(&'static str, &'static str, &'static str)] {
    match stack {
        Stack::Containerd24 => &MATRIX_COLUMNS_24,
        Stack::Containerd17 | Stack::Containerd23 => &MATRIX_COLUMNS,
    }
}

/// What each cell must be, as measured: without the wrapper, with it.
fn matrix_expected(stack: Stack, column: &str) -> (Ran, Ran) {
    let converted = Ran::Yes {
        sys_read_only: true,
        own_cgroup: true,
        net_caps_dropped: true,
    };
    match (stack, column) {
        (Stack::Containerd17, "runc 1.1.5" | "runc 1.4.3") => {
            (Ran::No("sysfs mount EPERM"), converted)
        }
        (Stack::Containerd17, "crun 1.8.1") => (Ran::No("crun refuses the ociVersion"), converted),
        // crun binds the host's /sys when it may not mount a sysfs: the
        // pod runs, its /sys submounts writable, its capabilities kept.
        (Stack::Containerd17, _) => (
            Ran::Yes {
                sys_read_only: false,
                own_cgroup: true,
                net_caps_dropped: false,
            },
            converted,
        ),
        (Stack::Containerd23, "runc 1.1.5") => (
            Ran::No("containerd: features lists no idmap"),
            Ran::No("containerd: features lists no idmap"),
        ),
        (Stack::Containerd23, "runc 1.4.3") => (
            Ran::Yes {
                sys_read_only: true,
                own_cgroup: false,
                net_caps_dropped: false,
            },
            converted,
        ),
        // The sandbox meets crun's version check first; behind the wrapper
        // (and its version step) it runs, and the app container meets
        // containerd's features check.
        (Stack::Containerd23, "crun 1.8.1") => (
            Ran::No("crun refuses the ociVersion"),
            Ran::No("containerd: runtime has no features"),
        ),
        (Stack::Containerd23, _) => (
            Ran::No("containerd: runtime has no features"),
            Ran::No("containerd: runtime has no features"),
        ),
        // containerd 2.4.2 binds /sys `rbind,rro` itself, after its cgroup
        // mount, and keeps the kubelet's network capabilities, whichever
        // runtime runs the pod.
        (Stack::Containerd24, "runc 1.5.3") => (
            Ran::Yes {
                sys_read_only: true,
                own_cgroup: false,
                net_caps_dropped: false,
            },
            converted,
        ),
        // crun 1.27.1 alone: read-only all the way, its own cgroup, the
        // capabilities kept. Through the wrapper (/sys moved before the
        // cgroup mount, a read-only tmpfs under it) the same, with the
        // capabilities dropped.
        (Stack::Containerd24, _) => (
            Ran::Yes {
                sys_read_only: true,
                own_cgroup: true,
                net_caps_dropped: false,
            },
            converted,
        ),
    }
}

/// Scenario 11, the version matrix of docs/registering.md: a userns
/// host-network pod with one app container on each real runtime, without
/// the wrapper and with it, and what its container saw. Printed (and kept
/// in target/tmp/version-matrix-*.txt) and asserted: the doc's cells come
/// from here.
fn version_matrix(stack: Stack) {
    let mut cri = Cri::start_on(stack);
    let mut report = format!("version matrix, {} stack:\n", stack.label());
    let mut wrong = Vec::new();
    for (i, (column, plain, wrapped)) in matrix_columns(stack).iter().enumerate() {
        let without = run_cell(&cri, plain, &format!("mx{i}p"));
        let with = run_cell(&cri, wrapped, &format!("mx{i}w"));
        report.push_str(&format!(
            "  {column}: without the wrapper: {}; with it: {}\n",
            without.text(),
            with.text()
        ));
        if (without.clone(), with.clone()) != matrix_expected(stack, column) {
            wrong.push(format!("{column}: {:?}", (without, with)));
        }
    }
    eprint!("{report}");
    let _ = std::fs::write(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(match stack {
            Stack::Containerd17 => "version-matrix-containerd-1.7.txt",
            Stack::Containerd23 => "version-matrix-containerd-2.3.txt",
            Stack::Containerd24 => "version-matrix-containerd-2.4.txt",
        }),
        &report,
    );
    assert!(
        wrong.is_empty(),
        "cells differ from docs/registering.md:\n{}",
        wrong.join("\n")
    );
    assert_no_leftovers(&mut cri);
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// RunPodSandbox + CreateContainer + StartContainer, timed.
fn time_pod_start(
    cri: &Cri,
    handler: &str,
    name: &str,
    userns_pod: bool,
) -> (Pod, String, Duration) {
    let userns = if userns_pod {
        Userns::Pod {
            host_id: cri::next_host_range(),
        }
    } else {
        Userns::Absent
    };
    let config = cri::pod_config(name, userns, &cri.log_dir(name));
    let ctr = app_config(userns);
    let started = Instant::now();
    let pod = run_pod(cri, handler, &config);
    let app = cri.create_and_start(&pod, &ctr);
    (pod, app, started.elapsed())
}

const START_RUNS: usize = 5;
const EXEC_RUNS: usize = 40;

/// The paths the figures compare: the wrapper on a userns pod (converted),
/// plain runc on a pod without a user namespace (what runc alone can run),
/// and the wrapper on that same kind of pod (passed through), which
/// separates the wrapper's own cost from the user namespace's.
const PATHS: [(&str, &str, bool); 3] = [
    ("wrapper, userns pod", handler::WRAPPER, true),
    ("plain runc, pod without userns", handler::RUNC, false),
    ("wrapper, pod without userns", handler::WRAPPER, false),
];

/// Figures for docs/performance.md, from one run; printed, never asserted: pod
/// start (RunPodSandbox + CreateContainer + StartContainer, median of 5)
/// and ExecSync of `true` (median of 40) on each of PATHS, interleaved so
/// that a slow moment of the machine hits every path alike. ExecSync times
/// fall on steps about 20 ms apart on these machines whatever the path, so
/// the fastest run is printed too and a ratio moves by steps. bench/cri.sh
/// runs this alone and shows them.
fn figures_printed_never_asserted(stack: Stack) {
    let mut cri = Cri::start_on(stack);
    // One pod first, so the image's snapshots and the page cache are warm
    // for every path.
    let (warm_pod, warm_app, _) = time_pod_start(&cri, handler::RUNC, "warm", false);
    cri.stop_and_remove(&warm_app);
    cri.stop_and_remove_pod(&warm_pod);

    let mut starts: Vec<Vec<Duration>> = vec![Vec::new(); PATHS.len()];
    let mut kept: Vec<(Pod, String)> = Vec::new();
    for round in 0..START_RUNS {
        for (i, (_, handler, userns)) in PATHS.iter().enumerate() {
            let (pod, app, took) =
                time_pod_start(&cri, handler, &format!("fig{i}r{round}"), *userns);
            starts[i].push(took);
            if round == 0 {
                kept.push((pod, app));
            } else {
                cri.stop_and_remove(&app);
                cri.stop_and_remove_pod(&pod);
            }
        }
    }
    let mut execs: Vec<Vec<Duration>> = vec![Vec::new(); PATHS.len()];
    for _ in 0..EXEC_RUNS {
        for (i, (_, app)) in kept.iter().enumerate() {
            let started = Instant::now();
            cri.exec_sync(app, &["true"]).assert_success();
            execs[i].push(started.elapsed());
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let starts: Vec<f64> = starts.into_iter().map(|v| ms(median(v))).collect();
    let exec_min: Vec<f64> = execs.iter().map(|v| ms(*v.iter().min().unwrap())).collect();
    let execs: Vec<f64> = execs.into_iter().map(|v| ms(median(v))).collect();
    let mut report = format!(
        "CRI figures ({}, crictl 1.36.0; medians of one run):\n\
         \x20 {:<32} {:>10} {:>10} {:>10} {:>14}\n",
        stack.label(),
        "path",
        "pod start",
        "ExecSync",
        "fastest",
        "ExecSync ratio"
    );
    for (i, (what, _, _)) in PATHS.iter().enumerate() {
        report.push_str(&format!(
            "  {what:<32} {:>7.0} ms {:>7.1} ms {:>7.1} ms {:>14.2}\n",
            starts[i],
            execs[i],
            exec_min[i],
            execs[i] / execs[1]
        ));
    }
    eprint!("{report}");
    let _ = std::fs::write(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(match stack {
            Stack::Containerd17 => "cri-figures.txt",
            Stack::Containerd23 => "cri-figures-containerd-2.3.txt",
            Stack::Containerd24 => "cri-figures-containerd-2.4.txt",
        }),
        &report,
    );
    for (pod, app) in kept {
        cri.stop_and_remove(&app);
        cri.stop_and_remove_pod(&pod);
    }
    assert_no_leftovers(&mut cri);
}

/// Every scenario runs on both stacks, as `containerd_1_7::NAME` and
/// `containerd_2_3::NAME`.
macro_rules! on_both_stacks {
    ($($scenario:ident),* $(,)?) => {
        mod containerd_1_7 {
            $(#[test]
            fn $scenario() {
                super::$scenario(super::Stack::Containerd17)
            })*
        }
        mod containerd_2_3 {
            $(#[test]
            fn $scenario() {
                super::$scenario(super::Stack::Containerd23)
            })*
        }
    };
}

/// The newest stack, containerd 2.4.2 + runc 1.5.3 (and crun 1.27.1
/// behind its own handlers), as `containerd_2_4::NAME`: every rule, every
/// refusal, exec and the hook, its version matrix; not the scenarios of
/// crun 1.8.1, nor the load and the figures, which the other stacks hold.
mod containerd_2_4 {
    macro_rules! on_containerd_2_4 {
        ($($scenario:ident),* $(,)?) => {
            $(#[test]
            fn $scenario() {
                super::$scenario(super::Stack::Containerd24)
            })*
        };
    }
    on_containerd_2_4!(
        failed_creates_leave_no_records,
        pod_with_one_app_container,
        pod_with_two_app_containers,
        net_sysctl_in_the_sandbox_is_refused,
        mapping_of_host_root_is_refused,
        pod_without_user_namespace_is_passed_through,
        plain_runc_handler_on_the_userns_pod,
        base_spec_hook_alone_on_the_userns_pod,
        base_spec_hook_behind_the_wrapper_verifies_app_containers,
        wrapper_onto_crun_1_27_on_the_userns_pod,
        handlers_declare_the_real_runtimes_features,
        version_matrix,
    );
}

on_both_stacks!(
    failed_creates_leave_no_records,
    pod_with_one_app_container,
    pod_with_two_app_containers,
    net_sysctl_in_the_sandbox_is_refused,
    mapping_of_host_root_is_refused,
    twenty_pods_in_parallel_leave_nothing_behind,
    pod_without_user_namespace_is_passed_through,
    plain_runc_handler_on_the_userns_pod,
    base_spec_hook_alone_on_the_userns_pod,
    base_spec_hook_behind_the_wrapper_verifies_app_containers,
    crun_alone_refuses_the_spec_version,
    wrapper_onto_crun_on_the_userns_pod,
    handlers_declare_the_real_runtimes_features,
    version_matrix,
    figures_printed_never_asserted,
);
