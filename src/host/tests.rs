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
    let mut facts = namespace_facts_of(&userns_hostnet_engine::fields::namespaces(spec).unwrap());
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
        {"destination": "/e", "type": "tmpfs", "source": "/sys"},
        {"destination": "/f", "type": "bind", "source": "///sys/.", "options": ["rbind"]},
        {"destination": "/g", "type": "bind", "source": "/", "options": ["rbind"]},
        {"destination": "/h", "type": "bind", "source": "/etc/../sys/fs", "options": ["rbind"]}
    ]});
    let got = host_sys_sources(
        &userns_hostnet_engine::Spec::from_value(&spec).expect("a test spec reads"),
        &[],
    );
    assert_eq!(got["/proc/self/root/sys"], SysSource::Sys);
    assert_eq!(got["///sys/."], SysSource::Sys);
    assert_eq!(got["/sys/kernel"], SysSource::InTree);
    assert_eq!(got["/etc/../sys/fs"], SysSource::InTree);
    assert_eq!(got["/"], SysSource::Parent);
    // Nothing of /sys, by resolution and by path: left to the rules,
    // which judge a missing source by its path. Missing: the runtime
    // cannot bind it either.
    assert_eq!(got.get("/etc"), None);
    assert_eq!(got.get("/nonexistent/x"), None);
    assert_eq!(got.len(), 5, "{got:?}");
}

#[test]
fn a_source_left_out_converts_as_one_known_to_be_nothing_of_sys() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plain")).unwrap();
    // Nothing of /sys where it resolves, yet /sys by its path alone:
    // kept, the rules would take it for /sys without it.
    std::fs::create_dir(dir.path().join("sys")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.path().join("link")).unwrap();
    let mut spec = serde_json::json!({
        "process": {"user": {"uid": 0, "gid": 0}},
        "root": {"path": "rootfs"},
        "linux": {
            "namespaces": [{"type": "pid"}, {"type": "user"}, {"type": "mount"}],
            "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
            "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]
        }
    });
    let mut mounts = vec![serde_json::json!(
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["ro"]}
    )];
    let sources = [
        "/etc",
        "/etc/",
        "/nonexistent/x",
        "plain",
        "link",
        "/sysx",
        "/sys-lookalike",
        "/sys/kernel",
        "/",
        "sys",
    ];
    for (i, source) in sources.iter().enumerate() {
        for (j, options) in [["rbind", "ro"], ["bind", "rw"]].iter().enumerate() {
            mounts.push(serde_json::json!({"destination": format!("/m{i}-{j}"), "type": "bind", "source": source, "options": options}));
        }
    }
    spec["mounts"] = serde_json::Value::Array(mounts);
    let doc = userns_hostnet_engine::Spec::from_value(&spec).unwrap();
    let facts = HostFacts {
        host_sys_sources: host_sys_sources(&doc, &[dir.path()]),
        ..HostFacts::default()
    };
    let left_out: Vec<&str> = sources
        .iter()
        .copied()
        .filter(|s| !facts.host_sys_sources.contains_key(*s))
        .collect();
    assert_eq!(
        left_out,
        [
            "/etc",
            "/etc/",
            "/nonexistent/x",
            "plain",
            "link",
            "/sysx",
            "/sys-lookalike"
        ]
    );
    assert_eq!(facts.host_sys_sources["sys"], SysSource::Other);
    let mut known = facts.clone();
    for s in &left_out {
        known
            .host_sys_sources
            .insert(s.to_string(), SysSource::Other);
    }
    let policy = Policy::default();
    let a = userns_hostnet_engine::evaluate(doc.clone(), &facts, &policy).unwrap();
    let b = userns_hostnet_engine::evaluate(doc, &known, &policy).unwrap();
    assert!(a.changed());
    assert_eq!(format!("{:?}", a.findings), format!("{:?}", b.findings));
    assert_eq!(
        userns_hostnet_engine::write::write(&a.spec),
        userns_hostnet_engine::write::write(&b.spec)
    );
}

