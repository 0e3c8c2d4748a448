//! A single-node Kubernetes cluster on loopback for the Kubernetes tier
//! (tests/e2e_kubernetes*.rs):
//! etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a
//! kubelet, every one with its own files under one directory in /tmp named
//! after the test process, driving a CRI daemon of tests/common/cri.rs or
//! tests/common/crio.rs (private root, state and socket already).
//!
//! The binaries come from `scripts/kubernetes.sh` (`make kubernetes`), built
//! from the Go module proxy into a cache the machine keeps
//! (/var/cache/userns-hostnet/kubernetes, or `KUBE_CACHE`); a missing one
//! fails the test and names the script.
//!
//! What stays private:
//! - certificates (openssl, EC P-256, valid one day), kubeconfig, etcd's data,
//!   the kubelet's root, pod log and volume plugin directories: all under the
//!   cluster directory; every port is a free loopback port picked at start;
//! - the kubelet runs in its own mount namespace where `/var/log` is a
//!   private directory (it links container logs into /var/log/containers
//!   whatever its config says) and the six sysctls it sets at start
//!   (`vm.overcommit_memory`, `vm.panic_on_oom`, `kernel.panic`,
//!   `kernel.panic_on_oops`, `kernel.keys.root_maxkeys`,
//!   `kernel.keys.root_maxbytes`) are private files bound over their /proc/sys
//!   entries: the host's values never change.
//!
//! The kubelet's settings for this VM's hybrid cgroup hierarchy (v1
//! controllers, an empty v2 tree): `failCgroupV1: false` (1.35+ refuse v1
//! otherwise), `cgroupsPerQOS: false` and `enforceNodeAllocatable: []` (the
//! QoS tree would be made in the v1 hierarchies the kubelet sees, while the
//! CRI daemons and their runtimes see the pure v2 view of SYS_VIEW_SCRIPT:
//! the pod cgroup parents it would hand them do not exist there; node
//! allocatable enforcement needs the QoS tree).

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

use super::containerd::{processes_naming, write_script};
use super::cri::Cri;
use super::crio::Crio;
use super::{run_capture, Outcome};

/// The release of the control plane and of the default kubelet.
pub const VERSION: &str = "v1.37.2";

/// The newest kubelet whose UserNamespacesHostNetworkSupport works without
/// NodeDeclaredFeatures (an alpha gate, off, in 1.35; 1.36 makes the
/// feature depend on it): it sends the feature's pod to any CRI daemon
/// that says its handler supports user namespaces, reported features or
/// not. scripts/kubernetes.sh builds its kubelet only.
pub const KUBELET_UNDECLARED: &str = "v1.35.4";

/// Every cluster directory starts with this, then the test process's pid.
const DIR_PREFIX: &str = "uhn-k8s-";

const BUILD_HINT: &str = "run `make kubernetes` (scripts/kubernetes.sh; make test does): it \
     builds the Kubernetes components from the Go module proxy into \
     /var/cache/userns-hostnet/kubernetes";

/// The feature gates the feature needs, on the API server, the scheduler
/// and the kubelet (UserNamespacesSupport is GA and locked on in 1.37;
/// NodeDeclaredFeatures too).
pub const FEATURE_GATES: &str = "UserNamespacesHostNetworkSupport=true";

/// How long the cluster may take to come up on a busy 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(240);

/// The first ID and the number of IDs the tier's kubelets give pods' user
/// namespaces: 1,024 ranges of 65,536 from 65,536 up. By default a
/// kubelet takes any range of [65536, 2^32), the last one too, whose
/// mapping ends at 2^32 - 1, which the kernel refuses: a pod that draws
/// it (one in 65,535, at random) never gets its sandbox (kubernetes
/// issue 139916; seen once here, on CRI-O's pinns). Pods' maps are
/// checked to lie in this range (`kube_pods::assert_own_uid_map`).
pub const KUBELET_IDS: (u64, u64) = (65536, 1024 * 65536);

