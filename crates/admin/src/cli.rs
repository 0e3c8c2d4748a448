//! The admin tool's command line, defined once: the binary parses it, and
//! the man pages and shell completions are generated from it.

use crate::daemon::{self, DaemonModule};
use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};
use clap_complete::Shell;
use std::path::{Path, PathBuf};

#[derive(Debug, Parser)]
#[command(
    name = "userns-hostnet",
    version = userns_hostnet::VERSION,
    about = "Explain, check and register the userns-hostnet runtime wrapper; OCI hook mode",
    long_about = "userns-hostnet makes containers with a user namespace on the host network run safely: \
their /sys becomes a recursively read-only bind of the host's, the network capabilities that grant \
nothing there are dropped, net.* sysctls and unsound ID mappings are refused. The runtime wrapper \
userns-hostnet-runtime does it on every container start; this tool explains what it would do, \
checks the host, registers the wrapper with containerd or CRI-O, and runs as an OCI hook."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what the wrapper would change in a bundle, and why; writes nothing.
    #[command(
        after_help = "Exit status: 0 the container would start, 1 it would be refused, 2 the input or the config file could not be read. The config file is /etc/userns-hostnet/config.toml or $USERNS_HOSTNET_CONFIG, as for the wrapper."
    )]
    Explain(ExplainArgs),
    /// Check whether this host is ready.
    #[command(after_help = "Exit status: 0 when no check fails (warnings allowed), 1 otherwise.")]
    Doctor(DoctorArgs),
    /// Register the wrapper as a runtime handler of containerd or CRI-O, or a podman runtime.
    #[command(
        after_help = "The handler copies every setting of the default runtime handler (else runc), changing only what names the runtime binary (see registering.md for what is carried, changed or refused per daemon). The runtime that handler ran (BinaryName, CRI-O's runtime_path, podman's runtime paths, else its name in PATH) stays the real runtime: the new handler runs the wrapper through /etc/userns-hostnet/handlers/NAME/userns-hostnet-runtime, a link next to a link `runtime` to that binary (under --root DIR, links and files go under DIR). A comment line marks the handler table install wrote; uninstall removes only a marked, unchanged one. Exit status: 0 on success, 2 on an error; with --check, 0 when everything is in place and 1 when install would change something."
    )]
    Install(InstallArgs),
    /// Remove a runtime handler registered by `install`, and only what install added.
    #[command(
        after_help = "Refused (status 2, nothing changed) while containers of the handler are on the node: the line names them and how to drain them; --force removes the handler anyway, stranding them. Exit status: 0 when nothing install added is left, 1 when a handler of that name stays registered because install did not add it or it was changed since (a line says which and why), 2 on an error; with --check, 1 when uninstall would change something, else 0."
    )]
    Uninstall(UninstallArgs),
    /// OCI hook mode, for stacks that run without the wrapper.
    #[command(subcommand)]
    Hook(HookCommand),
    /// The installer image's mode: install onto the node whose root is mounted, label the node, wait.
    #[command(
        after_help = "Copies the wrapper, the admin tool and the -crun/-youki links into --bin-dir by rename, writes /etc/userns-hostnet/config.toml when absent, registers the handler as `install` does, restarts the daemon with --restart, labels the node userns-hostnet.io/installed=true when a service account and NODE_NAME are there, then waits; SIGTERM ends the wait and leaves the install in place. --uninstall (the cleanup DaemonSet) removes the label and puts back every file it changed, byte for byte, from the state it keeps under /var/lib/userns-hostnet/deploy on the host; so does SIGTERM with --cleanup. Either refuses, changing nothing, while the handler still has containers on the node (--uninstall --wait waits for them to go). --check is the readiness probe. Every option also reads the environment variable shown. Exit status: 0 on success, 2 on an error. See docs/cluster.md."
    )]
    Deploy(DeployArgs),
    /// List what on this host still runs the packaged binaries, each with the command that undoes it.
    #[command(
        after_help = "Looks for handler links under /etc/userns-hostnet/handlers, containerd, CRI-O and podman config files (and their drop-ins) naming /usr/bin/userns-hostnet-runtime or those links, OCI hook definitions in /etc/containers/oci/hooks.d and /usr/share/containers/oci/hooks.d, and a deploy into /usr/bin. The package refuses to be removed while there is any. Exit status: 0 when there is none, 1 when there is some (one line each: what, then the command), 2 on an error."
    )]
    Registrations(RegistrationsArgs),
    /// Print the version, the commit and build date, and the real runtime the wrapper would run.
    #[command(
        after_help = "The real runtime is chosen as the wrapper chooses it ($USERNS_HOSTNET_RUNTIME, else the config file's `runtime`), and its `--version` first line is shown. The build date is SOURCE_DATE_EPOCH of the build when it was set. Exit status: 0, 2 on an error."
    )]
    Version(VersionArgs),
    /// Print the shell completion script the package installs, for installs without the package.
    #[command(after_help = "Exit status: 0, 2 on an error.")]
    Completion(CompletionArgs),
    /// Show, check or edit the wrapper's config file.
    #[command(
        subcommand,
        after_help = "The file is /etc/userns-hostnet/config.toml or $USERNS_HOSTNET_CONFIG, read as the wrapper reads it: only when root alone can change it, and refused whole for one unknown setting or value."
    )]
    Config(ConfigCommand),
}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to complete in.
    #[arg(value_parser = shells())]
    pub shell: Shell,
}

