//! Does this container need converting? Decided by namespace ownership, not
//! by a flag: sysfs can only be mounted by a process privileged in the user
//! namespace that owns the network namespace, so a container whose user
//! namespace does not own its network namespace cannot mount a fresh /sys.

use super::facts::HostFacts;
use super::fields::Namespace;
use super::report::Refusal;
use oci_spec::runtime::LinuxNamespaceType;
use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "kebab-case")]
pub enum Decision {
    /// No user namespace: the container's root is the host's root, and a
    /// fresh sysfs mounts fine.
    NoUserNamespace,
    /// The runtime creates the network namespace inside the new user
    /// namespace, which therefore owns it.
    OwnNetworkNamespace,
    /// Both joined by path, and the user namespace owns the network one.
    NetworkOwnedByUserNamespace { network: String, user: String },
    /// No network namespace in the spec: the container shares the
    /// runtime's, the host's.
    HostNetwork,
    /// A new user namespace joins an existing network namespace, which it
    /// cannot own. `host` tells whether that is the host's.
    JoinedNetwork { network: String, host: Option<bool> },
    /// Both joined by path, and the network namespace is owned by another
    /// user namespace.
    NetworkOwnedElsewhere { network: String, user: String },
}

impl Decision {
    /// A stable name for logs and `--json` output.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::NoUserNamespace => "no-user-namespace",
            Decision::OwnNetworkNamespace => "own-network-namespace",
            Decision::NetworkOwnedByUserNamespace { .. } => "network-owned-by-user-namespace",
            Decision::HostNetwork => "host-network",
            Decision::JoinedNetwork { .. } => "joined-network",
            Decision::NetworkOwnedElsewhere { .. } => "network-owned-elsewhere",
        }
    }

    pub fn converts(&self) -> bool {
        matches!(
            self,
            Decision::HostNetwork
                | Decision::JoinedNetwork { .. }
                | Decision::NetworkOwnedElsewhere { .. }
        )
    }

    pub fn has_user_namespace(&self) -> bool {
        *self != Decision::NoUserNamespace
    }

    /// Something the operator should know even though the conversion goes on.
    pub fn warning(&self) -> Option<String> {
        match self {
            Decision::JoinedNetwork {
                network,
                host: Some(false),
            } => Some(format!(
                "network namespace {network} is not the host's, yet the container binds the host's /sys: /sys/class/net will list the host's devices, not that namespace's"
            )),
            _ => None,
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::NoUserNamespace => f.write_str("no user namespace: nothing to do"),
            Decision::OwnNetworkNamespace => f.write_str(
                "new network namespace, created inside the container's user namespace: nothing to do",
            ),
            Decision::NetworkOwnedByUserNamespace { network, user } => write!(
                f,
                "network namespace {network} is owned by user namespace {user}: nothing to do"
            ),
            Decision::HostNetwork => f.write_str(
                "user namespace on the host network: the host's network namespace is owned by the initial user namespace, so sysfs cannot be mounted",
            ),
            Decision::JoinedNetwork { network, .. } => write!(
                f,
                "new user namespace joining network namespace {network}, which it does not own, so sysfs cannot be mounted"
            ),
            Decision::NetworkOwnedElsewhere { network, user } => write!(
                f,
                "network namespace {network} is not owned by user namespace {user}, so sysfs cannot be mounted"
            ),
        }
    }
}

