//! Gathering the host facts the engine needs. Only what the spec asks about
//! is read: a container without namespace paths costs no system call here.

use crate::runtime::RealRuntime;
use crate::sys::{dest_walk, mountinfo, procfs};
use nix::sys::stat::{fstat, stat};
use oci_spec::runtime::LinuxNamespaceType;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use userns_hostnet_engine::facts::{
    proc_name, Extent, HostFacts, IdMaps, MountDestination, NsFacts, NsId, ResolvedDestination,
    SubIds, SysSource,
};
use userns_hostnet_engine::fields::Namespace;
use userns_hostnet_engine::policy::{AllowedRanges, IdRange, Policy};

/// Why a host fact could not be read. The engine gets it as text, in the
/// refusal it words.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A namespace file could not be opened or examined.
    #[error("{}", .0.desc())]
    Namespace(nix::errno::Errno),
    #[error("NS_GET_USERNS: {}", .0.desc())]
    NsGetUserns(nix::errno::Errno),
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: unexpected contents", path.display())]
    IdMapContents { path: PathBuf },
    #[error(
        "no process is in the user namespace of {path}, so its uid_map and gid_map cannot be read"
    )]
    NoProcessInUserNs { path: String },
    #[error("{}: no range for {user}", path.display())]
    NoSubidRange { path: PathBuf, user: String },
}

fn read_text(path: PathBuf) -> Result<String, HostError> {
    std::fs::read_to_string(&path).map_err(|source| HostError::Read { path, source })
}

// NS_GET_USERNS: a descriptor for the user namespace owning a namespace.
nix::ioctl_none!(ns_get_userns, 0xb7, 0x1);

fn ns_id(st: &nix::sys::stat::FileStat) -> NsId {
    NsId {
        dev: st.st_dev,
        ino: st.st_ino,
    }
}

