//! Properties of the engine over generated specs: random mounts at and
//! under /sys, namespace sets with and without paths, capability sets with
//! odd spellings and unknown names, sysctls, ID mappings, unknown fields,
//! host facts and policies.
//!
//! - idempotent: converting a converted spec changes nothing;
//! - never widens: capability sets only shrink, no mount loses ro, nosuid,
//!   nodev or noexec, namespaces and mappings are unchanged;
//! - lossless: every JSON path outside the rules' declared targets is equal,
//!   key order included;
//! - untouched: a spec that needs nothing yields no change (so the wrapper
//!   writes nothing);
//! - total: any JSON value, and any bytes, give a plan or a refusal (the
//!   strict reader's or the engine's), never a panic.
//!
//! Case count: proptest's default of 256 per property, or PROPTEST_CASES.

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use userns_hostnet_engine::fields::clean_path;
use userns_hostnet_engine::policy::{NetCapabilities, NetSysctls, SysfsFallback};
use userns_hostnet_engine::strict::read_spec;
use userns_hostnet_engine::{
    write, Decision, Findings, HostFacts, NsFacts, NsId, Policy, Refusal, RroSupport, Spec,
};

#[path = "support/whole_writer.rs"]
mod whole_writer;

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

    fn of(plan: userns_hostnet_engine::Plan) -> Planned {
        Planned {
            spec: plan
                .spec
                .to_value()
                .expect("the plan's spec writes and reads back"),
            decision: plan.decision,
            findings: plan.findings,
        }
    }
}

/// The engine on a document held as a value.
fn evaluate(spec: Value, facts: &HostFacts, policy: &Policy) -> Result<Planned, Refusal> {
    userns_hostnet_engine::evaluate_value(&spec, facts, policy).map(Planned::of)
}

// ---------------------------------------------------------------- generators

const DESTINATIONS: &[&str] = &[
    "/sys",
    "/sys/",
    "//sys",
    "sys",
    "/sys/.",
    "/sys/fs/cgroup",
    "/sys/fs/bpf",
    "/sys/kernel/security",
    "/sys/fs/../fs/cgroup",
    "/sysfoo",
    "/proc",
    "/dev",
    "/dev/shm",
    "/tmp",
    "/etc/hosts",
];
const TYPES: &[&str] = &[
    "sysfs", "bind", "rbind", "none", "", "tmpfs", "cgroup", "proc",
];
const SOURCES: &[&str] = &["/sys", "/sys/", "sysfs", "tmpfs", "cgroup", "/host/path"];
const OPTIONS: &[&str] = &[
    "ro",
    "rw",
    "rro",
    "nosuid",
    "nodev",
    "noexec",
    "bind",
    "rbind",
    "private",
    "rprivate",
    "rslave",
    "shared",
    "relatime",
    "mode=755",
    "x-unknown-option",
];
const CAPS: &[&str] = &[
    "CAP_CHOWN",
    "CAP_KILL",
    "CAP_SYS_ADMIN",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "cap_net_raw",
    "NET_ADMIN",
    " CAP_NET_BIND_SERVICE ",
    "CAP_PERFMON",
    "CAP_FROBNICATE",
    "",
];
const CAP_SETS: [&str; 5] = [
    "bounding",
    "effective",
    "inheritable",
    "permitted",
    "ambient",
];
const NS_TYPES: &[&str] = &[
    "pid", "ipc", "uts", "mount", "cgroup", "user", "network", "time",
];
const NS_PATHS: &[&str] = &[
    "/proc/7/ns/user",
    "/proc/7/ns/net",
    "/run/netns/a",
    "/proc/9/ns/net",
];
const SYSCTLS: &[&str] = &[
    "net.ipv4.ip_forward",
    "net/core/somaxconn",
    "kernel.shm_rmid_forced",
    "fs.mqueue.msg_max",
    "network.not.net",
];

fn pick(list: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    proptest::sample::select(list)
}

/// Any JSON value: the shapes a hostile or broken config.json may hold.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "(?s).{0,8}".prop_map(Value::String),
        pick(OPTIONS).prop_map(|s| json!(s)),
        pick(DESTINATIONS).prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-zA-Z]{1,6}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn unknown_fields() -> impl Strategy<Value = Vec<(String, Value)>> {
    prop::collection::vec(("x[A-Za-z]{1,5}", any_json()), 0..3)
}

