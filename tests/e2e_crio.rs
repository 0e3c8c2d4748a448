//! Kubernetes pods through CRI-O 1.36.3 (tests/common/crio.rs), requested
//! as the kubelet requests `hostNetwork: true` + `hostUsers: false`
//! (tests/common/cri.rs): network NODE, pid CONTAINER, ipc POD, a POD user
//! namespace with a host ID range of its own, repeated by every container.
//! Every scenario runs twice, once per value of CRI-O's `drop_infra_ctr`,
//! and asserts what the container saw, read through exec.
//!
//! Prerequisites (root, runc, jq, conmon, and crio, pinns, crictl and
//! copyimg from `scripts/cri-tools.sh`) fail the tests when missing.

mod common;

use std::time::{Duration, Instant};

use common::cri::{self, Pod, Seen, Userns};
use common::crio::{handler, Crio, Hooks, Mode};
use serde_json::{json, Value};

/// Two tests per scenario: `drop_infra` (CRI-O's default) and
/// `infra_container` (`drop_infra_ctr = false`).
macro_rules! both_modes {
    ($($scenario:ident),* $(,)?) => {
        mod drop_infra {
            $(#[test] fn $scenario() { super::$scenario(super::Mode::DropInfra) })*
        }
        mod infra_container {
            $(#[test] fn $scenario() { super::$scenario(super::Mode::InfraContainer) })*
        }
    };
}

both_modes!(
    crio_alone,
    pod_with_app_container,
    pod_without_user_namespace_is_passed_through,
    net_sysctl_never_reaches_the_runtime,
    mapping_of_host_root_is_refused,
    ten_pods_at_once,
    create_runtime_hook_with_plain_runc,
);

/// A userns pod with its own host ID range, and its config.
fn userns_pod(crio: &Crio, name: &str) -> (Userns, Value) {
    let userns = Userns::Pod {
        host_id: cri::next_host_range(),
    };
    (userns, cri::pod_config(name, userns, &crio.log_dir(name)))
}

fn run_pod(crio: &Crio, handler: &str, config: &Value) -> Pod {
    crio.run_pod(handler, config).unwrap_or_else(|out| {
        panic!(
            "RunPodSandbox on {handler} failed\n{}\n--- decisions\n{:#?}",
            out.describe(),
            crio.decisions()
        )
    })
}

fn app_config(userns: Userns) -> Value {
    cri::container_config("app", userns, cri::APP_SCRIPT)
}

/// CRI-O's error as crictl printed it (`\"` for `"`).
fn cri_error(out: &common::Outcome) -> String {
    out.stderr.replace("\\\"", "\"")
}

/// What a converted container must have seen: /sys and every mount under
/// it read-only, the host's bpffs and securityfs there, the container's own
/// cgroup (the root of its cgroup namespace) as the topmost mount at
/// /sys/fs/cgroup, stacked on the /sys bind, the pod's ID mapping, and no
/// network capability in the bounding set of pid 1 nor of the process
/// CRI-O exec'd.
fn assert_converted_inside(seen: &Seen, host_id: u64) {
    common::assert_converted_view_mapped(&seen.exec, true, host_id);
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

/// The mount a process sees at /sys/fs/cgroup: among those stacked on
/// the visible /sys, the one nothing else is stacked on. (A mount listed
/// before the /sys bind lies under it, hidden.)
fn visible_cgroup_mount(seen: &Seen) -> &common::MountEntry {
    let probe = &seen.exec;
    let table = probe.table();
    let sys = probe
        .topmost("/sys")
        .unwrap_or_else(|| panic!("no /sys:\n{table}"));
    let on_sys = |m: &common::MountEntry| {
        let mut parent = probe.by_id(m.parent);
        while let Some(p) = parent {
            if p.id == sys.id {
                return true;
            }
            parent = probe.by_id(p.parent);
        }
        false
    };
    let here: Vec<&common::MountEntry> = probe
        .at("/sys/fs/cgroup")
        .into_iter()
        .filter(|m| on_sys(m))
        .collect();
    here.iter()
        .find(|m| !here.iter().any(|o| o.parent == m.id))
        .copied()
        .unwrap_or_else(|| panic!("nothing visible at /sys/fs/cgroup:\n{table}"))
}

/// The container's own cgroup (the root of its cgroup namespace), read-only,
/// is what it sees at /sys/fs/cgroup.
fn assert_own_cgroup(seen: &Seen) {
    let top = visible_cgroup_mount(seen);
    assert!(
        top.fstype.starts_with("cgroup") && top.root == "/" && top.has("ro"),
        "the container does not see its own cgroup, read-only, at /sys/fs/cgroup: \
         {top:?}\n{}",
        seen.exec.table()
    );
}

/// The container's mounts under /sys as `point fstype root options`, for
/// the log and for comparing two containers.
fn sys_view(seen: &Seen) -> Vec<String> {
    seen.exec
        .under_sys()
        .iter()
        .map(|m| {
            format!(
                "{} {} {} {}",
                m.mount_point,
                m.fstype,
                m.root,
                m.options.join(",")
            )
        })
        .collect()
}

fn show(what: &str, seen: &Seen) {
    eprintln!(
        "{what}: pid 1 CapBnd {:016x}, exec CapBnd {:016x}, uid_map {}, under /sys:\n  {}",
        common::parse_cap_mask(&seen.pid1_status, "CapBnd"),
        seen.exec.cap_bnd(),
        seen.exec.uid_map.trim(),
        sys_view(seen).join("\n  ")
    );
}

/// The wrapper logged one converted create for `id`.
fn assert_converted_decision(crio: &Crio, id: &str) {
    let lines = crio.decisions_for(id);
    assert_eq!(lines.len(), 1, "one decision for {id}: {lines:#?}");
    assert_eq!(lines[0]["command"], "create", "{:#}", lines[0]);
    assert_eq!(lines[0]["converted"], true, "{:#}", lines[0]);
}

fn assert_no_leftovers(crio: &mut Crio) {
    let left = crio.leftovers();
    assert!(left.is_empty(), "left behind after removal: {left:#?}");
    let forced = crio.stop();
    assert!(forced.is_empty(), "killed or deleted by force: {forced:#?}");
}

fn tear_down(mut crio: Crio, pod: &Pod, containers: &[String]) {
    for id in containers {
        crio.stop_and_remove(id);
    }
    crio.stop_and_remove_pod(pod);
    assert_no_leftovers(&mut crio);
}

fn wait_for_log(crio: &Crio, id: &str, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = crio.logs(id);
        if out.success() && out.stdout.contains(needle) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "`{needle}` never appeared in the container's log\n{}",
            out.describe()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// runc 1.1.5 joining the host network namespace pinns pinned from inside
/// the pod's new user namespace.
fn assert_setns_eperm(out: &common::Outcome) {
    let err = cri_error(out);
    assert!(
        err.contains("failed to setns into net namespace")
            && err.contains("Operation not permitted"),
        "expected runc's setns EPERM for the pause container\n{}",
        out.describe()
    );
}

/// The baseline: CRI-O and runc 1.1.5 without the wrapper. With a pause
/// container the userns pod cannot start (runc < 1.3 may not join the
/// pinned host network namespace from inside the new user namespace).
/// Without one it runs, and the container sees what CRI-O 1.36 wrote: the
/// /sys bind read-only at its top only (the host's bpffs, securityfs and
/// cgroup tree under it writable), its cgroup mount listed before /sys and
/// so hidden under the host's cgroup tree, CAP_NET_BIND_SERVICE in every
/// bounding set.
fn crio_alone(mode: Mode) {
    let mut crio = Crio::start(mode);
    let (userns, config) = userns_pod(&crio, "alone");
    if mode == Mode::InfraContainer {
        let out = crio
            .run_pod(handler::RUNC, &config)
            .err()
            .expect("runc 1.1.5 alone was expected to fail the pause container");
        assert_setns_eperm(&out);
        assert_no_leftovers(&mut crio);
        return;
    }
    let pod = run_pod(&crio, handler::RUNC, &config);
    let app = crio.create_and_start(&pod, &app_config(userns));
    let seen = crio.look_inside(&app);
    show("CRI-O 1.36 + runc 1.1.5, app container", &seen);
    let writable: Vec<String> = common::writable_under_sys(&seen.exec)
        .iter()
        .map(|m| m.mount_point.clone())
        .collect();
    for dir in ["/sys/fs/bpf", "/sys/kernel/security", "/sys/fs/cgroup"] {
        assert!(
            writable.iter().any(|w| w == dir),
            "CRI-O alone was expected to leave {dir} writable: {writable:?}"
        );
    }
    let top = visible_cgroup_mount(&seen);
    assert_ne!(
        top.root, "/",
        "CRI-O alone was expected to show the host's cgroup tree: {top:?}"
    );
    for bnd in [
        common::parse_cap_mask(&seen.pid1_status, "CapBnd"),
        seen.exec.cap_bnd(),
    ] {
        assert!(common::has_cap_bit(bnd, 10), "CapBnd {bnd:016x}");
    }
    assert!(
        crio.decisions().is_empty(),
        "the plain handler ran the wrapper"
    );
    tear_down(crio, &pod, &[app]);
}

/// Scenario 1: a userns pod on the wrapper's handler with one app
/// container; ExecSync, a streaming exec, the log, ContainerStatus. While
/// it runs, the leftover check sees its runtime state, mounts and conmon
/// (so that it can fail); after removal it sees nothing.
fn pod_with_app_container(mode: Mode) {
    let crio = Crio::start(mode);
    let (userns, config) = userns_pod(&crio, "one");
    let host_id = userns.host_id().unwrap();
    let pod = run_pod(&crio, handler::WRAPPER, &config);
    if mode == Mode::InfraContainer {
        assert_converted_decision(&crio, &pod.id);
        let change = crio.decisions_for(&pod.id)[0]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["rule"] == "own-namespaces" && c["before"]["type"] == "network");
        assert!(
            change,
            "the wrapper was expected to drop the pause container's join of the host \
             network namespace: {:#?}",
            crio.decisions_for(&pod.id)
        );
    } else {
        assert!(
            crio.decisions_for(&pod.id).is_empty(),
            "no pause container was expected with drop_infra_ctr = true"
        );
    }
    let app = crio.create_and_start(&pod, &app_config(userns));
    assert_converted_decision(&crio, &app);
    common::assert_converted_spec(&crio.bundle_spec(&app));
    let status = crio.inspect(&app);
    assert_eq!(status["status"]["state"], "CONTAINER_RUNNING", "{status:#}");

    let seen = crio.look_inside(&app);
    show(
        &format!("CRI-O ({mode:?}) + wrapper + runc, app container"),
        &seen,
    );
    assert_converted_inside(&seen, host_id);

    let streamed = crio.exec_stream(&app, &["grep", "CapBnd", "/proc/self/status"]);
    streamed.assert_success();
    let bnd = common::parse_cap_mask(&streamed.stdout, "CapBnd");
    for bit in common::NET_CAP_BITS {
        assert!(
            !common::has_cap_bit(bnd, *bit),
            "a streaming exec got CapBnd {bnd:016x}"
        );
    }
    let failing = crio.exec_sync(&app, &["/no/such/binary"]);
    assert!(!failing.success(), "{}", failing.describe());
    wait_for_log(&crio, &app, "app-started-app");

    let states = crio.runtime_states();
    assert!(
        states.iter().any(|s| s.ends_with(&app)),
        "the leftover check does not see the running container's state: {states:?}"
    );
    assert!(
        !crio.converted_records().is_empty(),
        "the leftover check does not see the wrapper's record"
    );
    assert!(
        crio.monitors()
            .iter()
            .any(|(_, cmd)| cmd.contains("conmon") && cmd.contains(&app)),
        "the leftover check does not see the container's conmon: {:?}",
        crio.monitors()
    );
    assert!(
        !crio.mounts_in_dir().is_empty(),
        "the leftover check does not see the pod's mounts"
    );
    tear_down(crio, &pod, &[app]);
}

/// A spec made comparable with another pod's: CRI-O's annotations that
/// name the handler, the time, and the labels in map order dropped; ids,
/// the pinned namespaces' name and the rootfs directory replaced.
fn normalized(spec: &Value, pod: &Pod, container: &str) -> Value {
    let mut spec = spec.clone();
    if let Some(a) = spec["annotations"].as_object_mut() {
        for k in [
            "io.kubernetes.cri-o.Created",
            "io.kubernetes.cri-o.RuntimeHandler",
            "io.kubernetes.cri-o.Labels",
            "io.kubernetes.cri-o.MountPoint",
        ] {
            a.remove(k);
        }
    }
    let mut text = serde_json::to_string(&spec).unwrap();
    text = text
        .replace(&pod.id, "POD-ID")
        .replace(container, "CONTAINER-ID");
    if let Some(rootfs) = spec["root"]["path"].as_str() {
        text = text.replace(rootfs, "ROOTFS");
    }
    for ns in spec["linux"]["namespaces"].as_array().into_iter().flatten() {
        if let Some(name) = ns["path"]
            .as_str()
            .and_then(|p| p.rsplit('/').next())
            .filter(|n| n.len() > 8)
        {
            text = text.replace(name, "PINNED");
        }
    }
    serde_json::from_str(&text).unwrap()
}

struct PlainPod {
    pause_spec: Option<Value>,
    app_spec: Value,
    sys: Vec<String>,
    pid1_bnd: u64,
    exec_bnd: u64,
}

fn hostusers_pod(crio: &Crio, handler: &str, userns: Userns) -> PlainPod {
    let config = cri::pod_config("hostusers", userns, &crio.log_dir("hostusers"));
    let pod = run_pod(crio, handler, &config);
    let app = crio.create_and_start(&pod, &app_config(userns));
    let pause_spec = (crio.mode() == Mode::InfraContainer)
        .then(|| normalized(&crio.bundle_spec(&pod.id), &pod, &app));
    let app_spec = normalized(&crio.bundle_spec(&app), &pod, &app);
    let seen = crio.look_inside(&app);
    crio.stop_and_remove(&app);
    crio.stop_and_remove_pod(&pod);
    let mut ids = vec![app.clone()];
    if crio.mode() == Mode::InfraContainer {
        ids.push(pod.id.clone());
    }
    for id in &ids {
        let lines = crio.decisions_for(id);
        if handler == handler::WRAPPER {
            assert_eq!(lines.len(), 1, "{id}: {lines:#?}");
            assert_eq!(lines[0]["converted"], false, "{:#}", lines[0]);
            assert_eq!(lines[0]["decision"], "no-user-namespace", "{:#}", lines[0]);
            assert!(
                lines[0]["changes"].as_array().map_or(true, Vec::is_empty),
                "{:#}",
                lines[0]
            );
        } else {
            assert!(
                lines.is_empty(),
                "the plain handler ran the wrapper: {lines:#?}"
            );
        }
    }
    PlainPod {
        pause_spec,
        app_spec,
        sys: sys_view(&seen),
        pid1_bnd: common::parse_cap_mask(&seen.pid1_status, "CapBnd"),
        exec_bnd: seen.exec.cap_bnd(),
    }
}

/// Scenario 2: a pod without a user namespace (no `userns_options`, or
/// mode NODE) on the wrapper's handler is passed through exactly: the
/// wrapper decides `no-user-namespace` and changes nothing, the specs are
/// those the plain runc handler runs (ids, time and handler name aside),
/// and the container sees the same /sys and capabilities.
fn pod_without_user_namespace_is_passed_through(mode: Mode) {
    let mut crio = Crio::start(mode);
    for userns in [Userns::Absent, Userns::Node] {
        let plain = hostusers_pod(&crio, handler::RUNC, userns);
        let via = hostusers_pod(&crio, handler::WRAPPER, userns);
        assert_eq!(via.pause_spec, plain.pause_spec, "{userns:?}: pause spec");
        assert_eq!(via.app_spec, plain.app_spec, "{userns:?}: app spec");
        assert_eq!(
            via.sys, plain.sys,
            "{userns:?}: /sys as the container saw it"
        );
        assert_eq!(via.pid1_bnd, plain.pid1_bnd, "{userns:?}: pid 1's CapBnd");
        assert_eq!(via.exec_bnd, plain.exec_bnd, "{userns:?}: exec's CapBnd");
        assert!(
            common::has_cap_bit(plain.pid1_bnd, 10),
            "CRI-O's default set holds CAP_NET_BIND_SERVICE: {:016x}",
            plain.pid1_bnd
        );
    }
    assert_no_leftovers(&mut crio);
}

/// Scenario 3: a `net.*` sysctl on a host-network pod. CRI-O 1.36 drops
/// it itself ("not allowed with host net enabled") before any spec is
/// written, from the pod's request as from its own `default_sysctls`, so
/// the wrapper never sees one: the pod runs, no spec carries the sysctl,
/// and the host's value is untouched. (The wrapper's refusal of such a
/// spec is tested where a runtime gets one: e2e_cri, e2e_refusal.)
fn net_sysctl_never_reaches_the_runtime(mode: Mode) {
    let key = "net.ipv4.ip_forward";
    let host_before = std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap();
    let wanted = if host_before.trim() == "1" { "0" } else { "1" };
    let crio = Crio::start(mode);
    let (userns, mut config) = userns_pod(&crio, "sysctl");
    config["linux"]["sysctls"] = json!({ key: wanted });
    let pod = run_pod(&crio, handler::WRAPPER, &config);
    let app = crio.create_and_start(&pod, &app_config(userns));
    let mut specs = vec![crio.bundle_spec(&app)];
    if mode == Mode::InfraContainer {
        specs.push(crio.bundle_spec(&pod.id));
    }
    for spec in &specs {
        assert!(
            spec["linux"]["sysctl"].get(key).is_none(),
            "CRI-O passed {key} on: {:#}",
            spec["linux"]["sysctl"]
        );
    }
    assert!(
        crio.log()
            .contains(&format!("\\\"{key}\\\" not allowed with host net enabled")),
        "CRI-O's warning is missing:\n{}",
        crio.log()
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap(),
        host_before,
        "the host's {key} changed"
    );
    tear_down(crio, &pod, &[app]);
}

/// Scenario 4: a mapping that includes host root is refused by the
/// wrapper, and CRI-O's error carries the wrapper's line: at
/// RunPodSandbox with a pause container, at CreateContainer without one.
fn mapping_of_host_root_is_refused(mode: Mode) {
    let mut crio = Crio::start(mode);
    let userns = Userns::Pod { host_id: 0 };
    let config = cri::pod_config("hostroot", userns, &crio.log_dir("hostroot"));
    let out = match crio.run_pod(handler::WRAPPER, &config) {
        Err(out) => {
            assert_eq!(mode, Mode::InfraContainer, "{}", out.describe());
            out
        }
        Ok(pod) => {
            assert_eq!(
                mode,
                Mode::DropInfra,
                "the pause container mapping host root ran"
            );
            let out = crio
                .create(&pod, &app_config(userns))
                .expect_err("a container mapping host root must not be created");
            crio.stop_and_remove_pod(&pod);
            out
        }
    };
    let err = cri_error(&out);
    for needle in [
        "userns-hostnet-runtime: refused:",
        "refused: idmap:",
        "maps host root",
    ] {
        assert!(
            err.contains(needle),
            "CRI-O's error lacks `{needle}`\n{}",
            out.describe()
        );
    }
    assert_no_leftovers(&mut crio);
}

const PARALLEL_PODS: usize = 10;

/// Scenario 5: 10 userns pods with one app container each, started at
/// once on the wrapper's handler: every one runs with its own mapping and
/// a read-only /sys, and removal leaves nothing.
fn ten_pods_at_once(mode: Mode) {
    let mut crio = Crio::start(mode);
    let results: Vec<Result<(Pod, String, u64), String>> = std::thread::scope(|s| {
        let crio = &crio;
        let handles: Vec<_> = (0..PARALLEL_PODS)
            .map(|i| {
                s.spawn(move || {
                    let name = format!("par{i}");
                    let (userns, config) = userns_pod(crio, &name);
                    let pod = crio
                        .run_pod(handler::WRAPPER, &config)
                        .map_err(|o| format!("{name}: RunPodSandbox\n{}", o.describe()))?;
                    let id = crio
                        .create(&pod, &app_config(userns))
                        .map_err(|o| format!("{name}: CreateContainer\n{}", o.describe()))?;
                    let out = crio.crictl(&["start", &id]);
                    if !out.success() {
                        return Err(format!("{name}: StartContainer\n{}", out.describe()));
                    }
                    Ok((pod, id, userns.host_id().unwrap()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("pod thread"))
            .collect()
    });
    let failed: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    let running: Vec<&(Pod, String, u64)> =
        results.iter().filter_map(|r| r.as_ref().ok()).collect();
    for (_, id, host_id) in &running {
        let seen = crio.look_inside(id);
        assert_converted_inside(&seen, *host_id);
    }
    std::thread::scope(|s| {
        for (pod, id, _) in &running {
            let crio = &crio;
            s.spawn(move || {
                crio.stop_and_remove(id);
                crio.stop_and_remove_pod(pod);
            });
        }
    });
    assert!(
        failed.is_empty(),
        "{} of {PARALLEL_PODS} pods failed:\n{}",
        failed.len(),
        failed
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_no_leftovers(&mut crio);
}

/// Scenario 7: the createRuntime hook instead of the wrapper. CRI-O starts
/// with hooks.d/userns-hostnet.json in its `hooks_dir` (and refuses to
/// start with the podman-only precreate definition beside it). On the
/// plain runc handler without a pause container, the hook makes every
/// mount under the app container's /sys read-only, and a mapping of host
/// root aborts the create with the hook's line. With a pause container
/// the hook cannot help: runc 1.1.5 fails joining the network namespace
/// before any hook runs.
fn create_runtime_hook_with_plain_runc(mode: Mode) {
    let refused = Crio::launch(mode, Hooks::WithPrecreate)
        .err()
        .expect("CRI-O was expected to refuse the precreate hook definition");
    assert!(
        refused.contains("precreate"),
        "CRI-O's refusal does not name the precreate stage:\n{refused}"
    );

    let mut crio = Crio::launch(mode, Hooks::Shipped)
        .unwrap_or_else(|log| panic!("CRI-O did not start with the shipped hook:\n{log}"));
    let (userns, config) = userns_pod(&crio, "hook");
    if mode == Mode::InfraContainer {
        let out = crio
            .run_pod(handler::RUNC, &config)
            .err()
            .expect("the hook cannot rescue the pause container");
        assert_setns_eperm(&out);
        assert_no_leftovers(&mut crio);
        return;
    }
    let host_id = userns.host_id().unwrap();
    let pod = run_pod(&crio, handler::RUNC, &config);
    let app = crio.create_and_start(&pod, &app_config(userns));
    let hooks = crio.bundle_spec(&app)["hooks"]["createRuntime"].clone();
    assert_eq!(
        hooks[0]["args"],
        json!(["userns-hostnet", "hook", "create-runtime"]),
        "CRI-O did not put the hook in the spec: {hooks:#}"
    );
    let lines: Vec<Value> = crio
        .decisions_for(&app)
        .into_iter()
        .filter(|d| d["command"] == "hook create-runtime")
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "one hook line for {app}: {:#?}",
        crio.decisions()
    );
    let seen = crio.look_inside(&app);
    show("CRI-O + runc + createRuntime hook, app container", &seen);
    let writable = common::writable_under_sys(&seen.exec);
    assert!(
        writable.is_empty(),
        "writable under /sys with the hook: {writable:?}\n{}",
        seen.exec.table()
    );
    for dir in ["/sys/fs/bpf", "/sys/kernel/security"] {
        assert!(
            !seen.exec.at(dir).is_empty(),
            "{dir} is missing:\n{}",
            seen.exec.table()
        );
    }
    assert_eq!(
        seen.exec.uid_map.split_whitespace().nth(1),
        Some(host_id.to_string().as_str())
    );
    crio.stop_and_remove(&app);
    crio.stop_and_remove_pod(&pod);

    let bad = Userns::Pod { host_id: 0 };
    let config = cri::pod_config("hookroot", bad, &crio.log_dir("hookroot"));
    let pod = run_pod(&crio, handler::RUNC, &config);
    let out = crio
        .create(&pod, &app_config(bad))
        .expect_err("the hook must abort a container mapping host root");
    assert!(
        cri_error(&out).contains("maps host root"),
        "CRI-O's error lacks the hook's refusal\n{}",
        out.describe()
    );
    crio.stop_and_remove_pod(&pod);
    assert_no_leftovers(&mut crio);
}

/// The drop-in docs/registering.md shows is what `userns-hostnet install
/// crio` writes, but for `runtime_path` (the docs name the wrapper, install
/// the handler's link to it when the default handler has a runtime_path of
/// its own): the same handler name, keys and values. The tier runs CRI-O
/// with the installed one.
#[test]
fn docs_drop_in_matches_install() {
    let dir = tempfile::tempdir().unwrap();
    let installed: toml::Table = common::crio::install_drop_in_for(dir.path())
        .parse()
        .expect("install's drop-in is TOML");
    let docs_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/crio-userns-hostnet.conf");
    let docs: toml::Table = std::fs::read_to_string(&docs_path)
        .unwrap()
        .parse()
        .expect("the docs' drop-in is TOML");
    let handler = |t: &toml::Table| -> toml::Table {
        let mut h = t["crio"]["runtime"]["runtimes"][handler::WRAPPER]
            .as_table()
            .unwrap_or_else(|| panic!("no handler {} in {t:#?}", handler::WRAPPER))
            .clone();
        assert!(
            h.remove("runtime_path").is_some(),
            "no runtime_path: {h:#?}"
        );
        h
    };
    assert_eq!(
        handler(&docs),
        handler(&installed),
        "docs/crio-userns-hostnet.conf and `userns-hostnet install crio` disagree"
    );
}
