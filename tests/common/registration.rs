//! The corpus of real daemon configs (tests/fixtures/daemons, see its
//! README.md) staged for tests/e2e_registration.rs: each case copied into a
//! private directory laid out like a node's /etc, with every absolute path
//! the files name under /etc, /var, /run, /opt or /usr/libexec moved under
//! that directory, so the real daemons read, and start on, copies that
//! touch nothing of the host. The daemons' own readers say what they see:
//! `containerd config dump`, `crio config`, `podman info`.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::cri::{containerd_23_dir, crictl_path};
use super::TOOL;
use super::WRAPPER;

/// The handler the tests register.
pub const HANDLER: &str = "userns-hostnet";

/// Path prefixes of the corpus moved under the case's directory.
const MOVED: &[&str] = &["/etc/", "/var/", "/run/", "/opt/", "/usr/libexec/"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Daemon {
    Containerd16,
    Containerd17,
    Containerd22,
    Containerd23,
    Crio,
    Podman,
}

impl Daemon {
    /// The install subcommand's daemon.
    pub fn install_name(self) -> &'static str {
        match self {
            Daemon::Crio => "crio",
            Daemon::Podman => "podman",
            _ => "containerd",
        }
    }

    pub fn fixture_dir(self) -> &'static str {
        match self {
            Daemon::Containerd16 => "containerd-1.6.20",
            Daemon::Containerd17 => "containerd-1.7.24",
            Daemon::Containerd22 => "containerd-2.2-v3",
            Daemon::Containerd23 => "containerd-2.3.4",
            Daemon::Crio => "crio-1.36.3",
            Daemon::Podman => "podman-4.3.1",
        }
    }

    /// Where the case's files go, below the case's directory.
    fn etc(self) -> &'static str {
        match self {
            Daemon::Crio => "etc/crio",
            Daemon::Podman => "etc/containers",
            _ => "etc/containerd",
        }
    }

    fn main_file(self) -> &'static str {
        match self {
            Daemon::Crio => "crio.conf",
            Daemon::Podman => "containers.conf",
            _ => "config.toml",
        }
    }

    /// The containerd binary that reads this version's configs. containerd
    /// 2.2 is not at hand: 2.3.4 reads its version 3 files.
    pub fn containerd(self) -> PathBuf {
        let p = match self {
            Daemon::Containerd16 => PathBuf::from("/usr/bin/containerd"),
            Daemon::Containerd17 => tools_target().join("containerd-1.7/usr/bin/containerd"),
            Daemon::Containerd22 | Daemon::Containerd23 => containerd_23_dir().join("containerd"),
            _ => panic!("{self:?} is not containerd"),
        };
        assert!(
            p.is_file(),
            "{p:?} is missing: install the Debian package containerd (1.6) and run scripts/cri-tools.sh (1.7, 2.3)"
        );
        p
    }

    pub fn is_containerd(self) -> bool {
        !matches!(self, Daemon::Crio | Daemon::Podman)
    }
}

pub fn tools_target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target")
}

pub fn crio_binary() -> PathBuf {
    let p = tools_target().join("cri-o/crio");
    assert!(p.is_file(), "{p:?} is missing: run scripts/cri-tools.sh");
    p
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/daemons")
}

/// One case of the corpus, staged in a private directory.
pub struct Stage {
    pub daemon: Daemon,
    pub case: String,
    dir: TempDir,
}

impl Stage {
    /// Stages `daemon`'s case `case` (a directory of the corpus).
    pub fn new(daemon: Daemon, case: &str) -> Stage {
        Stage::staged(daemon, case, true)
    }

    /// Stages the case with its paths as they are on a node (for
    /// `--root`): the files name /opt/x/runc-custom, which the stage holds
    /// at ROOT/opt/x/runc-custom.
    pub fn as_on_node(daemon: Daemon, case: &str) -> Stage {
        Stage::staged(daemon, case, false)
    }

