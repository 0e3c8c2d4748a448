//! `userns-hostnet deploy`: the installer image's mode. With the host's root
//! mounted, it copies the binaries onto the host, writes the config file when
//! absent, registers the runtime handler with `install`'s own planning,
//! optionally restarts the daemon, labels the node and waits; on SIGTERM in
//! cleanup mode it undoes exactly what it did.
//!
//! Every path it reads or writes is a path of the node taken under the
//! host's root ([`Host`]), as `install --root` takes them: the daemon's
//! config, its `imports`, the real runtime looked up in PATH, the handler's
//! links. Nothing of this process runs with the host's root as `/`; only
//! the restart command does, a host program run in the host's root.
//!
//! What it changed is recorded in a state file on the host
//! ([`STATE_DIR`]): for every path, what was there before the first deploy
//! (the previous bytes are kept beside the state) and what deploy left. An
//! undo restores a path only while it still holds what deploy left; a
//! daemon config edited since is undone with `uninstall`'s marker rules
//! instead. A rerun (pod restart, upgrade) keeps the first `before`, so the
//! undo still returns the host to what it was before any deploy.

mod able;
mod await_removal;
mod put;
mod restart;
pub mod undo;
use put::*;
use restart::*;
use undo::*;

use super::daemon::in_use;
use super::daemon::live::Live;
use super::deploy_api::{Api, Mark};
use super::install;
use crate::cli::DeployArgs;
use crate::daemon::{register::Registration, DaemonModule};
use crate::say;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use userns_hostnet::sys::atomic::{self, Attrs};
use userns_hostnet::sys::in_root::{InRootError, NodeRoot};

/// Where deploy keeps its state on the host.
pub const STATE_DIR: &str = "/var/lib/userns-hostnet/deploy";
/// The node label deploy sets, and the RuntimeClass selects on.
pub const LABEL: &str = "userns-hostnet.io/installed";
/// The admin tool's own file name.
pub const ADMIN_NAME: &str = "userns-hostnet";
/// The wrapper's other names, links to it, that choose the real runtime.
pub const RUNTIME_LINKS: [&str; 2] = [
    "userns-hostnet-runtime-crun",
    "userns-hostnet-runtime-youki",
];
const CONFIG_FILE: &str = "/etc/userns-hostnet/config.toml";
const STATE_FILE: &str = "state.json";

/// Why deploy stops.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Atomic(#[from] atomic::AtomicError),
    #[error(transparent)]
    Install(#[from] crate::daemon::register::error::InstallError),
    #[error(transparent)]
    NodePath(#[from] InRootError),
    #[error("{0}")]
    Usage(String),
    /// install's refusal of a node's file, its paths as the node names
    /// them (not where the host's root is mounted here).
    #[error("{0}")]
    OnNode(String),
    #[error("{command}: {why}")]
    Restart { command: String, why: String },
    #[error("waiting for a signal: {0}")]
    Signal(nix::Error),
    /// The removal, while the handler still has containers on the node.
    #[error(
        "{}; then run the removal again (deploy --uninstall, or the cleanup DaemonSet)",
        in_use_line(handler, containers)
    )]
    InUse {
        handler: String,
        containers: Vec<Live>,
    },
}

/// Why the removal waits or stops: what removing now would strand.
fn in_use_line(handler: &str, containers: &[Live]) -> String {
    format!(
        "runtime handler {handler} still has {n} container(s) on this node: {list}; the registration stays (removing it would leave them impossible to stop): {drain}",
        n = containers.len(),
        list = in_use::listing(containers),
        drain = in_use::DRAIN,
    )
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> DeployError + 'a {
    move |source| DeployError::Io {
        what,
        path: path.to_owned(),
        source,
    }
}

/// The node's root as this process reaches it (the hostPath mount, or `/`
/// on the node itself): a node's path is resolved under it as the node
/// resolves it ([`NodeRoot`]).
pub struct Host {
    node: NodeRoot,
}

impl Host {
    /// The host root `dir`, resolved: a directory.
    pub fn open(dir: &Path) -> Result<Host, DeployError> {
        let node = NodeRoot::new(Some(dir)).map_err(io("cannot open the host root", dir))?;
        if !node.root().unwrap_or(Path::new("/")).is_dir() {
            return Err(DeployError::Usage(format!(
                "--host-root {}: not a directory",
                dir.display()
            )));
        }
        Ok(Host { node })
    }