fn cache() -> PathBuf {
    PathBuf::from(
        std::env::var("KUBE_CACHE")
            .unwrap_or_else(|_| "/var/cache/userns-hostnet/kubernetes".to_string()),
    )
}

/// A component of the control plane's release, built by scripts/kubernetes.sh.
pub fn kube_bin(name: &str) -> PathBuf {
    kube_bin_of(VERSION, name)
}

/// A component of `version`, built by scripts/kubernetes.sh.
pub fn kube_bin_of(version: &str, name: &str) -> PathBuf {
    let path = cache().join(version).join("bin").join(name);
    assert!(path.is_file(), "{path:?} is missing: {BUILD_HINT}");
    path
}

fn etcd_bin() -> PathBuf {
    let path = cache().join("etcd/usr/bin/etcd");
    assert!(path.is_file(), "{path:?} is missing: {BUILD_HINT}");
    path
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

/// The CRI daemon the kubelet drives: its socket and where it reads CNI
/// configurations and plugins.
pub struct NodeRuntime<'a> {
    pub socket: &'a Path,
    pub cni_conf_dir: &'a Path,
    pub cni_bin_dir: &'a Path,
    /// What the kubelet's cgroup driver must be (the daemon's own).
    pub cgroup_driver: &'a str,
}

/// The kubelet of the control plane's release.
pub const KUBELET_DEFAULT: &str = VERSION;

pub struct Cluster {
    dir: Option<TempDir>,
    path: PathBuf,
    /// (name, process), in start order; stopped in reverse.
    procs: Vec<(&'static str, Child)>,
    kubeconfig: PathBuf,
    /// The API server's address and port.
    api: (String, u16),
    pub node: String,
    kubelet: PathBuf,
    kubelet_args: Vec<String>,
}

impl Cluster {
    /// Starts the control plane and a kubelet on `runtime`, and waits until
    /// the node is Ready and the default service account exists.
    pub fn start(runtime: &NodeRuntime<'_>) -> Cluster {
        Cluster::start_with_kubelet(runtime, KUBELET_DEFAULT)
    }

    /// As `start`, with the kubelet of release `kubelet` (the control plane
    /// stays VERSION: a kubelet may be up to three minors older).
    pub fn start_with_kubelet(runtime: &NodeRuntime<'_>, kubelet: &str) -> Cluster {
        Cluster::start_on(runtime, kubelet, "127.0.0.1")
    }

    /// As `start_with_kubelet`, the API server serving on `api_address`
    /// only (an address of this network namespace that another node's
    /// namespace reaches too: see `add_node`); every kubeconfig names it.
    pub fn start_on(runtime: &NodeRuntime<'_>, kubelet: &str, api_address: &str) -> Cluster {
        for (tool, package) in [
            ("openssl", "openssl"),
            ("unshare", "util-linux"),
            ("nsenter", "util-linux"),
            ("getsubids", "uidmap"),
        ] {
            assert!(
                super::find_in_path(tool).is_some(),
                "`{tool}` is missing: install the Debian package {package}"
            );
        }
        let cni_plugins = Path::new("/usr/lib/cni");
        assert!(
            cni_plugins.join("bridge").is_file() && cni_plugins.join("loopback").is_file(),
            "/usr/lib/cni/{{bridge,loopback}} are missing: install the Debian package \
             containernetworking-plugins"
        );
        for name in [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kubelet",
            "kubectl",
        ] {
            kube_bin(name);
        }
        let kubelet = kube_bin_of(kubelet, "kubelet");
        etcd_bin();
        clean_leftovers();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
            .tempdir_in("/tmp")
            .expect("create the cluster directory");
        let d = dir.path().to_path_buf();
        let pki = d.join("pki");
        fs::create_dir_all(&pki).unwrap();
        make_certificates(&pki, api_address);
        let api_port = free_port();
        let kubeconfig = d.join("admin.kubeconfig");
        fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: uhn\n  cluster:\n    \
                 server: https://{api_address}:{api_port}\n    certificate-authority: {pki}/ca.crt\n\
                 users:\n- name: admin\n  user:\n    client-certificate: {pki}/admin.crt\n    \
                 client-key: {pki}/admin.key\ncontexts:\n- name: uhn\n  context:\n    \
                 cluster: uhn\n    user: admin\ncurrent-context: uhn\n",
                pki = pki.display()
            ),
        )
        .unwrap();
        // The node's name is also the address the API server dials for
        // exec and logs (--kubelet-preferred-address-types=Hostname): the
        // kubelet listens on loopback only.
        let node = "localhost".to_string();
        let mut cluster = Cluster {
            dir: Some(dir),
            path: d.clone(),
            procs: Vec::new(),
            kubeconfig: kubeconfig.clone(),
            api: (api_address.to_owned(), api_port),
            node,
            kubelet,
            kubelet_args: Vec::new(),
        };

