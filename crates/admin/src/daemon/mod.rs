//! What the admin tool knows of each daemon, one module per daemon
//! (containerd, CRI-O, podman), and what they share.

pub mod binary;
pub mod config;
pub mod containerd;
pub mod crio;
pub mod health;
pub mod hookfile;
pub mod in_use;
pub mod live;
pub mod node;
pub mod podman;
pub mod register;

use crate::check::Check;
use health::{Fixes, Root};
use register::{edit::InstallPlan, error::InstallError, Registration};
use std::path::{Path, PathBuf};
use toml_edit::Item;

/// Where a daemon that serves the kubelet lives on a node: what deploy
/// detects it by, the config it registers in and the unit it restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Service {
    /// Its default config file.
    pub config: &'static str,
    /// Its CRI socket.
    pub socket: &'static str,
    /// Its systemd unit.
    pub unit: &'static str,
    /// A drop-in directory whose presence alone means the daemon is
    /// configured here (CRI-O's packages ship no crio.conf).
    pub drop_ins: Option<&'static str>,
}

/// What the commands ask of a daemon: each daemon's module implements it,
/// so that adding a daemon is one module (and a line in [`of`]) rather
/// than a branch in every command.
pub trait DaemonModule: Sync {
    /// The daemon's name as the command line and the reports spell it,
    /// and its binary's.
    fn name(&self) -> &'static str;
    /// Its name in a sentence (CRI-O).
    fn title(&self) -> &'static str {
        self.name()
    }
    /// Whether doctor's version matrix judges its version (containerd's
    /// CRI checks the runtime's `features` and declares the feature).
    fn matrix(&self) -> bool {
        false
    }
    /// The release in its binary's `--version` line, when it says one.
    fn release(&self, _version_line: &str) -> Option<String> {
        None
    }
    /// What install (`install`) or uninstall changes in the daemon's
    /// config: the files, the links, what it leaves and says.
    fn plan(&self, args: &Registration, install: bool) -> Result<InstallPlan, InstallError>;
    /// How install's lines name what it registers.
    fn registers(&self) -> &'static str {
        "runtime handler"
    }
    /// For a daemon that a changed config takes no restart of, why, as
    /// install's last line says it (podman reads containers.conf at every
    /// command; after an install, how to run its containers).
    fn without_restart(&self, _handler: &str, _install: bool) -> Option<String> {
        None
    }
    /// `--hook`: where its config names hooks directories; `None` for a
    /// daemon that runs no OCI hooks.
    fn hooks(&self) -> Option<HooksLookup> {
        None
    }
    /// The hooks directories its config files under `root` name
    /// (`registrations`); an unreadable config names none.
    fn hooks_dirs_under(&self, _root: &Path) -> Vec<String> {
        Vec::new()
    }
    /// Its containers on the node under `root` whose runtime `runs`
    /// names (`registrations`): what each is, and how to undo it (`None`:
    /// drain the node).
    fn containers_running(
        &self,
        _root: &Path,
        _files: &dyn live::Files,
        _runs: &dyn Fn(&str) -> bool,
    ) -> Vec<(String, Option<&'static str>)> {
        Vec::new()
    }
    /// Where the daemon's configs keep handler tables, to find the one an
    /// uninstall removes.
    fn layouts(&self) -> Vec<config::Layout> {
        Vec::new()
    }
    /// What tells apart the containers of the handler uninstall removes
    /// (its table as it was, the wrapper links removed): `None` when the
    /// daemon's containers are not checked.
    fn in_use(
        &self,
        args: &Registration,
        removed: &[Item],
        links: Vec<String>,
    ) -> Result<Option<Box<dyn live::Handler>>, InstallError>;
    /// doctor's checks of the daemon's handlers (`bin`: the binary that
    /// serves its config, when found): the daemon's own first, then each
    /// handler judged by the real runtime it runs; none for a daemon
    /// doctor does not check.
    fn doctor(&self, _node: &DoctorNode, _bin: Option<&binary::Binary>) -> Vec<Check> {
        Vec::new()
    }
    /// The config files the daemon reads on the node under `root`, main
    /// file first, as host paths under `root` (`registrations`).
    fn config_files(&self, root: &Path) -> Vec<PathBuf>;
    /// Where it lives as a service deploy registers with; `None` for a
    /// daemon deploy does not register with (podman).
    fn service(&self) -> Option<Service> {
        None
    }
    /// The entry of handler `name` in one of its config files, as it is
    /// written there (for uninstall's guard: what tells its containers
    /// apart).
    fn handler_entry(&self, doc: &toml_edit::DocumentMut, name: &str) -> Option<Item> {
        self.layouts()
            .iter()
            .find_map(|l| config::handler(l, doc, name).cloned())
    }
    /// doctor's check of its config file as its binary reads it; `None`
    /// for a daemon doctor does not ask (podman).
    fn config_check(&self) -> Option<ConfigCheck> {
        None
    }
    /// What the handlers of `effective` (the config as the daemon reads
    /// it) would miss at start: `search_path` the daemon's PATH, `map`
    /// where a node path is read.
    fn missing_at_start(
        &self,
        _effective: &toml_edit::DocumentMut,
        _search_path: &str,
        _map: &dyn Fn(&Path) -> PathBuf,
    ) -> Vec<binary::Missing> {
        Vec::new()
    }
    /// What the daemon would miss at start, read from its files alone
    /// (`config` as the node names it) when no binary can be asked
    /// (CRI-O merges them as it would).
    fn missing_without_binary(
        &self,
        _config: &Path,
        _map: &dyn Fn(&Path) -> PathBuf,
    ) -> Option<Vec<binary::Missing>> {
        None
    }
    /// The config version the daemon read, when it reads less than the
    /// file says (containerd 1.x reads a version 3 file as version 2):
    /// (the file's, the daemon's).
    fn reads_less(
        &self,
        _own: &toml_edit::DocumentMut,
        _dumped: &toml_edit::DocumentMut,
    ) -> Option<(i64, i64)> {
        None
    }
}

