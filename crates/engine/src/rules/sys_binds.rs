//! Binds of the host's /sys tree other than the /sys rule's, and binds
//! under the container's /sys. A hostPath volume of `/sys` (node-exporter
//! mounts it at `/host/sys`), a part of /sys, or a parent of /sys bound
//! recursively (the host's `/` at `/host/root`) carries the same tree the
//! /sys rule hardens, and a plain `ro` there leaves every submount (cgroup,
//! bpf, securityfs, ...) writable at the mount level just the same.
//!
//! In a converted container:
//! - a bind of /sys or of part of it becomes `rbind,rro,nosuid,nodev,
//!   noexec,rprivate`, the /sys rule's options, wherever it is mounted and
//!   whatever it asked (writable too: sysfs cannot be idmapped, so the
//!   daemons' idmapped volume of a `hostUsers: false` pod fails on every
//!   stack, and a writable one would hand the container the host's sysfs
//!   and cgroup tree); the idmapping it asked for is dropped, which grants
//!   nothing on a read-only tree;
//! - a recursive bind of a parent of /sys that is read-only, or mounted
//!   under /sys, becomes recursively read-only and private; a writable one
//!   elsewhere was asked for as such and is kept, with a warning;
//! - any other bind mounted at or under /sys is made read-only and private:
//!   everything the container sees under its /sys is read-only, and no
//!   mount the host makes later propagates in.
//!
//! A source is recognised by what it resolved to on the host
//! (`crate::host`: a relative source in the bundle, links,
//! `/proc/self/root/sys`, device and inode), so no spelling slips past; one
//! that could not be resolved is refused. A plain bind of a parent carries
//! no submount: its /sys is an empty directory.

use super::sysfs;
use crate::facts::SysSource;
use crate::report::{Change, Refusal};
use crate::{fields, Context, Findings, Rule, Spec};
use serde_json::{json, Value};
use std::borrow::Cow;

pub const NAME: &str = "sys-binds";

/// Members of a mount that ask for an idmapped mount.
const IDMAP_MEMBERS: [&str; 2] = ["uidMappings", "gidMappings"];

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
pub(crate) fn read_only(options: &[Cow<'_, str>]) -> bool {
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

/// A bind made recursively read-only and private: every option that is
/// not about writability or propagation stays, in order, then `rro` and
/// `rprivate`.
fn read_only_private<'a>(options: &[Cow<'a, str>]) -> Vec<Cow<'a, str>> {
    let mut out: Vec<Cow<'a, str>> = options
        .iter()
        .filter(|o| {
            !matches!(o.as_ref(), "ro" | "rw" | "rro") && !sysfs::PROPAGATION.contains(&o.as_ref())
        })
        .cloned()
        .collect();
    out.push(Cow::Borrowed("rro"));
    out.push(Cow::Borrowed("rprivate"));
    out
}

