//! The bundle's config.json: read without following links or blocking on
//! odd files, and replaced atomically (temporary file in the bundle
//! directory, fsync, rename, directory fsync) with its mode and owner kept,
//! so a crash leaves either the old or the new document, never a mix.

use nix::fcntl::OFlag;
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const CONFIG: &str = "config.json";

/// Test-only switch: when set, `Config::replace` stops itself (SIGSTOP)
/// after writing and syncing the temporary file, before the rename, so a
/// test can kill it at exactly that point. Never set it in production.
pub const TEST_PAUSE_ENV: &str = "USERNS_HOSTNET_TEST_PAUSE_BEFORE_RENAME";

/// A temporary file is `.<name>.userns-hostnet.<pid>.tmp` beside `<name>`.
const TEMP_TAG: &str = ".userns-hostnet.";
const TEMP_SUFFIX: &str = ".tmp";

/// Remove the temporary files that runs killed before their rename left in
/// `dir`: ours by name (`.config.json.userns-hostnet.<pid>.tmp`, or the
/// same for an exec's process file) and their pid no longer alive. A live
/// pid's file may be another run's write in progress, so it stays.
pub fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.starts_with('.'))
            .and_then(|n| n.strip_suffix(TEMP_SUFFIX))
            .and_then(|n| n.rsplit_once(TEMP_TAG))
            .map(|(_, pid)| pid)
            .and_then(|p| p.parse::<i32>().ok())
            .filter(|&p| p > 0)
        else {
            continue;
        };
        let dead = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
            == Err(nix::errno::Errno::ESRCH);
        if dead && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("bundle: {path}: is a symbolic link; refusing to follow it")]
    Symlink { path: PathBuf },
    #[error("bundle: {path}: not a regular file")]
    NotRegular { path: PathBuf },
    #[error("bundle: {path}: {what}: {source}")]
    Io {
        path: PathBuf,
        what: &'static str,
        source: std::io::Error,
    },
}

fn io<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(std::io::Error) -> BundleError + 'a {
    move |source| BundleError::Io {
        path: path.to_owned(),
        what,
        source,
    }
}

/// config.json as read, with what the rewrite must keep.
#[derive(Debug)]
pub struct Config {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    mode: u32,
    uid: u32,
    gid: u32,
}

/// Read `<bundle>/config.json`. `Ok(None)` when it does not exist: the real
/// runtime reports that in its own words.
pub fn read(bundle: &Path) -> Result<Option<Config>, BundleError> {
    read_file(bundle.join(CONFIG))
}

/// Read a spec-like JSON file the runtime will read (config.json, or the
/// process file of `exec --process`) the same careful way.
pub fn read_file(path: PathBuf) -> Result<Option<Config>, BundleError> {
    // O_NOFOLLOW: never read through a link out of the bundle; O_NONBLOCK:
    // a FIFO must not hang the container start.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC).bits())
        .open(&path);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(BundleError::Symlink { path })
        }
        Err(e) => return Err(io(&path, "cannot open")(e)),
    };
    let meta = file.metadata().map_err(io(&path, "cannot stat"))?;
    if !meta.is_file() {
        return Err(BundleError::NotRegular { path });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)
        .map_err(io(&path, "cannot read"))?;
    Ok(Some(Config {
        path,
        bytes,
        mode: meta.permissions().mode() & 0o7777,
        uid: meta.uid(),
        gid: meta.gid(),
    }))
}

