//! A private containerd 1.6 for the end-to-end tests: its own root, state,
//! socket, runc root and FIFO directory under one temporary directory, so it
//! never touches a system instance. It runs in a private mount namespace whose
//! /sys looks like a real node's (bpffs, securityfs, a pure cgroup v2 view), so
//! its shims and the runtimes they start see that /sys too.
//!
//! Dropping the guard kills every task, stops the daemon, kills any shim still
//! pointing at the directory and deletes what the runtimes still hold. A test
//! process that died without dropping it leaves a directory named after its
//! pid: the next start cleans that up first.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::{find_in_path, run_capture, Outcome, Runtime, SYS_VIEW_SCRIPT, WRAPPER};

/// Every daemon directory starts with this, then the test process's pid.
const DIR_PREFIX: &str = "uhn-ctd-";

/// The name under which the wrapper runs crun (chosen by its own file name:
/// containerd's shim does not need to pass any environment for it).
pub const WRAPPER_CRUN_NAME: &str = "userns-hostnet-runtime-crun";
pub const WRAPPER_YOUKI_NAME: &str = "userns-hostnet-runtime-youki";

pub struct Containerd {
    dir: Option<TempDir>,
    path: PathBuf,
    child: Option<Child>,
    ctr: PathBuf,
    /// The daemon binary and its PATH, to start it again.
    daemon: PathBuf,
    path_var: String,
    /// A process whose mount namespace the daemon's own is copied from
    /// (a node's view of the host's files); None: the test's.
    parent: Option<u32>,
}

/// What differs between the daemons the tests start: which containerd, and
/// what its configuration adds to the common part.
pub struct Launch<'a> {
    /// The directory holding `containerd`, `ctr` and the shims, put first in
    /// the daemon's PATH (containerd finds its shim there); None: the
    /// system's containerd.
    pub bin_dir: Option<&'a Path>,
    /// What to install when a tool is missing, for the failure message.
    pub install_hint: &'a str,
    /// Configuration appended after `version`, `root`, `state` and the
    /// sockets, given the daemon's directory.
    pub extra_config: &'a dyn Fn(&Path) -> String,
    /// Runs after the common files (bin/, wrapper.toml) are written and
    /// before the daemon starts, given the daemon's directory.
    pub setup: &'a dyn Fn(&Path),
}

impl Containerd {
    /// Starts the system's containerd and waits until it answers. Fails the
    /// test when containerd, ctr, the shim, runc or crun is missing.
    pub fn start() -> Containerd {
        Containerd::launch(Launch {
            bin_dir: None,
            install_hint: "install the Debian package containerd",
            extra_config: &|_| String::new(),
            setup: &|_| {},
        })
    }