/// The namespace at `path`; with `owner`, also the user namespace owning it.
pub fn namespace_facts(path: &str, owner: bool) -> Result<NsFacts, HostError> {
    let id = ns_id(&stat(path).map_err(HostError::Namespace)?);
    if !owner {
        return Ok(NsFacts { id, owner: None });
    }
    let fd = nix::fcntl::open(
        path,
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(HostError::Namespace)?;
    // SAFETY: `open` just returned this descriptor and nothing else owns it.
    let ns = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: NS_GET_USERNS takes no argument and returns a new descriptor.
    let user = unsafe { ns_get_userns(ns.as_raw_fd()) }.map_err(HostError::NsGetUserns)?;
    // SAFETY: the ioctl returned a new descriptor that we now own.
    let user = unsafe { OwnedFd::from_raw_fd(user) };
    let owner = ns_id(&fstat(user.as_raw_fd()).map_err(HostError::Namespace)?);
    Ok(NsFacts {
        id,
        owner: Some(owner),
    })
}

/// The namespace facts for a spec's namespaces: the namespaces it joins by
/// path (with the owner of a network namespace), the runtime's own of the
/// same kinds, and the maps of a user namespace it joins. Nothing is read
/// for a spec without a user namespace.
pub fn namespace_facts_of(namespaces: &[Namespace]) -> HostFacts {
    let mut facts = HostFacts::default();
    if !namespaces
        .iter()
        .any(|n| n.kind == LinuxNamespaceType::User)
    {
        return facts;
    }
    for n in namespaces {
        let Some(path) = &n.path else { continue };
        let owner = n.kind == LinuxNamespaceType::Network;
        let found = namespace_facts(path, owner).map_err(text);
        if n.kind == LinuxNamespaceType::User {
            let maps = match &found {
                Ok(ns) => joined_user_maps(path, ns.id).map_err(text),
                Err(why) => Err(why.clone()),
            };
            facts.joined_maps.insert(path.clone(), maps);
        }
        facts.namespaces.insert(path.clone(), found);
        if n.kind != LinuxNamespaceType::User {
            // Whether a joined namespace is the runtime's own: the wrapper
            // execs the runtime, so its namespaces are the runtime's.
            let name = proc_name(n.kind);
            if let Ok(own) = namespace_facts(&format!("/proc/self/ns/{name}"), false) {
                facts.runtime_namespaces.insert(name, own.id);
            }
        }
    }
    facts
}

/// The facts the policy asks for: the subordinate ranges of the user it
/// names, if it names one.
pub fn add_policy_facts(facts: &mut HostFacts, policy: &Policy) {
    if let AllowedRanges::SubidUser(user) = &policy.idmap.allowed_ranges {
        facts.subids = Some(read_subids(user, Path::new("/etc")).map_err(text));
    }
}

/// For each bind source of the spec: what it is, seen from the host's
/// /sys ([`SysSource`]). A source is resolved as the runtime will resolve
/// it: a relative one in the bundle directory (runc joins it to the
/// bundle's real path as text, the kernel walks it from the bundle: both
/// are resolved and the worse kept), links and `/proc/PID/root` followed
/// by the kernel (`open(O_PATH)`), then known by the device and inode it
/// opened and the mount it is on. Costs a few system calls per bind, so
/// only a converted spec asks.
pub fn host_sys_sources(
    spec_doc: &userns_hostnet_engine::Spec,
    relative_bases: &[&Path],
) -> BTreeMap<String, SysSource> {
    let mut out = BTreeMap::new();
    let Ok(mounts) = spec_doc.mounts() else {
        return out;
    };
    let mut view: Option<SysView> = None;
    for (i, m) in mounts.iter().enumerate() {
        if !m.is_bind(i).unwrap_or(false) {
            continue;
        }
        let Ok(Some(source)) = m.str_member(i, "source") else {
            continue;
        };
        let source: &str = &source;
        if out.contains_key(source) {
            continue;
        }
        let view = view.get_or_insert_with(SysView::read);
        let kind = classify_source(source, relative_bases, view);
        // A source that is nothing of /sys, and whose cleaned path says
        // so too, is left out: the rules judge a source missing here by
        // that path alone, to the same answer. Most binds are such, and a
        // spec with tens of thousands of them would otherwise hold an
        // entry each (about 110 bytes) through the create.
        if kind == SysSource::Other && !sys_by_path(source) {
            continue;
        }
        out.insert(source.to_owned(), kind);
    }
    out
}

/// Would the rules take `source`, with no fact about it, for part of the
/// /sys tree or a parent of it ([`HostFacts::host_sys_sources`]): does
/// its cleaned path name `/`, `/sys` or something below `/sys`?
fn sys_by_path(source: &str) -> bool {
    let clean = userns_hostnet_engine::fields::clean_path(source);
    clean == "/" || clean == "/sys" || userns_hostnet_engine::path::is_below(&clean, "/sys")
}

/// What one source is: each spelling the runtimes may take of it resolved
/// (a relative one in each of `relative_bases`), the worse kept.
pub fn classify_source(source: &str, relative_bases: &[&Path], view: &SysView) -> SysSource {
    let spellings: Vec<PathBuf> = if source.starts_with('/') {
        let clean = userns_hostnet_engine::fields::clean_path(source);
        let mut v = vec![PathBuf::from(source)];
        if clean != source.trim_end_matches('/') || source.ends_with("/.") {
            v.push(PathBuf::from(clean));
        }
        v
    } else {
        if relative_bases.is_empty() {
            return SysSource::Unresolved(
                "a relative source, and the directory it is relative to is not known".into(),
            );
        }
        let mut v = Vec::new();
        for base in relative_bases {
            let real = match crate::sys::realpath::realpath(base) {
                Ok(real) => real,
                Err(e) => return SysSource::Unresolved(format!("{}: {e}", base.display())),
            };
            v.push(base.join(source));
            v.push(PathBuf::from(userns_hostnet_engine::fields::clean_path(
                &format!("{}/{source}", real.display()),
            )));
        }
        v
    };
    spellings
        .iter()
        .map(|p| view.classify(p))
        .reduce(SysSource::worst)
        .unwrap_or(SysSource::Other)
}

/// The /sys tree as this process sees it (the runtime it execs sees the
/// same): /sys's identity and the mounts.
pub struct SysView {
    sys: Option<NsId>,
    mounts: Vec<mountinfo::Mount>,
    /// Devices of the /sys family: file systems mounted at or under /sys,
    /// and of a /sys-family type wherever they are.
    family: Vec<u64>,
}

/// File system types that belong under /sys, wherever they are mounted.
const SYS_FAMILY: &[&str] = &[
    "sysfs",
    "cgroup",
    "cgroup2",
    "bpf",
    "securityfs",
    "debugfs",
    "tracefs",
    "efivarfs",
    "configfs",
    "pstore",
    "fusectl",
];

impl SysView {
    pub fn read() -> SysView {
        let mounts = mountinfo::parse(
            &procfs::read_string("/proc/self/mountinfo", procfs::MOUNTINFO).unwrap_or_default(),
        );
        let family = mounts
            .iter()
            .filter(|m| m.is_at_or_under("/sys") || SYS_FAMILY.contains(&m.fstype.as_str()))
            .map(|m| m.dev)
            .collect();
        SysView {
            sys: stat("/sys").ok().map(|st| ns_id(&st)),
            mounts,
            family,
        }
    }

    /// Open `path` as the kernel resolves it, and judge what it opened.
    fn classify(&self, path: &Path) -> SysSource {
        let fd = match nix::fcntl::open(
            path,
            nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        ) {
            // SAFETY: `open` just returned this descriptor and nothing else owns it.
            Ok(fd) => unsafe { OwnedFd::from_raw_fd(fd) },
            // Nothing there (a missing source, a dangling link): the
            // runtime's bind fails the same way, so nothing is mounted.
            // Judged by its path, as far as it says anything.
            Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR) => {
                return match path.to_str().map(userns_hostnet_engine::fields::clean_path) {
                    Some(p) if p == "/sys" || userns_hostnet_engine::path::is_below(&p, "/sys") => {
                        SysSource::InTree
                    }
                    Some(_) => SysSource::Other,
                    None => SysSource::Unresolved(format!("{}: not UTF-8", path.display())),
                }
            }
            Err(e) => return SysSource::Unresolved(format!("{}: {}", path.display(), e.desc())),
        };
        let st = match fstat(fd.as_raw_fd()) {
            Ok(st) => st,
            Err(e) => return SysSource::Unresolved(format!("{}: {}", path.display(), e.desc())),
        };
        if Some(ns_id(&st)) == self.sys {
            return SysSource::Sys;
        }
        if self.family.contains(&st.st_dev) {
            return SysSource::InTree;
        }
        let fd_path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let mnt_id = procfs::read_string(
            format!("/proc/self/fdinfo/{}", fd.as_raw_fd()),
            procfs::SMALL,
        )
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("mnt_id:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
        });
        let real = std::fs::read_link(&fd_path).ok();
        let (Some(mnt_id), Some(real)) = (mnt_id, real) else {
            return SysSource::Unresolved(format!(
                "{}: the mount it is on cannot be read",
                path.display()
            ));
        };
        // A mount of another mount namespace (through /proc/PID/root, say):
        // what lies below it is not in this view.
        if !self.mounts.iter().any(|m| m.id == mnt_id) {
            return SysSource::Unresolved(format!(
                "{}: on a mount outside the runtime's mount namespace",
                path.display()
            ));
        }
        let Some(real) = real.to_str() else {
            return SysSource::Unresolved(format!("{}: not UTF-8", path.display()));
        };
        self.judge_path(real)
    }

    /// A path of this mount namespace, resolved.
    fn judge_path(&self, real: &str) -> SysSource {
        use userns_hostnet_engine::path::is_below;
        if real == "/sys" || is_below(real, "/sys") {
            return SysSource::InTree;
        }
        let below = |p: &str| real == "/" || is_below(p, real);
        if below("/sys")
            || self.mounts.iter().any(|m| {
                below(&m.mount_point)
                    && (SYS_FAMILY.contains(&m.fstype.as_str()) || self.family.contains(&m.dev))
            })
        {
            return SysSource::Parent;
        }
        SysSource::Other
    }
}

