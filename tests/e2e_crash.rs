//! Crash safety and concurrency of the bundle rewrite.
//!
//! - SIGKILL at the worst point (between fsync and rename, through the
//!   test-only pause switch) and at random delays, thousands of times:
//!   config.json always parses and is exactly the old or exactly the new
//!   document; at most one temporary file per killed run is left, and the
//!   next conversion removes them.
//! - 100 parallel creates of 100 bundles through the wrapper onto the real
//!   runc; 20 parallel runs on one bundle give the single correct result.
//! - A full disk and a read-only bundle directory: a clear refusal and an
//!   unchanged bundle.

mod common;

use common::{Bundle, ContainerGuard, Runtime, Sandbox};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WRAPPER: &str = env!("CARGO_BIN_EXE_userns-hostnet-runtime");
/// Honoured only by a wrapper built with the `test-hooks` feature
/// (`cargo test --features test-hooks`, as `make test` runs it).
const PAUSE_ENV: &str = "USERNS_HOSTNET_TEST_PAUSE_BEFORE_RENAME";
const NO_HOOKS: &str = "the wrapper was built without the test-hooks feature, so it cannot pause before the rename: run cargo test --features test-hooks";

/// A stub runtime (answers `features` like runc, else exits 0) and a
/// config file whose decision log stays in the temp dir.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::Builder::new()
            .prefix("uhn-crash-")
            .tempdir()
            .unwrap();
        let stub = dir.path().join("stub-runtime");
        fs::write(
            &stub,
            "#!/bin/sh\nif [ \"$1\" = features ]; then echo '{\"mountOptions\":[\"rbind\",\"rro\"]}'; fi\nexit 0\n",
        )
        .unwrap();
        fs::set_permissions(&stub, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(
            dir.path().join("config.toml"),
            format!(
                "[log]\nfile = {:?}\n",
                dir.path().join("decisions.log").display().to_string()
            ),
        )
        .unwrap();
        Env { dir }
    }

    fn command(&self, bundle: &Path) -> Command {
        let mut c = self.wrapper();
        c.args(["create", "--bundle"]).arg(bundle).arg("id");
        c
    }

    /// The wrapper in front of the stub, no arguments yet.
    fn wrapper(&self) -> Command {
        let mut c = Command::new(WRAPPER);
        c.env(
            "USERNS_HOSTNET_RUNTIME",
            self.dir.path().join("stub-runtime"),
        )
        .env("USERNS_HOSTNET_CONFIG", self.dir.path().join("config.toml"))
        .env_remove(PAUSE_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        c
    }

    fn bundle(&self, name: &str) -> PathBuf {
        let b = self.dir.path().join(name);
        // The rootfs the spec names (`rootfs`): a converted container's
        // destinations are resolved in it.
        fs::create_dir_all(b.join("rootfs")).unwrap();
        b
    }
}

/// A spec that needs the conversion, pretty-printed as runc writes it.
fn old_document() -> Vec<u8> {
    let mut spec: Value = serde_json::from_str(include_str!(
        "../crates/engine/fixtures/podman-userns-hostnet.json"
    ))
    .unwrap();
    spec["annotations"]["io.example/pad"] = json!("p".repeat(64 << 10));
    let mut out = serde_json::to_vec_pretty(&spec).unwrap();
    out.push(b'\n');
    out
}

/// The converted document, from one undisturbed run.
fn new_document(env: &Env, old: &[u8]) -> Vec<u8> {
    let b = env.bundle("reference");
    fs::write(b.join("config.json"), old).unwrap();
    assert!(env.command(&b).status().unwrap().success());
    let new = fs::read(b.join("config.json")).unwrap();
    assert_ne!(new, old, "the reference run did not convert");
    new
}

fn temporaries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "config.json" && n != "rootfs")
        .collect()
}

