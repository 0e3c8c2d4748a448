//! The engine on the real configs in crates/engine/fixtures and on hand-made specs.

use super::policy::{NetCapabilities, NetSysctls, SysfsFallback};
use super::*;
use serde_json::{json, Value};

fn fixture(name: &str) -> Value {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// A plan with its spec as the whole document it writes.
#[derive(Debug)]
struct Planned {
    decision: Decision,
    findings: Findings,
    spec: Value,
}

impl Planned {
    fn changed(&self) -> bool {
        !self.findings.changes.is_empty()
    }
}

fn run(spec: Value) -> Planned {
    run_with(spec, &HostFacts::default(), &Policy::default()).unwrap()
}

/// The rootless fixture maps host 0 (it was generated as root).
fn run_allowing_host_root(spec: Value) -> Planned {
    let mut policy = Policy::default();
    policy.idmap.allow_host_root = true;
    run_with(spec, &HostFacts::default(), &policy).unwrap()
}

fn run_with(spec: Value, facts: &HostFacts, policy: &Policy) -> Result<Planned, Refusal> {
    let plan = evaluate_value(&spec, facts, policy)?;
    Ok(Planned {
        spec: plan.spec.to_value().unwrap(),
        decision: plan.decision,
        findings: plan.findings,
    })
}

fn sys_mounts(spec: &Value) -> Vec<Value> {
    spec["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| fields::clean_path(m["destination"].as_str().unwrap()) == "/sys")
        .cloned()
        .collect()
}

fn destinations(spec: &Value) -> Vec<String> {
    spec["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["destination"].as_str().unwrap().to_owned())
        .collect()
}

fn caps(spec: &Value, set: &str) -> Vec<String> {
    spec["process"]["capabilities"][set]
        .as_array()
        .map(|a| a.iter().map(|c| c.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// A user namespace on the host network, as `runc spec` plus the edits
/// TESTING.md describes.
fn userns_hostnet() -> Value {
    let mut spec = fixture("runc-spec.json");
    let ns = spec["linux"]["namespaces"].as_array_mut().unwrap();
    ns.retain(|n| n["type"] != "network");
    ns.push(json!({"type": "user"}));
    spec["linux"]["uidMappings"] = json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
    spec["linux"]["gidMappings"] = json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
    spec
}

fn add_namespace(spec: &mut Value, kind: &str) {
    spec["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "type": kind }));
}

const SYS_BIND: [&str; 6] = ["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"];

#[test]
fn fixtures_without_user_namespace_are_untouched() {
    for name in [
        "crun-spec.json",
        "ctr-default.json",
        "ctr-nethost.json",
        "ctr-privileged-nethost.json",
        "podman-default.json",
        "runc-spec.json",
    ] {
        let spec = fixture(name);
        let plan = run(spec.clone());
        assert_eq!(plan.decision, Decision::NoUserNamespace, "{name}");
        assert!(!plan.changed(), "{name}");
        assert_eq!(plan.spec, spec, "{name}");
    }
}

#[test]
fn user_namespace_with_own_network_is_untouched_even_with_net_sysctls() {
    let spec = fixture("podman-userns-ownnet.json");
    let plan = run(spec.clone());
    assert_eq!(plan.decision, Decision::OwnNetworkNamespace);
    assert!(!plan.changed());
    assert_eq!(plan.spec, spec);
}

#[test]
fn podman_userns_hostnet_binds_sys_recursively_read_only() {
    let input = fixture("podman-userns-hostnet.json");
    let plan = run(input.clone());
    assert_eq!(plan.decision, Decision::HostNetwork);
    let sys = sys_mounts(&plan.spec);
    assert_eq!(sys.len(), 1);
    assert_eq!(
        sys[0],
        json!({"destination": "/sys", "type": "bind", "source": "/sys",
               "options": ["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"]})
    );
    for set in ["bounding", "effective", "permitted"] {
        assert!(!caps(&plan.spec, set).contains(&"CAP_NET_BIND_SERVICE".to_string()));
        assert_eq!(caps(&plan.spec, set).len(), caps(&input, set).len() - 1);
    }
    // No cgroup namespace in this spec: no cgroup mount is invented.
    assert_eq!(destinations(&plan.spec), destinations(&input));
    let rules: Vec<&str> = plan.findings.changes.iter().map(|c| c.rule).collect();
    assert_eq!(
        rules,
        ["sysfs", "capabilities", "capabilities", "capabilities"]
    );
}

#[test]
fn podman_privileged_rw_bind_becomes_rro_and_all_net_caps_go() {
    let input = fixture("podman-privileged-userns-hostnet.json");
    let plan = run(input.clone());
    let sys = &sys_mounts(&plan.spec)[0];
    assert_eq!(
        sys["options"],
        json!(["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"])
    );
    for set in ["bounding", "effective", "permitted"] {
        let after = caps(&plan.spec, set);
        assert!(
            after.iter().all(|c| !c.starts_with("CAP_NET_")),
            "{set}: {after:?}"
        );
        assert_eq!(after.len(), caps(&input, set).len() - 4);
        // Everything else keeps its order.
        let kept: Vec<String> = caps(&input, set)
            .into_iter()
            .filter(|c| !c.starts_with("CAP_NET_"))
            .collect();
        assert_eq!(after, kept);
    }
}

#[test]
fn runc_rootless_none_type_bind_is_converted() {
    let plan = run_allowing_host_root(fixture("runc-spec-rootless.json"));
    assert_eq!(plan.decision, Decision::HostNetwork);
    let sys = &sys_mounts(&plan.spec)[0];
    assert_eq!(sys["type"], "bind");
    assert_eq!(sys["options"], json!(SYS_BIND));
    // Its cgroup mount already follows /sys: order unchanged.
    let d = destinations(&plan.spec);
    assert_eq!(&d[5..7], ["/sys", "/sys/fs/cgroup"]);
    assert_eq!(caps(&plan.spec, "ambient"), ["CAP_AUDIT_WRITE", "CAP_KILL"]);
}

#[test]
fn fresh_sysfs_becomes_bind_and_cgroup_mount_stays_after_it() {
    let mut spec = userns_hostnet();
    add_namespace(&mut spec, "cgroup");
    let plan = run(spec);
    let d = destinations(&plan.spec);
    let sys = d.iter().position(|x| x == "/sys").unwrap();
    assert_eq!(d[sys + 1], "/sys/fs/cgroup");
    assert_eq!(d.iter().filter(|x| *x == "/sys/fs/cgroup").count(), 1);
    assert_eq!(plan.spec["mounts"][sys]["options"], json!(SYS_BIND));
}

/// containerd 2.3 drops the sysfs mount and appends its bind of /sys after
/// the cgroup mount, hiding the container's own cgroup view.
#[test]
fn containerd_23_order_is_fixed() {
    let mut spec = userns_hostnet();
    add_namespace(&mut spec, "cgroup");
    let mounts = spec["mounts"].as_array_mut().unwrap();
    mounts.retain(|m| m["destination"] != "/sys");
    mounts.push(
        json!({"destination": "/sys", "type": "bind", "source": "/sys",
                       "options": ["rbind", "rro", "nosuid", "nodev", "noexec"]}),
    );
    let before = destinations(&spec);
    let plan = run(spec);
    let after = destinations(&plan.spec);
    let sys = after.iter().position(|x| x == "/sys").unwrap();
    let cg = after.iter().position(|x| x == "/sys/fs/cgroup").unwrap();
    assert!(sys < cg, "{after:?}");
    assert_eq!(
        after.len(),
        before.len(),
        "no cgroup mount added: one follows /sys"
    );
    let order = plan
        .findings
        .changes
        .iter()
        .find(|c| c.rule == "mount-order")
        .unwrap();
    assert!(
        order.summary.contains("before /sys/fs/cgroup"),
        "{}",
        order.summary
    );
    let sysfs = plan
        .findings
        .changes
        .iter()
        .find(|c| c.rule == "sysfs")
        .expect("containerd's own bind lets host mounts propagate in: made rprivate");
    assert_eq!(sysfs.after["options"], json!(SYS_BIND));
    // Everything but /sys keeps its relative order.
    let strip = |d: &[String]| {
        d.iter()
            .filter(|x| *x != "/sys")
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&after), strip(&before));
}

/// CRI-O <= 1.36 binds /sys with `ro,rbind` and removes the cgroup mount.
#[test]
fn crio_ro_rbind_without_cgroup_mount_gets_its_own_view() {
    let mut spec = userns_hostnet();
    add_namespace(&mut spec, "cgroup");
    let mounts = spec["mounts"].as_array_mut().unwrap();
    mounts.retain(|m| m["destination"] != "/sys/fs/cgroup");
    for m in mounts.iter_mut() {
        if m["destination"] == "/sys" {
            *m = json!({"destination": "/sys", "type": "bind", "source": "/sys",
                        "options": ["nosuid", "noexec", "nodev", "ro", "rbind"]});
        }
    }
    let plan = run(spec);
    let d = destinations(&plan.spec);
    let sys = d.iter().position(|x| x == "/sys").unwrap();
    assert_eq!(plan.spec["mounts"][sys]["options"], json!(SYS_BIND));
    assert_eq!(
        plan.spec["mounts"][sys + 1],
        json!({"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
               "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]})
    );
    // Without a cgroup namespace, nothing is added.
    let mut no_cgns = userns_hostnet();
    no_cgns["mounts"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["destination"] != "/sys/fs/cgroup");
    let plan = run(no_cgns);
    assert!(!destinations(&plan.spec).contains(&"/sys/fs/cgroup".to_string()));
    // Nor when the policy turns it off.
    let mut spec = userns_hostnet();
    add_namespace(&mut spec, "cgroup");
    spec["mounts"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["destination"] != "/sys/fs/cgroup");
    let policy = Policy {
        own_cgroup_view: false,
        ..Policy::default()
    };
    let plan = run_with(spec, &HostFacts::default(), &policy).unwrap();
    assert!(!destinations(&plan.spec).contains(&"/sys/fs/cgroup".to_string()));
}

#[test]
fn unknown_fields_and_other_capabilities_survive_in_place() {
    let mut spec = userns_hostnet();
    spec["io.example.vendor"] = json!({"nested": [1, 2.5, "x"], "big": 18446744073709551615u64});
    spec["process"]["capabilities"]["bounding"] = json!([
        "cap_chown1",
        "CAP_NET_RAW",
        "CAP_CHOWN",
        "net_admin",
        "Cap_Net_Broadcast"
    ]);
    spec["linux"]["x-unknown"] = json!(true);
    for m in spec["mounts"].as_array_mut().unwrap() {
        if m["destination"] == "/sys" {
            m["x-mount-extra"] = json!({"keep": "me"});
        }
    }
    let plan = run(spec.clone());
    assert_eq!(caps(&plan.spec, "bounding"), ["cap_chown1", "CAP_CHOWN"]);
    assert_eq!(plan.spec["io.example.vendor"], spec["io.example.vendor"]);
    assert_eq!(plan.spec["linux"]["x-unknown"], json!(true));
    let sys = &sys_mounts(&plan.spec)[0];
    assert_eq!(sys["x-mount-extra"], json!({"keep": "me"}));
    // Key order of the mount object is kept: destination first, extra last.
    let keys: Vec<&String> = sys.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["destination", "type", "source", "options", "x-mount-extra"]
    );
    // Top-level key order too.
    let before: Vec<&String> = spec.as_object().unwrap().keys().collect();
    let after: Vec<&String> = plan.spec.as_object().unwrap().keys().collect();
    assert_eq!(before, after);
}

/// A capability name no runtime reads is kept (a newer kernel's or
/// daemon's capability), unless it is named like a network one: refused
/// in a converted container, naming the set and the name.
#[test]
fn an_unknown_capability_name_is_kept_unless_named_like_network() {
    let mut spec = userns_hostnet();
    spec["process"]["capabilities"]["effective"] = json!(["CAP_CHOWN", "CAP_FUTURE_THING"]);
    let plan = run_with(spec.clone(), &HostFacts::default(), &Policy::default()).unwrap();
    assert_eq!(
        plan.spec["process"]["capabilities"]["effective"],
        json!(["CAP_CHOWN", "CAP_FUTURE_THING"])
    );
    spec["process"]["capabilities"]["effective"] = json!(["CAP_CHOWN", "cap_net_future"]);
    let r = run_with(spec, &HostFacts::default(), &Policy::default()).unwrap_err();
    assert_eq!(r.field, "process.capabilities.effective");
    assert!(
        r.message
            .starts_with("\"cap_net_future\": not a capability"),
        "{r}"
    );
}

/// Everything outside mounts and capability sets comes out equal, and
/// every mount not at /sys is the same object.
#[test]
fn lossless_outside_the_declared_targets() {
    for name in [
        "podman-userns-hostnet.json",
        "podman-privileged-userns-hostnet.json",
        "runc-spec-rootless.json",
    ] {
        let input = fixture(name);
        let plan = run_allowing_host_root(input.clone());
        let strip = |v: &Value| {
            let mut v = v.clone();
            v.as_object_mut().unwrap().remove("mounts");
            v["process"].as_object_mut().unwrap().remove("capabilities");
            v
        };
        assert_eq!(strip(&plan.spec), strip(&input), "{name}");
        let others = |v: &Value| -> Vec<Value> {
            v["mounts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["destination"] != "/sys")
                .cloned()
                .collect()
        };
        assert_eq!(others(&plan.spec), others(&input), "{name}");
    }
}

#[test]
fn converting_twice_changes_nothing_more() {
    let mut cgns = userns_hostnet();
    add_namespace(&mut cgns, "cgroup");
    cgns["mounts"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["destination"] != "/sys/fs/cgroup");
    for spec in [
        fixture("podman-userns-hostnet.json"),
        fixture("podman-privileged-userns-hostnet.json"),
        fixture("runc-spec-rootless.json"),
        userns_hostnet(),
        cgns,
    ] {
        let once = run_allowing_host_root(spec);
        assert!(once.changed());
        let twice = run_allowing_host_root(once.spec.clone());
        assert!(!twice.changed(), "{:?}", twice.findings.changes);
        assert_eq!(twice.spec, once.spec);
    }
}

#[test]
fn never_widens_capabilities() {
    let input = fixture("podman-privileged-userns-hostnet.json");
    let plan = run(input.clone());
    for set in caps::SETS {
        let before = caps(&input, set);
        assert!(
            caps(&plan.spec, set).iter().all(|c| before.contains(c)),
            "{set}"
        );
    }
}

use super::rules::caps;

#[test]
fn net_sysctls_are_refused_by_name() {
    let mut spec = userns_hostnet();
    spec["linux"]["sysctl"] = json!({"net.ipv4.ip_forward": "1", "kernel.shm_rmid_forced": "1", "net/core/somaxconn": "1024"});
    let err = run_with(spec.clone(), &HostFacts::default(), &Policy::default()).unwrap_err();
    assert_eq!(err.rule, "sysctl");
    assert_eq!(err.field, "linux.sysctl");
    assert!(
        err.message
            .starts_with("net.ipv4.ip_forward, net/core/somaxconn cannot be set"),
        "{}",
        err.message
    );
    assert!(!err.message.contains("kernel.shm"));
    let policy = Policy {
        net_sysctls: NetSysctls::Drop,
        ..Policy::default()
    };
    let plan = run_with(spec, &HostFacts::default(), &policy).unwrap();
    assert_eq!(
        plan.spec["linux"]["sysctl"],
        json!({"kernel.shm_rmid_forced": "1"})
    );
}

#[test]
fn capability_policy_keep_and_refuse() {
    let spec = fixture("podman-privileged-userns-hostnet.json");
    let keep = Policy {
        net_capabilities: NetCapabilities::Keep,
        ..Policy::default()
    };
    let plan = run_with(spec.clone(), &HostFacts::default(), &keep).unwrap();
    assert_eq!(caps(&plan.spec, "bounding"), caps(&spec, "bounding"));
    let refuse = Policy {
        net_capabilities: NetCapabilities::Refuse,
        ..Policy::default()
    };
    let err = run_with(spec, &HostFacts::default(), &refuse).unwrap_err();
    assert_eq!(
        err.message,
        "CAP_NET_ADMIN, CAP_NET_BIND_SERVICE, CAP_NET_BROADCAST, CAP_NET_RAW asked for, but they grant nothing on a network namespace the container's user namespace does not own (capabilities.net = \"refuse\")"
    );
}

#[test]
fn without_rro_refuse_or_fall_back_to_ro() {
    let facts = HostFacts {
        rro: RroSupport::Unsupported("kernel 5.10 has no mount_setattr".into()),
        ..HostFacts::default()
    };
    let err = run_with(userns_hostnet(), &facts, &Policy::default()).unwrap_err();
    assert_eq!(err.rule, "sysfs");
    assert!(err.message.contains("kernel 5.10 has no mount_setattr"));
    let policy = Policy {
        sysfs_fallback: SysfsFallback::Ro,
        ..Policy::default()
    };
    let plan = run_with(userns_hostnet(), &facts, &policy).unwrap();
    assert_eq!(
        sys_mounts(&plan.spec)[0]["options"],
        json!(["rbind", "ro", "nosuid", "nodev", "noexec", "rprivate"])
    );
    assert!(plan
        .findings
        .warnings
        .iter()
        .any(|w| w.contains("plain ro")));
}

#[test]
fn other_mounts_at_sys_are_left_alone() {
    let mut spec = userns_hostnet();
    for m in spec["mounts"].as_array_mut().unwrap() {
        if m["destination"] == "/sys" {
            *m = json!({"destination": "/sys", "type": "tmpfs", "source": "tmpfs", "options": ["ro"]});
        }
    }
    let plan = run(spec.clone());
    assert_eq!(sys_mounts(&plan.spec), sys_mounts(&spec));
    // Capabilities are still dropped: they grant nothing either way.
    assert!(plan
        .findings
        .changes
        .iter()
        .all(|c| c.rule == "capabilities"));
}

#[test]
fn every_sys_mount_is_converted_and_destinations_are_cleaned() {
    let mut spec = userns_hostnet();
    spec["mounts"].as_array_mut().unwrap().push(json!({"destination": "//sys/", "type": "sysfs", "source": "sysfs", "options": ["rw", "rshared"]}));
    let plan = run(spec);
    let sys = sys_mounts(&plan.spec);
    assert_eq!(sys.len(), 2);
    assert_eq!(
        sys[1]["options"],
        json!(["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"])
    );
    assert_eq!(
        sys[1]["destination"], "//sys/",
        "destination spelling is kept"
    );
    // The late /sys now comes before /sys/fs/cgroup.
    let d: Vec<String> = destinations(&plan.spec)
        .iter()
        .map(|x| fields::clean_path(x))
        .collect();
    let cg = d.iter().position(|x| x == "/sys/fs/cgroup").unwrap();
    assert!(d.iter().rposition(|x| x == "/sys").unwrap() < cg);
}

#[test]
fn malformed_fields_are_refused_by_name() {
    type Mutation = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Mutation, &str)> = vec![
        (Box::new(|s| s["mounts"] = json!({"a": 1})), "mounts"),
        (
            Box::new(|s| s["mounts"][5]["options"] = json!(["ro", 3])),
            "mounts[5].options[1]",
        ),
        (
            Box::new(|s| s["mounts"][5]["destination"] = json!(null)),
            "mounts[5].destination",
        ),
        (
            Box::new(|s| s["mounts"][5]["type"] = json!(1)),
            "mounts[5].type",
        ),
        (
            Box::new(|s| s["process"]["capabilities"]["bounding"] = json!("CAP_NET_RAW")),
            "process.capabilities.bounding",
        ),
        (
            Box::new(|s| s["process"]["capabilities"]["effective"] = json!([1])),
            "process.capabilities.effective[0]",
        ),
        (
            Box::new(|s| s["process"]["capabilities"] = json!([])),
            "process.capabilities",
        ),
        (
            Box::new(|s| s["linux"]["sysctl"] = json!(["net.x"])),
            "linux.sysctl",
        ),
        (
            Box::new(|s| s["linux"]["namespaces"][0] = json!({"type": 5})),
            "linux.namespaces[0]",
        ),
    ];
    for (mutate, field) in cases {
        let mut spec = userns_hostnet();
        mutate(&mut spec);
        let err = run_with(spec, &HostFacts::default(), &Policy::default()).unwrap_err();
        assert_eq!(err.field, field, "{err}");
        assert!(!err.to_string().contains('\n'));
    }
    assert!(evaluate_value(&json!([1]), &HostFacts::default(), &Policy::default()).is_err());
}

#[test]
fn numbers_survive_exactly() {
    let text = r#"{"linux":{"namespaces":[{"type":"mount"}]},"x":[1.0,1e+400,18446744073709551616,-0,0.1,12345678901234567890123]}"#;
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_string(&v).unwrap(), text);
}

#[test]
fn refusal_is_one_line_with_rule_and_field() {
    let r = Refusal::new("sysctl", "linux.sysctl", "net.x cannot be set");
    assert_eq!(r.to_string(), "sysctl: linux.sysctl: net.x cannot be set");
}

/// A Kubernetes app container as containerd 1.7 writes it for a host-network
/// pod: it joins the sandbox's user and ipc namespaces, and its network and
/// uts paths are the host's own (the runtime's).
#[test]
fn app_container_joining_the_runtimes_own_namespaces_reads_as_host_network() {
    use super::facts::{NsFacts, NsId};
    let mut spec = userns_hostnet();
    let ns = spec["linux"]["namespaces"].as_array_mut().unwrap();
    ns.retain(|n| !["user", "ipc", "uts"].contains(&n["type"].as_str().unwrap()));
    ns.push(json!({"type": "user", "path": "/proc/42/ns/user"}));
    ns.push(json!({"type": "ipc", "path": "/proc/42/ns/ipc"}));
    ns.push(json!({"type": "uts", "path": "/proc/42/ns/uts"}));
    ns.push(json!({"type": "network", "path": "/proc/42/ns/net"}));
    let before: Vec<Value> = ns.clone();

    let host_net = NsId { dev: 4, ino: 1 };
    let host_uts = NsId { dev: 4, ino: 2 };
    let pod_user = NsId { dev: 4, ino: 3 };
    let mut facts = HostFacts::default();
    let mut known = |p: &str, id, owner| {
        facts
            .namespaces
            .insert(p.to_owned(), Ok(NsFacts { id, owner }));
    };
    known("/proc/42/ns/user", pod_user, None);
    known("/proc/42/ns/ipc", NsId { dev: 4, ino: 5 }, None);
    known("/proc/42/ns/uts", host_uts, None);
    known("/proc/42/ns/net", host_net, Some(NsId { dev: 4, ino: 9 }));
    facts.runtime_namespaces = [
        ("net", host_net),
        ("uts", host_uts),
        ("ipc", NsId { dev: 4, ino: 6 }),
    ]
    .into();
    facts.joined_maps.insert(
        "/proc/42/ns/user".into(),
        Ok(IdMaps {
            uid: vec![Extent {
                container: 0,
                host: 100000,
                size: 65536,
            }],
            gid: vec![Extent {
                container: 0,
                host: 100000,
                size: 65536,
            }],
        }),
    );

    let plan = run_with(spec, &facts, &Policy::default()).unwrap();
    assert_eq!(plan.decision, Decision::HostNetwork);
    let own: Vec<&Change> = plan
        .findings
        .changes
        .iter()
        .filter(|c| c.rule == rules::own_ns::NAME)
        .collect();
    assert_eq!(own.len(), 2, "{own:?}");
    let kept: Vec<&Value> = before
        .iter()
        .filter(|n| n["type"] != "uts" && n["type"] != "network")
        .collect();
    let after: Vec<&Value> = plan.spec["linux"]["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(after, kept);
    assert_eq!(sys_mounts(&plan.spec)[0]["options"], json!(SYS_BIND));
    assert!(caps(&plan.spec, "bounding")
        .iter()
        .all(|c| !c.starts_with("CAP_NET_")));

    // Idempotent: the output needs nothing more.
    let again = run_with(plan.spec.clone(), &facts, &Policy::default()).unwrap();
    assert!(!again.changed(), "{:?}", again.findings.changes);

    // A container with its own network namespace keeps a joined uts entry
    // even when it is the runtime's: it needs no conversion.
    let mut own_net = userns_hostnet();
    add_namespace(&mut own_net, "network");
    own_net["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "uts", "path": "/proc/42/ns/uts"}));
    own_net["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .retain(|n| n != &json!({"type": "uts"}));
    let plan = run_with(own_net, &facts, &Policy::default()).unwrap();
    assert_eq!(plan.decision, Decision::OwnNetworkNamespace);
    assert!(!plan.changed());
}

/// youki on a cgroup v1 host mounts the container's cgroup hierarchies
/// writable whatever the options say: refused by default, naming the
/// mount; allowed by the policy, the plan says so and changes nothing for
/// it; without that fact, or without a cgroup mount, nothing is said.
#[test]
fn a_runtime_that_mounts_cgroup_v1_writable_is_refused_unless_allowed() {
    let facts = HostFacts {
        runtime_cgroup_v1_writable: Some("youki does it".to_owned()),
        ..HostFacts::default()
    };
    let r = run_with(userns_hostnet(), &facts, &Policy::default()).unwrap_err();
    assert_eq!(r.rule, rules::cgroup::V1_NAME);
    assert!(r.field.starts_with("mounts["), "{}", r.field);
    assert!(
        r.message.contains("youki does it")
            && r.message.contains("cgroup.allow_writable_v1 = true"),
        "{}",
        r.message
    );
    let allow = Policy {
        allow_writable_cgroup_v1: true,
        ..Policy::default()
    };
    let plan = run_with(userns_hostnet(), &facts, &allow).unwrap();
    let cg = destinations(&plan.spec)
        .iter()
        .position(|d| d == "/sys/fs/cgroup")
        .unwrap();
    let warned: Vec<&String> = plan
        .findings
        .warnings
        .iter()
        .filter(|w| w.contains("youki does it"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", plan.findings.warnings);
    assert!(
        warned[0].starts_with(&format!("mounts[{cg}]: /sys/fs/cgroup: youki does it: ")),
        "{}",
        warned[0]
    );
    assert!(plan
        .findings
        .changes
        .iter()
        .all(|c| c.rule != rules::cgroup::V1_NAME));

    let quiet = run(userns_hostnet());
    assert!(quiet
        .findings
        .warnings
        .iter()
        .all(|w| !w.contains("cgroup v1")));
    let mut no_cgroup = userns_hostnet();
    no_cgroup["mounts"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["type"] != "cgroup");
    let plan = run_with(no_cgroup, &facts, &Policy::default()).unwrap();
    assert!(plan
        .findings
        .warnings
        .iter()
        .all(|w| !w.contains("youki does it")));
}

/// A runtime that would put a writable tmpfs of its own under the
/// container's cgroup mount (crun on a cgroup2 host) gets a read-only
/// tmpfs right before that mount, after /sys; the cgroup mount the own
/// view adds gets one too; without the fact, without a cgroup mount, or
/// with another mount at /sys/fs/cgroup before it, nothing changes.
#[test]
fn a_runtime_that_leaves_a_writable_cgroup_tmpfs_gets_a_read_only_one_first() {
    let facts = HostFacts {
        runtime_cgroup_tmpfs_writable: Some("crun does it".to_owned()),
        ..HostFacts::default()
    };
    let tmpfs = json!({
        "destination": "/sys/fs/cgroup",
        "type": "tmpfs",
        "source": "tmpfs",
        "options": ["nosuid", "nodev", "noexec", "ro"],
    });
    let plan = run_with(userns_hostnet(), &facts, &Policy::default()).unwrap();
    let dests = destinations(&plan.spec);
    let sys = dests.iter().position(|d| d == "/sys").unwrap();
    let mounts = plan.spec["mounts"].as_array().unwrap();
    assert_eq!(mounts[sys + 1], tmpfs, "{:#}", plan.spec["mounts"]);
    assert_eq!(
        mounts[sys + 2]["type"],
        "cgroup",
        "{:#}",
        plan.spec["mounts"]
    );
    assert_eq!(dests.iter().filter(|d| *d == "/sys/fs/cgroup").count(), 2);
    let added: Vec<&Change> = plan
        .findings
        .changes
        .iter()
        .filter(|c| c.rule == rules::cgroup::UNDERLAY_NAME)
        .collect();
    assert_eq!(added.len(), 1, "{:?}", plan.findings.changes);
    assert_eq!(added[0].field, format!("mounts[{}]", sys + 1));
    assert!(
        added[0].summary.ends_with(": crun does it"),
        "{}",
        added[0].summary
    );
    assert_eq!(added[0].after, tmpfs);
    let again = run_with(plan.spec.clone(), &facts, &Policy::default()).unwrap();
    assert!(!again.changed(), "{:?}", again.findings.changes);

    // The own cgroup view's mount, added after /sys, has it under it too.
    let mut cgns = userns_hostnet();
    add_namespace(&mut cgns, "cgroup");
    cgns["mounts"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["type"] != "cgroup");
    let plan = run_with(cgns.clone(), &facts, &Policy::default()).unwrap();
    let mounts = plan.spec["mounts"].as_array().unwrap();
    let sys = destinations(&plan.spec)
        .iter()
        .position(|d| d == "/sys")
        .unwrap();
    assert_eq!(mounts[sys + 1], tmpfs, "{:#}", plan.spec["mounts"]);
    assert_eq!(
        mounts[sys + 2]["type"],
        "cgroup",
        "{:#}",
        plan.spec["mounts"]
    );
    assert_eq!(mounts.len(), sys + 3);

    // Without the fact: the conversion as before.
    let plain = run(userns_hostnet());
    assert!(plain
        .findings
        .changes
        .iter()
        .all(|c| c.rule != rules::cgroup::UNDERLAY_NAME));
    assert_eq!(
        destinations(&plain.spec)
            .iter()
            .filter(|d| *d == "/sys/fs/cgroup")
            .count(),
        1
    );

    // No cgroup mount (and no cgroup namespace to add one for): nothing.
    let mut no_cgroup = userns_hostnet();
    no_cgroup["mounts"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["type"] != "cgroup");
    let plan = run_with(no_cgroup, &facts, &Policy::default()).unwrap();
    assert!(plan
        .findings
        .changes
        .iter()
        .all(|c| c.rule != rules::cgroup::UNDERLAY_NAME));

    // Another mount at /sys/fs/cgroup already precedes the cgroup mount.
    let mut covered = userns_hostnet();
    let list = covered["mounts"].as_array_mut().unwrap();
    let cg = list.iter().position(|m| m["type"] == "cgroup").unwrap();
    list.insert(
        cg,
        json!({"destination": "/sys/fs/cgroup", "type": "tmpfs", "source": "tmpfs", "options": ["ro", "mode=755"]}),
    );
    let plan = run_with(covered, &facts, &Policy::default()).unwrap();
    assert!(plan
        .findings
        .changes
        .iter()
        .all(|c| c.rule != rules::cgroup::UNDERLAY_NAME));
}
