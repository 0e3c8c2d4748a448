//! Binds of the host's /sys at other destinations. A hostPath volume of
//! `/sys` (node-exporter mounts it at `/host/sys`) is a bind of the same
//! tree the /sys rule hardens, and a plain `ro` there leaves every submount
//! (cgroup, bpf, securityfs, ...) writable at the mount level just the
//! same. In a converted container a read-only bind whose source is the
//! host's /sys or in its tree becomes `rbind,rro,nosuid,nodev,noexec`, the
//! /sys rule's options, wherever it is mounted. The source is recognised as
//! the shell resolved it (links, `/proc/self/root/sys`, a file system of
//! the /sys tree), so another spelling does not slip past. A writable bind
//! was asked for as such: it is kept, with a warning.

use super::sysfs;
use crate::engine::report::{Change, Refusal};
use crate::engine::{spec, Context, Findings, Rule, Spec};
use serde_json::{json, Value};
use std::borrow::Cow;

pub const NAME: &str = "sys-binds";

pub struct HostSysBinds;

/// Is `source` the host's /sys or in its tree?
fn is_host_sys(source: &str, cx: &Context<'_>) -> bool {
    match cx.facts.host_sys_sources.get(source) {
        Some(known) => *known,
        None => {
            let clean = spec::clean_dest(source);
            clean == "/sys" || spec::is_below(&clean, "/sys")
        }
    }
}

/// runc and crun apply options in order: the last of `ro` and `rw` wins,
/// and a bind is writable unless asked otherwise. `rro` is read-only too.
fn read_only(options: &[Cow<'_, str>]) -> bool {
    options
        .iter()
        .rev()
        .find_map(|o| match o.as_ref() {
            "ro" | "rro" => Some(true),
            "rw" => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

impl Rule for HostSysBinds {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        let mut edits = Vec::new();
        let mounts = spec.mounts()?;
        for (i, m) in mounts.iter().enumerate() {
            let dest = mounts.destination(i)?;
            if dest == "/sys" || !m.is_bind(i)? {
                continue;
            }
            let Some(source) = m.str_member(i, "source")? else {
                continue;
            };
            if !is_host_sys(&source, cx) {
                continue;
            }
            let options = m.options(i)?;
            if !read_only(&options) {
                out.warnings.push(format!(
                    "mounts[{i}]: {dest} is a writable bind of the host's {source}: its submounts stay writable at the mount level, as asked"
                ));
                continue;
            }
            let want = sysfs::hardened_options(i, &options, cx)?;
            let done = m.str_member(i, "type")?.as_deref() == Some("bind") && options == want;
            if !done {
                edits.push((i, dest.into_owned(), json!(want)));
            }
        }
        for (i, dest, options) in edits {
            let mount = spec.mount_mut(i)?;
            let before = Value::Object(mount.clone());
            mount.insert("type".into(), json!("bind"));
            mount.insert("options".into(), options);
            out.changes.push(Change {
                rule: NAME,
                field: format!("mounts[{i}]"),
                summary: format!(
                    "{dest}, a read-only bind of the host's /sys tree, becomes recursively read-only: a plain ro leaves its submounts writable"
                ),
                before,
                after: Value::Object(mount.clone()),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{evaluate, evaluate_value, HostFacts, Policy};

    fn converted(mounts: Value, facts: &HostFacts) -> crate::engine::Plan {
        let spec = json!({
            "linux": {
                "namespaces": [{"type": "user"}, {"type": "mount"}],
                "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
                "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]
            },
            "mounts": mounts
        });
        evaluate_value(&spec, facts, &Policy::default()).unwrap()
    }

    #[test]
    fn a_read_only_host_path_of_sys_becomes_rro_wherever_it_is() {
        let plan = converted(
            json!([
                {"destination": "/host/sys", "type": "bind", "source": "/sys", "options": ["rbind", "rprivate", "ro"]},
                {"destination": "/host/cg", "type": "bind", "source": "/sys/fs/cgroup/", "options": ["bind", "ro"]},
                {"destination": "/data", "type": "bind", "source": "/srv", "options": ["rbind", "ro"]}
            ]),
            &HostFacts::default(),
        );
        let doc = plan.spec.to_value().unwrap();
        let m = &doc["mounts"];
        assert_eq!(
            m[0],
            json!({"destination": "/host/sys", "type": "bind", "source": "/sys",
                   "options": ["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"]})
        );
        assert_eq!(
            m[1]["options"],
            json!(["rbind", "rro", "nosuid", "nodev", "noexec"])
        );
        assert_eq!(
            m[1]["source"], "/sys/fs/cgroup/",
            "the source stays as written"
        );
        assert_eq!(m[2]["options"], json!(["rbind", "ro"]));
        let fields: Vec<&str> = plan
            .findings
            .changes
            .iter()
            .filter(|c| c.rule == NAME)
            .map(|c| c.field.as_str())
            .collect();
        assert_eq!(fields, ["mounts[0]", "mounts[1]"]);
    }

    #[test]
    fn other_spellings_are_recognised_by_what_the_shell_resolved() {
        let mut facts = HostFacts::default();
        facts
            .host_sys_sources
            .insert("/proc/self/root/sys".into(), true);
        facts
            .host_sys_sources
            .insert("/sys-lookalike".into(), false);
        let plan = converted(
            json!([
                {"destination": "/a", "source": "/proc/self/root/sys", "options": ["rbind", "ro"]},
                {"destination": "/b", "type": "bind", "source": "/sys-lookalike", "options": ["ro"]}
            ]),
            &facts,
        );
        assert_eq!(plan.spec.to_value().unwrap()["mounts"][0]["type"], "bind");
        assert_eq!(
            plan.spec.to_value().unwrap()["mounts"][0]["options"][1],
            "rro"
        );
        assert_eq!(
            plan.spec.to_value().unwrap()["mounts"][1]["options"],
            json!(["ro"])
        );
    }

    #[test]
    fn a_writable_bind_is_kept_with_a_warning_and_a_fs_mount_is_not_a_bind() {
        let plan = converted(
            json!([
                {"destination": "/host/sys", "type": "bind", "source": "/sys", "options": ["rbind", "ro", "rw"]},
                {"destination": "/mnt/bpf", "type": "bpf", "source": "/sys/fs/bpf", "options": ["ro"]}
            ]),
            &HostFacts::default(),
        );
        assert_eq!(
            plan.spec.to_value().unwrap()["mounts"][0]["options"],
            json!(["rbind", "ro", "rw"])
        );
        assert_eq!(
            plan.spec.to_value().unwrap()["mounts"][1]["options"],
            json!(["ro"])
        );
        assert!(plan
            .findings
            .warnings
            .iter()
            .any(|w| w.starts_with("mounts[0]: /host/sys is a writable bind of the host's /sys")));
    }

    #[test]
    fn idempotent() {
        let plan = converted(
            json!([{"destination": "/host/sys", "type": "bind", "source": "/sys", "options": ["rbind", "ro"]}]),
            &HostFacts::default(),
        );
        let again = evaluate(plan.spec, &HostFacts::default(), &Policy::default()).unwrap();
        assert!(!again.changed(), "{:?}", again.findings.changes);
    }
}