    /// Where the node's file `node` is here, read through the node's links
    /// (a config, a socket, a directory looked into).
    pub fn file(&self, node: &Path) -> Result<PathBuf, DeployError> {
        Ok(self.node.file(node)?)
    }

    /// [`Host::file`] for a search that reads what it can: a path that
    /// cannot be resolved comes back as a name no file has.
    pub fn found(&self, node: &Path) -> PathBuf {
        self.file(node)
            .unwrap_or_else(|_| PathBuf::from(format!("{} (unresolved)", node.display())))
    }

    /// Where the node's own entry `node` is here (a binary, a link, the
    /// state), made, replaced or removed as itself.
    pub fn entry(&self, node: &Path) -> Result<PathBuf, DeployError> {
        Ok(self.node.entry(node)?)
    }

    /// The node's path of `here` (a path under the root).
    fn node_path(&self, here: &Path) -> PathBuf {
        self.node.node_path(here)
    }

    /// install's `--root`: none on the node itself.
    fn install_root(&self) -> Option<PathBuf> {
        self.node.root().map(Path::to_owned)
    }

    /// An error of install's planning under the host's root, its paths
    /// as the node names them.
    fn on_node(&self, e: crate::daemon::register::error::InstallError) -> DeployError {
        let text = e.to_string();
        match self.install_root() {
            Some(root) => DeployError::OnNode(text.replace(&format!("{}/", root.display()), "/")),
            None => DeployError::Install(e),
        }
    }
}

/// The image side, read before the chroot.
struct Source {
    wrapper: Vec<u8>,
    admin: Vec<u8>,
}

fn read_source(args: &DeployArgs) -> Result<Source, DeployError> {
    let dir = match &args.from {
        Some(d) => d.clone(),
        None => {
            let exe =
                std::env::current_exe().map_err(io("cannot find", Path::new("/proc/self/exe")))?;
            exe.parent()
                .map(Path::to_owned)
                .unwrap_or_else(|| PathBuf::from("/"))
        }
    };
    let read = |name: &str| {
        let p = dir.join(name);
        std::fs::read(&p).map_err(io("cannot read", &p))
    };
    Ok(Source {
        wrapper: read(userns_hostnet::WRAPPER_NAME)?,
        admin: read(ADMIN_NAME)?,
    })
}

/// Run `deploy`: the exit status.
pub fn run(args: &DeployArgs) -> Result<i32, DeployError> {
    if let Some(target) = &args.await_removal {
        return await_removal::run(target);
    }
    if !args.bin_dir.is_absolute() {
        return Err(DeployError::Usage(format!(
            "--bin-dir {}: must be an absolute path on the host",
            args.bin_dir.display()
        )));
    }
    // Blocked before anything starts, so that a SIGTERM during the install
    // waits for sigwait below instead of killing a half-done install.
    let signals = {
        use nix::sys::signal::{SigSet, Signal};
        let s = SigSet::from_iter([Signal::SIGTERM, Signal::SIGINT]);
        s.thread_block().map_err(DeployError::Signal)?;
        s
    };
    let host = Host::open(&args.host_root)?;
    if args.check {
        let (ready, why) = check(&host, args, args.uninstall)?;
        say(&why);
        return Ok(i32::from(!ready));
    }
    let source = (!args.uninstall).then(|| read_source(args)).transpose()?;
    let api = Api::from_pod(args.node.as_deref());
    if args.uninstall {
        // The label goes first: no new pod of the handler lands here
        // while the removal waits for those that run.
        label(&api, Mark::Removed);
        if args.wait && !wait_until_unused(&host, args, &signals)? {
            return Ok(0);
        }
        undo(&host, args)?;
        if args.wait {
            say("removed; waiting (delete the cleanup DaemonSet when every node is done)");
            let sig = signals.wait().map_err(DeployError::Signal)?;
            say(&format!("{sig}: stopping"));
        }
        return Ok(0);
    }
    let Some(source) = source else {
        return Ok(0);
    };
    let (daemon, config) = install_all(&host, args, &source)?;
    match able::why_unable(&host, args, (daemon, &config), &args.handler) {
        None => label(&api, Mark::Able),
        Some(why) => {
            say(&format!(
                "this node cannot run pods with hostNetwork: true and hostUsers: false through handler {}: {why}",
                args.handler
            ));
            label(&api, Mark::Unable(why));
        }
    }
    if args.once {
        return Ok(0);
    }
    say(if args.cleanup {
        "installed; waiting for SIGTERM to undo it"
    } else {
        "installed; waiting (the install stays when this stops: a rollout replaces it, `deploy --uninstall` removes it)"
    });
    let sig = signals.wait().map_err(DeployError::Signal)?;
    say(&format!("{sig}: stopping"));
    if args.cleanup {
        label(&api, Mark::Removed);
        undo(&host, args)?;
    }
    Ok(0)
}