    /// Starts a private daemon as `how` says, in the realistic /sys view,
    /// and waits until it answers.
    pub fn launch(how: Launch<'_>) -> Containerd {
        super::require_prerequisites(Runtime::Runc);
        Runtime::Crun.path();
        let tool = |name: &str| -> PathBuf {
            let found = match how.bin_dir {
                Some(dir) => Some(dir.join(name)).filter(|p| p.is_file()),
                None => find_in_path(name),
            };
            found.unwrap_or_else(|| panic!("`{name}` is missing: {}", how.install_hint))
        };
        let ctr = tool("ctr");
        let daemon = tool("containerd");
        tool("containerd-shim-runc-v2");
        clean_leftovers();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
            .tempdir_in("/tmp")
            .expect("create the containerd directory");
        let d = dir.path().to_path_buf();
        let config = format!(
            "version = 2\nroot = \"{root}\"\nstate = \"{state}\"\n\
             [grpc]\n  address = \"{sock}\"\n[ttrpc]\n  address = \"{sock}.ttrpc\"\n\
             [debug]\n  address = \"\"\n[metrics]\n  address = \"\"\n{extra}",
            root = d.join("root").display(),
            state = d.join("state").display(),
            sock = d.join("sock").display(),
            extra = (how.extra_config)(&d),
        );
        fs::write(d.join("config.toml"), config).unwrap();
        // Defaults for the wrapper, whatever the host's config file says.
        fs::write(d.join("wrapper.toml"), "").unwrap();
        // bin/ comes first in the daemon's PATH: `crun` there is crun with
        // the cgroup manager this host needs, and the wrapper named
        // `...-crun` finds it.
        let bin = d.join("bin");
        fs::create_dir(&bin).unwrap();
        write_script(
            &bin.join("crun"),
            &format!(
                "#!/bin/sh\nexec {} --cgroup-manager=disabled \"$@\"\n",
                Runtime::Crun.path().display()
            ),
        );
        symlink(WRAPPER, bin.join(WRAPPER_CRUN_NAME)).unwrap();
        // youki, when built (scripts/youki.sh), and the wrapper named for it.
        let youki = PathBuf::from(super::YOUKI_BUILT);
        if youki.is_file() {
            symlink(&youki, bin.join("youki")).unwrap();
            symlink(WRAPPER, bin.join(WRAPPER_YOUKI_NAME)).unwrap();
        }
        (how.setup)(&d);
        let mut path_var = bin.display().to_string();
        if let Some(dir) = how.bin_dir {
            path_var = format!("{path_var}:{}", dir.display());
        }
        let path_var = format!("{path_var}:{}", std::env::var("PATH").unwrap_or_default());

        let child = spawn_daemon(&daemon, &d, &path_var, None);
        let ctd = Containerd {
            dir: Some(dir),
            path: d,
            child: Some(child),
            ctr,
            daemon,
            path_var,
            parent: None,
        };
        ctd.wait_until_it_answers();
        ctd
    }

