//! crictl, the CRI client of both CRI daemons' drivers (containerd's in
//! tests/common/cri.rs, CRI-O's in tests/common/crio.rs), making the
//! requests the kubelet makes: one [`Crictl`] per daemon, holding its
//! endpoint (a config file naming the daemon's socket) and the daemon's
//! directory, where the configs it sends, the pods' logs and the wrapper's
//! decision log live. Each driver derefs to its `Crictl`, so a test calls
//! `cri.run_pod(..)` or `crio.run_pod(..)` alike; and the helpers below
//! take a `Crictl`, so a run that is the same scenario on both daemons is
//! written once.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cri::{self, Userns};
use super::{run_capture, Outcome};

/// crictl for one daemon.
pub struct Crictl {
    /// The daemon's directory.
    dir: PathBuf,
    /// crictl's config file: the daemon's socket as runtime and image
    /// endpoint.
    config: PathBuf,
    counter: AtomicU64,
    /// Ids of every pod and container made through this client.
    ids: Mutex<Vec<String>>,
}

impl Crictl {
    /// crictl for the daemon serving `socket`, writing what it keeps under
    /// `dir` (the daemon's directory): `crictl.yaml`, `cri-configs/`,
    /// `pod-logs/`. The daemon's wrapper config keeps the decision log
    /// there too (`decisions.log`).
    pub fn new(dir: &Path, socket: &Path) -> Crictl {
        let config = dir.join("crictl.yaml");
        fs::write(
            &config,
            format!(
                "runtime-endpoint: unix://{sock}\nimage-endpoint: unix://{sock}\n\
                 timeout: 60\ndebug: false\npull-image-on-create: false\n",
                sock = socket.display()
            ),
        )
        .unwrap();
        fs::create_dir_all(dir.join("cri-configs")).unwrap();
        Crictl {
            dir: dir.to_path_buf(),
            config,
            counter: AtomicU64::new(0),
            ids: Mutex::new(Vec::new()),
        }
    }

