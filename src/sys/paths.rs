//! Where programs are looked for when the caller gave no PATH: podman 4.3
//! calls the runtime's `kill` and `delete` with none, and hooks run with
//! only the environment their definition gives them.

/// A system's usual PATH, root's first.
pub const FALLBACK_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The metadata of `path` as a process whose root is `root` sees it:
/// symbolic links, absolute ones included, resolve inside `root` and `..`
/// never leaves it (`openat2` with `RESOLVE_IN_ROOT`), as they would for
/// the daemons of a node whose root is mounted at `root`.
pub fn metadata_in_root(
    root: &std::path::Path,
    path: &std::path::Path,
) -> std::io::Result<std::fs::Metadata> {
    use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let dir = std::fs::File::open(root)?;
    let relative = path.strip_prefix("/").unwrap_or(path);
    let relative = if relative.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        relative
    };
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_IN_ROOT);
    let fd = match openat2(dir.as_raw_fd(), relative, how) {
        Ok(fd) => fd,
        // A kernel before 5.6: the path under root, links as they are.
        Err(nix::errno::Errno::ENOSYS) => return std::fs::metadata(root.join(relative)),
        Err(e) => return Err(e.into()),
    };
    // SAFETY: openat2 returned a new descriptor that nothing else owns.
    let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.metadata()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_links_resolve_inside_the_root() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("usr/sbin")).unwrap();
        std::fs::create_dir_all(r.join("etc/alternatives")).unwrap();
        std::fs::write(r.join("etc/alternatives/runc"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/alternatives/runc", r.join("usr/sbin/runc")).unwrap();
        std::os::unix::fs::symlink(
            "../../../../../../etc/alternatives/runc",
            r.join("usr/sbin/up"),
        )
        .unwrap();
        std::os::unix::fs::symlink("/nowhere", r.join("usr/sbin/gone")).unwrap();
        for name in ["runc", "up"] {
            let m =
                metadata_in_root(r, std::path::Path::new(&format!("/usr/sbin/{name}"))).unwrap();
            assert!(m.is_file() && m.len() == 1, "{name}");
        }
        assert!(metadata_in_root(r, std::path::Path::new("/usr/sbin/gone")).is_err());
        assert!(metadata_in_root(r, std::path::Path::new("/"))
            .unwrap()
            .is_dir());
    }
}