    fn wait_until_it_answers(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.ctr(&["version"]).success() {
            assert!(
                Instant::now() < deadline,
                "containerd did not answer within 30s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the daemon alone (its shims and tasks go on) and starts it
    /// again with the same command, rereading its config file, as
    /// `systemctl restart` does; waits until it answers.
    pub fn restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            super::process::terminate(&mut child);
        }
        self.child = Some(spawn_daemon(
            &self.daemon,
            &self.path,
            &self.path_var,
            self.parent,
        ));
        self.wait_until_it_answers();
    }

    /// From the next start on, the daemon's mount namespace is a copy of
    /// process `pid`'s (a node's own view of the host's files), not of
    /// the test's.
    pub fn set_mount_parent(&mut self, pid: u32) {
        self.parent = Some(pid);
    }

    pub fn dir(&self) -> &Path {
        &self.path
    }

    /// The daemon's pid (the process `unshare` became).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Mount points under the daemon's directory, as the daemon's own mount
    /// namespace holds them (snapshots, sandbox /dev/shm, task rootfs).
    pub fn mounts_in_dir(&self) -> Vec<String> {
        let Some(pid) = self.pid() else {
            return Vec::new();
        };
        let text = fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
        let prefix = format!("{}/", self.path.display());
        super::parse_mountinfo(&text)
            .into_iter()
            .map(|m| m.mount_point)
            .filter(|p| p.starts_with(&prefix))
            .collect()
    }

    pub fn log(&self) -> String {
        fs::read_to_string(self.path.join("containerd.log")).unwrap_or_default()
    }

    /// The wrapper, backed by crun through its own name.
    pub fn wrapper_crun(&self) -> PathBuf {
        self.path.join("bin").join(WRAPPER_CRUN_NAME)
    }

    /// The wrapper named `...-youki`, which runs youki (built by
    /// scripts/youki.sh; a missing build fails here, naming it).
    pub fn wrapper_youki(&self) -> PathBuf {
        Runtime::Youki.path();
        self.path.join("bin").join(WRAPPER_YOUKI_NAME)
    }

    /// crun alone, as the wrapper named `...-crun` runs it.
    pub fn plain_crun(&self) -> PathBuf {
        self.path.join("bin").join("crun")
    }

    pub fn ctr_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.ctr);
        cmd.arg("--address").arg(self.path.join("sock")).args(args);
        cmd
    }

    pub fn ctr(&self, args: &[&str]) -> Outcome {
        run_capture(&mut self.ctr_command(args))
    }

    /// `ctr run [EXTRA] --runc-binary BINARY --runc-root R --fifo-dir F
    /// --config SPEC ID`: the whole OCI spec, through `binary`.
    pub fn run_with(&self, extra: &[&str], binary: &Path, spec: &Path, id: &str) -> Outcome {
        let root = self.path.join("runc");
        let fifo = self.path.join("fifo");
        let mut args: Vec<&str> = vec!["run"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[
            "--runc-binary",
            binary.to_str().unwrap(),
            "--runc-root",
            root.to_str().unwrap(),
            "--fifo-dir",
            fifo.to_str().unwrap(),
            "--config",
            spec.to_str().unwrap(),
            id,
        ]);
        self.ctr(&args)
    }

    /// `ctr run --rm`: runs to completion, the container's stdout on ctr's.
    /// containerd 1.6's `ctr run` can return before the last of the task's
    /// output is copied (seen once on a busy machine: a probe's output cut
    /// after a section header, the container converted): a probe whose
    /// output stops before its end marker runs once more, under another id.
    pub fn run(&self, binary: &Path, spec: &Path, id: &str) -> Outcome {
        let out = self.run_with(&["--rm"], binary, spec, id);
        let cut = out.success()
            && out.stdout.contains("### mountinfo")
            && !out.stdout.contains("### end");
        if !cut {
            return out;
        }
        eprintln!("ctr run {id}: the probe's output stops before its end; once more");
        self.run_with(&["--rm"], binary, spec, &format!("{id}-again"))
    }

    /// `ctr run --detach`: the task keeps running.
    pub fn run_detached(&self, binary: &Path, spec: &Path, id: &str) -> Outcome {
        self.run_with(&["--detach", "--null-io"], binary, spec, id)
    }

    pub fn list(&self, what: &str) -> Vec<String> {
        self.list_in("default", what)
    }

    /// `ctr -n NAMESPACE WHAT list --quiet`.
    pub fn list_in(&self, namespace: &str, what: &str) -> Vec<String> {
        let out = self.ctr(&["--namespace", namespace, what, "list", "--quiet"]);
        out.stdout.split_whitespace().map(str::to_string).collect()
    }

    /// Status of a task as `ctr task ls` shows it (RUNNING, STOPPED...).
    pub fn task_status(&self, id: &str) -> Option<String> {
        let out = self.ctr(&["tasks", "list"]);
        out.stdout.lines().skip(1).find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&id)).then(|| f.last().unwrap_or(&"").to_string())
        })
    }

    pub fn wait_task_status(&self, id: &str, status: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let now = self.task_status(id);
            if now.as_deref() == Some(status) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "task {id} never reached {status} (last: {now:?})"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Ids the runtimes still hold state for under this daemon's runc roots
    /// (`runc*/NAMESPACE/ID`: `ctr run --runc-root`, or a handler's `Root`).
    pub fn runtime_states(&self) -> Vec<String> {
        runtime_state_dirs(&self.path)
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect()
    }

    /// Task bundles the daemon still holds under its state directory.
    pub fn task_bundles(&self) -> Vec<String> {
        let tasks = self
            .path
            .join("state")
            .join("io.containerd.runtime.v2.task");
        let mut found = Vec::new();
        for ns in read_dir_paths(&tasks) {
            found.extend(read_dir_paths(&ns).iter().map(|p| p.display().to_string()));
        }
        found
    }

    /// Processes other than the daemon whose command line names this
    /// daemon's directory: shims.
    pub fn shims(&self) -> Vec<(u32, String)> {
        let own = self.child.as_ref().map(Child::id);
        processes_naming(&self.path)
            .into_iter()
            .filter(|(pid, _)| Some(*pid) != own)
            .collect()
    }

    /// Stops everything and returns what had to be killed or deleted by
    /// force after the daemon stopped: shims and runtime states left behind.
    pub fn stop(&mut self) -> Vec<String> {
        let Some(mut child) = self.child.take() else {
            return Vec::new();
        };
        for ns in self.list("namespaces") {
            for id in self.list_in(&ns, "tasks") {
                let _ = self.ctr(&["-n", &ns, "tasks", "kill", "--signal", "SIGKILL", &id]);
            }
            for id in self.list_in(&ns, "containers") {
                let _ = self.ctr(&["-n", &ns, "tasks", "delete", "--force", &id]);
                let _ = self.ctr(&["-n", &ns, "containers", "delete", &id]);
            }
        }
        super::process::terminate(&mut child);
        // A shim exits shortly after its last task is deleted.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.shims().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut leaked: Vec<String> = self
            .shims()
            .into_iter()
            .map(|(pid, cmd)| format!("process {pid}: {cmd}"))
            .collect();
        leaked.extend(
            self.runtime_states()
                .into_iter()
                .map(|id| format!("runtime state {id}")),
        );
        force_clean(&self.path);
        leaked
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        self.stop();
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

/// containerd with the daemon directory's config, in a private mount
/// namespace with the realistic /sys view whose mounts are shared within
/// it, as a systemd host's are (a mount made there later propagates to
/// whatever is a slave of it), its output appended to containerd.log.
fn spawn_daemon(daemon: &Path, d: &Path, path_var: &str, parent: Option<u32>) -> Child {
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(d.join("containerd.log"))
        .unwrap();
    let mut cmd = match parent {
        Some(pid) => {
            let mut c = Command::new("nsenter");
            c.arg(format!("--mount=/proc/{pid}/ns/mnt")).arg("unshare");
            c
        }
        None => Command::new("unshare"),
    };
    super::process::default_signals(&mut cmd);
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!("mount --make-rshared /\n{SYS_VIEW_SCRIPT}"))
        .arg("sys-view")
        .arg(daemon)
        .arg("--config")
        .arg(d.join("config.toml"))
        .env("PATH", path_var)
        .env("USERNS_HOSTNET_CONFIG", d.join("wrapper.toml"))
        .env_remove("USERNS_HOSTNET_RUNTIME")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start containerd")
}

/// (pid, command line) of every process whose command line names `dir`.
pub fn processes_naming(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return found;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(raw) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmd.contains(&needle) {
            found.push((pid, cmd.trim_end().to_string()));
        }
    }
    found
}

