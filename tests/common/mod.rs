//! Shared helpers for the end-to-end tests: a busybox rootfs, OCI bundles,
//! a private mount namespace with a realistic /sys, runtime invocations with
//! timeouts, and parsers for what the container reports about itself.
//!
//! Every test runs real containers. Missing prerequisites (root, runc, crun,
//! busybox, unshare) make the tests fail loudly: they never skip.

#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

pub mod containerd;
pub mod cri;
pub mod crictl;
pub mod crio;
pub mod deploy;
pub mod install;
pub mod kube_deploy;
pub mod kube_pods;
pub mod kubernetes;
pub mod podman;
pub mod process;
pub mod registration;
pub mod scenarios;

/// The built binaries every end-to-end test runs, the admin tool's
/// included: the wrapper under test, which cargo builds for this crate's
/// tests,
pub const WRAPPER: &str = env!("CARGO_BIN_EXE_userns-hostnet-runtime");

/// and the admin tool (`userns-hostnet`) beside it: the admin crate's binary, which
/// cargo builds into the wrapper's directory but names to that crate's
/// tests only. `cargo build` (every crate) builds it; a `cargo test --test
/// NAME` of one of these tests alone does not.
pub const TOOL: &str = without_suffix(WRAPPER, "-runtime");

/// The workspace's target/, where scripts/cri-tools.sh unpacks the
/// daemons and the runtimes they pin (containerd 1.7 and 2.3, runc 1.4.3,
/// CRI-O, crictl).
pub fn tools_target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target")
}

/// `s` without `suffix`, which it must end with.
const fn without_suffix(s: &'static str, suffix: &str) -> &'static str {
    let (s, suffix) = (s.as_bytes(), suffix.as_bytes());
    assert!(s.len() >= suffix.len(), "shorter than the suffix");
    let start = s.len() - suffix.len();
    let mut i = 0;
    while i < suffix.len() {
        assert!(s[start + i] == suffix[i], "does not end with the suffix");
        i += 1;
    }
    match std::str::from_utf8(s.split_at(start).0) {
        Ok(s) => s,
        Err(_) => panic!("not UTF-8 before the suffix"),
    }
}

/// Host IDs the container's root is mapped to.
pub const HOST_ID_BASE: u64 = 100_000;
pub const ID_RANGE: u64 = 65_536;

/// How long a single runtime invocation may take before the test fails.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(90);

/// Applets linked into the rootfs.
const APPLETS: &[&str] = &[
    "sh", "cat", "awk", "grep", "ls", "echo", "sleep", "true", "false", "id", "mount", "head",
    "tail", "sed", "test", "[", "touch", "mkdir", "env", "ps", "stat", "readlink",
];

/// Capabilities given to every test container: a container-runtime default
/// set plus the network capabilities the wrapper is expected to drop.
pub const TEST_CAPS: &[&str] = &[
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
];

pub const NET_CAPS: &[&str] = &[
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
];

pub const CAP_CHOWN_BIT: u32 = 0;
pub const CAP_KILL_BIT: u32 = 5;
/// CAP_NET_BIND_SERVICE, CAP_NET_BROADCAST, CAP_NET_ADMIN, CAP_NET_RAW.
pub const NET_CAP_BITS: &[u32] = &[10, 11, 12, 13];

/// Prepares the mount namespace every runtime invocation runs in: the host's
/// /sys plus bpffs and securityfs submounts (as on a real node), and a pure
/// cgroup v2 view of /sys/fs/cgroup. `$@` is the runtime argv.
pub const SYS_VIEW_SCRIPT: &str = r#"set -e
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
umount -R /sys/fs/cgroup
mount -t cgroup2 none /sys/fs/cgroup
exec "$@"
"#;

/// The real runtimes the wrapper is tested against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    Runc,
    Crun,
    /// youki 0.7.0, built from crates.io by scripts/youki.sh into
    /// target/youki (Debian has no package).
    Youki,
    /// runc 1.4.3, what containerd 2.3.4 pins, unpacked by
    /// scripts/cri-tools.sh into target/containerd-2.3 (Debian 12 has
    /// 1.1.5). Its file name is `runc`: the wrapper reads its argv as runc's.
    Runc14,
    /// runc 1.5.3, what containerd 2.4.2 pins (runtime-spec 1.3), unpacked
    /// by scripts/cri-tools.sh into target/containerd-2.4.
    Runc15,
    /// crun 1.27.1 (static), what Fedora, RHEL and OpenShift nodes run,
    /// unpacked by scripts/cri-tools.sh into target/crun-1.27.1. Like crun
    /// 1.8.1 it refuses hybrid cgroups, which the pure cgroup v2 view every
    /// runtime invocation runs in (SYS_VIEW_SCRIPT) does not show it.
    Crun127,
}