/// The shells completions are made for.
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// [`SHELLS`], by name.
fn shells() -> impl clap::builder::TypedValueParser<Value = Shell> {
    let names = SHELLS.map(|s| clap::ValueEnum::to_possible_value(&s));
    clap::builder::PossibleValuesParser::new(names.into_iter().flatten())
        .map(|name| name.parse().expect("a value the parser accepted"))
}

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// One JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// The effective configuration, and where each value comes from (the file, an environment variable, the default).
    #[command(
        after_help = "Exit status: 0 on success, 2 when the file cannot be read, is not trusted, or is invalid."
    )]
    Show {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print the configuration file the package ships, every setting at its default.
    Default,
    /// Validate a config file as the wrapper would read it.
    #[command(
        after_help = "Exit status: 0 when valid, 1 when the wrapper would refuse it (one line names the setting and why), 2 when it cannot be read."
    )]
    Check {
        /// The file to check.
        file: PathBuf,
    },
    /// Change one setting, keeping the file's comments and order.
    #[command(
        after_help = "The value is TOML; a bare word is a string (log.level=debug). The result is validated as the wrapper validates it before the file is replaced, atomically. Exit status: 0 on success, 1 when the result would be invalid (nothing is written), 2 on an error."
    )]
    Set {
        /// SETTING=VALUE, e.g. sysfs.fallback=ro or runtime=["crun"].
        #[arg(value_name = "KEY=VALUE")]
        assignment: String,
        /// The file to edit (default: the one the wrapper reads).
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct RegistrationsArgs {
    /// One JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DeployArgs {
    /// Where the host's root is mounted; / runs on the host itself.
    #[arg(
        long,
        value_name = "DIR",
        env = "USERNS_HOSTNET_HOST_ROOT",
        default_value = "/host"
    )]
    pub host_root: PathBuf,
    /// The host directory the binaries go to.
    #[arg(
        long,
        value_name = "DIR",
        env = "USERNS_HOSTNET_BIN_DIR",
        default_value = "/usr/local/bin"
    )]
    pub bin_dir: PathBuf,
    /// Which daemon to register with; default: the one whose socket (else config) the host has.
    #[arg(long, value_parser = daemons(true), env = "USERNS_HOSTNET_DAEMON")]
    pub daemon: Option<&'static dyn DaemonModule>,
    /// The daemon's configuration file on the host (default as for `install`).
    #[arg(long, value_name = "PATH", env = "USERNS_HOSTNET_DAEMON_CONFIG")]
    pub daemon_config: Option<PathBuf>,
    /// The runtime handler's name.
    #[arg(long, env = "USERNS_HOSTNET_HANDLER", default_value = "userns-hostnet")]
    pub handler: String,
    /// Restart the daemon (systemctl restart UNIT, or --restart-command, in the host's root) after changing its configuration.
    #[arg(long, env = "USERNS_HOSTNET_RESTART")]
    pub restart: bool,
    /// The daemon's systemd unit (default containerd.service, crio.service).
    #[arg(long, value_name = "UNIT", env = "USERNS_HOSTNET_UNIT")]
    pub unit: Option<String>,
    /// The restart, as a shell command line run by the host's /bin/sh in
    /// the host's root, instead of `systemctl restart UNIT` (a daemon not
    /// run by systemd: OpenRC, runit, a supervisor of its own).
    #[arg(long, value_name = "COMMAND", env = "USERNS_HOSTNET_RESTART_COMMAND")]
    pub restart_command: Option<String>,
    /// On SIGTERM or SIGINT, remove the label and undo the install (throw-away clusters; the manifests never set it).
    #[arg(long, env = "USERNS_HOSTNET_CLEANUP")]
    pub cleanup: bool,
    /// The node to label (the DaemonSet passes spec.nodeName).
    #[arg(long, value_name = "NAME", env = "NODE_NAME")]
    pub node: Option<String>,
    /// Install and exit instead of waiting.
    #[arg(long, conflicts_with = "uninstall")]
    pub once: bool,
    /// Undo what an earlier deploy installed, now, and exit.
    #[arg(long)]
    pub uninstall: bool,
    /// Write nothing; exit 0 when an earlier deploy's files and handler are in place and the running daemon reading that config started after the handler was written (no daemon found: no restart pending), else 1 (the readiness probe); with --uninstall, 0 when nothing of a deploy is left.
    #[arg(long, conflicts_with = "once")]
    pub check: bool,
    /// With --uninstall: first wait while the handler has containers on the node, and afterwards for SIGTERM instead of exiting (the cleanup DaemonSet's pod).
    #[arg(long, requires = "uninstall")]
    pub wait: bool,
    /// Exit once every pod of the cleanup DaemonSet NAMESPACE/NAME is ready, saying which nodes it waits for (the chart's pre-delete hook: `helm uninstall` returns when every node is undone).
    #[arg(long, value_name = "NAMESPACE/NAME", conflicts_with_all = ["once", "uninstall", "check", "cleanup"])]
    pub await_removal: Option<String>,
    /// The directory holding the binaries to copy (default: this program's own).
    #[arg(long, value_name = "DIR", hide = true)]
    pub from: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A bundle directory, a config.json, or - for standard input.
    #[arg(default_value = ".", conflicts_with = "container")]
    pub input: PathBuf,
    /// A live container: its bundle, as the real runtime the wrapper would
    /// run reports it (`RUNTIME [--root DIR] state ID`).
    #[arg(long, value_name = "ID")]
    pub container: Option<String>,
    /// The runtime's state directory for --container (default: the
    /// runtime's own, /run/runc for runc).
    #[arg(long, value_name = "DIR", requires = "container")]
    pub root: Option<PathBuf>,
    /// One JSON document instead of text; an error too, as {"error": {...}} on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the converted spec here (as the wrapper would): the input
    /// unchanged when the wrapper leaves it alone, nothing when it would
    /// refuse the container; the output says which.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The real runtime to check (name or path); default: as the wrapper chooses.
    #[arg(long, value_name = "NAME|PATH")]
    pub runtime: Option<String>,
    /// One JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// containerd's config file, as given to `install containerd --config`
    /// (default /etc/containerd/config.toml); checked even when containerd
    /// is not running.
    #[arg(long, value_name = "PATH")]
    pub containerd_config: Option<PathBuf>,
    /// CRI-O's crio.conf, as given to `install crio --config` (default
    /// /etc/crio/crio.conf; its crio.conf.d/ next to it); checked even when
    /// CRI-O is not running.
    #[arg(long, value_name = "PATH")]
    pub crio_config: Option<PathBuf>,
    /// The containerd binary that serves the config (default: the running
    /// containerd started with that config, else containerd in PATH).
    #[arg(long, value_name = "PATH")]
    pub containerd: Option<PathBuf>,
    /// The crio binary that serves the config (default: the running crio
    /// started with that config, else crio in PATH).
    #[arg(long, value_name = "PATH")]
    pub crio: Option<PathBuf>,
    /// Check the host whose root is DIR (a staging tree, an image, a test):
    /// every path doctor reads, those named by options and in the daemons'
    /// configs included, is read under DIR.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// The daemons of the registry ([`daemon::ALL`]) as the command line's