        let etcd_client = free_port();
        let etcd_peer = free_port();
        cluster.spawn(
            "etcd",
            Command::new(etcd_bin())
                .arg("--name=uhn")
                .arg(format!("--data-dir={}", d.join("etcd").display()))
                .arg(format!(
                    "--listen-client-urls=http://127.0.0.1:{etcd_client}"
                ))
                .arg(format!(
                    "--advertise-client-urls=http://127.0.0.1:{etcd_client}"
                ))
                .arg(format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer}"))
                .arg(format!(
                    "--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}"
                ))
                .arg(format!(
                    "--initial-cluster=uhn=http://127.0.0.1:{etcd_peer}"
                ))
                .arg("--listen-metrics-urls=")
                .arg("--unsafe-no-fsync"),
        );
        let p = |name: &str| pki.join(name).display().to_string();
        cluster.spawn(
            "kube-apiserver",
            Command::new(kube_bin("kube-apiserver"))
                .arg(format!("--etcd-servers=http://127.0.0.1:{etcd_client}"))
                .arg(format!("--bind-address={api_address}"))
                .arg(format!("--advertise-address={api_address}"))
                .arg(format!("--secure-port={api_port}"))
                .arg(format!("--cert-dir={}", d.join("apiserver").display()))
                .arg(format!("--tls-cert-file={}", p("apiserver.crt")))
                .arg(format!("--tls-private-key-file={}", p("apiserver.key")))
                .arg(format!("--client-ca-file={}", p("ca.crt")))
                .arg(format!("--service-account-key-file={}", p("sa.pub")))
                .arg(format!(
                    "--service-account-signing-key-file={}",
                    p("sa.key")
                ))
                .arg("--service-account-issuer=https://kubernetes.default.svc")
                .arg("--service-cluster-ip-range=10.254.0.0/24")
                .arg("--endpoint-reconciler-type=none")
                .arg("--authorization-mode=RBAC")
                // deploy/'s installer is privileged, as kubeadm's clusters allow.
                .arg("--allow-privileged=true")
                .arg(format!("--kubelet-client-certificate={}", p("admin.crt")))
                .arg(format!("--kubelet-client-key={}", p("admin.key")))
                .arg("--kubelet-preferred-address-types=Hostname")
                .arg(format!("--feature-gates={FEATURE_GATES}")),
        );
        cluster.wait_for("the API server to be ready", || {
            cluster.kubectl(&["get", "--raw", "/readyz"]).success()
        });
        let kc = format!("--kubeconfig={}", kubeconfig.display());
        cluster.spawn(
            "kube-controller-manager",
            Command::new(kube_bin("kube-controller-manager"))
                .arg(&kc)
                .arg("--bind-address=127.0.0.1")
                .arg(format!("--secure-port={}", free_port()))
                .arg("--leader-elect=false")
                .arg(format!(
                    "--service-account-private-key-file={}",
                    p("sa.key")
                ))
                .arg(format!("--root-ca-file={}", p("ca.crt")))
                .arg("--use-service-account-credentials=false")
                .arg(format!("--feature-gates={FEATURE_GATES}")),
        );
        cluster.spawn(
            "kube-scheduler",
            Command::new(kube_bin("kube-scheduler"))
                .arg(&kc)
                .arg("--bind-address=127.0.0.1")
                .arg(format!("--secure-port={}", free_port()))
                .arg("--leader-elect=false")
                .arg(format!("--feature-gates={FEATURE_GATES}")),
        );

