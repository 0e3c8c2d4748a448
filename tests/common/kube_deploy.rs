//! deploy/ on a node of the Kubernetes tier: the node's CRI daemon as the
//! installer meets it ([`DeployNode`]), this checkout's installer image
//! imported into the node's store, the installer's service account and
//! token, and the one-node scenario of `kubectl apply -k deploy/`: install,
//! a rollout of the installer (the upgrade of its DaemonSet) with pods of
//! the handler running, the installer's pod deleted, and the removal.

use std::time::Instant;

use serde_json::{json, Value};

use super::cri::Cri;
use super::kube_pods::{
    assert_hardened, assert_nothing_left, feature_deployment, feature_pod, look, WRAPPER_CLASS,
};
use super::kubernetes::Cluster;

/// The installer image as deploy/ names it, and the tag of its rollout.
pub const INSTALLER: &str = "localhost/userns-hostnet-installer:0.1.0";
pub const INSTALLER_ROLLOUT: &str = "localhost/userns-hostnet-installer:0.1.0-rollout";
pub const DEPLOY_NS: &str = "userns-hostnet-system";
pub const DEPLOY_DS: &str = "userns-hostnet-deploy";
pub const CLEANUP_DS: &str = "userns-hostnet-cleanup";
/// The handler the DaemonSet registers (a name no other tier uses).
pub const DEPLOYED_HANDLER: &str = "uhn-k8s-deployed";
/// The node label deploy sets and the RuntimeClass selects on.
pub const LABEL: &str = "userns-hostnet.io/installed";

/// The node's CRI daemon as deploy/ meets it.
pub trait DeployNode {
    /// What the installer's USERNS_HOSTNET_DAEMON names.
    fn daemon(&self) -> &'static str;
    /// The configuration file the installer is given.
    fn config(&self) -> std::path::PathBuf;
    /// Every file of the daemon's configuration install may write, with
    /// its bytes: what removal must give back.
    fn config_files(&self) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>;
    /// Does the configuration define `handler`?
    fn registered(&self, handler: &str) -> bool;
    /// Restarts the daemon on its configuration, as its supervisor would.
    fn restart(&mut self);
    /// Imports the docker-archive `tar` (image `private`) into the node's
    /// image store under each of `names`.
    fn import_image(&self, tar: &std::path::Path, private: &str, names: &[&str]);
    /// What of its pods the daemon still holds (pods, containers, runtime
    /// state, mounts, processes).
    fn leftovers(&self) -> Vec<String>;
    /// crictl against the daemon.
    fn crictl(&self, args: &[&str]) -> super::Outcome;
}

impl DeployNode for Cri {
    fn daemon(&self) -> &'static str {
        "containerd"
    }
    fn config(&self) -> std::path::PathBuf {
        self.dir().join("config.toml")
    }
    fn config_files(&self) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
        let config = DeployNode::config(self);
        let bytes = std::fs::read(&config).unwrap();
        [(config, bytes)].into()
    }
    fn registered(&self, handler: &str) -> bool {
        std::fs::read_to_string(DeployNode::config(self))
            .unwrap()
            .contains(&format!("runtimes.{handler}]"))
    }
    fn restart(&mut self) {
        Cri::restart(self);
    }
    fn leftovers(&self) -> Vec<String> {
        Cri::leftovers(self)
    }
    fn crictl(&self, args: &[&str]) -> super::Outcome {
        super::crictl::Crictl::crictl(self, args)
    }
    fn import_image(&self, tar: &std::path::Path, private: &str, names: &[&str]) {
        let ctd = self.containerd();
        ctd.ctr(&["-n", "k8s.io", "images", "import", tar.to_str().unwrap()])
            .assert_success();
        for name in names {
            ctd.ctr(&["-n", "k8s.io", "images", "tag", private, name])
                .assert_success();
        }
    }
}

