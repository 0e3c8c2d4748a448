//! Can this host make the host's /sys read-only all the way down? `rro`
//! (`mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)`) needs Linux 5.12 and
//! a runtime that knows the option.
//!
//! The kernel is asked with one system call. The runtime is asked with
//! `<runtime> features` (runc >= 1.1 lists `rro` in `mountOptions`), else
//! `<runtime> --version` (crun 1.8.1 has no `features` yet has known `rro`
//! since 1.4). That costs a process, so the answer is cached per runtime
//! binary: a container start costs no extra process after the first.
//!
//! This runs inside the wrapper before it becomes the real runtime, so the
//! probe child gets none of the caller's descriptors (conmon's sync pipes,
//! `--preserve-fds`), reads nothing, prints nothing anyone sees, and is
//! killed if it does not answer in time.

use crate::engine::RroSupport;
use crate::sys::atomic;
use crate::sys::deadline::{run, RunError};
use nix::libc;
use serde::{Deserialize, Serialize};
use std::fs::{DirBuilder, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where runtime answers are cached.
pub const CACHE_DIR: &str = "/run/userns-hostnet";
/// How long the runtime has to answer, both questions together.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The reason given when the kernel cannot do it.
pub const KERNEL_REASON: &str = "kernel has no mount_setattr (needs 5.12)";

/// A cache file is a few hundred bytes.
const MAX_CACHE_FILE: u64 = 64 << 10;

/// Does the kernel have `mount_setattr(2)`?
pub use crate::sys::mount::kernel_has_mount_setattr as kernel_supports_mount_setattr;

/// Does `runtime` know the `rro` mount option? `Ok` says how that is
/// known; `Err` says why not, in words an operator can act on.
pub fn runtime_knows_rro(runtime: &Path) -> Result<String, String> {
    probe_runtime(runtime, PROBE_TIMEOUT).answer
}

/// Kernel and runtime together, the runtime's answer from the cache in
/// `cache_dir` when the binary has not changed since it was asked.
pub fn rro_support(runtime: &Path, cache_dir: &Path) -> RroSupport {
    if !kernel_supports_mount_setattr() {
        return RroSupport::Unsupported(KERNEL_REASON.to_owned());
    }
    match runtime_knows_rro_cached(runtime, cache_dir, PROBE_TIMEOUT) {
        Ok(_) => RroSupport::Supported,
        Err(reason) => RroSupport::Unsupported(reason),
    }
}

/// The runtime's answer, from the cache or asked and then cached.
fn runtime_knows_rro_cached(
    runtime: &Path,
    cache_dir: &Path,
    timeout: Duration,
) -> Result<String, String> {
    let id = Identity::of(runtime);
    if let Some(id) = &id {
        if let Some(hit) = cache_read(cache_dir, id) {
            return hit;
        }
    }
    let probe = probe_runtime(runtime, timeout);
    if let (Some(id), true) = (&id, probe.definitive) {
        // A cache that cannot be written costs a process next time, nothing
        // more.
        let _ = cache_write(cache_dir, id, &probe.answer);
    }
    probe.answer
}

/// A probe's answer, and whether it would be the same next time (a
/// timeout or a failure to start may not be).
struct Probe {
    answer: Result<String, String>,
    definitive: bool,
}

impl Probe {
    fn settled(answer: Result<String, String>) -> Probe {
        Probe {
            answer,
            definitive: true,
        }
    }

    fn transient(reason: String) -> Probe {
        Probe {
            answer: Err(reason),
            definitive: false,
        }
    }
}

fn probe_runtime(runtime: &Path, timeout: Duration) -> Probe {
    let deadline = Instant::now() + timeout;
    let shown = runtime.display();
    let secs = timeout.as_secs_f64();
    match run(runtime, "features", deadline) {
        Ok(out) if out.status.success() => match features_list_rro(&out.stdout) {
            Some(true) => return Probe::settled(Ok("\"features\" lists rro".to_owned())),
            Some(false) => {
                return Probe::settled(Err(format!(
                    "{shown}: \"features\" lists no rro mount option"
                )))
            }
            None => {}
        },
        // No `features` subcommand, or no answer from it: ask the version.
        Ok(_) | Err(RunError::TooLarge) => {}
        Err(RunError::Spawn(e)) => return Probe::transient(format!("{shown}: cannot run: {e}")),
        Err(RunError::Timeout) => {
            return Probe::transient(format!(
                "{shown}: \"features\" did not answer within {secs}s"
            ))
        }
        Err(RunError::Read(e)) => {
            return Probe::transient(format!("{shown}: \"features\": cannot read: {e}"))
        }
    }
    match run(runtime, "--version", deadline) {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let first = text.lines().next().unwrap_or("").trim();
            Probe::settled(version_knows_rro(first).map_err(|why| format!("{shown}: {why}")))
        }
        Ok(_) | Err(RunError::TooLarge) => Probe::transient(format!(
            "{shown}: neither \"features\" nor \"--version\" answered"
        )),
        Err(RunError::Spawn(e)) => Probe::transient(format!("{shown}: cannot run: {e}")),
        Err(RunError::Timeout) => Probe::transient(format!(
            "{shown}: \"features\" and \"--version\" did not answer within {secs}s"
        )),
        Err(RunError::Read(e)) => {
            Probe::transient(format!("{shown}: \"--version\": cannot read: {e}"))
        }
    }
}