        write_cni(runtime.cni_conf_dir, runtime.cni_bin_dir);
        let kubelet_root = d.join("kubelet");
        for sub in [
            "",
            "pki",
            "pods-logs",
            "volume-plugins",
            "var-log",
            "sysctl",
        ] {
            fs::create_dir_all(kubelet_root.join(sub)).unwrap();
        }
        let config = d.join("kubelet.yaml");
        fs::write(
            &config,
            kubelet_config(
                &kubelet_root,
                &pki,
                "127.0.0.1",
                free_port(),
                runtime.socket,
                runtime.cgroup_driver,
            ),
        )
        .unwrap();
        cluster.kubelet_args = vec![
            format!("--config={}", config.display()),
            kc.clone(),
            format!("--root-dir={}", kubelet_root.display()),
            format!("--cert-dir={}", kubelet_root.join("pki").display()),
            format!("--hostname-override={}", cluster.node),
            "--v=2".to_string(),
        ];
        cluster.start_kubelet();
        let node = cluster.node.clone();
        cluster.wait_for("the node to be Ready", || {
            cluster
                .kubectl(&[
                    "get",
                    "node",
                    &node,
                    "-o",
                    "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
                ])
                .stdout
                == "True"
        });
        cluster.wait_for("the default service account", || {
            cluster
                .kubectl(&["get", "serviceaccount", "default"])
                .success()
        });
        cluster
    }

    /// The API server's address and port.
    pub fn api(&self) -> (&str, u16) {
        (&self.api.0, self.api.1)
    }

    /// The kubelet in its private mount namespace (see the module's text),
    /// its output appended to kubelet.log.
    fn start_kubelet(&mut self) {
        let (kubelet, args) = (self.kubelet.clone(), self.kubelet_args.clone());
        self.spawn_kubelet("kubelet", &self.path.join("kubelet"), &kubelet, &args, None);
    }

    /// A kubelet with root directory `root` (its sysctl files and
    /// /var/log there), its output appended to NAME.log; in the network
    /// and UTS namespaces of process `namespaces` when given.
    fn spawn_kubelet(
        &mut self,
        name: &'static str,
        root: &Path,
        kubelet: &Path,
        args: &[String],
        namespaces: Option<u32>,
    ) {
        let sysctl = root.join("sysctl");
        let mut script = String::from("set -e\n");
        for (entry, value) in [
            ("vm/overcommit_memory", "vm.overcommit_memory"),
            ("vm/panic_on_oom", "vm.panic_on_oom"),
            ("kernel/panic", "kernel.panic"),
            ("kernel/panic_on_oops", "kernel.panic_on_oops"),
            ("kernel/keys/root_maxkeys", "kernel.keys.root_maxkeys"),
            ("kernel/keys/root_maxbytes", "kernel.keys.root_maxbytes"),
        ] {
            let file = sysctl.join(value);
            if !file.exists() {
                let now = fs::read_to_string(Path::new("/proc/sys").join(entry))
                    .unwrap_or_else(|e| panic!("read /proc/sys/{entry}: {e}"));
                fs::write(&file, now).unwrap();
            }
            script.push_str(&format!(
                "mount --bind {} /proc/sys/{entry}\n",
                file.display()
            ));
        }
        // The IDs the kubelet gives pods' user namespaces (see
        // KUBELET_IDS): a `kubelet` account and its subordinate IDs, in
        // this namespace only; the kubelet reads them with getsubids.
        let mut passwd = fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
        if !passwd.lines().any(|l| l.starts_with("kubelet:")) {
            passwd.push_str("kubelet:x:990:990:kubelet:/nonexistent:/usr/sbin/nologin\n");
        }
        fs::write(root.join("passwd"), passwd).unwrap();
        let (first, count) = KUBELET_IDS;
        fs::write(root.join("subids"), format!("kubelet:{first}:{count}\n")).unwrap();
        for (file, over) in [
            ("passwd", "/etc/passwd"),
            ("subids", "/etc/subuid"),
            ("subids", "/etc/subgid"),
        ] {
            assert!(
                Path::new(over).exists(),
                "{over} is missing (the Debian package passwd makes it)"
            );
            script.push_str(&format!(
                "mount --bind {} {over}\n",
                root.join(file).display()
            ));
        }
        script.push_str(&format!(
            "mount --bind {} /var/log\nexec \"$@\"\n",
            root.join("var-log").display()
        ));
        let mut cmd = Command::new("nsenter");
        if let Some(pid) = namespaces {
            cmd.arg(format!("--net=/proc/{pid}/ns/net"))
                .arg(format!("--uts=/proc/{pid}/ns/uts"));
        }
        cmd.args([
            "--",
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
        ])
        .arg(script)
        .arg("kubelet")
        .arg(kubelet)
        .args(args);
        self.spawn(name, &mut cmd);
    }

    /// A second node: a kubelet of release `kubelet` named `address`,
    /// which the API server dials by that name as it dials `localhost`,
    /// listening there only, with its own root directory, certificates,
    /// pod logs, sysctl files and /var/log, driving `runtime`; in the
    /// network and UTS namespaces of process `namespaces` when given
    /// (`address` is then that namespace's, and the API server's address
    /// must be reachable from it), else an address of the loopback network
    /// other than 127.0.0.1. Waits until the node is Ready; returns how
    /// long that took.
    pub fn add_node(
        &mut self,
        runtime: &NodeRuntime<'_>,
        kubelet: &str,
        address: &str,
        namespaces: Option<u32>,
    ) -> Duration {
        let started = Instant::now();
        let kubelet = kube_bin_of(kubelet, "kubelet");
        let root = self.path.join(format!("kubelet-{address}"));
        for sub in [
            "",
            "pki",
            "pods-logs",
            "volume-plugins",
            "var-log",
            "sysctl",
        ] {
            fs::create_dir_all(root.join(sub)).unwrap();
        }
        write_cni(runtime.cni_conf_dir, runtime.cni_bin_dir);
        let config = self.path.join(format!("kubelet-{address}.yaml"));
        fs::write(
            &config,
            kubelet_config(
                &root,
                &self.path.join("pki"),
                address,
                free_port(),
                runtime.socket,
                runtime.cgroup_driver,
            ),
        )
        .unwrap();
        let args = vec![
            format!("--config={}", config.display()),
            format!("--kubeconfig={}", self.kubeconfig.display()),
            format!("--root-dir={}", root.display()),
            format!("--cert-dir={}", root.join("pki").display()),
            format!("--hostname-override={address}"),
            "--v=2".to_string(),
        ];
        self.spawn_kubelet("kubelet-2", &root, &kubelet, &args, namespaces);
        self.wait_for(&format!("node {address} to be Ready"), || {
            self.kubectl(&[
                "get",
                "node",
                address,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ])
            .stdout
                == "True"
        });
        started.elapsed()
    }

    /// Starts a component with its output appended to NAME.log.
    fn spawn(&mut self, name: &'static str, cmd: &mut Command) {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path.join(format!("{name}.log")))
            .unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        self.procs.push((name, child));
    }

    /// Polls `ready` until it holds; fails with every component's log tail
    /// when START_TIMEOUT passes or a component exited.
    pub fn wait_for(&self, what: &str, ready: impl Fn() -> bool) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if ready() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}\n{}",
                self.logs_tail()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// The last lines of every component's log, for failure messages.
    pub fn logs_tail(&self) -> String {
        let mut text = String::new();
        for (name, _) in &self.procs {
            let log = fs::read_to_string(self.path.join(format!("{name}.log"))).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let from = lines.len().saturating_sub(25);
            text.push_str(&format!("--- {name}.log (last lines)\n"));
            for l in &lines[from..] {
                text.push_str(l);
                text.push('\n');
            }
        }
        text
    }

    /// A component's whole log.
    pub fn log(&self, name: &str) -> String {
        fs::read_to_string(self.path.join(format!("{name}.log"))).unwrap_or_default()
    }

    pub fn dir(&self) -> &Path {
        &self.path
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn kubectl_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(kube_bin("kubectl"));
        cmd.arg(format!("--kubeconfig={}", self.kubeconfig.display()))
            .arg("--request-timeout=60s")
            .args(args);
        cmd
    }

    pub fn kubectl(&self, args: &[&str]) -> Outcome {
        run_capture(&mut self.kubectl_command(args))
    }

    /// kubectl that must succeed: its standard output.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(out.success(), "{}\n{}", out.describe(), self.logs_tail());
        out.stdout
    }

    /// `kubectl apply -f` of a JSON object.
    pub fn apply(&self, object: &Value) {
        let name = object["metadata"]["name"].as_str().unwrap_or("object");
        let file = self.path.join(format!(
            "{}-{name}.json",
            object["kind"].as_str().unwrap_or("object")
        ));
        fs::write(&file, serde_json::to_vec_pretty(object).unwrap()).unwrap();
        self.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    }

    /// The pod's phase, empty when it does not exist.
    pub fn phase(&self, pod: &str) -> String {
        self.kubectl(&["get", "pod", pod, "-o", "jsonpath={.status.phase}"])
            .stdout
    }

    /// Waits until the pod is Running; fails with its description and the
    /// events when it does not get there.
    pub fn wait_running(&self, pod: &str) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let phase = self.phase(pod);
            if phase == "Running" {
                return;
            }
            assert!(
                Instant::now() < deadline && phase != "Failed" && phase != "Succeeded",
                "pod {pod} is not Running (phase {phase:?})\n{}\n{}",
                self.describe(pod),
                self.logs_tail()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// `kubectl describe pod`.
    pub fn describe(&self, pod: &str) -> String {
        let out = self.kubectl(&["describe", "pod", pod]);
        format!("{}{}", out.stdout, out.stderr)
    }

    /// The messages of the events about a pod, oldest first.
    pub fn events(&self, pod: &str) -> Vec<String> {
        let out = self.kubectl(&[
            "get",
            "events",
            "--field-selector",
            &format!("involvedObject.name={pod}"),
            "-o",
            "json",
        ]);
        let list: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|e| {
                        format!(
                            "{} {}: {}",
                            e["type"].as_str().unwrap_or(""),
                            e["reason"].as_str().unwrap_or(""),
                            e["message"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until an event about the pod satisfies `matches`: that event.
    pub fn wait_event(&self, pod: &str, matches: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(e) = self.events(pod).into_iter().find(|e| matches(e)) {
                return e;
            }
            assert!(
                Instant::now() < deadline,
                "no matching event for pod {pod}\n{}\n{}",
                self.describe(pod),
                self.logs_tail()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// `kubectl exec POD -c CONTAINER -- ARGV`.
    pub fn exec(&self, pod: &str, container: &str, argv: &[&str]) -> Outcome {
        let mut args = vec!["exec", pod, "-c", container, "--"];
        args.extend_from_slice(argv);
        self.kubectl(&args)
    }

    /// Deletes the pod and waits until the API server forgets it.
    pub fn delete_pod(&self, pod: &str) {
        self.kubectl_ok(&["delete", "pod", pod, "--wait=true", "--timeout=120s"]);
    }

    /// The node's declared features (NodeDeclaredFeatures).
    pub fn declared_features(&self) -> Vec<String> {
        let out = self.kubectl_ok(&["get", "node", &self.node, "-o", "json"]);
        let node: Value = serde_json::from_str(&out).expect("node JSON");
        node["status"]["declaredFeatures"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Stops every component, kubelet first; returns the processes that
    /// had to be killed after 20 s.
    pub fn stop(&mut self) -> Vec<String> {
        let mut killed = Vec::new();
        while let Some((name, mut child)) = self.procs.pop() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut exited = false;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    exited = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if !exited {
                killed.push(name.to_string());
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        force_clean(&self.path);
        killed
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

/// A cluster whose node runs on the containerd of `cri`, kubelet
/// KUBELET_DEFAULT.
pub fn containerd_cluster(cri: &Cri) -> Cluster {
    containerd_cluster_with(cri, KUBELET_DEFAULT)
}

/// As containerd_cluster, kubelet `kubelet`.
pub fn containerd_cluster_with(cri: &Cri, kubelet: &str) -> Cluster {
    containerd_cluster_on(cri, kubelet, "127.0.0.1")
}

/// The API server serving on `api_address`.
pub fn containerd_cluster_on(cri: &Cri, kubelet: &str, api_address: &str) -> Cluster {
    let d = cri.dir();
    Cluster::start_on(
        &NodeRuntime {
            socket: &d.join("sock"),
            cni_conf_dir: &d.join("cni/conf"),
            cni_bin_dir: &d.join("cni/bin"),
            cgroup_driver: "cgroupfs",
        },
        kubelet,
        api_address,
    )
}

/// A cluster whose node runs on the CRI-O of `crio`, kubelet `kubelet`.
pub fn crio_cluster(crio: &Crio, kubelet: &str) -> Cluster {
    let d = crio.dir();
    Cluster::start_with_kubelet(
        &NodeRuntime {
            socket: &d.join("crio.sock"),
            cni_conf_dir: &d.join("cni/net.d"),
            cni_bin_dir: &d.join("cni/bin"),
            cgroup_driver: "cgroupfs",
        },
        kubelet,
    )
}

/// The kubelet's configuration (see the module's text for the cgroup
/// settings). Eviction thresholds are low and image garbage collection off:
/// the machine's disk is shared and its usage is nobody's business here.
fn kubelet_config(
    root: &Path,
    pki: &Path,
    address: &str,
    port: u16,
    socket: &Path,
    driver: &str,
) -> String {
    format!(
        "apiVersion: kubelet.config.k8s.io/v1beta1\n\
         kind: KubeletConfiguration\n\
         address: {address}\n\
         port: {port}\n\
         readOnlyPort: 0\n\
         healthzPort: 0\n\
         authentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: false\n  \
         x509:\n    clientCAFile: {ca}\n\
         authorization:\n  mode: AlwaysAllow\n\
         containerRuntimeEndpoint: unix://{sock}\n\
         imageServiceEndpoint: unix://{sock}\n\
         cgroupDriver: {driver}\n\
         failCgroupV1: false\n\
         cgroupsPerQOS: false\n\
         enforceNodeAllocatable: []\n\
         failSwapOn: false\n\
         protectKernelDefaults: false\n\
         podLogsDir: {logs}\n\
         volumePluginDir: {plugins}\n\
         featureGates:\n  UserNamespacesHostNetworkSupport: true\n\
         evictionHard:\n  memory.available: \"1Mi\"\n  nodefs.available: \"1%\"\n  \
         nodefs.inodesFree: \"1%\"\n  imagefs.available: \"1%\"\n\
         imageGCHighThresholdPercent: 100\n\
         imageGCLowThresholdPercent: 99\n\
         syncFrequency: 10s\n\
         nodeStatusUpdateFrequency: 5s\n\
         runtimeRequestTimeout: 4m\n",
        ca = pki.join("ca.crt").display(),
        sock = socket.display(),
        logs = root.join("pods-logs").display(),
        plugins = root.join("volume-plugins").display(),
    )
}

/// A bridge network (never used: every pod of the tier is on the host
/// network) so the daemon reports NetworkReady and the node Ready, with
/// Debian's plugins linked into the daemon's CNI bin directory.
fn write_cni(conf_dir: &Path, bin_dir: &Path) {
    fs::create_dir_all(conf_dir).unwrap();
    fs::create_dir_all(bin_dir).unwrap();
    for plugin in ["bridge", "loopback", "host-local", "portmap"] {
        let link = bin_dir.join(plugin);
        if !link.exists() {
            std::os::unix::fs::symlink(Path::new("/usr/lib/cni").join(plugin), link).unwrap();
        }
    }
    let conf = json!({
        "cniVersion": "1.0.0",
        "name": "uhn-test",
        "plugins": [{
            "type": "bridge",
            "bridge": format!("uhn{}", std::process::id() % 100_000),
            "isGateway": false,
            "ipMasq": false,
            "ipam": {
                "type": "host-local",
                "ranges": [[{"subnet": "10.253.0.0/24"}]],
                "dataDir": conf_dir.join("ipam").display().to_string(),
            },
        }],
    });
    fs::write(
        conf_dir.join("10-uhn.conflist"),
        serde_json::to_vec_pretty(&conf).unwrap(),
    )
    .unwrap();
}

/// A CA, the API server's serving certificate for 127.0.0.1, localhost and
/// `api_address`, an admin client certificate (system:masters: the
/// controller manager, the scheduler, the kubelet and kubectl use it; the
/// API server shows it to the kubelet) and the service account signing
/// key.
fn make_certificates(pki: &Path, api_address: &str) {
    let script = pki.join("make.sh");
    write_script(
        &script,
        r#"#!/bin/sh
set -e
cd "$(dirname "$0")"
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
openssl req -x509 $ec -keyout ca.key -out ca.crt -days 1 -subj /CN=uhn-test-ca 2>/dev/null
leaf() {
	openssl req $ec -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
	printf '%s\n' "$3" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
		-out "$1.crt" -extfile "$1.ext" 2>/dev/null
}
leaf apiserver /CN=kube-apiserver "subjectAltName=IP:127.0.0.1,IP:$1,DNS:localhost,DNS:kubernetes.default.svc"
leaf admin "/O=system:masters/CN=uhn-admin" "extendedKeyUsage=clientAuth"
openssl ecparam -name prime256v1 -genkey -noout -out sa.key
openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
"#,
    );
    let out = run_capture(Command::new(&script).arg(api_address));
    assert!(out.success(), "certificates: {}", out.describe());
}

/// Kills what still names `dir` and unmounts anything left under it.
fn force_clean(dir: &Path) {
    for (pid, _) in processes_naming(dir) {
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg(pid.to_string())
            .status();
    }
    super::unmount_below(dir);
}

/// Cleans up after test processes that died without dropping their
/// cluster: their directories carry their pid.
fn clean_leftovers() {
    for dir in super::leftover_dirs(DIR_PREFIX) {
        force_clean(&dir);
        let _ = fs::remove_dir_all(&dir);
    }
}

/// A point-to-point link (a veth pair, a /30) between this network
/// namespace, at `host`, and that of process `pid`, at `node`: how a node
/// of its own network reaches the API server and the API server its
/// kubelet. Gone with that namespace, or on drop.
pub struct Link {
    name: String,
}

impl Link {
    pub fn connect(pid: u32, host: &str, node: &str) -> Link {
        // An interface name has at most 15 bytes.
        let name = format!("uhn{}", std::process::id() % 1_000_000);
        let peer = format!("{name}n");
        let netns = format!("/proc/{pid}/ns/net");
        let link = Link { name: name.clone() };
        for args in [
            vec![
                "ip", "link", "add", &name, "type", "veth", "peer", "name", &peer, "netns", &netns,
            ],
            vec!["ip", "addr", "add", &format!("{host}/30"), "dev", &name],
            vec!["ip", "link", "set", &name, "up"],
        ] {
            run_capture(Command::new(args[0]).args(&args[1..])).assert_success();
        }
        for args in [
            vec!["ip", "addr", "add", &format!("{node}/30"), "dev", &peer],
            vec!["ip", "link", "set", &peer, "up"],
        ] {
            run_capture(
                Command::new("nsenter")
                    .arg(format!("--net={netns}"))
                    .arg("--")
                    .args(&args),
            )
            .assert_success();
        }
        link
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.name])
            .stderr(Stdio::null())
            .status();
    }
}