fn label(api: &Api, mark: Mark) {
    match api.mark(LABEL, able::WHY_NOT, mark) {
        Ok(line) | Err(line) => say(&line),
    }
}

/// The readiness probe: whether an earlier deploy's every file is in
/// place and its handler live (no restart pending), or with `removed`,
/// whether nothing of a deploy is left. The line says why.
fn check(host: &Host, args: &DeployArgs, removed: bool) -> Result<(bool, String), DeployError> {
    let state = load_state(host)?;
    if removed {
        return Ok(match state {
            None => (true, "removed: no deploy state on this host".into()),
            Some(s) => (
                false,
                format!(
                    "not removed: handler {} is still deployed ({})",
                    s.handler,
                    Path::new(STATE_DIR).join(STATE_FILE).display()
                ),
            ),
        });
    }
    let Some(state) = state else {
        return Ok((false, "not registered: no deploy state on this host".into()));
    };
    let configs = owned_configs(host, args, &state);
    if let Some(e) = state.entries.iter().find(|e| match configs.get(&e.path) {
        // A daemon config is shared with the operator and other tools:
        // what deploy owns there is its handler, as install plans it.
        Some(in_place) => !in_place,
        None => host.entry(&e.path).ok().and_then(|p| current(&p)).as_ref() != Some(&e.after),
    }) {
        return Ok((
            false,
            format!("not registered: {} changed since deploy", e.path.display()),
        ));
    }
    if let Some((path, _)) = configs.iter().find(|(_, in_place)| !**in_place) {
        return Ok((
            false,
            format!(
                "not registered: handler {} is not in place in {}",
                state.handler,
                path.display()
            ),
        ));
    }
    let registered = format!(
        "handler {} with {} in {}",
        state.handler,
        state.daemon,
        state.daemon_config.display()
    );
    Ok(match served(host, &state) {
        Served::Yes(pid) => (
            true,
            format!("registered and served: {registered} (pid {pid} started after it was written)"),
        ),
        Served::Stale(pid) => (
            false,
            format!(
                "not served: {registered}, but {} (pid {pid}) started before it was written: restart it",
                state.daemon
            ),
        ),
        Served::Unknown(why) if state.restart_pending => (
            false,
            format!(
                "not registered: {} must be restarted for handler {} to take effect ({why})",
                state.daemon, state.handler
            ),
        ),
        Served::Unknown(why) => (true, format!("registered: {registered} ({why})")),
    })
}

