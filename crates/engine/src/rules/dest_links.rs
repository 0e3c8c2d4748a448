//! Mount destinations where the runtime will mount them. runc (securejoin)
//! and crun (openat2 with `RESOLVE_IN_ROOT`, or its own walk) resolve a
//! destination inside the rootfs when they mount it: symbolic links in the
//! image, and in whatever an earlier mount put there, are followed. The
//! other rules judge a destination by its text, so a writable bind of the
//! host's /sys at `/hsys`, with `/hsys -> sys` in the image, is "a bind
//! elsewhere" to them and lands on the container's /sys, writable, the
//! host's cgroup hierarchies writable below it. The shell resolves every
//! destination of a converted container as the runtime will
//! ([`crate::facts::MountDestination`]); a mount whose resolved
//! place differs from its text's at /sys (at or below it, or the
//! container's root, which carries /sys) is refused, and so is one that
//! cannot be resolved before the rootfs exists. Refuses, never edits.

use crate::report::Refusal;
use crate::{Context, Findings, Rule, Spec};

pub const NAME: &str = "destination-links";

pub struct DestinationLinks;

/// Where a clean container path is, as far as /sys is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The container's root: a mount there covers /sys too.
    Root,
    /// At or below /sys.
    Sys,
    Elsewhere,
}

fn place(path: &str) -> Place {
    if path == "/" {
        Place::Root
    } else if path == "/sys" || crate::path::is_below(path, "/sys") {
        Place::Sys
    } else {
        Place::Elsewhere
    }
}

/// The links followed, for the operator: the first few and how many more.
fn links_followed(links: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut text = links[..links.len().min(SHOWN)].join(", ");
    if links.len() > SHOWN {
        text.push_str(&format!(", and {} more links", links.len() - SHOWN));
    }
    text
}

