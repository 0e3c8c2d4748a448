//! Binds of the host's /sys tree other than the /sys rule's. A hostPath
//! volume of `/sys` (node-exporter mounts it at `/host/sys`), a part of
//! /sys, or a parent of /sys bound recursively (the host's `/` at
//! `/host/root`) carries the same tree the /sys rule hardens, and a plain
//! `ro` there leaves every submount (cgroup, bpf, securityfs, ...) writable
//! at the mount level just the same. In a converted container a read-only
//! bind of /sys or of part of it becomes `rbind,rro,nosuid,nodev,noexec`,
//! the /sys rule's options, wherever it is mounted (at /sys itself too,
//! whatever the source's spelling, keeping its source); a read-only
//! recursive bind of a parent of /sys gets `rro` for its `ro`. A source is
//! recognised by what it resolved to on the host (`crate::host`: a
//! relative source in the bundle, links, `/proc/self/root/sys`, device and
//! inode), so no spelling slips past; one that could not be resolved is
//! refused. A plain bind of a parent carries no submount: its /sys is an
//! empty directory. A writable bind elsewhere than /sys was asked for as
//! such: it is kept, with a warning.

use super::sysfs;
use crate::engine::facts::SysSource;
use crate::engine::report::{Change, Refusal};
use crate::engine::{fields, Context, Findings, Rule, Spec};
use serde_json::{json, Value};
use std::borrow::Cow;

pub const NAME: &str = "sys-binds";

pub struct HostSysBinds;

/// What `source` is: as the shell resolved it, or, without that fact, by
/// its cleaned path.
fn what_is(source: &str, cx: &Context<'_>) -> SysSource {
    match cx.facts.host_sys_sources.get(source) {
        Some(known) => known.clone(),
        None => {
            let clean = fields::clean_path(source);
            if clean == "/sys" || crate::path::is_below(&clean, "/sys") {
                SysSource::InTree
            } else if clean == "/" {
                SysSource::Parent
            } else {
                SysSource::Other
            }
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

/// A read-only recursive bind made recursively read-only: each `ro`
/// becomes `rro`, every other option stays.
fn recursive_read_only<'a>(options: &[Cow<'a, str>]) -> Vec<Cow<'a, str>> {
    options
        .iter()
        .map(|o| match o.as_ref() {
            "ro" => Cow::Borrowed("rro"),
            _ => o.clone(),
        })
        .collect()
}