/// Whether the running daemon has read the handler deploy wrote.
enum Served {
    /// The daemon that reads the config (this pid) started after the
    /// write, or the host has booted since.
    Yes(u32),
    /// It started before the write: it serves the config as it was.
    Stale(u32),
    /// Not known (the reason): no running daemon is found reading that
    /// file (a k3s or RKE2 template, whose daemon reads the file made
    /// from it; processes out of sight), or a state of an earlier version.
    Unknown(&'static str),
}

fn served(host: &Host, state: &State) -> Served {
    let Some(written) = &state.registered else {
        return Served::Unknown("no time of registration in the deploy state");
    };
    let Some((pid, started)) =
        crate::daemon::binary::started(state.daemon(), &state.daemon_config, &|p| host.found(p))
    else {
        return Served::Unknown("no running daemon found reading that file");
    };
    let Some(now) = Moment::now() else {
        return Served::Unknown("the host's boot ID or clock cannot be read");
    };
    // A start time is rounded down to a tick: one tick of slack, so that
    // a restart in the tick of the write still counts.
    if now.boot_id != written.boot_id || started + 1 >= written.ticks {
        Served::Yes(pid)
    } else {
        Served::Stale(pid)
    }
}

/// The daemon config files install would change for the deployed
/// handler (node paths), each with whether what deploy owns in it is in
/// place: install plans no change there. Another tool's table appended
/// to the same file leaves the handler in place; a handler taken out or
/// edited does not. A config install cannot plan counts as changed.
fn owned_configs(
    host: &Host,
    args: &DeployArgs,
    state: &State,
) -> std::collections::BTreeMap<PathBuf, bool> {
    let iargs = deployed(host, args, state);
    let planned = state.daemon().plan(&iargs, true);
    let mut owned = std::collections::BTreeMap::new();
    match planned {
        Ok(plan) => {
            for c in &plan.files {
                owned.insert(host.node_path(&c.path), c.old == c.new);
            }
        }
        Err(_) => {
            owned.insert(state.daemon_config.clone(), false);
        }
    }
    owned
}

fn is_socket(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(p).is_ok_and(|m| m.file_type().is_socket())
}

/// The daemon named, else the one whose socket exists, else the one whose
/// config exists; two or none is an error asking to name it.
pub fn detect_daemon(
    host: &Host,
    named: Option<&'static dyn DaemonModule>,
) -> Result<&'static dyn DaemonModule, DeployError> {
    if let Some(d) = named {
        return Ok(d);
    }
    // A path that cannot be resolved is taken as absent.
    let at = |p: &str| host.file(Path::new(p)).unwrap_or_default();
    let only = |found: &dyn Fn(&crate::daemon::Service) -> bool| {
        let mut hits = crate::daemon::services().filter(|(_, s)| found(s));
        match (hits.next(), hits.next()) {
            (Some((d, _)), None) => Some(d),
            _ => None,
        }
    };
    only(&|s| is_socket(&at(s.socket)))
        .or_else(|| {
            only(&|s| at(s.config).is_file() || s.drop_ins.is_some_and(|d| at(d).is_dir()))
        })
        .ok_or_else(|| {
            DeployError::Usage(
                "cannot tell whether this node runs containerd or CRI-O (both or neither found): set USERNS_HOSTNET_DAEMON".into(),
            )
        })
}

fn daemon_parts(
    args: &DeployArgs,
    daemon: &'static dyn DaemonModule,
) -> (&'static str, PathBuf, String) {
    let service = daemon
        .service()
        .expect("deploy registers only with a service");
    (
        daemon.name(),
        args.daemon_config
            .clone()
            .unwrap_or_else(|| service.config.into()),
        args.unit.clone().unwrap_or_else(|| service.unit.into()),
    )
}

/// The registration deploy plans: install's, of the handler it
/// deploys, under the host's root.
fn registration(
    host: &Host,
    args: &DeployArgs,
    daemon: &'static dyn DaemonModule,
    config: &Path,
) -> Registration {
    Registration {
        config: Some(config.to_owned()),
        wrapper: args.bin_dir.join(userns_hostnet::WRAPPER_NAME),
        // Named, not defaulted: deploy always registers on the node it
        // runs on, so install's guard against host links for a copied
        // config does not apply.
        handlers_dir: Some(userns_hostnet::runtime::handlers_dir()),
        root: host.install_root(),
        ..Registration::new(daemon, &args.handler)
    }
}

/// The registration the deploy recorded in `state` (its daemon, config
/// file and handler, whatever this run's environment names).
fn deployed(host: &Host, args: &DeployArgs, state: &State) -> Registration {
    Registration {
        handler: state.handler.clone(),
        ..registration(host, args, state.daemon(), &state.daemon_config)
    }
}