/// Kills what still names `dir`, deletes the containers the runtimes still
/// hold under its runc root, and unmounts anything left under it.
fn force_clean(dir: &Path) {
    for (pid, _) in processes_naming(dir) {
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg(pid.to_string())
            .status();
    }
    for state in runtime_state_dirs(dir) {
        let (Some(ns_root), Some(id)) = (state.parent(), state.file_name()) else {
            continue;
        };
        for runtime in [Runtime::Runc, Runtime::Crun, Runtime::Youki] {
            let bin = match runtime {
                Runtime::Youki => Some(PathBuf::from(super::YOUKI_BUILT)).filter(|p| p.is_file()),
                _ => find_in_path(runtime.name()),
            };
            if let Some(bin) = bin {
                let _ = Command::new(bin)
                    .arg("--root")
                    .arg(ns_root)
                    .args(["delete", "--force"])
                    .arg(id)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
    super::unmount_below(dir);
}

/// `DIR/runc*/NAMESPACE/ID`: what the runtimes hold under every runc root
/// of a daemon directory.
fn runtime_state_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for root in read_dir_paths(dir) {
        let is_root = root
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("runc"));
        if !is_root || !root.is_dir() {
            continue;
        }
        for ns in read_dir_paths(&root) {
            // crun 1.27.1 keeps its compiled seccomp filters in
            // `ROOT/.cache/seccomp` for every container to come: its
            // cache, not a container's state.
            found.extend(
                read_dir_paths(&ns).into_iter().filter(|p| {
                    p.is_dir() && p.file_name() != Some(std::ffi::OsStr::new(".cache"))
                }),
            );
        }
    }
    found.sort();
    found
}

fn read_dir_paths(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// An executable shell script.
pub fn write_script(path: &Path, text: &str) {
    fs::write(path, text).unwrap_or_else(|e| panic!("write {path:?}: {e}"));
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Cleans up after test processes that died without dropping their daemon:
/// their directories carry their pid.
fn clean_leftovers() {
    for dir in super::leftover_dirs(DIR_PREFIX) {
        force_clean(&dir);
        let _ = fs::remove_dir_all(&dir);
    }
}