/// Where each mount's destination lands in the container, resolved as the
/// runtime will resolve it when it mounts it ([`dest_walk`]): in the
/// rootfs (`root.path`, relative to `bundle`), each mount's destination
/// with the mounts made before it in place, in the order the runtime makes
/// them once the rules have run (the order rule's). Keyed by the mount's
/// index as read. A spec without a root is left to the runtime, which
/// refuses it. Costs a few `openat`/`fstat` per component and a
/// `readlinkat` per link, so only a converted spec asks.
pub fn mount_destinations(
    spec: &userns_hostnet_engine::Spec,
    bundle: Option<&Path>,
    relative_bases: &[&Path],
) -> BTreeMap<usize, MountDestination> {
    let mut out = BTreeMap::new();
    let Ok(mounts) = spec.mounts() else {
        return out;
    };
    let Some(root) = spec
        .view()
        .get("root")
        .and_then(|r| r.get("path"))
        .and_then(serde_json::Value::as_str)
    else {
        return out;
    };
    let Ok(dests) = (0..mounts.len())
        .map(|i| mounts.destination(i))
        .collect::<Result<Vec<_>, _>>()
    else {
        return out;
    };
    let rootfs = match bundle {
        _ if root.starts_with('/') => Ok(PathBuf::from(root)),
        Some(bundle) => Ok(bundle.join(root)),
        None => Err(format!(
            "root.path {root:?} is relative and the bundle directory is not known"
        )),
    };
    let table = SpecMounts {
        mounts: &mounts,
        dests: &dests,
        relative_bases,
    };
    let mut walker =
        rootfs.and_then(|r| dest_walk::Walker::new(&r, dests.len()).map_err(|e| e.to_string()));
    for i in userns_hostnet_engine::rules::order::final_order(&dests) {
        let Some(m) = mounts.get(i) else { continue };
        let Ok(Some(written)) = m.str_member(i, "destination") else {
            continue;
        };
        let resolved = match &mut walker {
            Err(why) => Err(why.clone()),
            Ok(walker) => match walker.resolve(&written, &table) {
                Err(e) => Err(e.to_string()),
                Ok(at) => {
                    walker.mount(&at, i, &table);
                    Ok(ResolvedDestination {
                        path: at.path(),
                        links: at.links,
                    })
                }
            },
        };
        // A destination that lands where its text says, through no link,
        // is what the rule assumes of a mount without a fact: not kept,
        // so a spec of many mounts costs no copy of each destination.
        if matches!(&resolved, Ok(r) if r.links.is_empty() && r.path == dests[i]) {
            continue;
        }
        out.insert(
            i,
            MountDestination {
                written: written.into_owned(),
                resolved,
            },
        );
    }
    out
}