    pub fn crictl_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(cri::crictl_path());
        cmd.arg("--config").arg(&self.config).args(args);
        cmd
    }

    pub fn crictl(&self, args: &[&str]) -> Outcome {
        run_capture(&mut self.crictl_command(args))
    }

    /// Writes a config for crictl, named after `tag`.
    pub fn write_config(&self, tag: &str, value: &Value) -> PathBuf {
        let n = self.counter.fetch_add(1, Ordering::SeqCst);
        let path = self.dir.join("cri-configs").join(format!("{tag}-{n}.json"));
        fs::write(&path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
        path
    }

    /// A directory for a pod's container logs.
    pub fn log_dir(&self, name: &str) -> PathBuf {
        let dir = self.dir.join("pod-logs").join(name);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The wrapper's decision log lines (its config file keeps them in the
    /// daemon's directory).
    pub fn decisions(&self) -> Vec<Value> {
        fs::read_to_string(self.dir.join("decisions.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("decision log line is JSON"))
            .collect()
    }

    /// The decision log lines for one container or sandbox id.
    pub fn decisions_for(&self, id: &str) -> Vec<Value> {
        self.decisions()
            .into_iter()
            .filter(|d| d["id"] == id)
            .collect()
    }

    /// Ids of every pod and container made through this client.
    pub fn ids(&self) -> Vec<String> {
        self.ids.lock().unwrap().clone()
    }

    fn remember(&self, id: &str) {
        self.ids.lock().unwrap().push(id.to_string());
    }

    /// RunPodSandbox on `handler`: the pod's id, or the failed crictl call.
    pub fn run_pod(&self, handler: &str, config: &Value) -> Result<Pod, Outcome> {
        let path = self.write_config("pod", config);
        let out = self.crictl(&["runp", "--runtime", handler, path.to_str().unwrap()]);
        if !out.success() {
            return Err(out);
        }
        let id = out.stdout.trim().to_string();
        self.remember(&id);
        Ok(Pod { id, config: path })
    }

    /// CreateContainer in `pod`: the container's id, or the failed call.
    pub fn create(&self, pod: &Pod, config: &Value) -> Result<String, Outcome> {
        let path = self.write_config("container", config);
        let out = self.crictl(&[
            "create",
            &pod.id,
            path.to_str().unwrap(),
            pod.config.to_str().unwrap(),
        ]);
        if !out.success() {
            return Err(out);
        }
        let id = out.stdout.trim().to_string();
        self.remember(&id);
        Ok(id)
    }

    /// StartContainer.
    pub fn start_container(&self, id: &str) -> Outcome {
        self.crictl(&["start", id])
    }

    /// CreateContainer then StartContainer; panics with the daemon's view
    /// of the failure.
    pub fn create_and_start(&self, pod: &Pod, config: &Value) -> String {
        let id = self
            .create(pod, config)
            .unwrap_or_else(|out| panic!("CreateContainer failed\n{}", out.describe()));
        let out = self.start_container(&id);
        assert!(
            out.success(),
            "StartContainer failed\n{}\n--- decisions\n{:#?}",
            out.describe(),
            self.decisions_for(&id)
        );
        id
    }

    /// ExecSync (`crictl exec --sync`).
    pub fn exec_sync(&self, id: &str, argv: &[&str]) -> Outcome {
        let mut args = vec!["exec", "--sync", "--timeout", "30", id];
        args.extend_from_slice(argv);
        self.crictl(&args)
    }

    /// Exec through the daemon's streaming server (`crictl exec` without
    /// --sync: an Exec request, then the stream from the URL it returns).
    pub fn exec_stream(&self, id: &str, argv: &[&str]) -> Outcome {
        let mut args = vec!["exec", id];
        args.extend_from_slice(argv);
        self.crictl(&args)
    }

    /// ContainerStatus, verbose (`crictl inspect`).
    pub fn inspect(&self, id: &str) -> Value {
        let out = self.crictl(&["inspect", "--output", "json", id]);
        out.assert_success();
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("inspect is not JSON ({e})\n{}", out.describe()))
    }

    /// PodSandboxStatus, verbose (`crictl inspectp`).
    pub fn inspect_pod(&self, pod: &Pod) -> Value {
        let out = self.crictl(&["inspectp", "--output", "json", &pod.id]);
        out.assert_success();
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("inspectp is not JSON ({e})\n{}", out.describe()))
    }

    /// The container's log as the daemon keeps it (`crictl logs`).
    pub fn logs(&self, id: &str) -> Outcome {
        self.crictl(&["logs", id])
    }

    /// StopContainer then RemoveContainer.
    pub fn stop_and_remove(&self, id: &str) {
        self.crictl(&["stop", "--timeout", "10", id])
            .assert_success();
        self.crictl(&["rm", id]).assert_success();
    }

    /// StopPodSandbox then RemovePodSandbox.
    pub fn stop_and_remove_pod(&self, pod: &Pod) {
        self.crictl(&["stopp", &pod.id]).assert_success();
        self.crictl(&["rmp", &pod.id]).assert_success();
    }

    /// Ids of every pod the daemon still knows.
    pub fn pods(&self) -> Vec<String> {
        self.words(&["pods", "--quiet"])
    }

    /// Ids of every container the daemon still knows, running or not.
    pub fn containers(&self) -> Vec<String> {
        self.words(&["ps", "--all", "--quiet"])
    }

    fn words(&self, args: &[&str]) -> Vec<String> {
        self.crictl(args)
            .stdout
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    /// Reads, through ExecSync, what the container sees: its mounts, the
    /// exec'd process's own status and uid_map, and pid 1's status.
    pub fn look_inside(&self, id: &str) -> Seen {
        let out = self.exec_sync(id, &["/bin/sh", "-c", super::PROBE_SCRIPT]);
        out.assert_success();
        let pid1 = self.exec_sync(id, &["cat", "/proc/1/status"]);
        pid1.assert_success();
        Seen {
            exec: super::Probe::parse(&out.stdout),
            pid1_status: pid1.stdout,
        }
    }
}

/// A pod the daemon runs: its id and the config it was created from
/// (crictl's CreateContainer wants it again).
pub struct Pod {
    pub id: String,
    pub config: PathBuf,
}

/// The sections of what `PROBE_SCRIPT` printed plus pid 1's status, from
/// two ExecSync calls into a running container.
pub struct Seen {
    pub exec: super::Probe,
    pub pid1_status: String,
}

/// A CRI daemon's driver: its crictl, and how it is torn down.
pub trait Daemon: std::ops::Deref<Target = Crictl> {
    /// What is left after every pod was removed, each a line.
    fn leftovers(&self) -> Vec<String>;
    /// Removes every pod and stops the daemon; what had to be killed or
    /// deleted by force afterwards.
    fn stop(&mut self) -> Vec<String>;
}

/// A userns pod with its own host ID range, and its config.
pub fn userns_pod(crictl: &Crictl, name: &str) -> (Userns, Value) {
    let userns = Userns::Pod {
        host_id: cri::next_host_range(),
    };
    (userns, cri::pod_config(name, userns, &crictl.log_dir(name)))
}

/// The app container of a pod in `userns`: the app image's script, the
/// pod's user namespace options repeated.
pub fn app_config(userns: Userns) -> Value {
    cri::container_config("app", userns, cri::APP_SCRIPT)
}

/// RunPodSandbox on `handler`; panics with the failure and the decisions.
pub fn run_pod(crictl: &Crictl, handler: &str, config: &Value) -> Pod {
    crictl.run_pod(handler, config).unwrap_or_else(|out| {
        panic!(
            "RunPodSandbox on {handler} failed\n{}\n--- decisions\n{:#?}",
            out.describe(),
            crictl.decisions()
        )
    })
}

/// The wrapper logged one create for `id`, converted.
pub fn assert_converted_decision(crictl: &Crictl, id: &str) {
    let lines = crictl.decisions_for(id);
    assert_eq!(
        lines.len(),
        1,
        "one decision line expected for {id}: {lines:#?}"
    );
    let line = &lines[0];
    assert_eq!(line["command"], "create", "{line:#}");
    assert_eq!(line["converted"], true, "{line:#}");
}

/// What the wrapper logged for `ids`, a pod without a user namespace and
/// its containers: on the wrapper's handler (`wrapped`) one create each,
/// not converted, decided `no-user-namespace`, nothing changed; on a plain
/// handler nothing.
pub fn assert_passed_through(crictl: &Crictl, ids: &[&str], wrapped: bool) {
    for id in ids {
        let lines = crictl.decisions_for(id);
        if wrapped {
            assert_eq!(lines.len(), 1, "{id}: {lines:#?}");
            assert_eq!(lines[0]["converted"], false, "{:#}", lines[0]);
            assert_eq!(lines[0]["decision"], "no-user-namespace", "{:#}", lines[0]);
            assert!(
                lines[0]["changes"].as_array().map_or(true, Vec::is_empty),
                "{:#}",
                lines[0]
            );
        } else {
            assert!(
                lines.is_empty(),
                "the plain handler ran the wrapper: {lines:#?}"
            );
        }
    }
}

/// The container's log once it holds `needle`; panics after 20 s.
pub fn wait_for_log(crictl: &Crictl, id: &str, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = crictl.logs(id);
        if out.success() && out.stdout.contains(needle) {
            return out.stdout;
        }
        assert!(
            Instant::now() < deadline,
            "`{needle}` never appeared in the container's log\n{}",
            out.describe()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The error the daemon returned through the CRI, as crictl printed it
/// (crictl quotes the gRPC message: `\"` for `"`).
pub fn cri_error(out: &Outcome) -> String {
    out.stderr.replace("\\\"", "\"")
}

/// `count` userns pods with one app container each, each with its own ID
/// range, started at once on `handler`; `check(id, host_id)` on the app
/// container of each that ran, then every pod stopped and removed at once.
/// Panics naming the pods that did not run, after removing the others.
pub fn pods_at_once(crictl: &Crictl, handler: &str, count: usize, check: impl Fn(&str, u64)) {
    let started = Instant::now();
    let results: Vec<Result<(Pod, String, u64), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..count)
            .map(|i| {
                s.spawn(move || {
                    let name = format!("par{i}");
                    let (userns, config) = userns_pod(crictl, &name);
                    let pod = crictl
                        .run_pod(handler, &config)
                        .map_err(|o| format!("{name}: RunPodSandbox\n{}", o.describe()))?;
                    let id = crictl
                        .create(&pod, &app_config(userns))
                        .map_err(|o| format!("{name}: CreateContainer\n{}", o.describe()))?;
                    let out = crictl.start_container(&id);
                    if !out.success() {
                        return Err(format!("{name}: StartContainer\n{}", out.describe()));
                    }
                    Ok((pod, id, userns.host_id().unwrap()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("pod thread"))
            .collect()
    });
    eprintln!(
        "{count} userns pods with one app container each through the CRI and the \
         wrapper in {:?}",
        started.elapsed()
    );
    let failed: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    let running: Vec<&(Pod, String, u64)> =
        results.iter().filter_map(|r| r.as_ref().ok()).collect();
    for (_, id, host_id) in &running {
        check(id, *host_id);
    }
    std::thread::scope(|s| {
        for (pod, id, _) in &running {
            s.spawn(move || {
                crictl.stop_and_remove(id);
                crictl.stop_and_remove_pod(pod);
            });
        }
    });
    assert!(
        failed.is_empty(),
        "{} of {count} pods failed:\n{}",
        failed.len(),
        failed
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Nothing is left after removal, and the daemon stops clean.
pub fn assert_no_leftovers(daemon: &mut impl Daemon) {
    let left = daemon.leftovers();
    assert!(left.is_empty(), "left behind after removal: {left:#?}");
    let forced = daemon.stop();
    assert!(forced.is_empty(), "killed or deleted by force: {forced:#?}");
}

/// Stops and removes containers and pod through the CRI, then checks that
/// nothing is left and the daemon stops clean.
pub fn tear_down(mut daemon: impl Daemon, pod: &Pod, containers: &[String]) {
    for id in containers {
        daemon.stop_and_remove(id);
    }
    daemon.stop_and_remove_pod(pod);
    assert_no_leftovers(&mut daemon);
}
