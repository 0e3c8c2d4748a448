//! Gathering the host facts the engine needs. Only what the spec asks about
//! is read: a container without namespace paths costs no system call here.

use crate::engine::facts::{HostFacts, NsFacts, NsId};
use crate::engine::spec;
use nix::sys::stat::{fstat, stat};
use oci_spec::runtime::LinuxNamespaceType;
use serde_json::Value;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

// NS_GET_USERNS: a descriptor for the user namespace owning a namespace.
nix::ioctl_none!(ns_get_userns, 0xb7, 0x1);

fn ns_id(st: &nix::sys::stat::FileStat) -> NsId {
    NsId {
        dev: st.st_dev,
        ino: st.st_ino,
    }
}

/// The namespace at `path`; with `owner`, also the user namespace owning it.
pub fn namespace_facts(path: &str, owner: bool) -> Result<NsFacts, String> {
    let id = ns_id(&stat(path).map_err(|e| e.desc().to_owned())?);
    if !owner {
        return Ok(NsFacts { id, owner: None });
    }
    let fd = nix::fcntl::open(
        path,
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| e.desc().to_owned())?;
    // SAFETY: `open` just returned this descriptor and nothing else owns it.
    let ns = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: NS_GET_USERNS takes no argument and returns a new descriptor.
    let user = unsafe { ns_get_userns(ns.as_raw_fd()) }
        .map_err(|e| format!("NS_GET_USERNS: {}", e.desc()))?;
    // SAFETY: the ioctl returned a new descriptor that we now own.
    let user = unsafe { OwnedFd::from_raw_fd(user) };
    let owner = ns_id(&fstat(user.as_raw_fd()).map_err(|e| e.desc().to_owned())?);
    Ok(NsFacts {
        id,
        owner: Some(owner),
    })
}

/// Facts for the namespace paths of a spec with a user namespace. A spec the
/// engine cannot read gets none: the engine refuses it in its own words.
pub fn gather(spec_doc: &Value) -> HostFacts {
    let mut facts = HostFacts::default();
    let Ok(namespaces) = spec::namespaces(spec_doc) else {
        return facts;
    };
    if !namespaces
        .iter()
        .any(|n| n.kind == LinuxNamespaceType::User)
    {
        return facts;
    }
    for n in &namespaces {
        let Some(path) = &n.path else { continue };
        let owner = match n.kind {
            LinuxNamespaceType::Network => true,
            LinuxNamespaceType::User => false,
            _ => continue,
        };
        facts
            .namespaces
            .insert(path.clone(), namespace_facts(path, owner));
        if owner {
            facts.runtime_netns = namespace_facts("/proc/self/ns/net", false)
                .ok()
                .map(|f| f.id);
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_network_namespace_is_owned_by_own_user_namespace() {
        let net = namespace_facts("/proc/self/ns/net", true).unwrap();
        let user = namespace_facts("/proc/self/ns/user", false).unwrap();
        assert_eq!(net.owner, Some(user.id));
    }

    #[test]
    fn dead_path_is_an_error_not_a_panic() {
        let e = namespace_facts("/proc/999999999/ns/net", true).unwrap_err();
        assert!(e.contains("No such file"), "{e}");
    }

    #[test]
    fn nothing_is_read_without_a_user_namespace() {
        let spec = serde_json::json!({"linux": {"namespaces": [{"type": "network", "path": "/proc/1/ns/net"}]}});
        assert!(gather(&spec).namespaces.is_empty());
    }
}