impl DeployNode for super::crio::Crio {
    fn daemon(&self) -> &'static str {
        "crio"
    }
    fn config(&self) -> std::path::PathBuf {
        self.dir().join("crio.conf")
    }
    /// crio.conf and every file of crio.conf.d, where install writes.
    fn config_files(&self) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
        let mut files = std::collections::BTreeMap::new();
        let config = DeployNode::config(self);
        files.insert(config.clone(), std::fs::read(&config).unwrap());
        for e in std::fs::read_dir(self.dir().join("crio.conf.d")).unwrap() {
            let path = e.unwrap().path();
            files.insert(path.clone(), std::fs::read(&path).unwrap());
        }
        files
    }
    fn registered(&self, handler: &str) -> bool {
        let table = format!("[crio.runtime.runtimes.{handler}]");
        self.config_files()
            .values()
            .any(|bytes| String::from_utf8_lossy(bytes).contains(&table))
    }
    fn restart(&mut self) {
        super::crio::Crio::restart(self);
    }
    fn leftovers(&self) -> Vec<String> {
        super::crio::Crio::leftovers(self)
    }
    fn crictl(&self, args: &[&str]) -> super::Outcome {
        super::crictl::Crictl::crictl(self, args)
    }
    fn import_image(&self, tar: &std::path::Path, _private: &str, names: &[&str]) {
        for name in names {
            super::crio::Crio::import_image(self, tar, name);
        }
    }
}

/// The installer image of this checkout (`make image` stages its static
/// binaries in target/image; built here under a private tag, as
/// tests/e2e_deploy.rs does, since podman's store is shared), saved and
/// imported into the node's image store (containerd's k8s.io namespace)
/// under the name deploy/ gives it and the rollout's tag: no registry.
pub fn import_installer(node: &dyn DeployNode, dir: &std::path::Path) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let stage = root.join("target/image");
    assert!(
        stage.join("userns-hostnet").is_file() && stage.join("userns-hostnet-runtime").is_file(),
        "{} holds no installer binaries: run `make image` first",
        stage.display()
    );
    let private = format!(
        "localhost/userns-hostnet-installer:uhn-k8s-{}",
        std::process::id()
    );
    let podman = |args: &[&str]| {
        super::run_capture(std::process::Command::new("podman").args(args)).assert_success();
    };
    let containerfile = root.join("Containerfile");
    podman(&[
        "build",
        "--quiet",
        "--file",
        containerfile.to_str().unwrap(),
        "--tag",
        &private,
        stage.to_str().unwrap(),
    ]);
    let tar = dir.join("installer.tar");
    podman(&[
        "save",
        "--format",
        "docker-archive",
        "--output",
        tar.to_str().unwrap(),
        &private,
    ]);
    node.import_image(&tar, &private, &[INSTALLER, INSTALLER_ROLLOUT]);
    podman(&["rmi", &private]);
}

/// The environment an operator of this node gives the installer: its
/// containerd's config file and handler name, a bin directory, the restart
/// of a containerd systemd does not run (here: the test plays its
/// supervisor, asked through `request`), and the API server's address
/// (this cluster has no kube-proxy, so the installer runs on the host's
/// network and dials the API server directly).
pub fn installer_env(
    k: &Cluster,
    node: &dyn DeployNode,
    bin: &std::path::Path,
    request: &std::path::Path,
) -> Value {
    let restart = format!(
        "touch {r} && while [ -e {r} ]; do sleep 0.2; done",
        r = request.display()
    );
    json!([
        {"name": "KUBERNETES_SERVICE_HOST", "value": k.api().0},
        {"name": "KUBERNETES_SERVICE_PORT", "value": k.api().1.to_string()},
        {"name": "USERNS_HOSTNET_DAEMON", "value": node.daemon()},
        {"name": "USERNS_HOSTNET_DAEMON_CONFIG", "value": node.config()},
        {"name": "USERNS_HOSTNET_HANDLER", "value": DEPLOYED_HANDLER},
        {"name": "USERNS_HOSTNET_BIN_DIR", "value": bin},
        {"name": "USERNS_HOSTNET_RESTART_COMMAND", "value": restart},
    ])
}

