//! Own cgroup view: a container with its own cgroup namespace should see its
//! own cgroup tree at /sys/fs/cgroup, not the host's tree that the bind of
//! the host's /sys brings along. CRI-O (<= 1.36) removes the cgroup mount
//! when it binds /sys; this puts a read-only one back, right after /sys.

use super::destinations;
use crate::report::{Change, Refusal};
use crate::{Context, Findings, Mount, Rule, Spec};
use oci_spec::runtime::LinuxNamespaceType;
use serde_json::{json, Value};

pub const NAME: &str = "cgroup-view";
const CGROUP_DIR: &str = "/sys/fs/cgroup";

pub struct OwnCgroupView;

impl Rule for OwnCgroupView {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        if !cx.policy.own_cgroup_view
            || !cx
                .namespaces
                .iter()
                .any(|n| n.kind == LinuxNamespaceType::Cgroup)
        {
            return Ok(());
        }
        let dests = destinations(&spec.mounts()?)?;
        let Some(last_sys) = dests.iter().rposition(|d| d == "/sys") else {
            return Ok(());
        };
        if dests[last_sys + 1..].iter().any(|d| d == CGROUP_DIR) {
            return Ok(());
        }
        let mounts = spec.mounts_mut()?;
        let mount = json!({
            "destination": CGROUP_DIR,
            "type": "cgroup",
            "source": "cgroup",
            "options": ["nosuid", "noexec", "nodev", "relatime", "ro"],
        });
        mounts.insert(last_sys + 1, Mount::new(mount.clone()));
        out.changes.push(Change {
            rule: NAME,
            field: format!("mounts[{}]", last_sys + 1),
            summary: "read-only cgroup mount added at /sys/fs/cgroup after /sys: the container has its own cgroup namespace, and the host's /sys would show the host's cgroup tree".into(),
            before: Value::Null,
            after: mount,
        });
        Ok(())
    }
}

/// A runtime that mounts cgroup v1 hierarchies read-write whatever the
/// options say (youki 0.7.0 on a cgroup v1 host: a writable tmpfs at
/// /sys/fs/cgroup and each controller writable under it) would leave them
/// so in a converted container too, less hardened than under runc or crun.
/// Nothing in the spec can make it honour `ro`: such a container is
/// refused, unless the policy allows it (`cgroup.allow_writable_v1`), and
/// then the decision log says what stays writable.
pub struct RuntimeCgroupV1;

pub const V1_NAME: &str = "runtime-cgroup-v1";

impl Rule for RuntimeCgroupV1 {
    fn name(&self) -> &'static str {
        V1_NAME
    }

    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        let Some(why) = &cx.facts.runtime_cgroup_v1_writable else {
            return Ok(());
        };
        let mounts = spec.mounts()?;
        let dests = destinations(&mounts)?;
        let cgroup = mounts.iter().zip(&dests).position(|(m, d)| {
            m.get("type").as_deref().and_then(Value::as_str) == Some("cgroup")
                && (d == CGROUP_DIR || crate::path::is_below(d, CGROUP_DIR))
        });
        let Some(i) = cgroup else {
            return Ok(());
        };
        if !cx.policy.allow_writable_cgroup_v1 {
            return Err(Refusal::new(
                V1_NAME,
                format!("mounts[{i}]"),
                format!(
                    "{CGROUP_DIR}: {why}: the container's cgroup hierarchies would stay writable at the mount level (set cgroup.allow_writable_v1 = true to accept that, or use runc or crun)"
                ),
            ));
        }
        out.warnings.push(format!(
            "mounts[{i}]: {CGROUP_DIR}: {why}: the container's own cgroup hierarchies stay writable at the mount level (the kernel still confines writes to what its user namespace owns)"
        ));
        Ok(())
    }
}
