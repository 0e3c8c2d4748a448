//! What the operator chose where the engine has a choice. Defaults are the
//! safe ones; the config file maps onto this.

use serde::Serialize;

/// When `rro` cannot work (old kernel or runtime).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SysfsFallback {
    /// Refuse the container rather than silently weaken /sys.
    #[default]
    Refuse,
    /// Bind with a plain `ro`: only the top mount is read-only.
    Ro,
}

/// What to do with the network capabilities that grant nothing here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NetCapabilities {
    #[default]
    Drop,
    Keep,
    Refuse,
}

/// What to do with `net.*` sysctls, which cannot apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NetSysctls {
    #[default]
    Refuse,
    Drop,
}

/// A range of host IDs: `start` .. `start + size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IdRange {
    pub start: u64,
    pub size: u64,
}

impl IdRange {
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.size)
    }

    pub fn contains(&self, other: &IdRange) -> bool {
        other.start >= self.start && other.end() <= self.end()
    }
}

/// Which host IDs a container may map.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AllowedRanges {
    /// Any host range (host root still depends on `allow_host_root`).
    #[default]
    Any,
    /// The /etc/subuid and /etc/subgid entries of this user (kubelet
    /// allocates pod ranges from there); the host facts carry them.
    SubidUser(String),
    /// Listed ranges.
    Explicit {
        uid: Vec<IdRange>,
        gid: Vec<IdRange>,
    },
}

/// ID-mapping policy, on top of the structural rules that always apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IdmapPolicy {
    pub allow_host_root: bool,
    pub allowed_ranges: AllowedRanges,
    /// `process.user` uid, gid and additionalGids must be mapped.
    pub require_process_user_mapped: bool,
}

impl Default for IdmapPolicy {
    fn default() -> Self {
        IdmapPolicy {
            allow_host_root: false,
            allowed_ranges: AllowedRanges::Any,
            require_process_user_mapped: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Policy {
    pub sysfs_fallback: SysfsFallback,
    pub net_capabilities: NetCapabilities,
    pub net_sysctls: NetSysctls,
    /// Give a container with its own cgroup namespace its own cgroup mount.
    pub own_cgroup_view: bool,
    pub idmap: IdmapPolicy,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            sysfs_fallback: SysfsFallback::default(),
            net_capabilities: NetCapabilities::default(),
            net_sysctls: NetSysctls::default(),
            own_cgroup_view: true,
            idmap: IdmapPolicy::default(),
        }
    }
}
