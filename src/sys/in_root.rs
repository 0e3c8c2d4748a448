//! Paths of a node whose root is mounted elsewhere (`install --root`,
//! deploy's host root), resolved as the node's own processes resolve them:
//! the root acts as `/`, so an absolute link target is taken inside the
//! root and `..` never climbs above it. The kernel does the walk
//! (`openat2` with `RESOLVE_IN_ROOT`); the path it reached is read back
//! from `/proc/self/fd`. Where `openat2` is missing, a node path is
//! refused rather than joined under the root, which would follow the
//! node's links on this host.
//!
//! Without a root the node is this host: a path is itself, except that a
//! config read and written through a link ([`Last::Follow`]) is its
//! target, so that the link stays a link.

use nix::errno::Errno;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Component, Path, PathBuf};

/// What becomes of a link in the last component of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Last {
    /// Followed: a file read and written through the node's link (a
    /// daemon's config), so the link stays and its target changes.
    Follow,
    /// Kept: the directory entry itself (a link or file that is created,
    /// replaced or removed as the entry it is).
    Entry,
}

/// Why a node path cannot be resolved; each names the path.
#[derive(Debug, thiserror::Error)]
pub enum InRootError {
    #[error("{}: cannot resolve it inside {}: openat2 with RESOLVE_IN_ROOT is not available (Linux before 5.6, or a seccomp filter); a plain join would follow the node's links on this host", path.display(), root.display())]
    Unavailable { root: PathBuf, path: PathBuf },
    #[error("{}: a symbolic link to {}, which does not exist", path.display(), target.display())]
    Dangling { path: PathBuf, target: PathBuf },
    #[error("{}: too many levels of symbolic links (a loop)", path.display())]
    Loop { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl From<InRootError> for std::io::Error {
    fn from(e: InRootError) -> Self {
        let kind = match &e {
            InRootError::Io { source, .. } => source.kind(),
            InRootError::Dangling { .. } => std::io::ErrorKind::NotFound,
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, e.to_string())
    }
}

/// A node's files as this process reaches them: under a root, or this
/// host's own when there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRoot {
    /// Canonical; `None` for this host (a root of `/` is this host too).
    root: Option<PathBuf>,
}

impl NodeRoot {
    /// The node under `root` (made canonical), or this host.
    pub fn new(root: Option<&Path>) -> std::io::Result<NodeRoot> {
        let root = match root {
            Some(r) => Some(super::realpath::realpath(r)?).filter(|r| r != Path::new("/")),
            None => None,
        };
        Ok(NodeRoot { root })
    }

    /// This host, no root.
    pub fn host() -> NodeRoot {
        NodeRoot { root: None }
    }

    /// The root, canonical; `None` for this host.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// Where a read or write of the node's file `node` goes here, links
    /// followed to the end (a missing file: where it would be created).
    pub fn file(&self, node: &Path) -> Result<PathBuf, InRootError> {
        match &self.root {
            Some(root) => resolve(root, node, Last::Follow),
            None => through_link(node),
        }
    }

    /// The node's directory entry `node` here: every directory above it
    /// resolved, a link in its last component kept.
    pub fn entry(&self, node: &Path) -> Result<PathBuf, InRootError> {
        match &self.root {
            Some(root) => resolve(root, node, Last::Entry),
            None => Ok(node.to_owned()),
        }
    }

    /// The node's path of `here` (a path this root resolved to).
    pub fn node_path(&self, here: &Path) -> PathBuf {
        match self.root.as_deref().map(|r| here.strip_prefix(r)) {
            Some(Ok(rel)) => Path::new("/").join(rel),
            _ => here.to_owned(),
        }
    }

