//! The installer image (Containerfile, scripts/image.sh) and its `deploy`
//! mode, run under podman against a fake host root: a temporary directory
//! with etc/containerd/config.toml (containerd's own defaults) and
//! usr/local/bin holding an older admin tool. The binaries land, the
//! handler is registered as containerd reads it (`containerd config dump`),
//! a second run changes nothing, SIGTERM (a pod stopping) leaves the
//! install in place, `--check` (the readiness probe) says so, an upgrade
//! replaces the wrapper by rename while a container of the handler runs,
//! and `--uninstall` (the cleanup DaemonSet) puts every file back byte for
//! byte.
//!
//! Prerequisites (root, podman, containerd, file, and the staged image
//! context target/image from `make image`) fail the tests when missing.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::run_capture;

const STAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/image");
const CONTAINERFILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/Containerfile");
/// podman with runc (crun refuses this host's hybrid cgroups).
const PODMAN_RUN: &[&str] = &["--runtime", "runc", "run"];
const OLD_ADMIN: &[u8] = b"#!/bin/sh\necho an older userns-hostnet\n";

/// One path under the fake root as a test compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir {
        mode: u32,
        owner: (u32, u32),
    },
    File {
        mode: u32,
        owner: (u32, u32),
        bytes: Vec<u8>,
    },
    Link {
        target: PathBuf,
    },
}

impl Node {
    fn describe(&self) -> String {
        match self {
            Node::Dir { mode, .. } => format!("dir {mode:o}"),
            Node::File { mode, bytes, .. } => format!("file {mode:o}, {} bytes", bytes.len()),
            Node::Link { target } => format!("link -> {}", target.display()),
        }
    }
}

type Snapshot = BTreeMap<PathBuf, Node>;

fn snapshot(root: &Path) -> Snapshot {
    let mut out = Snapshot::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let mode = m.permissions().mode() & 0o7777;
            let owner = (m.uid(), m.gid());
            let node = if m.file_type().is_symlink() {
                Node::Link {
                    target: fs::read_link(&p).unwrap(),
                }
            } else if m.is_dir() {
                todo.push(p.clone());
                Node::Dir { mode, owner }
            } else {
                Node::File {
                    mode,
                    owner,
                    bytes: fs::read(&p).unwrap(),
                }
            };
            out.insert(rel, node);
        }
    }
    out
}

/// (inode, mtime) of every file and link: what a rewrite would change even
/// with the same bytes.
fn identities(root: &Path, snap: &Snapshot) -> BTreeMap<PathBuf, (u64, i64, i64)> {
    snap.iter()
        .filter(|(_, n)| !matches!(n, Node::Dir { .. }))
        .map(|(p, _)| {
            let m = fs::symlink_metadata(root.join(p)).unwrap();
            (p.clone(), (m.ino(), m.mtime(), m.mtime_nsec()))
        })
        .collect()
}

/// What changed between two snapshots, one line a path.
fn changes(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (p, a) in after {
        match before.get(p) {
            None => out.push(format!("+ /{}: {}", p.display(), a.describe())),
            Some(b) if b != a => out.push(format!(
                "~ /{}: {} -> {}",
                p.display(),
                b.describe(),
                a.describe()
            )),
            Some(_) => {}
        }
    }
    for (p, b) in before {
        if !after.contains_key(p) {
            out.push(format!("- /{}: {}", p.display(), b.describe()));
        }
    }
    out
}

fn require(tool: &str, hint: &str) {
    assert!(
        common::find_in_path(tool).is_some(),
        "`{tool}` is missing: {hint}"
    );
}

/// The image, built here from the staged context with podman build.
fn build_image(tag: &str) -> String {
    require("podman", "install the Debian package podman");
    require("file", "install the Debian package file");
    for bin in ["userns-hostnet", "userns-hostnet-runtime"] {
        let p = Path::new(STAGE).join(bin);
        assert!(
            p.is_file(),
            "{} is missing: run `make image` first",
            p.display()
        );
        let desc = run_capture(Command::new("file").arg("-b").arg(&p));
        desc.assert_success();
        assert!(
            desc.stdout.contains("statically linked") || desc.stdout.contains("static-pie linked"),
            "{} is not static: {}",
            p.display(),
            desc.stdout
        );
    }
    let image = format!("localhost/userns-hostnet-installer:{tag}");
    run_capture(
        Command::new("podman")
            .args(["build", "--quiet", "--file", CONTAINERFILE, "--tag", &image])
            .arg(STAGE),
    )
    .assert_success();
    image
}

