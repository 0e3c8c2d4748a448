//! What the admin tool knows of each daemon, one module per daemon
//! (containerd, CRI-O, podman), and what they share.

pub mod config;
pub mod containerd;
pub mod crio;
pub mod hookfile;
pub mod live;
pub mod node;
pub mod podman;
pub mod serving;

use crate::check::Check;
use crate::cli::{DoctorArgs, Engine, InstallArgs};
use crate::doctor::shared::{Fixes, Root};
use crate::in_use;
use crate::install::{edit::InstallPlan, error::InstallError};
use crate::matrix::Cri;
use toml_edit::Item;

/// What the commands ask of a daemon: each daemon's module implements it,
/// so that adding a daemon is one module (and a line in [`of`]) rather
/// than a branch in every command.
pub trait DaemonModule: Sync {
    /// The daemon's name as the command line and the reports spell it.
    fn name(&self) -> &'static str;
    /// What install (`install`) or uninstall changes in the daemon's
    /// config: the files, the links, what it leaves and says.
    fn plan(&self, args: &InstallArgs, install: bool) -> Result<InstallPlan, InstallError>;
    /// Whether a changed config takes a restart of the daemon (podman reads
    /// containers.conf at every command).
    fn restarts(&self) -> bool;
    /// Where the daemon's configs keep handler tables, to find the one an
    /// uninstall removes.
    fn layouts(&self) -> Vec<config::Layout>;
    /// What tells apart the containers of the handler uninstall removes
    /// (its table as it was, the wrapper links removed): `None` when the
    /// daemon's containers are not checked.
    fn in_use(
        &self,
        args: &InstallArgs,
        removed: &[Item],
        links: Vec<String>,
    ) -> Result<Option<in_use::Handler>, InstallError>;
    /// doctor's check of the daemon's handlers (`bin`: the binary that
    /// serves its config, when found); `None` for a daemon doctor does not
    /// check.
    fn doctor(&self, node: &DoctorNode, bin: Option<&serving::Binary>) -> Option<Check>;
}

/// What doctor hands a daemon's check: the node, the command line, the
/// daemon the kubelet uses (when known) and the fixes' wording.
pub struct DoctorNode<'a> {
    pub(crate) root: &'a Root,
    pub(crate) args: &'a DoctorArgs,
    pub(crate) uses: Option<Cri>,
    pub(crate) fx: &'a Fixes,
}

/// The module of the daemon the command line names.
pub fn of(daemon: Engine) -> &'static dyn DaemonModule {
    match daemon {
        Engine::Containerd => &containerd::Containerd,
        Engine::Crio => &crio::Crio,
        Engine::Podman => &podman::Podman,
    }
}