/// How one bind is changed, for the summary.
#[derive(Clone, Copy)]
enum Why {
    SysTree,
    Parent,
    UnderSys,
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
            let dest = mounts.destination(i)?;
            let under_sys = dest == "/sys" || crate::path::is_below(&dest, "/sys");
            let kind = match m.str_member(i, "source")? {
                Some(source) => {
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
                    kind
                }
                None => SysSource::Other,
            };
            let options = m.options(i)?;
            let (want, why) = match kind {
                SysSource::Sys | SysSource::InTree => {
                    (sysfs::hardened_options(i, cx)?, Why::SysTree)
                }
                SysSource::Parent if options.iter().any(|o| o == "rbind") => {
                    if !under_sys && !read_only(&options) {
                        out.warnings.push(format!(
                            "mounts[{i}]: {dest} is a writable bind of a parent of the host's /sys: the /sys tree in it stays writable at the mount level, as asked"
                        ));
                        continue;
                    }
                    (read_only_private(&options), Why::Parent)
                }
                _ if under_sys => (read_only_private(&options), Why::UnderSys),
                _ => continue,
            };
            let strip_idmap =
                matches!(why, Why::SysTree) && IDMAP_MEMBERS.iter().any(|k| m.get(k).is_some());
            let done = m.str_member(i, "type")?.as_deref() == Some("bind")
                && options == want
                && !strip_idmap;
            if !done {
                edits.push((i, dest.into_owned(), why, strip_idmap, json!(want)));
            }
        }
        for (i, dest, why, strip_idmap, options) in edits {
            let mount = spec.mount_mut(i)?;
            let before = Value::Object(mount.clone());
            mount.insert("type".into(), json!("bind"));
            mount.insert("options".into(), options);
            if strip_idmap {
                for k in IDMAP_MEMBERS {
                    mount.shift_remove(k);
                }
            }
            let summary = match why {
                Why::SysTree => format!(
                    "{dest}, a bind of the host's /sys tree, becomes recursively read-only and private, without idmapping: a plain ro leaves its submounts writable, a mount the host makes later would arrive writable, and sysfs cannot be idmapped"
                ),
                Why::Parent => format!(
                    "{dest}, a recursive bind of a parent of the host's /sys, becomes recursively read-only and private: a plain ro leaves the /sys tree in it writable, and a mount the host makes later would arrive writable"
                ),
                Why::UnderSys => format!(
                    "{dest}, a bind under the container's /sys, becomes recursively read-only and private: everything under /sys is read-only in a converted container"
                ),
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
    use crate::{evaluate, evaluate_value, HostFacts, Policy};

    fn converted(mounts: Value, facts: &HostFacts) -> crate::Plan {
        let spec = json!({
            "process": {"capabilities": {}},
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
            json!(["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"])
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
    fn a_writable_or_idmapped_bind_of_the_sys_tree_is_made_read_only_and_a_fs_mount_is_not_a_bind()
    {
        let plan = converted(
            json!([
                {"destination": "/host/sys", "type": "bind", "source": "/sys", "options": ["rbind", "ro", "rw"]},
                {"destination": "/mnt/bpf", "type": "bpf", "source": "/sys/fs/bpf", "options": ["ro"]},
                {"destination": "/host/ro", "type": "bind", "source": "/sys", "options": ["rbind", "ro", "idmap", "rslave"],
                 "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
                 "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]}
            ]),
            &HostFacts::default(),
        );
        let m = &plan.spec.to_value().unwrap()["mounts"];
        let hardened = json!(["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"]);
        assert_eq!(m[0]["options"], hardened, "writable made read-only");
        assert_eq!(m[1]["options"], json!(["ro"]));
        assert_eq!(
            m[2],
            json!({"destination": "/host/ro", "type": "bind", "source": "/sys", "options": hardened}),
            "sysfs cannot be idmapped: the idmapping goes"
        );
        assert!(
            plan.findings.warnings.is_empty(),
            "{:?}",
            plan.findings.warnings
        );
        let again = evaluate(plan.spec, &HostFacts::default(), &Policy::default()).unwrap();
        assert!(!again.changed(), "{:?}", again.findings.changes);
    }

    #[test]
    fn every_bind_under_sys_is_read_only_and_private() {
        let plan = converted(
            json!([
                {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["ro"]},
                {"destination": "/sys/fs/cgroup/cpu", "type": "bind", "source": "/sys/fs/cgroup/cpu", "options": ["rbind", "rw"]},
                {"destination": "/sys/fs", "type": "bind", "source": "/sys", "options": ["rbind"]},
                {"destination": "/sys/kernel/x", "type": "bind", "source": "/srv", "options": ["bind", "nosuid", "rw", "rslave"]},
                {"destination": "/sys/y", "type": "bind", "source": "/", "options": ["rbind"]}
            ]),
            &HostFacts::default(),
        );
        let m = &plan.spec.to_value().unwrap()["mounts"];
        let hardened = json!(["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"]);
        assert_eq!(m[1]["options"], hardened);
        assert_eq!(m[2]["options"], hardened);
        assert_eq!(
            m[3]["options"],
            json!(["bind", "nosuid", "rro", "rprivate"])
        );
        assert_eq!(m[4]["options"], json!(["rbind", "rro", "rprivate"]));
        assert!(
            plan.findings.warnings.is_empty(),
            "{:?}",
            plan.findings.warnings
        );
        let again = evaluate(plan.spec, &HostFacts::default(), &Policy::default()).unwrap();
        assert!(!again.changed(), "{:?}", again.findings.changes);
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
                    json!(["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"]),
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
        assert_eq!(m[0]["options"], json!(["rbind", "rro", "rprivate"]));
        assert_eq!(m[1]["options"], json!(["rbind", "rro", "rprivate"]));
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
            "process": {"capabilities": {}},
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
