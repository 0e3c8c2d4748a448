//! Ask the runtime to do it: a trial container whose only job is an `rro`
//! bind of the host's /sys, created (never started), its mounts read back
//! from /proc, then deleted.
//!
//! What a runtime lists is not always what it does: youki 0.7.0 lists no
//! `rro` in `features` yet applies it, and a runtime this wrapper does not
//! know by name may apply it too. When the runtime's own answers say no,
//! the trial settles it on what the kernel shows.
//!
//! The trial container has a mount and a pid namespace (runc wants a
//! /proc, youki a /dev) and nothing else of its own: no user or network namespace, an empty root file system in a
//! private directory, its own `--root` state directory. Its process is the
//! runtime binary bound read-only at `/trial`, so the runtime finds an
//! executable to wait on; it is never started. `create` leaves the
//! container's init waiting with every mount in place: its mountinfo is
//! the answer.

use crate::sys::deadline::{run_status, RunError};
use crate::sys::mountinfo::{self, Mount};
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long the runtime has to create the trial container.
pub const TRIAL_TIMEOUT: Duration = Duration::from_secs(10);
/// And then to delete it.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);
/// The most of the runtime's stderr quoted in a reason.
const QUOTED: usize = 200;

/// The spec of the trial container, its root file system at `rootfs`
/// (relative to the bundle) and `runtime` bound at `/trial` as its process.
pub fn spec(runtime: &Path) -> Value {
    json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": false,
            "user": {"uid": 0, "gid": 0},
            "args": ["/trial"],
            "env": ["PATH=/"],
            "cwd": "/"
        },
        "root": {"path": "rootfs", "readonly": false},
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {
                "destination": "/dev",
                "type": "tmpfs",
                "source": "tmpfs",
                "options": ["nosuid", "mode=755", "size=64k"]
            },
            {
                "destination": "/trial",
                "type": "bind",
                "source": runtime,
                "options": ["bind", "ro"]
            },
            {
                "destination": "/sys",
                "type": "bind",
                "source": "/sys",
                "options": ["rbind", "rro", "nosuid", "nodev", "noexec"]
            }
        ],
        "linux": {
            "namespaces": [{"type": "mount"}, {"type": "pid"}],
            "cgroupsPath": "/userns-hostnet-rro-trial"
        }
    })
}

/// The verdict on the trial container's mounts: `Ok(n)` when all `n`
/// mounts at and under /sys are read-only and there is at least one
/// submount, the case `rro` exists for.
pub fn judge(mounts: &[Mount]) -> Result<usize, String> {
    let under: Vec<&Mount> = mounts.iter().filter(|m| m.is_at_or_under("/sys")).collect();
    if under.is_empty() {
        return Err("the trial container has no mount at /sys".to_owned());
    }
    if under.len() < 2 {
        return Err(
            "the host's /sys has no submounts, so the trial cannot tell rro from ro".to_owned(),
        );
    }
    let writable: Vec<&str> = under
        .iter()
        .filter(|m| !m.has("ro"))
        .map(|m| m.mount_point.as_str())
        .collect();
    match writable.as_slice() {
        [] => Ok(under.len()),
        [first, ..] => Err(format!(
            "the trial container's {first} stayed writable ({} of {} mounts under /sys)",
            writable.len(),
            under.len()
        )),
    }
}

/// Why a trial showed no `rro`, and whether the next trial would say the
/// same: the runtime's own refusal or what its container showed is
/// settled; a trial that could not be made or read (no room under the
/// cache directory, a slow node, a container gone too soon) is not, so it
/// is asked again rather than cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub reason: String,
    pub settled: bool,
}

impl Failed {
    fn settled(reason: String) -> Failed {
        Failed {
            reason,
            settled: true,
        }
    }

    fn transient(reason: String) -> Failed {
        Failed {
            reason,
            settled: false,
        }
    }
}