/// `Some` when the output is a features document that lists mount options
/// (OCI runtime features: a missing `mountOptions` means unknown).
fn features_list_rro(stdout: &[u8]) -> Option<bool> {
    let doc: serde_json::Value = serde_json::from_slice(stdout).ok()?;
    let options = doc.get("mountOptions")?.as_array()?;
    Some(options.iter().any(|o| o.as_str() == Some("rro")))
}

/// The first line of `--version`: `runc version 1.1.5+ds1`,
/// `crun version 1.8.1`, `youki version 0.7.0`.
fn version_knows_rro(first_line: &str) -> Result<String, String> {
    let mut words = first_line.split_whitespace();
    let (name, word, version) = (words.next(), words.next(), words.next());
    let parsed = match (name, word, version) {
        (Some(name), Some("version"), Some(v)) => major_minor(v).map(|mm| (name, mm)),
        _ => None,
    };
    let Some((name, found)) = parsed else {
        return Err(format!(
            "no \"features\" answer and its version is unknown ({})",
            quoted(first_line)
        ));
    };
    let since = match name {
        "runc" => (1, 1),
        "crun" => (1, 4),
        "youki" => (0, 3),
        _ => {
            return Err(format!(
                "no \"features\" answer and {} is not a runtime known to support rro",
                quoted(first_line)
            ))
        }
    };
    let shown = format!("{name} {}.{}", found.0, found.1);
    if found >= since {
        Ok(format!(
            "{shown} (rro since {name} {}.{})",
            since.0, since.1
        ))
    } else {
        Err(format!(
            "{shown} predates rro (needs {name} {}.{})",
            since.0, since.1
        ))
    }
}

/// `1.1.5+ds1` -> (1, 1).
fn major_minor(v: &str) -> Option<(u64, u64)> {
    let v = v.strip_prefix('v').unwrap_or(v);
    let mut parts = v.split('.');
    let num = |p: Option<&str>| -> Option<u64> {
        let p = p?;
        let digits = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
        p[..digits].parse().ok()
    };
    Some((num(parts.next())?, num(parts.next())?))
}

/// Short and printable, for a one-line reason.
fn quoted(s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(60)
        .collect();
    format!("\"{clean}\"")
}

// The cache.

/// What identifies a runtime binary: a changed binary is asked again.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    path: PathBuf,
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
}

impl Identity {
    fn of(runtime: &Path) -> Option<Identity> {
        let path = runtime.canonicalize().ok()?;
        let m = std::fs::metadata(&path).ok()?;
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Some(Identity {
            size: m.size(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
            ino: m.ino(),
            path,
        })
    }

    fn file_name(&self) -> String {
        format!(
            "rro-{:016x}.json",
            fnv1a(self.path.as_os_str().as_encoded_bytes())
        )
    }
}

/// A stable hash for file names (std's hasher may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheEntry {
    path: PathBuf,
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
    rro: bool,
    reason: String,
    /// The wrapper that asked: a new one asks again.
    wrapper: String,
}

const WRAPPER: &str = concat!(env!("CARGO_PKG_NAME"), " ", env!("CARGO_PKG_VERSION"));

impl CacheEntry {
    fn matches(&self, id: &Identity) -> bool {
        self.path == id.path
            && self.size == id.size
            && self.mtime_ns == id.mtime_ns
            && self.ctime_ns == id.ctime_ns
            && self.ino == id.ino
            && self.wrapper == WRAPPER
    }
}

