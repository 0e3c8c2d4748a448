//! A private containerd with its CRI plugin, driven the way the kubelet
//! drives it, for tests/e2e_cri.rs, on one of two stacks ([`Stack`]):
//! containerd 1.7.24 with Debian 12's runc 1.1.5, or containerd 2.3.4 with
//! runc 1.4.3, what new nodes run.
//!
//! containerd 1.7.24 is the first Debian containerd whose CRI knows user
//! namespaces (bookworm's 1.6.20 does not); `scripts/cri-tools.sh` fetches it
//! from trixie into `target/containerd-1.7` without installing it, unpacks
//! containerd 2.3.4 and runc 1.4.3 from ../shared/tools into
//! `target/containerd-2.3`, and the prebuilt crictl 1.36.0 into
//! `target/cri-o`. `make test` runs that script first; a missing tool fails
//! the test and names the script.
//!
//! The CRI client is crictl (tests/common/crictl.rs, which CRI-O's driver
//! shares), fed JSON configs with the field names and enum values the
//! kubelet sends. The `k8s-cri` crate would give typed requests
//! over tonic, but tonic and prost add minutes of compile time on a 2-core
//! machine for what a few JSON files and one binary already do.
//!
//! The daemon is the one of tests/common/containerd.rs (own root, state,
//! socket, a private mount namespace with bpffs, securityfs and a pure
//! cgroup v2 view, cleanup of dead runs), with a CRI section added: every
//! runtime handler has a private runc `Root`, and the wrapper's config file
//! (`USERNS_HOSTNET_CONFIG` on the daemon, which containerd 1.7.24 passes on
//! to the shim and the runtime) keeps the decision log in the daemon's
//! directory. Images come from busybox-static, as a docker-archive written
//! here (the layer by GNU tar, its diff ID by sha256sum) and imported with
//! `ctr -n k8s.io images import`: no registry.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::containerd::{write_script, Containerd, Launch, WRAPPER_CRUN_NAME};
use super::crictl::{Crictl, Daemon, Pod};
use super::{run_ok, tools_target, Runtime, ID_RANGE, WRAPPER};

/// The admin tool, whose `hook create-runtime` the hook handlers run.
const TOOL: &str = super::TOOL;

pub const PAUSE_IMAGE: &str = "uhn.test/pause:1";
pub const APP_IMAGE: &str = "uhn.test/app:1";

/// A pause entrypoint that exits on SIGTERM (StopPodSandbox would otherwise
/// wait for its deadline): `wait` returns as soon as the trap fires.
const PAUSE_SCRIPT: &str = "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done";
/// What an app container runs: one line for its log, then the same loop.
pub const APP_SCRIPT: &str =
    "echo app-started-$HOSTNAME_TAG; trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done";

/// The runtime handlers the daemon offers (`crictl runp --runtime NAME`).
pub mod handler {
    /// The stack's runc alone.
    pub const RUNC: &str = "runc";
    /// The wrapper in front of the stack's runc (the `runc` first in the
    /// daemon's PATH).
    pub const WRAPPER: &str = "userns-hostnet";
    /// Debian 12's runc 1.1.5 alone, whatever the stack.
    pub const RUNC_11: &str = "runc11";
    /// The wrapper installed as `userns-hostnet-runtime-runc11`.
    pub const WRAPPER_RUNC_11: &str = "userns-hostnet-runc11";
    /// runc 1.4.3 alone, whatever the stack.
    pub const RUNC_14: &str = "runc14";
    /// The wrapper installed as `userns-hostnet-runtime-runc-1.4`.
    pub const WRAPPER_RUNC_14: &str = "userns-hostnet-runc14";
    /// runc 1.5.3 alone, whatever the stack.
    pub const RUNC_15: &str = "runc15";
    /// The wrapper installed as `userns-hostnet-runtime-runc15`.
    pub const WRAPPER_RUNC_15: &str = "userns-hostnet-runc15";
    /// crun 1.27.1 alone (its cgroup manager disabled, as crun 1.8.1's).
    pub const CRUN_127: &str = "crun127";
    /// The wrapper installed as `userns-hostnet-runtime-crun127`: crun
    /// 1.27.1 behind it.
    pub const WRAPPER_CRUN_127: &str = "userns-hostnet-crun127";
    /// The wrapper installed as `userns-hostnet-runtime-crun`: crun behind it.
    pub const WRAPPER_CRUN: &str = "userns-hostnet-crun";
    /// crun 1.8.1 alone.
    pub const CRUN: &str = "crun";
    /// crun 1.8.1 alone behind the test-only version step the wrapper's
    /// crun handler has (see `setup_daemon_dir`).
    pub const CRUN_STEPPED: &str = "crun-stepped";
    /// runc alone, with hooks.d/containerd-base-spec.json as
    /// `base_runtime_spec` (the createRuntime hook instead of the wrapper).
    pub const RUNC_HOOK: &str = "runc-hook";
    /// The wrapper, with the same base spec.
    pub const WRAPPER_HOOK: &str = "userns-hostnet-hook";
}

