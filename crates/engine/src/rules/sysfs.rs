//! `/sys`: a fresh sysfs cannot be mounted here (EPERM), so bind the host's
//! /sys instead. `rbind`, because a plain bind of a tree with locked
//! submounts is refused in a user namespace; `rro`, because a plain `ro`
//! leaves every submount (cgroup, bpf, securityfs, efivarfs, debugfs, ...)
//! writable at the mount level; `nosuid,nodev,noexec`, because a remount
//! that drops locked flags fails with EPERM. Privileged containers too:
//! container root cannot write the host's sysfs anyway.
//!
//! `rprivate`, whatever propagation the spec asked for: `rro` is applied
//! once, when the bind is made. On a host whose mounts are shared (every
//! systemd host), runc's default root propagation (`rslave`) makes the bind
//! a slave of the host's /sys, and a mount the host makes there later
//! (bpffs when a CNI agent starts, configfs or fusectl when a module loads)
//! would arrive in the running container with its own, writable options.
//! A private tree receives nothing from the host.

use crate::facts::{RroSupport, SysSource};
use crate::policy::SysfsFallback;
use crate::report::{Change, Refusal};
use crate::{fields, Context, Findings, MountRef, Rule, Spec};
use serde_json::{json, Value};
use std::borrow::Cow;

pub const NAME: &str = "sysfs";

/// Propagation options: replaced by `rprivate` on every tree made
/// read-only, since a mount propagated in later would not be.
pub(crate) const PROPAGATION: &[&str] = &[
    "private",
    "rprivate",
    "shared",
    "rshared",
    "slave",
    "rslave",
    "unbindable",
    "runbindable",
];

pub struct SysfsBind;

impl Rule for SysfsBind {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        let mounts = spec.mounts()?;
        let mut targets = Vec::new();
        for (i, m) in mounts.iter().enumerate() {
            if mounts.destination(i)? != "/sys" || !mounts_sysfs(i, &m, cx)? {
                continue;
            }
            let options = m.options(i)?;
            let want = hardened_options(i, cx)?;
            let is_target = m.str_member(i, "type")?.as_deref() == Some("bind")
                && m.str_member(i, "source")?.as_deref() == Some("/sys")
                && options == want;
            if !is_target {
                let after = json!({"type": "bind", "source": "/sys", "options": want});
                targets.push((i, after));
            }
        }
        if readonly_fallback(cx) && !targets.is_empty() {
            if let RroSupport::Unsupported(why) = &cx.facts.rro {
                out.warnings.push(format!(
                    "/sys is bound with a plain ro because rro cannot work ({why}): submounts of /sys stay writable at the mount level"
                ));
            }
        }
        for (i, edit) in targets {
            let mount = spec.mount_mut(i)?;
            let before = Value::Object(mount.clone());
            if let Value::Object(edit) = edit {
                // Edited in place: the destination, key order and any other
                // member of the mount object stay as they were.
                for (k, v) in edit {
                    mount.insert(k, v);
                }
            }
            out.changes.push(Change {
                rule: NAME,
                field: format!("mounts[{i}]"),
                summary: "/sys becomes a recursive read-only bind of the host's /sys: a fresh sysfs cannot be mounted by a user namespace that does not own the network namespace".into(),
                before,
                after: Value::Object(mount.clone()),
            });
        }
        Ok(())
    }
}

/// The options of a hardened bind of the host's /sys tree: `rbind`, `rro`
/// (or the policy's `ro` fallback, or a refusal, when `rro` cannot work),
/// `nosuid,nodev,noexec`, and `rprivate` in place of any propagation the
/// mount asked for.
pub(crate) fn hardened_options<'a>(
    i: usize,
    cx: &Context<'_>,
) -> Result<Vec<Cow<'a, str>>, Refusal> {
    let readonly = match &cx.facts.rro {
        RroSupport::Supported => "rro",
        RroSupport::Unsupported(why) => match cx.policy.sysfs_fallback {
            SysfsFallback::Refuse => {
                return Err(Refusal::new(
                    NAME,
                    format!("mounts[{i}]"),
                    format!(
                        "cannot bind the host's /sys recursively read-only ({why}); a plain ro bind would leave every submount writable (set sysfs.fallback = \"ro\" to accept that)"
                    ),
                ))
            }
            SysfsFallback::Ro => "ro",
        },
    };
    Ok(["rbind", readonly, "nosuid", "nodev", "noexec", "rprivate"]
        .into_iter()
        .map(Cow::Borrowed)
        .collect())
}

fn readonly_fallback(cx: &Context<'_>) -> bool {
    cx.policy.sysfs_fallback == SysfsFallback::Ro && cx.facts.rro != RroSupport::Supported
}

/// Does this mount at /sys mount sysfs, or bind the host's /sys itself? A
/// tmpfs or anything else a spec puts over /sys mounts fine and is left
/// alone; a bind of part of /sys, or of a parent of it, is the sys-binds
/// rule's: it keeps its source. The source is known by what it resolved
/// to on the host, in any spelling; without that fact, by its cleaned path.
fn mounts_sysfs(i: usize, m: &MountRef<'_>, cx: &Context<'_>) -> Result<bool, Refusal> {
    if m.str_member(i, "type")?.as_deref() == Some("sysfs") {
        return Ok(true);
    }
    let Some(source) = m.str_member(i, "source")? else {
        return Ok(false);
    };
    let is_sys = match cx.facts.host_sys_sources.get(source.as_ref()) {
        Some(known) => *known == SysSource::Sys,
        None => fields::clean_path(&source) == "/sys",
    };
    Ok(is_sys && m.is_bind(i)?)
}