/// The spec's mounts as the destination walk asks for them: what each
/// puts at its destination is read from the spec when a walk enters it.
struct SpecMounts<'s> {
    mounts: &'s userns_hostnet_engine::MountList<'s>,
    dests: &'s [Cow<'s, str>],
    relative_bases: &'s [&'s Path],
}

impl dest_walk::MountTable for SpecMounts<'_> {
    fn destination(&self, id: usize) -> Cow<'_, str> {
        Cow::Borrowed(&self.dests[id])
    }
    fn layer(&self, id: usize) -> dest_walk::Layer {
        self.of(id).0
    }
    fn label(&self, id: usize) -> String {
        self.of(id).1
    }
}

impl SpecMounts<'_> {
    fn of(&self, id: usize) -> (dest_walk::Layer, String) {
        match self.mounts.get(id) {
            Some(m) => layer_of(id, &m, &self.dests[id], self.relative_bases),
            None => (dest_walk::Layer::Unknown, format!("mounts[{id}]")),
        }
    }
}

/// What mount `i` puts at its destination, for the walks below it, and
/// its name in reasons.
fn layer_of(
    i: usize,
    m: &userns_hostnet_engine::MountRef<'_>,
    dest: &str,
    relative_bases: &[&Path],
) -> (dest_walk::Layer, String) {
    use dest_walk::Layer;
    let kind = m.str_member(i, "type").ok().flatten();
    let kind = kind.as_deref().unwrap_or("");
    if m.is_bind(i).unwrap_or(false) {
        let recursive = m.options(i).is_ok_and(|o| o.iter().any(|o| o == "rbind"));
        let Ok(Some(source)) = m.str_member(i, "source") else {
            return (
                Layer::Unknown,
                format!("mounts[{i}], a bind without a source"),
            );
        };
        let label = format!("mounts[{i}], a bind of {source}");
        return match bind_source(&source, relative_bases) {
            Some(path) => (Layer::Host { path, recursive }, label),
            None => (
                Layer::Unknown,
                format!("{label}, a relative source the runtimes may read differently"),
            ),
        };
    }
    let layer = match kind {
        // The wrapper binds the host's /sys in its place.
        "sysfs" => Layer::Host {
            path: "/sys".into(),
            recursive: true,
        },
        "tmpfs" | "devpts" | "mqueue" | "cgroup" | "cgroup2" => Layer::Fresh,
        "proc" => Layer::Proc,
        _ => Layer::Unknown,
    };
    (layer, format!("mounts[{i}] ({kind} at {dest})"))
}