fn with_unknown(mut v: Value, extra: Vec<(String, Value)>) -> Value {
    if let Value::Object(m) = &mut v {
        for (k, x) in extra {
            m.entry(k).or_insert(x);
        }
    }
    v
}

fn mount() -> impl Strategy<Value = Value> {
    (
        pick(DESTINATIONS),
        prop::option::of(pick(TYPES)),
        prop::option::of(pick(SOURCES)),
        prop::option::of(prop::collection::vec(pick(OPTIONS), 0..7)),
        unknown_fields(),
    )
        .prop_map(|(dest, kind, source, options, extra)| {
            let mut m = Map::new();
            m.insert("destination".into(), json!(dest));
            if let Some(k) = kind {
                m.insert("type".into(), json!(k));
            }
            if let Some(s) = source {
                m.insert("source".into(), json!(s));
            }
            if let Some(o) = options {
                m.insert("options".into(), json!(o));
            }
            with_unknown(Value::Object(m), extra)
        })
}

/// Half the time a user namespace on the host network (what the wrapper is
/// for), with or without a cgroup namespace; else any set.
fn namespaces() -> impl Strategy<Value = Vec<Value>> {
    prop_oneof![
        any::<bool>().prop_map(|cgroup| {
            let mut l = vec![
                json!({"type": "pid"}),
                json!({"type": "mount"}),
                json!({"type": "user"}),
            ];
            if cgroup {
                l.push(json!({"type": "cgroup"}));
            }
            l
        }),
        any_namespaces(),
    ]
}

fn any_namespaces() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec((pick(NS_TYPES), prop::option::of(pick(NS_PATHS))), 0..8).prop_map(
        |list| {
            let mut seen = Vec::new();
            list.into_iter()
                .filter(|(t, _)| {
                    let fresh = !seen.contains(t);
                    seen.push(*t);
                    fresh
                })
                .map(|(t, p)| match p {
                    Some(p) => json!({"type": t, "path": p}),
                    None => json!({"type": t}),
                })
                .collect()
        },
    )
}

fn capabilities() -> impl Strategy<Value = Value> {
    prop::collection::vec(prop::option::of(prop::collection::vec(pick(CAPS), 0..8)), 5).prop_map(
        |sets| {
            let mut m = Map::new();
            for (name, set) in CAP_SETS.iter().zip(sets) {
                if let Some(s) = set {
                    m.insert((*name).into(), json!(s));
                }
            }
            Value::Object(m)
        },
    )
}

fn extent() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => Just(json!({"containerID": 0, "hostID": 100000, "size": 65536})),
        1 => (0u64..70000, 0u64..200000, 0u64..70000)
            .prop_map(|(c, h, s)| json!({"containerID": c, "hostID": h, "size": s})),
        1 => (any::<u32>(), any::<u32>(), any::<u32>())
            .prop_map(|(c, h, s)| json!({"containerID": c, "hostID": h, "size": s})),
    ]
}

fn mappings() -> impl Strategy<Value = Option<Vec<Value>>> {
    prop_oneof![
        6 => extent().prop_map(|e| Some(vec![e])),
        1 => Just(None),
        2 => prop::collection::vec(extent(), 0..4).prop_map(Some),
    ]
}

fn sysctls() -> impl Strategy<Value = Option<Value>> {
    prop::option::weighted(
        0.3,
        prop::collection::vec((pick(SYSCTLS), "[0-9]{1,3}"), 0..3).prop_map(|kv| {
            Value::Object(
                kv.into_iter()
                    .map(|(k, v)| (k.to_owned(), json!(v)))
                    .collect(),
            )
        }),
    )
}