/// A fake host root: containerd's default config and an older admin tool
/// in usr/local/bin.
fn fake_host_root() -> tempfile::TempDir {
    require("containerd", "install the Debian package containerd");
    let root = tempfile::Builder::new()
        .prefix("uhn-deploy-root-")
        .tempdir_in("/tmp")
        .unwrap();
    let r = root.path();
    fs::create_dir_all(r.join("etc/containerd")).unwrap();
    fs::create_dir_all(r.join("usr/local/bin")).unwrap();
    let default = run_capture(Command::new("containerd").args(["config", "default"]));
    default.assert_success();
    fs::write(r.join("etc/containerd/config.toml"), &default.stdout).unwrap();
    let old = r.join("usr/local/bin/userns-hostnet");
    fs::write(&old, OLD_ADMIN).unwrap();
    fs::set_permissions(&old, fs::Permissions::from_mode(0o755)).unwrap();
    root
}

fn podman_run(image: &str, root: &Path, extra: &[&str], args: &[&str]) -> common::Outcome {
    let mut cmd = Command::new("podman");
    cmd.args(PODMAN_RUN)
        .args(["--rm", "--privileged", "--network", "none"])
        .args(common::podman::ULIMITS)
        .arg("--volume")
        .arg(format!("{}:/host", root.display()))
        .args(extra)
        .arg(image)
        .args(args);
    run_capture(&mut cmd)
}

/// The handler as containerd itself reads the config.
fn dumped_handler(config: &Path, handler: &str) -> Option<toml::Value> {
    let out = run_capture(
        Command::new("containerd")
            .arg("--config")
            .arg(config)
            .args(["config", "dump"]),
    );
    out.assert_success();
    let dump: toml::Value = toml::from_str(&out.stdout).expect("config dump is TOML");
    dump.get("plugins")?
        .get("io.containerd.grpc.v1.cri")?
        .get("containerd")?
        .get("runtimes")?
        .get(handler)
        .cloned()
}