/// The CRI's enum `NamespaceMode`.
pub const POD: u64 = 0;
pub const CONTAINER: u64 = 1;
pub const NODE: u64 = 2;

/// Which containerd, and which runc is `runc` for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// containerd 1.7.24 (Debian trixie) with runc 1.1.5 (Debian 12).
    Containerd17,
    /// containerd 2.3.4 with runc 1.4.3, both from ../shared/tools.
    Containerd23,
    /// containerd 2.4.2 with runc 1.5.3, both from ../shared/tools: the
    /// newest releases.
    Containerd24,
}

impl Stack {
    /// The directory holding `containerd`, `ctr` and the shim; for
    /// containerd 2.3 it holds runc 1.4.3 as well, and comes before the
    /// system's runc in the daemon's PATH.
    pub fn bin_dir(self) -> PathBuf {
        match self {
            Stack::Containerd17 => tools_target().join("containerd-1.7/usr/bin"),
            Stack::Containerd23 => containerd_23_dir(),
            Stack::Containerd24 => containerd_24_dir(),
        }
    }

    /// The version of the runc this stack runs: the handler `runc`, and the
    /// runtime the wrapper finds as `runc` first in the daemon's PATH.
    pub fn runc_version(self) -> &'static str {
        match self {
            Stack::Containerd17 => "1.1.5",
            Stack::Containerd23 => "1.4.3",
            Stack::Containerd24 => "1.5.3",
        }
    }

    /// containerd 2.x dropped `disable_cgroup`: it asks for CPU shares the
    /// cgroup v2 view of this hybrid host cannot apply (its controllers are
    /// all bound to the v1 hierarchies), so runc goes through a test-only
    /// step that drops them (see [`setup_daemon_dir`]).
    fn drops_cgroup_resources(self) -> bool {
        self != Stack::Containerd17
    }

    /// containerd 2.x: binds /sys itself for a userns host-network pod,
    /// checks the runtime's `features`, declares
    /// `user_namespaces_host_network`.
    pub fn is_2x(self) -> bool {
        self != Stack::Containerd17
    }

    /// For messages and figures.
    pub fn label(self) -> &'static str {
        match self {
            Stack::Containerd17 => "containerd 1.7.24, runc 1.1.5",
            Stack::Containerd23 => "containerd 2.3.4, runc 1.4.3",
            Stack::Containerd24 => "containerd 2.4.2, runc 1.5.3",
        }
    }
}

/// containerd 2.3.4, its shim and ctr, and runc 1.4.3, unpacked by
/// scripts/cri-tools.sh.
pub fn containerd_23_dir() -> PathBuf {
    tools_target().join("containerd-2.3")
}

/// runc 1.4.3 as scripts/cri-tools.sh unpacks it; a panic naming the
/// script when it is missing.
pub fn runc_14_path() -> PathBuf {
    let runc = containerd_23_dir().join("runc");
    assert!(
        runc.is_file(),
        "runc 1.4.3 is missing at {runc:?}: {FETCH_HINT}"
    );
    runc
}