    /// The metadata of the node's `node`, links followed inside the root.
    pub fn metadata(&self, node: &Path) -> std::io::Result<std::fs::Metadata> {
        std::fs::metadata(self.file(node)?)
    }
}

/// This host's `path`, or its target when it is a link.
fn through_link(path: &Path) -> Result<PathBuf, InRootError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {}
        _ => return Ok(path.to_owned()),
    }
    super::realpath::realpath(path).map_err(|source| match source.raw_os_error() {
        Some(nix::libc::ELOOP) => InRootError::Loop {
            path: path.to_owned(),
        },
        Some(nix::libc::ENOENT) => InRootError::Dangling {
            path: path.to_owned(),
            target: std::fs::read_link(path).unwrap_or_default(),
        },
        _ => InRootError::Io {
            path: path.to_owned(),
            source,
        },
    })
}

/// The node's `node` as this process reaches it under `root`, the root
/// acting as `/` (see [`Last`] for the last component). A path whose
/// directories do not all exist yet resolves as far as they do; the rest
/// is where they would be made.
pub fn resolve(root: &Path, node: &Path, last: Last) -> Result<PathBuf, InRootError> {
    let shown = root.join(node.strip_prefix("/").unwrap_or(node));
    let fail = |e: Errno| match e {
        Errno::ENOSYS => InRootError::Unavailable {
            root: root.to_owned(),
            path: shown.clone(),
        },
        Errno::ELOOP => InRootError::Loop {
            path: shown.clone(),
        },
        e => InRootError::Io {
            path: shown.clone(),
            source: e.into(),
        },
    };
    let root_fd: OwnedFd = File::open(root)
        .map_err(|source| InRootError::Io {
            path: root.to_owned(),
            source,
        })?
        .into();
    let root_real = real_path(root_fd.as_raw_fd(), &shown)?;
    let parts: Vec<Component> = node
        .components()
        .filter(|c| matches!(c, Component::Normal(_) | Component::ParentDir))
        .collect();
    let inside = |fd: &OwnedFd| -> Result<PathBuf, InRootError> {
        let p = real_path(fd.as_raw_fd(), &shown)?;
        if p.starts_with(&root_real) {
            Ok(p)
        } else {
            Err(InRootError::Io {
                path: shown.clone(),
                source: std::io::Error::other(format!(
                    "resolved to {}, outside the root",
                    p.display()
                )),
            })
        }
    };
    let name = match parts.last() {
        None => return Ok(root_real),
        Some(Component::Normal(n)) if last == Last::Entry => *n,
        // `..` last names a directory, which is itself.
        _ => match open_in(&root_fd, &joined(&parts), true) {
            Ok(fd) => return inside(&fd),
            Err(Errno::ENOENT) => match parts.last() {
                Some(Component::Normal(n)) => *n,
                _ => return Err(fail(Errno::ENOENT)),
            },
            Err(e) => return Err(fail(e)),
        },
    };
    let parent = &parts[..parts.len() - 1];
    // The longest part of the parent that exists; the rest is to be made.
    let mut cut = parent.len();
    let dir = loop {
        match open_in(&root_fd, &joined(&parent[..cut]), false) {
            Ok(fd) => break fd,
            Err(Errno::ENOENT) if cut > 0 => cut -= 1,
            Err(e) => return Err(fail(e)),
        }
    };
    let mut out = inside(&dir)?;
    let rest: Vec<&std::ffi::OsStr> = parent[cut..]
        .iter()
        .map(|c| c.as_os_str())
        .chain([name])
        .collect();
    if parent[cut..].contains(&Component::ParentDir) {
        return Err(fail(Errno::ENOENT));
    }
    // What is missing must be absent, not a link to nothing: a write
    // there would follow it on this host.
    let first = rest[0];
    let must_be_absent = cut < parent.len() || last == Last::Follow;
    match nix::sys::stat::fstatat(
        Some(dir.as_raw_fd()),
        first,
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    ) {
        Err(Errno::ENOENT) => {}
        Ok(st) if must_be_absent && st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFLNK => {
            let target = nix::fcntl::readlinkat(Some(dir.as_raw_fd()), first).unwrap_or_default();
            return Err(InRootError::Dangling {
                path: out.join(first),
                target: target.into(),
            });
        }
        Ok(_) if must_be_absent => return Err(fail(Errno::ENOTDIR)),
        Ok(_) => {}
        Err(e) => return Err(fail(e)),
    }
    out.extend(rest);
    Ok(out)
}

