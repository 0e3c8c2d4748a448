//! Kubernetes pods through CRI-O 1.36.3 (tests/common/crio.rs), requested
//! as the kubelet requests `hostNetwork: true` + `hostUsers: false`
//! (tests/common/cri.rs): network NODE, pid CONTAINER, ipc POD, a POD user
//! namespace with a host ID range of its own, repeated by every container.
//! Every scenario runs twice, once per value of CRI-O's `drop_infra_ctr`,
//! and asserts what the container saw, read through exec.
//!
//! Prerequisites (root, runc, crun, jq, conmon, and crio, pinns, crictl,
//! copyimg and runc 1.4.3 from `scripts/cri-tools.sh`) fail the tests when
//! missing.

mod common;

use common::cri::{self, Userns};
use common::crictl::{
    app_config, assert_converted_decision, assert_no_leftovers, assert_passed_through, cri_error,
    pods_at_once, run_pod, tear_down, userns_pod, wait_for_log, Pod, Seen,
};
use common::crio::{handler, matrix_handler, Crio, Hooks, Mode};
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
    version_matrix,
);

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
    visible_cgroup_mount_if_any(seen)
        .unwrap_or_else(|| panic!("nothing visible at /sys/fs/cgroup:\n{}", seen.exec.table()))
}

/// [`visible_cgroup_mount`], or None when /sys or a cgroup on it is missing.
fn visible_cgroup_mount_if_any(seen: &Seen) -> Option<&common::MountEntry> {
    let probe = &seen.exec;
    let sys = probe.topmost("/sys")?;
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
    let mut ids = vec![app.as_str()];
    if crio.mode() == Mode::InfraContainer {
        ids.push(&pod.id);
    }
    assert_passed_through(crio, &ids, handler == handler::WRAPPER);
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
    pods_at_once(&crio, handler::WRAPPER, PARALLEL_PODS, |id, host_id| {
        let seen = crio.look_inside(id);
        assert_converted_inside(&seen, host_id);
    });
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

/// One cell of the version matrix, one way: what the pod's app container
/// saw, or why the pod did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ran {
    Yes {
        /// /sys and every mount under it read-only.
        sys_read_only: bool,
        /// What the topmost mount at /sys/fs/cgroup is.
        cgroup: CgroupView,
        /// No network capability in pid 1's bounding set.
        pid1_net_caps_dropped: bool,
        /// Nor in that of a process ExecSync started.
        exec_net_caps_dropped: bool,
    },
    No(&'static str),
}

impl Ran {
    /// What the wrapper's conversion gives, on every runtime here.
    const CONVERTED: Ran = Ran::Yes {
        sys_read_only: true,
        cgroup: CgroupView::Own,
        pid1_net_caps_dropped: true,
        exec_net_caps_dropped: true,
    };

    fn text(&self) -> String {
        match self {
            Ran::Yes {
                sys_read_only,
                cgroup,
                pid1_net_caps_dropped,
                exec_net_caps_dropped,
            } => {
                let yes = |b: &bool| if *b { "yes" } else { "no" };
                format!(
                    "runs (/sys ro all the way: {}, at /sys/fs/cgroup: {cgroup:?}, \
                     net caps dropped: pid 1 {}, exec {})",
                    yes(sys_read_only),
                    yes(pid1_net_caps_dropped),
                    yes(exec_net_caps_dropped)
                )
            }
            Ran::No(why) => format!("fails: {why}"),
        }
    }
}

/// What a container sees at /sys/fs/cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CgroupView {
    /// Its own cgroup (the root of its cgroup namespace).
    Own,
    /// The host's tree, seen from its cgroup namespace (root `/..`).
    HostTree,
    /// No cgroup mount on the visible /sys: an empty directory of sysfs.
    Nothing,
}

fn cgroup_view(seen: &Seen) -> CgroupView {
    match visible_cgroup_mount_if_any(seen) {
        Some(top) if top.fstype.starts_with("cgroup") && top.root == "/" => CgroupView::Own,
        Some(_) => CgroupView::HostTree,
        None => CgroupView::Nothing,
    }
}

/// The failures the matrix meets, by what CRI-O passed back.
fn why_not(out: &common::Outcome) -> &'static str {
    let err = cri_error(out);
    [
        ("unknown version specified", "crun refuses the ociVersion"),
        ("failed to setns", "setns EPERM"),
        ("error mounting \"sysfs\"", "sysfs mount EPERM"),
    ]
    .into_iter()
    .find(|(needle, _)| err.contains(needle))
    .map_or("another error (see the test output)", |(_, why)| why)
}

