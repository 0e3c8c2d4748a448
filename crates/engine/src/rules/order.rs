//! Mount order: mounts are made in spec order, so a mount under /sys made
//! before /sys is hidden by it. containerd 2.3 appends its /sys bind after
//! the /sys/fs/cgroup mount, and the host's cgroup tree then covers the
//! container's own view. /sys is moved before the first mount under it.

use super::destinations;
use crate::engine::report::{Change, Refusal};
use crate::engine::{Context, Findings, Mount, Rule, Spec};
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
