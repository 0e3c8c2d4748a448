//! The installer's `deploy` mode against a node's daemon and its API
//! server: the restart path, where a private containerd 1.7 is restarted
//! through a fake systemctl and serves a pod through the deployed handler,
//! the removal waiting for that pod; and the node label (set through a
//! fake API server with the pod's service account, kept when the pod
//! stops, taken off by the removal) saying whether the node can run the
//! feature's pods. The image on a fake host root alone: e2e_deploy.
//!
//! Prerequisites (root, podman, containerd 1.7 from `make cri-tools`,
//! python3, openssl, and the staged image context target/image from `make
//! image`) fail the tests when missing.

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::deploy::{build_image, fake_host_root, require, snapshot, Snapshot, PODMAN_RUN};
use common::run_capture;

/// A stand-in for systemctl that records its arguments and whether it was
/// told to ignore its chroot detection (the real one silently ignores
/// `restart` when it thinks it runs in a chroot): the test plays systemd
/// and restarts the private daemon when asked.
fn fake_systemctl(dir: &Path) -> (PathBuf, PathBuf) {
    let requests = dir.join("restart-requests");
    let script = dir.join("systemctl");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$* SYSTEMD_IGNORE_CHROOT=$SYSTEMD_IGNORE_CHROOT\" >>{}\n",
            requests.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    (script, requests)
}

/// `userns-hostnet deploy` on this host (root /) for the private daemon.
fn deploy_here(
    cri: &common::cri::Cri,
    bin: &Path,
    handlers: &Path,
    systemctl: &Path,
    mode: &str,
) -> common::Outcome {
    let admin = Path::new(common::TOOL);
    deploy_here_from(cri, bin, handlers, systemctl, mode, admin.parent().unwrap())
}

/// [`deploy_here`] with the binaries to copy taken from `from`.
fn deploy_here_from(
    cri: &common::cri::Cri,
    bin: &Path,
    handlers: &Path,
    systemctl: &Path,
    mode: &str,
    from: &Path,
) -> common::Outcome {
    run_capture(&mut deploy_command(
        cri, bin, handlers, systemctl, mode, from,
    ))
}

/// The command of [`deploy_here_from`].
fn deploy_command(
    cri: &common::cri::Cri,
    bin: &Path,
    handlers: &Path,
    systemctl: &Path,
    mode: &str,
    from: &Path,
) -> Command {
    let admin = Path::new(common::TOOL);
    let mut cmd = Command::new(admin);
    cmd.args(["deploy", "--host-root", "/", "--daemon", "containerd"])
        .arg("--daemon-config")
        .arg(cri.dir().join("config.toml"))
        .arg("--bin-dir")
        .arg(bin)
        .args([
            "--handler",
            "deployed",
            "--restart",
            "--unit",
            "uhn-test.service",
            mode,
        ])
        .arg("--from")
        .arg(from)
        .env("USERNS_HOSTNET_SYSTEMCTL", systemctl)
        .env("USERNS_HOSTNET_HANDLERS_DIR", handlers)
        .env_remove("NODE_NAME")
        .env_remove("KUBERNETES_SERVICE_HOST");
    cmd
}