prop_compose! {
    /// A runtime spec shaped like the ones runtimes and engines write, with
    /// every part the rules read drawn at random.
    fn spec()(
        mounts in prop::collection::vec(mount(), 0..10),
        namespaces in namespaces(),
        caps in prop::option::weighted(0.9, capabilities()),
        uid in mappings(),
        gid in mappings(),
        sysctl in sysctls(),
        user in prop::option::weighted(0.8, (0u64..3, 0u64..3)),
        top in unknown_fields(),
        process_extra in unknown_fields(),
        linux_extra in unknown_fields(),
    ) -> Value {
        let mut process = json!({"terminal": false, "args": ["sh"], "cwd": "/"});
        if let Some((u, g)) = user {
            process["user"] = json!({"uid": u, "gid": g});
        }
        if let Some(c) = caps {
            process["capabilities"] = c;
        }
        let mut linux = json!({"namespaces": namespaces});
        if let Some(m) = uid {
            linux["uidMappings"] = json!(m);
        }
        if let Some(m) = gid {
            linux["gidMappings"] = json!(m);
        }
        if let Some(s) = sysctl {
            linux["sysctl"] = s;
        }
        with_unknown(json!({
            "ociVersion": "1.0.2",
            "process": with_unknown(process, process_extra),
            "root": {"path": "rootfs", "readonly": true},
            "hostname": "h",
            "mounts": mounts,
            "linux": with_unknown(linux, linux_extra),
        }), top)
    }
}

fn ns_id() -> impl Strategy<Value = NsId> {
    (1u64..4).prop_map(|ino| NsId { dev: 4, ino })
}

prop_compose! {
    /// Facts for the namespace paths the specs use: known with an owner,
    /// unreadable, or not inspected; a host network namespace or none.
    fn facts()(
        known in prop::collection::vec(
            prop::option::of(prop::result::maybe_ok((ns_id(), prop::option::of(ns_id())), Just("gone".to_string()))),
            NS_PATHS.len(),
        ),
        runtime_netns in prop::option::of(ns_id()),
        rro in prop::option::weighted(0.2, Just("kernel too old".to_string())),
    ) -> HostFacts {
        let mut f = HostFacts {
            runtime_namespaces: runtime_netns.map(|id| ("net", id)).into_iter().collect(),
            ..HostFacts::default()
        };
        for (path, k) in NS_PATHS.iter().zip(known) {
            if let Some(k) = k {
                f.namespaces.insert(
                    path.to_string(),
                    k.map(|(id, owner)| NsFacts { id, owner }),
                );
            }
        }
        if let Some(why) = rro {
            f.rro = RroSupport::Unsupported(why);
        }
        f
    }
}

prop_compose! {
    fn policy()(
        ro in any::<bool>(),
        caps in 0u8..6,
        drop_sysctls in any::<bool>(),
        own_cgroup_view in any::<bool>(),
        allow_host_root in any::<bool>(),
        user_mapped in any::<bool>(),
    ) -> Policy {
        let mut p = Policy {
            sysfs_fallback: if ro { SysfsFallback::Ro } else { SysfsFallback::Refuse },
            // Mostly the default, drop.
            net_capabilities: match caps {
                0 => NetCapabilities::Keep,
                1 => NetCapabilities::Refuse,
                _ => NetCapabilities::Drop,
            },
            net_sysctls: if drop_sysctls { NetSysctls::Drop } else { NetSysctls::Refuse },
            own_cgroup_view,
            ..Policy::default()
        };
        p.idmap.allow_host_root = allow_host_root;
        p.idmap.require_process_user_mapped = user_mapped;
        p
    }
}

// ---------------------------------------------------------------- helpers