/// A kustomize overlay of deploy/ (or deploy/cleanup/) in `dir`: the
/// installer's environment for this node, on the host's network, and the
/// RuntimeClass naming the handler it registers.
pub fn write_overlay(
    dir: &std::path::Path,
    base: &str,
    daemonset: &str,
    container: &str,
    env: &Value,
    service_account: &std::path::Path,
) {
    std::fs::create_dir_all(dir).unwrap();
    // kustomize takes a base by relative path only.
    let dir = std::fs::canonicalize(dir).unwrap();
    let up = "../".repeat(dir.components().count() - 1);
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(base);
    let base = format!("{up}{}", base.strip_prefix("/").unwrap().display());
    let mut patches = vec![json!({"path": "daemonset.yaml"})];
    let ds = json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": daemonset, "namespace": DEPLOY_NS},
        "spec": {"template": {"spec": {
            "hostNetwork": true,
            // The private containerd's mount namespace is private
            // (tests/common/containerd.rs), so its `/` can be bound only
            // without propagation; a node whose `/` is shared (systemd's)
            // takes deploy/'s HostToContainer as shipped.
            // The kubelet's projected volumes are tmpfs mounts in its own
            // private mount namespace, which the private containerd never
            // sees (tests/common/kubernetes.rs): the service account's
            // token (from the TokenRequest API) and CA reach the pod from
            // a host directory at the path Kubernetes mounts them.
            "automountServiceAccountToken": false,
            "volumes": [{"name": "service-account", "hostPath": {"path": service_account, "type": "Directory"}}],
            "containers": [{
                "name": container,
                "env": env,
                "volumeMounts": [
                    {
                        "name": "host-root",
                        "mountPath": "/host",
                        "mountPropagation": "None",
                    },
                    {
                        "name": "service-account",
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "readOnly": true,
                    },
                ],
            }],
        }}},
    });
    std::fs::write(dir.join("daemonset.yaml"), ds.to_string()).unwrap();
    if daemonset == DEPLOY_DS {
        let rc = json!({
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": WRAPPER_CLASS},
            "handler": DEPLOYED_HANDLER,
        });
        std::fs::write(dir.join("runtimeclass.yaml"), rc.to_string()).unwrap();
        patches.push(json!({"path": "runtimeclass.yaml"}));
    }
    let kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [base],
        "patches": patches,
    });
    std::fs::write(dir.join("kustomization.yaml"), kustomization.to_string()).unwrap();
}

/// The installer's service account, made ahead of deploy/ (whose apply
/// keeps it), and its token from the TokenRequest API with the cluster's CA
/// in a directory of the host: where the pod's are found.
pub fn installer_credentials(k: &Cluster, work: &std::path::Path) -> std::path::PathBuf {
    k.kubectl_ok(&["create", "namespace", DEPLOY_NS]);
    k.kubectl_ok(&["-n", DEPLOY_NS, "create", "serviceaccount", DEPLOY_DS]);
    service_account_dir(k, work)
}

/// A token of the installer's service account, the cluster's CA and the
/// namespace, laid out as a pod finds them.
pub fn service_account_dir(k: &Cluster, work: &std::path::Path) -> std::path::PathBuf {
    let token = k.kubectl_ok(&[
        "-n",
        DEPLOY_NS,
        "create",
        "token",
        DEPLOY_DS,
        "--duration=1h",
    ]);
    let dir = work.join("service-account");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("token"), token.trim()).unwrap();
    std::fs::copy(k.dir().join("pki/ca.crt"), dir.join("ca.crt")).unwrap();
    std::fs::write(dir.join("namespace"), DEPLOY_NS).unwrap();
    dir
}

/// Whether the node carries the installer's label.
pub fn node_labelled(k: &Cluster) -> bool {
    k.kubectl(&[
        "get",
        "node",
        "localhost",
        "-o",
        "jsonpath={.metadata.labels.userns-hostnet\\.io/installed}",
    ])
    .stdout
        == "true"
}

