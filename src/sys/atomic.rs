//! Replacing a file atomically: a temporary file beside the target, owner
//! and mode set on its descriptor, written, fsynced, renamed over the
//! target, so a crash or a power loss leaves either the old or the new
//! file, never a mix or an empty one. Where the caller needs the new name
//! itself to survive a power loss ([`Durability::ContentsAndName`]), the
//! directory is fsynced too.
//!
//! When asked to, the new file also gets every extended attribute of the
//! old one (the SELinux label `security.selinux`, `user.*`, the POSIX ACLs
//! `system.posix_acl_access` and `_default`), copied descriptor to
//! descriptor; one that cannot be copied fails the replace, and the target
//! stays as it was.

use nix::fcntl::OFlag;
use std::borrow::Cow;
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use xattr::FileExt;

/// A temporary file is `.<name>.userns-hostnet.<pid>.tmp` beside `<name>`.
const TEMP_TAG: &str = ".userns-hostnet.";
const TEMP_SUFFIX: &str = ".tmp";
/// The POSIX access ACL, whose permission entries the kernel keeps in step
/// with the mode.
const ACCESS_ACL: &str = "system.posix_acl_access";

/// What the new file gets: its mode, and its owner when it has one to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attrs {
    pub mode: u32,
    /// (uid, gid); `None` leaves the creator's. A chown refused with EPERM
    /// (an unprivileged caller) leaves the creator's too.
    pub owner: Option<(u32, u32)>,
}

/// What a replace makes survive a power loss. Either way a crash or a
/// power loss leaves the old file or the new one, whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The new contents reach the disk before the rename (the file is
    /// fsynced), so the name never points at a torn or empty file; the
    /// rename itself may be lost, and the old file come back. For a file
    /// whose old version is as safe to find after a reboot as the new one:
    /// a bundle's config.json is converted again by the next create, and
    /// no container outlives a reboot without one.
    Contents,
    /// As [`Durability::Contents`], and the directory is fsynced after the
    /// rename: the new file is what a reboot finds. For configuration an
    /// operator edits on purpose (containerd's, CRI-O's).
    ContentsAndName,
}

/// The step that failed, on which file.
#[derive(Debug, thiserror::Error)]
#[error("{}: {what}: {source}", path.display())]
pub struct AtomicError {
    pub path: PathBuf,
    pub what: Cow<'static, str>,
    #[source]
    pub source: std::io::Error,
}

impl From<AtomicError> for std::io::Error {
    fn from(e: AtomicError) -> Self {
        e.source
    }
}