fn text(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

fn mounts(spec: &Value) -> Vec<Value> {
    spec["mounts"].as_array().cloned().unwrap_or_default()
}

fn is_sys(m: &Value) -> bool {
    m["destination"].as_str().map(clean_path).as_deref() == Some("/sys")
}

fn options(m: &Value) -> Vec<String> {
    m["options"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|o| o.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The restrictions a mount has: read-only (by `ro` or `rro`), nosuid,
/// nodev, noexec.
fn restrictions(m: &Value) -> Vec<&'static str> {
    let o = options(m);
    let has = |x: &str| o.iter().any(|y| y == x);
    let mut r = Vec::new();
    if has("ro") || has("rro") {
        r.push("read-only");
    }
    for f in ["nosuid", "nodev", "noexec"] {
        if has(f) {
            r.push(f);
        }
    }
    r
}

/// The declared targets of the rules: the only fields a plan may change.
fn declared_target(field: &str) -> bool {
    field == "mounts"
        || field.starts_with("mounts[")
        || field == "process.capabilities"
        || field == "linux.sysctl"
        || field.starts_with("linux.namespaces[")
        || CAP_SETS
            .iter()
            .any(|s| field == format!("process.capabilities.{s}"))
}

/// The spec with every declared target removed (`mounts`, the capability
/// sets and the sysctls that the plan says it changed).
fn outside_targets(spec: &Value, plan: &Planned) -> Value {
    let mut v = spec.clone();
    if let Some(m) = v.as_object_mut() {
        m.shift_remove("mounts");
    }
    for c in &plan.findings.changes {
        // A process without capability sets gets them written.
        if c.field == "process.capabilities" {
            if let Some(p) = v.get_mut("process").and_then(Value::as_object_mut) {
                p.shift_remove("capabilities");
            }
        }
        if let Some(set) = c.field.strip_prefix("process.capabilities.") {
            if let Some(caps) = v
                .get_mut("process")
                .and_then(|p| p.get_mut("capabilities"))
                .and_then(Value::as_object_mut)
            {
                caps.shift_remove(set);
            }
        }
        if c.field == "linux.sysctl" {
            if let Some(l) = v.get_mut("linux").and_then(Value::as_object_mut) {
                l.shift_remove("sysctl");
            }
        }
        // never_widens checks what the own-namespaces rule removes.
        if c.field.starts_with("linux.namespaces[") {
            if let Some(l) = v.get_mut("linux").and_then(Value::as_object_mut) {
                l.shift_remove("namespaces");
            }
        }
    }
    v
}

fn without(m: &Value, keys: &[&str]) -> Value {
    let mut m = m.clone();
    if let Some(o) = m.as_object_mut() {
        for k in keys {
            o.shift_remove(*k);
        }
    }
    m
}

/// The `linux.namespaces` indexes the own-namespaces rule removed.
fn removed_own_namespaces(plan: &Planned) -> Vec<usize> {
    plan.findings
        .changes
        .iter()
        .filter(|c| c.rule == "own-namespaces")
        .filter_map(|c| {
            c.field
                .strip_prefix("linux.namespaces[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// Output mounts minus the ones the cgroup-view rule added.
fn mounts_not_added(out: &Value, plan: &Planned) -> Vec<Value> {
    let added: Vec<usize> = plan
        .findings
        .changes
        .iter()
        .filter(|c| c.rule == "cgroup-view")
        .filter_map(|c| {
            c.field
                .strip_prefix("mounts[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect();
    mounts(out)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !added.contains(i))
        .map(|(_, m)| m)
        .collect()
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Converting a converted spec changes nothing, and is accepted.
    #[test]
    fn idempotent(spec in spec(), facts in facts(), policy in policy()) {
        if let Ok(plan) = evaluate(spec, &facts, &policy) {
            let once = text(&plan.spec);
            let again = evaluate(plan.spec, &facts, &policy);
            let again = match again {
                Ok(p) => p,
                Err(r) => return Err(TestCaseError::fail(format!("converted spec refused: {r}\n{once}"))),
            };
            prop_assert!(!again.changed(), "second pass changed: {:?}", again.findings.changes);
            prop_assert_eq!(text(&again.spec), once);
        }
    }

    /// Capability sets only shrink; no mount loses ro, nosuid, nodev or
    /// noexec; namespaces and mappings are unchanged.
    #[test]
    fn never_widens(spec in spec(), facts in facts(), policy in policy()) {
        let input = spec.clone();
        let Ok(plan) = evaluate(spec, &facts, &policy) else { return Ok(()) };
        let out = &plan.spec;
        for set in CAP_SETS {
            let before = &input["process"]["capabilities"][set];
            let after = &out["process"]["capabilities"][set];
            if let Some(after) = after.as_array() {
                let before = before.as_array().cloned().unwrap_or_default();
                for c in after {
                    prop_assert!(before.contains(c), "{} gained {}", set, c);
                }
            } else {
                prop_assert_eq!(before, after);
            }
        }
        // The same namespaces: only an entry joining the runtime's own
        // namespace of its kind may go, since staying in it is the same.
        let removed = removed_own_namespaces(&plan);
        for &i in &removed {
            let entry = &input["linux"]["namespaces"][i];
            let path = entry["path"].as_str().unwrap_or_default();
            let id = facts.namespaces.get(path).and_then(|f| f.as_ref().ok()).map(|f| f.id);
            let kind = serde_json::from_value(entry["type"].clone()).ok();
            prop_assert!(entry["type"] != "user", "removed the user namespace {}", entry);
            prop_assert!(id.is_some() && kind.and_then(|k| facts.runtime_namespace(k)) == id, "removed {} which is not the runtime's own", entry);
        }
        if removed.is_empty() {
            prop_assert_eq!(&input["linux"]["namespaces"], &out["linux"]["namespaces"]);
        } else {
            let kept: Vec<Value> = input["linux"]["namespaces"].as_array().unwrap().iter().enumerate()
                .filter(|(i, _)| !removed.contains(i)).map(|(_, n)| n.clone()).collect();
            prop_assert_eq!(&Value::Array(kept), &out["linux"]["namespaces"]);
        }
        prop_assert_eq!(&input["linux"]["uidMappings"], &out["linux"]["uidMappings"]);
        prop_assert_eq!(&input["linux"]["gidMappings"], &out["linux"]["gidMappings"]);
        // /sys mounts keep their relative order; pair them up.
        let sys_in: Vec<Value> = mounts(&input).into_iter().filter(is_sys).collect();
        let sys_out: Vec<Value> = mounts(out).into_iter().filter(is_sys).collect();
        prop_assert_eq!(sys_in.len(), sys_out.len());
        for (a, b) in sys_in.iter().zip(&sys_out) {
            for r in restrictions(a) {
                prop_assert!(restrictions(b).contains(&r), "{} lost {}: {} -> {}", a["destination"], r, a, b);
            }
            // An idmapping is dropped only from a bind of the host's /sys
            // made recursively read-only (sysfs cannot be idmapped).
            for k in ["uidMappings", "gidMappings"] {
                prop_assert!(a[k] == b[k] || (b.get(k).is_none() && options(b).contains(&"rro".to_owned())), "{} {}: {} -> {}", a["destination"], k, a, b);
            }
        }
    }

    /// Everything outside the declared targets is equal, key order
    /// included; every other mount is equal and in its order; a /sys mount
    /// keeps every member but type, source and options.
    #[test]
    fn lossless(spec in spec(), facts in facts(), policy in policy()) {
        let input = spec.clone();
        let Ok(plan) = evaluate(spec, &facts, &policy) else { return Ok(()) };
        for c in &plan.findings.changes {
            prop_assert!(declared_target(&c.field), "change outside the declared targets: {}", c.field);
        }
        prop_assert_eq!(text(&outside_targets(&input, &plan)), text(&outside_targets(&plan.spec, &plan)));
        let kept = mounts_not_added(&plan.spec, &plan);
        // A read-only bind of the host's /sys elsewhere changes its type and
        // options only (the sys-binds rule); every other mount is equal.
        // (and its idmapping, on a bind of the /sys tree); a mount under
        // /sys its options (the under-sys rule).
        let mount_rule = |c: &&userns_hostnet_engine::Change| c.rule == "sys-binds" || c.rule == "under-sys";
        let rebound: Vec<&Value> = plan.findings.changes.iter()
            .filter(mount_rule).map(|c| &c.before).collect();
        let hardened: Vec<&Value> = plan.findings.changes.iter()
            .filter(mount_rule).map(|c| &c.after).collect();
        let shown = |m: &Value, changed: &[&Value]| {
            if changed.contains(&m) { text(&without(m, &["type", "options", "uidMappings", "gidMappings"])) } else { text(m) }
        };
        let others_in: Vec<String> = mounts(&input).iter().filter(|m| !is_sys(m)).map(|m| shown(m, &rebound)).collect();
        let others_out: Vec<String> = kept.iter().filter(|m| !is_sys(m)).map(|m| shown(m, &hardened)).collect();
        prop_assert_eq!(others_in, others_out);
        let sys_in: Vec<Value> = mounts(&input).into_iter().filter(is_sys).collect();
        let sys_out: Vec<Value> = kept.into_iter().filter(is_sys).collect();
        for (a, b) in sys_in.iter().zip(&sys_out) {
            let rest = ["type", "source", "options"];
            prop_assert_eq!(text(&without(a, &rest)), text(&without(b, &rest)));
        }
    }

    /// A spec whose decision is "nothing to do" comes out equal with no
    /// change, so the wrapper writes nothing.
    #[test]
    fn untouched(spec in spec(), facts in facts(), policy in policy()) {
        let before = text(&spec);
        let Ok(plan) = evaluate(spec, &facts, &policy) else { return Ok(()) };
        if !plan.decision.converts() {
            prop_assert!(!plan.changed(), "{}: {:?}", plan.decision.kind(), plan.findings.changes);
        }
        if !plan.changed() {
            prop_assert_eq!(text(&plan.spec), before);
        }
    }

    /// A spec with its parts replaced by arbitrary JSON values at random
    /// places gives a plan or a refusal on one line, never a panic.
    #[test]
    fn total_on_mangled_specs(
        spec in spec(),
        facts in facts(),
        policy in policy(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any_json()), 1..4),
    ) {
        let mut spec = spec;
        for (at, v) in edits {
            mangle(&mut spec, at, v);
        }
        check_total(spec, &facts, &policy)?;
    }

    /// Any JSON value at all.
    #[test]
    fn total_on_any_value(v in any_json(), facts in facts(), policy in policy()) {
        check_total(v, &facts, &policy)?;
    }

    /// Any bytes: the strict reader refuses them on one line, or reads the
    /// object serde_json reads, and the engine takes it from there.
    #[test]
    fn total_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256), facts in facts()) {
        match userns_hostnet_engine::strict::read_spec(&bytes) {
            Ok(v) => {
                prop_assert_eq!(&v, &serde_json::from_slice::<Value>(&bytes).unwrap());
                check_total(v, &facts, &Policy::default())?;
            }
            Err(r) => prop_assert!(!r.to_string().contains('\n'), "{}", r),
        }
    }
}

/// Replace one node of the tree (picked by `at` among all nodes below the
/// root, in preorder) with `v`: the root stays an object, anything below it
/// may become anything.
fn mangle(spec: &mut Value, at: prop::sample::Index, v: Value) {
    fn count(v: &Value) -> usize {
        1 + match v {
            Value::Array(a) => a.iter().map(count).sum(),
            Value::Object(o) => o.values().map(count).sum(),
            _ => 0,
        }
    }
    fn replace(node: &mut Value, n: &mut usize, v: &mut Option<Value>) -> bool {
        if *n == 0 {
            *node = v.take().unwrap_or_default();
            return true;
        }
        *n -= 1;
        match node {
            Value::Array(a) => a.iter_mut().any(|c| replace(c, n, v)),
            Value::Object(o) => o.values_mut().any(|c| replace(c, n, v)),
            _ => false,
        }
    }
    let below = count(spec) - 1;
    if below == 0 {
        return;
    }
    let mut n = 1 + at.index(below);
    replace(spec, &mut n, &mut Some(v));
}

/// `spec` as bytes: as serde_json writes it pretty (0) or compact (1), or
/// indented with tabs, Go's escapes and an unknown member of its own
/// spelling (2), as no serde_json writer would.
fn layout(spec: &Value, how: u8) -> Vec<u8> {
    match how {
        0 => serde_json::to_vec_pretty(spec).unwrap(),
        1 => serde_json::to_vec(spec).unwrap(),
        _ => {
            let mut out = Vec::new();
            let f = serde_json::ser::PrettyFormatter::with_indent(b"\t");
            let mut ser = serde_json::Serializer::with_formatter(&mut out, f);
            serde::Serialize::serialize(spec, &mut ser).unwrap();
            let text = String::from_utf8(out).unwrap().replace('<', "\\u003c");
            let at = text.rfind('}').unwrap();
            let mut text = text[..at].trim_end().to_string();
            text.push_str(",\n\t\"x-extra\" :  [ 1.50E3 ,\"\\u0026\"]\n}\n");
            text.into_bytes()
        }
    }
}

/// What the whole-document path writes for `bytes`, or its refusal.
fn whole_path(
    bytes: &[u8],
    facts: &HostFacts,
    policy: &Policy,
) -> Result<(Planned, Vec<u8>), String> {
    let spec = read_spec(bytes).map_err(|r| r.to_string())?;
    let plan = evaluate(spec, facts, policy).map_err(|r| r.to_string())?;
    let out = whole_writer::serialize_like(&plan.spec, bytes);
    Ok((plan, out))
}

/// What the wrapper's path writes: the view read, edits into the bytes.
fn view_path(
    bytes: &[u8],
    facts: &HostFacts,
    policy: &Policy,
) -> Result<(Planned, Vec<u8>), String> {
    let spec = Spec::read(bytes.to_vec()).map_err(|r| r.to_string())?;
    let plan = userns_hostnet_engine::evaluate(spec, facts, policy).map_err(|r| r.to_string())?;
    let out = write::write_checked(&plan.spec).map_err(|r| r.to_string())?;
    Ok((Planned::of(plan), out))
}

fn reread(bytes: &[u8]) -> Result<String, TestCaseError> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(bytes))))?;
    Ok(text(&v))
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The wrapper's path and the whole-document path agree: the same
    /// refusal, or the same changes and documents that read back equal
    /// (key order and numbers' text too), byte for byte when serde_json
    /// laid the input out. An unchanged view writes the input back.
    #[test]
    fn the_view_path_writes_what_the_whole_path_writes(
        spec in spec(), facts in facts(), policy in policy(), how in 0u8..3,
    ) {
        let bytes = layout(&spec, how);
        if let Ok(spec) = Spec::read(bytes.clone()) {
            let back = write::write(&spec);
            prop_assert_eq!(String::from_utf8_lossy(&back), String::from_utf8_lossy(&bytes));
        }
        match (whole_path(&bytes, &facts, &policy), view_path(&bytes, &facts, &policy)) {
            (Ok((old, old_out)), Ok((new, new_out))) => {
                prop_assert_eq!(&old.findings.changes, &new.findings.changes);
                prop_assert_eq!(&old.findings.warnings, &new.findings.warnings);
                prop_assert_eq!(&old.decision, &new.decision);
                if !new.changed() {
                    return Ok(());
                }
                prop_assert_eq!(reread(&old_out)?, reread(&new_out)?);
                if how < 2 {
                    prop_assert_eq!(String::from_utf8_lossy(&old_out), String::from_utf8_lossy(&new_out));
                } else {
                    let out = String::from_utf8_lossy(&new_out);
                    prop_assert!(out.contains("\"x-extra\" :  [ 1.50E3 ,\"\\u0026\"]"), "{}", out);
                }
            }
            (old, new) => prop_assert_eq!(old.err(), new.err()),
        }
    }

    /// Any document the strict reader takes, mangled anywhere below its
    /// top: the view path reads, refuses and writes as the whole path.
    #[test]
    fn the_view_path_agrees_on_mangled_specs(
        mut spec in spec(), at in any::<prop::sample::Index>(), v in any_json(),
        facts in facts(), policy in policy(), how in 0u8..2,
    ) {
        mangle(&mut spec, at, v);
        let bytes = layout(&spec, how);
        match (whole_path(&bytes, &facts, &policy), view_path(&bytes, &facts, &policy)) {
            (Ok((old, old_out)), Ok((new, new_out))) => {
                prop_assert_eq!(&old.findings.changes, &new.findings.changes);
                if new.changed() {
                    prop_assert_eq!(String::from_utf8_lossy(&old_out), String::from_utf8_lossy(&new_out));
                }
            }
            (old, new) => prop_assert_eq!(old.err(), new.err()),
        }
    }
}

fn check_total(v: Value, facts: &HostFacts, policy: &Policy) -> Result<(), TestCaseError> {
    match evaluate(v, facts, policy) {
        Ok(plan) => {
            // What the wrapper would write parses back to the plan's spec.
            let bytes = whole_writer::serialize_like(&plan.spec, b"{}\n");
            let back: Value = serde_json::from_slice(&bytes).unwrap();
            prop_assert_eq!(back, plan.spec);
        }
        Err(r) => {
            let line = r.to_string();
            prop_assert!(!line.contains('\n'), "refusal spans lines: {:?}", line);
            prop_assert!(!r.message.is_empty());
        }
    }
    Ok(())
}

/// The generators reach every outcome: converted, untouched and refused
/// specs each make up a fair share, so the properties above are not
/// vacuous.
#[test]
fn generators_reach_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut changed, mut unchanged, mut refused) = (0, 0, 0);
    let strategy = (spec(), facts(), policy());
    for _ in 0..512 {
        let (s, f, p) = strategy.new_tree(&mut runner).unwrap().current();
        match evaluate(s, &f, &p) {
            Ok(plan) if plan.changed() => changed += 1,
            Ok(_) => unchanged += 1,
            Err(_) => refused += 1,
        }
    }
    eprintln!("512 generated specs: {changed} converted, {unchanged} untouched, {refused} refused");
    for (what, n) in [
        ("converted", changed),
        ("untouched", unchanged),
        ("refused", refused),
    ] {
        assert!(n >= 25, "only {n} of 512 generated specs {what}");
    }
}
