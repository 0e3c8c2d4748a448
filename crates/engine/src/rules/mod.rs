//! One module per rule; each says what it changes and why.

pub mod caps;
pub mod cgroup;
pub mod dest_links;
pub mod idmap;
pub mod order;
pub mod own_ns;
pub mod sys_binds;
pub mod sysctl;
pub mod sysfs;
pub mod under_sys;

use super::report::Refusal;
use super::spec::MountList;
use std::borrow::Cow;

/// The cleaned destination of every mount, in order.
fn destinations<'a>(mounts: &MountList<'a>) -> Result<Vec<Cow<'a, str>>, Refusal> {
    (0..mounts.len()).map(|i| mounts.destination(i)).collect()
}
