//! A private CRI-O 1.36.3 for tests/e2e_crio.rs, driven through crictl the
//! way the kubelet drives it (tests/common/crictl.rs, the client
//! containerd's driver uses, with the requests of tests/common/cri.rs).
//!
//! Debian has no CRI-O: `scripts/cri-tools.sh` unpacks crio, pinns, crictl
//! and copyimg from ../shared/tools/cri-o-1.36.3 into `target/cri-o`; conmon
//! is Debian's. Everything the daemon writes lives under one directory in
//! /tmp named after the test process (storage root and runroot with the vfs
//! driver, socket, pinned namespaces, exit files, runc root of the plain
//! handler, logs), and it runs in a private mount namespace whose /sys looks
//! like a node's (bpffs, securityfs, a pure cgroup v2 view: SYS_VIEW_SCRIPT).
//!
//! Two handlers: `runc`, CRI-O's default, runc 1.1.5 behind a test-only step
//! (below); and `userns-hostnet`, registered by running `userns-hostnet
//! install crio` on this daemon's config, which copies `runc`'s
//! `runtime_path` as the wrapper's real runtime through the handler's links.
//! [`Crio::start_matrix`] adds the version matrix's: runc 1.4.3 and crun
//! 1.8.1, each alone and behind the wrapper ([`matrix_handler`]).
//!
//! Images: the pause and app images of tests/common/cri.rs, put into CRI-O's
//! storage by copyimg from the same docker-archive (no registry).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

use super::containerd::{processes_naming, write_script};
use super::cri::{self, APP_IMAGE, PAUSE_IMAGE};
use super::crictl::{Crictl, Daemon};
use super::{find_in_path, run_capture, Runtime, SYS_VIEW_SCRIPT, WRAPPER};

/// The admin tool: `install crio`, and the hook.
pub const TOOL: &str = super::TOOL;

/// Every daemon directory starts with this, then the test process's pid.
const DIR_PREFIX: &str = "uhn-crio-";

/// The drop-in `userns-hostnet install crio` writes next to `--config`.
pub const INSTALL_DROP_IN: &str = "crio.conf.d/99-userns-hostnet.conf";

const FETCH_HINT: &str = "run `scripts/cri-tools.sh` (make test does): it unpacks crio, \
     pinns, crictl and copyimg from ../shared/tools/cri-o-1.36.3 into target/cri-o";

/// The runtime handlers (`crictl runp --runtime NAME`).
pub mod handler {
    /// runc 1.1.5, CRI-O's default handler.
    pub const RUNC: &str = "runc";
    /// What `userns-hostnet install crio` registers.
    pub const WRAPPER: &str = "userns-hostnet";
}

/// The version matrix's handlers ([`Crio::start_matrix`]): each real
/// runtime alone and behind the wrapper, which finds it through its
/// handler's link as `install crio` lays them out. The runc 1.1.5 pair is
/// [`handler::RUNC`] and [`handler::WRAPPER`].
pub mod matrix_handler {
    /// runc 1.4.3 (target/containerd-2.3/runc).
    pub const RUNC_14: &str = "runc14";
    /// The wrapper onto runc 1.4.3.
    pub const WRAPPER_RUNC_14: &str = "userns-hostnet-runc14";
    /// crun 1.8.1 with the spec as CRI-O wrote it.
    pub const CRUN: &str = "crun";
    /// crun 1.8.1 behind a test-only step that lowers the spec's
    /// `ociVersion` to one crun 1.8.1 accepts.
    pub const CRUN_STEPPED: &str = "crun-stepped";
    /// The wrapper onto crun 1.8.1, with the same version step after it.
    pub const WRAPPER_CRUN: &str = "userns-hostnet-crun";
    /// crun 1.27.1 (target/crun-1.27.1/crun), which reads any spec version.
    pub const CRUN_127: &str = "crun127";
    /// The wrapper onto crun 1.27.1.
    pub const WRAPPER_CRUN_127: &str = "userns-hostnet-crun127";
}

/// CRI-O's `drop_infra_ctr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `true`, CRI-O's default: pinns makes the pod's namespaces and no
    /// pause container runs.
    DropInfra,
    /// `false`: a pause container runs and joins what pinns pinned.
    InfraContainer,
}

impl Mode {
    fn drop_infra_ctr(self) -> bool {
        self == Mode::DropInfra
    }
}

