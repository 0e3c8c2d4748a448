//! Writing daemon config files safely, and showing a change as a diff.

use crate::sys::atomic::{self, Attrs};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Replace (or create) `path` with `bytes`, atomically, keeping the old
/// file's mode, owner and extended attributes (its SELinux label and ACLs
/// among them; 0644 for a new file).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
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
/// an absent file.
pub fn unified_diff(path: &Path, old: Option<&str>, new: Option<&str>) -> String {
    let a: Vec<&str> = old.map(|t| t.lines().collect()).unwrap_or_default();
    let b: Vec<&str> = new.map(|t| t.lines().collect()).unwrap_or_default();
    let ops = line_ops(&a, &b);
    let shown = path.display();
    let mut out = format!(
        "--- {}\n+++ {}\n",
        if old.is_some() {
            shown.to_string()
        } else {
            "/dev/null".into()
        },
        if new.is_some() {
            shown.to_string()
        } else {
            "/dev/null".into()
        },
    );
    const CONTEXT: usize = 3;
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| !matches!(op, Op::Same(..)))
        .map(|(i, _)| i)
        .collect();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i];
        while i < changed.len() && changed[i] <= end + 2 * CONTEXT + 1 {
            end = changed[i];
            i += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let (mut a_start, mut b_start) = (0, 0);
        for op in &ops[..start] {
            match op {
                Op::Same(..) => {
                    a_start += 1;
                    b_start += 1;
                }
                Op::Del(_) => a_start += 1,
                Op::Add(_) => b_start += 1,
            }
        }
        let hunk = &ops[start..end];
        let a_len = hunk.iter().filter(|o| !matches!(o, Op::Add(_))).count();
        let b_len = hunk.iter().filter(|o| !matches!(o, Op::Del(_))).count();
        out.push_str(&format!(
            "@@ -{},{a_len} +{},{b_len} @@\n",
            a_start + usize::from(a_len > 0),
            b_start + usize::from(b_len > 0)
        ));
        for op in hunk {
            match op {
                Op::Same(l) => out.push_str(&format!(" {l}\n")),
                Op::Del(l) => out.push_str(&format!("-{l}\n")),
                Op::Add(l) => out.push_str(&format!("+{l}\n")),
            }
        }
    }
    out
}

enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// The edit script of a longest common subsequence (config files are a
/// few hundred lines: the quadratic table is small).
fn line_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::new();
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push(Op::Same(a[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            ops.push(Op::Add(b[j]));
            j += 1;
        } else {
            ops.push(Op::Del(a[i]));
            i += 1;
        }
    }
    ops
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
