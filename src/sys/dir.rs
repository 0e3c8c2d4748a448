//! A directory's names, read with `getdents64` into a buffer on the stack.
//! std's `read_dir` goes through musl's `opendir`, which takes its buffer
//! from musl's allocator: in the wrapper, whose own allocations come from
//! a static block (`sys::arena`), that was a `brk` pair and an `mmap` and
//! `munmap` (with their page faults) for each listing, two or three a
//! call.

use rustix::fs::{Mode, OFlags, RawDir};
use std::ffi::{OsStr, OsString};
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The names in `dir`, `.` and `..` left out, in the order the filesystem
/// gives them. An error when `dir` cannot be opened; a read that fails
/// part way ends the listing there, as `readdir` does.
pub fn names(dir: &Path) -> std::io::Result<Vec<OsString>> {
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
    let mut entries = RawDir::new(&fd, &mut buf);
    let mut out = Vec::new();
    while let Some(Ok(e)) = entries.next() {
        let name = e.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push(OsStr::from_bytes(name).to_owned());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_of_a_directory_and_no_dot_entries() {
        let dir = tempfile::tempdir().unwrap();
        // More names than one read of the buffer holds.
        let mut want: Vec<OsString> = (0..300)
            .map(|i| OsString::from(format!("{i:03}.{}", "x".repeat(40))))
            .collect();
        want.push(".hidden".into());
        for n in &want {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        want.push("sub".into());
        let mut got = names(dir.path()).unwrap();
        got.sort();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn a_directory_that_cannot_be_opened_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = names(&dir.path().join("none")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        std::fs::write(dir.path().join("file"), b"").unwrap();
        assert!(names(&dir.path().join("file")).is_err());
    }
}