/// Only a directory and files that nobody else can write are trusted: a
/// planted answer must not make the wrapper promise what it cannot do.
fn trusted(m: &std::fs::Metadata) -> bool {
    m.uid() == nix::unistd::geteuid().as_raw() && m.permissions().mode() & 0o022 == 0
}

fn trusted_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && trusted(&m))
}

fn cache_read(dir: &Path, id: &Identity) -> Option<Result<String, String>> {
    if !trusted_dir(dir) {
        return None;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join(id.file_name()))
        .ok()?;
    let m = file.metadata().ok()?;
    if !m.is_file() || !trusted(&m) || m.len() > MAX_CACHE_FILE {
        return None;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let entry: CacheEntry = serde_json::from_slice(&bytes).ok()?;
    if !entry.matches(id) {
        return None;
    }
    Some(if entry.rro {
        Ok(entry.reason)
    } else {
        Err(entry.reason)
    })
}

fn cache_write(dir: &Path, id: &Identity, answer: &Result<String, String>) -> std::io::Result<()> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if !trusted_dir(dir) {
        return Err(std::io::Error::new(
            ErrorKind::PermissionDenied,
            "cache directory is not ours alone",
        ));
    }
    let (rro, reason) = match answer {
        Ok(how) => (true, how.clone()),
        Err(why) => (false, why.clone()),
    };
    let entry = CacheEntry {
        path: id.path.clone(),
        size: id.size,
        mtime_ns: id.mtime_ns,
        ctime_ns: id.ctime_ns,
        ino: id.ino,
        rro,
        reason,
        wrapper: WRAPPER.to_owned(),
    };
    let json = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
    let attrs = atomic::Attrs {
        mode: 0o600,
        owner: None,
    };
    Ok(atomic::replace(&dir.join(id.file_name()), &json, attrs)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::fs::File;
    use std::os::fd::AsRawFd;

    const RRO_FEATURES: &str =
        r#"{"ociVersionMin":"1.0.0","mountOptions":["bind","rbind","ro","rro","nosuid"]}"#;
    const NO_RRO_FEATURES: &str =
        r#"{"ociVersionMin":"1.0.0","mountOptions":["bind","rbind","ro"]}"#;

    /// A stub runtime: `features` and `--version` run the given shell
    /// snippets; every run appends a line to `<dir>/calls`.
    fn stub(dir: &Path, name: &str, features: &str, version: &str) -> PathBuf {
        let calls = dir.join("calls");
        let path = dir.join(name);
        let script = format!(
            "#!/bin/sh\necho \"$1\" >> '{}'\ncase \"$1\" in\n  features) {features} ;;\n  --version) {version} ;;\n  *) exit 2 ;;\nesac\n",
            calls.display()
        );
        // Written under another name and renamed, so no descriptor open for
        // writing is ever attached to the name that is executed.
        let tmp = dir.join(format!(".{name}.tmp"));
        fs::write(&tmp, script).unwrap();
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755)).unwrap();
        fs::rename(&tmp, &path).unwrap();
        path
    }

    fn calls(dir: &Path) -> Vec<String> {
        fs::read_to_string(dir.join("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn echo(s: &str) -> String {
        format!("echo '{s}'")
    }

    const FAIL_FEATURES: &str = "echo 'unknown command features' >&2; exit 1";

    #[test]
    fn features_listing_rro_is_supported() {
        let d = tempfile::tempdir().unwrap();
        let rt = stub(d.path(), "rt", &echo(RRO_FEATURES), "exit 1");
        assert_eq!(
            runtime_knows_rro(&rt),
            Ok("\"features\" lists rro".to_owned())
        );
        assert_eq!(calls(d.path()), ["features"]);
    }

    #[test]
    fn features_without_rro_is_unsupported_without_asking_the_version() {
        let d = tempfile::tempdir().unwrap();
        let rt = stub(
            d.path(),
            "rt",
            &echo(NO_RRO_FEATURES),
            &echo("runc version 1.1.5"),
        );
        assert_eq!(
            runtime_knows_rro(&rt),
            Err(format!(
                "{}: \"features\" lists no rro mount option",
                rt.display()
            ))
        );
        assert_eq!(calls(d.path()), ["features"]);
    }

    #[test]
    fn features_without_mount_options_falls_back_to_the_version() {
        let d = tempfile::tempdir().unwrap();
        let rt = stub(
            d.path(),
            "rt",
            &echo(r#"{"ociVersionMin":"1.0.0"}"#),
            &echo("runc version 1.1.5+ds1"),
        );
        assert_eq!(
            runtime_knows_rro(&rt),
            Ok("runc 1.1 (rro since runc 1.1)".to_owned())
        );
        assert_eq!(calls(d.path()), ["features", "--version"]);
    }

    #[test]
    fn no_features_falls_back_to_the_version() {
        let d = tempfile::tempdir().unwrap();
        let new = stub(
            d.path(),
            "new",
            FAIL_FEATURES,
            "echo 'crun version 1.8.1'; echo 'commit: f8a096be'",
        );
        assert_eq!(
            runtime_knows_rro(&new),
            Ok("crun 1.8 (rro since crun 1.4)".to_owned())
        );
        let old = stub(d.path(), "old", FAIL_FEATURES, &echo("crun version 1.3"));
        assert_eq!(
            runtime_knows_rro(&old),
            Err(format!(
                "{}: crun 1.3 predates rro (needs crun 1.4)",
                old.display()
            ))
        );
        // Text instead of JSON, with success, is no answer either.
        let text = stub(
            d.path(),
            "text",
            "echo 'usage: rt'",
            &echo("youki version 0.7.0"),
        );
        assert_eq!(
            runtime_knows_rro(&text),
            Ok("youki 0.7 (rro since youki 0.3)".to_owned())
        );
    }

    #[test]
    fn unknown_runtimes_are_unsupported_with_a_reason() {
        let d = tempfile::tempdir().unwrap();
        let foo = stub(d.path(), "foo", FAIL_FEATURES, &echo("foo 2.0"));
        assert_eq!(
            runtime_knows_rro(&foo),
            Err(format!(
                "{}: no \"features\" answer and its version is unknown (\"foo 2.0\")",
                foo.display()
            ))
        );
        let bar = stub(d.path(), "bar", FAIL_FEATURES, &echo("bar version 9.9"));
        assert_eq!(
            runtime_knows_rro(&bar),
            Err(format!(
                "{}: no \"features\" answer and \"bar version 9.9\" is not a runtime known to support rro",
                bar.display()
            ))
        );
        let mute = stub(d.path(), "mute", FAIL_FEATURES, "exit 1");
        assert_eq!(
            runtime_knows_rro(&mute),
            Err(format!(
                "{}: neither \"features\" nor \"--version\" answered",
                mute.display()
            ))
        );
        let missing = d.path().join("missing");
        let e = runtime_knows_rro(&missing).unwrap_err();
        assert!(
            e.starts_with(&format!("{}: cannot run: ", missing.display())),
            "{e}"
        );
    }

    #[test]
    fn version_lines() {
        assert!(version_knows_rro("runc version 1.1.0").is_ok());
        assert!(version_knows_rro("runc version 1.2.0-rc.1").is_ok());
        assert!(version_knows_rro("runc version 2.0.0").is_ok());
        assert!(version_knows_rro("runc version 1.0.3").is_err());
        assert!(version_knows_rro("crun version 1.4").is_ok());
        assert!(version_knows_rro("crun version 1.3.9").is_err());
        assert!(version_knows_rro("youki version 0.3.0").is_ok());
        assert!(version_knows_rro("youki version 0.2.9").is_err());
        assert!(version_knows_rro("youki version v0.4.1").is_ok());
        assert!(version_knows_rro("runc version").is_err());
        assert!(version_knows_rro("runc version x.y").is_err());
        assert!(version_knows_rro("").is_err());
        assert!(version_knows_rro("runc version 99999999999999999999999.1").is_err());
        let long = "x".repeat(500) + "\u{1b}";
        let e = version_knows_rro(&long).unwrap_err();
        assert!(e.len() < 150 && !e.contains('\u{1b}'), "{e}");
    }

    #[test]
    fn a_hung_runtime_is_killed_in_time() {
        let d = tempfile::tempdir().unwrap();
        let rt = stub(d.path(), "hung", "sleep 30", &echo("runc version 1.1.5"));
        let start = Instant::now();
        let p = probe_runtime(&rt, Duration::from_millis(300));
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        assert!(!p.definitive);
        assert_eq!(
            p.answer,
            Err(format!(
                "{}: \"features\" did not answer within 0.3s",
                rt.display()
            ))
        );
        // A timeout is not cached: the next start asks again.
        let cache = d.path().join("cache");
        let _ = runtime_knows_rro_cached(&rt, &cache, Duration::from_millis(100));
        assert!(fs::read_dir(&cache).map_or(true, |mut r| r.next().is_none()));
    }

    #[test]
    fn a_runtime_that_keeps_stdout_open_after_exiting_times_out() {
        let d = tempfile::tempdir().unwrap();
        let rt = stub(d.path(), "bg", "sleep 30 & exit 0", "exit 1");
        let start = Instant::now();
        let p = probe_runtime(&rt, Duration::from_millis(300));
        assert!(start.elapsed() < Duration::from_secs(3));
        assert!(p.answer.is_err());
    }

    #[test]
    fn huge_output_is_no_answer() {
        let d = tempfile::tempdir().unwrap();
        let rt = stub(
            d.path(),
            "chatty",
            "yes '\"rro\",'",
            &echo("crun version 1.8.1"),
        );
        assert_eq!(
            probe_runtime(&rt, Duration::from_secs(5)).answer,
            Ok("crun 1.8 (rro since crun 1.4)".to_owned())
        );
    }

    #[test]
    fn the_child_gets_only_stdio_and_dev_null() {
        let d = tempfile::tempdir().unwrap();
        // A descriptor this process leaves inheritable, as conmon's sync
        // pipes are.
        let file = File::open("/dev/zero").unwrap();
        let fd = nix::unistd::dup(file.as_raw_fd()).unwrap();
        let check = format!(
            "if [ -e /proc/$$/fd/{fd} ]; then echo '{NO_RRO_FEATURES}'; \
             elif [ \"$(readlink /proc/$$/fd/0)\" != /dev/null ] || [ \"$(readlink /proc/$$/fd/2)\" != /dev/null ]; then echo '{NO_RRO_FEATURES}'; \
             else echo '{RRO_FEATURES}'; fi; echo noise >&2"
        );
        let rt = stub(d.path(), "rt", &check, "exit 1");
        let answer = runtime_knows_rro(&rt);
        let _ = nix::unistd::close(fd);
        assert_eq!(answer, Ok("\"features\" lists rro".to_owned()));
    }

    #[test]
    fn the_answer_is_cached_until_the_binary_changes() {
        let d = tempfile::tempdir().unwrap();
        let cache = d.path().join("cache");
        let rt = stub(d.path(), "rt", &echo(RRO_FEATURES), "exit 1");
        let t = Duration::from_secs(5);
        let ok = Ok("\"features\" lists rro".to_owned());
        assert_eq!(runtime_knows_rro_cached(&rt, &cache, t), ok);
        assert_eq!(calls(d.path()).len(), 1);
        let mode = fs::metadata(&cache).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let files: Vec<_> = fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(files[0].starts_with("rro-") && files[0].ends_with(".json"));
        let entry: serde_json::Value =
            serde_json::from_slice(&fs::read(cache.join(&files[0])).unwrap()).unwrap();
        assert_eq!(entry["rro"], true);
        assert_eq!(entry["path"], rt.canonicalize().unwrap().to_str().unwrap());

        // Second start: no process.
        assert_eq!(runtime_knows_rro_cached(&rt, &cache, t), ok);
        assert_eq!(calls(d.path()).len(), 1);

        // A new mtime: asked again.
        let when = nix::sys::time::TimeSpec::new(1_000_000_000, 5);
        nix::sys::stat::utimensat(
            None,
            &rt,
            &when,
            &when,
            nix::sys::stat::UtimensatFlags::FollowSymlink,
        )
        .unwrap();
        assert_eq!(runtime_knows_rro_cached(&rt, &cache, t), ok);
        assert_eq!(calls(d.path()).len(), 2);
        assert_eq!(runtime_knows_rro_cached(&rt, &cache, t), ok);
        assert_eq!(calls(d.path()).len(), 2);

        // Corrupt: ignored and rewritten.
        fs::write(cache.join(&files[0]), b"{\"rro\": tr").unwrap();
        assert_eq!(runtime_knows_rro_cached(&rt, &cache, t), ok);
        assert_eq!(calls(d.path()).len(), 3);
        let entry: serde_json::Value =
            serde_json::from_slice(&fs::read(cache.join(&files[0])).unwrap()).unwrap();
        assert_eq!(entry["rro"], true);
        assert_eq!(runtime_knows_rro_cached(&rt, &cache, t), ok);
        assert_eq!(calls(d.path()).len(), 3);

        // A replaced binary answering otherwise: asked again, new answer.
        let rt2 = stub(d.path(), "rt", &echo(NO_RRO_FEATURES), "exit 1");
        assert_eq!(rt2, rt);
        assert!(runtime_knows_rro_cached(&rt, &cache, t).is_err());
        assert_eq!(calls(d.path()).len(), 4);
        assert!(runtime_knows_rro_cached(&rt, &cache, t).is_err());
        assert_eq!(calls(d.path()).len(), 4);
        // No temporary files left behind.
        assert_eq!(fs::read_dir(&cache).unwrap().count(), 1);
    }

    #[test]
    fn a_negative_version_answer_is_cached_too() {
        let d = tempfile::tempdir().unwrap();
        let cache = d.path().join("cache");
        let rt = stub(d.path(), "rt", FAIL_FEATURES, &echo("crun version 1.3"));
        let t = Duration::from_secs(5);
        let first = runtime_knows_rro_cached(&rt, &cache, t);
        assert!(first.is_err());
        assert_eq!(calls(d.path()), ["features", "--version"]);
        assert_eq!(runtime_knows_rro_cached(&rt, &cache, t), first);
        assert_eq!(calls(d.path()).len(), 2);
    }

    #[test]
    fn unusable_cache_dirs_cost_a_probe_not_a_failure() {
        let d = tempfile::tempdir().unwrap();
        let rt = stub(d.path(), "rt", &echo(RRO_FEATURES), "exit 1");
        let t = Duration::from_secs(5);
        // A file where the directory should be.
        let file = d.path().join("file");
        fs::write(&file, "").unwrap();
        assert!(runtime_knows_rro_cached(&rt, &file, t).is_ok());
        // A parent that does not exist.
        assert!(runtime_knows_rro_cached(&rt, &d.path().join("a/b"), t).is_ok());
        // A directory others can write: neither read nor written.
        let open = d.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(runtime_knows_rro_cached(&rt, &open, t).is_ok());
        assert_eq!(fs::read_dir(&open).unwrap().count(), 0);
        assert_eq!(calls(d.path()).len(), 3);
    }

    #[test]
    fn a_writable_cache_file_is_not_trusted() {
        let d = tempfile::tempdir().unwrap();
        let cache = d.path().join("cache");
        let rt = stub(d.path(), "rt", &echo(NO_RRO_FEATURES), "exit 1");
        let t = Duration::from_secs(5);
        assert!(runtime_knows_rro_cached(&rt, &cache, t).is_err());
        let id = Identity::of(&rt).unwrap();
        let entry = cache.join(id.file_name());
        let planted = fs::read_to_string(&entry)
            .unwrap()
            .replace("\"rro\":false", "\"rro\":true");
        fs::write(&entry, planted).unwrap();
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(runtime_knows_rro_cached(&rt, &cache, t).is_err());
        assert_eq!(calls(d.path()).len(), 2);
    }

    #[test]
    fn kernel_probe_matches_the_kernel_version() {
        let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let (major, minor) = major_minor(release.trim()).unwrap();
        assert_eq!(kernel_supports_mount_setattr(), (major, minor) >= (5, 12));
    }

    #[test]
    fn rro_support_on_this_host() {
        let d = tempfile::tempdir().unwrap();
        let rt = stub(d.path(), "rt", &echo(NO_RRO_FEATURES), "exit 1");
        let got = rro_support(&rt, &d.path().join("cache"));
        if kernel_supports_mount_setattr() {
            assert_eq!(
                got,
                RroSupport::Unsupported(format!(
                    "{}: \"features\" lists no rro mount option",
                    rt.display()
                ))
            );
        } else {
            assert_eq!(got, RroSupport::Unsupported(KERNEL_REASON.to_owned()));
        }
    }

    // The Debian packages the project is tested against: these must be
    // installed, and the tests fail when they are not.

    #[test]
    fn real_runc_lists_rro_in_features() {
        assert_eq!(
            runtime_knows_rro(Path::new("/usr/sbin/runc")),
            Ok("\"features\" lists rro".to_owned())
        );
    }

    #[test]
    fn real_crun_knows_rro_by_its_version() {
        let got = runtime_knows_rro(Path::new("/usr/bin/crun"));
        assert!(
            got.as_ref()
                .is_ok_and(|how| how.starts_with("crun ") || how == "\"features\" lists rro"),
            "{got:?}"
        );
    }

    #[test]
    fn real_runtimes_are_supported_and_cached() {
        let d = tempfile::tempdir().unwrap();
        for rt in ["/usr/sbin/runc", "/usr/bin/crun"] {
            assert_eq!(rro_support(Path::new(rt), d.path()), RroSupport::Supported);
            assert_eq!(rro_support(Path::new(rt), d.path()), RroSupport::Supported);
        }
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 2);
    }
}
