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

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Policy {
    pub sysfs_fallback: SysfsFallback,
    pub net_capabilities: NetCapabilities,
    pub net_sysctls: NetSysctls,
    /// Give a container with its own cgroup namespace its own cgroup mount.
    pub own_cgroup_view: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            sysfs_fallback: SysfsFallback::default(),
            net_capabilities: NetCapabilities::default(),
            net_sysctls: NetSysctls::default(),
            own_cgroup_view: true,
        }
    }
}