/// The install, under the host's root: binaries, links, config file,
/// handler; a restart when asked and one is due. The steps go in the
/// order that keeps the node working, each recorded for the undo before
/// it is made.
fn install_all(
    host: &Host,
    args: &DeployArgs,
    source: &Source,
) -> Result<(&'static dyn DaemonModule, PathBuf), DeployError> {
    let daemon = detect_daemon(host, args.daemon)?;
    let (name, config, unit) = daemon_parts(args, daemon);
    let earlier = load_state(host)?;
    refuse_another_registration(earlier.as_ref(), args, name, &config)?;
    // install's own planning, under the host's root, before anything is
    // written: a config install refuses (k3s's generated file, a template)
    // leaves the node as it was. Its paths come back as they are here,
    // and are recorded as the node's.
    let iargs = registration(host, args, daemon, &config);
    let plan = daemon.plan(&iargs, true).map_err(|e| host.on_node(e))?;
    let mut state = match earlier {
        Some(s) => s,
        None => {
            let mut s = State::default();
            make_dirs(host, &mut s, Path::new(STATE_DIR))?;
            s
        }
    };
    state.daemon = name.into();
    state.handler = args.handler.clone();
    state.daemon_config = config.clone();
    state.unit = unit.clone();
    save_state(host, &state)?;

    put_binaries(host, &mut state, args, source)?;
    let changed = register_handler(host, &mut state, args, &plan)?;
    if !changed && plan.files.iter().all(|c| c.old == c.new) {
        say(&format!(
            "runtime handler {} already registered in {}",
            args.handler,
            config.display()
        ));
    }
    if state.restart_pending {
        if args.restart {
            restart(host, args, &unit)?;
            state.restart_pending = false;
            save_state(host, &state)?;
        } else {
            say(&format!(
                "{name} must be restarted for the handler to take effect (USERNS_HOSTNET_RESTART=true does it: {})",
                shown(&restart_command(args, &unit))
            ));
        }
    }
    Ok((daemon, config))
}

/// Refused: a deploy with another daemon, handler or config file than an
/// earlier one's, whose undo would then no longer match what is on the
/// node.
fn refuse_another_registration(
    earlier: Option<&State>,
    args: &DeployArgs,
    name: &str,
    config: &Path,
) -> Result<(), DeployError> {
    if let Some(state) = earlier.filter(|s| {
        !s.daemon.is_empty()
            && (s.daemon != name || s.handler != args.handler || s.daemon_config != config)
    }) {
        return Err(DeployError::Usage(format!(
            "an earlier deploy registered handler {} with {} in {}; undo it first (deploy --uninstall) to change daemon, handler or config file",
            state.handler,
            state.daemon,
            state.daemon_config.display()
        )));
    }
    Ok(())
}

/// The containers of the deployed handler on the node, as uninstall
/// finds them ([`install::uninstall::containers_in_use`]).
fn containers_of(host: &Host, args: &DeployArgs, state: &State) -> Result<Vec<Live>, DeployError> {
    Ok(install::uninstall::containers_in_use(&deployed(
        host, args, state,
    ))?)
}

/// How often the removal looks again at the handler's containers.
const IN_USE_POLL: std::time::Duration = std::time::Duration::from_secs(5);