/// values, by name; `services`: only those deploy registers with.
fn daemons(
    services: bool,
) -> impl clap::builder::TypedValueParser<Value = &'static dyn DaemonModule> {
    let names = daemon::ALL
        .iter()
        .filter(move |d| !services || d.service().is_some())
        .map(|d| d.name());
    clap::builder::PossibleValuesParser::new(names)
        .map(|name| daemon::named(&name).expect("a value the parser accepted"))
}

impl DoctorArgs {
    /// The config file and the binary named for each daemon
    /// (`--NAME-config`, `--NAME`), by the daemon's name.
    pub fn named(&self) -> [(&'static str, Option<&Path>, Option<&Path>); 2] {
        [
            (
                "containerd",
                self.containerd_config.as_deref(),
                self.containerd.as_deref(),
            ),
            ("crio", self.crio_config.as_deref(), self.crio.as_deref()),
        ]
    }
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Which daemon's configuration to edit (podman: containers.conf).
    #[arg(value_parser = daemons(false))]
    pub daemon: &'static dyn DaemonModule,
    /// The runtime handler's name.
    #[arg(long, default_value = "userns-hostnet")]
    pub handler: String,
    /// The daemon's configuration file (default /etc/containerd/config.toml,
    /// /etc/crio/crio.conf, /etc/containers/containers.conf; CRI-O's drop-in
    /// goes to crio.conf.d/ next to it).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// containerd: the handler goes into conf.d/99-userns-hostnet.toml,
    /// imported by the main config (install adds the imports line;
    /// uninstall removes the file and the line). Refused on containerd 1.x,
    /// which replaces the whole CRI plugin table with an import's.
    #[arg(long)]
    pub drop_in: bool,
    /// containerd: the binary that reads the config, whose version decides
    /// whether a drop-in is safe (default: containerd in PATH).
    #[arg(long, value_name = "PATH", default_value = "containerd")]
    pub containerd: PathBuf,
    /// Print the change as a diff; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The wrapper binary the handler runs.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "/usr/bin/userns-hostnet-runtime"
    )]
    pub wrapper: PathBuf,
    /// Where a handler's links to the wrapper and to its real runtime go (for tests).
    #[arg(long, value_name = "DIR", hide = true)]
    pub handlers_dir: Option<PathBuf>,
    /// crio, podman: the createRuntime hook definition instead of a runtime
    /// handler, written as userns-hostnet.json into the administrator's
    /// hooks directory /etc/containers/oci/hooks.d (for CRI-O, whose
    /// default reads only the vendor's, with a crio.conf.d drop-in adding
    /// it to hooks_dir), or the first under /etc of the daemon's own
    /// `hooks_dir`; it runs this program, which must be installed (not a
    /// temporary or build path: see --force); uninstall removes what
    /// install wrote while unchanged.
    #[arg(long)]
    pub hook: bool,
    /// With --hook: the hooks directory to write to, instead of the one the
    /// daemon's config names.
    #[arg(long, value_name = "DIR", requires = "hook")]
    pub hooks_dir: Option<PathBuf>,
    /// containerd, crio: make the handler the default runtime
    /// (`default_runtime_name`; CRI-O: `default_runtime` in the drop-in),
    /// noting what it was so that uninstall puts it back.
    #[arg(long, conflicts_with = "hook")]
    pub set_as_default: bool,
    /// One JSON document instead of text: each file and link with what
    /// was done to it (or, with --dry-run or --check, would be), the notes,
    /// and the restart needed; on an error, {"error": MESSAGE}.
    #[arg(long)]
    pub json: bool,
    /// Write nothing; exit 1 when the command would change something, 0
    /// when everything is already in place (for automation).
    #[arg(long, conflicts_with = "dry_run")]
    pub check: bool,
    /// Copy the main config file to FILE.bak-YYYYmmddHHMMSS before changing
    /// it (uninstall puts install's change back by itself, so none is kept
    /// unless asked for).
    #[arg(long)]
    pub backup: bool,
    /// A node's root file system (a staged image, a mounted disk): every
    /// file read or written and every link made is under DIR; the paths
    /// written into configs and links are those the node sees (without
    /// DIR). --config, --wrapper and --hooks-dir name paths on the node.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// With --hook: write this program's path into the hook definition even
    /// when it is a temporary or build path, or not root's.
    #[arg(long, requires = "hook")]
    pub force: bool,
}

