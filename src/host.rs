//! Gathering the host facts the engine needs. Only what the spec asks about
//! is read: a container without namespace paths costs no system call here.

use crate::engine::facts::{proc_name, Extent, HostFacts, IdMaps, NsFacts, NsId, SubIds};
use crate::engine::policy::{AllowedRanges, IdRange, Policy};
use crate::engine::spec::Namespace;
use nix::sys::stat::{fstat, stat};
use oci_spec::runtime::LinuxNamespaceType;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

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
        facts
            .namespaces
            .insert(path.clone(), namespace_facts(path, owner).map_err(text));
        if n.kind == LinuxNamespaceType::User {
            if let Some(dir) = proc_dir_of_user_ns(path) {
                facts
                    .joined_maps
                    .insert(path.clone(), read_id_maps(dir).map_err(text));
            }
        } else {
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

/// For each bind source of the spec: is it the host's /sys or in its
/// tree? Resolved through links and other spellings (`canonicalize`), and
/// by file system: a path on a file system mounted at or under /sys (an
/// alias of /sys bound elsewhere on the host) counts too. A source that
/// does not resolve is left out: the engine then judges its cleaned path.
pub fn host_sys_sources(spec_doc: &crate::engine::Spec) -> BTreeMap<String, bool> {
    let mut out = BTreeMap::new();
    let Ok(mounts) = spec_doc.mounts() else {
        return out;
    };
    let mut sys_devices: Option<Vec<u64>> = None;
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
        let Ok(resolved) = std::fs::canonicalize(source) else {
            continue;
        };
        let in_tree = resolved == Path::new("/sys") || resolved.starts_with("/sys/");
        let on_sys_fs = !in_tree
            && stat(&resolved).is_ok_and(|st| {
                sys_devices
                    .get_or_insert_with(sys_tree_devices)
                    .contains(&st.st_dev)
            });
        out.insert(source.to_owned(), in_tree || on_sys_fs);
    }
    out
}

/// The devices of the file systems mounted at or under /sys, from this
/// process's mountinfo (field 3 is `major:minor`, field 5 the mount point).
fn sys_tree_devices() -> Vec<u64> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let point = *f.get(4)?;
            if point != "/sys" && !point.starts_with("/sys/") {
                return None;
            }
            let (major, minor) = f.get(2)?.split_once(':')?;
            Some(nix::sys::stat::makedev(
                major.parse().ok()?,
                minor.parse().ok()?,
            ))
        })
        .collect()
}

/// The engine's facts carry reasons as text.
fn text(e: HostError) -> String {
    e.to_string()
}

/// Can the real runtime make a recursive read-only bind on this kernel?
/// The runtime's answer is cached, so this costs a process only the first
/// time a runtime binary is seen.
pub fn rro_support(runtime: &Path) -> crate::engine::RroSupport {
    crate::probe::rro_support(runtime, Path::new(crate::probe::CACHE_DIR))
}

/// youki (0.7.0 measured) mounts a container's cgroup v1 hierarchies
/// read-write, its `ro` ignored; on a cgroup v2 host it mounts cgroup2
/// read-only as asked. The runtime is known by its file name, links
/// resolved; the host by what is mounted at /sys/fs/cgroup.
pub fn runtime_cgroup_v1_writable(runtime: &Path) -> Option<String> {
    if crate::runtime::resolved_name(runtime)? != "youki" {
        return None;
    }
    let fs = nix::sys::statfs::statfs("/sys/fs/cgroup").ok()?;
    (fs.filesystem_type() != nix::sys::statfs::CGROUP2_SUPER_MAGIC).then(|| {
        "youki mounts cgroup v1 hierarchies read-write whatever the spec's options say, and this host has cgroup v1".to_owned()
    })
}

/// `/proc/PID/ns/user` -> `/proc/PID`: the only form whose maps can be read.
fn proc_dir_of_user_ns(path: &str) -> Option<&str> {
    let dir = path.strip_suffix("/ns/user")?;
    let pid = dir.strip_prefix("/proc/")?;
    (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) || pid == "self").then_some(dir)
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
mod tests {
    use super::*;

    #[test]
    fn own_network_namespace_is_owned_by_own_user_namespace() {
        let net = namespace_facts("/proc/self/ns/net", true).unwrap();
        let user = namespace_facts("/proc/self/ns/user", false).unwrap();
        assert_eq!(net.owner, Some(user.id));
    }