/// What CRI-O's `hooks_dir` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hooks {
    /// Nothing.
    None,
    /// hooks.d/userns-hostnet.json as the packages ship it to
    /// /usr/share/containers/oci/hooks.d/, with its `path` pointed at the
    /// built tool (CRI-O refuses to start when a hook's path is missing)
    /// and this daemon's wrapper config in its environment.
    Shipped,
    /// The same plus the podman-only precreate definition, which CRI-O
    /// must refuse.
    WithPrecreate,
}

fn tools_dir() -> PathBuf {
    cri::crictl_path()
        .parent()
        .expect("crictl lies in a directory")
        .to_path_buf()
}

fn tool(name: &str) -> PathBuf {
    let p = tools_dir().join(name);
    assert!(p.is_file(), "{name} is missing at {p:?}: {FETCH_HINT}");
    p
}

fn system_tool(name: &str, hint: &str) -> PathBuf {
    find_in_path(name).unwrap_or_else(|| panic!("`{name}` is missing: {hint}"))
}

/// A started CRI-O, driven through its [`Crictl`] (which it derefs to).
pub struct Crio {
    dir: Option<TempDir>,
    path: PathBuf,
    child: Option<Child>,
    /// Holds the daemon's mount namespace (the node's, to CRI-O) across
    /// restarts: pinns pins the pods' namespaces there.
    namespace: Child,
    mode: Mode,
    /// Keeps the ids of every pod and container this daemon made: the
    /// wrapper's runtime root (`/run/userns-hostnet-runtime`, as install
    /// writes it) is shared with other daemons, so leftovers are looked
    /// for by id.
    crictl: Crictl,
    stopped: bool,
}

impl std::ops::Deref for Crio {
    type Target = Crictl;

    fn deref(&self) -> &Crictl {
        &self.crictl
    }
}

impl Daemon for Crio {
    fn leftovers(&self) -> Vec<String> {
        Crio::leftovers(self)
    }

    fn stop(&mut self) -> Vec<String> {
        Crio::stop(self)
    }
}

impl Crio {
    /// Starts CRI-O in `mode` with an empty hooks directory.
    pub fn start(mode: Mode) -> Crio {
        Crio::launch(mode, Hooks::None).unwrap_or_else(|log| panic!("CRI-O did not start:\n{log}"))
    }

    /// Prepares the daemon's directory, registers the wrapper with `install
    /// crio`, copies the images and starts CRI-O; Err(its log) when it
    /// exits or does not answer within 30 s.
    pub fn launch(mode: Mode, hooks: Hooks) -> Result<Crio, String> {
        Crio::launch_with(mode, hooks, false)
    }

    /// Starts CRI-O in `mode` with the version matrix's handlers too
    /// ([`matrix_handler`]).
    pub fn start_matrix(mode: Mode) -> Crio {
        Crio::launch_with(mode, Hooks::None, true)
            .unwrap_or_else(|log| panic!("CRI-O did not start:\n{log}"))
    }

    /// As `start_matrix`, with runc 1.4.3 behind the default handler `runc`
    /// (and so behind `userns-hostnet`, and what install derives from the
    /// default handler): a handler CRI-O says supports user namespaces.
    /// Its mount namespace's `/` is shared, as systemd makes a node's: CRI-O
    /// mounts a hostPath that holds its storage root (deploy/'s `/`) with
    /// HostToContainer whatever the pod asks, and refuses it from a `/` that
    /// is neither shared nor slave.
    pub fn start_node_on_runc_14(mode: Mode) -> Crio {
        Crio::launch_on(mode, Hooks::None, true, &cri::runc_14_path(), (true, None))
            .unwrap_or_else(|log| panic!("CRI-O did not start:\n{log}"))
    }

    /// As `start_node_on_runc_14`, on a node apart: its own network
    /// namespace (only loopback, up, until a link is added: see
    /// `common::netns::Link`) and UTS namespace, named `hostname`. Its
    /// pods with the host's network get that namespace.
    pub fn start_node_apart(mode: Mode, hostname: &str) -> Crio {
        Crio::launch_on(
            mode,
            Hooks::None,
            true,
            &cri::runc_14_path(),
            (true, Some(hostname)),
        )
        .unwrap_or_else(|log| panic!("CRI-O did not start:\n{log}"))
    }

    fn launch_with(mode: Mode, hooks: Hooks, matrix: bool) -> Result<Crio, String> {
        Crio::launch_on(mode, hooks, matrix, &Runtime::Runc.path(), (false, None))
    }