/// Where scripts/youki.sh installs youki.
pub const YOUKI_BUILT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/youki/bin/youki");

/// Where scripts/cri-tools.sh unpacks runc 1.4.3.
pub const RUNC_14_UNPACKED: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/target/containerd-2.3/runc");

/// Where scripts/cri-tools.sh unpacks runc 1.5.3.
pub const RUNC_15_UNPACKED: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/target/containerd-2.4/runc");

/// Where scripts/cri-tools.sh unpacks crun 1.27.1.
pub const CRUN_127_UNPACKED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/crun-1.27.1/crun");

impl Runtime {
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Runc => "runc",
            Runtime::Crun => "crun",
            Runtime::Youki => "youki",
            Runtime::Runc14 => "runc-1.4",
            Runtime::Runc15 => "runc-1.5",
            Runtime::Crun127 => "crun-1.27",
        }
    }

    /// The name the runtime gives itself (`--version`, its messages) and
    /// its file name: runc 1.4.3 and 1.5.3 are `runc` too, crun 1.27.1 `crun`.
    pub fn program_name(self) -> &'static str {
        match self {
            Runtime::Runc14 | Runtime::Runc15 => "runc",
            Runtime::Crun127 => "crun",
            other => other.name(),
        }
    }

    /// runc, of any version: the same rules, and `/sys` bound with its
    /// submounts.
    pub fn is_runc(self) -> bool {
        matches!(self, Runtime::Runc | Runtime::Runc14 | Runtime::Runc15)
    }

    /// runc 1.3 or later: joins the user namespace and the others in two
    /// stages.
    pub fn is_runc_13_or_later(self) -> bool {
        matches!(self, Runtime::Runc14 | Runtime::Runc15)
    }

    /// crun, of any version: argp's argv, libcap's capability names.
    pub fn is_crun(self) -> bool {
        matches!(self, Runtime::Crun | Runtime::Crun127)
    }

    /// Absolute path of the runtime, or a panic naming what to install.
    pub fn path(self) -> PathBuf {
        if self == Runtime::Youki {
            let built = PathBuf::from(YOUKI_BUILT);
            assert!(
                built.is_file(),
                "youki is not built: run scripts/youki.sh (it installs youki 0.7.0 from crates.io into target/youki)"
            );
            return built;
        }
        if self == Runtime::Runc14 {
            let unpacked = PathBuf::from(RUNC_14_UNPACKED);
            assert!(
                unpacked.is_file(),
                "runc 1.4.3 is missing at {unpacked:?}: run scripts/cri-tools.sh (it unpacks \
                 ../shared/tools/containerd-2.3.4-runc-1.4.3 into target/containerd-2.3)"
            );
            return unpacked;
        }
        for (runtime, unpacked, what) in [
            (
                Runtime::Runc15,
                RUNC_15_UNPACKED,
                "runc 1.5.3 (../shared/tools/containerd-2.4.2-runc-1.5.3 into target/containerd-2.4)",
            ),
            (
                Runtime::Crun127,
                CRUN_127_UNPACKED,
                "crun 1.27.1 (../shared/tools/crun-1.27.1 into target/crun-1.27.1)",
            ),
        ] {
            if self == runtime {
                let unpacked = PathBuf::from(unpacked);
                assert!(
                    unpacked.is_file(),
                    "{unpacked:?} is missing: run scripts/cri-tools.sh (it unpacks {what})"
                );
                return unpacked;
            }
        }
        find_in_path(self.name()).unwrap_or_else(|| {
            panic!(
                "{} is not installed (not found in PATH); install the Debian package `{}`",
                self.name(),
                self.name()
            )
        })
    }

    /// Global options the runtime needs on these machines. crun 1.8.1 refuses
    /// to manage cgroups unless its cgroup manager is disabled in the cgroup
    /// v2 view of a hybrid host.
    pub fn global_args(self) -> Vec<String> {
        match self {
            Runtime::Runc => vec![],
            Runtime::Crun | Runtime::Crun127 => vec!["--cgroup-manager=disabled".to_string()],
            Runtime::Youki | Runtime::Runc14 | Runtime::Runc15 => vec![],
        }
    }
}

/// The installer's deploy writes the host's own paths (its state under
/// /var/lib/userns-hostnet, the binaries and links it lays): one deploy on
/// the real host at a time on this machine, across the test processes that
/// run side by side (the Kubernetes tier's one-node DaemonSet, the fleet,
/// whose nodes' views read through to the host's /etc and /var/lib, and
/// e2e_deploy_node's restart path). Held until dropped.
pub fn host_deploy_lock() -> nix::fcntl::Flock<fs::File> {
    let path = Path::new("/run/lock/userns-hostnet-tests.host-deploy");
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .unwrap_or_else(|(_, e)| panic!("lock {}: {e}", path.display()))
}

pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            fs::metadata(candidate)
                .map(|m| m.is_file() && m.mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

fn euid() -> u32 {
    let status = fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .expect("parse Uid from /proc/self/status")
}

/// Fails the test unless everything a real container needs is present.
pub fn require_prerequisites(runtime: Runtime) {
    assert_eq!(
        euid(),
        0,
        "the end-to-end tests run real containers and must run as root"
    );
    runtime.path();
    for tool in ["unshare", "mountpoint", "mount", "umount"] {
        assert!(
            find_in_path(tool).is_some(),
            "`{tool}` is missing from PATH (Debian packages util-linux / mount)"
        );
    }
    assert!(
        busybox_path().is_file(),
        "/bin/busybox is missing; install the Debian package busybox-static"
    );
    assert!(
        Path::new(WRAPPER).is_file(),
        "wrapper binary {WRAPPER} was not built"
    );
}

fn busybox_path() -> PathBuf {
    PathBuf::from("/bin/busybox")
}

/// A unique name for containers and directories, safe across parallel tests
/// and concurrent test processes.
pub fn unique_id(tag: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    format!("uhn-{tag}-{}-{n}", std::process::id())
}

/// A read-only busybox rootfs owned by the container's root (host uid/gid
/// 100000). Built once under cargo's target tmp dir and reused by every test
/// process; containers only read it (`root.readonly`).
pub fn rootfs() -> &'static Path {
    static ROOTFS: OnceLock<PathBuf> = OnceLock::new();
    ROOTFS.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let dest = base.join("busybox-rootfs");
        if dest.join(".complete").is_file() {
            return dest;
        }
        let staging = base.join(unique_id("rootfs-staging"));
        let _ = fs::remove_dir_all(&staging);
        build_rootfs(&staging);
        fs::write(staging.join(".complete"), "").unwrap();
        if fs::rename(&staging, &dest).is_err() {
            // Another test process won the race (rename never replaces a
            // non-empty directory): use its copy.
            let _ = fs::remove_dir_all(&staging);
        }
        assert!(
            dest.join(".complete").is_file(),
            "rootfs {dest:?} is incomplete"
        );
        dest
    })
}

/// Writes a busybox rootfs at `dest` and hands it to host ID 100000.
pub fn build_rootfs(dest: &Path) {
    populate_rootfs(dest);
    run_ok(
        Command::new("chown")
            .arg("-R")
            .arg("-h")
            .arg(format!("{HOST_ID_BASE}:{HOST_ID_BASE}"))
            .arg(dest),
    );
}

