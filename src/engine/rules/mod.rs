//! One module per rule; each says what it changes and why.

pub mod caps;
pub mod cgroup;
pub mod idmap;
pub mod order;
pub mod own_ns;
pub mod sys_binds;
pub mod sysctl;
pub mod sysfs;

use super::report::Refusal;
use super::spec;
use serde_json::Value;
use std::borrow::Cow;

/// The cleaned destination of every mount, in order.
fn destinations(mounts: &[Value]) -> Result<Vec<Cow<'_, str>>, Refusal> {
    mounts
        .iter()
        .enumerate()
        .map(|(i, m)| spec::destination(i, m))
        .collect()
}
