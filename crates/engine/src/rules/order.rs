//! Mount order: mounts are made in spec order, so a mount under /sys made
//! before /sys is hidden by it. containerd 2.3 appends its /sys bind after
//! the /sys/fs/cgroup mount, and the host's cgroup tree then covers the
//! container's own view. /sys is moved before the first mount under it.

use super::destinations;
use crate::report::{Change, Refusal};
use crate::{Context, Findings, Mount, Rule, Spec};
use serde_json::json;
use std::borrow::Cow;

pub const NAME: &str = "mount-order";

pub struct SysBeforeSubmounts;

impl Rule for SysBeforeSubmounts {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, spec: &mut Spec, _: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        let dests = destinations(&spec.mounts()?)?;
        let Some(first_under) = dests.iter().position(|d| crate::path::is_below(d, "/sys")) else {
            return Ok(());
        };
        let late: Vec<usize> = (first_under..dests.len())
            .filter(|&i| dests[i] == "/sys")
            .collect();
        if late.is_empty() {
            return Ok(());
        }
        // A move is rare: only then keep the destinations past the edit.
        let dests: Vec<String> = dests.into_iter().map(Cow::into_owned).collect();
        let mounts = spec.mounts_mut()?;
        // Move every late /sys mount, keeping their relative order, to just
        // before the first mount under /sys; everything else keeps its order.
        let before: Vec<&String> = dests.iter().collect();
        let moved: Vec<Mount> = late.iter().rev().map(|&i| mounts.remove(i)).collect();
        for m in moved {
            mounts.insert(first_under, m);
        }
        let mut after: Vec<&String> = dests.iter().collect();
        for &i in late.iter().rev() {
            after.remove(i);
        }
        for _ in &late {
            after.insert(first_under, &dests[late[0]]);
        }
        out.changes.push(Change {
            rule: NAME,
            field: "mounts".into(),
            summary: format!(
                "/sys (mounts[{}]) moved before {} (mounts[{first_under}]): a mount under /sys made before /sys is hidden by it",
                late[0], dests[first_under]
            ),
            before: json!(before),
            after: json!(after),
        });
        Ok(())
    }
}

/// The order the runtime makes the mounts in once this rule has run, as
/// indices of `dests` (the cleaned destinations as read): every /sys
/// mount after the first mount under /sys just before it, in their own
/// order; everything else in its place. The shell resolves destinations
/// in this order, each with the mounts before it in place.
pub fn final_order<S: AsRef<str>>(dests: &[S]) -> Vec<usize> {
    let n = dests.len();
    let Some(first_under) = dests
        .iter()
        .position(|d| crate::path::is_below(d.as_ref(), "/sys"))
    else {
        return (0..n).collect();
    };
    let (late, rest): (Vec<usize>, Vec<usize>) =
        (first_under..n).partition(|&i| dests[i].as_ref() == "/sys");
    (0..first_under).chain(late).chain(rest).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{evaluate_value, HostFacts, Policy};

    #[test]
    fn final_order_is_the_order_the_rule_makes() {
        for dests in [
            vec![
                "/proc",
                "/sys/fs/cgroup",
                "/dev",
                "/sys",
                "/sys/fs/bpf",
                "/sys",
            ],
            vec!["/sys", "/sys/fs/cgroup"],
            vec!["/proc", "/dev"],
            vec!["/sys/kernel/security", "/sys"],
        ] {
            let mounts: Vec<serde_json::Value> = dests
                .iter()
                .enumerate()
                .map(|(i, d)| json!({"destination": d, "type": "tmpfs", "source": format!("m{i}")}))
                .collect();
            let spec = json!({
                "process": {"capabilities": {}},
                "linux": {
                    "namespaces": [{"type": "user"}, {"type": "mount"}],
                    "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
                    "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]
                },
                "mounts": mounts
            });
            let plan = evaluate_value(&spec, &HostFacts::default(), &Policy::default()).unwrap();
            let made: Vec<usize> = plan.spec.to_value().unwrap()["mounts"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|m| m["source"].as_str()?.strip_prefix('m')?.parse().ok())
                .collect();
            assert_eq!(final_order(&dests), made, "{dests:?}");
        }
    }
}