fn net_caps_dropped(bnd: u64) -> bool {
    common::NET_CAP_BITS
        .iter()
        .all(|b| !common::has_cap_bit(bnd, *b))
}

/// One measured cell, one way: what ran, the bounding sets for the report,
/// and the real runtime the wrapper logged for the app container's create.
#[derive(Clone)]
struct Cell {
    ran: Ran,
    caps: String,
    runtime: Option<String>,
}

impl Cell {
    fn failed(why: &'static str) -> Cell {
        Cell {
            ran: Ran::No(why),
            caps: String::new(),
            runtime: None,
        }
    }
}

/// A userns host-network pod with one app container on `handler`: what
/// the container saw, then everything removed.
fn run_cell(crio: &Crio, handler: &str, name: &str) -> Cell {
    let (userns, config) = userns_pod(crio, name);
    let pod = match crio.run_pod(handler, &config) {
        Ok(pod) => pod,
        Err(out) => {
            eprintln!("{handler}: RunPodSandbox failed\n{}", out.describe());
            return Cell::failed(why_not(&out));
        }
    };
    let app = match crio.create(&pod, &app_config(userns)) {
        Ok(id) => id,
        Err(out) => {
            eprintln!("{handler}: CreateContainer failed\n{}", out.describe());
            crio.stop_and_remove_pod(&pod);
            return Cell::failed(why_not(&out));
        }
    };
    let started = crio.crictl(&["start", &app]);
    if !started.success() {
        eprintln!("{handler}: StartContainer failed\n{}", started.describe());
        crio.stop_and_remove(&app);
        crio.stop_and_remove_pod(&pod);
        return Cell::failed(why_not(&started));
    }
    let seen = crio.look_inside(&app);
    show(&format!("{handler}, app container"), &seen);
    let pid1 = common::parse_cap_mask(&seen.pid1_status, "CapBnd");
    let exec = seen.exec.cap_bnd();
    let ran = Ran::Yes {
        sys_read_only: seen.exec.under_sys().iter().all(|m| m.has("ro")),
        cgroup: cgroup_view(&seen),
        pid1_net_caps_dropped: net_caps_dropped(pid1),
        exec_net_caps_dropped: net_caps_dropped(exec),
    };
    let runtime = crio
        .decisions_for(&app)
        .iter()
        .find(|d| d["command"] == "create")
        .and_then(|d| d["runtime"].as_str().map(str::to_string));
    crio.stop_and_remove(&app);
    crio.stop_and_remove_pod(&pod);
    Cell {
        ran,
        caps: format!(" [CapBnd pid 1 {pid1:x}, exec {exec:x}]"),
        runtime,
    }
}

/// The columns of the matrix: the real runtime, its handler alone and
/// behind the wrapper, and the real runtime (under the daemon's directory)
/// the wrapper's handler must run.
const MATRIX_COLUMNS: [(&str, &str, &str, &str); 5] = [
    ("runc 1.1.5", handler::RUNC, handler::WRAPPER, "bin/runc"),
    (
        "runc 1.4.3",
        matrix_handler::RUNC_14,
        matrix_handler::WRAPPER_RUNC_14,
        "bin/runc14/runc",
    ),
    (
        "crun 1.8.1",
        matrix_handler::CRUN,
        matrix_handler::WRAPPER_CRUN,
        "bin/crun-stepped/crun",
    ),
    (
        "crun 1.8.1, spec version lowered",
        matrix_handler::CRUN_STEPPED,
        matrix_handler::WRAPPER_CRUN,
        "bin/crun-stepped/crun",
    ),
    (
        "crun 1.27.1",
        matrix_handler::CRUN_127,
        matrix_handler::WRAPPER_CRUN_127,
        "bin/crun-1.27/crun",
    ),
];