#[test]
fn relative_sources_resolve_in_the_bundle_through_link_chains() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    std::os::unix::fs::symlink("/sys", dir.path().join("up")).unwrap();
    std::os::unix::fs::symlink("../up", bundle.join("l1")).unwrap();
    std::os::unix::fs::symlink("l1/fs", bundle.join("l2")).unwrap();
    std::fs::create_dir(bundle.join("plain")).unwrap();
    let spec = serde_json::json!({"mounts": [
        {"destination": "/a", "type": "bind", "source": "l1", "options": ["rbind"]},
        {"destination": "/b", "type": "bind", "source": "../up", "options": ["rbind"]},
        {"destination": "/c", "type": "bind", "source": "./l2/cgroup", "options": ["rbind"]},
        {"destination": "/d", "type": "bind", "source": "plain", "options": ["rbind"]}
    ]});
    let doc = userns_hostnet_engine::Spec::from_value(&spec).expect("a test spec reads");
    let got = host_sys_sources(&doc, &[&bundle]);
    assert_eq!(got["l1"], SysSource::Sys);
    assert_eq!(got["../up"], SysSource::Sys);
    assert_eq!(got["./l2/cgroup"], SysSource::InTree);
    assert_eq!(got.get("plain"), None);
    // Without a bundle, a relative source cannot be placed.
    let got = host_sys_sources(&doc, &[]);
    assert!(matches!(&got["plain"], SysSource::Unresolved(why) if why.contains("relative")));
    // Resolved in two places (youki's working directory and the
    // bundle), the worse counts.
    std::os::unix::fs::symlink("/etc", dir.path().join("plain")).unwrap();
    let got = host_sys_sources(&doc, &[&bundle, dir.path()]);
    assert_eq!(got["l1"], SysSource::Sys);
    let cwd = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/sys/kernel", cwd.path().join("plain")).unwrap();
    let got = host_sys_sources(&doc, &[&bundle, cwd.path()]);
    assert_eq!(got["plain"], SysSource::InTree);
    // A missing path under /sys still counts as the /sys tree.
    let view = SysView::read();
    assert_eq!(
        classify_source("/sys/no-such-dir", &[], &view),
        SysSource::InTree
    );
}