/// `uninstall`: what names the registration to remove.
#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Which daemon's configuration to edit (podman: containers.conf).
    #[arg(value_parser = daemons(false))]
    pub daemon: &'static dyn DaemonModule,
    /// The runtime handler's name.
    #[arg(long, default_value = "userns-hostnet")]
    pub handler: String,
    /// The daemon's configuration file (default /etc/containerd/config.toml,
    /// /etc/crio/crio.conf, /etc/containers/containers.conf).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// containerd: remove the handler from conf.d/99-userns-hostnet.toml,
    /// the file when nothing else is left in it, and its imports line.
    #[arg(long)]
    pub drop_in: bool,
    /// Print the change as a diff; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Where a handler's links to the wrapper and to its real runtime are (for tests).
    #[arg(long, value_name = "DIR", hide = true)]
    pub handlers_dir: Option<PathBuf>,
    /// crio, podman: remove the createRuntime hook definition install wrote
    /// (while unchanged) instead of a runtime handler.
    #[arg(long)]
    pub hook: bool,
    /// With --hook: the hooks directory to remove it from, instead of the
    /// one the daemon's config names.
    #[arg(long, value_name = "DIR", requires = "hook")]
    pub hooks_dir: Option<PathBuf>,
    /// One JSON document instead of text (see install --json).
    #[arg(long)]
    pub json: bool,
    /// Write nothing; exit 1 when the command would change something, 0
    /// when nothing is left to remove (for automation).
    #[arg(long, conflicts_with = "dry_run")]
    pub check: bool,
    /// A node's root file system: every file read or removed is under DIR
    /// (see install --root).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Remove the handler even while containers of it are on the node,
    /// which uninstall otherwise refuses: they are left impossible to stop
    /// until the handler is installed again (a warning names them).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// createRuntime hook: harden and verify the container's /sys (OCI state on stdin).
    CreateRuntime,
    /// podman precreate hook: the proposed spec on stdin, the converted spec on stdout.
    Precreate,
}