impl Decision {
    /// The decision for the given namespaces. Refuses only when ownership must
    /// be compared and the facts could not be read.
    pub fn of(namespaces: &[Namespace], facts: &HostFacts) -> Result<Self, Refusal> {
        let find = |kind| namespaces.iter().position(|n| n.kind == kind);
        let Some(user_at) = find(LinuxNamespaceType::User) else {
            return Ok(Decision::NoUserNamespace);
        };
        let Some(net_at) = find(LinuxNamespaceType::Network) else {
            return Ok(Decision::HostNetwork);
        };
        let Some(network) = namespaces[net_at].path.clone() else {
            return Ok(Decision::OwnNetworkNamespace);
        };
        let Some(user) = namespaces[user_at].path.clone() else {
            let host = match (
                facts.namespaces.get(&network),
                facts.runtime_namespace(LinuxNamespaceType::Network),
            ) {
                (Some(Ok(net)), Some(host)) => Some(net.id == host),
                _ => None,
            };
            return Ok(Decision::JoinedNetwork { network, host });
        };

        let unknown = |at: usize, path: &str, why: &str| {
            Refusal::new(
                "namespaces",
                format!("linux.namespaces[{at}].path"),
                format!(
                    "cannot tell whether the user namespace owns the network namespace: {path}: {why}"
                ),
            )
        };
        let owner = match facts.namespaces.get(&network) {
            Some(Ok(n)) => n
                .owner
                .ok_or_else(|| unknown(net_at, &network, "owner unknown"))?,
            Some(Err(e)) => return Err(unknown(net_at, &network, e)),
            None => return Err(unknown(net_at, &network, "not inspected")),
        };
        let user_id = match facts.namespaces.get(&user) {
            Some(Ok(n)) => n.id,
            Some(Err(e)) => return Err(unknown(user_at, &user, e)),
            None => return Err(unknown(user_at, &user, "not inspected")),
        };
        Ok(if owner == user_id {
            Decision::NetworkOwnedByUserNamespace { network, user }
        } else {
            Decision::NetworkOwnedElsewhere { network, user }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{NsFacts, NsId};
    use LinuxNamespaceType::*;

    fn ns(kind: LinuxNamespaceType, path: Option<&str>) -> Namespace {
        Namespace {
            kind,
            path: path.map(str::to_owned),
        }
    }

    const A: NsId = NsId { dev: 4, ino: 100 };
    const B: NsId = NsId { dev: 4, ino: 200 };
    const NET: NsId = NsId { dev: 4, ino: 300 };

    fn facts(entries: &[(&str, NsId, Option<NsId>)]) -> HostFacts {
        HostFacts {
            namespaces: entries
                .iter()
                .map(|(p, id, owner)| {
                    (
                        p.to_string(),
                        Ok(NsFacts {
                            id: *id,
                            owner: *owner,
                        }),
                    )
                })
                .collect(),
            runtime_namespaces: [("net", NET)].into(),
            ..HostFacts::default()
        }
    }

    #[test]
    fn without_user_namespace_nothing_to_do() {
        let d = Decision::of(&[ns(Pid, None), ns(Mount, None)], &HostFacts::default()).unwrap();
        assert_eq!(d, Decision::NoUserNamespace);
        assert!(!d.converts());
    }

    #[test]
    fn user_namespace_without_network_entry_is_host_network() {
        let d = Decision::of(&[ns(User, None), ns(Mount, None)], &HostFacts::default()).unwrap();
        assert_eq!(d, Decision::HostNetwork);
        assert!(d.converts());
        assert!(d.warning().is_none());
    }

    #[test]
    fn new_network_namespace_is_owned() {
        let d = Decision::of(&[ns(Network, None), ns(User, None)], &HostFacts::default()).unwrap();
        assert_eq!(d, Decision::OwnNetworkNamespace);
    }

    #[test]
    fn new_user_namespace_joining_a_network_converts_and_warns_if_not_host() {
        let host = Decision::of(
            &[ns(User, None), ns(Network, Some("/proc/1/ns/net"))],
            &facts(&[("/proc/1/ns/net", NET, Some(A))]),
        )
        .unwrap();
        assert!(host.converts());
        assert!(host.warning().is_none());
        let other = Decision::of(
            &[ns(User, None), ns(Network, Some("/run/netns/x"))],
            &facts(&[("/run/netns/x", B, Some(A))]),
        )
        .unwrap();
        assert!(other.converts());
        assert!(other.warning().unwrap().contains("/sys/class/net"));
    }

    #[test]
    fn both_joined_compare_owners() {
        let spec = [
            ns(User, Some("/proc/7/ns/user")),
            ns(Network, Some("/proc/7/ns/net")),
        ];
        let same = facts(&[("/proc/7/ns/user", A, None), ("/proc/7/ns/net", B, Some(A))]);
        assert!(!Decision::of(&spec, &same).unwrap().converts());
        let other = facts(&[
            ("/proc/7/ns/user", A, None),
            ("/proc/7/ns/net", B, Some(NET)),
        ]);
        assert!(Decision::of(&spec, &other).unwrap().converts());
    }

    #[test]
    fn unreadable_namespace_is_refused_with_its_path() {
        let spec = [
            ns(User, Some("/proc/99999/ns/user")),
            ns(Network, Some("/proc/99999/ns/net")),
        ];
        let mut f = HostFacts::default();
        f.namespaces.insert(
            "/proc/99999/ns/net".into(),
            Err("No such file or directory".into()),
        );
        let r = Decision::of(&spec, &f).unwrap_err();
        assert_eq!(r.field, "linux.namespaces[1].path");
        assert!(r.message.contains("/proc/99999/ns/net: No such file"));
    }
}