/// The host path a bind's source names: an absolute one itself; a
/// relative one in each of `relative_bases`, joined as text to the base's
/// real path (runc) and walked from the base (the kernel), `None` unless
/// every reading opens the same file (or none does).
fn bind_source(source: &str, relative_bases: &[&Path]) -> Option<PathBuf> {
    if source.starts_with('/') {
        return Some(PathBuf::from(source));
    }
    let identity = |p: &Path| match stat(p) {
        Ok(st) => Some(Some(ns_id(&st))),
        Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR) => Some(None),
        Err(_) => None,
    };
    let first = relative_bases.first()?.join(source);
    let want = identity(&first)?;
    for base in relative_bases {
        let real = crate::sys::realpath::realpath(base).ok()?;
        let lexical =
            userns_hostnet_engine::fields::clean_path(&format!("{}/{source}", real.display()));
        for p in [base.join(source), PathBuf::from(lexical)] {
            if identity(&p)? != want {
                return None;
            }
        }
    }
    Some(first)
}

/// The engine's facts carry reasons as text.
fn text(e: HostError) -> String {
    e.to_string()
}

/// Can the real runtime make a recursive read-only bind on this kernel?
/// The runtime's answer is cached, so this costs a process only the first
/// time a runtime binary is seen.
pub fn rro_support(runtime: &RealRuntime) -> userns_hostnet_engine::RroSupport {
    crate::probe::rro_support(&runtime.path, Path::new(crate::probe::CACHE_DIR))
}

