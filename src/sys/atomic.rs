//! Replacing a file atomically: a temporary file beside the target, owner
//! and mode set on its descriptor, written, fsynced, renamed over the
//! target, then the directory fsynced, so a crash leaves either the old or
//! the new file, never a mix, and the new one survives a power loss.

use nix::fcntl::OFlag;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A temporary file is `.<name>.userns-hostnet.<pid>.tmp` beside `<name>`.
const TEMP_TAG: &str = ".userns-hostnet.";
const TEMP_SUFFIX: &str = ".tmp";

/// What the new file gets: its mode, and its owner when it has one to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attrs {
    pub mode: u32,
    /// (uid, gid); `None` leaves the creator's. A chown refused with EPERM
    /// (an unprivileged caller) leaves the creator's too.
    pub owner: Option<(u32, u32)>,
}

/// The step that failed, on which file.
#[derive(Debug, thiserror::Error)]
#[error("{}: {what}: {source}", path.display())]
pub struct AtomicError {
    pub path: PathBuf,
    pub what: &'static str,
    #[source]
    pub source: std::io::Error,
}

impl From<AtomicError> for std::io::Error {
    fn from(e: AtomicError) -> Self {
        e.source
    }
}

fn step<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(std::io::Error) -> AtomicError + 'a {
    move |source| AtomicError {
        path: path.to_owned(),
        what,
        source,
    }
}

/// The temporary file this process uses for `target`.
pub fn temp_path(target: &Path) -> PathBuf {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    target.with_file_name(format!(
        ".{name}{TEMP_TAG}{}{TEMP_SUFFIX}",
        std::process::id()
    ))
}

/// Replace `target` with `bytes`, atomically.
pub fn replace(target: &Path, bytes: &[u8], attrs: Attrs) -> Result<(), AtomicError> {
    replace_with(target, bytes, attrs, || {})
}

/// [`replace`], calling `before_rename` once the temporary file is written
/// and synced, just before it is renamed over `target`.
pub fn replace_with(
    target: &Path,
    bytes: &[u8],
    attrs: Attrs,
    before_rename: impl FnOnce(),
) -> Result<(), AtomicError> {
    let tmp = temp_path(target);
    let result = write_then_rename(target, &tmp, bytes, attrs, before_rename);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write_then_rename(
    target: &Path,
    tmp: &Path,
    bytes: &[u8],
    attrs: Attrs,
    before_rename: impl FnOnce(),
) -> Result<(), AtomicError> {
    // A stale file of a killed run with our pid is ours to replace.
    let _ = std::fs::remove_file(tmp);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    remove_stale_temporaries(dir);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits())
        .open(tmp)
        .map_err(step(tmp, "cannot create"))?;
    // Owner first: chown clears set-id bits, which the mode then restores.
    if let Some((uid, gid)) = attrs.owner {
        match nix::unistd::fchown(f.as_raw_fd(), Some(uid.into()), Some(gid.into())) {
            Ok(()) | Err(nix::errno::Errno::EPERM) => {}
            Err(e) => return Err(step(tmp, "cannot chown")(e.into())),
        }
    }
    f.set_permissions(std::fs::Permissions::from_mode(attrs.mode))
        .map_err(step(tmp, "cannot chmod"))?;
    f.write_all(bytes).map_err(step(tmp, "cannot write"))?;
    f.sync_all().map_err(step(tmp, "cannot sync"))?;
    drop(f);
    before_rename();
    std::fs::rename(tmp, target).map_err(step(target, "cannot replace"))?;
    let d = File::open(dir).map_err(step(dir, "cannot open"))?;
    d.sync_all().map_err(step(dir, "cannot sync"))
}

/// Remove the temporary files that runs killed before their rename left in
/// `dir`: ours by name (`.<name>.userns-hostnet.<pid>.tmp`) and their pid
/// no longer alive. A live pid's file may be another run's write in
/// progress, so it stays.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replace_sets_the_mode_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "old").unwrap();
        let attrs = Attrs {
            mode: 0o640,
            owner: None,
        };
        replace(&p, b"new", attrs).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
            0o640
        );
        assert_eq!(names(dir.path()), ["f"]);
    }

    #[test]
    fn before_rename_sees_the_old_file_and_the_synced_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "old").unwrap();
        let attrs = Attrs {
            mode: 0o600,
            owner: None,
        };
        replace_with(&p, b"new", attrs, || {
            assert_eq!(std::fs::read(&p).unwrap(), b"old");
            assert_eq!(std::fs::read(temp_path(&p)).unwrap(), b"new");
        })
        .unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn a_failed_replace_names_the_step_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the target is: the rename fails.
        let p = dir.path().join("d");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("x"), "").unwrap();
        let attrs = Attrs {
            mode: 0o644,
            owner: None,
        };
        let e = replace(&p, b"new", attrs).unwrap_err();
        assert_eq!(e.what, "cannot replace");
        assert!(e
            .to_string()
            .starts_with(&format!("{}: cannot replace: ", p.display())));
        assert_eq!(names(dir.path()), ["d"]);
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
        assert_eq!(
            names(dir.path()),
            vec![
                format!(".config.json.userns-hostnet.{live}.tmp"),
                ".config.json.userns-hostnet.x.tmp".to_string(),
                "other.tmp".to_string(),
            ]
        );
    }
}