/// Create the trial container under `parent` (a private directory is made
/// and removed there), read its mounts, delete it. `Ok` says what was seen;
/// `Err` why the runtime is not shown to apply `rro`.
pub fn run(runtime: &Path, parent: &Path) -> Result<String, Failed> {
    let work = Work::new(parent).map_err(|e| {
        Failed::transient(format!(
            "cannot prepare a trial under {}: {e}",
            parent.display()
        ))
    })?;
    let result = work.create_and_read(runtime);
    work.delete(runtime);
    result.map(|n| format!("a trial container: all {n} mounts at and under /sys read-only"))
}

/// The trial's private directory: bundle, state root, pid file, stderr.
struct Work {
    dir: PathBuf,
    id: String,
}

impl Work {
    fn new(parent: &Path) -> std::io::Result<Work> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let id = format!("userns-hostnet-rro-trial-{}-{stamp}", std::process::id());
        let dir = parent.join(&id);
        fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let work = Work { dir, id };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(work.bundle().join("rootfs"))?;
        fs::create_dir(work.state())?;
        Ok(work)
    }

    fn bundle(&self) -> PathBuf {
        self.dir.join("bundle")
    }

    fn state(&self) -> PathBuf {
        self.dir.join("state")
    }

    fn create_and_read(&self, runtime: &Path) -> Result<usize, Failed> {
        let local = |what: &Path| {
            let what = what.display().to_string();
            move |e: std::io::Error| Failed::transient(format!("{what}: {e}"))
        };
        let config =
            serde_json::to_vec(&spec(runtime)).map_err(|e| Failed::transient(e.to_string()))?;
        let path = self.bundle().join("config.json");
        fs::write(&path, config).map_err(local(&path))?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).map_err(local(&path))?;
        let err_path = self.dir.join("stderr");
        let err = fs::File::create(&err_path).map_err(local(&err_path))?;
        let pid_file = self.dir.join("pid");
        let (state, bundle) = (self.state(), self.bundle());
        let args: [&OsStr; 8] = [
            "--root".as_ref(),
            state.as_os_str(),
            "create".as_ref(),
            "--bundle".as_ref(),
            bundle.as_os_str(),
            "--pid-file".as_ref(),
            pid_file.as_os_str(),
            self.id.as_ref(),
        ];
        let status = run_status(
            runtime,
            &args,
            Stdio::null(),
            err.into(),
            Instant::now() + TRIAL_TIMEOUT,
        )
        .map_err(|e| {
            Failed::transient(match e {
                RunError::Timeout => format!(
                    "the trial container was not created within {}s",
                    TRIAL_TIMEOUT.as_secs()
                ),
                e => format!("the trial container: {e}"),
            })
        })?;
        if !status.success() {
            return Err(Failed::settled(format!(
                "the runtime could not create the trial container ({status}): {}",
                quoted(&err_path)
            )));
        }
        let pid = fs::read_to_string(&pid_file)
            .map_err(|e| Failed::transient(format!("the trial container's pid file: {e}")))?;
        let pid: u32 = pid.trim().parse().map_err(|_| {
            Failed::transient(format!(
                "the trial container's pid file holds {:?}",
                pid.trim()
            ))
        })?;
        let text = fs::read_to_string(format!("/proc/{pid}/mountinfo"))
            .map_err(|e| Failed::transient(format!("the trial container's mountinfo: {e}")))?;
        judge(&mountinfo::parse(&text)).map_err(Failed::settled)
    }

    /// Remove the container and the directory, whatever the trial found.
    fn delete(&self, runtime: &Path) {
        let state = self.state();
        let args: [&OsStr; 5] = [
            "--root".as_ref(),
            state.as_os_str(),
            "delete".as_ref(),
            "--force".as_ref(),
            self.id.as_ref(),
        ];
        let _ = run_status(
            runtime,
            &args,
            Stdio::null(),
            Stdio::null(),
            Instant::now() + DELETE_TIMEOUT,
        );
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The line of what the runtime said that gives the reason: the last one
/// that speaks of an error (runc's logrus line, youki's `Error: ...`), not
/// a backtrace frame; else the last line. Short and printable.
fn quoted(path: &Path) -> String {
    let mut text = String::new();
    let _ = fs::File::open(path).and_then(|f| f.take(64 << 10).read_to_string(&mut text));
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !is_backtrace(l))
        .collect();
    let line = lines
        .iter()
        .rev()
        .find(|l| l.to_ascii_lowercase().contains("error"))
        .or(lines.last())
        .copied()
        .unwrap_or("it said nothing");
    line.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(QUOTED)
        .collect()
}