/// The restart path: deploy registers a handler with a private containerd
/// 1.7 (the CRI tier's), asks for the restart, and after it a
/// `hostUsers: false` host-network pod on that handler is converted by the
/// copied wrapper; the removal is refused while the pod runs (the
/// cleanup DaemonSet's `--wait` waits for it, saying so), and once it is
/// gone the undo asks again and leaves the config as it was.
#[test]
fn the_restart_path_serves_a_pod_through_the_deployed_handler() {
    use common::cri::{self, Cri, Userns};
    let _host = common::host_deploy_lock();
    let mut cri = Cri::start();
    let config = cri.dir().join("config.toml");
    let original = fs::read(&config).unwrap();
    let work = tempfile::Builder::new()
        .prefix("uhn-deploy-restart-")
        .tempdir_in("/tmp")
        .unwrap();
    let bin = work.path().join("bin");
    let handlers = work.path().join("handlers");
    let (systemctl, requests) = fake_systemctl(work.path());

    let out = deploy_here(&cri, &bin, &handlers, &systemctl, "--once");
    out.assert_success();
    assert_eq!(
        fs::read_to_string(&requests).unwrap_or_default(),
        "restart uhn-test.service SYSTEMD_IGNORE_CHROOT=1\n",
        "{}",
        out.describe()
    );
    // The restart asked for did not happen (this systemctl only writes
    // the request down): the running containerd does not know the
    // handler, and the readiness probe says so.
    let probe = deploy_here(&cri, &bin, &handlers, &systemctl, "--check");
    assert_eq!(probe.status.code(), Some(1), "{}", probe.describe());
    assert!(
        probe
            .stdout
            .starts_with("not served: handler deployed with containerd in ")
            && probe
                .stdout
                .contains("started before it was written: restart it"),
        "{}",
        probe.describe()
    );
    let userns = Userns::Pod {
        host_id: cri::next_host_range(),
    };
    let pod_config = cri::pod_config("deployed", userns, &cri.log_dir("deployed"));
    assert!(cri.run_pod("deployed", &pod_config).is_err());
    // Restarted, it serves the handler, and the probe says that.
    cri.restart();
    let probe = deploy_here(&cri, &bin, &handlers, &systemctl, "--check");
    probe.assert_success();
    assert!(
        probe
            .stdout
            .starts_with("registered and served: handler deployed with containerd in "),
        "{}",
        probe.describe()
    );
    let pod = cri.run_pod("deployed", &pod_config).unwrap_or_else(|o| {
        panic!(
            "RunPodSandbox on the deployed handler\n{}\n{}",
            o.describe(),
            cri.log()
        )
    });
    let lines = cri.decisions_for(&pod.id);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["converted"], true, "{:#}", lines[0]);
    common::assert_converted_spec(&cri.bundle_spec(&pod.id));
    let app = cri.create_and_start(&pod, &cri::container_config("app", userns, "sleep 600"));

    // An upgrade (a new image's deploy) while the container runs: the
    // wrapper is replaced by rename, nothing else changes, no restart; the
    // container is exec'd, stopped and removed through the new wrapper.
    let wrapper = bin.join("userns-hostnet-runtime");
    let old_inode = fs::metadata(&wrapper).unwrap().ino();
    let config_before = fs::read(&config).unwrap();
    let links = |dir: &Path| {
        if dir.exists() {
            snapshot(dir)
        } else {
            Snapshot::new()
        }
    };
    let links_before = links(&handlers);
    let upgrade = tempfile::Builder::new()
        .prefix("uhn-deploy-upgrade-")
        .tempdir_in("/tmp")
        .unwrap();
    let admin = Path::new(common::TOOL);
    fs::copy(admin, upgrade.path().join("userns-hostnet")).unwrap();
    // The same program with bytes appended past its end: another file
    // that still runs.
    let mut newer = fs::read(admin.with_file_name("userns-hostnet-runtime")).unwrap();
    newer.extend_from_slice(b"\0userns-hostnet upgrade marker\n");
    fs::write(upgrade.path().join("userns-hostnet-runtime"), &newer).unwrap();
    for round in 0..2 {
        let out = deploy_here_from(&cri, &bin, &handlers, &systemctl, "--once", upgrade.path());
        out.assert_success();
        assert!(
            out.stdout.contains("already registered"),
            "{}",
            out.describe()
        );
        assert_eq!(
            out.stdout.contains("wrote "),
            round == 0,
            "the upgrade writes the wrapper once, a rerun nothing\n{}",
            out.describe()
        );
    }
    assert_eq!(fs::read(&wrapper).unwrap(), newer, "the new wrapper landed");
    assert_ne!(
        fs::metadata(&wrapper).unwrap().ino(),
        old_inode,
        "by rename"
    );
    assert_eq!(
        fs::read(&config).unwrap(),
        config_before,
        "config untouched"
    );
    assert_eq!(links(&handlers), links_before, "handler links untouched");
    assert_eq!(
        fs::read_to_string(&requests).unwrap().lines().count(),
        1,
        "no restart for an upgrade"
    );
    let exec = cri.exec_sync(&app, &["sh", "-c", "echo exec-after-upgrade"]);
    exec.assert_success();
    assert!(
        exec.stdout.contains("exec-after-upgrade"),
        "{}",
        exec.describe()
    );
    // The removal while the pod runs: refused, naming its containers,
    // nothing changed, no restart asked; the pod still stops.
    let wrapper_bytes = fs::read(&wrapper).unwrap();
    let refused = deploy_here(&cri, &bin, &handlers, &systemctl, "--uninstall");
    assert!(!refused.success(), "{}", refused.describe());
    assert!(
        refused
            .stderr
            .contains("runtime handler deployed still has 2 container(s)")
            && refused.stderr.contains(&app[..13])
            && refused.stderr.contains(&pod.id[..13])
            && refused.stderr.contains("pod uhn-e2e/deployed"),
        "{}",
        refused.describe()
    );
    assert_eq!(
        fs::read(&config).unwrap(),
        config_before,
        "config untouched"
    );
    assert_eq!(links(&handlers), links_before, "handler links untouched");
    assert_eq!(
        fs::read(&wrapper).unwrap(),
        wrapper_bytes,
        "wrapper untouched"
    );
    assert_eq!(
        fs::read_to_string(&requests).unwrap().lines().count(),
        1,
        "no restart for a refused removal"
    );
    let probe = deploy_here(&cri, &bin, &handlers, &systemctl, "--check");
    probe.assert_success();

    // The cleanup DaemonSet's removal (`--wait`) waits for them instead,
    // saying so, and goes on once the pod is gone.
    let log = work.path().join("cleanup.log");
    let mut command = deploy_command(
        &cri,
        &bin,
        &handlers,
        &systemctl,
        "--uninstall",
        Path::new(common::TOOL).parent().unwrap(),
    );
    command.arg("--wait");
    // It is stopped with SIGTERM.
    let mut cleanup = common::process::default_signals(&mut command)
        .stdout(fs::File::create(&log).unwrap())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let waiting = said_by(
        &mut cleanup,
        &log,
        "waiting: runtime handler deployed still has 2 container(s)",
    );
    assert!(waiting.contains(&app[..13]), "{waiting}");
    assert_eq!(
        fs::read(&config).unwrap(),
        config_before,
        "config untouched"
    );
    assert_eq!(links(&handlers), links_before, "handler links untouched");
    cri.stop_and_remove(&app);
    cri.stop_and_remove_pod(&pod);
    let out = said_by(&mut cleanup, &log, "removed; waiting");
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(cleanup.id().to_string())
        .status();
    let status = cleanup.wait().unwrap();
    assert!(status.success(), "{status:?}\n{out}");
    assert_eq!(
        fs::read_to_string(&requests).unwrap(),
        "restart uhn-test.service SYSTEMD_IGNORE_CHROOT=1\nrestart uhn-test.service SYSTEMD_IGNORE_CHROOT=1\n",
        "{out}"
    );
    assert_eq!(
        fs::read(&config).unwrap(),
        original,
        "config restored byte for byte"
    );
    assert!(!bin.exists(), "{out}");
    assert!(!handlers.exists(), "{out}");
    let probe = deploy_here(&cri, &bin, &handlers, &systemctl, "--check");
    assert_eq!(probe.status.code(), Some(1), "{}", probe.describe());
    assert!(
        probe.stdout.contains("no deploy state"),
        "{}",
        probe.describe()
    );
    cri.restart();
    assert!(cri.run_pod("deployed", &pod_config).is_err());
    let left = cri.leftovers();
    assert!(left.is_empty(), "{left:#?}");
}

