//! `net.*` sysctls: they would be written into the network namespace the
//! container shares with the host, which its user namespace does not own;
//! the kernel refuses, and the runtime's own error is terse. Refuse early
//! and say why (or drop them, when the policy says so).

use crate::policy::NetSysctls as Policy;
use crate::report::{Change, Names, Refusal};
use crate::{fields, Context, Decision, Findings, Rule, Spec};
use serde_json::Value;

pub const NAME: &str = "sysctl";

pub struct NetSysctls;

/// runc and crun turn every `.` of a key into `/` and write the file below
/// /proc/sys, so `/net.ipv4.x`, `.net.ipv4.x` and `net//ipv4/x` name the
/// same file as `net.ipv4.x`: the first non-empty component decides.
fn is_net(key: &str) -> bool {
    key.split(['.', '/']).find(|c| !c.is_empty()) == Some("net")
}

impl Rule for NetSysctls {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        let Some(sysctl) = spec.view().get("linux").and_then(|l| l.get("sysctl")) else {
            return Ok(());
        };
        if sysctl.is_null() {
            return Ok(());
        }
        let keys: Vec<String> = fields::object("linux.sysctl", sysctl)?
            .keys()
            .filter(|k| is_net(k))
            .cloned()
            .collect();
        if keys.is_empty() {
            return Ok(());
        }
        match cx.policy.net_sysctls {
            Policy::Refuse => {
                let whose = if *cx.decision == Decision::HostNetwork {
                    " (the host's)"
                } else {
                    ""
                };
                Err(Refusal::new(
                    NAME,
                    "linux.sysctl",
                    format!(
                        "{} cannot be set: the container shares a network namespace that its user namespace does not own{whose}, so net.* sysctls would apply to it; remove them or give the container its own network namespace",
                        Names(&keys)
                    ),
                ))
            }
            Policy::Drop => {
                let Some(map) = spec
                    .member_mut("linux")
                    .and_then(|l| l.get_mut("sysctl"))
                    .and_then(Value::as_object_mut)
                else {
                    return Ok(());
                };
                let before = Value::Object(map.clone());
                for k in &keys {
                    map.shift_remove(k);
                }
                out.changes.push(Change {
                    rule: NAME,
                    field: "linux.sysctl".into(),
                    summary: format!(
                        "dropped {}: they cannot apply to a network namespace the container's user namespace does not own",
                        Names(&keys)
                    ),
                    before,
                    after: Value::Object(map.clone()),
                });
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_net;

    #[test]
    fn every_spelling_of_a_net_key_is_one() {
        for key in [
            "net.ipv4.ip_forward",
            "net/ipv4/ip_forward",
            "/net.ipv4.ip_forward",
            ".net.ipv4.ip_forward",
            "//net//core.somaxconn",
            "./net.core.x",
        ] {
            assert!(is_net(key), "{key}");
        }
        for key in ["kernel.msgmax", "netfilter.x", "kernel/net", "", "."] {
            assert!(!is_net(key), "{key}");
        }
    }
}