/// containerd 2.4.2, its shim and ctr, and runc 1.5.3, unpacked by
/// scripts/cri-tools.sh.
pub fn containerd_24_dir() -> PathBuf {
    tools_target().join("containerd-2.4")
}

pub fn crictl_path() -> PathBuf {
    tools_target().join("cri-o/crictl")
}

const FETCH_HINT: &str = "run `scripts/cri-tools.sh` (make test does): it fetches containerd \
     1.7.24 from Debian trixie into target/containerd-1.7, and unpacks containerd 2.3.4 and \
     runc 1.4.3 from ../shared/tools/containerd-2.3.4-runc-1.4.3 into target/containerd-2.3 \
     and crictl from ../shared/tools/cri-o-1.36.3 into target/cri-o";

/// How a pod's user namespace is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Userns {
    /// `userns_options {mode: POD}` with container 0..65535 on host
    /// `host_id`.., for uids and gids: `hostUsers: false`.
    Pod { host_id: u64 },
    /// No `userns_options` at all: `hostUsers: true` as the kubelet sends it.
    Absent,
    /// `userns_options {mode: NODE}`: the host's user namespace, said
    /// explicitly.
    Node,
}

impl Userns {
    pub fn host_id(self) -> Option<u64> {
        match self {
            Userns::Pod { host_id } => Some(host_id),
            Userns::Absent | Userns::Node => None,
        }
    }
}

/// A host ID range of its own for every pod: containerd 1.7 races when
/// pods that start together share one (`snapshot "...-remap" already
/// exists`).
pub fn next_host_range() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    1_000_000 + NEXT.fetch_add(1, Ordering::SeqCst) * ID_RANGE
}

/// `namespace_options` as the kubelet sends it for `hostNetwork: true`:
/// network NODE, pid CONTAINER, ipc POD, and the user namespace.
pub fn namespace_options(userns: Userns) -> Value {
    let mut ns = json!({ "network": NODE, "pid": CONTAINER, "ipc": POD });
    match userns {
        Userns::Pod { host_id } => {
            let map = json!([{ "host_id": host_id, "container_id": 0, "length": ID_RANGE }]);
            ns["userns_options"] = json!({ "mode": POD, "uids": map.clone(), "gids": map });
        }
        Userns::Node => ns["userns_options"] = json!({ "mode": NODE }),
        Userns::Absent => {}
    }
    ns
}

/// A PodSandboxConfig for a host-network pod.
pub fn pod_config(name: &str, userns: Userns, log_dir: &Path) -> Value {
    json!({
        "metadata": { "name": name, "namespace": "uhn-e2e", "uid": format!("uid-{name}"), "attempt": 0 },
        "log_directory": log_dir,
        "labels": { "app": name },
        "linux": {
            "security_context": { "namespace_options": namespace_options(userns) }
        }
    })
}

/// A ContainerConfig: the app image running `sh -c script`, with the
/// sandbox's namespace options repeated (containerd 1.7 refuses a container
/// whose user namespace options differ from its sandbox's).
pub fn container_config(name: &str, userns: Userns, script: &str) -> Value {
    json!({
        "metadata": { "name": name, "attempt": 0 },
        "image": { "image": APP_IMAGE },
        "command": ["/bin/sh", "-c", script],
        "envs": [{ "key": "HOSTNAME_TAG", "value": name }],
        "log_path": format!("{name}.log"),
        "linux": {
            "security_context": { "namespace_options": namespace_options(userns) }
        }
    })
}

/// A private containerd with CRI, driven through its [`Crictl`] (which it
/// derefs to). Dropping it removes every pod through the CRI, then stops
/// the daemon as tests/common/containerd.rs does.
pub struct Cri {
    stack: Stack,
    ctd: Option<Containerd>,
    crictl: Crictl,
    stopped: bool,
}

impl std::ops::Deref for Cri {
    type Target = Crictl;

    fn deref(&self) -> &Crictl {
        &self.crictl
    }
}

impl Daemon for Cri {
    fn leftovers(&self) -> Vec<String> {
        Cri::leftovers(self)
    }