/// What `child` has written to `log` once it holds `needle`; fails when
/// the child exits first or a minute passes.
fn said_by(child: &mut std::process::Child, log: &Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        let exited = child.try_wait().unwrap();
        assert!(
            exited.is_none() && Instant::now() < deadline,
            "never said {needle:?} ({exited:?}):\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// An API server stand-in on 127.0.0.1: HTTPS with a certificate from a CA
/// of its own, each PATCH recorded as a JSON line and answered 200.
const API_SERVER: &str = r#"
import http.server, json, ssl, sys
cert, key, port_file, log = sys.argv[1:5]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_PATCH(self):
        body = self.rfile.read(int(self.headers['Content-Length']))
        with open(log, 'a') as f:
            f.write(json.dumps({'path': self.path,
                                'auth': self.headers['Authorization'],
                                'type': self.headers['Content-Type'],
                                'body': json.loads(body)}) + '\n')
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', '2')
        self.end_headers()
        self.wfile.write(b'{}')
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(('127.0.0.1', 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
with open(port_file + '.tmp', 'w') as f:
    f.write(str(server.server_address[1]))
import os
os.rename(port_file + '.tmp', port_file)
server.serve_forever()
"#;

fn openssl(args: &[&str], dir: &Path) {
    run_capture(Command::new("openssl").args(args).current_dir(dir)).assert_success();
}

/// A CA, and a server certificate for 127.0.0.1 signed by it.
fn api_certificates(dir: &Path) {
    require("openssl", "install the Debian package openssl");
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "1", "-subj", "/CN=uhn-test-ca"];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.crt"]);
    openssl(&ca, dir);
    let mut csr = vec!["req", "-subj", "/CN=127.0.0.1"];
    csr.extend(ec);
    csr.extend(["-keyout", "server.key", "-out", "server.csr"]);
    openssl(&csr, dir);
    fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        &[
            "x509",
            "-req",
            "-days",
            "1",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-extfile",
            "server.ext",
            "-out",
            "server.crt",
        ],
        dir,
    );
}

struct ApiServer(std::process::Child);

impl Drop for ApiServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The label goes on through the API with the pod's service account,
/// stays when the pod stops, and comes off with the explicit removal.
#[test]
fn the_installer_labels_its_node_and_only_the_removal_unlabels_it() {
    let image = build_image("e2e-deploy");
    let root = fake_host_root();
    // A node that can run the pods: labelled.
    let tools = common::cri::containerd_23_dir();
    node_binary(root.path(), &tools.join("containerd"), "usr/bin/containerd");
    node_binary(root.path(), &tools.join("runc"), "usr/sbin/runc");
    let api = FakeApi::start();
    let (port, sa, log) = (&api.port, &api.sa, &api.log);

    let name = format!("uhn-deploy-api-{}", std::process::id());
    let pod = |run: &[&str], args: &[&str]| {
        let mut cmd = Command::new("podman");
        cmd.args(PODMAN_RUN)
            .args(run)
            .args(["--privileged", "--network", "host"])
            .args(common::podman::ULIMITS)
            .arg("--volume")
            .arg(format!("{}:/host", root.path().display()))
            .arg("--volume")
            .arg(format!(
                "{}:/var/run/secrets/kubernetes.io/serviceaccount:ro",
                sa.display()
            ))
            .args(["--env", "NODE_NAME=node-a"])
            .args(["--env", "KUBERNETES_SERVICE_HOST=127.0.0.1"])
            .arg("--env")
            .arg(format!("KUBERNETES_SERVICE_PORT={port}"))
            .arg(&image)
            .args(args);
        run_capture(&mut cmd)
    };
    pod(&["--detach", "--name", &name], &[]).assert_success();
    let logs = || run_capture(Command::new("podman").args(["logs", &name]));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !logs().stdout.contains("installed; waiting") {
        if Instant::now() > deadline {
            let out = logs();
            let _ = run_capture(Command::new("podman").args(["rm", "--force", &name]));
            panic!("the installer never waited:\n{}", out.describe());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    run_capture(Command::new("podman").args(["stop", "--time", "60", &name])).assert_success();
    let out = logs();
    let _ = run_capture(Command::new("podman").args(["rm", "--force", &name]));
    assert!(
        out.stdout
            .contains("node node-a labelled: userns-hostnet.io/installed")
            && !out.stdout.contains("unlabelled"),
        "{}",
        out.describe()
    );
    let requests = || -> Vec<serde_json::Value> {
        fs::read_to_string(log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    assert_eq!(
        requests().len(),
        1,
        "the stop kept the label: {:#?}",
        requests()
    );
    // The cleanup DaemonSet's command takes it off.
    let out = pod(&["--rm"], &["--uninstall"]);
    out.assert_success();
    assert!(
        out.stdout.contains("node node-a unlabelled"),
        "{}",
        out.describe()
    );
    let requests = requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    for (r, value) in requests
        .iter()
        .zip([serde_json::json!("true"), serde_json::Value::Null])
    {
        assert_eq!(r["path"], "/api/v1/nodes/node-a");
        assert_eq!(r["auth"], "Bearer test-token");
        assert_eq!(r["type"], "application/merge-patch+json");
        assert_eq!(
            r["body"],
            serde_json::json!({"metadata": {
                "labels": {"userns-hostnet.io/installed": value},
                "annotations": {"userns-hostnet.io/not-able": null},
            }})
        );
    }
}

/// `src`, one of this machine's binaries, at `dest` in the host root `r`,
/// with the shared libraries `ldd` names for it: a node's own program,
/// which deploy runs in the node's root.
fn node_binary(r: &Path, src: &Path, dest: &str) {
    let to = r.join(dest);
    fs::create_dir_all(to.parent().unwrap()).unwrap();
    fs::copy(src, &to).unwrap();
    fs::set_permissions(&to, fs::Permissions::from_mode(0o755)).unwrap();
    node_libs(r, src);
}

/// The shared libraries `ldd` names for `src`, in the host root `r`.
fn node_libs(r: &Path, src: &Path) {
    let ldd = run_capture(Command::new("ldd").arg(src));
    for lib in ldd.stdout.split_whitespace().filter(|w| w.starts_with('/')) {
        let at = r.join(lib.trim_start_matches('/'));
        if !at.exists() {
            fs::create_dir_all(at.parent().unwrap()).unwrap();
            fs::copy(lib, &at).unwrap();
        }
    }
}

/// An API server stand-in that records each PATCH, and a service account
/// for it.
struct FakeApi {
    _work: tempfile::TempDir,
    _server: ApiServer,
    port: String,
    log: PathBuf,
    sa: PathBuf,
}

impl FakeApi {
    fn start() -> FakeApi {
        let work = tempfile::Builder::new()
            .prefix("uhn-deploy-api-")
            .tempdir_in("/tmp")
            .unwrap();
        let w = work.path();
        api_certificates(w);
        let sa = w.join("serviceaccount");
        fs::create_dir(&sa).unwrap();
        fs::copy(w.join("ca.crt"), sa.join("ca.crt")).unwrap();
        fs::write(sa.join("token"), "test-token\n").unwrap();
        let (port_file, log) = (w.join("port"), w.join("requests"));
        let server = ApiServer(
            Command::new("python3")
                .args(["-c", API_SERVER])
                .arg(w.join("server.crt"))
                .arg(w.join("server.key"))
                .arg(&port_file)
                .arg(&log)
                .spawn()
                .expect("python3"),
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while !port_file.exists() {
            assert!(Instant::now() < deadline, "the API stand-in never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        FakeApi {
            port: fs::read_to_string(&port_file).unwrap(),
            _work: work,
            _server: server,
            log,
            sa,
        }
    }

    /// The body of each PATCH so far.
    fn bodies(&self) -> Vec<serde_json::Value> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["body"].clone())
            .collect()
    }
}

/// The node label says whether the node can run the feature's pods: a
/// node on containerd 1.6 (whose CRI declares no user namespaces with the
/// host network, so the kubelet refuses the pods) is not labelled and its
/// annotation says why; one on containerd 2.3.4 with runc 1.4.3 is
/// labelled, and the annotation goes.
#[test]
fn the_label_says_whether_the_node_can_run_the_pods() {
    let api = FakeApi::start();
    let from = Path::new(common::TOOL).parent().unwrap().to_owned();
    let run = |r: &Path| {
        node_binary(r, Path::new("/bin/busybox"), "bin/sh");
        // The copied wrapper runs in the node's root too.
        node_libs(r, &from.join("userns-hostnet-runtime"));
        let mut cmd = Command::new(common::TOOL);
        cmd.args(["deploy", "--host-root"])
            .arg(r)
            .args([
                "--daemon",
                "containerd",
                "--restart",
                "--restart-command",
                "true",
                "--once",
            ])
            .arg("--from")
            .arg(&from)
            .env("NODE_NAME", "node-a")
            .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
            .env("KUBERNETES_SERVICE_PORT", &api.port)
            .env("USERNS_HOSTNET_SERVICE_ACCOUNT", &api.sa);
        let out = run_capture(&mut cmd);
        out.assert_success();
        out
    };
    let old = fake_host_root();
    node_binary(
        old.path(),
        Path::new("/usr/bin/containerd"),
        "usr/bin/containerd",
    );
    node_binary(old.path(), Path::new("/usr/sbin/runc"), "usr/sbin/runc");
    let out = run(old.path());
    assert!(
        out.stdout.contains("this node cannot run pods with hostNetwork: true and hostUsers: false through handler userns-hostnet: containerd 1.6.20 does not declare user_namespaces_host_network")
            && out.stdout.contains("node node-a unlabelled: userns-hostnet.io/installed (userns-hostnet.io/not-able: containerd 1.6.20 "),
        "{}",
        out.describe()
    );
    let bodies = api.bodies();
    assert_eq!(bodies.len(), 1, "{bodies:#?}");
    assert_eq!(
        bodies[0]["metadata"]["labels"],
        serde_json::json!({"userns-hostnet.io/installed": null})
    );
    let why = bodies[0]["metadata"]["annotations"]["userns-hostnet.io/not-able"]
        .as_str()
        .unwrap_or_else(|| panic!("{bodies:#?}"));
    assert!(
        why.starts_with("containerd 1.6.20 does not declare"),
        "{why}"
    );

    let new = fake_host_root();
    let tools = common::cri::containerd_23_dir();
    node_binary(new.path(), &tools.join("containerd"), "usr/bin/containerd");
    node_binary(new.path(), &tools.join("runc"), "usr/sbin/runc");
    let out = run(new.path());
    assert!(
        out.stdout
            .contains("node node-a labelled: userns-hostnet.io/installed")
            && !out.stdout.contains("cannot run pods"),
        "{}",
        out.describe()
    );
    let bodies = api.bodies();
    assert_eq!(
        bodies[1],
        serde_json::json!({"metadata": {
            "labels": {"userns-hostnet.io/installed": "true"},
            "annotations": {"userns-hostnet.io/not-able": null},
        }})
    );
}
