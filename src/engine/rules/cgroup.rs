//! Own cgroup view: a container with its own cgroup namespace should see its
//! own cgroup tree at /sys/fs/cgroup, not the host's tree that the bind of
//! the host's /sys brings along. CRI-O (<= 1.36) removes the cgroup mount
//! when it binds /sys; this puts a read-only one back, right after /sys.

use super::destinations;
use crate::engine::report::{Change, Refusal};
use crate::engine::{spec, Context, Findings, Rule};
use oci_spec::runtime::LinuxNamespaceType;
use serde_json::{json, Value};

pub const NAME: &str = "cgroup-view";
const CGROUP_DIR: &str = "/sys/fs/cgroup";

pub struct OwnCgroupView;

impl Rule for OwnCgroupView {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, spec: &mut Value, cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        if !cx.policy.own_cgroup_view
            || !cx
                .namespaces
                .iter()
                .any(|n| n.kind == LinuxNamespaceType::Cgroup)
        {
            return Ok(());
        }
        let dests = destinations(spec::mounts(spec)?)?;
        let Some(last_sys) = dests.iter().rposition(|d| d == "/sys") else {
            return Ok(());
        };
        if dests[last_sys + 1..].iter().any(|d| d == CGROUP_DIR) {
            return Ok(());
        }
        let Some(mounts) = spec::mounts_mut(spec) else {
            return Ok(());
        };
        let mount = json!({
            "destination": CGROUP_DIR,
            "type": "cgroup",
            "source": "cgroup",
            "options": ["nosuid", "noexec", "nodev", "relatime", "ro"],
        });
        mounts.insert(last_sys + 1, mount.clone());
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
