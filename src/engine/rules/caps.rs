//! Network capabilities: CAP_NET_ADMIN, CAP_NET_RAW, CAP_NET_BIND_SERVICE
//! and CAP_NET_BROADCAST are checked against the user namespace that owns
//! the network namespace. In a container on the host network they grant
//! nothing, so they are dropped from all five sets (or kept, or refused, as
//! the policy says). Every other entry, unknown names included, stays in
//! place and in order.

use crate::engine::policy::NetCapabilities as Policy;
use crate::engine::report::{Change, Names, Refusal};
use crate::engine::{spec, Context, Findings, Rule, Spec};
use serde_json::Value;

pub const NAME: &str = "capabilities";
pub const SETS: [&str; 5] = [
    "bounding",
    "effective",
    "inheritable",
    "permitted",
    "ambient",
];
pub const NET: [&str; 4] = [
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
];

/// Runtimes differ in how strictly they spell names; match the loosest
/// spelling any of them accepts, so nothing they would grant survives:
/// any case, with or without `CAP_`, surrounding blanks, and crun's bare
/// numbers (10 to 13).
pub fn is_net_capability(name: &str) -> bool {
    let name = name.trim();
    if name.starts_with(|c: char| c.is_ascii_digit() || c == '+') {
        return name.parse::<u32>().is_ok_and(|n| (10..=13).contains(&n));
    }
    // Compared with no copy: this runs for every entry of every set.
    let bare = match name.get(..4) {
        Some(prefix) if prefix.eq_ignore_ascii_case("CAP_") => &name[4..],
        _ => name,
    };
    NET.iter().any(|n| n[4..].eq_ignore_ascii_case(bare))
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
    let Some(caps) = process.get("capabilities") else {
        return Ok(());
    };
    if caps.is_null() {
        return Ok(());
    }
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
        spec::for_each_string(
            || field_of(&format!("capabilities.{set}")),
            caps.get(set),
            |n| {
                if is_net_capability(n) {
                    net.push(n.to_owned());
                }
            },
        )?;
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
        match spec.view_mut().get_mut("process") {
            Some(process) => drop_from_process(process, "process", cx.policy.net_capabilities, out),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, written plainly (with copies).
    fn spelled_as_net(name: &str) -> bool {
        let name = name.trim();
        if let Ok(n) = name.parse::<u32>() {
            return (10..=13).contains(&n);
        }
        let upper = name.to_ascii_uppercase();
        let bare = upper.strip_prefix("CAP_").unwrap_or(&upper);
        NET.iter().any(|n| &n[4..] == bare)
    }

    #[test]
    fn every_spelling_a_runtime_accepts_is_a_network_capability() {
        let net = [
            "CAP_NET_RAW",
            "cap_net_raw",
            "NET_ADMIN",
            " Cap_Net_Broadcast\t",
            "net_bind_service",
            "10",
            "+13",
            "012",
        ];
        let other = [
            "CAP_CHOWN",
            "CAP_",
            "",
            "9",
            "14",
            "-10",
            "CAP_NET_RAWX",
            "ÇAP_NET_RAW",
            "CAP_10",
            "NET",
        ];
        for n in net {
            assert!(is_net_capability(n), "{n:?}");
        }
        for n in other {
            assert!(!is_net_capability(n), "{n:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn the_check_without_copies_is_the_definition(
            name in r"[ \t]?(\+|[cC][aA][pP]_|ÇAP_)?([nN][eE][tT]_?(RAW|raw|ADMIN|Bind_Service|BROADCAST)|[0-9]{1,3}|CHOWN|é)[ ]?"
        ) {
            proptest::prop_assert_eq!(is_net_capability(&name), spelled_as_net(&name), "{:?}", name);
        }
    }
}
