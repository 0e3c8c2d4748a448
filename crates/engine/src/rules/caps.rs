//! Network capabilities: CAP_NET_ADMIN, CAP_NET_RAW, CAP_NET_BIND_SERVICE
//! and CAP_NET_BROADCAST are checked against the user namespace that owns
//! the network namespace. In a container on the host network they grant
//! nothing, so they are dropped from all five sets (or kept, or refused, as
//! the policy says). A name is one when any runtime reads it as one
//! ([`cap_names`]: runc's exact names, crun's libcap, youki's). A name no
//! runtime reads as a capability this kernel has is kept as it is (runc
//! 1.2 and later ignore it with a warning; runc 1.1, crun and youki refuse
//! the container), so a node whose kernel or daemon knows a newer
//! capability keeps running its containers; but one that a newer reader
//! might take for a network capability (any name with `NET` in it, in any
//! case, or anything but letters and underscores: a number, a sign, a
//! space) is refused unless the policy keeps them. Every other entry
//! stays in place and in order.
//!
//! A process with no `capabilities` member (or `null`) gets five empty
//! sets written: what a runtime grants then depends on the runtime and its
//! version (runc 1.2 and later keep every capability runc itself has,
//! network ones included; runc 1.1 and crun give none), so the wrapper
//! writes what it means, the narrowest of those readings.

use crate::cap_names::{self, Class};
use crate::policy::NetCapabilities as Policy;
use crate::report::{Change, Names, Refusal};
use crate::{fields, Context, Findings, Rule, Spec};
use serde_json::Value;

pub const NAME: &str = "capabilities";
pub const SETS: [&str; 5] = [
    "bounding",
    "effective",
    "inheritable",
    "permitted",
    "ambient",
];

/// Whether any runtime reads `name` as a network capability.
pub fn is_net_capability(name: &str) -> bool {
    cap_names::is_network(name)
}

/// The refusal of a name no runtime reads as a capability but that reads
/// like a network one, in a converted container: `field` holds it.
pub fn unknown(field: &str, name: &str) -> Refusal {
    Refusal::new(
        NAME,
        field,
        format!(
            "{name:?}: not a capability runc, crun (libcap) or youki reads, and not a plain name (letters and underscores, no NET) that no newer reader could take for a network capability"
        ),
    )
}

/// Could a newer reader take a name no runtime reads today for a network
/// capability? Yes unless it is letters and underscores alone (libcap
/// reads numbers and ignores case and what follows a name) with no `NET`.
fn named_like_network(name: &str) -> bool {
    !name.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
        || name.to_ascii_uppercase().contains("NET")
}

