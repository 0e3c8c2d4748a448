//! Facts about the host that the decision needs, gathered by the shell
//! (`crate::host`) and passed in, so the engine itself does no I/O.

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

#[derive(Debug, Clone, Default)]
pub struct HostFacts {
    /// Namespace paths of the spec, each with its facts or why they could
    /// not be read.
    pub namespaces: BTreeMap<String, Result<NsFacts, String>>,
    /// The network namespace the runtime itself runs in: the host's.
    pub runtime_netns: Option<NsId>,
    pub rro: RroSupport,
}