    #[test]
    fn dead_path_is_an_error_not_a_panic() {
        let e = namespace_facts("/proc/999999999/ns/net", true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("No such file"), "{e}");
    }

    fn gather(spec: &serde_json::Value, policy: &Policy) -> HostFacts {
        let mut facts = namespace_facts_of(&crate::engine::spec::namespaces(spec).unwrap());
        add_policy_facts(&mut facts, policy);
        facts
    }

    #[test]
    fn the_runtimes_own_namespaces_are_read_for_the_kinds_joined() {
        let spec = serde_json::json!({"linux": {"namespaces": [
            {"type": "user"},
            {"type": "uts", "path": "/proc/self/ns/uts"},
            {"type": "ipc"}
        ]}});
        let facts = gather(&spec, &Policy::default());
        let own = facts.runtime_namespace(LinuxNamespaceType::Uts).unwrap();
        assert_eq!(
            facts.namespaces["/proc/self/ns/uts"].as_ref().unwrap().id,
            own
        );
        assert!(facts.runtime_namespace(LinuxNamespaceType::Ipc).is_none());
    }

    #[test]
    fn sys_sources_are_recognised_by_resolution_and_file_system() {
        let spec = serde_json::json!({"mounts": [
            {"destination": "/a", "type": "bind", "source": "/proc/self/root/sys", "options": ["rbind"]},
            {"destination": "/b", "type": "bind", "source": "/sys/kernel", "options": ["rbind"]},
            {"destination": "/c", "type": "bind", "source": "/etc", "options": ["rbind"]},
            {"destination": "/d", "type": "bind", "source": "/nonexistent/x", "options": ["rbind"]},
            {"destination": "/e", "type": "tmpfs", "source": "/sys"}
        ]});
        let got = host_sys_sources(&crate::engine::document::doc(spec));
        assert_eq!(got.get("/proc/self/root/sys"), Some(&true));
        assert_eq!(got.get("/sys/kernel"), Some(&true));
        assert_eq!(got.get("/etc"), Some(&false));
        assert_eq!(got.get("/nonexistent/x"), None);
        assert_eq!(got.len(), 3, "{got:?}");
    }

    #[test]
    fn nothing_is_read_without_a_user_namespace() {
        let spec = serde_json::json!({"linux": {"namespaces": [{"type": "network", "path": "/proc/1/ns/net"}]}});
        assert!(gather(&spec, &Policy::default()).namespaces.is_empty());
    }

    #[test]
    fn joined_user_namespace_maps_are_read_from_proc() {
        let spec = serde_json::json!({"linux": {"namespaces": [{"type": "user", "path": "/proc/self/ns/user"}]}});
        let facts = gather(&spec, &Policy::default());
        let maps = facts.joined_maps["/proc/self/ns/user"].as_ref().unwrap();
        assert_eq!(
            maps.uid,
            vec![Extent {
                container: 0,
                host: 0,
                size: 4294967295
            }]
        );
        let dead = serde_json::json!({"linux": {"namespaces": [{"type": "user", "path": "/proc/999999999/ns/user"}]}});
        assert!(gather(&dead, &Policy::default()).joined_maps["/proc/999999999/ns/user"].is_err());
        let other = serde_json::json!({"linux": {"namespaces": [{"type": "user", "path": "/run/userns/x"}]}});
        assert!(gather(&other, &Policy::default()).joined_maps.is_empty());
    }

    #[test]
    fn id_maps_and_subids_parse() {
        assert_eq!(
            parse_id_map("         0     100000      65536\n      65536   300000 1\n"),
            Some(vec![
                Extent {
                    container: 0,
                    host: 100000,
                    size: 65536
                },
                Extent {
                    container: 65536,
                    host: 300000,
                    size: 1
                }
            ])
        );
        assert_eq!(parse_id_map("0 1\n"), None);
        let text =
            "root:100000:65536\nkubelet:200000:65536\n# comment\nkubelet:400000:65536\nbad line\n";
        assert_eq!(
            parse_subid(text, "kubelet"),
            vec![
                IdRange {
                    start: 200000,
                    size: 65536
                },
                IdRange {
                    start: 400000,
                    size: 65536
                }
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("subuid"), text).unwrap();
        std::fs::write(dir.path().join("subgid"), "root:1:2\n").unwrap();
        let e = read_subids("kubelet", dir.path()).unwrap_err().to_string();
        assert!(e.ends_with("subgid: no range for kubelet"), "{e}");
    }
}
