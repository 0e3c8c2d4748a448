//! A container path resolved the way a runtime resolves a mount
//! destination when it makes the mount: inside the rootfs, with the mounts
//! it already made in place. runc walks it with securejoin, crun with
//! openat2 (`RESOLVE_IN_ROOT`) or its own walk: a symbolic link is
//! followed, an absolute one from the container's root and a relative one
//! from the link's directory, and `..` climbs from where the walk is (a
//! link's target, not the text), never above the root. A missing
//! component is where the runtime makes a directory.
//!
//! The walk here is one component at a time, each looked up in whatever
//! provides that place: the rootfs, or the content of the latest mount at
//! or above it ([`Layer`]). A host directory is walked with `openat`
//! (`O_PATH | O_NOFOLLOW`) and `readlinkat` from an open descriptor, so no
//! link is ever followed on the host: a link's target is read and walked
//! again in the container's terms. Nothing here knows about specs.

use nix::errno::Errno;
use nix::fcntl::{open, openat, readlinkat, OFlag};
use nix::sys::stat::{fstat, FileStat, Mode, SFlag};
use std::borrow::Cow;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::hash::{BuildHasher, Hasher};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Links followed in one walk before it is given up, as securejoin
/// (runc) gives up after 255.
pub const MAX_LINKS: usize = 255;

/// What a mount puts at its destination, for the walks below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layer {
    /// A host path (a bind's source, the host's /sys), opened as the kernel
    /// opens a bind's source (links on the host followed); `recursive`:
    /// the mounts below it on the host come with it.
    Host { path: PathBuf, recursive: bool },
    /// A fresh file system (tmpfs, devpts, mqueue, cgroup): plain
    /// directories, no links.
    Fresh,
    /// procfs: its process directories (`/proc/<pid>`, `self`,
    /// `thread-self`, and the links into them) are the runtime's view at
    /// mount time, not a path that can be walked now.
    Proc,
    /// Anything else with content (a block device's file system, overlay,
    /// ...), not known before it is mounted.
    Unknown,
}

/// The mounts a walk may meet, as the caller holds them: the walker keeps
/// only each mount's number, so a spec of many mounts costs no copy of
/// each one, and asks here when a walk enters a mount or names it.
pub trait MountTable {
    /// Mount `id`'s destination as written (clean): where it was made,
    /// unless [`Walker::mount`] was told otherwise.
    fn destination(&self, id: usize) -> Cow<'_, str>;
    /// What mount `id` puts at its destination.
    fn layer(&self, id: usize) -> Layer;
    /// Mount `id`'s name in reasons.
    fn label(&self, id: usize) -> String;
}

/// Why a destination cannot be resolved now.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("the rootfs {}: {}", path.display(), errno.desc())]
    Rootfs { path: PathBuf, errno: Errno },
    #[error("{at} (in {within}): {}", errno.desc())]
    Io {
        at: String,
        within: String,
        errno: Errno,
    },
    #[error("{at}: more than {MAX_LINKS} symbolic links followed (a loop?)")]
    TooManyLinks { at: String },
    #[error("{at}: passes through /proc's link or directory of a process ({name}), which depends on the runtime's process at mount time")]
    Proc { at: String, name: String },
    #[error("{at}: below {within}, whose content is not known before it is mounted")]
    Unknown { at: String, within: String },
    #[error("{at}: below {within}, a bind that does not carry the host's mount there, so what the container sees there is not known")]
    NotCarried { at: String, within: String },
}

/// A destination resolved: the container path it lands on (components,
/// none a link) and the links followed on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub components: Vec<OsString>,
    /// Each `PATH -> TARGET (in WHERE)`.
    pub links: Vec<String>,
}

impl Resolved {
    /// The path, absolute and clean (not UTF-8 shown lossily).
    pub fn path(&self) -> String {
        container_path(&self.components)
    }
}