/// Whether the runtime mounts a container's cgroup v1 hierarchies
/// read-write whatever the spec's options say ([`crate::runtime::Kind::cgroup_v1_mounts_writable`]),
/// on a host that has them: the host known by what is mounted at
/// /sys/fs/cgroup.
pub fn runtime_cgroup_v1_writable(runtime: &RealRuntime) -> Option<String> {
    if !runtime.kind.cgroup_v1_mounts_writable() {
        return None;
    }
    // Fail closed: only a /sys/fs/cgroup read as cgroup2 clears it.
    let host = match cgroup_dir_is_cgroup2() {
        Ok(true) => return None,
        Ok(false) => "this host has cgroup v1".to_owned(),
        Err(e) => format!(
            "whether this host has cgroup v1 cannot be told (/sys/fs/cgroup: {})",
            e.desc()
        ),
    };
    Some(format!(
        "{} mounts cgroup v1 hierarchies read-write whatever the spec's options say, and {host}",
        runtime.kind.word()
    ))
}

/// Whether the runtime, mounting the container's cgroup at /sys/fs/cgroup
/// onto the host's cgroup2 that the bind of /sys brings there, leaves a
/// writable tmpfs of its own under it ([`crate::runtime::Kind::cgroup2_over_host_cgroup2_leaves_tmpfs`]),
/// on a host whose /sys/fs/cgroup is cgroup2 (the runtime runs in the
/// wrapper's mount namespace: what the wrapper sees there is what it binds).
pub fn runtime_cgroup_tmpfs_writable(runtime: &RealRuntime) -> Option<String> {
    if !runtime.kind.cgroup2_over_host_cgroup2_leaves_tmpfs() {
        return None;
    }
    let reason = || {
        format!("{} cannot mount the container's cgroup2 onto the host's, which the bind of /sys brings there, and would put a tmpfs of its own under it, writable", runtime.kind.word())
    };
    // What cannot be read is taken as cgroup2: the read-only tmpfs is
    // harmless where it is not needed; a missing directory brings nothing.
    match cgroup_dir_is_cgroup2() {
        Ok(v2) => v2.then(reason),
        Err(nix::errno::Errno::ENOENT) => None,
        Err(_) => Some(reason()),
    }
}

/// /sys/fs/cgroup as the runtime will see it (it runs in the wrapper's
/// mount namespace): cgroup2 or not, or why that cannot be read.
fn cgroup_dir_is_cgroup2() -> nix::Result<bool> {
    nix::sys::statfs::statfs("/sys/fs/cgroup")
        .map(|fs| fs.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC)
}

/// `/proc/PID/ns/user` -> `/proc/PID`: the form that names its process.
fn proc_dir_of_user_ns(path: &str) -> Option<&str> {
    let dir = path.strip_suffix("/ns/user")?;
    let pid = dir.strip_prefix("/proc/")?;
    (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) || pid == "self").then_some(dir)
}

/// The maps of the user namespace `id`, named in the spec by `path` (any
/// path to its nsfs file: `/proc/PID/ns/user`, a task's, a bind mount of
/// it). They are a property of the namespace, read from a process in it:
/// the one the path names, if it names one and is in it, else the first
/// found in /proc. Read twice-checked: the process must still be in the
/// namespace after its maps were read, or a reused pid could lend its own.
pub fn joined_user_maps(path: &str, id: NsId) -> Result<IdMaps, HostError> {
    let in_ns =
        |dir: &str| stat(format!("{dir}/ns/user").as_str()).is_ok_and(|st| ns_id(&st) == id);
    let read_from = |dir: &str| -> Option<Result<IdMaps, HostError>> {
        if !in_ns(dir) {
            return None;
        }
        let maps = read_id_maps(dir);
        in_ns(dir).then_some(maps)
    };
    if let Some(found) = proc_dir_of_user_ns(path).and_then(read_from) {
        return found;
    }
    let entries = std::fs::read_dir("/proc").map_err(|source| HostError::Read {
        path: PathBuf::from("/proc"),
        source,
    })?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if let Some(Ok(maps)) = read_from(&format!("/proc/{pid}")) {
            return Ok(maps);
        }
    }
    // A namespace pinned by a bind mount alone (CRI-O's pinns): a child
    // enters it, and its maps are read from that child as from any other.
    if let Some(found) = read_from_entered_child(path, &read_from) {
        return found;
    }
    Err(HostError::NoProcessInUserNs {
        path: path.to_owned(),
    })
}