#[test]
fn the_image_installs_a_stop_leaves_it_and_uninstall_restores_it() {
    let image = build_image("e2e-deploy");
    let size = run_capture(Command::new("podman").args([
        "image",
        "inspect",
        "--format",
        "{{.Size}}",
        &image,
    ]));
    size.assert_success();
    println!("installer image {image}: {} bytes", size.stdout.trim());

    let root = fake_host_root();
    let r = root.path();
    let config = r.join("etc/containerd/config.toml");
    let before = snapshot(r);
    assert!(dumped_handler(&config, "userns-hostnet").is_none());

    // First run: install and exit.
    let first = podman_run(&image, r, &[], &["--once"]);
    first.assert_success();
    assert!(
        first
            .stdout
            .contains("node not labelled: NODE_NAME is not set"),
        "{}",
        first.describe()
    );
    let installed = snapshot(r);
    println!(
        "install changed:\n{}",
        changes(&before, &installed).join("\n")
    );
    for bin in ["userns-hostnet", "userns-hostnet-runtime"] {
        assert_eq!(
            installed.get(&PathBuf::from("usr/local/bin").join(bin)),
            Some(&Node::File {
                mode: 0o755,
                owner: (0, 0),
                bytes: fs::read(Path::new(STAGE).join(bin)).unwrap()
            }),
            "{bin} landed"
        );
    }
    for link in [
        "userns-hostnet-runtime-crun",
        "userns-hostnet-runtime-youki",
    ] {
        assert_eq!(
            installed.get(&PathBuf::from("usr/local/bin").join(link)),
            Some(&Node::Link {
                target: "userns-hostnet-runtime".into()
            })
        );
    }
    assert!(matches!(
        installed.get(Path::new("etc/userns-hostnet/config.toml")),
        Some(Node::File { mode: 0o644, .. })
    ));
    let h = dumped_handler(&config, "userns-hostnet").expect("handler registered");
    assert_eq!(h["runtime_type"].as_str(), Some("io.containerd.runc.v2"));
    assert_eq!(
        h["options"]["BinaryName"].as_str(),
        Some("/usr/local/bin/userns-hostnet-runtime"),
        "{h:#?}"
    );

    // Second run: nothing changes, not even an inode or a time stamp.
    let ids = identities(r, &installed);
    let second = podman_run(&image, r, &[], &["--once"]);
    second.assert_success();
    assert!(
        second.stdout.contains("already registered"),
        "{}",
        second.describe()
    );
    let again = snapshot(r);
    assert_eq!(changes(&installed, &again), Vec::<String>::new());
    assert_eq!(identities(r, &again), ids, "a second run rewrote a file");

    // The DaemonSet's way: wait; the readiness probe says registered; a
    // SIGTERM (rollout, eviction, drain, deletion) leaves everything.
    let name = format!("uhn-deploy-{}", std::process::id());
    let mut cmd = Command::new("podman");
    cmd.args(PODMAN_RUN)
        .args([
            "--detach",
            "--privileged",
            "--network",
            "none",
            "--name",
            &name,
        ])
        .args(common::podman::ULIMITS)
        .arg("--volume")
        .arg(format!("{}:/host", r.display()))
        .arg(&image);
    run_capture(&mut cmd).assert_success();
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
    let probe = run_capture(Command::new("podman").args([
        "exec",
        &name,
        "/usr/local/bin/userns-hostnet",
        "deploy",
        "--check",
    ]));
    run_capture(Command::new("podman").args(["stop", "--time", "60", &name])).assert_success();
    let code = run_capture(Command::new("podman").args([
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        &name,
    ]));
    let out = logs();
    let _ = run_capture(Command::new("podman").args(["rm", "--force", &name]));
    // Without --restart containerd has not read the handler yet: not ready.
    assert_eq!(probe.status.code(), Some(1), "{}", probe.describe());
    assert_eq!(
        probe.stdout,
        "not registered: containerd must be restarted for handler userns-hostnet to take effect (no running daemon found reading that file)\n",
        "{}",
        probe.describe()
    );
    assert_eq!(code.stdout.trim(), "0", "{}", out.describe());
    assert!(
        out.stdout.contains("SIGTERM: stopping"),
        "{}",
        out.describe()
    );
    assert!(!out.stdout.contains("removed"), "{}", out.describe());
    let stopped = snapshot(r);
    assert_eq!(
        changes(&installed, &stopped),
        Vec::<String>::new(),
        "a stopping pod leaves the install"
    );
    assert_eq!(
        identities(r, &stopped),
        ids,
        "a stopping pod rewrote a file"
    );
    let not_removed = podman_run(&image, r, &[], &["--check", "--uninstall"]);
    assert_eq!(
        not_removed.status.code(),
        Some(1),
        "{}",
        not_removed.describe()
    );

    // The cleanup DaemonSet's way: --uninstall, then nothing is left.
    let out = podman_run(&image, r, &[], &["--uninstall"]);
    out.assert_success();
    assert!(out.stdout.contains("undone"), "{}", out.describe());
    let after = snapshot(r);
    println!(
        "cleanup left, against the first snapshot: {:?}",
        changes(&before, &after)
    );
    assert_eq!(changes(&before, &after), Vec::<String>::new());
    assert_eq!(
        after, before,
        "the uninstall restores every file byte for byte"
    );
    podman_run(&image, r, &[], &["--check", "--uninstall"]).assert_success();
    let probe = podman_run(&image, r, &[], &["--check"]);
    assert_eq!(probe.status.code(), Some(1), "{}", probe.describe());
    assert!(
        probe.stdout.contains("not registered: no deploy state"),
        "{}",
        probe.describe()
    );
}

#[test]
fn an_operator_edit_after_install_survives_the_cleanup() {
    let image = build_image("e2e-deploy");
    let root = fake_host_root();
    let r = root.path();
    let config = r.join("etc/containerd/config.toml");
    let original = fs::read_to_string(&config).unwrap();
    podman_run(&image, r, &[], &["--once"]).assert_success();
    // The operator changes another setting after the install.
    let edited = fs::read_to_string(&config).unwrap().replace(
        "max_concurrent_downloads = 3",
        "max_concurrent_downloads = 7",
    );
    assert!(edited.contains("max_concurrent_downloads = 7"));
    fs::write(&config, &edited).unwrap();
    let out = podman_run(&image, r, &[], &["--uninstall"]);
    out.assert_success();
    assert!(
        out.stdout.contains("changed since deploy"),
        "{}",
        out.describe()
    );
    let now = fs::read_to_string(&config).unwrap();
    assert!(dumped_handler(&config, "userns-hostnet").is_none(), "{now}");
    assert_eq!(
        now,
        original.replace(
            "max_concurrent_downloads = 3",
            "max_concurrent_downloads = 7"
        ),
        "only the handler went; the operator's edit stays"
    );
    assert!(!r.join("var").exists(), "the state went too");
}

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
    let mut cleanup = deploy_command(
        &cri,
        &bin,
        &handlers,
        &systemctl,
        "--uninstall",
        Path::new(common::TOOL).parent().unwrap(),
    )
    .arg("--wait")
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