/// What each cell must be, as measured: without the wrapper, with it.
fn matrix_expected(mode: Mode, column: &str) -> (Ran, Ran) {
    // CRI-O 1.36 binds /sys `ro` (its top mount only) and lists the
    // container's cgroup mount before it; runc of either version follows
    // the spec, so the host's submounts stay writable and the host's tree
    // covers the container's cgroup. CRI-O's default set keeps
    // CAP_NET_BIND_SERVICE.
    let runc_alone = Ran::Yes {
        sys_read_only: false,
        cgroup: CgroupView::HostTree,
        pid1_net_caps_dropped: false,
        exec_net_caps_dropped: false,
    };
    match (mode, column) {
        // The pause container joins the pinned host network namespace
        // from inside the new user namespace: runc 1.1.5 may not.
        (Mode::InfraContainer, "runc 1.1.5") => (Ran::No("setns EPERM"), Ran::CONVERTED),
        (_, "runc 1.1.5" | "runc 1.4.3") => (runc_alone, Ran::CONVERTED),
        (_, "crun 1.8.1") => (Ran::No("crun refuses the ociVersion"), Ran::CONVERTED),
        // crun 1.27.1 follows CRI-O's `ro` bind as runc does (the host's
        // submounts writable) but mounts the container's own cgroup over
        // the host's tree. Through the wrapper everything under /sys is
        // read-only (crun's cgroup2 goes onto the wrapper's read-only
        // tmpfs at /sys/fs/cgroup).
        (_, "crun 1.27.1") => (
            Ran::Yes {
                sys_read_only: false,
                cgroup: CgroupView::Own,
                pid1_net_caps_dropped: false,
                exec_net_caps_dropped: false,
            },
            Ran::CONVERTED,
        ),
        // crun binds /sys without the host's submounts, read-only, and
        // mounts the cgroup first, under it: nothing at /sys/fs/cgroup.
        _ => (
            Ran::Yes {
                sys_read_only: true,
                cgroup: CgroupView::Nothing,
                pid1_net_caps_dropped: false,
                exec_net_caps_dropped: false,
            },
            Ran::CONVERTED,
        ),
    }
}

/// Scenario 8, the CRI-O row of docs/registering.md's version matrix: a
/// userns host-network pod with one app container on each real runtime,
/// without the wrapper and with it, and what its container saw. Printed
/// (and kept in target/tmp/version-matrix-crio-*.txt) and asserted: the
/// doc's cells come from here.
fn version_matrix(mode: Mode) {
    let mut crio = Crio::start_matrix(mode);
    let mut report = format!("version matrix, CRI-O 1.36.3, {mode:?}:\n");
    let mut wrong = Vec::new();
    let mut with_wrapper: std::collections::BTreeMap<&str, Cell> =
        std::collections::BTreeMap::new();
    for (i, (column, plain, wrapped, real)) in MATRIX_COLUMNS.iter().enumerate() {
        let without = run_cell(&crio, plain, &format!("mx{i}p"));
        // The wrapper's handler runs the same real runtime for both crun
        // columns: measured once.
        let with = with_wrapper
            .entry(wrapped)
            .or_insert_with(|| run_cell(&crio, wrapped, &format!("mx{i}w")))
            .clone();
        report.push_str(&format!(
            "  {column}: without the wrapper: {}{}; with it: {}{}\n",
            without.ran.text(),
            without.caps,
            with.ran.text(),
            with.caps
        ));
        if (without.ran.clone(), with.ran.clone()) != matrix_expected(mode, column) {
            wrong.push(format!("{column}: {:?}", (&without.ran, &with.ran)));
        }
        let real = crio.dir().join(real).display().to_string();
        if with.runtime.as_deref() != Some(real.as_str()) {
            wrong.push(format!(
                "{column}: the wrapper's handler {wrapped} ran {:?}, not {real}",
                with.runtime
            ));
        }
        if without.runtime.is_some() {
            wrong.push(format!(
                "{column}: the plain handler {plain} ran the wrapper"
            ));
        }
    }
    eprint!("{report}");
    let _ = std::fs::write(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(match mode {
            Mode::DropInfra => "version-matrix-crio-drop-infra.txt",
            Mode::InfraContainer => "version-matrix-crio-infra-container.txt",
        }),
        &report,
    );
    assert!(
        wrong.is_empty(),
        "cells differ from docs/registering.md:\n{}",
        wrong.join("\n")
    );
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
        // Carried from this tier's default handler (runc), which the
        // docs' snippet, written for a config without one, cannot know.
        h.remove("monitor_path");
        h
    };
    assert_eq!(
        handler(&docs),
        handler(&installed),
        "docs/crio-userns-hostnet.conf and `userns-hostnet install crio` disagree"
    );
}