/// Forks a child that enters the user namespace of `path` (root may enter
/// any namespace it owns) and waits; `read_from` reads the child's maps,
/// checked against the namespace's identity like any process's, and the
/// child is killed. `None` when `path` cannot be entered.
fn read_from_entered_child(
    path: &str,
    read_from: &dyn Fn(&str) -> Option<Result<IdMaps, HostError>>,
) -> Option<Result<IdMaps, HostError>> {
    use nix::sched::{setns, CloneFlags};
    use nix::sys::signal::{kill, Signal};
    use nix::sys::wait::waitpid;
    use nix::unistd::{fork, pipe, read, write, ForkResult};
    let ns = std::fs::File::open(path).ok()?;
    let (ready_r, ready_w) = pipe().ok()?;
    // Safety: the child only makes system calls (setns, write, pause) and
    // exits with _exit; it allocates nothing and takes no lock.
    match unsafe { fork() }.ok()? {
        ForkResult::Child => {
            drop(ready_r);
            if setns(&ns, CloneFlags::CLONE_NEWUSER).is_ok() {
                let _ = write(&ready_w, b"1");
                loop {
                    nix::unistd::pause();
                }
            }
            unsafe { nix::libc::_exit(1) }
        }
        ForkResult::Parent { child } => {
            drop(ready_w);
            let mut byte = [0u8; 1];
            let entered = matches!(read(ready_r.as_raw_fd(), &mut byte), Ok(1));
            let found = if entered {
                read_from(&format!("/proc/{child}"))
            } else {
                None
            };
            let _ = kill(child, Signal::SIGKILL);
            let _ = waitpid(child, None);
            found
        }
    }
}

/// The uid_map and gid_map of a process.
pub fn read_id_maps(proc_dir: &str) -> Result<IdMaps, HostError> {
    let read = |name: &str| -> Result<Vec<Extent>, HostError> {
        let path = PathBuf::from(format!("{proc_dir}/{name}"));
        parse_id_map(&read_text(path.clone())?).ok_or(HostError::IdMapContents { path })
    };
    Ok(IdMaps {
        uid: read("uid_map")?,
        gid: read("gid_map")?,
    })
}

/// Lines of `container host size`.
pub fn parse_id_map(text: &str) -> Option<Vec<Extent>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split_whitespace().map(|n| n.parse::<u64>().ok());
            let e = Extent {
                container: f.next()??,
                host: f.next()??,
                size: f.next()??,
            };
            f.next().is_none().then_some(e)
        })
        .collect()
}

/// The ranges of `user` in `<etc>/subuid` and `<etc>/subgid` (lines of
/// `name:start:count`). No entry at all is an error: the policy would
/// refuse every container.
pub fn read_subids(user: &str, etc: &Path) -> Result<SubIds, HostError> {
    let read = |name: &str| -> Result<Vec<IdRange>, HostError> {
        let path = etc.join(name);
        let ranges = parse_subid(&read_text(path.clone())?, user);
        if ranges.is_empty() {
            return Err(HostError::NoSubidRange {
                path,
                user: user.to_owned(),
            });
        }
        Ok(ranges)
    };
    Ok(SubIds {
        user: user.to_owned(),
        uid: read("subuid")?,
        gid: read("subgid")?,
    })
}

pub fn parse_subid(text: &str, user: &str) -> Vec<IdRange> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.trim().splitn(3, ':');
            if f.next()? != user {
                return None;
            }
            let start = f.next()?.trim().parse().ok()?;
            let size = f.next()?.trim().parse().ok()?;
            Some(IdRange { start, size })
        })
        .filter(|r| r.size > 0)
        .collect()
}

#[cfg(test)]
mod tests;