/// A CRI-O host (crio.conf, no containerd config): deploy finds it,
/// registers the handler in its own drop-in, and the undo removes the
/// drop-in and the directory it created.
#[test]
fn a_crio_host_gets_the_drop_in_and_loses_it_on_cleanup() {
    let image = build_image("e2e-deploy");
    let root = tempfile::Builder::new()
        .prefix("uhn-deploy-crio-")
        .tempdir_in("/tmp")
        .unwrap();
    let r = root.path();
    fs::create_dir_all(r.join("etc/crio")).unwrap();
    fs::write(
        r.join("etc/crio/crio.conf"),
        "[crio.runtime]\ndefault_runtime = \"runc\"\n",
    )
    .unwrap();
    let before = snapshot(r);
    let out = podman_run(&image, r, &[], &["--once"]);
    out.assert_success();
    let drop_in = r.join("etc/crio/crio.conf.d/99-userns-hostnet.conf");
    let text = fs::read_to_string(&drop_in).unwrap_or_else(|e| panic!("{e}: {}", out.describe()));
    let doc: toml::Table = text.parse().unwrap();
    assert_eq!(
        doc["crio"]["runtime"]["runtimes"]["userns-hostnet"]["runtime_path"].as_str(),
        Some("/usr/local/bin/userns-hostnet-runtime"),
        "{text}"
    );
    assert!(
        out.stdout.contains("crio must be restarted"),
        "{}",
        out.describe()
    );
    podman_run(&image, r, &[], &["--uninstall"]).assert_success();
    assert_eq!(changes(&before, &snapshot(r)), Vec::<String>::new());
}

/// The node's containerd config is an absolute link into another
/// directory (`/etc/containerd/config.toml -> /etc/k0s/containerd.toml`):
/// the installer, whose own root is the image's, follows it inside the
/// host root, writes the target and leaves the link; the cleanup gives
/// the target back byte for byte, the link still the same.
#[test]
fn a_nodes_config_link_is_followed_inside_the_host_root() {
    let image = build_image("e2e-deploy");
    let root = fake_host_root();
    let r = root.path();
    let link = r.join("etc/containerd/config.toml");
    let target = r.join("etc/k0s/containerd.toml");
    let node_target = Path::new("/etc/k0s/containerd.toml");
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    fs::rename(&link, &target).unwrap();
    std::os::unix::fs::symlink(node_target, &link).unwrap();
    let original = fs::read(&target).unwrap();
    let first = podman_run(&image, r, &[], &["--once"]);
    first.assert_success();
    assert_eq!(fs::read_link(&link).unwrap(), node_target);
    assert!(
        dumped_handler(&target, "userns-hostnet").is_some(),
        "{}",
        first.describe()
    );
    assert!(
        first
            .stdout
            .contains("registered runtime handler userns-hostnet in /etc/k0s/containerd.toml"),
        "{}",
        first.describe()
    );
    let out = podman_run(&image, r, &[], &["--uninstall"]);
    out.assert_success();
    assert_eq!(fs::read_link(&link).unwrap(), node_target);
    assert_eq!(fs::read(&target).unwrap(), original, "{}", out.describe());
    assert!(!r.join("var").exists(), "the state went too");
}

