//! ID mappings, for every container with a user namespace (converted or
//! not): a bad mapping either fails late with a terse kernel error or,
//! worse, maps more of the host than intended. Structural rules always
//! apply; host root, allowed host ranges and the process user follow the
//! policy. Only refuses; never edits.

use crate::facts::{Extent, IdMaps};
use crate::policy::{AllowedRanges, IdRange};
use crate::report::{Names, Refusal};
use crate::{fields, Context, Findings, Rule, Spec};
use oci_spec::runtime::LinuxNamespaceType;
use serde_json::Value;

pub const NAME: &str = "idmap";
/// The kernel's limit on lines in uid_map and gid_map.
pub const MAX_EXTENTS: usize = 340;
const ID_SPACE: u64 = 1 << 32;

pub struct IdMappings;

#[derive(Clone, Copy)]
enum Kind {
    Uid,
    Gid,
}

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Uid => "uidMappings",
            Kind::Gid => "gidMappings",
        }
    }
    fn proc_file(self) -> &'static str {
        match self {
            Kind::Uid => "uid_map",
            Kind::Gid => "gid_map",
        }
    }
    fn subid_file(self) -> &'static str {
        match self {
            Kind::Uid => "/etc/subuid",
            Kind::Gid => "/etc/subgid",
        }
    }
    fn of(self, maps: &IdMaps) -> &[Extent] {
        match self {
            Kind::Uid => &maps.uid,
            Kind::Gid => &maps.gid,
        }
    }
}

impl Rule for IdMappings {
    fn name(&self) -> &'static str {
        NAME
    }

    fn scope(&self) -> crate::Scope {
        crate::Scope::UserNamespace
    }

    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, _: &mut Findings) -> Result<(), Refusal> {
        let joined = cx
            .namespaces
            .iter()
            .find(|n| n.kind == LinuxNamespaceType::User)
            .and_then(|n| n.path.as_deref());
        let linux = spec.view().get("linux");
        let mut effective = IdMaps::default();
        for kind in [Kind::Uid, Kind::Gid] {
            let field = format!("linux.{}", kind.key());
            let given = extents(&field, linux.and_then(|l| l.get(kind.key())))?;
            check_structure(&field, &given)?;
            let list = match joined {
                None if given.is_empty() => {
                    return Err(Refusal::new(
                        NAME,
                        field,
                        format!("a new user namespace needs {}; none given", kind.key()),
                    ))
                }
                None => given,
                Some(path) => match_joined(&field, kind, path, given, cx)?,
            };
            check_policy(&field, kind, &list, cx)?;
            match kind {
                Kind::Uid => effective.uid = list,
                Kind::Gid => effective.gid = list,
            }
        }
        if cx.policy.idmap.require_process_user_mapped {
            check_process_user(spec.view(), &effective)?;
        }
        // An idmapped mount maps file owners as its own mappings say: the
        // kubelet and containerd give it the container's, and anything else
        // must pass the same policy (host root, allowed ranges) on its own.
        for (i, m) in spec.mounts()?.iter().enumerate() {
            for kind in [Kind::Uid, Kind::Gid] {
                // Most mounts have no mappings: name the field only for those that do.
                let Some(list) = m.get(kind.key()).filter(|v| !v.is_null()) else {
                    continue;
                };
                let field = format!("mounts[{i}].{}", kind.key());
                let list = extents(&field, Some(&list))?;
                check_structure(&field, &list)?;
                let own = match kind {
                    Kind::Uid => &effective.uid,
                    Kind::Gid => &effective.gid,
                };
                if !same_extents(&list, own) {
                    check_policy(&field, kind, &list, cx)?;
                }
            }
        }
        Ok(())
    }
}

/// Parse a mapping list; absent or null is empty.
fn extents(field: &str, v: Option<&Value>) -> Result<Vec<Extent>, Refusal> {
    let list = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(other) => return Err(Refusal::malformed(field, "an array", other)),
    };
    list.iter()
        .enumerate()
        .map(|(i, e)| {
            let at = format!("{field}[{i}]");
            let obj = fields::object(&at, e)?;
            // Absent members are 0, as in Go's decoding of the spec.
            let id = |key: &str| match obj.get(key) {
                None => Ok(0),
                Some(v) => v.as_u64().filter(|n| *n < ID_SPACE).ok_or_else(|| {
                    Refusal::new(
                        NAME,
                        format!("{at}.{key}"),
                        format!("expected an integer from 0 to 2^32-1, found {v}"),
                    )
                }),
            };
            Ok(Extent {
                container: id("containerID")?,
                host: id("hostID")?,
                size: id("size")?,
            })
        })
        .collect()
}