    fn stop(&mut self) -> Vec<String> {
        Cri::stop(self)
    }
}

impl Cri {
    /// Starts containerd 1.7.24 with every handler, imports the images and
    /// waits until the CRI sees them.
    pub fn start() -> Cri {
        Cri::start_on(Stack::Containerd17)
    }

    /// Starts the stack's containerd with every handler, imports the images
    /// and waits until the CRI sees them.
    pub fn start_on(stack: Stack) -> Cri {
        let bin_dir = stack.bin_dir();
        assert!(
            crictl_path().is_file(),
            "crictl is missing at {:?}: {FETCH_HINT}",
            crictl_path()
        );
        let ctd = Containerd::launch(Launch {
            bin_dir: Some(&bin_dir),
            install_hint: FETCH_HINT,
            extra_config: &|d| cri_config(d, stack),
            setup: &|d| setup_daemon_dir(d, stack),
        });
        let crictl = Crictl::new(ctd.dir(), &ctd.dir().join("sock"));
        let cri = Cri {
            stack,
            ctd: Some(ctd),
            crictl,
            stopped: false,
        };
        cri.import_images();
        cri
    }

    /// Restarts the daemon, as `systemctl restart containerd` would (pods
    /// keep running in their shims), and waits until the CRI sees the
    /// images again.
    pub fn restart(&mut self) {
        self.ctd.as_mut().expect("the daemon runs").restart();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.crictl(&["inspecti", PAUSE_IMAGE]).success() {
            assert!(
                Instant::now() < deadline,
                "the CRI did not answer after the restart\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Restarts the daemon in a copy of process `pid`'s mount namespace
    /// (a node's own view of the host's files), as every later restart.
    pub fn restart_in_mount_namespace_of(&mut self, pid: u32) {
        self.ctd
            .as_mut()
            .expect("the daemon runs")
            .set_mount_parent(pid);
        self.restart();
    }

    pub fn stack(&self) -> Stack {
        self.stack
    }

    pub fn containerd(&self) -> &Containerd {
        self.ctd.as_ref().expect("the daemon runs")
    }

    pub fn dir(&self) -> &Path {
        self.containerd().dir()
    }

    /// The daemon's log, for failure messages.
    pub fn log(&self) -> String {
        self.containerd().log()
    }

    fn import_images(&self) {
        let tar = images_tar();
        self.containerd()
            .ctr(&["-n", "k8s.io", "images", "import", tar.to_str().unwrap()])
            .assert_success();
        // The CRI learns of imported images from containerd's events.
        let deadline = Instant::now() + Duration::from_secs(20);
        for image in [PAUSE_IMAGE, APP_IMAGE] {
            while !self.crictl(&["inspecti", image]).success() {
                assert!(
                    Instant::now() < deadline,
                    "the CRI never saw the imported {image}\n{}",
                    self.crictl(&["images"]).describe()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// The bundle containerd wrote for a running container or sandbox.
    pub fn bundle_spec(&self, id: &str) -> Value {
        let path = self
            .dir()
            .join("state/io.containerd.runtime.v2.task/k8s.io")
            .join(id)
            .join("config.json");
        let text = fs::read(&path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
        serde_json::from_slice(&text).expect("config.json is JSON")
    }

    /// The sandbox's pid, from PodSandboxStatus's verbose info.
    pub fn sandbox_pid(&self, pod: &Pod) -> u64 {
        let status = self.inspect_pod(pod);
        status["info"]["pid"]
            .as_u64()
            .unwrap_or_else(|| panic!("no info.pid in inspectp: {status:#}"))
    }

    /// What is left after every pod was removed: pods the CRI knows, runtime
    /// state under the handlers' roots, task bundles, mounts under the
    /// daemon's directory, shims. A shim exits shortly after its last task
    /// is deleted: allow it 5 s.
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
        let ctd = self.containerd();
        let mut left: Vec<String> = self
            .pods()
            .into_iter()
            .map(|p| format!("pod {p}"))
            .collect();
        left.extend(
            ctd.runtime_states()
                .into_iter()
                .map(|s| format!("runtime state {s}")),
        );
        left.extend(
            ctd.task_bundles()
                .into_iter()
                .map(|b| format!("task bundle {b}")),
        );
        left.extend(
            ctd.mounts_in_dir()
                .into_iter()
                .map(|m| format!("mount {m}")),
        );
        left.extend(
            self.records()
                .into_iter()
                .map(|r| format!("the wrapper's record of {r}")),
        );
        left.extend(
            ctd.shims()
                .into_iter()
                .map(|(pid, cmd)| format!("process {pid}: {cmd}")),
        );
        left
    }

    /// The wrapper's records (src/records.rs) of containers under this
    /// daemon's state roots, each a line.
    pub fn records(&self) -> Vec<String> {
        userns_hostnet::records::Records::system()
            .all()
            .into_iter()
            .filter(|r| {
                r.root
                    .as_ref()
                    .is_some_and(|(_, p)| p.starts_with(self.dir()))
            })
            .map(|r| format!("{} ({:?})", r.id.to_string_lossy(), r.stage))
            .collect()
    }

    /// The environment of every shim serving this daemon.
    pub fn shim_environments(&self) -> Vec<(u32, Vec<String>)> {
        self.containerd()
            .shims()
            .into_iter()
            .filter(|(_, cmd)| cmd.contains("containerd-shim-runc-v2"))
            .map(|(pid, _)| {
                let raw = fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                let vars = raw
                    .split(|b| *b == 0)
                    .filter(|v| !v.is_empty())
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .collect();
                (pid, vars)
            })
            .collect()
    }

    /// Removes every pod through the CRI and stops the daemon; returns what
    /// had to be killed or deleted by force afterwards.
    pub fn stop(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.stopped, true) {
            return Vec::new();
        }
        let _ = self.crictl(&["rmp", "--force", "--all"]);
        match self.ctd.as_mut() {
            Some(ctd) => ctd.stop(),
            None => Vec::new(),
        }
    }
}

impl Drop for Cri {
    fn drop(&mut self) {
        self.stop();
        // The daemon's own Drop removes its directory.
        self.ctd.take();
    }
}

/// The CRI section of the daemon's config: the local pause image, the
/// OOM-score restriction this machine needs, no cgroup management on
/// containerd 1.7 (this VM's cgroup v2 hierarchy has no controllers: they
/// are all bound to its v1 hierarchies, and the shares the CRI asks for
/// would fail to apply; containerd 2.x has no such setting, see
/// [`Stack::drops_cgroup_resources`]), and one handler per runtime. Every
/// runc handler names a link in the daemon's bin/ (see
/// [`setup_daemon_dir`]).
fn cri_config(d: &Path, stack: Stack) -> String {
    let base_spec = d.join("hook-base-spec.json");
    let bin = d.join("bin");
    let handlers = [
        (handler::RUNC, bin.join("runc"), None),
        (handler::RUNC_11, bin.join("runc11"), None),
        (
            handler::WRAPPER_RUNC_11,
            bin.join(WRAPPER_RUNC_11_NAME),
            None,
        ),
        (handler::RUNC_14, bin.join("runc14"), None),
        (
            handler::WRAPPER_RUNC_14,
            bin.join(WRAPPER_RUNC_14_NAME),
            None,
        ),
        (handler::RUNC_15, bin.join("runc15"), None),
        (
            handler::WRAPPER_RUNC_15,
            bin.join(WRAPPER_RUNC_15_NAME),
            None,
        ),
        (handler::CRUN_127, bin.join("crun127"), None),
        (
            handler::WRAPPER_CRUN_127,
            bin.join(WRAPPER_CRUN_127_NAME),
            None,
        ),
        (handler::WRAPPER, PathBuf::from(WRAPPER), None),
        (
            handler::WRAPPER_CRUN,
            d.join("bin").join(WRAPPER_CRUN_NAME),
            None,
        ),
        (handler::CRUN, d.join("bin").join("crun-as-is"), None),
        (handler::CRUN_STEPPED, d.join("bin").join("crun"), None),
        (handler::RUNC_HOOK, bin.join("runc"), Some(&base_spec)),
        (
            handler::WRAPPER_HOOK,
            PathBuf::from(WRAPPER),
            Some(&base_spec),
        ),
    ];
    let cri = r#"plugins."io.containerd.grpc.v1.cri""#;
    let mut text = format!(
        "[plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"{opt}\"\n\
         [{cri}]\n  sandbox_image = \"{PAUSE_IMAGE}\"\n  restrict_oom_score_adj = true\n\
         {disable_cgroup}\
         \x20 enable_unprivileged_ports = false\n\
         \x20 enable_unprivileged_icmp = false\n  stream_server_address = \"127.0.0.1\"\n\
         \x20 stream_server_port = \"0\"\n\
         [{cri}.cni]\n  bin_dir = \"{cni}/bin\"\n  conf_dir = \"{cni}/conf\"\n\
         [{cri}.containerd]\n  default_runtime_name = \"{runc}\"\n",
        opt = d.join("opt").display(),
        cni = d.join("cni").display(),
        runc = handler::RUNC,
        disable_cgroup = if stack.drops_cgroup_resources() {
            ""
        } else {
            "  disable_cgroup = true\n"
        },
    );
    for (name, binary, base) in handlers {
        text.push_str(&format!(
            "[{cri}.containerd.runtimes.{name}]\n  runtime_type = \"io.containerd.runc.v2\"\n"
        ));
        if let Some(base) = base {
            text.push_str(&format!("  base_runtime_spec = \"{}\"\n", base.display()));
        }
        text.push_str(&format!(
            "[{cri}.containerd.runtimes.{name}.options]\n  BinaryName = \"{}\"\n  Root = \"{}\"\n",
            binary.display(),
            d.join(format!("runc-{name}")).display()
        ));
    }
    text
}

/// The wrapper under these names runs `runc11` and `runc14`.
const WRAPPER_RUNC_11_NAME: &str = "userns-hostnet-runtime-runc11";
const WRAPPER_RUNC_14_NAME: &str = "userns-hostnet-runtime-runc14";
const WRAPPER_RUNC_15_NAME: &str = "userns-hostnet-runtime-runc15";
/// The wrapper under this name runs `crun127`.
const WRAPPER_CRUN_127_NAME: &str = "userns-hostnet-runtime-crun127";

/// Files the handlers need before the daemon starts: the wrapper's config,
/// each runc by version (`runc` is the stack's), crun as the two crun
/// handlers run it, and the hook's base spec.
fn setup_daemon_dir(d: &Path, stack: Stack) {
    let bin = d.join("bin");
    for (name, real) in [
        ("runc11", Runtime::Runc.path()),
        ("runc14", runc_14_path()),
        ("runc15", Runtime::Runc15.path()),
    ] {
        // The runtime's file name stays `runc`, behind links, so the
        // wrapper reads its argv as runc's.
        let target = if stack.drops_cgroup_resources() {
            // Test-only, for this VM's controller-less cgroup v2 view:
            // after the wrapper and before runc, the bundle loses the
            // resources containerd 2.x asks for whatever its config says;
            // the device rules stay.
            let dir = bin.join("cgroup-step").join(name);
            fs::create_dir_all(&dir).unwrap();
            let script = dir.join("runc");
            write_script(
                &script,
                &format!(
                    "#!/bin/sh\n\
                     bundle=; prev=\n\
                     for a in \"$@\"; do case $prev in --bundle|-b) bundle=$a;; esac; prev=$a; done\n\
                     if [ -n \"$bundle\" ] && [ -f \"$bundle/config.json\" ]; then\n\
                     \x20 jq -c 'if .linux.resources then .linux.resources |= {{devices: .devices}} else . end' \
                     \"$bundle/config.json\" >\"$bundle/config.json.step\" && \
                     mv \"$bundle/config.json.step\" \"$bundle/config.json\" || exit 1\n\
                     fi\n\
                     exec {} \"$@\"\n",
                    real.display()
                ),
            );
            script
        } else {
            real
        };
        std::os::unix::fs::symlink(&target, bin.join(name)).unwrap();
    }
    let own = match stack {
        Stack::Containerd17 => "runc11",
        Stack::Containerd23 => "runc14",
        Stack::Containerd24 => "runc15",
    };
    std::os::unix::fs::symlink(bin.join(own), bin.join("runc")).unwrap();
    for wrapper in [
        WRAPPER_RUNC_11_NAME,
        WRAPPER_RUNC_14_NAME,
        WRAPPER_RUNC_15_NAME,
        WRAPPER_CRUN_127_NAME,
    ] {
        std::os::unix::fs::symlink(WRAPPER, bin.join(wrapper)).unwrap();
    }
    fs::write(
        d.join("wrapper.toml"),
        format!(
            "[log]\nfile = {:?}\n",
            d.join("decisions.log").display().to_string()
        ),
    )
    .unwrap();
    let crun = Runtime::Crun.path();
    // crun 1.8.1 accepts only an `ociVersion` containing "1.0"
    // (libcrun/container.c: `strstr (def->oci_version, "1.0")`, dropped in
    // crun 1.15), and Debian's containerd 1.7.24 writes "1.2.0" in every
    // spec (containerd 2.3.4 writes "1.3.0"), sandboxes included (they never use a handler's
    // base_runtime_spec, so a base spec cannot lower it). The handler
    // `crun` runs crun as it is and shows that failure; behind the wrapper,
    // this test-only step lowers the version in the bundle after the
    // wrapper is done and before crun reads it. It is not the wrapper's
    // business: nothing else in the spec is newer than crun 1.8.1 knows.
    write_script(
        &d.join("bin").join("crun"),
        &format!(
            "#!/bin/sh\n\
             bundle=; prev=\n\
             for a in \"$@\"; do case $prev in --bundle|-b) bundle=$a;; esac; prev=$a; done\n\
             if [ -n \"$bundle\" ] && [ -f \"$bundle/config.json\" ]; then\n\
             \x20 sed -i 's/\"ociVersion\"[[:space:]]*:[[:space:]]*\"1\\.[23]\\.0\"/\"ociVersion\":\"1.0.2-dev\"/' \"$bundle/config.json\"\n\
             fi\n\
             exec {} --cgroup-manager=disabled \"$@\"\n",
            crun.display()
        ),
    );
    write_script(
        &d.join("bin").join("crun-as-is"),
        &format!(
            "#!/bin/sh\nexec {} --cgroup-manager=disabled \"$@\"\n",
            crun.display()
        ),
    );
    // crun 1.27.1 reads any spec version; its cgroup manager is disabled
    // as crun 1.8.1's is (the daemon's cgroup v2 view has no controllers).
    // Behind a link named `crun127`, so that the wrapper named
    // `...-crun127` finds it, the script's own name is `crun`: the wrapper
    // reads its argv as crun's.
    let step = bin.join("crun-1.27");
    fs::create_dir_all(&step).unwrap();
    write_script(
        &step.join("crun"),
        &format!(
            "#!/bin/sh\nexec {} --cgroup-manager=disabled \"$@\"\n",
            Runtime::Crun127.path().display()
        ),
    );
    std::os::unix::fs::symlink(step.join("crun"), bin.join("crun127")).unwrap();
    fs::write(d.join("hook-base-spec.json"), hook_base_spec(d)).unwrap();
}

/// hooks.d/containerd-base-spec.json with the hook pointed at the built
/// tool and at this daemon's wrapper config (a hook gets only the
/// environment its definition lists).
fn hook_base_spec(d: &Path) -> Vec<u8> {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("hooks.d/containerd-base-spec.json");
    let mut spec: Value = serde_json::from_slice(&fs::read(&shipped).unwrap())
        .unwrap_or_else(|e| panic!("{shipped:?} is not JSON: {e}"));
    let hook = &mut spec["hooks"]["createRuntime"][0];
    assert_eq!(
        hook["args"],
        json!(["userns-hostnet", "hook", "create-runtime"]),
        "{shipped:?}: the createRuntime hook changed"
    );
    hook["path"] = json!(TOOL);
    hook["env"] = json!([format!(
        "USERNS_HOSTNET_CONFIG={}",
        d.join("wrapper.toml").display()
    )]);
    serde_json::to_vec_pretty(&spec).unwrap()
}

/// A docker-archive holding the pause and app images, both one layer of
/// busybox-static owned by root, with every mount point the runtimes use
/// already there (files of host uid 0 show as nobody inside a user
/// namespace, so the container could not create them). Built once per test
/// process run under cargo's target tmp dir.
pub fn images_tar() -> PathBuf {
    static TAR: OnceLock<PathBuf> = OnceLock::new();
    TAR.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cri-images");
        let dest = base.join(format!("images-{:016x}.tar", images_key()));
        if dest.is_file() {
            return dest;
        }
        let staging = base.join(super::unique_id("staging"));
        let _ = fs::remove_dir_all(&staging);
        let rootfs = staging.join("rootfs");
        super::populate_rootfs(&rootfs);
        for d in [
            "dev/pts",
            "dev/shm",
            "dev/mqueue",
            "sys/fs/cgroup",
            "var/run",
        ] {
            fs::create_dir_all(rootfs.join(d)).unwrap();
        }
        let layer = staging.join("layer.tar");
        run_ok(
            Command::new("tar")
                .args(["--owner=0", "--group=0", "--numeric-owner", "--sort=name"])
                .arg("--mtime=@0")
                .arg("-C")
                .arg(&rootfs)
                .arg("-cf")
                .arg(&layer)
                .arg("."),
        );
        let sum = run_ok(Command::new("sha256sum").arg(&layer));
        let diff_id = format!("sha256:{}", sum.stdout.split_whitespace().next().unwrap());
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        };
        let image_config = |entrypoint: Value, cmd: Value| {
            json!({
                "architecture": arch,
                "os": "linux",
                "config": { "Env": ["PATH=/bin"], "Entrypoint": entrypoint, "Cmd": cmd },
                "rootfs": { "type": "layers", "diff_ids": [diff_id] },
            })
        };
        let pause = image_config(json!(["/bin/sh", "-c", PAUSE_SCRIPT]), Value::Null);
        let app = image_config(Value::Null, json!(["/bin/sh", "-c", APP_SCRIPT]));
        fs::write(
            staging.join("pause.json"),
            serde_json::to_vec(&pause).unwrap(),
        )
        .unwrap();
        fs::write(staging.join("app.json"), serde_json::to_vec(&app).unwrap()).unwrap();
        let manifest = json!([
            { "Config": "pause.json", "RepoTags": [PAUSE_IMAGE], "Layers": ["layer.tar"] },
            { "Config": "app.json", "RepoTags": [APP_IMAGE], "Layers": ["layer.tar"] },
        ]);
        fs::write(
            staging.join("manifest.json"),
            serde_json::to_vec(&manifest).unwrap(),
        )
        .unwrap();
        let tmp_tar = staging.join("images.tar");
        run_ok(
            Command::new("tar")
                .arg("-C")
                .arg(&staging)
                .arg("-cf")
                .arg(&tmp_tar)
                .args(["manifest.json", "pause.json", "app.json", "layer.tar"]),
        );
        // rename replaces a file atomically: a concurrent builder's copy is
        // as good as this one.
        fs::rename(&tmp_tar, &dest).unwrap();
        let _ = fs::remove_dir_all(&staging);
        dest
    })
    .clone()
}

/// Changes when what goes into the images does: the scripts, the image
/// names, busybox.
fn images_key() -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let mut h = DefaultHasher::new();
    (PAUSE_SCRIPT, APP_SCRIPT, PAUSE_IMAGE, APP_IMAGE).hash(&mut h);
    if let Ok(m) = fs::metadata("/bin/busybox") {
        (m.len(), m.mtime(), m.ino()).hash(&mut h);
    }
    h.finish()
}
