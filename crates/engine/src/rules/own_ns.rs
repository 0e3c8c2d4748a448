//! Joined namespaces that are the runtime's own. A Kubernetes app container
//! joins its sandbox by path; for a host-network pod its `network` and
//! `uts` paths (`/proc/<sandbox>/ns/net`, `.../uts`) name the host's own
//! namespaces, the ones the runtime already runs in. runc before 1.3 enters
//! the container's user namespace first and from there may not join a
//! namespace owned by the initial user namespace (`setns`: EPERM), so the
//! container never starts. Staying in a namespace and joining it are the
//! same namespace, so such an entry is removed: nothing widens, and the
//! decision then reads as host network.
//!
//! It runs before the other rules because it changes the decision they
//! see; only for containers that need the conversion, and never for the
//! `user` entry.

use crate::facts::{proc_name, HostFacts};
use crate::fields::Namespace;
use crate::report::Change;
use crate::Findings;
use oci_spec::runtime::LinuxNamespaceType;
use serde_json::Value;

pub const NAME: &str = "own-namespaces";

/// The indexes of `linux.namespaces` entries that join, by path, the
/// namespace of their kind the runtime itself runs in.
pub fn joined_own(namespaces: &[Namespace], facts: &HostFacts) -> Vec<usize> {
    namespaces
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind != LinuxNamespaceType::User)
        .filter_map(|(i, n)| {
            let path = n.path.as_ref()?;
            let joined = facts.namespaces.get(path)?.as_ref().ok()?.id;
            (facts.runtime_namespace(n.kind) == Some(joined)).then_some(i)
        })
        .collect()
}

/// Remove the entries at `indexes` (from [`joined_own`]) and report each.
/// Returns whether anything was removed.
pub fn remove(
    spec: &mut Value,
    namespaces: &[Namespace],
    indexes: &[usize],
    out: &mut Findings,
) -> bool {
    let Some(list) = spec
        .get_mut("linux")
        .and_then(|l| l.get_mut("namespaces"))
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    // From the end, so earlier indexes stay valid; reported in spec order.
    let mut removed = Vec::with_capacity(indexes.len());
    for &i in indexes.iter().rev() {
        if i < list.len() {
            removed.push((i, list.remove(i)));
        }
    }
    for (i, before) in removed.into_iter().rev() {
        let n = &namespaces[i];
        let kind = proc_name(n.kind);
        out.changes.push(Change {
            rule: NAME,
            field: format!("linux.namespaces[{i}]"),
            summary: format!(
                "removed the entry joining {}: it is the {kind} namespace the runtime already runs in, so the container stays in the same namespace; runc before 1.3 could not join it from inside the container's user namespace",
                n.path.as_deref().unwrap_or_default()
            ),
            before,
            after: Value::Null,
        });
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{NsFacts, NsId};
    use serde_json::json;
    use LinuxNamespaceType::*;

    const HOST_NET: NsId = NsId { dev: 4, ino: 1 };
    const HOST_UTS: NsId = NsId { dev: 4, ino: 2 };
    const POD_IPC: NsId = NsId { dev: 4, ino: 3 };

    fn ns(kind: LinuxNamespaceType, path: Option<&str>) -> Namespace {
        Namespace {
            kind,
            path: path.map(str::to_owned),
        }
    }

    fn facts() -> HostFacts {
        let mut f = HostFacts::default();
        for (p, id) in [
            ("/proc/9/ns/net", HOST_NET),
            ("/proc/9/ns/uts", HOST_UTS),
            ("/proc/9/ns/ipc", POD_IPC),
            ("/proc/9/ns/user", NsId { dev: 4, ino: 4 }),
        ] {
            f.namespaces
                .insert(p.into(), Ok(NsFacts { id, owner: None }));
        }
        f.namespaces
            .insert("/proc/0/ns/pid".into(), Err("gone".into()));
        f.runtime_namespaces = [
            ("net", HOST_NET),
            ("uts", HOST_UTS),
            ("ipc", NsId { dev: 4, ino: 99 }),
            ("user", NsId { dev: 4, ino: 4 }),
        ]
        .into();
        f
    }

    #[test]
    fn only_the_runtimes_own_non_user_namespaces_are_found() {
        let list = [
            ns(User, Some("/proc/9/ns/user")),
            ns(Ipc, Some("/proc/9/ns/ipc")),
            ns(Pid, None),
            ns(Uts, Some("/proc/9/ns/uts")),
            ns(Network, Some("/proc/9/ns/net")),
            ns(Pid, Some("/proc/0/ns/pid")),
            ns(Mount, None),
        ];
        assert_eq!(joined_own(&list, &facts()), vec![3, 4]);
    }

    #[test]
    fn a_kind_mismatch_is_not_the_own_namespace() {
        // The uts path's identity equals the runtime's *net* namespace id
        // only by kind confusion: never matched across kinds.
        let mut f = facts();
        f.runtime_namespaces.insert("uts", HOST_NET);
        assert!(joined_own(&[ns(Uts, Some("/proc/9/ns/uts"))], &f).is_empty());
    }

    #[test]
    fn removal_keeps_the_rest_in_order_and_reports_spec_indexes() {
        let mut spec = json!({"linux": {"namespaces": [
            {"type": "user", "path": "/proc/9/ns/user"},
            {"type": "uts", "path": "/proc/9/ns/uts"},
            {"type": "ipc", "path": "/proc/9/ns/ipc"},
            {"type": "network", "path": "/proc/9/ns/net"},
            {"type": "mount"}
        ]}});
        let list = crate::fields::namespaces(&spec).unwrap();
        let mut out = Findings::default();
        assert!(remove(&mut spec, &list, &[1, 3], &mut out));
        assert_eq!(
            spec["linux"]["namespaces"],
            json!([
                {"type": "user", "path": "/proc/9/ns/user"},
                {"type": "ipc", "path": "/proc/9/ns/ipc"},
                {"type": "mount"}
            ])
        );
        let fields: Vec<_> = out.changes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["linux.namespaces[1]", "linux.namespaces[3]"]);
        assert!(out.changes[1].summary.contains("net namespace"));
        assert_eq!(out.changes[0].after, Value::Null);
    }
}