#[test]
fn destinations_resolve_in_the_rootfs_with_earlier_mounts_in_place() {
    let bundle = tempfile::tempdir().unwrap();
    let rootfs = bundle.path().join("rootfs");
    for d in ["sys", "data", "proc"] {
        std::fs::create_dir_all(rootfs.join(d)).unwrap();
    }
    std::os::unix::fs::symlink("sys", rootfs.join("hsys")).unwrap();
    let host = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/sys", host.path().join("s")).unwrap();
    let h = host.path().to_str().unwrap();
    let spec = serde_json::json!({
        "root": {"path": "rootfs"},
        "mounts": [
            {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup"},
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs"},
            {"destination": "/hsys", "type": "bind", "source": "/sys", "options": ["rbind", "rw"]},
            {"destination": "/data", "type": "bind", "source": h, "options": ["rbind", "ro"]},
            {"destination": "/data/s/kernel", "type": "tmpfs", "source": "tmpfs"},
            {"destination": "/proc/self/root/sys", "type": "tmpfs", "source": "tmpfs"},
            {"destination": "/plain/../data", "type": "tmpfs", "source": "tmpfs"}
        ]
    });
    let doc = userns_hostnet_engine::Spec::from_value(&spec).unwrap();
    let got = mount_destinations(&doc, Some(bundle.path()), &[bundle.path()]);
    let path = |i: usize| match &got[&i].resolved {
        Ok(r) => (r.path.clone(), r.links.clone()),
        Err(e) => panic!("mounts[{i}]: {e}"),
    };
    assert_eq!(got[&3].written, "/hsys");
    // Those that land where their text says, through no link, have no
    // entry: the rule reads a missing one so.
    let kept: Vec<usize> = got.keys().copied().collect();
    assert_eq!(kept, [3, 5, 6]);
    assert_eq!(
        path(3),
        ("/sys".into(), vec!["/hsys -> sys (in the rootfs)".into()])
    );
    assert_eq!(
        path(5),
        (
            "/sys/kernel".into(),
            vec![format!("/data/s -> /sys (in mounts[4], a bind of {h})")]
        )
    );
    let proc = got[&6].resolved.as_ref().unwrap_err();
    assert!(
        proc.starts_with("/proc/self: passes through /proc's link"),
        "{proc}"
    );
    // No root: the runtime refuses the spec itself, nothing to resolve.
    let mut rootless = spec.clone();
    rootless.as_object_mut().unwrap().remove("root");
    let doc = userns_hostnet_engine::Spec::from_value(&rootless).unwrap();
    assert!(mount_destinations(&doc, Some(bundle.path()), &[]).is_empty());
    // A relative root without its bundle cannot be placed.
    let doc = userns_hostnet_engine::Spec::from_value(&spec).unwrap();
    let got = mount_destinations(&doc, None, &[]);
    assert_eq!(
        got[&0].resolved,
        Err("root.path \"rootfs\" is relative and the bundle directory is not known".into())
    );
}

#[test]
fn a_parent_is_known_by_the_sys_family_mounts_below_it() {
    let view = SysView::read();
    assert_eq!(view.judge_path("/"), SysSource::Parent);
    assert_eq!(view.judge_path("/sys"), SysSource::InTree);
    assert_eq!(view.judge_path("/sysx"), SysSource::Other);
    assert_eq!(view.judge_path("/usr"), SysSource::Other);
}

#[test]
fn the_worse_resolution_wins() {
    use SysSource::*;
    assert_eq!(Other.worst(Sys), Sys);
    assert_eq!(Sys.worst(InTree), InTree);
    assert_eq!(Parent.worst(Other), Parent);
    assert_eq!(Sys.worst(Unresolved("x".into())), Unresolved("x".into()));
    assert_eq!(Sys.worst(Sys), Sys);
    assert_eq!(
        Unresolved("a".into()).worst(Unresolved("b".into())),
        Unresolved("a".into())
    );
    assert_eq!(InTree.worst(Sys), InTree);
}

#[test]
fn a_user_namespace_is_found_by_identity_whatever_the_path() {
    let tid = nix::unistd::gettid();
    let by_task = format!("/proc/self/task/{tid}/ns/user");
    let id = namespace_facts(&by_task, false).unwrap().id;
    let maps = joined_user_maps(&by_task, id).unwrap();
    assert_eq!(maps, read_id_maps("/proc/self").unwrap());
    // A link to the namespace file is the same namespace.
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("userns");
    std::os::unix::fs::symlink(&by_task, &link).unwrap();
    let spec = serde_json::json!({"linux": {"namespaces": [{"type": "user", "path": link.to_str().unwrap()}]}});
    let facts = gather(&spec, &Policy::default());
    assert_eq!(
        facts.joined_maps[link.to_str().unwrap()].as_ref().unwrap(),
        &maps
    );
    // A file no process is in is no namespace whose maps can be read.
    let not_ns = dir.path().join("plain");
    std::fs::write(&not_ns, "").unwrap();
    let spec = serde_json::json!({"linux": {"namespaces": [{"type": "user", "path": not_ns.to_str().unwrap()}]}});
    let e = gather(&spec, &Policy::default()).joined_maps[not_ns.to_str().unwrap()]
        .clone()
        .unwrap_err();
    assert!(
        e.starts_with("no process is in the user namespace of"),
        "{e}"
    );
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
    let other =
        serde_json::json!({"linux": {"namespaces": [{"type": "user", "path": "/run/userns/x"}]}});
    assert!(gather(&other, &Policy::default()).joined_maps["/run/userns/x"].is_err());
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

/// A runtime of `kind` for the facts that depend on it alone.
fn of(kind: crate::runtime::Kind) -> crate::runtime::RealRuntime {
    crate::runtime::RealRuntime {
        path: std::path::PathBuf::from("/nonexistent/runtime"),
        kind,
    }
}

/// The fact of crun's cgroup tmpfs: only for crun, and only where
/// /sys/fs/cgroup is cgroup2 (as crun itself would see it: the wrapper
/// execs it in its own mount namespace).
#[test]
fn only_crun_on_a_cgroup2_host_gets_the_cgroup_tmpfs_fact() {
    use crate::runtime::Kind;
    for kind in [Kind::Runc, Kind::Youki, Kind::Other] {
        assert_eq!(runtime_cgroup_tmpfs_writable(&of(kind)), None, "{kind:?}");
    }
    let v2 = nix::sys::statfs::statfs("/sys/fs/cgroup")
        .is_ok_and(|fs| fs.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC);
    let fact = runtime_cgroup_tmpfs_writable(&of(Kind::Crun));
    assert_eq!(fact.is_some(), v2, "{fact:?}");
    if let Some(why) = fact {
        assert!(why.starts_with("crun cannot mount"), "{why}");
    }
}

/// The fact of youki's writable cgroup v1 mounts: only for a runtime that
/// mounts them so, and cleared only by a /sys/fs/cgroup read as cgroup2
/// (what cannot be read counts as cgroup v1: fail closed).
#[test]
fn only_a_cgroup2_host_clears_the_cgroup_v1_fact() {
    use crate::runtime::Kind;
    for kind in [Kind::Runc, Kind::Crun, Kind::Other] {
        assert_eq!(runtime_cgroup_v1_writable(&of(kind)), None, "{kind:?}");
    }
    let v2 = cgroup_dir_is_cgroup2();
    let fact = runtime_cgroup_v1_writable(&of(Kind::Youki));
    assert_eq!(fact.is_none(), v2 == Ok(true), "{fact:?} {v2:?}");
    if let Some(why) = fact {
        assert!(why.starts_with("youki mounts cgroup v1"), "{why}");
    }
}
