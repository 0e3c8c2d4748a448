//! An exec'd process of a converted container. containerd and CRI-O write
//! it from their own spec (`exec --process FILE`), where the network
//! capabilities were never dropped, and runc's `--cap` adds capabilities
//! on top of the container's: both get the same capability rule as the
//! container's init.

use super::cap_names::{classify, Class};
use super::policy::NetCapabilities;
use super::report::{Change, Refusal};
use super::rules::caps;
use super::Findings;
use serde_json::Value;

/// Apply the capability rule to a process document (the JSON of
/// `exec --process`). The changes name fields relative to the document.
pub fn process(doc: &mut Value, policy: NetCapabilities) -> Result<Vec<Change>, Refusal> {
    if !doc.is_object() {
        return Err(Refusal::malformed("(top level)", "an object", doc));
    }
    let mut out = Findings::default();
    caps::drop_from_process(doc, "", policy, &mut out)?;
    Ok(out.changes)
}

/// Which `--cap` values (index, value) ask for a network capability: the
/// ones to leave out of the argv, or a refusal under `refuse`.
pub fn net_cap_args<'a>(
    values: impl IntoIterator<Item = (usize, &'a str)>,
    policy: NetCapabilities,
) -> Result<Vec<usize>, Refusal> {
    if policy == NetCapabilities::Keep {
        return Ok(Vec::new());
    }
    let mut net: Vec<(usize, &str)> = Vec::new();
    for (i, v) in values {
        match classify(v.as_bytes()) {
            Class::Network(_) => net.push((i, v)),
            Class::Other(_) => {}
            Class::Unknown => return Err(caps::unknown("exec --cap", v)),
        }
    }
    if policy == NetCapabilities::Refuse && !net.is_empty() {
        let names: Vec<&str> = net.iter().map(|(_, v)| *v).collect();
        return Err(caps::refusal("exec --cap", &names));
    }
    Ok(net.into_iter().map(|(i, _)| i).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What containerd 1.7 writes for `crictl exec` in a host-network pod.
    fn containerd_process() -> Value {
        json!({
            "user": {"uid": 0, "gid": 0},
            "args": ["sh", "-c", "grep Cap /proc/self/status"],
            "env": ["PATH=/bin"],
            "cwd": "/",
            "capabilities": {
                "bounding": ["CAP_CHOWN", "CAP_NET_RAW", "CAP_NET_BIND_SERVICE", "CAP_KILL"],
                "effective": ["CAP_CHOWN", "CAP_NET_RAW", "CAP_NET_BIND_SERVICE", "CAP_KILL"],
                "permitted": ["CAP_CHOWN", "CAP_NET_RAW", "CAP_NET_BIND_SERVICE", "CAP_KILL"]
            },
            "noNewPrivileges": false,
            "oomScoreAdj": 0
        })
    }

    #[test]
    fn network_capabilities_leave_every_set_and_nothing_else_changes() {
        let mut doc = containerd_process();
        let changes = process(&mut doc, NetCapabilities::Drop).unwrap();
        assert_eq!(changes.len(), 3);
        assert_eq!(changes[0].field, "capabilities.bounding");
        let mut expected = containerd_process();
        for set in ["bounding", "effective", "permitted"] {
            expected["capabilities"][set] = json!(["CAP_CHOWN", "CAP_KILL"]);
        }
        assert_eq!(doc, expected);
        assert!(process(&mut doc, NetCapabilities::Drop).unwrap().is_empty());
    }

    #[test]
    fn policies_keep_and_refuse() {
        let mut doc = containerd_process();
        assert!(process(&mut doc, NetCapabilities::Keep).unwrap().is_empty());
        assert_eq!(doc, containerd_process());
        let r = process(&mut doc, NetCapabilities::Refuse).unwrap_err();
        assert_eq!(r.field, "capabilities");
        assert!(
            r.message
                .starts_with("CAP_NET_BIND_SERVICE, CAP_NET_RAW asked for"),
            "{r}"
        );
    }

    #[test]
    fn a_process_without_capabilities_or_of_the_wrong_shape() {
        let empty = json!({"bounding": [], "effective": [], "inheritable": [], "permitted": [], "ambient": []});
        for missing in [
            json!({"args": ["true"]}),
            json!({"args": ["true"], "capabilities": null}),
        ] {
            let mut doc = missing.clone();
            let changes = process(&mut doc, NetCapabilities::Drop).unwrap();
            assert_eq!(changes.len(), 1, "{missing}");
            assert_eq!(changes[0].field, "capabilities");
            assert_eq!(doc["capabilities"], empty, "written explicitly: {missing}");
            assert!(process(&mut doc, NetCapabilities::Drop).unwrap().is_empty());
            let mut kept = missing.clone();
            assert!(process(&mut kept, NetCapabilities::Keep)
                .unwrap()
                .is_empty());
            assert_eq!(kept, missing);
        }
        let r = process(&mut json!([1]), NetCapabilities::Drop).unwrap_err();
        assert_eq!(
            r.to_string(),
            "spec: (top level): expected an object, found an array"
        );
        let r = process(
            &mut json!({"capabilities": {"bounding": "CAP_NET_RAW"}}),
            NetCapabilities::Drop,
        )
        .unwrap_err();
        assert_eq!(r.field, "capabilities.bounding");
    }

    #[test]
    fn cap_arguments_in_every_spelling() {
        let args = [
            (1, "CAP_NET_RAW"),
            (3, "chown"),
            (5, "net_admin"),
            (6, "12"),
            (7, "0xd"),
            (8, "14"),
            (9, "CAP_NET_RAW1"),
        ];
        assert_eq!(
            net_cap_args(args, NetCapabilities::Drop).unwrap(),
            [1, 5, 6, 7, 9]
        );
        let r = net_cap_args([(1, " 13 ")], NetCapabilities::Drop).unwrap_err();
        assert_eq!(r.field, "exec --cap");
        assert!(net_cap_args([(1, " 13 ")], NetCapabilities::Keep)
            .unwrap()
            .is_empty());
        assert!(net_cap_args(args, NetCapabilities::Keep)
            .unwrap()
            .is_empty());
        let r = net_cap_args(args, NetCapabilities::Refuse).unwrap_err();
        assert_eq!(r.field, "exec --cap");
        assert!(
            net_cap_args([(1, "CAP_SYS_PTRACE")], NetCapabilities::Refuse)
                .unwrap()
                .is_empty()
        );
    }
}