/// Drop the network capabilities from every set of a process object (a
/// spec's `process`, or the process file of `exec --process`), as `policy`
/// says. `prefix` names the object in changes and refusals (`process`).
pub fn drop_from_process(
    process: &mut Value,
    prefix: &str,
    policy: Policy,
    out: &mut Findings,
) -> Result<(), Refusal> {
    if policy == Policy::Keep {
        return Ok(());
    }
    let field_of = |tail: &str| {
        if prefix.is_empty() {
            tail.to_owned()
        } else {
            format!("{prefix}.{tail}")
        }
    };
    let Some(object) = process.as_object_mut() else {
        let field = if prefix.is_empty() {
            "(top level)"
        } else {
            prefix
        };
        return Err(Refusal::malformed(field, "an object", process));
    };
    if object.get("capabilities").map_or(true, Value::is_null) {
        let before = object.get("capabilities").cloned().unwrap_or(Value::Null);
        let after: serde_json::Map<String, Value> = SETS
            .iter()
            .map(|set| ((*set).to_owned(), Value::Array(Vec::new())))
            .collect();
        object.insert("capabilities".into(), Value::Object(after.clone()));
        out.changes.push(Change {
            rule: NAME,
            field: field_of("capabilities"),
            summary: "written as five empty sets: without them, runc 1.2 and later would keep every capability it has itself, network ones included".into(),
            before,
            after: Value::Object(after),
        });
        return Ok(());
    }
    let Some(caps) = process.get("capabilities") else {
        return Ok(());
    };
    let Some(caps) = caps.as_object() else {
        return Err(Refusal::malformed(
            field_of("capabilities"),
            "an object",
            caps,
        ));
    };
    let mut found: Vec<(&str, Vec<String>)> = Vec::new();
    for set in SETS {
        let mut net = Vec::new();
        let mut unclassified: Option<Refusal> = None;
        fields::for_each_string(
            || field_of(&format!("capabilities.{set}")),
            caps.get(set),
            |n| match cap_names::classify(n.as_bytes()) {
                Class::Network(_) => net.push(n.to_owned()),
                Class::Other(_) => {}
                Class::Unknown if named_like_network(n) => {
                    unclassified.get_or_insert_with(|| {
                        unknown(&field_of(&format!("capabilities.{set}")), n)
                    });
                }
                Class::Unknown => {}
            },
        )?;
        if let Some(r) = unclassified.take() {
            return Err(r);
        }
        if !net.is_empty() {
            found.push((set, net));
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    if policy == Policy::Refuse {
        let mut all: Vec<&str> = found
            .iter()
            .flat_map(|(_, n)| n.iter().map(String::as_str))
            .collect();
        all.sort_unstable();
        all.dedup();
        return Err(refusal(&field_of("capabilities"), &all));
    }
    let Some(caps) = process
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    else {
        return Ok(());
    };
    for (set, dropped) in found {
        let Some(Value::Array(list)) = caps.get_mut(set) else {
            continue;
        };
        let before = Value::Array(list.clone());
        list.retain(|v| !v.as_str().is_some_and(is_net_capability));
        out.changes.push(Change {
            rule: NAME,
            field: field_of(&format!("capabilities.{set}")),
            summary: format!(
                "dropped {} from {set}: checked against the owner of the host's network namespace, they grant nothing here",
                Names(&dropped)
            ),
            before,
            after: Value::Array(list.clone()),
        });
    }
    Ok(())
}

/// The refusal under `capabilities.net = "refuse"`.
pub fn refusal(field: &str, names: &[&str]) -> Refusal {
    Refusal::new(
        NAME,
        field,
        format!(
            "{} asked for, but they grant nothing on a network namespace the container's user namespace does not own (capabilities.net = \"refuse\")",
            Names(names)
        ),
    )
}

pub struct NetCapabilities;

impl Rule for NetCapabilities {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        let policy = cx.policy.net_capabilities;
        match spec.member_mut("process") {
            Some(process) if !process.is_null() => {
                drop_from_process(process, "process", policy, out)
            }
            _ if policy == Policy::Keep => Ok(()),
            // runc refuses a spec without a process too; refusing here says
            // why before anything else runs.
            _ => Err(Refusal::new(
                NAME,
                "process",
                "missing: a converted container's capabilities are written explicitly, and there is no process to write them into",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(caps: Value, policy: Policy) -> (Value, Result<Vec<Change>, Refusal>) {
        let mut process = json!({ "capabilities": caps });
        let mut out = Findings::default();
        let r = drop_from_process(&mut process, "process", policy, &mut out).map(|()| out.changes);
        (process, r)
    }

    #[test]
    fn every_spelling_a_runtime_reads_as_network_leaves_every_set() {
        let names = json!([
            "CAP_KILL",
            "CAP_NET_RAW1",
            "cap_net_admin-x",
            "014",
            "0xd",
            "NET_BIND_SERVICE"
        ]);
        let caps = json!({"bounding": names, "effective": names, "ambient": ["cap_net_raw"]});
        let (after, r) = apply(caps, Policy::Drop);
        assert_eq!(r.unwrap().len(), 3);
        assert_eq!(after["capabilities"]["bounding"], json!(["CAP_KILL"]));
        assert_eq!(after["capabilities"]["effective"], json!(["CAP_KILL"]));
        assert_eq!(after["capabilities"]["ambient"], json!([]));
    }

    #[test]
    fn a_name_no_runtime_reads_is_kept_unless_named_like_network() {
        let kept = json!({"bounding": ["CAP_KILL", "CAP_FUTURE"], "permitted": ["CAP_KILL", "cap_later_one"]});
        let (after, r) = apply(kept.clone(), Policy::Drop);
        assert!(r.unwrap().is_empty());
        assert_eq!(after["capabilities"], kept);
        for name in ["64", " CAP_FUTURE", "+13", "Cap_Net_Future", "CAP_INTERNET"] {
            let caps = json!({"bounding": ["CAP_KILL"], "permitted": ["CAP_KILL", name]});
            let r = apply(caps, Policy::Drop).1.unwrap_err();
            assert_eq!(r.field, "process.capabilities.permitted", "{name}");
        }
        let caps = json!({"bounding": ["CAP_KILL"], "permitted": ["CAP_KILL", "Cap_Net_Future"]});
        let (_, r) = apply(caps.clone(), Policy::Drop);
        let r = r.unwrap_err();
        assert_eq!(r.field, "process.capabilities.permitted");
        assert!(
            r.message.starts_with(
                "\"Cap_Net_Future\": not a capability runc, crun (libcap) or youki reads"
            ),
            "{r}"
        );
        assert_eq!(apply(caps.clone(), Policy::Refuse).1.unwrap_err(), r);
        assert!(apply(caps, Policy::Keep).1.unwrap().is_empty());
    }

    #[test]
    fn refuse_names_what_was_asked_for() {
        let (_, r) = apply(json!({"bounding": ["0xd", "CAP_NET_RAW"]}), Policy::Refuse);
        let r = r.unwrap_err();
        assert_eq!(r.field, "process.capabilities");
        assert!(r.message.starts_with("0xd, CAP_NET_RAW asked for"), "{r}");
    }
}
