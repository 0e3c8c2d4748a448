//! Own cgroup view: a container with its own cgroup namespace should see its
//! own cgroup tree at /sys/fs/cgroup, not the host's tree that the bind of
//! the host's /sys brings along. CRI-O (<= 1.36) removes the cgroup mount
//! when it binds /sys; this puts a read-only one back, right after /sys.
//! Then what the real runtime makes of that mount: a read-only tmpfs under
//! it where the runtime would put a writable one of its own
//! ([`CgroupUnderlay`]), a refusal where it ignores `ro`
//! ([`RuntimeCgroupV1`]).

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

/// A runtime that cannot mount the container's cgroup2 straight onto the
/// host's cgroup2, which the recursive bind of the host's /sys brings to
/// /sys/fs/cgroup (the kernel refuses the same filesystem twice on one
/// mount point with EBUSY), falls back to a tmpfs of its own there, under
/// the container's cgroup2, writable by the container's root (crun 1.27.1:
/// `nr_blocks=1,nr_inodes=1`, read-write). With a mount of another
/// filesystem at /sys/fs/cgroup first, its cgroup2 goes on top as asked:
/// so a read-only tmpfs goes right before each cgroup mount there that
/// nothing else at /sys/fs/cgroup precedes (after /sys). The container
/// sees the same cgroup tree; nothing under /sys stays writable.
pub struct CgroupUnderlay;

pub const UNDERLAY_NAME: &str = "cgroup-underlay";

impl Rule for CgroupUnderlay {
    fn name(&self) -> &'static str {
        UNDERLAY_NAME
    }

    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        let Some(why) = &cx.facts.runtime_cgroup_tmpfs_writable else {
            return Ok(());
        };
        let mounts = spec.mounts()?;
        let dests = destinations(&mounts)?;
        let Some(last_sys) = dests.iter().rposition(|d| d == "/sys") else {
            return Ok(());
        };
        let first_at_cgroup_dir = dests[last_sys + 1..]
            .iter()
            .position(|d| d == CGROUP_DIR)
            .map(|i| last_sys + 1 + i);
        let Some(i) = first_at_cgroup_dir else {
            return Ok(());
        };
        let kind = match mounts.get(i) {
            Some(m) => m.str_member(i, "type")?,
            None => None,
        };
        if kind.as_deref() != Some("cgroup") {
            return Ok(());
        }
        let mounts = spec.mounts_mut()?;
        let mount = json!({
            "destination": CGROUP_DIR,
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "nodev", "noexec", "ro"],
        });
        mounts.insert(i, Mount::new(mount.clone()));
        out.changes.push(Change {
            rule: UNDERLAY_NAME,
            field: format!("mounts[{i}]"),
            summary: format!("read-only tmpfs added at {CGROUP_DIR} under the cgroup mount: {why}"),
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