/// Write `bytes` as config.json the atomic way, as a fresh bundle would.
fn reset(dir: &Path, bytes: &[u8]) {
    let tmp = dir.join("reset.json~");
    fs::write(&tmp, bytes).unwrap();
    fs::rename(&tmp, dir.join("config.json")).unwrap();
}

fn state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

fn kill9(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn sigkill_between_fsync_and_rename() {
    if !cfg!(feature = "test-hooks") {
        panic!("{NO_HOOKS}");
    }
    let env = Env::new();
    let old = old_document();
    let new = new_document(&env, &old);
    let dir = env.bundle("paused");
    reset(&dir, &old);
    const RUNS: usize = 300;
    for run in 0..RUNS {
        let mut child = env.command(&dir).env(PAUSE_ENV, "1").spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while state(child.id()) != Some('T') {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("run {run}: the wrapper exited ({status}) instead of pausing: {NO_HOOKS}");
            }
            assert!(Instant::now() < deadline, "run {run} never paused");
            std::thread::sleep(Duration::from_micros(200));
        }
        kill9(&mut child);
        assert_eq!(
            fs::read(dir.join("config.json")).unwrap(),
            old,
            "run {run}: config.json changed although the rename never happened"
        );
        let tmps = temporaries(&dir);
        // Each run removes the files of the runs killed before it: only its
        // own is left.
        assert_eq!(tmps.len(), 1, "run {run}: temporaries {tmps:?}");
        let tmp = fs::read(dir.join(&tmps[0])).unwrap();
        assert_eq!(
            tmp, new,
            "run {run}: the temporary is the whole new document"
        );
    }
    assert!(env.command(&dir).status().unwrap().success());
    assert_eq!(fs::read(dir.join("config.json")).unwrap(), new);
    assert_eq!(temporaries(&dir), Vec::<String>::new(), "stale files left");
    eprintln!("{RUNS} runs killed between fsync and rename: config.json always the old document");
}

#[test]
fn sigkill_at_random_points() {
    let env = Env::new();
    let old = old_document();
    let new = new_document(&env, &old);
    let dir = env.bundle("random");
    reset(&dir, &old);
    const RUNS: u64 = 2000;
    let (mut saw_old, mut saw_new, mut killed, mut left) = (0, 0, 0, 0);
    let mut pids = Vec::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for run in 0..RUNS {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Spread the kills over the whole run (a few milliseconds) and past it.
        let delay = Duration::from_micros(seed % 10_000);
        let mut child = env.command(&dir).spawn().unwrap();
        pids.push(child.id());
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        kill9(&mut child);
        let now = fs::read(dir.join("config.json")).unwrap();
        serde_json::from_slice::<Value>(&now)
            .unwrap_or_else(|e| panic!("run {run}: config.json does not parse: {e}"));
        if now == old {
            saw_old += 1;
        } else if now == new {
            saw_new += 1;
            reset(&dir, &old);
        } else {
            panic!("run {run}: config.json is neither the old nor the new document");
        }
        let tmps = temporaries(&dir);
        assert!(tmps.len() <= 1, "run {run}: temporaries {tmps:?}");
        left += tmps.len();
    }
    eprintln!(
        "{RUNS} runs, {killed} killed while running: {saw_old} left the old document, {saw_new} the new one, {left} a temporary file"
    );
    assert!(saw_old > 0 && saw_new > 0, "the kills missed the window");
    reset(&dir, &old);
    assert!(env.command(&dir).status().unwrap().success());
    assert_eq!(fs::read(dir.join("config.json")).unwrap(), new);
    assert_eq!(temporaries(&dir), Vec::<String>::new(), "stale files left");
    // The records the killed creates began, and the temporary files of
    // those killed while writing one, go by the container's delete.
    let delete = env.wrapper().args(["delete", "id"]).status().unwrap();
    assert!(delete.success());
    let records = Path::new("/run/userns-hostnet/converted");
    let ours: Vec<String> = ["pending", "init"]
        .iter()
        .flat_map(|sub| {
            fs::read_dir(records.join(sub))
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            let pid = |s: &str| s.parse::<u32>().ok();
            let parts: Vec<&str> = name.trim_start_matches('.').split('.').collect();
            let creator = parts.first().and_then(|p| pid(p));
            let writer = name
                .starts_with('.')
                .then(|| parts.last().and_then(|p| pid(p)))
                .flatten();
            [creator, writer].iter().flatten().any(|p| pids.contains(p))
        })
        .collect();
    assert!(
        ours.is_empty(),
        "records or temporary files of the killed creates left in {}: {ours:?}",
        records.display()
    );
}