/// `--uninstall --wait` (the cleanup DaemonSet): wait until the deployed
/// handler has no container on the node, saying which it waits for
/// (again when that changes); false when a signal of `signals` ends the
/// wait, which leaves everything in place.
fn wait_until_unused(
    host: &Host,
    args: &DeployArgs,
    signals: &nix::sys::signal::SigSet,
) -> Result<bool, DeployError> {
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    let fd = SignalFd::with_flags(signals, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(DeployError::Signal)?;
    let mut said: Option<Vec<Live>> = None;
    loop {
        let Some(state) = load_state(host)? else {
            return Ok(true);
        };
        let containers = containers_of(host, args, &state)?;
        if containers.is_empty() {
            return Ok(true);
        }
        if said.as_ref() != Some(&containers) {
            say(&format!(
                "waiting: {}; the removal goes on once they are gone",
                in_use_line(&state.handler, &containers)
            ));
            said = Some(containers);
        }
        if let Some(sig) = fd.read_signal().map_err(DeployError::Signal)? {
            say(&format!(
                "signal {}: stopping; nothing removed",
                sig.ssi_signo
            ));
            return Ok(false);
        }
        std::thread::sleep(IN_USE_POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips() {
        let s = State {
            format: STATE_FORMAT,
            daemon: "containerd".into(),
            handler: "h".into(),
            daemon_config: "/etc/containerd/config.toml".into(),
            unit: "containerd.service".into(),
            entries: vec![Entry {
                path: "/usr/local/bin/x".into(),
                daemon_config: false,
                before: Before::File {
                    saved: "saved-0".into(),
                    mode: 0o755,
                    uid: 0,
                    gid: 0,
                },
                after: after_file(b"new"),
            }],
            created_dirs: vec!["/var/lib/userns-hostnet".into()],
            restart_pending: true,
            registered: Moment::now(),
        };
        assert!(s.registered.is_some(), "no boot ID or clock");
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"kind\":\"file\""), "{text}");
        assert_eq!(serde_json::from_str::<State>(&text).unwrap(), s);
        // A state an earlier version wrote, without the time of the
        // registration, is read as not knowing it.
        let earlier = text.replace(
            &format!(
                ",\"registered\":{}",
                serde_json::to_string(&s.registered).unwrap()
            ),
            "",
        );
        assert!(!earlier.contains("registered\""), "{earlier}");
        let read = serde_json::from_str::<State>(&earlier).unwrap();
        assert_eq!(read.registered, None);
        assert_eq!(read.entries, s.entries);
        // One before the format's number: format 1.
        let unnumbered = earlier.replace("\"format\":1,", "");
        assert!(!unnumbered.contains("format"), "{unnumbered}");
        assert_eq!(
            serde_json::from_str::<State>(&unnumbered).unwrap().format,
            1
        );
    }

    /// A state of a newer format is refused, naming the file and why,
    /// rather than undone as this version reads it.
    #[test]
    fn a_state_of_a_newer_format_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let host = Host::open(root.path()).unwrap();
        let dir = root.path().join(STATE_DIR.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).unwrap();
        let mut newer = serde_json::to_value(State::default()).unwrap();
        newer["format"] = serde_json::json!(STATE_FORMAT + 1);
        std::fs::write(dir.join(STATE_FILE), newer.to_string()).unwrap();
        let e = load_state(&host).unwrap_err().to_string();
        assert!(
            e.contains(STATE_FILE) && e.contains("is of a newer version"),
            "{e}"
        );
        save_state(&host, &State::default()).unwrap();
        assert_eq!(load_state(&host).unwrap().unwrap().format, STATE_FORMAT);
    }

    /// install's refusal reaches the pod's log as install words it.
    #[test]
    fn an_install_error_keeps_its_line() {
        let missing = Path::new("/nonexistent/config.toml");
        let e = DeployError::from(crate::daemon::register::error::InstallError::from(
            crate::daemon::register::error::DaemonConfigError::NoContainerdConfig(
                missing.to_owned(),
            ),
        ));
        assert_eq!(
            e.to_string(),
            "/nonexistent/config.toml: no such file; write containerd's defaults first (containerd config default > /nonexistent/config.toml)"
        );
    }

    #[test]
    fn node_paths_map_under_the_host_root() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::open(dir.path()).unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let here = host
            .entry(Path::new("/etc/containerd/config.toml"))
            .unwrap();
        assert_eq!(here, root.join("etc/containerd/config.toml"));
        assert_eq!(
            host.node_path(&here),
            Path::new("/etc/containerd/config.toml")
        );
        assert_eq!(host.install_root(), Some(root.clone()));
        // The node's absolute link resolves inside the host root: the
        // config read and written is the node's target, the link kept as
        // an entry.
        std::fs::create_dir_all(root.join("etc/containerd")).unwrap();
        std::fs::create_dir_all(root.join("etc/k0s")).unwrap();
        std::fs::write(root.join("etc/k0s/containerd.toml"), "").unwrap();
        std::os::unix::fs::symlink("/etc/k0s/containerd.toml", &here).unwrap();
        let config = Path::new("/etc/containerd/config.toml");
        let file = host.file(config).unwrap();
        assert_eq!(file, root.join("etc/k0s/containerd.toml"));
        assert_eq!(host.node_path(&file), Path::new("/etc/k0s/containerd.toml"));
        assert_eq!(host.entry(config).unwrap(), here);
        let slash = Host::open(Path::new("/")).unwrap();
        assert_eq!(
            slash.entry(Path::new("/usr/bin/x")).unwrap(),
            Path::new("/usr/bin/x")
        );
        assert_eq!(slash.install_root(), None);
    }

    #[test]
    fn current_tells_files_and_links_apart() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "abc").unwrap();
        let l = dir.path().join("l");
        std::os::unix::fs::symlink("f", &l).unwrap();
        assert_eq!(current(&f), Some(after_file(b"abc")));
        assert_ne!(current(&f), Some(after_file(b"abd")));
        assert_eq!(current(&l), Some(After::Link { target: "f".into() }));
        assert_eq!(current(&dir.path().join("none")), None);
    }
}