fn step<'a>(
    path: &'a Path,
    what: impl Into<Cow<'static, str>> + 'a,
) -> impl FnOnce(std::io::Error) -> AtomicError + 'a {
    move |source| AtomicError {
        path: path.to_owned(),
        what: what.into(),
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

/// The temporary files [`temp_path`] named for `target` whose process is
/// gone (killed between its write and its rename, which a signal handler
/// cannot prevent for SIGKILL): nothing will rename or remove them.
pub fn stale_temps(target: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return Vec::new();
    };
    let prefix = format!(".{}{TEMP_TAG}", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let pid = n
                .to_str()
                .and_then(|n| n.strip_prefix(&prefix))
                .and_then(|n| n.strip_suffix(TEMP_SUFFIX))
                .and_then(|p| p.parse::<u32>().ok());
            pid.is_some_and(|p| {
                p != std::process::id() && !Path::new("/proc").join(p.to_string()).exists()
            })
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Replace `target` with `bytes`, atomically.
pub fn replace(
    target: &Path,
    bytes: &[u8],
    attrs: Attrs,
    durability: Durability,
) -> Result<(), AtomicError> {
    replace_with(target, bytes, attrs, durability, None, || {})
}

/// [`replace`], giving the new file every extended attribute of `old` (the
/// target as it was opened) when there is one, and calling `before_rename`
/// once the temporary file is written and synced, just before it is
/// renamed over `target`.
pub fn replace_with(
    target: &Path,
    bytes: &[u8],
    attrs: Attrs,
    durability: Durability,
    old: Option<&File>,
    before_rename: impl FnOnce(),
) -> Result<(), AtomicError> {
    let tmp = temp_path(target);
    let result = write_then_rename(target, &tmp, bytes, attrs, old, before_rename);
    let result = result.and_then(|dir| match durability {
        Durability::Contents => Ok(()),
        Durability::ContentsAndName => File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(step(&dir, "cannot sync")),
    });
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
    old: Option<&File>,
    before_rename: impl FnOnce(),
) -> Result<PathBuf, AtomicError> {
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
    // Owner first: chown clears set-id bits and security.capability, the
    // write clears security.capability, so both come before the extended
    // attributes are copied; the mode comes last and restores set-id bits.
    if let Some((uid, gid)) = attrs.owner {
        match nix::unistd::fchown(f.as_raw_fd(), Some(uid.into()), Some(gid.into())) {
            Ok(()) | Err(nix::errno::Errno::EPERM) => {}
            Err(e) => return Err(step(tmp, "cannot chown")(e.into())),
        }
    }
    f.write_all(bytes).map_err(step(tmp, "cannot write"))?;
    let acl = match old {
        Some(old) => copy_xattrs(old, &f, target)?,
        None => None,
    };
    f.set_permissions(std::fs::Permissions::from_mode(attrs.mode))
        .map_err(step(tmp, "cannot chmod"))?;
    if old.is_some() {
        verify_mode_and_acl(&f, attrs.mode, acl.as_deref(), target)?;
    }
    f.sync_all().map_err(step(tmp, "cannot sync"))?;
    drop(f);
    before_rename();
    std::fs::rename(tmp, target).map_err(step(target, "cannot replace"))?;
    Ok(dir.to_owned())
}

/// Give `new` every extended attribute of `old`, and no access ACL that
/// `old` lacks (one inherited from the directory's default ACL). Returns
/// the access ACL copied, for [`verify_mode_and_acl`]. Errors name
/// `target`, the file being replaced, and the attribute.
fn copy_xattrs(old: &File, new: &File, target: &Path) -> Result<Option<Vec<u8>>, AtomicError> {
    let names: Vec<OsString> = match old.list_xattr() {
        Ok(names) => names.collect(),
        // A filesystem without extended attributes: nothing to keep.
        Err(e) if e.raw_os_error() == Some(nix::libc::EOPNOTSUPP) => return Ok(None),
        Err(e) => return Err(step(target, "cannot list extended attributes")(e)),
    };
    if !names.iter().any(|n| n == ACCESS_ACL) {
        match new.remove_xattr(ACCESS_ACL) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(nix::libc::ENODATA) | Some(nix::libc::EOPNOTSUPP)
                ) => {}
            Err(e) => {
                return Err(step(
                    target,
                    format!("cannot remove the inherited extended attribute {ACCESS_ACL}"),
                )(e))
            }
        }
    }
    let mut acl = None;
    for name in &names {
        let shown = name.to_string_lossy();
        let value = match old.get_xattr(name) {
            Ok(Some(v)) => v,
            // Removed since it was listed: the old file no longer has it.
            Ok(None) => continue,
            Err(e) => {
                return Err(step(
                    target,
                    format!("cannot read extended attribute {shown}"),
                )(e))
            }
        };
        // Already equal (a label the new file got from the policy): setting
        // it again could need a permission that changes nothing.
        if new.get_xattr(name).ok().flatten().as_deref() != Some(value.as_slice()) {
            new.set_xattr(name, &value).map_err(step(
                target,
                format!("cannot copy extended attribute {shown}"),
            ))?;
        }
        if name == ACCESS_ACL {
            acl = Some(value);
        }
    }
    Ok(acl)
}