/// The DaemonSet's ready pods and how many it wants.
pub fn daemonset_ready(k: &Cluster, name: &str) -> bool {
    let out = k.kubectl(&[
        "-n",
        DEPLOY_NS,
        "get",
        "daemonset",
        name,
        "-o",
        "jsonpath={.status.numberReady}/{.status.desiredNumberScheduled}/{.status.updatedNumberScheduled}",
    ]);
    out.stdout == "1/1/1"
}

/// Polls `done`, playing the supervisor of the private containerd: when
/// the installer's restart command asks (the request file exists), the
/// daemon is restarted on its config and the request removed. How many
/// restarts it made.
pub fn wait_serving_restarts(
    k: &Cluster,
    node: &mut dyn DeployNode,
    request: &std::path::Path,
    what: &str,
    done: impl Fn(&Cluster) -> bool,
) -> usize {
    let deadline = Instant::now() + std::time::Duration::from_secs(240);
    let mut restarts = 0;
    loop {
        if request.exists() {
            node.restart();
            std::fs::remove_file(request).unwrap();
            restarts += 1;
        }
        if done(k) {
            return restarts;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}\n{}\n{}\n{}",
            k.kubectl(&["-n", DEPLOY_NS, "get", "pods", "-o", "wide"])
                .describe(),
            k.kubectl(&["-n", DEPLOY_NS, "describe", "pods"]).describe(),
            k.kubectl(&[
                "-n",
                DEPLOY_NS,
                "logs",
                "--tail=40",
                "-l",
                "app.kubernetes.io/name"
            ])
            .describe(),
            k.logs_tail()
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// The one pod of a Deployment (or DaemonSet) selected by `app`.
pub fn pod_of(k: &Cluster, ns: &str, selector: &str) -> String {
    let out = k.kubectl(&[
        "-n",
        ns,
        "get",
        "pods",
        "-l",
        selector,
        "--field-selector=status.phase=Running",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    out.stdout
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_owned()
}

/// Undoes the installer's work on this host whatever happened (the
/// product's own undo, from its recorded state), so that a failed run
/// leaves no handler links or state behind.
pub struct HostUndo {
    daemon: &'static str,
    config: std::path::PathBuf,
}

impl Drop for HostUndo {
    fn drop(&mut self) {
        let out = super::run_capture(
            std::process::Command::new(super::TOOL)
                .args([
                    "deploy",
                    "--uninstall",
                    "--host-root",
                    "/",
                    "--daemon",
                    self.daemon,
                ])
                .arg("--daemon-config")
                .arg(&self.config)
                .args(["--handler", DEPLOYED_HANDLER])
                .env_remove("NODE_NAME")
                .env_remove("KUBERNETES_SERVICE_HOST"),
        );
        if !out.success() {
            eprintln!("undoing the installer's work failed\n{}", out.describe());
        }
    }
}

/// `kubectl apply -k` of deploy/ through an overlay for this node: the
/// DaemonSet's pod registers the handler with the product's own install
/// (nothing is registered beforehand), restarts the daemon through the
/// operator's restart command, labels the node; the RuntimeClass's
/// nodeSelector schedules a Deployment of the feature's pod, which runs
/// hardened. A rollout of the DaemonSet and a deletion of its pod leave
/// that pod running and exec-able, and pods of the class start during and
/// after. Removal is the deliberate cleanup DaemonSet: the label and the
/// handler go, the daemon's config is byte for byte what it was.
///
/// `place` puts a pod where it must go: as it is where the scheduler can
/// place the feature's pods, else bound to the node.
pub fn scenario_daemonset(k: &Cluster, node: &mut dyn DeployNode, place: &dyn Fn(Value) -> Value) {
    let _host = super::host_deploy_lock();
    let scenario = Instant::now();
    let work = k.dir().join("deploy");
    std::fs::create_dir_all(&work).unwrap();
    let daemon = node.daemon();
    let original = node.config_files();
    assert!(
        !node.registered(DEPLOYED_HANDLER),
        "the handler is registered before the installer ran"
    );
    let request = work.join("restart-requested");
    let bin = work.join("bin");
    let _undo = HostUndo {
        daemon,
        config: node.config(),
    };
    import_installer(node, &work);
    let env = installer_env(k, node, &bin, &request);
    let overlay = work.join("overlay");
    let service_account = installer_credentials(k, &work);
    write_overlay(
        &overlay,
        "deploy",
        DEPLOY_DS,
        "deploy",
        &env,
        &service_account,
    );
    // The row's own RuntimeClass of that name goes: deploy/ brings its own.
    k.kubectl_ok(&[
        "delete",
        "runtimeclass",
        WRAPPER_CLASS,
        "--ignore-not-found",
    ]);

    let started = Instant::now();
    k.kubectl_ok(&["apply", "-k", overlay.to_str().unwrap()]);
    let restarts = wait_serving_restarts(k, node, &request, "the installer to be ready", |k| {
        daemonset_ready(k, DEPLOY_DS) && node_labelled(k)
    });
    eprintln!(
        "DaemonSet ready and node labelled after {:?} ({restarts} {daemon} restart(s) asked for)",
        started.elapsed()
    );
    // What an operator checks, for the record of a run.
    for args in [
        &["-n", DEPLOY_NS, "get", "pods", "-o", "wide"][..],
        &[
            "-n",
            DEPLOY_NS,
            "logs",
            "--tail=-1",
            "-l",
            "app.kubernetes.io/name",
        ][..],
        &["get", "node", "localhost", "--show-labels"][..],
    ] {
        eprintln!(
            "kubectl {}\n{}",
            args.join(" "),
            k.kubectl_ok(args).trim_end()
        );
    }
    assert_eq!(restarts, 1, "the installer asked for one restart");
    assert!(
        node.registered(DEPLOYED_HANDLER),
        "the installer did not register {DEPLOYED_HANDLER} in {}: {:#?}",
        node.config().display(),
        node.config_files().keys()
    );
    for name in ["userns-hostnet-runtime", "userns-hostnet"] {
        assert!(
            bin.join(name).is_file(),
            "{name} not copied to {}",
            bin.display()
        );
    }

    // The RuntimeClass's nodeSelector schedules a Deployment of the
    // feature's pod onto the labelled node.
    k.apply(&feature_deployment(
        "hardened-deployment",
        1,
        place(feature_pod("unused", WRAPPER_CLASS)),
    ));
    k.wait_for("the Deployment's pod to run", || {
        !pod_of(k, "default", "app=hardened-deployment").is_empty()
    });
    let pod = pod_of(k, "default", "app=hardened-deployment");
    let selector = k.kubectl_ok(&["get", "pod", &pod, "-o", "jsonpath={.spec.nodeSelector}"]);
    assert!(
        selector.contains(LABEL),
        "the RuntimeClass's nodeSelector is not on the pod: {selector}"
    );
    for c in ["app", "second"] {
        assert_hardened(&look(k, &pod, c), &format!("deployed handler, {c}"));
    }

    // A rollout (a new tag of the same image): the running pod keeps
    // running, and a pod of the class starts while it goes on.
    k.kubectl_ok(&[
        "-n",
        DEPLOY_NS,
        "set",
        "image",
        &format!("daemonset/{DEPLOY_DS}"),
        &format!("deploy={INSTALLER_ROLLOUT}"),
    ]);
    k.apply(&place(feature_pod("during-rollout", WRAPPER_CLASS)));
    let restarts = wait_serving_restarts(k, node, &request, "the rollout", |k| {
        daemonset_ready(k, DEPLOY_DS)
            && k.kubectl(&[
                "-n",
                DEPLOY_NS,
                "get",
                "pods",
                "-l",
                &format!("app.kubernetes.io/name={DEPLOY_DS}"),
                "-o",
                "jsonpath={.items[*].spec.containers[0].image}",
            ])
            .stdout
                == INSTALLER_ROLLOUT
    });
    assert_eq!(
        restarts, 0,
        "a rollout of the same binaries restarts nothing"
    );
    k.wait_running("during-rollout");
    assert_hardened(
        &look(k, "during-rollout", "app"),
        "a pod started during the rollout",
    );
    assert_eq!(k.phase(&pod), "Running", "{}", k.describe(&pod));
    assert_hardened(
        &look(k, &pod, "app"),
        "the Deployment's pod after the rollout",
    );
    assert!(node_labelled(k), "the rollout removed the node's label");

    // The DaemonSet's pod deleted: nothing is undone.
    let installer = pod_of(k, DEPLOY_NS, &format!("app.kubernetes.io/name={DEPLOY_DS}"));
    k.kubectl_ok(&["-n", DEPLOY_NS, "delete", "pod", &installer, "--wait=true"]);
    assert!(
        node_labelled(k),
        "deleting the installer's pod removed the label"
    );
    assert!(
        node.registered(DEPLOYED_HANDLER),
        "deleting the installer's pod removed the handler"
    );
    k.apply(&place(feature_pod("after-delete", WRAPPER_CLASS)));
    k.wait_running("after-delete");
    assert_hardened(
        &look(k, "after-delete", "app"),
        "a pod started after the installer's pod went",
    );
    assert_eq!(k.phase(&pod), "Running", "{}", k.describe(&pod));
    assert_hardened(
        &look(k, &pod, "app"),
        "the Deployment's pod after its installer's deletion",
    );
    wait_serving_restarts(k, node, &request, "the installer's new pod", |k| {
        daemonset_ready(k, DEPLOY_DS)
    });

    // Removal, as the operator does it: the workloads of the class go,
    // the installer goes (leaving the install), the cleanup DaemonSet
    // undoes it.
    k.kubectl_ok(&["delete", "deployment", "hardened-deployment", "--wait=true"]);
    k.delete_pod("during-rollout");
    k.delete_pod("after-delete");
    k.kubectl_ok(&[
        "-n",
        DEPLOY_NS,
        "delete",
        "daemonset",
        DEPLOY_DS,
        "--wait=true",
    ]);
    assert!(node_labelled(k), "deleting the installer removed the label");
    // A deleted pod's stopped containers stay on the node until the
    // kubelet's garbage collection removes them; CRI-O restarted without
    // the handler can no longer remove those of the class (it looks the
    // container's handler up to delete it), so the cleanup waits for them.
    assert_nothing_left("the deleted pods, before the cleanup", &|| node.leftovers());
    let cleanup = work.join("cleanup");
    write_overlay(
        &cleanup,
        "deploy/cleanup",
        CLEANUP_DS,
        "cleanup",
        &env,
        &service_account,
    );
    k.kubectl_ok(&["apply", "-k", cleanup.to_str().unwrap()]);
    let restarts = wait_serving_restarts(k, node, &request, "the cleanup", |k| {
        daemonset_ready(k, CLEANUP_DS) && !node_labelled(k)
    });
    assert_eq!(restarts, 1, "the cleanup asked for one restart");
    assert!(
        node.config_files() == original,
        "the cleanup left the daemon's config changed: {:#?} (was {:#?})",
        node.config_files().keys(),
        original.keys()
    );
    assert!(
        !bin.join("userns-hostnet-runtime").exists(),
        "the cleanup left the wrapper"
    );
    k.kubectl_ok(&["delete", "-k", cleanup.to_str().unwrap(), "--wait=true"]);
    // The DaemonSet is gone already: the documented command ignores it.
    k.kubectl_ok(&[
        "delete",
        "-k",
        overlay.to_str().unwrap(),
        "--ignore-not-found",
        "--wait=true",
    ]);
    eprintln!(
        "deploy/ applied, rolled out, its pod deleted and removed in {:?}",
        scenario.elapsed()
    );
}