/// `parts` as a path relative to the root (`.` for none).
fn joined(parts: &[Component]) -> PathBuf {
    if parts.is_empty() {
        return PathBuf::from(".");
    }
    parts.iter().collect()
}

/// `path` opened (`O_PATH`) beneath `root`, the root as `/`: a directory,
/// or with `any` whatever it is, links followed to the end.
fn open_in(root: &OwnedFd, path: &Path, any: bool) -> Result<OwnedFd, Errno> {
    let mut flags = OFlag::O_PATH | OFlag::O_CLOEXEC;
    if !any {
        flags |= OFlag::O_DIRECTORY;
    }
    let how = OpenHow::new()
        .flags(flags)
        .resolve(ResolveFlag::RESOLVE_IN_ROOT);
    let fd = openat2(root.as_raw_fd(), path, how)?;
    // SAFETY: openat2 returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The path the kernel reached for `fd`.
fn real_path(fd: RawFd, shown: &Path) -> Result<PathBuf, InRootError> {
    std::fs::read_link(format!("/proc/self/fd/{fd}")).map_err(|source| InRootError::Io {
        path: shown.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A node tree: `/etc/containerd/config.toml -> /etc/k0s/containerd.toml`
    /// and friends, under a temporary root.
    fn node() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["etc/containerd", "etc/k0s", "usr/sbin", "etc/alternatives"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::write(r.join("etc/k0s/containerd.toml"), "version = 3\n").unwrap();
        std::fs::write(r.join("etc/alternatives/runc"), "x").unwrap();
        symlink(
            "/etc/k0s/containerd.toml",
            r.join("etc/containerd/config.toml"),
        )
        .unwrap();
        symlink(
            "../k0s/containerd.toml",
            r.join("etc/containerd/relative.toml"),
        )
        .unwrap();
        symlink("/etc/k0s", r.join("etc/k0s-link")).unwrap();
        symlink("/etc/alternatives/runc", r.join("usr/sbin/runc")).unwrap();
        symlink(
            "../../../../../../../etc/alternatives/runc",
            r.join("usr/sbin/up"),
        )
        .unwrap();
        symlink("/nowhere/at/all", r.join("etc/containerd/gone.toml")).unwrap();
        symlink("loop-b", r.join("etc/loop-a")).unwrap();
        symlink("loop-a", r.join("etc/loop-b")).unwrap();
        (dir, r)
    }

    fn at(r: &Path, node: &str, last: Last) -> Result<PathBuf, InRootError> {
        resolve(r, Path::new(node), last)
    }

    #[test]
    fn absolute_and_relative_links_resolve_inside_the_root() {
        let (_d, r) = node();
        let target = r.join("etc/k0s/containerd.toml");
        for p in [
            "/etc/containerd/config.toml",
            "/etc/containerd/relative.toml",
        ] {
            assert_eq!(at(&r, p, Last::Follow).unwrap(), target, "{p}");
        }
        // A link in a directory above is followed inside the root too.
        assert_eq!(
            at(&r, "/etc/k0s-link/containerd.toml", Last::Entry).unwrap(),
            target
        );
        assert_eq!(
            at(&r, "/usr/sbin/runc", Last::Follow).unwrap(),
            r.join("etc/alternatives/runc")
        );
    }

    #[test]
    fn dot_dot_stops_at_the_root() {
        let (_d, r) = node();
        assert_eq!(
            at(&r, "/usr/sbin/up", Last::Follow).unwrap(),
            r.join("etc/alternatives/runc")
        );
        assert_eq!(
            at(&r, "/../../../etc/k0s/containerd.toml", Last::Follow).unwrap(),
            r.join("etc/k0s/containerd.toml")
        );
        assert_eq!(at(&r, "/..", Last::Entry).unwrap(), r);
        assert_eq!(at(&r, "/", Last::Follow).unwrap(), r);
    }

    #[test]
    fn the_last_link_is_followed_only_when_asked() {
        let (_d, r) = node();
        assert_eq!(
            at(&r, "/etc/containerd/config.toml", Last::Entry).unwrap(),
            r.join("etc/containerd/config.toml")
        );
        // A link to nothing is kept as an entry, refused as a file.
        assert_eq!(
            at(&r, "/etc/containerd/gone.toml", Last::Entry).unwrap(),
            r.join("etc/containerd/gone.toml")
        );
        let e = at(&r, "/etc/containerd/gone.toml", Last::Follow).unwrap_err();
        assert!(
            matches!(&e, InRootError::Dangling { target, .. } if target == Path::new("/nowhere/at/all")),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "{}/etc/containerd/gone.toml: a symbolic link to /nowhere/at/all, which does not exist",
                r.display()
            )
        );
    }

    #[test]
    fn missing_files_and_directories_resolve_where_they_would_be_made() {
        let (_d, r) = node();
        assert_eq!(
            at(&r, "/etc/k0s-link/new.toml", Last::Follow).unwrap(),
            r.join("etc/k0s/new.toml")
        );
        assert_eq!(
            at(&r, "/etc/k0s-link/a/b/link", Last::Entry).unwrap(),
            r.join("etc/k0s/a/b/link")
        );
        // A directory on the way that is a link to nothing is refused.
        let e = at(&r, "/etc/containerd/gone.toml/x", Last::Entry).unwrap_err();
        assert!(matches!(e, InRootError::Dangling { .. }), "{e}");
    }

    #[test]
    fn a_link_loop_is_refused() {
        let (_d, r) = node();
        for last in [Last::Follow, Last::Entry] {
            let e = at(&r, "/etc/loop-a/config.toml", last).unwrap_err();
            assert!(matches!(e, InRootError::Loop { .. }), "{e}");
        }
        let e = at(&r, "/etc/loop-a", Last::Follow).unwrap_err();
        assert!(e.to_string().contains("a loop"), "{e}");
        // The loop's own entry is an entry like any other.
        assert_eq!(
            at(&r, "/etc/loop-a", Last::Entry).unwrap(),
            r.join("etc/loop-a")
        );
    }

    #[test]
    fn without_a_root_a_path_is_itself_or_its_links_target() {
        let (_d, r) = node();
        let host = NodeRoot::host();
        let link = r.join("etc/containerd/relative.toml");
        assert_eq!(host.entry(&link).unwrap(), link);
        assert_eq!(host.file(&link).unwrap(), r.join("etc/k0s/containerd.toml"));
        let plain = r.join("etc/k0s/containerd.toml");
        assert_eq!(host.file(&plain).unwrap(), plain);
        let missing = r.join("etc/none.toml");
        assert_eq!(host.file(&missing).unwrap(), missing);
        let e = host.file(&r.join("etc/containerd/gone.toml")).unwrap_err();
        assert!(matches!(e, InRootError::Dangling { .. }), "{e}");
        assert_eq!(NodeRoot::new(Some(Path::new("/"))).unwrap(), host);
    }

    #[test]
    fn a_root_maps_node_paths_both_ways() {
        let (_d, r) = node();
        let n = NodeRoot::new(Some(&r)).unwrap();
        let here = n.file(Path::new("/etc/containerd/config.toml")).unwrap();
        assert_eq!(n.node_path(&here), Path::new("/etc/k0s/containerd.toml"));
        let m = n.metadata(Path::new("/usr/sbin/runc")).unwrap();
        assert!(m.is_file() && m.len() == 1);
    }
}