/// How a daemon's hooks directories are found (`--hook`).
pub type HooksLookup = fn(&Registration) -> Result<HookDirs, InstallError>;

/// Where a daemon's config names its hooks directories (`--hook`).
pub struct HookDirs {
    /// The directories it names, when it names any (as the node sees them).
    pub named: Option<Vec<String>>,
    /// Where they are named, for the lines install prints.
    pub from: String,
    /// What it reads when it names none.
    pub defaults: &'static [&'static str],
    /// A drop-in that adds the administrator's directory when it reads
    /// none but the vendor's (CRI-O).
    pub drop_in: Option<PathBuf>,
}

/// What doctor's check of a daemon's config file (`DAEMON.config`: the
/// serving binary's own reading, then what it would miss at start) needs
/// to know of the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigCheck {
    /// The check's name.
    pub name: &'static str,
    /// The binary's subcommand that prints the config it reads.
    pub verb: &'static str,
    /// The binary's subcommands (urfave/cli), which a process running
    /// one is not the daemon serving.
    pub commands: &'static [&'static str],
    /// What each handler needs, as the ok message lists it.
    pub needs: &'static str,
    /// The drop-in directory beside the file, handed to the binary
    /// (`--config-dir`); with one, a missing main file is no error: the
    /// daemon reads its drop-ins alone.
    pub drop_ins: Option<&'static str>,
    /// Under `--root`, the binary is handed a copy of the file whose
    /// `imports` name the root's files (containerd reads them by path).
    pub stages_imports: bool,
    /// What a missing binary of a handler other than the wrapper's does.
    pub other_missing: &'static str,
    /// Where the daemon's packages put what its handlers need, for the fix.
    pub packaged: &'static str,
}

/// Every daemon the tool knows, in the order the scans report them: the
/// registry, and the one place that names them. A daemon is its folder
/// here (its [`DaemonModule`]) and its line in this list; the commands,
/// the command line's value lists and the scans all go through it.
pub static ALL: [&dyn DaemonModule; 3] = [&containerd::Containerd, &crio::Crio, &podman::Podman];

/// The daemon of that name ([`DaemonModule::name`]).
pub fn named(name: &str) -> Option<&'static dyn DaemonModule> {
    ALL.iter().copied().find(|d| d.name() == name)
}

/// The daemons deploy registers with, in detection order.
pub fn services() -> impl Iterator<Item = (&'static dyn DaemonModule, Service)> {
    ALL.iter().filter_map(|d| d.service().map(|s| (*d, s)))
}

/// The daemon a kubelet's CRI endpoint names, by its socket's name
/// (`unix:///run/containerd/containerd.sock`, `/var/run/crio/crio.sock`).
pub fn of_endpoint(endpoint: &str) -> Cri {
    let file = endpoint.rsplit('/').next().unwrap_or(endpoint);
    services()
        .map(|(d, _)| d)
        .find(|d| file.starts_with(d.name()) || endpoint.contains(&format!("/{}/", d.name())))
        .map_or(Cri::Other, Cri::Known)
}

/// The container runtime (CRI) a kubelet talks to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cri {
    /// A daemon of [`ALL`].
    Known(&'static dyn DaemonModule),
    /// An endpoint that names none (cri-dockerd, a custom socket).
    Other,
}

impl Cri {
    /// How the reports name it.
    pub fn title(self) -> &'static str {
        match self {
            Cri::Known(d) => d.title(),
            Cri::Other => "another runtime",
        }
    }
}

impl std::fmt::Debug for dyn DaemonModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for dyn DaemonModule {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

/// What doctor hands a daemon's check: the node, the daemon's config
/// file, the daemon the kubelet uses (when known) and the fixes' wording.
pub struct DoctorNode<'a> {
    pub(crate) root: &'a Root,
    /// The daemon's config file, as the node names it: named on the
    /// command line, else its default.
    pub(crate) config: PathBuf,
    /// Whether the command line named it: checked even when the daemon is
    /// not running or the kubelet uses another.
    pub(crate) named: bool,
    pub(crate) uses: Option<Cri>,
    pub(crate) fx: &'a Fixes,
}