    /// Starts CRI-O with `runc` (the real one) behind its default handler,
    /// `/` shared in its mount namespace when `shared_root`, in network and
    /// UTS namespaces of its own when `apart` names its host.
    fn launch_on(
        mode: Mode,
        hooks: Hooks,
        matrix: bool,
        runc: &Path,
        (shared_root, apart): (bool, Option<&str>),
    ) -> Result<Crio, String> {
        super::require_prerequisites(Runtime::Runc);
        let crio = tool("crio");
        tool("pinns");
        cri::crictl_path();
        tool("crictl");
        system_tool("conmon", "install the Debian package conmon");
        system_tool("jq", "install the Debian package jq");
        clean_leftovers();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
            .tempdir_in("/tmp")
            .expect("create the CRI-O directory");
        let d = dir.path().to_path_buf();
        fs::create_dir_all(d.join("hooks")).unwrap();
        fs::create_dir_all(d.join("cni/net.d")).unwrap();
        fs::create_dir_all(d.join("cni/bin")).unwrap();
        fs::write(
            d.join("policy.json"),
            r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
        )
        .unwrap();
        fs::write(
            d.join("wrapper.toml"),
            format!(
                "[log]\nfile = {:?}\n",
                d.join("decisions.log").display().to_string()
            ),
        )
        .unwrap();
        write_runc_step(&d, runc, shared_root);
        fs::write(d.join("crio.conf"), crio_config(&d, mode)).unwrap();
        register_wrapper(&d);
        if matrix {
            write_matrix_handlers(&d);
        }
        write_hooks(&d, hooks);
        copy_images(&d);
        let crictl = Crictl::new(&d, &d.join("crio.sock"));

        let namespace = spawn_namespace(shared_root, apart);
        let child = spawn_crio(&crio, &d, namespace.id());
        let mut daemon = Crio {
            dir: Some(dir),
            path: d,
            child: Some(child),
            namespace,
            mode,
            crictl,
            stopped: false,
        };
        daemon.wait_serving()?;
        Ok(daemon)
    }

    /// The pid holding CRI-O's mount namespace: a mount made there is one
    /// the node makes.
    pub fn namespace_pid(&self) -> u32 {
        self.namespace.id()
    }

