//! What the operator chose where the engine has a choice. Defaults are the
//! safe ones; the config file's sections deserialize into these types
//! (`crate::config`), refusing what they do not know.

use serde::{Deserialize, Serialize};

/// One past the highest ID a mapping can name.
const ID_LIMIT: u64 = 1 << 32;

/// When `rro` cannot work (old kernel or runtime).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SysfsFallback {
    /// Refuse the container rather than silently weaken /sys.
    #[default]
    Refuse,
    /// Bind with a plain `ro`: only the top mount is read-only.
    Ro,
}

/// What to do with the network capabilities that grant nothing here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetCapabilities {
    #[default]
    Drop,
    Keep,
    Refuse,
}

/// What to do with `net.*` sysctls, which cannot apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetSysctls {
    #[default]
    Refuse,
    Drop,
}

/// A range of host IDs: `start` .. `start + size`. Read from the config
/// file only if it is not empty and ends at or below 2^32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawRange")]
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

/// Which host IDs a container may map. In the config file: a user whose
/// /etc/subuid and /etc/subgid entries apply, or both lists given
/// explicitly; no setting at all is `Any`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "RawRanges")]
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
/// The config file's `[idmap]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
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
    /// Run a converted container under a runtime that mounts its cgroup v1
    /// hierarchies writable whatever the spec says (youki on a cgroup v1
    /// host), with a warning; refused otherwise.
    pub allow_writable_cgroup_v1: bool,
    pub idmap: IdmapPolicy,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            sysfs_fallback: SysfsFallback::default(),
            net_capabilities: NetCapabilities::default(),
            net_sysctls: NetSysctls::default(),
            own_cgroup_view: true,
            allow_writable_cgroup_v1: false,
            idmap: IdmapPolicy::default(),
        }
    }
}

/// `allowed_ranges` as written, checked into [`AllowedRanges`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRanges {
    subid_user: Option<String>,
    uid: Option<Vec<IdRange>>,
    gid: Option<Vec<IdRange>>,
}

impl TryFrom<RawRanges> for AllowedRanges {
    type Error = String;

    fn try_from(raw: RawRanges) -> Result<Self, String> {
        match (raw.subid_user, raw.uid, raw.gid) {
            (Some(user), None, None) => {
                if user.is_empty() {
                    Err("subid_user is empty: name the user whose /etc/subuid and /etc/subgid entries apply".into())
                } else {
                    Ok(AllowedRanges::SubidUser(user))
                }
            }
            (Some(_), _, _) => Err(
                "give either subid_user or the uid and gid lists, not both".into(),
            ),
            (None, Some(uid), Some(gid)) => {
                if uid.is_empty() || gid.is_empty() {
                    Err("an empty uid or gid list would refuse every container; remove allowed_ranges to allow any range".into())
                } else {
                    Ok(AllowedRanges::Explicit { uid, gid })
                }
            }
            (None, None, None) => Err(
                "empty: give subid_user, or the uid and gid lists, or remove allowed_ranges to allow any range".into(),
            ),
            (None, _, _) => Err("give both the uid and the gid lists".into()),
        }
    }
}

/// A range as written, checked into [`IdRange`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRange {
    start: u64,
    size: u64,
}

impl TryFrom<RawRange> for IdRange {
    type Error = String;

    fn try_from(r: RawRange) -> Result<Self, String> {
        if r.size == 0 {
            return Err(format!("range at {} has size 0", r.start));
        }
        match r.start.checked_add(r.size) {
            Some(end) if end <= ID_LIMIT => Ok(IdRange {
                start: r.start,
                size: r.size,
            }),
            _ => Err(format!(
                "range of {} IDs at {} goes past the highest ID, 4294967295",
                r.size, r.start
            )),
        }
    }
}