/// Writes a busybox rootfs at `dest` owned by the caller: /bin/busybox with
/// its applets, the usual mount points, and the files runtimes bind over.
pub fn populate_rootfs(dest: &Path) {
    for d in [
        "bin", "proc", "sys", "dev", "etc", "tmp", "run", "root", "var",
    ] {
        fs::create_dir_all(dest.join(d)).unwrap_or_else(|e| panic!("mkdir {d}: {e}"));
    }
    fs::copy(busybox_path(), dest.join("bin/busybox")).expect("copy /bin/busybox");
    for applet in APPLETS {
        symlink("busybox", dest.join("bin").join(applet)).expect("applet symlink");
    }
    fs::write(dest.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
    fs::write(dest.join("etc/group"), "root:x:0:\n").unwrap();
    for f in ["etc/hosts", "etc/resolv.conf", "etc/hostname"] {
        fs::write(dest.join(f), "").unwrap();
    }
}

/// An OCI bundle in its own temp dir.
pub struct Bundle {
    tmp: TempDir,
}

impl Bundle {
    /// A bundle from `runc spec`: a user namespace mapping container 0 to host
    /// 100000, no network namespace (host network), the busybox rootfs,
    /// `args` as the process, no terminal, and TEST_CAPS in every set. Its
    /// cgroup path is named after the bundle directory, as containerd and
    /// CRI-O always name one: youki 0.7.0 without one falls back to systemd
    /// for a user-namespaced container on a cgroup v2 host, and fails where
    /// systemd does not run.
    pub fn userns_hostnet(args: &[&str]) -> Bundle {
        let tmp = tempfile::Builder::new()
            .prefix("uhn-bundle-")
            .tempdir()
            .expect("create bundle dir");
        let b = Bundle { tmp };
        run_ok(
            Command::new(Runtime::Runc.path())
                .arg("spec")
                .arg("--bundle")
                .arg(b.dir()),
        );
        let rootfs = rootfs().to_path_buf();
        let cgroup = format!("/{}", b.dir().file_name().unwrap().to_string_lossy());
        b.edit(|spec| {
            spec["linux"]["cgroupsPath"] = json!(cgroup);
            spec["root"]["path"] = json!(rootfs);
            spec["process"]["terminal"] = json!(false);
            spec["process"]["args"] = json!(args);
            let caps = json!(TEST_CAPS);
            for set in ["bounding", "effective", "permitted"] {
                spec["process"]["capabilities"][set] = caps.clone();
            }
            remove_namespace(spec, "network");
            add_namespace(spec, "user");
            let mapping = json!([{
                "containerID": 0,
                "hostID": HOST_ID_BASE,
                "size": ID_RANGE,
            }]);
            spec["linux"]["uidMappings"] = mapping.clone();
            spec["linux"]["gidMappings"] = mapping;
        });
        b
    }

    /// Like `userns_hostnet` but the container has its own network namespace.
    pub fn userns_ownnet(args: &[&str]) -> Bundle {
        let b = Bundle::userns_hostnet(args);
        b.edit(|spec| add_namespace(spec, "network"));
        b
    }

    pub fn dir(&self) -> &Path {
        self.tmp.path()
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir().join("config.json")
    }

    pub fn spec(&self) -> Value {
        let text = fs::read(self.config_path()).expect("read config.json");
        serde_json::from_slice(&text).expect("config.json is valid JSON")
    }

    pub fn write_spec(&self, spec: &Value) {
        let text = serde_json::to_vec_pretty(spec).unwrap();
        fs::write(self.config_path(), text).expect("write config.json");
    }

    pub fn edit(&self, f: impl FnOnce(&mut Value)) {
        let mut spec = self.spec();
        f(&mut spec);
        self.write_spec(&spec);
    }

    /// Bytes and inode of config.json, to prove it was not touched.
    pub fn snapshot(&self) -> FileSnapshot {
        FileSnapshot::of(&self.config_path())
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct FileSnapshot {
    pub bytes: Vec<u8>,
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
}

impl FileSnapshot {
    pub fn of(path: &Path) -> FileSnapshot {
        let meta = fs::symlink_metadata(path).unwrap_or_else(|e| panic!("stat {path:?}: {e}"));
        FileSnapshot {
            bytes: fs::read(path).unwrap(),
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
        }
    }

    pub fn assert_unchanged(&self, path: &Path, what: &str) {
        let now = FileSnapshot::of(path);
        assert!(
            now.bytes == self.bytes,
            "{what}: {path:?} changed its bytes:\n--- before\n{}\n--- after\n{}",
            String::from_utf8_lossy(&self.bytes),
            String::from_utf8_lossy(&now.bytes)
        );
        assert_eq!(
            (now.dev, now.ino),
            (self.dev, self.ino),
            "{what}: {path:?} was replaced (inode changed) although its bytes are equal"
        );
        assert_eq!(now.mode, self.mode, "{what}: {path:?} changed mode");
    }
}

pub fn namespaces(spec: &Value) -> Vec<String> {
    spec["linux"]["namespaces"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n["type"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn add_namespace(spec: &mut Value, kind: &str) {
    if namespaces(spec).iter().any(|n| n == kind) {
        return;
    }
    spec["linux"]["namespaces"]
        .as_array_mut()
        .expect("linux.namespaces is an array")
        .push(json!({ "type": kind }));
}

pub fn remove_namespace(spec: &mut Value, kind: &str) {
    if let Some(list) = spec["linux"]["namespaces"].as_array_mut() {
        list.retain(|n| n["type"] != kind);
    }
}

pub fn mounts(spec: &Value) -> Vec<Value> {
    spec["mounts"].as_array().cloned().unwrap_or_default()
}

pub fn mount_index(spec: &Value, destination: &str) -> Option<usize> {
    mounts(spec)
        .iter()
        .position(|m| m["destination"] == destination)
}

pub fn remove_mount(spec: &mut Value, destination: &str) {
    if let Some(list) = spec["mounts"].as_array_mut() {
        list.retain(|m| m["destination"] != destination);
    }
}

pub fn string_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Checks config.json after conversion: /sys is the rbind/rro bind, it comes
/// before every mount under /sys/, and no capability set holds a network
/// capability.
pub fn assert_converted_spec(spec: &Value) {
    let all = mounts(spec);
    let sys: Vec<&Value> = all.iter().filter(|m| m["destination"] == "/sys").collect();
    assert_eq!(sys.len(), 1, "exactly one /sys mount expected: {all:#?}");
    let sys = sys[0];
    assert_eq!(sys["type"], "bind", "/sys mount type: {sys}");
    assert_eq!(sys["source"], "/sys", "/sys mount source: {sys}");
    let opts = string_list(&sys["options"]);
    for want in ["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"] {
        assert!(
            opts.iter().any(|o| o == want),
            "/sys options lack {want}: {opts:?}"
        );
    }
    for opt in &opts {
        assert!(
            ["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"].contains(&opt.as_str()),
            "/sys options hold `{opt}` beyond rbind,rro,nosuid,nodev,noexec,rprivate: {opts:?}"
        );
    }
    let sys_at = mount_index(spec, "/sys").unwrap();
    for (i, m) in all.iter().enumerate() {
        let dest = m["destination"].as_str().unwrap_or_default();
        if dest.starts_with("/sys/") {
            assert!(
                i > sys_at,
                "{dest} (index {i}) is mounted before /sys (index {sys_at})"
            );
        }
    }
    for (set, list) in spec["process"]["capabilities"]
        .as_object()
        .cloned()
        .unwrap_or_default()
    {
        let caps = string_list(&list);
        for net in NET_CAPS {
            assert!(
                !caps.iter().any(|c| c == net),
                "{net} still in capabilities.{set}: {caps:?}"
            );
        }
    }
}

/// Result of one finished command.
#[derive(Debug)]
pub struct Outcome {
    pub argv: Vec<OsString>,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn success(&self) -> bool {
        self.status.success()
    }

    pub fn describe(&self) -> String {
        format!(
            "command {:?}\nstatus: {}\n--- stdout\n{}\n--- stderr\n{}",
            self.argv, self.status, self.stdout, self.stderr
        )
    }

    pub fn assert_success(&self) -> &Self {
        assert!(self.success(), "expected success\n{}", self.describe());
        self
    }
}

/// Runs a command with stdout/stderr sent to files (a created container holds
/// the caller's stdio, so pipes would never reach EOF) and a deadline.
pub fn run_capture(cmd: &mut Command) -> Outcome {
    let out = tempfile::tempfile().expect("stdout temp file");
    let err = tempfile::tempfile().expect("stderr temp file");
    let mut argv: Vec<OsString> = vec![cmd.get_program().to_os_string()];
    argv.extend(cmd.get_args().map(OsStr::to_os_string));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {argv:?}: {e}"));
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{argv:?} did not finish within {COMMAND_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        argv,
        status,
        stdout: read_file_handle(out),
        stderr: read_file_handle(err),
    }
}

fn read_file_handle(mut f: fs::File) -> String {
    use std::io::{Read, Seek, SeekFrom};
    f.seek(SeekFrom::Start(0)).unwrap();
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    s
}

pub fn run_ok(cmd: &mut Command) -> Outcome {
    let out = run_capture(cmd);
    out.assert_success();
    out
}

/// A command that runs `argv` inside a private mount namespace with the
/// realistic /sys described by SYS_VIEW_SCRIPT.
pub fn in_sys_view<S: AsRef<OsStr>>(argv: &[S]) -> Command {
    let mut cmd = Command::new("unshare");
    cmd.arg("--mount")
        .arg("--propagation")
        .arg("private")
        .arg("sh")
        .arg("-c")
        .arg(SYS_VIEW_SCRIPT)
        .arg("sys-view");
    cmd.args(argv);
    cmd
}

/// youki 0.7.0's `run` waits for its container's exit with
/// `sigtimedwait(SIGCHLD)` without blocking SIGCHLD first: when the
/// container exits before the wait starts, the signal is discarded and
/// `run` waits forever (seen here under load, the container's init a
/// zombie). Only `run` does that, and only tests call `run`; containerd and
/// CRI-O call create and start. So a test's youki starts with SIGCHLD
/// blocked, which the wrapper's exec passes on unchanged: these words go
/// in front of the command, after the /sys view's shell (dash clears the
/// signal mask it was given).
pub fn sigchld_blocked_for(runtime: Runtime) -> Vec<OsString> {
    if runtime != Runtime::Youki {
        return Vec::new();
    }
    [
        "perl",
        "-MPOSIX",
        "-e",
        "sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGCHLD)) or die; exec @ARGV or die \"exec: $!\"",
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

/// How a runtime is invoked in a test: which binary runs (the wrapper or the
/// real runtime), which real runtime sits behind it, and the state directory.
pub struct Cli {
    pub runtime: Runtime,
    pub via_wrapper: bool,
    pub root: PathBuf,
    config: PathBuf,
}

/// A state directory (`--root`) and wrapper configuration private to one test.
pub struct Sandbox {
    tmp: TempDir,
    pub runtime: Runtime,
}

impl Sandbox {
    pub fn new(runtime: Runtime) -> Sandbox {
        require_prerequisites(runtime);
        let tmp = tempfile::Builder::new()
            .prefix("uhn-state-")
            .tempdir()
            .expect("create state dir");
        fs::create_dir(tmp.path().join("root")).unwrap();
        // Defaults, whatever the host's /etc/userns-hostnet/config.toml
        // says, with the decision log kept inside the sandbox.
        let log = tmp.path().join("decisions.log");
        fs::write(
            tmp.path().join("config.toml"),
            format!("[log]\nfile = {:?}\n", log.display().to_string()),
        )
        .unwrap();
        Sandbox { tmp, runtime }
    }

    pub fn root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// The wrapper's config file for this sandbox; tests may rewrite it
    /// (keep the `[log]` section to keep the decision log here).
    pub fn config_path(&self) -> PathBuf {
        self.tmp.path().join("config.toml")
    }

    /// The lines of the decision log, parsed.
    pub fn decisions(&self) -> Vec<serde_json::Value> {
        fs::read_to_string(self.tmp.path().join("decisions.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("decision log line is JSON"))
            .collect()
    }

    pub fn wrapper(&self) -> Cli {
        self.cli(true)
    }

    pub fn real(&self) -> Cli {
        self.cli(false)
    }

    fn cli(&self, via_wrapper: bool) -> Cli {
        Cli {
            runtime: self.runtime,
            via_wrapper,
            root: self.root(),
            config: self.tmp.path().join("config.toml"),
        }
    }
}

impl Cli {
    pub fn program(&self) -> PathBuf {
        if self.via_wrapper {
            PathBuf::from(WRAPPER)
        } else {
            self.runtime.path()
        }
    }

    /// A command running `program <global runtime options> <argv>` in the
    /// /sys view, with the wrapper pointed at the real runtime. `argv` is
    /// given whole, so tests control the exact shape (`--root=R`, `--log`).
    pub fn raw_command<S: AsRef<OsStr>>(&self, argv: &[S]) -> Command {
        let mut full = sigchld_blocked_for(self.runtime);
        full.push(self.program().into_os_string());
        full.extend(self.runtime.global_args().into_iter().map(OsString::from));
        full.extend(argv.iter().map(|a| a.as_ref().to_os_string()));
        let mut cmd = in_sys_view(&full);
        cmd.env("USERNS_HOSTNET_RUNTIME", self.runtime.path())
            .env("USERNS_HOSTNET_CONFIG", &self.config);
        cmd
    }

    /// `program <global options> --root R <args>`.
    pub fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut argv: Vec<OsString> = vec!["--root".into(), self.root.clone().into_os_string()];
        argv.extend(args.iter().map(|a| a.as_ref().to_os_string()));
        self.raw_command(&argv)
    }

    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Outcome {
        run_capture(&mut self.command(args))
    }

    pub fn raw<S: AsRef<OsStr>>(&self, argv: &[S]) -> Outcome {
        run_capture(&mut self.raw_command(argv))
    }

    /// Parsed `state ID`, or None when the runtime does not know the id.
    pub fn state(&self, id: &str) -> Option<Value> {
        let out = self.run(&["state", id]);
        if !out.success() {
            return None;
        }
        Some(
            serde_json::from_str(&out.stdout)
                .unwrap_or_else(|e| panic!("state output is not JSON ({e})\n{}", out.describe())),
        )
    }

    pub fn status_of(&self, id: &str) -> Option<String> {
        self.state(id)
            .and_then(|s| s["status"].as_str().map(str::to_string))
    }

    /// Polls until the container reaches `status`.
    pub fn wait_for_status(&self, id: &str, status: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let now = self.status_of(id);
            if now.as_deref() == Some(status) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "container {id} never reached `{status}` (last: {now:?})"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Deletes a container (forcefully, through the real runtime) when dropped,
/// so a failing assertion leaves no container or cgroup behind.
pub struct ContainerGuard<'a> {
    sandbox: &'a Sandbox,
    pub id: String,
}

impl<'a> ContainerGuard<'a> {
    pub fn new(sandbox: &'a Sandbox, id: &str) -> ContainerGuard<'a> {
        ContainerGuard {
            sandbox,
            id: id.to_string(),
        }
    }
}

impl Drop for ContainerGuard<'_> {
    fn drop(&mut self) {
        let real = self.sandbox.real();
        if real.state(&self.id).is_some() {
            let out = real.run(&["delete", "--force", &self.id]);
            if !out.success() && !std::thread::panicking() {
                panic!("cleanup of {} failed\n{}", self.id, out.describe());
            }
        }
    }
}

/// One line of /proc/self/mountinfo.
#[derive(Clone, Debug)]
pub struct MountEntry {
    pub id: u64,
    pub parent: u64,
    pub mount_point: String,
    pub options: Vec<String>,
    pub fstype: String,
    pub source: String,
    pub root: String,
}

impl MountEntry {
    pub fn has(&self, opt: &str) -> bool {
        self.options.iter().any(|o| o == opt)
    }

    pub fn is_at_or_under(&self, dir: &str) -> bool {
        self.mount_point == dir || self.mount_point.starts_with(&format!("{dir}/"))
    }
}

/// Lazily unmounts every mount at or below `dir`, deepest first (what a
/// killed daemon or kubelet left mounted in its private directory).
pub fn unmount_below(dir: &Path) {
    let prefix = format!("{}/", dir.display());
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<String> = parse_mountinfo(&mounts)
        .into_iter()
        .map(|m| m.mount_point)
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        let _ = Command::new("umount").arg("-l").arg(&p).status();
    }
}

/// The directories `/tmp/{prefix}{pid}-...` of test processes that died
/// without dropping what they started (a cargo test binary under
/// target/*/deps/ with that pid no longer runs).
pub fn leftover_dirs(prefix: &str) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir("/tmp") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix(prefix)
                .and_then(|rest| rest.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                return false;
            };
            let alive = fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains("/deps/"))
                .unwrap_or(false);
            pid != std::process::id() && !alive
        })
        .map(|e| e.path())
        .collect()
}

/// Parses mountinfo lines (field 5: mount point, field 6: per-mount options,
/// after ` - `: filesystem type and source). Other lines are ignored.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let fields: Vec<&str> = left.split_whitespace().collect();
            if fields.len() < 6 || fields[0].parse::<u64>().is_err() {
                return None;
            }
            let mut right = right.split_whitespace();
            Some(MountEntry {
                id: fields[0].parse().ok()?,
                parent: fields[1].parse().ok()?,
                root: unescape_mountinfo(fields[3]),
                mount_point: unescape_mountinfo(fields[4]),
                options: fields[5].split(',').map(str::to_string).collect(),
                fstype: right.next().unwrap_or_default().to_string(),
                source: right.next().unwrap_or_default().to_string(),
            })
        })
        .collect()
}

fn unescape_mountinfo(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// A capability mask line of /proc/self/status, e.g. `CapBnd`.
pub fn parse_cap_mask(status_text: &str, field: &str) -> u64 {
    let prefix = format!("{field}:");
    let hex = status_text
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {field} line in:\n{status_text}"))
        .trim();
    u64::from_str_radix(hex, 16).unwrap_or_else(|e| panic!("{field} {hex:?}: {e}"))
}

pub fn has_cap_bit(mask: u64, bit: u32) -> bool {
    mask & (1u64 << bit) != 0
}

/// The shell command a probe container runs: it reports mounts, its
/// capability masks and its uid map in marked sections.
pub const PROBE_SCRIPT: &str = "echo '### mountinfo'; cat /proc/self/mountinfo; \
     echo '### status'; cat /proc/self/status; \
     echo '### uid_map'; cat /proc/self/uid_map; echo '### end'";

pub fn probe_args() -> Vec<&'static str> {
    vec!["/bin/sh", "-c", PROBE_SCRIPT]
}

/// What a probe container reported.
#[derive(Debug)]
pub struct Probe {
    pub mounts: Vec<MountEntry>,
    pub status: String,
    pub uid_map: String,
}

impl Probe {
    pub fn parse(stdout: &str) -> Probe {
        let section = |name: &str| -> String {
            let start = format!("### {name}\n");
            let begin = stdout
                .find(&start)
                .unwrap_or_else(|| panic!("probe output lacks section {name}:\n{stdout}"))
                + start.len();
            let rest = &stdout[begin..];
            let end = rest.find("### ").unwrap_or(rest.len());
            rest[..end].to_string()
        };
        Probe {
            mounts: parse_mountinfo(&section("mountinfo")),
            status: section("status"),
            uid_map: section("uid_map"),
        }
    }

    pub fn cap_bnd(&self) -> u64 {
        parse_cap_mask(&self.status, "CapBnd")
    }

    pub fn under_sys(&self) -> Vec<&MountEntry> {
        self.mounts
            .iter()
            .filter(|m| m.is_at_or_under("/sys"))
            .collect()
    }

    pub fn at(&self, mount_point: &str) -> Vec<&MountEntry> {
        self.mounts
            .iter()
            .filter(|m| m.mount_point == mount_point)
            .collect()
    }

    /// The mount visible at `mount_point`: the one no other mount at the same
    /// place is stacked on.
    pub fn topmost(&self, mount_point: &str) -> Option<&MountEntry> {
        let here = self.at(mount_point);
        here.iter()
            .find(|m| !here.iter().any(|other| other.parent == m.id))
            .copied()
    }

    pub fn by_id(&self, id: u64) -> Option<&MountEntry> {
        self.mounts.iter().find(|m| m.id == id)
    }

    pub fn table(&self) -> String {
        self.mounts
            .iter()
            .map(|m| format!("{} {} {}", m.mount_point, m.fstype, m.options.join(",")))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Checks what a converted userns + host-network container sees: every mount
/// at or under /sys is read-only, /sys keeps nosuid,nodev,noexec, and the
/// network capabilities are gone from the bounding set while others stay.
/// `expect_host_submounts`: the host's bpffs and securityfs appear (read-only)
/// under the container's /sys.
pub fn assert_converted_view(probe: &Probe, expect_host_submounts: bool) {
    assert_converted_view_mapped(probe, expect_host_submounts, HOST_ID_BASE);
}

/// `assert_converted_view` for a container whose root is host ID `host_id`.
pub fn assert_converted_view_mapped(probe: &Probe, expect_host_submounts: bool, host_id: u64) {
    let table = probe.table();
    let sys = probe.at("/sys");
    assert!(!sys.is_empty(), "no /sys mount in the container:\n{table}");
    for m in &sys {
        for opt in ["ro", "nosuid", "nodev", "noexec"] {
            assert!(
                m.has(opt),
                "/sys lacks `{opt}` in its per-mount options {:?}:\n{table}",
                m.options
            );
        }
    }
    for m in probe.under_sys() {
        assert!(
            m.has("ro"),
            "{} ({}) is not read-only: {:?}\n{table}",
            m.mount_point,
            m.fstype,
            m.options
        );
    }
    if expect_host_submounts {
        for (dir, fstype) in [
            ("/sys/fs/bpf", "bpf"),
            ("/sys/kernel/security", "securityfs"),
        ] {
            let found = probe.at(dir);
            assert!(
                found.iter().any(|m| m.fstype == fstype),
                "the host's {fstype} submount at {dir} is missing in the container:\n{table}"
            );
        }
    }
    let bnd = probe.cap_bnd();
    for bit in NET_CAP_BITS {
        assert!(
            !has_cap_bit(bnd, *bit),
            "CapBnd {bnd:016x} still has bit {bit} (network capability)"
        );
    }
    assert!(
        has_cap_bit(bnd, CAP_CHOWN_BIT),
        "CapBnd {bnd:016x} lost CAP_CHOWN (bit 0): only network capabilities may be dropped"
    );
    assert!(
        has_cap_bit(bnd, CAP_KILL_BIT),
        "CapBnd {bnd:016x} lost CAP_KILL (bit 5)"
    );
    let map: Vec<&str> = probe.uid_map.split_whitespace().collect();
    assert_eq!(
        map,
        vec!["0".to_string(), host_id.to_string(), ID_RANGE.to_string()],
        "uid_map in the container: {}",
        probe.uid_map
    );
}

/// Runs a probe container from `bundle` to completion.
pub fn run_probe(cli: &Cli, bundle: &Bundle, id: &str) -> Outcome {
    cli.run(&[
        OsStr::new("run"),
        OsStr::new("--bundle"),
        bundle.dir().as_os_str(),
        OsStr::new(id),
    ])
}

/// One `#[test]` per scenario and runtime: `mod runc`, `mod runc_1_4`
/// (runc 1.4.3), `mod runc_1_5` (runc 1.5.3), `mod crun`, `mod crun_1_27`
/// (crun 1.27.1) and `mod youki`, each
/// calling `scenario(Runtime::...)` from the including test file.
#[allow(unused_macros)]
macro_rules! for_runtimes {
    (runc_and_crun: $($scenario:ident),* $(,)?) => {
        mod runc {
            $(
                #[test]
                fn $scenario() {
                    super::$scenario($crate::common::Runtime::Runc);
                }
            )*
        }
        mod runc_1_4 {
            $(
                #[test]
                fn $scenario() {
                    super::$scenario($crate::common::Runtime::Runc14);
                }
            )*
        }
        mod runc_1_5 {
            $(
                #[test]
                fn $scenario() {
                    super::$scenario($crate::common::Runtime::Runc15);
                }
            )*
        }
        mod crun {
            $(
                #[test]
                fn $scenario() {
                    super::$scenario($crate::common::Runtime::Crun);
                }
            )*
        }
        mod crun_1_27 {
            $(
                #[test]
                fn $scenario() {
                    super::$scenario($crate::common::Runtime::Crun127);
                }
            )*
        }
    };
    ($($scenario:ident),* $(,)?) => {
        $crate::common::for_runtimes!(runc_and_crun: $($scenario),*);
        mod youki {
            $(
                #[test]
                fn $scenario() {
                    super::$scenario($crate::common::Runtime::Youki);
                }
            )*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use for_runtimes;

/// The wrapper under test, as a path.
pub fn wrapper() -> &'static Path {
    Path::new(WRAPPER)
}

/// Prints what the container saw under /sys and its bounding set, for the
/// test log.
pub fn show(what: &str, probe: &Probe) {
    let sys: Vec<String> = probe
        .under_sys()
        .iter()
        .map(|m| format!("  {} {} {}", m.mount_point, m.fstype, m.options.join(",")))
        .collect();
    eprintln!(
        "{what}: CapBnd {:016x}, under /sys:\n{}",
        probe.cap_bnd(),
        sys.join("\n")
    );
}

/// The mounts at or under /sys that are not read-only.
pub fn writable_under_sys(probe: &Probe) -> Vec<&MountEntry> {
    probe
        .under_sys()
        .into_iter()
        .filter(|m| !m.has("ro"))
        .collect()
}