impl Rule for DestinationLinks {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, _: &mut Findings) -> Result<(), Refusal> {
        if cx.facts.mount_destinations.is_empty() {
            return Ok(());
        }
        let mounts = spec.mounts()?;
        // A malformed mount is refused as such, by the reader of its
        // field, before any destination is judged.
        for (i, m) in mounts.iter().enumerate() {
            mounts.destination(i)?;
            m.str_member(i, "type")?;
            m.str_member(i, "source")?;
            m.options(i)?;
        }
        for (i, m) in mounts.iter().enumerate() {
            let text = mounts.destination(i)?;
            let Some(written) = m.str_member(i, "destination")? else {
                continue;
            };
            let Some(fact) = cx.facts.mount_destination(i, &written) else {
                continue;
            };
            let field = format!("mounts[{i}].destination");
            let resolved = match &fact.resolved {
                Ok(resolved) => resolved,
                Err(why) => {
                    return Err(Refusal::new(
                        NAME,
                        field,
                        format!(
                            "{written:?} cannot be resolved in the rootfs the way the runtime will resolve it when it mounts it ({why}): whether it lands on the container's /sys cannot be decided"
                        ),
                    ))
                }
            };
            let (said, is) = (place(&text), place(&resolved.path));
            if said == is {
                continue;
            }
            let how = if resolved.links.is_empty() {
                String::new()
            } else {
                format!(" through {}", links_followed(&resolved.links))
            };
            let why = match is {
                Place::Sys => "a destination that reaches /sys through a symbolic link in the rootfs would be mounted over the container's /sys: the rules that harden /sys judge it by its text, as a mount elsewhere".to_owned(),
                Place::Root => "a destination that reaches the container's root through a symbolic link would be mounted over the whole rootfs, /sys with it".to_owned(),
                Place::Elsewhere => format!(
                    "a destination written {} that a symbolic link in the rootfs leads elsewhere would not be mounted where the rules that harden /sys place it",
                    if said == Place::Root { "as the root" } else { "at or below /sys" }
                ),
            };
            return Err(Refusal::new(
                NAME,
                field,
                format!("{written:?} resolves to {}{how}: {why}", resolved.path),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{MountDestination, ResolvedDestination};
    use crate::{evaluate_value, HostFacts, Policy};
    use serde_json::{json, Value};

    fn spec(mounts: Value, network: bool) -> Value {
        let mut namespaces = vec![json!({"type": "user"}), json!({"type": "mount"})];
        if network {
            namespaces.push(json!({"type": "network"}));
        }
        json!({
            "root": {"path": "rootfs"},
            "process": {"capabilities": {}},
            "linux": {
                "namespaces": namespaces,
                "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
                "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]
            },
            "mounts": mounts
        })
    }

    fn resolved(written: &str, path: &str, links: &[&str]) -> MountDestination {
        MountDestination {
            written: written.into(),
            resolved: Ok(ResolvedDestination {
                path: path.into(),
                links: links.iter().map(|l| l.to_string()).collect(),
            }),
        }
    }

    fn facts(entries: Vec<(usize, MountDestination)>) -> HostFacts {
        HostFacts {
            mount_destinations: entries.into_iter().collect(),
            ..HostFacts::default()
        }
    }

    fn mounts() -> Value {
        json!([
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["ro"]},
            {"destination": "/hsys", "type": "bind", "source": "/sys", "options": ["rbind", "rw"]}
        ])
    }

    #[test]
    fn a_bind_that_a_link_leads_onto_sys_is_refused_naming_the_field() {
        let f = facts(vec![
            (0, resolved("/proc", "/proc", &[])),
            (1, resolved("/sys", "/sys", &[])),
            (
                2,
                resolved("/hsys", "/sys", &["/hsys -> sys (in the rootfs)"]),
            ),
        ]);
        let r = evaluate_value(&spec(mounts(), false), &f, &Policy::default()).unwrap_err();
        assert_eq!(
            r.to_string(),
            "destination-links: mounts[2].destination: \"/hsys\" resolves to /sys through /hsys -> sys (in the rootfs): a destination that reaches /sys through a symbolic link in the rootfs would be mounted over the container's /sys: the rules that harden /sys judge it by its text, as a mount elsewhere"
        );
    }

    #[test]
    fn below_sys_the_root_and_the_other_way_round_are_refused() {
        for (written, path, want) in [
            (
                "/x/cgroup",
                "/sys/fs/cgroup",
                "would be mounted over the container's /sys",
            ),
            (
                "/host",
                "/",
                "would be mounted over the whole rootfs, /sys with it",
            ),
            (
                "/sys",
                "/elsewhere",
                "written at or below /sys that a symbolic link",
            ),
            (
                "/sys/fs/cgroup",
                "/data/cgroup",
                "written at or below /sys that a symbolic link",
            ),
        ] {
            let m = json!([{"destination": written, "type": "bind", "source": "/srv", "options": ["rbind"]}]);
            let f = facts(vec![(
                0,
                resolved(written, path, &["/a -> b (in the rootfs)"]),
            )]);
            let r = evaluate_value(&spec(m, false), &f, &Policy::default()).unwrap_err();
            assert_eq!(r.rule, NAME);
            assert_eq!(r.field, "mounts[0].destination");
            assert!(r.message.contains(want), "{written}: {r}");
            assert!(r.message.contains(&format!("resolves to {path}")), "{r}");
        }
    }

    #[test]
    fn a_destination_resolving_to_itself_or_elsewhere_on_the_same_side_passes() {
        let m = json!([
            {"destination": "/sys", "type": "sysfs", "source": "sysfs"},
            {"destination": "/sys/class/net/eth0/x", "type": "tmpfs", "source": "tmpfs"},
            {"destination": "/data", "type": "bind", "source": "/srv", "options": ["rbind"]},
            {"destination": "/a/../sys/kernel", "type": "tmpfs", "source": "tmpfs"}
        ]);
        let f = facts(vec![
            (0, resolved("/sys", "/sys", &[])),
            (
                1,
                resolved(
                    "/sys/class/net/eth0/x",
                    "/sys/devices/virtual/net/eth0/x",
                    &["/sys/class/net/eth0 -> ../../devices/virtual/net/eth0 (in mounts[0])"],
                ),
            ),
            (
                2,
                resolved("/data", "/var/data", &["/data -> var/data (in the rootfs)"]),
            ),
            (3, resolved("/a/../sys/kernel", "/sys/kernel", &[])),
        ]);
        let plan = evaluate_value(&spec(m, false), &f, &Policy::default()).unwrap();
        assert!(plan.changed(), "the other rules still convert it");
    }

    #[test]
    fn a_destination_that_cannot_be_resolved_is_refused_with_the_reason() {
        let f = facts(vec![(
            2,
            MountDestination {
                written: "/hsys".into(),
                resolved: Err("/hsys: too many levels of symbolic links".into()),
            },
        )]);
        let r = evaluate_value(&spec(mounts(), false), &f, &Policy::default()).unwrap_err();
        assert_eq!(
            r.to_string(),
            "destination-links: mounts[2].destination: \"/hsys\" cannot be resolved in the rootfs the way the runtime will resolve it when it mounts it (/hsys: too many levels of symbolic links): whether it lands on the container's /sys cannot be decided"
        );
    }

    #[test]
    fn only_converted_containers_and_facts_of_the_same_mount_count() {
        let bad = facts(vec![(
            2,
            resolved("/hsys", "/sys", &["/hsys -> sys (in the rootfs)"]),
        )]);
        // Its own network namespace: nothing is converted, nothing judged.
        let plan = evaluate_value(&spec(mounts(), true), &bad, &Policy::default()).unwrap();
        assert!(!plan.changed());
        // A fact about another destination is not this mount's.
        let other = facts(vec![(2, resolved("/other", "/sys", &["/other -> sys"]))]);
        evaluate_value(&spec(mounts(), false), &other, &Policy::default()).unwrap();
        // Without facts, the text is all there is.
        evaluate_value(
            &spec(mounts(), false),
            &HostFacts::default(),
            &Policy::default(),
        )
        .unwrap();
    }

    #[test]
    fn many_links_are_shown_as_a_count() {
        let links: Vec<String> = (0..5).map(|n| format!("/l{n} -> l{}", n + 1)).collect();
        assert_eq!(
            links_followed(&links),
            "/l0 -> l1, /l1 -> l2, /l2 -> l3, and 2 more links"
        );
    }
}