    /// Waits until the CRI answers; the log when the daemon exited or 30 s
    /// passed.
    fn wait_serving(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.crictl(&["version"]).success() {
                return Ok(());
            }
            let exited = self
                .child
                .as_mut()
                .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))));
            if exited || Instant::now() > deadline {
                return Err(self.log());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Imports a docker-archive image of `tar` into the daemon's store
    /// under `name` (containers/storage locks it against the running
    /// daemon).
    pub fn import_image(&self, tar: &Path, name: &str) {
        let out = run_capture(
            Command::new(tool("copyimg"))
                .arg("--root")
                .arg(self.path.join("root"))
                .arg("--runroot")
                .arg(self.path.join("runroot"))
                .args(["--storage-driver", "vfs", "--signature-policy"])
                .arg(self.path.join("policy.json"))
                .args(["--image-name", name, "--import-from"])
                .arg(format!("docker-archive:{}", tar.display())),
        );
        assert!(out.success(), "copyimg {name} failed\n{}", out.describe());
    }

    /// Stops the daemon (SIGTERM, as systemd does; its pods' monitors and
    /// containers stay) and starts it again on the same files.
    pub fn restart(&mut self) {
        let mut child = self.child.take().expect("the daemon runs");
        super::process::terminate(&mut child);
        self.child = Some(spawn_crio(&tool("crio"), &self.path, self.namespace.id()));
        if let Err(log) = self.wait_serving() {
            panic!("CRI-O did not start again:\n{log}");
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn dir(&self) -> &Path {
        &self.path
    }

    /// The daemon's log, for failure messages.
    pub fn log(&self) -> String {
        fs::read_to_string(self.path.join("crio.log")).unwrap_or_default()
    }

    /// The handler table `install crio` wrote, as CRI-O reads it.
    pub fn installed_drop_in(&self) -> String {
        fs::read_to_string(self.path.join(INSTALL_DROP_IN)).unwrap_or_default()
    }

    /// The OCI spec CRI-O wrote for a container or pause container, as the
    /// runtime left it (the wrapper rewrites it in place).
    pub fn bundle_spec(&self, id: &str) -> Value {
        let path = self
            .path
            .join("runroot/vfs-containers")
            .join(id)
            .join("userdata/config.json");
        let text = fs::read(&path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
        serde_json::from_slice(&text).expect("config.json is JSON")
    }

    /// What is left after every pod was removed: pods and containers CRI-O
    /// knows, runtime state of this daemon's ids under either handler's
    /// root, mounts under this directory in CRI-O's mount namespace (pinned
    /// namespaces, container rootfs, shm), conmon processes. conmon exits
    /// shortly after its container: allow it 5 s.
    pub fn leftovers(&self) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = self.leftovers_now();
            if left.is_empty() || Instant::now() > deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn leftovers_now(&self) -> Vec<String> {
        let mut left: Vec<String> = self
            .pods()
            .into_iter()
            .map(|p| format!("pod {p}"))
            .collect();
        left.extend(
            self.containers()
                .into_iter()
                .map(|c| format!("container {c}")),
        );
        left.extend(
            self.runtime_states()
                .into_iter()
                .map(|s| format!("runtime state {}", s.display())),
        );
        left.extend(
            self.converted_records()
                .into_iter()
                .map(|r| format!("the wrapper's record of {r}")),
        );
        left.extend(
            self.mounts_in_dir()
                .into_iter()
                .map(|m| format!("mount {m}")),
        );
        left.extend(
            self.monitors()
                .into_iter()
                .map(|(pid, cmd)| format!("process {pid}: {cmd}")),
        );
        left
    }

    /// Runtime state directories of this daemon's ids.
    pub fn runtime_states(&self) -> Vec<PathBuf> {
        let ids = self.crictl.ids();
        // Every handler's root here is `runc-NAME` (the matrix adds some).
        let mut roots: Vec<PathBuf> = fs::read_dir(&self.path)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| e.file_name().to_string_lossy().starts_with("runc-"))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        roots.push(self.path.join("runc-runc"));
        roots.sort();
        roots.dedup();
        roots.push(PathBuf::from(WRAPPER_RUNTIME_ROOT));
        let mut found = Vec::new();
        for root in roots {
            for id in &ids {
                let p = root.join(id);
                if p.exists() {
                    found.push(p);
                }
            }
        }
        found
    }

    /// The wrapper's records of converted containers (src/records.rs) for
    /// this daemon's ids: each goes once its container is gone.
    pub fn converted_records(&self) -> Vec<String> {
        let ids = self.crictl.ids();
        userns_hostnet::records::Records::system()
            .all()
            .into_iter()
            .filter(|r| ids.iter().any(|id| r.id == id.as_str()))
            .map(|r| format!("{} ({:?})", r.id.to_string_lossy(), r.stage))
            .collect()
    }

    /// Mount points under the daemon's directory in its mount namespace.
    pub fn mounts_in_dir(&self) -> Vec<String> {
        let pid = self.namespace.id();
        let text = fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
        let prefix = format!("{}/", self.path.display());
        super::parse_mountinfo(&text)
            .into_iter()
            .map(|m| m.mount_point)
            .filter(|p| p.starts_with(&prefix))
            .collect()
    }

    /// Processes other than the daemon whose command line names this
    /// directory: conmon (and anything it left running).
    pub fn monitors(&self) -> Vec<(u32, String)> {
        let own = self.child.as_ref().map(Child::id);
        processes_naming(&self.path)
            .into_iter()
            .filter(|(pid, _)| Some(*pid) != own)
            .collect()
    }

    /// Removes every pod through the CRI and stops the daemon; returns what
    /// had to be killed or deleted by force afterwards.
    pub fn stop(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.stopped, true) {
            return Vec::new();
        }
        let _ = self.crictl(&["rmp", "--force", "--all"]);
        let running = self
            .child
            .take()
            .map(|mut child| super::process::terminate(&mut child));
        let _ = self.namespace.kill();
        let _ = self.namespace.wait();
        if running.is_none() {
            return Vec::new();
        }
        let mut leaked: Vec<String> = self
            .monitors()
            .into_iter()
            .map(|(pid, cmd)| format!("process {pid}: {cmd}"))
            .collect();
        let states = self.runtime_states();
        leaked.extend(
            states
                .iter()
                .map(|s| format!("runtime state {}", s.display())),
        );
        force_clean(&self.path, &states);
        leaked
    }
}

/// A process holding a private mount namespace with the cgroup view of
/// SYS_VIEW_SCRIPT (and `/` shared within it when `shared_root`), once
/// that view is in place; with network and UTS namespaces of its own
/// when `apart` names the host.
fn spawn_namespace(shared_root: bool, apart: Option<&str>) -> Child {
    let mut script = String::new();
    if let Some(host) = apart {
        script += &format!("hostname {host}\nip link set lo up\n");
    }
    if shared_root {
        script += "mount --make-rshared /\n";
    }
    script += SYS_VIEW_SCRIPT;
    let mut holder = Command::new("unshare")
        .args(["--mount", "--propagation", "private"])
        .args(if apart.is_some() {
            &["--net", "--uts"][..]
        } else {
            &[]
        })
        .args(["sh", "-c"])
        .arg(script)
        .args(["sys-view", "sleep", "infinity"])
        .stdin(Stdio::null())
        .spawn()
        .expect("start the mount namespace's holder");
    let deadline = Instant::now() + Duration::from_secs(10);
    while fs::read_to_string(format!("/proc/{}/comm", holder.id())).unwrap_or_default() != "sleep\n"
    {
        if Instant::now() > deadline || matches!(holder.try_wait(), Ok(Some(_))) {
            let _ = holder.kill();
            panic!("the mount namespace for CRI-O was not made (SYS_VIEW_SCRIPT failed)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    holder
}

/// crio in the mount namespace `holder` keeps, on the files of directory
/// `d`, its output appended to crio.log.
fn spawn_crio(crio: &Path, d: &Path, holder: u32) -> Child {
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(d.join("crio.log"))
        .unwrap();
    super::process::default_signals(&mut Command::new("nsenter"))
        .arg(format!("--mount=/proc/{holder}/ns/mnt"))
        .arg(format!("--net=/proc/{holder}/ns/net"))
        .arg(format!("--uts=/proc/{holder}/ns/uts"))
        .arg("--")
        .arg(crio)
        .arg("--config")
        .arg(d.join("crio.conf"))
        .arg("--config-dir")
        .arg(d.join("crio.conf.d"))
        .env("USERNS_HOSTNET_CONFIG", d.join("wrapper.toml"))
        .env("USERNS_HOSTNET_HANDLERS_DIR", d.join("handlers"))
        .env_remove("USERNS_HOSTNET_RUNTIME")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start crio")
}

impl Drop for Crio {
    fn drop(&mut self) {
        self.stop();
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

/// Where the handler `install crio` writes keeps the real runtime's state.
pub const WRAPPER_RUNTIME_ROOT: &str = "/run/userns-hostnet-runtime";

/// The daemon's config: everything under `d`, the vfs driver, the cgroupfs
/// manager, pinns, conmon, the local pause image run by its own entrypoint
/// (it exits on SIGTERM), no CNI (host-network pods need none), no NRI,
/// and the default handler `runc` running `bin/runc`.
fn crio_config(d: &Path, mode: Mode) -> String {
    let p = |rel: &str| d.join(rel).display().to_string();
    format!(
        "[crio]\nroot = \"{root}\"\nrunroot = \"{runroot}\"\nstorage_driver = \"vfs\"\n\
         log_dir = \"{logs}\"\nversion_file = \"{version}\"\n\
         version_file_persist = \"{version_persist}\"\nclean_shutdown_file = \"{clean}\"\n\
         [crio.api]\nlisten = \"{sock}\"\nstream_address = \"127.0.0.1\"\nstream_port = \"0\"\n\
         [crio.runtime]\ndefault_runtime = \"runc\"\ncgroup_manager = \"cgroupfs\"\n\
         conmon_cgroup = \"pod\"\nnamespaces_dir = \"{ns}\"\npinns_path = \"{pinns}\"\n\
         hooks_dir = [\"{hooks}\"]\ndrop_infra_ctr = {drop}\ncontainer_exits_dir = \"{exits}\"\n\
         container_attach_socket_dir = \"{attach}\"\n\
         [crio.runtime.runtimes.runc]\nruntime_path = \"{runc}\"\nruntime_type = \"oci\"\n\
         runtime_root = \"{runc_root}\"\nmonitor_path = \"{conmon}\"\n\
         [crio.image]\npause_image = \"{PAUSE_IMAGE}\"\npause_command = \"\"\n\
         signature_policy = \"{policy}\"\n\
         [crio.network]\nnetwork_dir = \"{cni_conf}\"\nplugin_dirs = [\"{cni_bin}\"]\n\
         [crio.metrics]\nenable_metrics = false\n\
         [crio.nri]\nenable_nri = false\n",
        root = p("root"),
        runroot = p("runroot"),
        logs = p("logs"),
        version = p("run/version"),
        version_persist = p("lib/version"),
        clean = p("lib/clean.shutdown"),
        sock = p("crio.sock"),
        ns = p("ns"),
        pinns = tool("pinns").display(),
        hooks = p("hooks"),
        drop = mode.drop_infra_ctr(),
        exits = p("exits"),
        attach = p("attach"),
        runc = p("bin/runc"),
        runc_root = p("runc-runc"),
        conmon = system_tool("conmon", "install the Debian package conmon").display(),
        policy = p("policy.json"),
        cni_conf = p("cni/net.d"),
        cni_bin = p("cni/bin"),
    )
}

/// `bin/runc`, the runtime both handlers end up running: runc 1.1.5 behind
/// a test-only step, never product code. It rewrites the bundle's spec
/// (after the wrapper, when the wrapper runs) for two facts of these
/// machines: CRI-O asks `oomScoreAdj: -998` for every pause container and
/// root here lacks CAP_SYS_RESOURCE to lower it (runc fails with "can't get
/// final child's PID from pipe: EOF"), so a negative value becomes 0; and
/// this VM's cgroup v2 hierarchy has no controllers (they are all bound to
/// its v1 hierarchies), so the CPU, memory and pids limits CRI-O sets could
/// not be applied: only the device rules stay in `linux.resources`.
///
/// With `drop_missing_caps`, also what a privileged container (deploy/'s
/// installer) meets on a test host whose bounding set lacks
/// CAP_SYS_RESOURCE (one that runs in a container; a fact of the host,
/// not of CRI-O or runc): CRI-O asks every capability, and runc 1.4.3
/// fails ("can't apply capabilities: operation not permitted") on those
/// outside the bounding set, so they
/// go: from the bundle's spec on create, and from the `--process` file of
/// each exec (the installer's readiness probe), which CRI-O builds from
/// the spec it keeps, not from the edited bundle, across restarts too.
fn write_runc_step(d: &Path, runc: &Path, drop_missing_caps: bool) {
    let (more, process) = if drop_missing_caps {
        let missing = missing_capabilities()
            .iter()
            .map(|c| format!(" and . != \"{c}\""))
            .collect::<String>();
        let drop = format!("with_entries(.value |= map(select(true{missing})))");
        (
            format!(
                " | (if .process.capabilities then .process.capabilities |= {drop} else . end)"
            ),
            format!("if .capabilities then .capabilities |= {drop} else . end"),
        )
    } else {
        (String::new(), String::new())
    };
    write_machine_step(&d.join("bin/runc"), runc, &more, &process, "");
}

/// The capabilities the kernel knows that this process's bounding set
/// lacks.
fn missing_capabilities() -> Vec<String> {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let bnd = status
        .lines()
        .find_map(|l| l.strip_prefix("CapBnd:"))
        .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
        .unwrap();
    let last: u32 = fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    userns_hostnet_engine::cap_names::NAMES
        .iter()
        .zip(0u32..)
        .filter(|(_, bit)| *bit <= last && bnd & (1 << bit) == 0)
        .map(|(name, _)| format!("CAP_{name}"))
        .collect()
}

/// A test-only step at `path` that runs `real` (with `args` first) after
/// the machine's bundle edits of [`write_runc_step`] and the jq filter
/// `more` (empty: none) on the bundle's spec, and the jq filter `process`
/// (empty: none) on an exec's `--process` file.
fn write_machine_step(path: &Path, real: &Path, more: &str, process: &str, args: &str) {
    let jq = system_tool("jq", "install the Debian package jq");
    fs::create_dir_all(path.parent().expect("a step lies in a directory")).unwrap();
    let exec = if process.is_empty() {
        String::new()
    } else {
        format!(
            "if [ -n \"$process\" ] && [ -f \"$process\" ]; then\n\
             \x20 {jq} '{process}' \"$process\" >\"$process.step\" || exit 1\n\
             \x20 mv \"$process.step\" \"$process\"\n\
             fi\n",
            jq = jq.display(),
        )
    };
    write_script(
        path,
        &format!(
            "#!/bin/sh\n\
             bundle=; process=; prev=\n\
             for a in \"$@\"; do case $prev in --bundle|-b) bundle=$a;; --process|-p) process=$a;; esac; prev=$a; done\n\
             if [ -n \"$bundle\" ] && [ -f \"$bundle/config.json\" ]; then\n\
             \x20 {jq} '(.process.oomScoreAdj |= (if . != null and . < 0 then 0 else . end))\n\
             \x20   | (if .linux.resources then .linux.resources |= {{devices: .devices}} else . end){more}' \\\n\
             \x20   \"$bundle/config.json\" >\"$bundle/config.json.step\" || exit 1\n\
             \x20 mv \"$bundle/config.json.step\" \"$bundle/config.json\"\n\
             fi\n\
             {exec}\
             exec {real} {args} \"$@\"\n",
            jq = jq.display(),
            real = real.display(),
        ),
    );
}

/// The version matrix's handlers, in a drop-in of their own. Each real
/// runtime keeps its file name (`runc`, `crun`) behind the machine's step,
/// so that the wrapper reads its argv by that runtime's rules. crun 1.8.1
/// runs with its cgroup manager disabled, as everywhere on these machines
/// (`Runtime::global_args`), and accepts only an `ociVersion` containing
/// "1.0" (`strstr (def->oci_version, "1.0")`, dropped in crun 1.15): the
/// `crun` handler shows that; behind the wrapper and on `crun-stepped` a
/// test-only step lowers the version after the wrapper is done and before
/// crun reads it. The wrapper's handlers are laid out as `install crio`
/// lays its own: `handlers/NAME/userns-hostnet-runtime`, a link to the
/// wrapper, and `handlers/NAME/runtime`, a link to the real runtime.
fn write_matrix_handlers(d: &Path) {
    let bin = d.join("bin");
    let crun = Runtime::Crun.path();
    let crun_args = Runtime::Crun.global_args().join(" ");
    let lower = " | (.ociVersion |= (if test(\"1\\\\.0\") then . else \"1.0.2-dev\" end))";
    let runc14 = bin.join("runc14/runc");
    let crun_as_is = bin.join("crun-as-is/crun");
    let crun_stepped = bin.join("crun-stepped/crun");
    write_machine_step(&runc14, &cri::runc_14_path(), "", "", "");
    write_machine_step(&crun_as_is, &crun, "", "", &crun_args);
    write_machine_step(&crun_stepped, &crun, lower, "", &crun_args);
    let crun127 = bin.join("crun-1.27/crun");
    write_machine_step(
        &crun127,
        &Runtime::Crun127.path(),
        "",
        "",
        &Runtime::Crun127.global_args().join(" "),
    );
    let handlers = [
        (matrix_handler::RUNC_14, &runc14, false),
        (matrix_handler::WRAPPER_RUNC_14, &runc14, true),
        (matrix_handler::CRUN, &crun_as_is, false),
        (matrix_handler::CRUN_STEPPED, &crun_stepped, false),
        (matrix_handler::WRAPPER_CRUN, &crun_stepped, true),
        (matrix_handler::CRUN_127, &crun127, false),
        (matrix_handler::WRAPPER_CRUN_127, &crun127, true),
    ];
    let mut text = String::new();
    for (name, real, wrapped) in handlers {
        let runtime_path = if wrapped {
            let dir = d.join("handlers").join(name);
            fs::create_dir_all(&dir).unwrap();
            let link = dir.join("userns-hostnet-runtime");
            std::os::unix::fs::symlink(WRAPPER, &link).unwrap();
            std::os::unix::fs::symlink(real, dir.join("runtime")).unwrap();
            link
        } else {
            real.clone()
        };
        text.push_str(&format!(
            "[crio.runtime.runtimes.{name}]\nruntime_path = \"{path}\"\nruntime_type = \"oci\"\n\
             runtime_root = \"{root}\"\nmonitor_path = \"{conmon}\"\n\
             monitor_env = [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", \
             \"USERNS_HOSTNET_HANDLERS_DIR={handlers}\", \"USERNS_HOSTNET_CONFIG={config}\"]\n",
            path = runtime_path.display(),
            root = d.join(format!("runc-{name}")).display(),
            conmon = system_tool("conmon", "install the Debian package conmon").display(),
            handlers = d.join("handlers").display(),
            config = d.join("wrapper.toml").display(),
        ));
    }
    fs::write(d.join("crio.conf.d/50-version-matrix.conf"), text).unwrap();
}

/// Registers the wrapper the way an operator does: `userns-hostnet install
/// crio --config D/crio.conf`, with the handler's links under D/handlers
/// (hidden `--handlers-dir`) instead of /etc. The tier then adds one key
/// install does not write: `monitor_env`. conmon starts the runtime's
/// `create` with that environment only, and this wrapper (a test-hooks
/// build) finds its handler links and this daemon's wrapper config through
/// it; with the packaged paths (/etc/userns-hostnet) nothing is needed.
fn register_wrapper(d: &Path) {
    let mut text = run_install(d);
    let drop_in = d.join(INSTALL_DROP_IN);
    assert!(
        text.contains(&format!("runtime_root = \"{WRAPPER_RUNTIME_ROOT}\""))
            && text.lines().rfind(|l| l.starts_with('['))
                == Some("[crio.runtime.runtimes.userns-hostnet]")
            && !text.contains("monitor_env"),
        "the handler table is no longer the last thing in {drop_in:?}:\n{text}"
    );
    text.push_str(&format!(
        "monitor_env = [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", \
         \"USERNS_HOSTNET_HANDLERS_DIR={}\", \"USERNS_HOSTNET_CONFIG={}\"]\n",
        d.join("handlers").display(),
        d.join("wrapper.toml").display()
    ));
    fs::write(&drop_in, text).unwrap();
}

/// What `userns-hostnet install crio` writes for a daemon configured as
/// this tier's (default handler `runc` with a `runtime_path`), in a fresh
/// directory under `d`: the drop-in's text.
pub fn install_drop_in_for(d: &Path) -> String {
    write_runc_step(d, &Runtime::Runc.path(), false);
    fs::write(d.join("crio.conf"), crio_config(d, Mode::DropInfra)).unwrap();
    run_install(d)
}

/// Runs `install crio` on `d/crio.conf`; the drop-in it wrote.
fn run_install(d: &Path) -> String {
    let out = run_capture(
        Command::new(TOOL)
            .args(["install", "crio", "--config"])
            .arg(d.join("crio.conf"))
            .arg("--handlers-dir")
            .arg(d.join("handlers"))
            .arg("--wrapper")
            .arg(WRAPPER),
    );
    assert!(
        out.success(),
        "userns-hostnet install crio failed\n{}",
        out.describe()
    );
    let drop_in = d.join(INSTALL_DROP_IN);
    fs::read_to_string(&drop_in).unwrap_or_else(|e| panic!("install wrote no {drop_in:?}: {e}"))
}

/// The hook definitions in CRI-O's `hooks_dir`.
fn write_hooks(d: &Path, hooks: Hooks) {
    if hooks == Hooks::None {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shipped = repo.join("hooks.d/userns-hostnet.json");
    let mut def: Value = serde_json::from_slice(&fs::read(&shipped).unwrap())
        .unwrap_or_else(|e| panic!("{shipped:?} is not JSON: {e}"));
    assert_eq!(
        def["hook"]["path"], "/usr/bin/userns-hostnet",
        "{shipped:?}: the hook's path changed"
    );
    def["hook"]["path"] = json!(TOOL);
    def["hook"]["env"] = json!([format!(
        "USERNS_HOSTNET_CONFIG={}",
        d.join("wrapper.toml").display()
    )]);
    fs::write(
        d.join("hooks/userns-hostnet.json"),
        serde_json::to_vec_pretty(&def).unwrap(),
    )
    .unwrap();
    if hooks == Hooks::WithPrecreate {
        let precreate = repo.join("hooks.d/podman/userns-hostnet-precreate.json");
        let mut def: Value = serde_json::from_slice(&fs::read(&precreate).unwrap())
            .unwrap_or_else(|e| panic!("{precreate:?} is not JSON: {e}"));
        def["hook"]["path"] = json!(TOOL);
        fs::write(
            d.join("hooks/userns-hostnet-precreate.json"),
            serde_json::to_vec_pretty(&def).unwrap(),
        )
        .unwrap();
    }
}

/// The pause and app images into CRI-O's storage, from the docker-archive
/// of tests/common/cri.rs.
fn copy_images(d: &Path) {
    let tar = cri::images_tar();
    for image in [PAUSE_IMAGE, APP_IMAGE] {
        let out = run_capture(
            Command::new(tool("copyimg"))
                .arg("--root")
                .arg(d.join("root"))
                .arg("--runroot")
                .arg(d.join("runroot"))
                .args(["--storage-driver", "vfs", "--signature-policy"])
                .arg(d.join("policy.json"))
                .args(["--image-name", image, "--import-from"])
                .arg(format!("docker-archive:{}:{image}", tar.display())),
        );
        assert!(out.success(), "copyimg {image} failed\n{}", out.describe());
    }
}

/// Kills what still names `dir`, deletes the runtime states left, and
/// unmounts anything left under `dir` here.
fn force_clean(dir: &Path, states: &[PathBuf]) {
    for (pid, _) in processes_naming(dir) {
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg(pid.to_string())
            .status();
    }
    for state in states {
        let (Some(root), Some(id)) = (state.parent(), state.file_name()) else {
            continue;
        };
        let _ = Command::new(Runtime::Runc.path())
            .arg("--root")
            .arg(root)
            .args(["delete", "--force"])
            .arg(id)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    super::unmount_below(dir);
}

/// Cleans up after test processes that died without dropping their daemon.
fn clean_leftovers() {
    for dir in super::leftover_dirs(DIR_PREFIX) {
        force_clean(&dir, &[]);
        let _ = fs::remove_dir_all(&dir);
    }
}