/// The path's bytes, as [`container_path`] writes it but exact.
fn path_bytes<S: AsRef<OsStr>>(components: &[S]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in components {
        out.push(b'/');
        out.extend_from_slice(c.as_ref().as_bytes());
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

fn container_path<S: AsRef<OsStr>>(components: &[S]) -> String {
    if components.is_empty() {
        return "/".into();
    }
    let mut out = String::new();
    for c in components {
        out.push('/');
        out.push_str(&c.as_ref().to_string_lossy());
    }
    out
}

/// What is at a place of the walk.
#[derive(Clone)]
enum Node {
    /// A directory on the host: walked further with `openat`. `layer` is
    /// the mount it belongs to (`None`: the rootfs).
    Dir {
        fd: Rc<OwnedFd>,
        dev: u64,
        recursive: bool,
        layer: Option<u32>,
    },
    /// Nothing that could hold a link: missing (the runtime makes
    /// directories), a file (the runtime fails below it), a fresh file
    /// system.
    Plain,
    /// The root of a procfs.
    Proc,
    /// The root of a mount whose content is not known.
    Unknown(u32),
}

struct Frame {
    name: OsString,
    /// The mount that provides this place (`None`: the rootfs).
    provider: Option<u32>,
    node: Node,
}

/// The rootfs and the mounts made so far, in the order they were made:
/// for each, its number in the [`MountTable`]; an index from where it was
/// made to its place in that order; where it was made only when that is
/// not its destination as written; its content once a walk entered it.
pub struct Walker {
    rootfs: Node,
    made: Vec<u32>,
    /// A hash of the path (32 bits of it: half the index's memory) to the
    /// latest mount made there; paths of the same hash are told apart by
    /// comparing them.
    index: HashMap<u32, u32>,
    hasher: RandomState,
    elsewhere: HashMap<u32, Box<[u8]>>,
    opened: HashMap<u32, Node>,
}

fn owned(fd: std::os::fd::RawFd) -> OwnedFd {
    // SAFETY: each caller passes a descriptor a system call just returned,
    // which nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn is_link(st: &FileStat) -> bool {
    SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK
}

fn is_dir(st: &FileStat) -> bool {
    SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR
}

/// A name in /proc's top directory that is a process's directory or a
/// link into one (`mounts`, `net`).
fn names_a_process(name: &OsStr) -> bool {
    let b = name.as_bytes();
    (!b.is_empty() && b.iter().all(u8::is_ascii_digit))
        || matches!(b, b"self" | b"thread-self" | b"mounts" | b"net")
}

impl Walker {
    /// The rootfs at `rootfs`, opened as the runtime opens it (links on
    /// the host followed: the path is the container manager's, not the
    /// image's).
    /// `mounts`: how many mounts will be made, so the index is made once.
    pub fn new(rootfs: &Path, mounts: usize) -> Result<Walker, WalkError> {
        let fail = |errno| WalkError::Rootfs {
            path: rootfs.to_owned(),
            errno,
        };
        let fd = owned(
            open(
                rootfs,
                OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map_err(fail)?,
        );
        let dev = fstat(fd.as_raw_fd()).map_err(fail)?.st_dev;
        Ok(Walker {
            rootfs: Node::Dir {
                fd: Rc::new(fd),
                dev,
                // runc and crun bind the rootfs recursively.
                recursive: true,
                layer: None,
            },
            made: Vec::with_capacity(mounts),
            index: HashMap::with_capacity(mounts),
            hasher: RandomState::new(),
            elsewhere: HashMap::new(),
            opened: HashMap::new(),
        })
    }

    fn key<S: AsRef<OsStr>>(&self, components: &[S]) -> u32 {
        let mut h = self.hasher.build_hasher();
        for c in components {
            h.write(c.as_ref().as_bytes());
            h.write_u8(0);
        }
        h.finish() as u32
    }

    /// Where the mount made `k`-th was made, exactly.
    fn made_at<'t>(&'t self, k: u32, table: &'t impl MountTable) -> Cow<'t, [u8]> {
        match self.elsewhere.get(&k) {
            Some(at) => Cow::Borrowed(at),
            None => match table.destination(self.made[k as usize] as usize) {
                Cow::Borrowed(d) => Cow::Borrowed(d.as_bytes()),
                Cow::Owned(d) => Cow::Owned(d.into_bytes()),
            },
        }
    }

    /// Record that mount `id` of `table` was made at `at` (its destination,
    /// resolved): later walks through that place go into its layer.
    pub fn mount(&mut self, at: &Resolved, id: usize, table: &impl MountTable) {
        let k = u32::try_from(self.made.len()).expect("fewer than 2^32 mounts");
        self.made
            .push(u32::try_from(id).expect("a mount number below 2^32"));
        let exact = path_bytes(&at.components);
        if exact != table.destination(id).as_bytes() {
            self.elsewhere.insert(k, exact.into_boxed_slice());
        }
        let key = self.key(&at.components);
        self.index.insert(key, k);
    }

    fn within(&self, layer: Option<u32>, table: &impl MountTable) -> String {
        match layer {
            None => "the rootfs".into(),
            Some(k) => table.label(self.made[k as usize] as usize),
        }
    }

    /// What mount `k` puts at its destination.
    fn node_of(&mut self, k: u32, table: &impl MountTable) -> Result<Node, WalkError> {
        if let Some(node) = self.opened.get(&k) {
            return Ok(node.clone());
        }
        let id = self.made[k as usize] as usize;
        let node = match &table.layer(id) {
            Layer::Fresh => Node::Plain,
            Layer::Proc => Node::Proc,
            Layer::Unknown => Node::Unknown(k),
            Layer::Host { path, recursive } => {
                match open(path, OFlag::O_PATH | OFlag::O_CLOEXEC, Mode::empty()) {
                    // Nothing to bind: the runtime fails to make the mount.
                    Err(Errno::ENOENT | Errno::ENOTDIR) => Node::Plain,
                    Err(errno) => {
                        return Err(WalkError::Io {
                            at: path.display().to_string(),
                            within: table.label(id),
                            errno,
                        })
                    }
                    Ok(fd) => {
                        let fd = owned(fd);
                        let st = fstat(fd.as_raw_fd()).map_err(|errno| WalkError::Io {
                            at: path.display().to_string(),
                            within: table.label(id),
                            errno,
                        })?;
                        if is_dir(&st) {
                            Node::Dir {
                                fd: Rc::new(fd),
                                dev: st.st_dev,
                                recursive: *recursive,
                                layer: Some(k),
                            }
                        } else {
                            Node::Plain
                        }
                    }
                }
            }
        };
        self.opened.insert(k, node.clone());
        Ok(node)
    }

    /// The latest mount made exactly at `at`.
    fn mounted_at(&self, at: &[OsString], table: &impl MountTable) -> Option<u32> {
        let k = *self.index.get(&self.key(at))?;
        let want = path_bytes(at);
        if *self.made_at(k, table) == *want {
            return Some(k);
        }
        // Another path with the same hash: look at every mount.
        (0..self.made.len() as u32)
            .rev()
            .find(|&k| *self.made_at(k, table) == *want)
    }

    /// The container's root: the latest mount at `/`, else the rootfs.
    fn root_frame(&mut self, table: &impl MountTable) -> Result<Frame, WalkError> {
        Ok(match self.mounted_at(&[], table) {
            Some(k) => Frame {
                name: OsString::new(),
                provider: Some(k),
                node: self.node_of(k, table)?,
            },
            None => Frame {
                name: OsString::new(),
                provider: None,
                node: self.rootfs.clone(),
            },
        })
    }

    /// Where `destination` lands, with the mounts recorded so far in place.
    pub fn resolve(
        &mut self,
        destination: &str,
        table: &impl MountTable,
    ) -> Result<Resolved, WalkError> {
        let mut stack = vec![self.root_frame(table)?];
        // The components still to walk, the next one last.
        let mut todo: Vec<OsString> = split(OsStr::new(destination));
        let mut links = Vec::new();
        while let Some(name) = todo.pop() {
            if name == ".." {
                if stack.len() > 1 {
                    stack.pop();
                }
                continue;
            }
            let mut here: Vec<OsString> = stack[1..].iter().map(|f| f.name.clone()).collect();
            here.push(name.clone());
            let (provider, node) = {
                let top = stack.last().expect("the root frame stays");
                (top.provider, top.node.clone())
            };
            // A mount made here after the one providing the directory
            // above covers whatever that one has here.
            if let Some(k) = self.mounted_at(&here, table) {
                if provider.map_or(true, |p| k > p) {
                    let node = self.node_of(k, table)?;
                    stack.push(Frame {
                        name,
                        provider: Some(k),
                        node,
                    });
                    continue;
                }
            }
            let node = match &node {
                Node::Plain => Node::Plain,
                Node::Proc if names_a_process(&name) => {
                    return Err(WalkError::Proc {
                        at: container_path(&here),
                        name: name.to_string_lossy().into_owned(),
                    })
                }
                // Below /proc's other entries: no link the walk could take.
                Node::Proc => Node::Plain,
                Node::Unknown(k) => {
                    return Err(WalkError::Unknown {
                        at: container_path(&here),
                        within: table.label(self.made[*k as usize] as usize),
                    })
                }
                Node::Dir {
                    fd,
                    dev,
                    recursive,
                    layer,
                } => {
                    let io = |errno| WalkError::Io {
                        at: container_path(&here),
                        within: self.within(*layer, table),
                        errno,
                    };
                    let child = match openat(
                        Some(fd.as_raw_fd()),
                        name.as_os_str(),
                        OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                        Mode::empty(),
                    ) {
                        Ok(child) => owned(child),
                        Err(Errno::ENOENT | Errno::ENOTDIR) => {
                            stack.push(Frame {
                                name,
                                provider,
                                node: Node::Plain,
                            });
                            continue;
                        }
                        Err(errno) => return Err(io(errno)),
                    };
                    let st = fstat(child.as_raw_fd()).map_err(io)?;
                    if is_link(&st) {
                        if links.len() == MAX_LINKS {
                            return Err(WalkError::TooManyLinks {
                                at: container_path(&here),
                            });
                        }
                        let target = readlinkat(Some(child.as_raw_fd()), "").map_err(io)?;
                        links.push(format!(
                            "{} -> {} (in {})",
                            container_path(&here),
                            target.to_string_lossy(),
                            self.within(*layer, table)
                        ));
                        if target.as_bytes().starts_with(b"/") {
                            stack.truncate(1);
                        }
                        todo.extend(split(&target));
                        continue;
                    }
                    if !is_dir(&st) {
                        Node::Plain
                    } else if !recursive && st.st_dev != *dev {
                        return Err(WalkError::NotCarried {
                            at: container_path(&here),
                            within: self.within(*layer, table),
                        });
                    } else {
                        Node::Dir {
                            fd: Rc::new(child),
                            dev: *dev,
                            recursive: *recursive,
                            layer: *layer,
                        }
                    }
                }
            };
            stack.push(Frame {
                name,
                provider,
                node,
            });
        }
        Ok(Resolved {
            components: stack.drain(1..).map(|f| f.name).collect(),
            links,
        })
    }
}

/// A path's components to walk, last first (so the next is popped), without
/// empty and `.` ones; `..` kept, it climbs from where the walk is.
fn split(path: &OsStr) -> Vec<OsString> {
    path.as_bytes()
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .rev()
        .map(|c| OsStr::from_bytes(c).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    /// A rootfs of the kinds of links the walk meets.
    fn rootfs() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for d in ["sys", "etc", "var/lib", "proc", "data", "plain"] {
            fs::create_dir_all(r.join(d)).unwrap();
        }
        fs::write(r.join("etc/file"), "").unwrap();
        symlink("sys", r.join("hsys")).unwrap();
        symlink("/sys/fs", r.join("x")).unwrap();
        symlink("../../sys", r.join("var/lib/up")).unwrap();
        symlink("hsys", r.join("chain")).unwrap();
        symlink("/../../../../sys", r.join("abs-up")).unwrap();
        symlink("loop-b", r.join("loop-a")).unwrap();
        symlink("loop-a", r.join("loop-b")).unwrap();
        symlink("/nowhere/sys", r.join("dangling")).unwrap();
        // A link out of the rootfs on the host: must be read, not followed.
        symlink("/etc", r.join("etc-link")).unwrap();
        dir
    }

    /// Mounts as a test makes them: destination as written, layer, label.
    #[derive(Default)]
    struct Table(Vec<(String, Layer, String)>);

    impl MountTable for Table {
        fn destination(&self, id: usize) -> Cow<'_, str> {
            Cow::Borrowed(&self.0[id].0)
        }
        fn layer(&self, id: usize) -> Layer {
            self.0[id].1.clone()
        }
        fn label(&self, id: usize) -> String {
            self.0[id].2.clone()
        }
    }

    /// Make the next mount of `t` at `at` (written as `at`'s path).
    fn put(w: &mut Walker, t: &mut Table, at: &Resolved, layer: Layer, label: &str) {
        t.0.push((at.path(), layer, label.into()));
        w.mount(at, t.0.len() - 1, t);
    }

    fn at(w: &mut Walker, t: &Table, d: &str) -> String {
        w.resolve(d, t)
            .unwrap_or_else(|e| panic!("{d}: {e}"))
            .path()
    }

    #[test]
    fn links_in_the_rootfs_are_followed_inside_it() {
        let r = rootfs();
        let mut w = Walker::new(r.path(), 0).unwrap();
        let t = Table::default();
        for (dest, want) in [
            ("/hsys", "/sys"),
            ("hsys/", "/sys"),
            ("/x/cgroup", "/sys/fs/cgroup"),
            ("/var/lib/up/kernel", "/sys/kernel"),
            ("/chain/fs", "/sys/fs"),
            ("/abs-up", "/sys"),
            ("/../../hsys", "/sys"),
            ("/etc/./file", "/etc/file"),
            ("/dangling/x", "/nowhere/sys/x"),
            ("/etc-link/passwd", "/etc/passwd"),
            ("/plain/new/dir", "/plain/new/dir"),
            // `..` climbs from the link's target, not from the text.
            ("/x/../kernel", "/sys/kernel"),
            ("/hsys/..", "/"),
            ("/etc/file/below", "/etc/file/below"),
        ] {
            assert_eq!(at(&mut w, &t, dest), want, "{dest}");
        }
        let got = w.resolve("/chain/fs", &t).unwrap();
        assert_eq!(
            got.links,
            [
                "/chain -> hsys (in the rootfs)",
                "/hsys -> sys (in the rootfs)"
            ]
        );
        assert!(w.resolve("/sys/fs", &t).unwrap().links.is_empty());
    }

    #[test]
    fn a_loop_is_given_up_after_the_bound() {
        let r = rootfs();
        let mut w = Walker::new(r.path(), 0).unwrap();
        let t = Table::default();
        let e = w.resolve("/loop-a/x", &t).unwrap_err();
        assert!(matches!(e, WalkError::TooManyLinks { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "/loop-b: more than 255 symbolic links followed (a loop?)"
        );
        let e = Walker::new(&r.path().join("missing"), 0).err().unwrap();
        assert!(
            e.to_string()
                .ends_with("/missing: No such file or directory"),
            "{e}"
        );
    }

    #[test]
    fn earlier_mounts_provide_what_is_below_them() {
        let r = rootfs();
        let host = tempfile::tempdir().unwrap();
        fs::create_dir(host.path().join("dir")).unwrap();
        symlink("/sys", host.path().join("to-sys")).unwrap();
        symlink("../../sys/kernel", host.path().join("dir/rel")).unwrap();
        let mut w = Walker::new(r.path(), 0).unwrap();
        let mut t = Table::default();
        let data = w.resolve("/data", &t).unwrap();
        put(
            &mut w,
            &mut t,
            &data,
            Layer::Host {
                path: host.path().to_owned(),
                recursive: true,
            },
            "mounts[0], a bind of the host",
        );
        assert_eq!(at(&mut w, &t, "/data/to-sys/fs/cgroup"), "/sys/fs/cgroup");
        assert_eq!(at(&mut w, &t, "/data/dir/rel"), "/sys/kernel");
        assert_eq!(
            w.resolve("/data/to-sys", &t).unwrap().links,
            ["/data/to-sys -> /sys (in mounts[0], a bind of the host)"]
        );
        // A tmpfs over /hsys hides the image's link there.
        let hsys = Resolved {
            components: vec!["hsys".into()],
            links: vec![],
        };
        put(&mut w, &mut t, &hsys, Layer::Fresh, "mounts[1] (tmpfs)");
        assert_eq!(at(&mut w, &t, "/hsys/x"), "/hsys/x");
        // A later mount above an earlier one covers it.
        let root_data = w.resolve("/data", &t).unwrap();
        put(
            &mut w,
            &mut t,
            &root_data,
            Layer::Fresh,
            "mounts[2] (tmpfs)",
        );
        assert_eq!(at(&mut w, &t, "/data/to-sys/fs"), "/data/to-sys/fs");
        // Unknown content, and procfs's process links, cannot be walked.
        let var = w.resolve("/var", &t).unwrap();
        put(
            &mut w,
            &mut t,
            &var,
            Layer::Unknown,
            "mounts[3] (ext4 at /var)",
        );
        assert_eq!(at(&mut w, &t, "/var"), "/var");
        let e = w.resolve("/var/lib", &t).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/var/lib: below mounts[3] (ext4 at /var), whose content is not known before it is mounted"
        );
        let proc = w.resolve("/proc", &t).unwrap();
        put(&mut w, &mut t, &proc, Layer::Proc, "mounts[4] (proc)");
        assert_eq!(at(&mut w, &t, "/proc/sys/kernel"), "/proc/sys/kernel");
        for p in [
            "/proc/self/root/sys",
            "/proc/1/cwd",
            "/proc/thread-self",
            "/proc/net/x",
        ] {
            assert!(
                matches!(w.resolve(p, &t), Err(WalkError::Proc { .. })),
                "{p}"
            );
        }
        // A bind of what is not there: nothing below it to follow.
        let plain = w.resolve("/plain", &t).unwrap();
        put(
            &mut w,
            &mut t,
            &plain,
            Layer::Host {
                path: host.path().join("missing"),
                recursive: true,
            },
            "mounts[5]",
        );
        assert_eq!(at(&mut w, &t, "/plain/a"), "/plain/a");
    }

    #[test]
    fn a_mount_made_elsewhere_than_written_is_found_where_it_was_made() {
        let r = rootfs();
        let mut w = Walker::new(r.path(), 0).unwrap();
        let mut t = Table::default();
        // Written /hsys, made at /sys through the image's link.
        let sys = w.resolve("/hsys", &t).unwrap();
        t.0.push(("/hsys".into(), Layer::Unknown, "mounts[0]".into()));
        w.mount(&sys, 0, &t);
        let e = w.resolve("/sys/kernel", &t).unwrap_err();
        assert!(matches!(e, WalkError::Unknown { .. }), "{e}");
        // The image's /hsys link still leads there.
        let e = w.resolve("/hsys/kernel", &t).unwrap_err();
        assert!(matches!(e, WalkError::Unknown { .. }), "{e}");
        // Many mounts: each found where it was made, the latest first.
        for i in 1..2000 {
            let at = w.resolve(&format!("/data/d{i}"), &t).unwrap();
            put(&mut w, &mut t, &at, Layer::Fresh, "a tmpfs");
        }
        let last = w.resolve("/data/d1999", &t).unwrap();
        put(&mut w, &mut t, &last, Layer::Unknown, "the last");
        assert!(w.resolve("/data/d1999/x", &t).is_err());
        assert_eq!(at(&mut w, &t, "/data/d1998/x"), "/data/d1998/x");
    }

    #[test]
    fn a_plain_bind_does_not_carry_the_hosts_mounts_below_it() {
        let r = rootfs();
        for (recursive, want) in [(true, Ok("/data/proc/x")), (false, Err(()))] {
            let mut w = Walker::new(r.path(), 0).unwrap();
            let mut t = Table::default();
            let data = w.resolve("/data", &t).unwrap();
            put(
                &mut w,
                &mut t,
                &data,
                Layer::Host {
                    path: "/".into(),
                    recursive,
                },
                "mounts[0], a bind of /",
            );
            // The host's /proc is a mount of its own below /.
            let got = w.resolve("/data/proc/x", &t).map(|r| r.path());
            match (got, want) {
                (Ok(p), Ok(w)) => assert_eq!(p, w),
                (Err(e), Err(())) => assert_eq!(
                    e.to_string(),
                    "/data/proc: below mounts[0], a bind of /, a bind that does not carry the host's mount there, so what the container sees there is not known"
                ),
                (got, want) => panic!("{recursive}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_mount_at_the_root_provides_everything() {
        let r = rootfs();
        let host = tempfile::tempdir().unwrap();
        let mut w = Walker::new(r.path(), 0).unwrap();
        let mut t = Table::default();
        let root = w.resolve("/hsys/..", &t).unwrap();
        assert_eq!(root.path(), "/");
        put(
            &mut w,
            &mut t,
            &root,
            Layer::Host {
                path: host.path().to_owned(),
                recursive: true,
            },
            "mounts[0]",
        );
        // The image's /hsys link is covered.
        assert_eq!(at(&mut w, &t, "/hsys"), "/hsys");
    }
}