/// After the chmod that follows the copy: the mode is the one asked for
/// and the access ACL (whose entries chmod rewrites) is the old file's.
fn verify_mode_and_acl(
    new: &File,
    mode: u32,
    acl: Option<&[u8]>,
    target: &Path,
) -> Result<(), AtomicError> {
    let meta = new.metadata().map_err(step(target, "cannot stat"))?;
    let got = meta.mode() & 0o7777;
    if got != mode {
        return Err(step(
            target,
            "cannot keep the mode with the extended attributes",
        )(std::io::Error::other(format!(
            "mode {got:04o}, not {mode:04o}"
        ))));
    }
    if let Some(acl) = acl {
        let now = new.get_xattr(ACCESS_ACL).map_err(step(
            target,
            format!("cannot read extended attribute {ACCESS_ACL}"),
        ))?;
        if now.as_deref() != Some(acl) {
            return Err(step(
                target,
                format!("cannot copy extended attribute {ACCESS_ACL}"),
            )(std::io::Error::other(
                "the new file's ACL differs from the old one's",
            )));
        }
    }
    Ok(())
}

/// Remove the temporary files that runs killed before their rename left in
/// `dir`: ours by name (`.<name>.userns-hostnet.<pid>.tmp`) and their pid
/// no longer alive. A live pid's file may be another run's write in
/// progress, so it stays.
pub fn remove_stale_temporaries(dir: &Path) {
    let Ok(names) = crate::sys::dir::names(dir) else {
        return;
    };
    for name in names {
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
        let path = dir.join(&name);
        if dead && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            let _ = std::fs::remove_file(path);
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

    /// A temporary directory holding one file, `f`, that reads `old`.
    fn dir_with_old_file() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "old").unwrap();
        (dir, p)
    }

    fn with_mode(mode: u32) -> Attrs {
        Attrs { mode, owner: None }
    }

    #[test]
    fn replace_sets_the_mode_and_leaves_no_temporary() {
        let (dir, p) = dir_with_old_file();
        let attrs = with_mode(0o640);
        replace(&p, b"new", attrs, Durability::ContentsAndName).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
            0o640
        );
        assert_eq!(names(dir.path()), ["f"]);
    }

    #[test]
    fn before_rename_sees_the_old_file_and_the_synced_temporary() {
        let (_dir, p) = dir_with_old_file();
        let attrs = with_mode(0o600);
        replace_with(&p, b"new", attrs, Durability::Contents, None, || {
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
        let attrs = with_mode(0o644);
        let e = replace(&p, b"new", attrs, Durability::ContentsAndName).unwrap_err();
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

    /// `setfacl`/`getfacl` (Debian package acl) on `path`.
    fn acl_tool(tool: &str, args: &[&str], path: &Path) -> String {
        let out = std::process::Command::new(tool)
            .args(args)
            .arg(path)
            .output()
            .unwrap_or_else(|e| panic!("{tool} (Debian package acl): {e}"));
        assert!(out.status.success(), "{tool} {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    fn getfacl(path: &Path) -> String {
        acl_tool("getfacl", &["--omit-header", "--numeric"], path)
    }

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o7777
    }

    fn attrs_of(path: &Path) -> Attrs {
        with_mode(mode_of(path))
    }

    /// Replaces `path` with `new`, copying the attributes of the file it
    /// replaces.
    fn replace_keeping_attributes(path: &Path) {
        let old = File::open(path).unwrap();
        replace_with(
            path,
            b"new",
            attrs_of(path),
            Durability::Contents,
            Some(&old),
            || {},
        )
        .unwrap();
        assert_eq!(std::fs::read(path).unwrap(), b"new");
    }

    #[test]
    fn user_attributes_and_the_acl_are_kept() {
        let (dir, p) = dir_with_old_file();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        xattr::set(&p, "user.label", b"kept").unwrap();
        xattr::set(&p, "user.binary", &[0, 255, b'\n', 0]).unwrap();
        acl_tool("setfacl", &["-m", "u:1234:rw-,g:2345:r--"], &p);
        let acl = getfacl(&p);
        assert!(acl.contains("user:1234:rw-"), "{acl}");
        let mode = mode_of(&p);
        let inode = std::fs::metadata(&p).unwrap().ino();
        replace_keeping_attributes(&p);
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_ne!(std::fs::metadata(&p).unwrap().ino(), inode, "replaced");
        assert_eq!(xattr::get(&p, "user.label").unwrap().unwrap(), b"kept");
        assert_eq!(
            xattr::get(&p, "user.binary").unwrap().unwrap(),
            [0, 255, b'\n', 0]
        );
        assert_eq!(getfacl(&p), acl);
        assert_eq!(mode_of(&p), mode);
        assert_eq!(names(dir.path()), ["f"]);
    }

    #[test]
    fn set_id_bits_survive_the_copy() {
        let (_dir, p) = dir_with_old_file();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o2750)).unwrap();
        acl_tool("setfacl", &["-m", "u:1234:r-x"], &p);
        let (mode, acl) = (mode_of(&p), getfacl(&p));
        replace_keeping_attributes(&p);
        assert_eq!(mode_of(&p), mode);
        assert_eq!(getfacl(&p), acl);
    }

    #[test]
    fn a_default_acl_of_the_directory_does_not_reach_a_file_without_one() {
        let dir = tempfile::tempdir().unwrap();
        acl_tool("setfacl", &["-d", "-m", "u:1234:rwx"], dir.path());
        let p = dir.path().join("f");
        std::fs::write(&p, "old").unwrap();
        acl_tool("setfacl", &["-b"], &p);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(xattr::get(&p, ACCESS_ACL).unwrap(), None);
        replace_keeping_attributes(&p);
        assert_eq!(xattr::get(&p, ACCESS_ACL).unwrap(), None);
        assert_eq!(mode_of(&p), 0o644);
    }

    /// A value the target's filesystem cannot hold (ext4 keeps a value in
    /// one block, tmpfs takes up to 64 KiB): the replace fails naming the
    /// attribute, the target keeps its bytes and inode, no temporary stays.
    #[test]
    fn an_attribute_that_cannot_be_copied_fails_the_replace() {
        let big = vec![b'a'; 10_000];
        let dir = tempfile::tempdir().unwrap();
        let probe = dir.path().join("probe");
        std::fs::write(&probe, "").unwrap();
        let fits = xattr::set(&probe, "user.big", &big).is_ok();
        std::fs::remove_file(&probe).unwrap();
        // The prerequisite, loudly: a tmpfs /dev/shm (as on every Linux
        // system with glibc) beside a temporary directory on a disk file
        // system (ext4, as on these machines).
        assert!(
            !fits,
            "this test needs a temporary directory ({}) that cannot hold a 10 KB extended attribute (ext4 can't; tmpfs can): set TMPDIR to one on ext4",
            dir.path().display()
        );
        let shm = tempfile::tempdir_in("/dev/shm")
            .unwrap_or_else(|e| panic!("this test needs a writable tmpfs at /dev/shm: {e}"));
        let source = shm.path().join("old");
        std::fs::write(&source, "old").unwrap();
        xattr::set(&source, "user.small", b"1").unwrap();
        xattr::set(&source, "user.big", &big).unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "old").unwrap();
        let inode = std::fs::metadata(&p).unwrap().ino();
        let old = File::open(&source).unwrap();
        let e = replace_with(
            &p,
            b"new",
            attrs_of(&p),
            Durability::Contents,
            Some(&old),
            || panic!("renamed despite the failed copy"),
        )
        .unwrap_err();
        assert_eq!(e.path, p);
        assert_eq!(e.what, "cannot copy extended attribute user.big");
        assert!(
            e.to_string().starts_with(&format!(
                "{}: cannot copy extended attribute user.big: ",
                p.display()
            )),
            "{e}"
        );
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert_eq!(std::fs::metadata(&p).unwrap().ino(), inode);
        assert_eq!(names(dir.path()), ["f"]);
    }
}