/// Serialize a converted spec in the style of the original: indented if it
/// was written on several lines (podman, runc spec), compact otherwise
/// (containerd), with a final newline if it had one.
pub fn serialize_like(spec: &Value, original: &[u8]) -> Vec<u8> {
    let body = original.trim_ascii_end();
    let mut out = if body.contains(&b'\n') {
        serde_json::to_vec_pretty(spec)
    } else {
        serde_json::to_vec(spec)
    }
    .unwrap_or_default();
    if original.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

impl Config {
    fn temp_path(&self) -> PathBuf {
        let name = self.path.file_name().unwrap_or_default().to_string_lossy();
        self.path.with_file_name(format!(
            ".{name}{TEMP_TAG}{}{TEMP_SUFFIX}",
            std::process::id()
        ))
    }

    /// Replace config.json with `bytes`, atomically.
    pub fn replace(&self, bytes: &[u8]) -> Result<(), BundleError> {
        let tmp = self.temp_path();
        let result = self.write_then_rename(&tmp, bytes);
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    fn write_then_rename(&self, tmp: &Path, bytes: &[u8]) -> Result<(), BundleError> {
        // A stale file of a killed run with our pid is ours to replace.
        let _ = std::fs::remove_file(tmp);
        remove_stale_temporaries(tmp.parent().unwrap_or(Path::new(".")));
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits())
            .open(tmp)
            .map_err(io(tmp, "cannot create"))?;
        // Owner first: chown clears set-id bits, which the mode then restores.
        match nix::unistd::fchown(f.as_raw_fd(), Some(self.uid.into()), Some(self.gid.into())) {
            Ok(()) | Err(nix::errno::Errno::EPERM) => {}
            Err(e) => return Err(io(tmp, "cannot chown")(e.into())),
        }
        f.set_permissions(std::fs::Permissions::from_mode(self.mode))
            .map_err(io(tmp, "cannot chmod"))?;
        f.write_all(bytes).map_err(io(tmp, "cannot write"))?;
        f.sync_all().map_err(io(tmp, "cannot sync"))?;
        drop(f);
        // Test-only: lets the crash tests kill the wrapper between the
        // fsync and the rename. Read here, on the write path only.
        if std::env::var_os(TEST_PAUSE_ENV).is_some() {
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
        }
        std::fs::rename(tmp, &self.path).map_err(io(&self.path, "cannot replace"))?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let d = File::open(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
        .map_err(io(dir, "cannot open"))?;
        d.sync_all().map_err(io(dir, "cannot sync"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn missing_config_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_none());
    }

    #[test]
    fn symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real.json"), "{}").unwrap();
        symlink("real.json", dir.path().join(CONFIG)).unwrap();
        let e = read(dir.path()).unwrap_err();
        assert!(matches!(e, BundleError::Symlink { .. }));
        assert!(e.to_string().contains("symbolic link"));
    }

    #[test]
    fn fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&dir.path().join(CONFIG), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(
            read(dir.path()).unwrap_err(),
            BundleError::NotRegular { .. }
        ));
    }

    #[test]
    fn replace_keeps_mode_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(CONFIG);
        std::fs::write(&p, "{}").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let cfg = read(dir.path()).unwrap().unwrap();
        cfg.replace(b"{\"a\":1}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"a\":1}");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
            0o640
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(CONFIG)]);
    }

    #[test]
    fn stale_temporaries_of_dead_runs_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let live = std::process::id();
        for name in [
            format!(".config.json.userns-hostnet.{dead}.tmp"),
            format!(".config.json.userns-hostnet.{live}.tmp"),
            ".config.json.userns-hostnet.x.tmp".to_string(),
            "other.tmp".to_string(),
        ] {
            std::fs::write(dir.path().join(name), "{").unwrap();
        }
        remove_stale_temporaries(dir.path());
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                format!(".config.json.userns-hostnet.{live}.tmp"),
                ".config.json.userns-hostnet.x.tmp".to_string(),
                "other.tmp".to_string(),
            ]
        );
    }

    #[test]
    fn serialize_follows_the_original_style() {
        let v: Value = serde_json::from_str("{\"a\":[1,2]}").unwrap();
        assert_eq!(serialize_like(&v, b"{\"a\":[1]}"), b"{\"a\":[1,2]}");
        assert_eq!(
            serialize_like(&v, b"{\n  \"a\": [1]\n}\n"),
            b"{\n  \"a\": [\n    1,\n    2\n  ]\n}\n"
        );
    }
}