impl Rule for HostSysBinds {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        let mut edits = Vec::new();
        let mounts = spec.mounts()?;
        for (i, m) in mounts.iter().enumerate() {
            if !m.is_bind(i)? {
                continue;
            }
            let Some(source) = m.str_member(i, "source")? else {
                continue;
            };
            let kind = what_is(&source, cx);
            if let SysSource::Unresolved(why) = &kind {
                return Err(Refusal::new(
                    NAME,
                    format!("mounts[{i}].source"),
                    format!(
                        "{source:?} cannot be resolved ({why}): whether it binds the host's /sys tree, which would stay writable, cannot be decided"
                    ),
                ));
            }
            if kind == SysSource::Other {
                continue;
            }
            let dest = mounts.destination(i)?;
            let options = m.options(i)?;
            if kind == SysSource::Parent && !options.iter().any(|o| o == "rbind") {
                continue;
            }
            let at_sys = dest == "/sys";
            if !at_sys && !read_only(&options) {
                out.warnings.push(format!(
                    "mounts[{i}]: {dest} is a writable bind of the host's {source}: the /sys tree in it stays writable at the mount level, as asked"
                ));
                continue;
            }
            let want = if kind == SysSource::Parent && !at_sys {
                recursive_read_only(&options)
            } else {
                sysfs::hardened_options(i, &options, cx)?
            };
            let done = m.str_member(i, "type")?.as_deref() == Some("bind") && options == want;
            if !done {
                let parent = kind == SysSource::Parent;
                edits.push((i, dest.into_owned(), parent, json!(want)));
            }
        }
        for (i, dest, parent, options) in edits {
            let mount = spec.mount_mut(i)?;
            let before = Value::Object(mount.clone());
            mount.insert("type".into(), json!("bind"));
            mount.insert("options".into(), options);
            let summary = if parent {
                format!(
                    "{dest}, a read-only recursive bind of a parent of the host's /sys, becomes recursively read-only: a plain ro leaves the /sys tree in it writable"
                )
            } else {
                format!(
                    "{dest}, a bind of the host's /sys tree, becomes recursively read-only: a plain ro leaves its submounts writable"
                )
            };
            out.changes.push(Change {
                rule: NAME,
                field: format!("mounts[{i}]"),
                summary,
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
            .insert("/proc/self/root/sys".into(), SysSource::InTree);
        facts
            .host_sys_sources
            .insert("/sys-lookalike".into(), SysSource::Other);
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
    fn at_sys_any_spelling_of_the_tree_is_hardened_and_keeps_its_source() {
        let mut facts = HostFacts::default();
        for (source, kind) in [
            ("/proc/self/root/sys", SysSource::Sys),
            ("/sys/fs", SysSource::InTree),
            ("sys-link", SysSource::Sys),
        ] {
            facts.host_sys_sources.insert(source.into(), kind);
        }
        for (source, want_source) in [
            ("/proc/self/root/sys", "/sys"),
            ("sys-link", "/sys"),
            ("/sys/fs", "/sys/fs"),
        ] {
            for options in [json!(["rbind", "ro"]), json!(["rbind", "rw"])] {
                let plan = converted(
                    json!([{"destination": "/sys", "type": "bind", "source": source, "options": options}]),
                    &facts,
                );
                let m = &plan.spec.to_value().unwrap()["mounts"][0];
                assert_eq!(m["source"], want_source, "{source}");
                assert_eq!(
                    m["options"],
                    json!(["rbind", "rro", "nosuid", "nodev", "noexec"]),
                    "{source} {options}"
                );
            }
        }
    }

    #[test]
    fn a_recursive_read_only_bind_of_a_parent_of_sys_becomes_rro() {
        let mut facts = HostFacts::default();
        facts
            .host_sys_sources
            .insert("/host-root".into(), SysSource::Parent);
        let plan = converted(
            json!([
                {"destination": "/host/root", "type": "bind", "source": "/", "options": ["rbind", "ro", "rslave"]},
                {"destination": "/host/r2", "type": "bind", "source": "/host-root", "options": ["rbind", "ro"]},
                {"destination": "/host/plain", "type": "bind", "source": "/", "options": ["bind", "ro"]},
                {"destination": "/host/rw", "type": "bind", "source": "/", "options": ["rbind"]}
            ]),
            &facts,
        );
        let m = &plan.spec.to_value().unwrap()["mounts"];
        assert_eq!(m[0]["options"], json!(["rbind", "rro", "rslave"]));
        assert_eq!(m[1]["options"], json!(["rbind", "rro"]));
        assert_eq!(
            m[2]["options"],
            json!(["bind", "ro"]),
            "a plain bind carries no submount"
        );
        assert_eq!(m[3]["options"], json!(["rbind"]));
        assert!(plan
            .findings
            .warnings
            .iter()
            .any(|w| w.starts_with("mounts[3]: /host/rw is a writable bind")));
        let again = evaluate(plan.spec, &facts, &Policy::default()).unwrap();
        assert!(!again.changed(), "{:?}", again.findings.changes);
    }

    #[test]
    fn a_source_that_cannot_be_resolved_is_refused_by_its_field() {
        let mut facts = HostFacts::default();
        facts.host_sys_sources.insert(
            "rel".into(),
            SysSource::Unresolved("bundle/rel: No such file or directory".into()),
        );
        let spec = json!({
            "linux": {
                "namespaces": [{"type": "user"}, {"type": "mount"}],
                "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
                "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]
            },
            "mounts": [
                {"destination": "/data", "type": "bind", "source": "/srv", "options": ["rbind"]},
                {"destination": "/x", "type": "bind", "source": "rel", "options": ["rbind", "ro"]}
            ]
        });
        let r = evaluate_value(&spec, &facts, &Policy::default()).unwrap_err();
        assert_eq!(
            r.to_string(),
            "sys-binds: mounts[1].source: \"rel\" cannot be resolved (bundle/rel: No such file or directory): whether it binds the host's /sys tree, which would stay writable, cannot be decided"
        );
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
