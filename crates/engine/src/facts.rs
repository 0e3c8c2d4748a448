//! Facts about the host that the decision needs, gathered by the shell
//! (`crate::host`) and passed in, so the engine itself does no I/O.

use oci_spec::runtime::LinuxNamespaceType;
use serde::Serialize;
use std::collections::BTreeMap;

/// The identity of a namespace: device and inode of its nsfs file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NsId {
    pub dev: u64,
    pub ino: u64,
}

/// What is known of a namespace named by path in the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NsFacts {
    pub id: NsId,
    /// The user namespace that owns it (`NS_GET_USERNS`); `None` for user
    /// namespaces and where it was not asked.
    pub owner: Option<NsId>,
}

/// Can the real runtime, on this kernel, make a recursive read-only bind?
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RroSupport {
    #[default]
    Supported,
    /// Why not, for the operator.
    Unsupported(String),
}

/// What a bind source is, seen from the host's /sys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SysSource {
    /// The host's /sys itself: the same device and inode.
    Sys,
    /// In the /sys tree: below /sys, or on a file system mounted at or
    /// under /sys (sysfs, cgroup, bpf, securityfs, ...) wherever it is
    /// bound.
    InTree,
    /// A parent of /sys (the host's `/`, or a bind of it): a recursive bind
    /// of it carries /sys and every mount under it.
    Parent,
    /// Nothing of the /sys tree.
    Other,
    /// Could not be resolved, and why: whether it binds /sys is unknown.
    Unresolved(String),
}

impl SysSource {
    /// The worse of two resolutions of one source (runc joins a relative
    /// source to the bundle as text, the kernel walks it): unresolved
    /// first, then the /sys tree itself, then a parent.
    pub fn worst(self, other: SysSource) -> SysSource {
        fn rank(s: &SysSource) -> u8 {
            match s {
                SysSource::Unresolved(_) => 4,
                SysSource::Sys | SysSource::InTree => 3,
                SysSource::Parent => 2,
                SysSource::Other => 1,
            }
        }
        match (rank(&self), rank(&other)) {
            (a, b) if a > b => self,
            (a, b) if a < b => other,
            // The same rank: /sys itself only if both say so; of two
            // reasons, the first.
            _ => match (self, other) {
                (SysSource::Sys, SysSource::Sys) => SysSource::Sys,
                (SysSource::Sys | SysSource::InTree, _) => SysSource::InTree,
                (first, _) => first,
            },
        }
    }
}

/// One line of a uid_map or gid_map, or one entry of the spec's mappings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Extent {
    pub container: u64,
    pub host: u64,
    pub size: u64,
}

/// The mappings of a user namespace, as the kernel has them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdMaps {
    pub uid: Vec<Extent>,
    pub gid: Vec<Extent>,
}

/// Host ranges a user is allowed in /etc/subuid and /etc/subgid.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubIds {
    pub user: String,
    pub uid: Vec<crate::policy::IdRange>,
    pub gid: Vec<crate::policy::IdRange>,
}

#[derive(Debug, Clone, Default)]
pub struct HostFacts {
    /// Namespace paths of the spec, each with its facts or why they could
    /// not be read.
    pub namespaces: BTreeMap<String, Result<NsFacts, String>>,
    /// The namespaces the runtime itself runs in (the wrapper execs it, so
    /// they are the wrapper's), keyed by their `/proc/self/ns` name (`net`,
    /// `uts`, ...): only those of the kinds the spec joins by path.
    pub runtime_namespaces: BTreeMap<&'static str, NsId>,
    pub rro: RroSupport,
    /// For a user namespace joined by path (any path to its nsfs file): the
    /// uid_map and gid_map of a process in that namespace, keyed by the
    /// namespace path, or why none could be read.
    pub joined_maps: BTreeMap<String, Result<IdMaps, String>>,
    /// What each bind source of the spec (as written) is on the host,
    /// resolved by the shell as the runtime will resolve it (a relative
    /// source in the bundle directory, links followed, identified by device
    /// and inode). A source missing here is judged by its cleaned path
    /// alone.
    pub host_sys_sources: BTreeMap<String, SysSource>,
    /// The subordinate ranges of the user the policy names, if it names one.
    pub subids: Option<Result<SubIds, String>>,
    /// Why the real runtime will mount the container's own cgroup v1
    /// hierarchies writable whatever the spec says, when it will (youki
    /// 0.7.0 on a host with cgroup v1).
    pub runtime_cgroup_v1_writable: Option<String>,
    /// Why the real runtime, mounting the container's cgroup at
    /// /sys/fs/cgroup onto the host's cgroup2 there, would put a writable
    /// tmpfs of its own under it, when it would (crun on a host whose
    /// /sys/fs/cgroup is cgroup2).
    pub runtime_cgroup_tmpfs_writable: Option<String>,
    /// Where each mount's destination lands in the container, keyed by its
    /// index in the spec as read, for the destinations that land elsewhere
    /// than their text says or cannot be resolved; a mount without an
    /// entry lands where its text says (or was not gathered).
    pub mount_destinations: BTreeMap<usize, MountDestination>,
}

impl HostFacts {
    /// The runtime's own namespace of this kind, if it was read.
    pub fn runtime_namespace(&self, kind: LinuxNamespaceType) -> Option<NsId> {
        self.runtime_namespaces.get(proc_name(kind)).copied()
    }
}

/// The name of a namespace kind under `/proc/<pid>/ns/`.
pub fn proc_name(kind: LinuxNamespaceType) -> &'static str {
    match kind {
        LinuxNamespaceType::Mount => "mnt",
        LinuxNamespaceType::Cgroup => "cgroup",
        LinuxNamespaceType::Uts => "uts",
        LinuxNamespaceType::Ipc => "ipc",
        LinuxNamespaceType::User => "user",
        LinuxNamespaceType::Pid => "pid",
        LinuxNamespaceType::Network => "net",
        LinuxNamespaceType::Time => "time",
    }
}

/// Where one mount's destination lands in the container, resolved as the
/// runtime resolves it when it makes the mount: inside the rootfs, the
/// mounts made before it in place, symbolic links followed (absolute ones
/// from the container's root). Gathered by the shell (`crate::host`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountDestination {
    /// The destination as written in the spec, so that a fact is never
    /// read for another mount.
    pub written: String,
    /// The container path it lands on, or why that cannot be known before
    /// the rootfs exists.
    pub resolved: Result<ResolvedDestination, String>,
}

/// A destination resolved in the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedDestination {
    /// Clean and absolute.
    pub path: String,
    /// The links followed on the way, in order, each as
    /// `PATH -> TARGET (in WHERE)`.
    pub links: Vec<String>,
}

impl HostFacts {
    /// What the shell resolved of mount `index`, whose destination is
    /// written `written`; `None` when not gathered (judged by its text).
    pub fn mount_destination(&self, index: usize, written: &str) -> Option<&MountDestination> {
        self.mount_destinations
            .get(&index)
            .filter(|d| d.written == written)
    }
}