/// `12: <unknown>`, `at src/main.rs:3:5`, `Stack backtrace:`.
fn is_backtrace(line: &str) -> bool {
    let frame = line
        .split_once(':')
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    frame || line.starts_with("at ") || line.eq_ignore_ascii_case("stack backtrace:")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mounts(lines: &[(&str, &str)]) -> Vec<Mount> {
        let text: String = lines
            .iter()
            .enumerate()
            .map(|(i, (point, opts))| {
                format!("{} 1 0:1 / {point} {opts} - sysfs sysfs rw\n", i + 10)
            })
            .collect();
        mountinfo::parse(&text)
    }

    #[test]
    fn every_mount_under_sys_read_only_is_a_yes() {
        let m = mounts(&[
            ("/", "rw"),
            ("/sys", "ro,nosuid"),
            ("/sys/fs/bpf", "ro"),
            ("/sys/kernel/security", "ro,relatime"),
            ("/system", "rw"),
        ]);
        assert_eq!(judge(&m), Ok(3));
    }

    #[test]
    fn one_writable_submount_is_a_no_naming_it() {
        let m = mounts(&[
            ("/sys", "ro"),
            ("/sys/fs/bpf", "rw"),
            ("/sys/fs/cgroup", "rw"),
        ]);
        assert_eq!(
            judge(&m).unwrap_err(),
            "the trial container's /sys/fs/bpf stayed writable (2 of 3 mounts under /sys)"
        );
    }

    #[test]
    fn without_submounts_the_trial_cannot_tell() {
        assert!(judge(&mounts(&[("/sys", "ro")]))
            .unwrap_err()
            .contains("cannot tell rro from ro"));
        assert!(judge(&mounts(&[("/", "rw")]))
            .unwrap_err()
            .contains("no mount at /sys"));
    }

    #[test]
    fn the_spec_binds_the_runtime_and_sys_and_nothing_of_the_host_else() {
        let s = spec(Path::new("/usr/bin/youki"));
        assert_eq!(s["mounts"][2]["source"], "/usr/bin/youki");
        assert_eq!(s["process"]["args"][0], "/trial");
        assert_eq!(s["mounts"][3]["source"], "/sys");
        assert_eq!(s["mounts"][3]["options"][1], "rro");
        assert_eq!(
            s["linux"]["namespaces"],
            json!([{"type": "mount"}, {"type": "pid"}])
        );
        assert_eq!(s["mounts"].as_array().unwrap().len(), 4);
    }

    #[test]
    fn the_reason_is_the_error_line_not_the_backtrace() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("err");
        fs::write(
            &p,
            "ERROR libcontainer: failed to symlink\nError: failed to create container: no /dev\n\nStack backtrace:\n   0: <unknown>\n   9: <unknown>\n      at src/main.rs:3\n",
        )
        .unwrap();
        assert_eq!(quoted(&p), "Error: failed to create container: no /dev");
        fs::write(&p, "something\nwent wrong\n").unwrap();
        assert_eq!(quoted(&p), "went wrong");
        fs::write(&p, "").unwrap();
        assert_eq!(quoted(&p), "it said nothing");
    }

    #[test]
    fn a_runtime_that_fails_is_a_no_with_its_words_and_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let rt = d.path().join("rt");
        fs::write(
            &rt,
            "#!/bin/sh\n[ \"$3\" = create ] && { echo 'noise' >&2; echo 'unknown mount option \"rro\"' >&2; exit 1; }\nexit 0\n",
        )
        .unwrap();
        fs::set_permissions(&rt, fs::Permissions::from_mode(0o755)).unwrap();
        let parent = d.path().join("trials");
        let e = run(&rt, &parent).unwrap_err();
        assert!(e.settled, "{e:?}");
        let e = e.reason;
        assert!(e.starts_with("the runtime could not create the trial container (exit status: 1): unknown mount option \"rro\""), "{e}");
        assert_eq!(fs::read_dir(&parent).unwrap().count(), 0);
    }
}
