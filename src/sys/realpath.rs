//! `realpath(3)` into a buffer on the stack. std's `canonicalize` has libc
//! allocate the result (`realpath(path, NULL)`): in the wrapper, whose
//! own allocations come from a static block (`sys::arena`), that was the
//! one use of musl's allocator on a create: its set-up (`brk`, a guard
//! `mmap`) and a mapping made and unmapped for each result.

use nix::libc;
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The path with every link, `.` and `..` resolved, as
/// `std::fs::canonicalize` gives it.
pub fn realpath(path: &Path) -> std::io::Result<PathBuf> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path with a NUL byte")
    })?;
    let mut buf = [0u8; libc::PATH_MAX as usize];
    // SAFETY: `c` ends in NUL; `buf` holds PATH_MAX bytes, the most
    // realpath writes, its NUL included.
    let r = unsafe { libc::realpath(c.as_ptr(), buf.as_mut_ptr().cast()) };
    if r.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(PathBuf::from(OsStr::from_bytes(&buf[..len])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_path_as_std_canonicalize() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("f"), b"").unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("link")).unwrap();
        for p in [
            dir.path().join("link/f"),
            dir.path().join("real/../link/./f"),
            dir.path().to_owned(),
            PathBuf::from("/"),
        ] {
            assert_eq!(
                realpath(&p).unwrap(),
                std::fs::canonicalize(&p).unwrap(),
                "{p:?}"
            );
        }
    }

    #[test]
    fn a_missing_path_or_a_nul_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = realpath(&dir.path().join("none")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        std::os::unix::fs::symlink("none", dir.path().join("dangling")).unwrap();
        assert!(realpath(&dir.path().join("dangling")).is_err());
        let e = realpath(Path::new("/a\0b")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
}