fn span(start: u64, size: u64) -> String {
    if size <= 1 {
        start.to_string()
    } else {
        format!("{start}-{}", start + size - 1)
    }
}

fn overlap(a_start: u64, b_start: u64, size_a: u64, size_b: u64) -> bool {
    a_start < b_start + size_b && b_start < a_start + size_a
}

/// The rules the kernel enforces, checked early with precise words.
pub fn check_structure(field: &str, list: &[Extent]) -> Result<(), Refusal> {
    if list.len() > MAX_EXTENTS {
        return Err(Refusal::new(
            NAME,
            field,
            format!(
                "{} extents, more than the kernel's limit of {MAX_EXTENTS}",
                list.len()
            ),
        ));
    }
    for (i, e) in list.iter().enumerate() {
        let at = format!("{field}[{i}]");
        if e.size == 0 {
            return Err(Refusal::new(NAME, at, "size is 0"));
        }
        for (what, start) in [("containerID", e.container), ("hostID", e.host)] {
            if start + e.size > ID_SPACE {
                return Err(Refusal::new(
                    NAME,
                    at,
                    format!(
                        "{what} {start} + size {} = {} runs past 2^32",
                        e.size,
                        start + e.size
                    ),
                ));
            }
        }
        for (j, o) in list[..i].iter().enumerate() {
            for (what, a, b) in [
                ("container", e.container, o.container),
                ("host", e.host, o.host),
            ] {
                if overlap(a, b, e.size, o.size) {
                    return Err(Refusal::new(
                        NAME,
                        at,
                        format!(
                            "{what} {} overlaps {field}[{j}] ({what} {})",
                            span(a, e.size),
                            span(b, o.size)
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A user namespace joined by path already has its mappings: any given in
/// the spec must be the same, or the spec says something untrue. Returns
/// the mappings in force; a namespace whose maps cannot be read is refused.
fn match_joined(
    field: &str,
    kind: Kind,
    path: &str,
    given: Vec<Extent>,
    cx: &Context<'_>,
) -> Result<Vec<Extent>, Refusal> {
    // The maps in force are the namespace's own, whatever the spec says:
    // without them nothing (host root, the allowed ranges) can be checked.
    let actual = match cx.facts.joined_maps.get(path) {
        Some(Ok(maps)) => kind.of(maps).to_vec(),
        Some(Err(why)) => {
            return Err(Refusal::new(
                NAME,
                field,
                format!(
                    "the joined user namespace {path}: its {} cannot be read ({why}), so what it maps cannot be checked",
                    kind.proc_file()
                ),
            ))
        }
        None => {
            return Err(Refusal::new(
                NAME,
                field,
                format!(
                    "the joined user namespace {path}: its {} was not read, so what it maps cannot be checked",
                    kind.proc_file()
                ),
            ))
        }
    };
    if given.is_empty() {
        return Ok(actual);
    }
    let sorted = |l: &[Extent]| {
        let mut l = l.to_vec();
        l.sort_by_key(|e| e.container);
        l
    };
    if sorted(&given) != sorted(&actual) {
        let show = |l: &[Extent]| {
            l.iter()
                .map(|e| format!("{} {} {}", e.container, e.host, e.size))
                .collect::<Vec<_>>()
        };
        return Err(Refusal::new(
            NAME,
            field,
            format!(
                "differ from the {} of the joined user namespace {path}: given [{}], actual [{}]",
                kind.proc_file(),
                Names(&show(&given)),
                Names(&show(&actual))
            ),
        ));
    }
    Ok(actual)
}

/// The same extents, in any order.
fn same_extents(a: &[Extent], b: &[Extent]) -> bool {
    let sorted = |l: &[Extent]| {
        let mut l = l.to_vec();
        l.sort_by_key(|e| (e.container, e.host, e.size));
        l
    };
    a.len() == b.len() && sorted(a) == sorted(b)
}

fn check_policy(field: &str, kind: Kind, list: &[Extent], cx: &Context<'_>) -> Result<(), Refusal> {
    let policy = &cx.policy.idmap;
    if !policy.allow_host_root {
        if let Some(i) = list.iter().position(|e| e.host == 0) {
            return Err(Refusal::new(
                NAME,
                format!("{field}[{i}]"),
                format!(
                    "maps host root (host {}); set idmap.allow_host_root = true to allow it",
                    span(0, list[i].size)
                ),
            ));
        }
    }
    let (allowed, from) = match &policy.allowed_ranges {
        AllowedRanges::Any => return Ok(()),
        AllowedRanges::Explicit { uid, gid } => (
            match kind {
                Kind::Uid => uid.clone(),
                Kind::Gid => gid.clone(),
            },
            "idmap.allowed_ranges".to_string(),
        ),
        AllowedRanges::SubidUser(user) => match &cx.facts.subids {
            Some(Ok(s)) => (
                match kind {
                    Kind::Uid => s.uid.clone(),
                    Kind::Gid => s.gid.clone(),
                },
                format!("{} of {user}", kind.subid_file()),
            ),
            Some(Err(why)) => {
                return Err(Refusal::new(
                    NAME,
                    field,
                    format!("cannot check against the ranges of {user}: {why}"),
                ))
            }
            None => {
                return Err(Refusal::new(
                    NAME,
                    field,
                    format!("the ranges of {user} were not read"),
                ))
            }
        },
    };
    let allowed = coalesce(allowed);
    for (i, e) in list.iter().enumerate() {
        let want = IdRange {
            start: e.host,
            size: e.size,
        };
        if !allowed.iter().any(|r| r.contains(&want)) {
            let shown: Vec<String> = allowed.iter().map(|r| span(r.start, r.size)).collect();
            return Err(Refusal::new(
                NAME,
                format!("{field}[{i}]"),
                format!(
                    "host {} is outside the allowed ranges ({from}: {})",
                    span(e.host, e.size),
                    if shown.is_empty() {
                        "none".to_string()
                    } else {
                        Names(&shown).to_string()
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// Sort and merge touching ranges, so an extent spanning two adjacent
/// allowed ranges is allowed.
fn coalesce(mut ranges: Vec<IdRange>) -> Vec<IdRange> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<IdRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end() => {
                let end = last.end().max(r.end());
                last.size = end - last.start;
            }
            _ => out.push(r),
        }
    }
    out
}

fn check_process_user(spec: &Value, maps: &IdMaps) -> Result<(), Refusal> {
    let Some(user) = spec.get("process").and_then(|p| p.get("user")) else {
        return Ok(());
    };
    if user.is_null() {
        return Ok(());
    }
    let user = fields::object("process.user", user)?;
    let id = |field: String, v: &Value| -> Result<u64, Refusal> {
        v.as_u64()
            .ok_or_else(|| Refusal::malformed(field, "a non-negative integer", v))
    };
    let mut wanted: Vec<(String, u64, Kind)> = Vec::new();
    for (key, kind) in [("uid", Kind::Uid), ("gid", Kind::Gid)] {
        if let Some(v) = user.get(key).filter(|v| !v.is_null()) {
            let field = format!("process.user.{key}");
            wanted.push((field.clone(), id(field, v)?, kind));
        }
    }
    match user.get("additionalGids") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, v) in list.iter().enumerate() {
                let field = format!("process.user.additionalGids[{i}]");
                wanted.push((field.clone(), id(field, v)?, Kind::Gid));
            }
        }
        Some(other) => {
            return Err(Refusal::malformed(
                "process.user.additionalGids",
                "an array",
                other,
            ))
        }
    }
    for (field, id, kind) in wanted {
        let list = kind.of(maps);
        if !list
            .iter()
            .any(|e| id >= e.container && id < e.container + e.size)
        {
            let shown: Vec<String> = list.iter().map(|e| span(e.container, e.size)).collect();
            return Err(Refusal::new(
                NAME,
                field,
                format!(
                    "{id} is not mapped by linux.{} (container {})",
                    kind.key(),
                    if shown.is_empty() {
                        "none".to_string()
                    } else {
                        Names(&shown).to_string()
                    }
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::facts::{Extent, HostFacts, IdMaps, SubIds};
    use crate::policy::{AllowedRanges, IdRange, Policy};
    use crate::{evaluate_value, Refusal};
    use serde_json::{json, Value};

    fn spec(uid: Value, gid: Value) -> Value {
        json!({
            "process": {"user": {"uid": 0, "gid": 0}},
            "linux": {
                "namespaces": [{"type": "user"}, {"type": "mount"}, {"type": "network"}],
                "uidMappings": uid,
                "gidMappings": gid
            },
            "mounts": []
        })
    }

    fn pod() -> Value {
        json!([{"containerID": 0, "hostID": 100000, "size": 65536}])
    }

    fn check(spec: Value) -> Result<(), Refusal> {
        check_with(spec, &HostFacts::default(), &Policy::default())
    }

    fn check_with(spec: Value, facts: &HostFacts, policy: &Policy) -> Result<(), Refusal> {
        evaluate_value(&spec, facts, policy).map(|_| ())
    }

    fn refusal(spec: Value) -> String {
        check(spec).unwrap_err().to_string()
    }

    #[test]
    fn a_sound_pod_mapping_passes_and_changes_nothing() {
        let s = spec(pod(), pod());
        let plan = evaluate_value(&s, &HostFacts::default(), &Policy::default()).unwrap();
        assert!(!plan.changed());
        assert_eq!(plan.spec.to_value().unwrap(), s);
    }

    #[test]
    fn a_new_user_namespace_needs_both_mappings() {
        assert_eq!(
            refusal(spec(Value::Null, pod())),
            "idmap: linux.uidMappings: a new user namespace needs uidMappings; none given"
        );
        assert_eq!(
            refusal(spec(pod(), json!([]))),
            "idmap: linux.gidMappings: a new user namespace needs gidMappings; none given"
        );
    }

    #[test]
    fn size_zero_and_overflow() {
        assert_eq!(
            refusal(spec(
                json!([{"containerID": 0, "hostID": 100000, "size": 0}]),
                pod()
            )),
            "idmap: linux.uidMappings[0]: size is 0"
        );
        assert_eq!(
            refusal(spec(
                pod(),
                json!([{"containerID": 0, "hostID": 4294967295u64, "size": 2}])
            )),
            "idmap: linux.gidMappings[0]: hostID 4294967295 + size 2 = 4294967297 runs past 2^32"
        );
        assert_eq!(
            refusal(spec(json!([{"containerID": 4294967000u64, "hostID": 100000, "size": 65536}]), pod())),
            "idmap: linux.uidMappings[0]: containerID 4294967000 + size 65536 = 4295032536 runs past 2^32"
        );
    }

    #[test]
    fn overlaps_are_named_with_both_ranges() {
        let uid = json!([
            {"containerID": 0, "hostID": 100000, "size": 65536},
            {"containerID": 1000, "hostID": 300000, "size": 10}
        ]);
        assert_eq!(
            refusal(spec(uid, pod())),
            "idmap: linux.uidMappings[1]: container 1000-1009 overlaps linux.uidMappings[0] (container 0-65535)"
        );
        let gid = json!([
            {"containerID": 0, "hostID": 100000, "size": 10},
            {"containerID": 10, "hostID": 100005, "size": 10}
        ]);
        assert_eq!(
            refusal(spec(pod(), gid)),
            "idmap: linux.gidMappings[1]: host 100005-100014 overlaps linux.gidMappings[0] (host 100000-100009)"
        );
    }

    #[test]
    fn at_most_340_extents() {
        let many: Vec<Value> = (0..341u64)
            .map(|i| json!({"containerID": i, "hostID": 100000 + i, "size": 1}))
            .collect();
        assert_eq!(
            refusal(spec(Value::Array(many.clone()), pod())),
            "idmap: linux.uidMappings: 341 extents, more than the kernel's limit of 340"
        );
        assert!(check(spec(Value::Array(many[..340].to_vec()), pod())).is_ok());
    }

    #[test]
    fn host_root_is_refused_unless_allowed() {
        let root = json!([{"containerID": 0, "hostID": 0, "size": 65536}]);
        assert_eq!(
            refusal(spec(root.clone(), pod())),
            "idmap: linux.uidMappings[0]: maps host root (host 0-65535); set idmap.allow_host_root = true to allow it"
        );
        let mut policy = Policy::default();
        policy.idmap.allow_host_root = true;
        assert!(check_with(spec(root, pod()), &HostFacts::default(), &policy).is_ok());
    }

    #[test]
    fn process_user_must_be_mapped() {
        let mut s = spec(pod(), pod());
        s["process"]["user"] = json!({"uid": 70000, "gid": 0});
        assert_eq!(
            refusal(s.clone()),
            "idmap: process.user.uid: 70000 is not mapped by linux.uidMappings (container 0-65535)"
        );
        s["process"]["user"] = json!({"uid": 0, "gid": 0, "additionalGids": [1, 65536]});
        assert_eq!(
            refusal(s.clone()),
            "idmap: process.user.additionalGids[1]: 65536 is not mapped by linux.gidMappings (container 0-65535)"
        );
        let mut policy = Policy::default();
        policy.idmap.require_process_user_mapped = false;
        assert!(check_with(s, &HostFacts::default(), &policy).is_ok());
    }

    #[test]
    fn allowed_ranges_explicit_and_subid() {
        let s = spec(
            json!([{"containerID": 0, "hostID": 200000, "size": 65536}]),
            pod(),
        );
        let mut policy = Policy::default();
        policy.idmap.allowed_ranges = AllowedRanges::Explicit {
            uid: vec![IdRange {
                start: 100000,
                size: 65536,
            }],
            gid: vec![IdRange {
                start: 100000,
                size: 65536,
            }],
        };
        assert_eq!(
            check_with(s.clone(), &HostFacts::default(), &policy).unwrap_err().to_string(),
            "idmap: linux.uidMappings[0]: host 200000-265535 is outside the allowed ranges (idmap.allowed_ranges: 100000-165535)"
        );
        policy.idmap.allowed_ranges = AllowedRanges::SubidUser("kubelet".into());
        let facts = HostFacts {
            subids: Some(Ok(SubIds {
                user: "kubelet".into(),
                // Two adjacent entries together cover the pod's range.
                uid: vec![
                    IdRange {
                        start: 200000,
                        size: 30000,
                    },
                    IdRange {
                        start: 230000,
                        size: 35536,
                    },
                ],
                gid: vec![IdRange {
                    start: 100000,
                    size: 65536,
                }],
            })),
            ..HostFacts::default()
        };
        assert!(check_with(s.clone(), &facts, &policy).is_ok());
        let unreadable = HostFacts {
            subids: Some(Err("/etc/subuid: no entry for kubelet".into())),
            ..HostFacts::default()
        };
        assert_eq!(
            check_with(s, &unreadable, &policy).unwrap_err().to_string(),
            "idmap: linux.uidMappings: cannot check against the ranges of kubelet: /etc/subuid: no entry for kubelet"
        );
    }

    #[test]
    fn joined_user_namespace_mappings_must_match() {
        let mut s = spec(pod(), pod());
        s["linux"]["namespaces"][0]["path"] = json!("/proc/42/ns/user");
        let actual = |host| IdMaps {
            uid: vec![Extent {
                container: 0,
                host,
                size: 65536,
            }],
            gid: vec![Extent {
                container: 0,
                host: 100000,
                size: 65536,
            }],
        };
        let mut facts = HostFacts::default();
        facts
            .joined_maps
            .insert("/proc/42/ns/user".into(), Ok(actual(100000)));
        assert!(check_with(s.clone(), &facts, &Policy::default()).is_ok());
        facts
            .joined_maps
            .insert("/proc/42/ns/user".into(), Ok(actual(200000)));
        assert_eq!(
            check_with(s.clone(), &facts, &Policy::default()).unwrap_err().to_string(),
            "idmap: linux.uidMappings: differ from the uid_map of the joined user namespace /proc/42/ns/user: given [0 100000 65536], actual [0 200000 65536]"
        );
        // Without mappings in the spec, the namespace's own are checked.
        s["linux"]["uidMappings"] = Value::Null;
        s["linux"]["gidMappings"] = Value::Null;
        facts.joined_maps.insert(
            "/proc/42/ns/user".into(),
            Ok(IdMaps {
                uid: vec![Extent {
                    container: 0,
                    host: 0,
                    size: 1,
                }],
                gid: vec![],
            }),
        );
        assert!(check_with(s.clone(), &facts, &Policy::default())
            .unwrap_err()
            .to_string()
            .contains("maps host root"));
        // Maps that cannot be read (a dead process, a namespace no process
        // is in), or were not read, cannot be checked: refused, given or not.
        facts.joined_maps.insert(
            "/proc/42/ns/user".into(),
            Err("No such file or directory".into()),
        );
        assert_eq!(
            check_with(s.clone(), &facts, &Policy::default()).unwrap_err().to_string(),
            "idmap: linux.uidMappings: the joined user namespace /proc/42/ns/user: its uid_map cannot be read (No such file or directory), so what it maps cannot be checked"
        );
        s["linux"]["uidMappings"] = json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
        assert!(check_with(s.clone(), &facts, &Policy::default()).is_err());
        assert_eq!(
            check_with(s, &HostFacts::default(), &Policy::default()).unwrap_err().to_string(),
            "idmap: linux.uidMappings: the joined user namespace /proc/42/ns/user: its uid_map was not read, so what it maps cannot be checked"
        );
    }

    #[test]
    fn idmapped_mounts_get_the_structural_rules() {
        let mut s = spec(pod(), pod());
        s["mounts"] = json!([{"destination": "/data", "type": "bind", "source": "/srv",
            "options": ["rbind"],
            "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 10},
                            {"containerID": 5, "hostID": 200000, "size": 10}]}]);
        assert_eq!(
            refusal(s),
            "idmap: mounts[0].uidMappings[1]: container 5-14 overlaps mounts[0].uidMappings[0] (container 0-9)"
        );
    }

    #[test]
    fn idmapped_mounts_must_be_the_containers_own_or_pass_the_policy() {
        let own = json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
        let with_mount = |uid: Value| {
            let mut s = spec(pod(), pod());
            s["mounts"] = json!([{"destination": "/data", "type": "bind", "source": "/srv",
                "options": ["rbind", "idmap"], "uidMappings": uid, "gidMappings": own.clone()}]);
            s
        };
        // The kubelet's and containerd's shape: the container's own mappings.
        check(with_mount(own.clone())).unwrap();
        // Another range that the policy allows.
        check(with_mount(
            json!([{"containerID": 0, "hostID": 300000, "size": 10}]),
        ))
        .unwrap();
        // Host root through a mount is refused like host root in the container.
        assert_eq!(
            refusal(with_mount(json!([{"containerID": 0, "hostID": 0, "size": 1}]))),
            "idmap: mounts[0].uidMappings[0]: maps host root (host 0); set idmap.allow_host_root = true to allow it"
        );
        // Outside explicitly allowed ranges.
        let mut policy = Policy::default();
        policy.idmap.allowed_ranges = AllowedRanges::Explicit {
            uid: vec![IdRange {
                start: 100000,
                size: 65536,
            }],
            gid: vec![IdRange {
                start: 100000,
                size: 65536,
            }],
        };
        check_with(with_mount(own.clone()), &HostFacts::default(), &policy).unwrap();
        let r = check_with(
            with_mount(json!([{"containerID": 0, "hostID": 300000, "size": 10}])),
            &HostFacts::default(),
            &policy,
        )
        .unwrap_err();
        assert_eq!(r.field, "mounts[0].uidMappings[0]");
        assert!(r.message.contains("outside the allowed ranges"), "{r}");
    }

    #[test]
    fn wrong_types_are_named() {
        for (uid, want) in [
            (json!([{"containerID": "0", "hostID": 1, "size": 1}]), "idmap: linux.uidMappings[0].containerID: expected an integer from 0 to 2^32-1, found \"0\""),
            (json!([{"containerID": 0, "hostID": -1, "size": 1}]), "idmap: linux.uidMappings[0].hostID: expected an integer from 0 to 2^32-1, found -1"),
            (json!([{"containerID": 0, "hostID": 1, "size": 0.5}]), "idmap: linux.uidMappings[0].size: expected an integer from 0 to 2^32-1, found 0.5"),
            (json!([{"containerID": 0, "hostID": 4294967296u64, "size": 1}]), "idmap: linux.uidMappings[0].hostID: expected an integer from 0 to 2^32-1, found 4294967296"),
            (json!([7]), "spec: linux.uidMappings[0]: expected an object, found a number"),
            (
                json!({"containerID": 0}),
                "spec: linux.uidMappings: expected an array, found an object",
            ),
        ] {
            let got = refusal(spec(uid, pod()));
            assert_eq!(got, want);
        }
        let huge: Value = serde_json::from_str(
            r#"[{"containerID": 18446744073709551616, "hostID": 1, "size": 1}]"#,
        )
        .unwrap();
        assert_eq!(
            refusal(spec(huge, pod())),
            "idmap: linux.uidMappings[0].containerID: expected an integer from 0 to 2^32-1, found 18446744073709551616"
        );
    }

    #[test]
    fn without_user_namespace_mappings_are_not_checked() {
        let mut s = spec(
            json!([{"containerID": 0, "hostID": 0, "size": 0}]),
            Value::Null,
        );
        s["linux"]["namespaces"] = json!([{"type": "mount"}]);
        assert!(check(s).is_ok());
    }
}