#[test]
fn twenty_parallel_runs_on_one_bundle() {
    let env = Env::new();
    let old = old_document();
    let new = new_document(&env, &old);
    let dir = env.bundle("shared");
    for round in 0..5 {
        reset(&dir, &old);
        let children: Vec<Child> = (0..20)
            .map(|_| env.command(&dir).spawn().unwrap())
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success(), "round {round}: a run failed");
        }
        assert_eq!(
            fs::read(dir.join("config.json")).unwrap(),
            new,
            "round {round}"
        );
        assert_eq!(temporaries(&dir), Vec::<String>::new(), "round {round}");
    }
}

#[test]
fn hundred_parallel_creates_on_runc() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundles: Vec<Bundle> = (0..100)
        .map(|_| Bundle::userns_hostnet(&["/bin/true"]))
        .collect();
    let ids: Vec<String> = (0..100).map(|_| common::unique_id("par")).collect();
    let _guards: Vec<ContainerGuard> = ids
        .iter()
        .map(|id| ContainerGuard::new(&sandbox, id))
        .collect();
    let outcomes: Vec<common::Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = bundles
            .iter()
            .zip(&ids)
            .map(|(b, id)| {
                let cli = sandbox.wrapper();
                s.spawn(move || {
                    cli.run(&[
                        "create".as_ref(),
                        "--bundle".as_ref(),
                        b.dir().as_os_str(),
                        id.as_ref(),
                    ])
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for o in &outcomes {
        o.assert_success();
    }
    for (b, id) in bundles.iter().zip(&ids) {
        common::assert_converted_spec(&b.spec());
        assert_eq!(
            sandbox.real().status_of(id).as_deref(),
            Some("created"),
            "{id}"
        );
    }
}

/// A tmpfs mounted on a temp dir, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn new(options: &str) -> Tmpfs {
        let dir = tempfile::Builder::new()
            .prefix("uhn-tmpfs-")
            .tempdir()
            .unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "mount tmpfs (the tests run as root)");
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn assert_clean_refusal(env: &Env, dir: &Path, old: &[u8], why: &str) {
    let names_before = temporaries(dir);
    let out = env.command(dir).stderr(Stdio::piped()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("userns-hostnet-runtime: bundle: ") && stderr.contains(why),
        "{stderr}"
    );
    assert_eq!(fs::read(dir.join("config.json")).unwrap(), old);
    assert_eq!(temporaries(dir), names_before, "files added or removed");
}

#[test]
fn full_disk_is_a_clear_refusal() {
    let env = Env::new();
    let old = old_document();
    let fs_ = Tmpfs::new("size=256k");
    let dir = fs_.path();
    fs::create_dir(dir.join("rootfs")).unwrap();
    fs::write(dir.join("config.json"), &old).unwrap();
    // Fill what is left.
    let mut filler = fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut filler, &chunk).is_ok() {}
    drop(filler);
    assert_clean_refusal(&env, dir, &old, "No space left on device");
}

#[test]
fn read_only_bundle_is_a_clear_refusal() {
    let env = Env::new();
    let old = old_document();
    let fs_ = Tmpfs::new("size=1m");
    let dir = fs_.path();
    fs::create_dir(dir.join("rootfs")).unwrap();
    fs::write(dir.join("config.json"), &old).unwrap();
    let st = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(st.success());
    assert_clean_refusal(&env, dir, &old, "Read-only file system");
}