/// `deploy --check` judges what deploy owns in the daemon's config, its
/// handler, not the whole file: another tool appending its own runtime
/// table (as `nvidia-ctk runtime configure` does) leaves it registered;
/// the handler taken out is not, and deploy run again puts it back.
#[test]
fn another_tools_table_in_the_config_leaves_the_handler_registered() {
    let root = fake_host_root();
    let r = root.path();
    // The restart command runs in the host's root: a shell there.
    fs::create_dir_all(r.join("bin")).unwrap();
    fs::copy("/bin/busybox", r.join("bin/sh")).unwrap();
    let from = Path::new(common::TOOL).parent().unwrap().to_owned();
    let deploy = |mode: &[&str]| {
        let mut cmd = Command::new(common::TOOL);
        cmd.args(["deploy", "--host-root"])
            .arg(r)
            .args([
                "--daemon",
                "containerd",
                "--restart",
                "--restart-command",
                "true",
            ])
            .args(mode)
            .arg("--from")
            .arg(&from)
            .env_remove("NODE_NAME")
            .env_remove("KUBERNETES_SERVICE_HOST");
        run_capture(&mut cmd)
    };
    deploy(&["--once"]).assert_success();
    let probe = deploy(&["--check"]);
    probe.assert_success();
    assert!(
        probe.stdout.starts_with("registered: "),
        "{}",
        probe.describe()
    );
    let config = r.join("etc/containerd/config.toml");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push_str("\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n  runtime_type = \"io.containerd.runc.v2\"\n  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n    BinaryName = \"/usr/bin/nvidia-container-runtime\"\n");
    fs::write(&config, &text).unwrap();
    let probe = deploy(&["--check"]);
    assert!(
        probe.status.success() && probe.stdout.starts_with("registered: "),
        "{}",
        probe.describe()
    );
    // Another tool rewrites the file without the handler.
    let without = run_capture(Command::new("containerd").args(["config", "default"])).stdout;
    fs::write(&config, &without).unwrap();
    assert!(dumped_handler(&config, "userns-hostnet").is_none());
    let probe = deploy(&["--check"]);
    assert!(
        !probe.status.success() && probe.stdout.starts_with("not registered: "),
        "{}",
        probe.describe()
    );
    deploy(&["--once"]).assert_success();
    assert!(dumped_handler(&config, "userns-hostnet").is_some());
    let probe = deploy(&["--check"]);
    assert!(probe.status.success(), "{}", probe.describe());
}

/// A k3s-shaped node: containerd's config is the file k3s writes anew at
/// every start. Auto-detection finds no daemon, and with the file named
/// install refuses it (the template is where the handler goes): in both
/// cases deploy writes nothing, and `--check` then says not registered.
#[test]
fn a_refused_deploy_writes_nothing_and_is_not_registered() {
    let root = tempfile::Builder::new()
        .prefix("uhn-deploy-k3s-")
        .tempdir_in("/tmp")
        .unwrap();
    let r = root.path();
    let etc = r.join("var/lib/rancher/k3s/agent/etc/containerd");
    fs::create_dir_all(&etc).unwrap();
    let default = run_capture(Command::new("containerd").args(["config", "default"]));
    default.assert_success();
    fs::write(etc.join("config.toml"), &default.stdout).unwrap();
    fs::create_dir_all(r.join("usr/local/bin")).unwrap();
    let from = Path::new(common::TOOL).parent().unwrap().to_owned();
    let deploy = |extra: &[&str]| {
        let mut cmd = Command::new(common::TOOL);
        cmd.args(["deploy", "--host-root"])
            .arg(r)
            .args(extra)
            .arg("--from")
            .arg(&from)
            .env_remove("NODE_NAME")
            .env_remove("KUBERNETES_SERVICE_HOST");
        run_capture(&mut cmd)
    };
    let before = snapshot(r);
    let detect = deploy(&["--once"]);
    assert_eq!(detect.status.code(), Some(2), "{}", detect.describe());
    assert!(
        detect
            .stderr
            .contains("cannot tell whether this node runs containerd or CRI-O"),
        "{}",
        detect.describe()
    );
    assert_eq!(changes(&before, &snapshot(r)), Vec::<String>::new());
    let named = deploy(&[
        "--daemon",
        "containerd",
        "--daemon-config",
        "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
        "--once",
    ]);
    assert_eq!(named.status.code(), Some(2), "{}", named.describe());
    assert!(
        named.stderr.contains("k3s writes this file anew"),
        "{}",
        named.describe()
    );
    assert_eq!(
        changes(&before, &snapshot(r)),
        Vec::<String>::new(),
        "{}",
        named.describe()
    );
    let probe = deploy(&["--check"]);
    assert_eq!(probe.status.code(), Some(1), "{}", probe.describe());
    assert!(
        probe.stdout.starts_with("not registered: "),
        "{}",
        probe.describe()
    );
    // A config install cannot read: named as the node names it, not
    // where its root is mounted here; nothing written either.
    fs::create_dir_all(r.join("etc/containerd")).unwrap();
    fs::write(r.join("etc/containerd/config.toml"), "version = 2\n[x\n").unwrap();
    let before = snapshot(r);
    let broken = deploy(&["--daemon", "containerd", "--once"]);
    assert_eq!(broken.status.code(), Some(2), "{}", broken.describe());
    assert!(
        broken
            .stderr
            .starts_with("userns-hostnet: /etc/containerd/config.toml: ")
            && !broken.stderr.contains(&r.display().to_string()),
        "{}",
        broken.describe()
    );
    assert_eq!(changes(&before, &snapshot(r)), Vec::<String>::new());
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
