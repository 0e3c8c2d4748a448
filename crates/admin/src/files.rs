//! Writing daemon config files safely, and showing a change as a diff.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use userns_hostnet::sys::atomic::{self, Attrs};
use userns_hostnet::sys::in_root::NodeRoot;

/// Replace (or create) `path` with `bytes`, atomically, keeping the old
/// file's mode, owner and extended attributes (its SELinux label and ACLs
/// among them; 0644 for a new file). A `path` that is a symbolic link is
/// written through: its target is replaced, in the target's directory, and
/// the link stays as it is (a link to nothing is refused). Callers under a
/// node's root resolve the path there first ([`NodeRoot::file`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let path = &NodeRoot::host().file(path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let old = match std::fs::File::open(path) {
        Ok(f) => Some(f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let attrs = match &old {
        Some(f) => {
            let m = f.metadata()?;
            Attrs {
                mode: m.permissions().mode() & 0o7777,
                owner: Some((m.uid(), m.gid())),
            }
        }
        None => Attrs {
            mode: 0o644,
            owner: None,
        },
    };
    Ok(atomic::replace_with(
        path,
        bytes,
        attrs,
        atomic::Durability::ContentsAndName,
        old.as_ref(),
        || {},
    )?)
}

/// `path.bak-YYYYmmddHHMMSS` (UTC), a copy of `path` made before it is
/// changed; a suffix keeps two backups of the same second apart.
pub fn backup(path: &Path) -> std::io::Result<PathBuf> {
    let stamp: String = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let base = format!("{}.bak-{stamp}", path.display());
    let mut candidate = PathBuf::from(&base);
    let mut n = 1;
    while candidate.exists() {
        candidate = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    let bytes = std::fs::read(path)?;
    write_atomic(&candidate, &bytes)?;
    Ok(candidate)
}

/// A unified diff of two texts with three lines of context; `None` for
/// an absent file. Hunk ranges always carry their length (`-1,1`).
pub fn unified_diff(path: &Path, old: Option<&str>, new: Option<&str>) -> String {
    let a: Vec<&str> = old.map(|t| t.lines().collect()).unwrap_or_default();
    let b: Vec<&str> = new.map(|t| t.lines().collect()).unwrap_or_default();
    let shown = |present: bool| {
        if present {
            path.display().to_string()
        } else {
            "/dev/null".into()
        }
    };
    let mut out = format!(
        "--- {}\n+++ {}\n",
        shown(old.is_some()),
        shown(new.is_some())
    );
    let diff = similar::TextDiff::from_slices(&a, &b);
    for hunk in diff.grouped_ops(3) {
        let (Some(first), Some(last)) = (hunk.first(), hunk.last()) else {
            continue;
        };
        let (a_start, a_len) = (
            first.old_range().start,
            last.old_range().end - first.old_range().start,
        );
        let (b_start, b_len) = (
            first.new_range().start,
            last.new_range().end - first.new_range().start,
        );
        out.push_str(&format!(
            "@@ -{},{a_len} +{},{b_len} @@\n",
            a_start + usize::from(a_len > 0),
            b_start + usize::from(b_len > 0)
        ));
        // A change's tag prints as its sign: ' ', '-' or '+'.
        for change in hunk.iter().flat_map(|op| diff.iter_changes(op)) {
            out.push_str(&format!("{}{}\n", change.tag(), change.value()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_an_insertion_with_context() {
        let d = unified_diff(Path::new("/f"), Some("a\nb\nc\n"), Some("a\nb\nx\nc\n"));
        assert_eq!(d, "--- /f\n+++ /f\n@@ -1,3 +1,4 @@\n a\n b\n+x\n c\n");
        let d = unified_diff(Path::new("/f"), None, Some("x\n"));
        assert_eq!(d, "--- /dev/null\n+++ /f\n@@ -0,0 +1,1 @@\n+x\n");
    }

    #[test]
    fn diff_splits_hunks_more_than_six_lines_apart() {
        let old: String = (1..=12).map(|n| format!("{n}\n")).collect();
        let new = old.replace("\n2\n", "\nx\n").replace("\n11\n", "\ny\n");
        let d = unified_diff(Path::new("/f"), Some(&old), Some(&new));
        assert_eq!(
            d,
            "--- /f\n+++ /f\n@@ -1,5 +1,5 @@\n 1\n-2\n+x\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+y\n 12\n"
        );
        let d = unified_diff(Path::new("/f"), Some("a\n"), None);
        assert_eq!(d, "--- /f\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-a\n");
    }

    #[test]
    fn atomic_write_keeps_the_mode_and_backup_copies() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let b = backup(&p).unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), b"old");
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(b.to_string_lossy().contains("c.toml.bak-2"));
    }

    #[test]
    fn atomic_write_through_a_link_keeps_the_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("k0s")).unwrap();
        let target = dir.path().join("k0s/containerd.toml");
        std::fs::write(&target, "old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("config.toml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert_eq!(std::fs::read_link(&link).unwrap(), target);
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(
            std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
            0o640
        );
        let gone = dir.path().join("gone.toml");
        std::os::unix::fs::symlink(dir.path().join("none/x.toml"), &gone).unwrap();
        let e = write_atomic(&gone, b"x").unwrap_err();
        assert!(e.to_string().contains("which does not exist"), "{e}");
        assert!(!dir.path().join("none").exists());
    }

    #[test]
    fn atomic_write_keeps_extended_attributes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, "old").unwrap();
        xattr::set(&p, "user.label", b"node-config").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(
            xattr::get(&p, "user.label").unwrap().as_deref(),
            Some(&b"node-config"[..])
        );
        let fresh = dir.path().join("new.toml");
        write_atomic(&fresh, b"x").unwrap();
        assert_eq!(
            std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777,
            0o644
        );
    }
}