    fn staged(daemon: Daemon, case: &str, move_them: bool) -> Stage {
        let dir = tempfile::Builder::new()
            .prefix("uhn-reg-")
            .tempdir_in("/tmp")
            .unwrap();
        let stage = Stage {
            daemon,
            case: case.to_owned(),
            dir,
        };
        require_tools();
        let from = fixtures().join(daemon.fixture_dir()).join(case);
        assert!(from.is_dir(), "no case {from:?}");
        let to = stage.root().join(daemon.etc());
        if daemon == Daemon::Podman {
            // podman reads the rest of /etc/containers (policy.json,
            // registries.conf) from the same directory.
            copy_tree(Path::new("/etc/containers"), &to, &|t| t.to_owned());
        }
        let root = stage.root().to_path_buf();
        if move_them {
            copy_tree(&from, &to, &|t| move_paths(t, &root));
        } else {
            copy_tree(&from, &to, &|t| t.to_owned());
        }
        stage.write_support_files();
        stage
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The daemon's main config file.
    pub fn config(&self) -> PathBuf {
        self.root()
            .join(self.daemon.etc())
            .join(self.daemon.main_file())
    }

    /// The daemon's config directory (the main file and its drop-ins).
    pub fn etc(&self) -> PathBuf {
        self.root().join(self.daemon.etc())
    }

    pub fn handlers(&self) -> PathBuf {
        self.root().join("handlers")
    }

    /// The wrapper's link the handler runs.
    pub fn wrapper_link(&self) -> PathBuf {
        self.handlers().join(HANDLER).join("userns-hostnet-runtime")
    }

    /// The link to the handler's real runtime.
    pub fn runtime_link(&self) -> PathBuf {
        self.handlers().join(HANDLER).join("runtime")
    }

    /// A directory first in the PATH the daemons and the wrapper get:
    /// runc, crun and the tools CRI-O needs, and no conmon (as on nodes
    /// where CRI-O's packages keep conmon in /usr/libexec/crio).
    pub fn bin(&self) -> PathBuf {
        self.root().join("bin")
    }

    /// The PATH of the daemons and the wrapper: no conmon in it.
    pub fn path_var(&self) -> String {
        self.bin().display().to_string()
    }

    /// The custom runtime's log: one line per run.
    pub fn custom_runs(&self, name: &str) -> Vec<String> {
        fs::read_to_string(self.root().join(format!("runs/{name}.log")))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn write_support_files(&self) {
        let r = self.root();
        fs::create_dir_all(r.join("runs")).unwrap();
        // Every runtime the corpus names by path is the real one behind a
        // step that notes each run.
        let runtimes = [
            ("opt/x/runc-custom", "runc-custom", "/usr/sbin/runc"),
            ("opt/x/crun-custom", "crun-custom", "/usr/bin/crun"),
            ("usr/libexec/crio/crun", "crio-crun", "/usr/bin/crun"),
            ("usr/libexec/crio/runc", "crio-runc", "/usr/sbin/runc"),
        ];
        for (at, name, real) in runtimes {
            let p = r.join(at);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            write_script(
                &p,
                &format!(
                    "#!/bin/sh\necho \"$*\" >>{log}\nexec {real} \"$@\"\n",
                    log = r.join(format!("runs/{name}.log")).display()
                ),
            );
        }
        symlink("/usr/bin/conmon", r.join("usr/libexec/crio/conmon")).unwrap();
        let bin = self.bin();
        fs::create_dir_all(&bin).unwrap();
        for tool in [
            "runc",
            "crun",
            "nsenter",
            "mount",
            "umount",
            "sh",
            "iptables",
            "ip6tables",
            "cat",
        ] {
            if let Some(p) = super::find_in_path(tool) {
                symlink(p, bin.join(tool)).unwrap();
            }
        }
        symlink(tools_target().join("cri-o/pinns"), bin.join("pinns")).unwrap();
        // containerd's base spec must load when the daemon starts.
        let spec = r.join("etc/containerd/base-runtime-spec.json");
        fs::create_dir_all(spec.parent().unwrap()).unwrap();
        fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/engine/fixtures/ctr-default.json"),
            spec,
        )
        .unwrap();
        fs::create_dir_all(r.join("etc/crio")).unwrap();
        fs::write(
            r.join("etc/crio/policy.json"),
            r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
        )
        .unwrap();
        // The wrapper's defaults, whatever the host's config file says.
        fs::write(r.join("wrapper.toml"), "").unwrap();
    }

    /// `userns-hostnet COMMAND DAEMON --config MAIN --handlers-dir H MORE...`;
    /// install also gets `--wrapper W` and (containerd) `--containerd` this
    /// version's binary.
    pub fn tool(&self, command: &str, more: &[&str]) -> Output {
        let mut cmd = Command::new(TOOL);
        cmd.arg(command)
            .arg(self.daemon.install_name())
            .arg("--config")
            .arg(self.config())
            .arg("--handlers-dir")
            .arg(self.handlers());
        if command == "install" {
            cmd.arg("--wrapper").arg(WRAPPER);
            if self.daemon.is_containerd() {
                cmd.arg("--containerd").arg(self.daemon.containerd());
            }
        }
        if self.daemon == Daemon::Crio {
            // As on a CRI-O node, the crio that reads the config is in
            // PATH: install asks it its version (its built-in default
            // handler changed from runc to crun in 1.31).
            cmd.env(
                "PATH",
                format!(
                    "{}:{}",
                    tools_target().join("cri-o").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            );
        }
        cmd.args(more);
        cmd.output().unwrap()
    }

    /// install, which must succeed: its output.
    pub fn install(&self, more: &[&str]) -> String {
        let out = self.tool("install", more);
        assert!(
            out.status.success(),
            "{}/{}: install {more:?} failed ({:?}):\n{}",
            self.daemon.fixture_dir(),
            self.case,
            out.status.code(),
            text(&out)
        );
        text(&out)
    }

    /// uninstall, which must succeed: its output.
    pub fn uninstall(&self, more: &[&str]) -> String {
        let out = self.tool("uninstall", more);
        assert!(
            out.status.success(),
            "{}/{}: uninstall {more:?} failed ({:?}):\n{}",
            self.daemon.fixture_dir(),
            self.case,
            out.status.code(),
            text(&out)
        );
        text(&out)
    }

    /// Every file and link under the daemon's config directory and the
    /// handlers directory, with its bytes (a link: its target).
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut all = BTreeMap::new();
        for top in [self.etc(), self.handlers()] {
            walk(&top, &mut all);
        }
        all
    }

    /// The daemon's own reading of the staged config: containerd's
    /// `config dump`, CRI-O's `crio config`, or podman's view of its
    /// runtimes (engine.runtime and [engine.runtimes] as `podman info`
    /// resolves them). Err: the daemon's own message.
    pub fn dump(&self) -> Result<toml::Value, String> {
        match self.daemon {
            Daemon::Crio => {
                let out = self
                    .crio_command()
                    .arg("config")
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                parse_daemon_output("crio config", &out).map(with_default_crio_handler)
            }
            Daemon::Podman => Err("podman has no config dump: use podman_info".into()),
            d => {
                let out = Command::new(d.containerd())
                    .arg("--config")
                    .arg(self.config())
                    .args(["config", "dump"])
                    .output()
                    .unwrap();
                parse_daemon_output("containerd config dump", &out)
            }
        }
    }

    /// crio with this case's config, every directory it writes private
    /// (command-line flags, so the config directory holds only the corpus).
    pub fn crio_command(&self) -> Command {
        let r = self.root();
        let mut cmd = Command::new(crio_binary());
        cmd.env_clear()
            .env("PATH", self.path_var())
            .env("USERNS_HOSTNET_HANDLERS_DIR", self.handlers())
            .env("USERNS_HOSTNET_CONFIG", r.join("wrapper.toml"))
            .arg("--config")
            .arg(self.config())
            .arg("--config-dir")
            .arg(self.etc().join("crio.conf.d"));
        for (flag, at) in [
            ("--root", "crio/root"),
            ("--runroot", "crio/runroot"),
            ("--listen", "crio/crio.sock"),
            ("--signature-policy", "etc/crio/policy.json"),
            ("--cni-config-dir", "crio/cni/net.d"),
            ("--cni-plugin-dir", "crio/cni/bin"),
            ("--log-dir", "crio/pods"),
            ("--version-file", "crio/version"),
            ("--version-file-persist", "crio/version-persist"),
            ("--clean-shutdown-file", "crio/clean.shutdown"),
            ("--container-exits-dir", "crio/exits"),
            ("--container-attach-socket-dir", "crio/attach"),
            ("--namespaces-dir", "crio/ns"),
            ("--hooks-dir", "crio/hooks.d"),
        ] {
            cmd.arg(flag).arg(r.join(at));
        }
        cmd.args([
            "--storage-driver",
            "vfs",
            "--enable-nri=false",
            "--stream-port",
            "0",
        ]);
        cmd
    }

    /// `podman [--runtime NAME] info` on this case's containers.conf and
    /// containers.conf.d, seen at /etc/containers in a private mount
    /// namespace; the JSON of `.Host.OCIRuntime`.
    pub fn podman_info(&self, runtime: Option<&str>) -> Result<serde_json::Value, String> {
        let r = self.root();
        let mut podman = format!(
            "mount --bind {etc} /etc/containers && exec podman --root {r}/podman/root --runroot {r}/podman/run --storage-driver vfs",
            etc = self.etc().display(),
            r = r.display()
        );
        if let Some(name) = runtime {
            podman.push_str(&format!(" --runtime {name}"));
        }
        podman.push_str(" info --format '{{json .Host.OCIRuntime}}'");
        let out = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &podman])
            .env(
                "PATH",
                format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", self.path_var()),
            )
            .env("USERNS_HOSTNET_HANDLERS_DIR", self.handlers())
            .env("USERNS_HOSTNET_CONFIG", r.join("wrapper.toml"))
            .env_remove("CONTAINERS_CONF")
            .output()
            .unwrap();
        if !out.status.success() {
            return Err(text(&out));
        }
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", text(&out)))
    }

    /// The wrapper as the handler runs it (its link, the daemon's PATH and
    /// the private handlers directory), asked `--version`: the real
    /// runtime's answer comes first.
    pub fn wrapper_version(&self, handler_binary: &Path) -> String {
        let out = Command::new(handler_binary)
            .arg("--version")
            .env_clear()
            .env("PATH", self.path_var())
            .env("USERNS_HOSTNET_HANDLERS_DIR", self.handlers())
            .env("USERNS_HOSTNET_CONFIG", self.root().join("wrapper.toml"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{handler_binary:?} --version: {}",
            text(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `BINARY --version` (a name: looked up in the daemons' PATH).
    pub fn version_of(&self, binary: &str) -> String {
        let path = if binary.starts_with('/') {
            PathBuf::from(binary)
        } else {
            self.bin().join(binary)
        };
        let out = Command::new(&path)
            .arg("--version")
            .env("PATH", self.path_var())
            .output()
            .unwrap_or_else(|e| panic!("{path:?}: {e}"));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// A running daemon started on a stage; killed on drop.
pub struct Running {
    child: Child,
    pub log: PathBuf,
    pub endpoint: String,
}

impl Running {
    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `crictl info` of this daemon, parsed.
    pub fn crictl_info(&self) -> serde_json::Value {
        let out = Command::new(crictl_path())
            .args([
                "--runtime-endpoint",
                &self.endpoint,
                "--timeout",
                "20s",
                "info",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "crictl info: {}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Stage {
    /// Starts the daemon on the staged config (containerd: the file as it
    /// is, whose root, state and sockets the staging moved here; CRI-O:
    /// [`Stage::crio_command`]); Ok once it answers over CRI, Err(its log)
    /// when it exits first or does not answer within 30 s.
    pub fn start(&self) -> Result<Running, String> {
        let log = self.root().join("daemon.log");
        let logf = fs::File::create(&log).unwrap();
        let (mut cmd, endpoint) = if self.daemon == Daemon::Crio {
            let ep = format!("unix://{}", self.root().join("crio/crio.sock").display());
            (self.crio_command(), ep)
        } else {
            let mut cmd = Command::new(self.daemon.containerd());
            cmd.arg("--config")
                .arg(self.config())
                .env(
                    "PATH",
                    format!(
                        "{}:{}",
                        self.path_var(),
                        self.daemon.containerd().parent().unwrap().display()
                    ),
                )
                .env("USERNS_HOSTNET_HANDLERS_DIR", self.handlers())
                .env("USERNS_HOSTNET_CONFIG", self.root().join("wrapper.toml"));
            let ep = format!(
                "unix://{}",
                self.root().join("run/containerd/containerd.sock").display()
            );
            (cmd, ep)
        };
        let child = super::process::default_signals(&mut cmd)
            .stdin(Stdio::null())
            .stdout(logf.try_clone().unwrap())
            .stderr(logf)
            .spawn()
            .expect("start the daemon");
        let mut running = Running {
            child,
            log,
            endpoint,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = Command::new(crictl_path())
                .args([
                    "--runtime-endpoint",
                    &running.endpoint,
                    "--timeout",
                    "2s",
                    "version",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap()
                .success();
            if ok {
                return Ok(running);
            }
            if matches!(running.child.try_wait(), Ok(Some(_))) || Instant::now() > deadline {
                return Err(running.log_text());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The tier's prerequisites, or a panic naming what to install.
fn require_tools() {
    for (tool, hint) in [
        ("runc", "the Debian package runc"),
        ("crun", "the Debian package crun"),
        ("conmon", "the Debian package conmon"),
        ("podman", "the Debian package podman"),
        ("unshare", "util-linux"),
        ("nsenter", "util-linux"),
    ] {
        assert!(
            super::find_in_path(tool).is_some(),
            "`{tool}` is missing: install {hint}"
        );
    }
    assert!(
        Path::new("/usr/bin/conmon").is_file(),
        "/usr/bin/conmon is missing: install the Debian package conmon"
    );
    for p in [crictl_path(), tools_target().join("cri-o/pinns")] {
        assert!(p.is_file(), "{p:?} is missing: run scripts/cri-tools.sh");
    }
}

/// Standard output, then standard error.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn parse_daemon_output(what: &str, out: &Output) -> Result<toml::Value, String> {
    if !out.status.success() {
        return Err(format!(
            "{what} exited {:?}: {}",
            out.status.code(),
            last_lines(&String::from_utf8_lossy(&out.stderr), 3)
        ));
    }
    let s = String::from_utf8_lossy(&out.stdout);
    s.parse::<toml::Value>()
        .map_err(|e| format!("{what}: output is not TOML: {e}"))
}

pub fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `crio config` writes a setting equal to CRI-O's built-in default as a
/// comment, so a config that names no handler shows the built-in one
/// (crun, the default_runtime) commented out: read that table back in.
fn with_default_crio_handler(mut dump: toml::Value) -> toml::Value {
    let runtime = dump
        .get_mut("crio")
        .and_then(|c| c.get_mut("runtime"))
        .and_then(toml::Value::as_table_mut)
        .expect("crio config has [crio.runtime]");
    let default = runtime
        .get("default_runtime")
        .and_then(toml::Value::as_str)
        .unwrap_or(CRIO_DEFAULT_RUNTIME)
        .to_owned();
    runtime
        .entry("default_runtime")
        .or_insert_with(|| toml::Value::String(default.clone()));
    let runtimes = runtime
        .entry("runtimes")
        .or_insert_with(|| toml::Value::Table(Default::default()))
        .as_table_mut()
        .unwrap();
    if !runtimes.contains_key(&default) {
        if let Some(t) = builtin_crio_handler(&default) {
            runtimes.insert(default, t);
        }
    }
    dump
}

/// CRI-O's built-in default handler.
const CRIO_DEFAULT_RUNTIME: &str = "crun";

/// The built-in handler `name` as `crio config` prints it, commented out.
fn builtin_crio_handler(name: &str) -> Option<toml::Value> {
    let out = Command::new(crio_binary())
        .args([
            "--config",
            "/dev/null",
            "--config-dir",
            "/nonexistent",
            "config",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let header = format!("# [crio.runtime.runtimes.{name}]");
    let start = text.rfind(&header)?;
    let mut body = String::new();
    for line in text[start + header.len()..].lines().skip(1) {
        let Some(l) = line.strip_prefix("# ") else {
            break;
        };
        body.push_str(l);
        body.push('\n');
    }
    body.parse::<toml::Value>().ok()
}

/// Quoted absolute paths under [`MOVED`] moved under `root`.
fn move_paths(text: &str, root: &Path) -> String {
    let mut out = text.to_owned();
    for quote in ['"', '\''] {
        for prefix in MOVED {
            out = out.replace(
                &format!("{quote}{prefix}"),
                &format!("{quote}{}{prefix}", root.display()),
            );
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path, edit: &dyn Fn(&str) -> String) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        let dest = to.join(e.file_name());
        if t.is_dir() {
            copy_tree(&e.path(), &dest, edit);
        } else if t.is_file() {
            let text = fs::read_to_string(e.path()).unwrap();
            fs::write(&dest, edit(&text)).unwrap();
        }
    }
}

fn walk(dir: &Path, all: &mut BTreeMap<PathBuf, Vec<u8>>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_symlink() {
            let target = fs::read_link(e.path()).unwrap();
            all.insert(e.path(), target.into_os_string().into_encoded_bytes());
        } else if t.is_dir() {
            all.insert(e.path(), b"<dir>".to_vec());
            walk(&e.path(), all);
        } else {
            all.insert(e.path(), fs::read(e.path()).unwrap());
        }
    }
}

fn write_script(path: &Path, text: &str) {
    super::containerd::write_script(path, text);
}
