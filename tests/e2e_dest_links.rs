//! Mount destinations that a symbolic link in the rootfs leads onto /sys,
//! on the real runtimes. runc and crun resolve a destination inside the
//! rootfs when they mount it, so a writable bind of the host's /sys at
//! `/hsys`, with `/hsys -> sys` in the image, lands on the container's
//! /sys. Each layout is run twice: through the wrapper, which must refuse
//! it with one line naming the mount; and, to show the class is real, the
//! spec as the wrapper converts it when it judges destinations by their
//! text, under the real runtime alone: the container then has a writable
//! mount of the host's /sys tree on top of its read-only /sys.

mod common;

use common::{Bundle, ContainerGuard, Probe, Runtime, Sandbox};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// One layout: what the rootfs holds, an optional host directory bound
/// into the container, the mounts appended to the spec, and what the
/// wrapper's line must say.
struct Layout {
    name: &'static str,
    /// Links made in the rootfs: (path in it, target).
    rootfs_links: &'static [(&'static str, &'static str)],
    /// Links made in a host directory `HOST` (its path replaces `HOST` in
    /// the mounts' sources).
    host_links: &'static [(&'static str, &'static str)],
    mounts: fn() -> Vec<Value>,
    refusal: &'static str,
    /// The mount point in the container that ends up writable.
    lands_on: &'static str,
}

fn bind(dest: &str, source: &str, options: &[&str]) -> Value {
    json!({"destination": dest, "type": "bind", "source": source, "options": options})
}

fn layouts() -> Vec<Layout> {
    vec![
        Layout {
            name: "a relative link /hsys -> sys, the host's /sys bound writable at /hsys",
            rootfs_links: &[("hsys", "sys")],
            host_links: &[],
            mounts: || vec![bind("/hsys", "/sys", &["rbind", "rw"])],
            refusal: "destination-links: mounts[7].destination: \"/hsys\" resolves to /sys through /hsys -> sys (in the rootfs): a destination that reaches /sys through a symbolic link in the rootfs would be mounted over the container's /sys",
            lands_on: "/sys",
        },
        Layout {
            name: "an absolute link /x -> /sys/fs, the host's cgroup tree bound writable at /x/cgroup",
            rootfs_links: &[("x", "/sys/fs")],
            host_links: &[],
            mounts: || vec![bind("/x/cgroup", "/sys/fs/cgroup", &["rbind", "rw"])],
            refusal: "destination-links: mounts[7].destination: \"/x/cgroup\" resolves to /sys/fs/cgroup through /x -> /sys/fs (in the rootfs)",
            lands_on: "/sys/fs/cgroup",
        },
        Layout {
            name: "a link in a host directory an earlier bind provides, the host's /sys bound below it",
            rootfs_links: &[],
            host_links: &[("s", "/sys")],
            mounts: || {
                vec![
                    bind("/data", "HOST", &["rbind", "ro"]),
                    bind("/data/s", "/sys", &["rbind", "rw"]),
                ]
            },
            refusal: "destination-links: mounts[8].destination: \"/data/s\" resolves to /sys through /data/s -> /sys (in mounts[7], a bind of ",
            lands_on: "/sys",
        },
    ]
}

/// A busybox rootfs of its own with the layout's links, owned by the
/// container's root.
fn rootfs_with(dir: &Path, links: &[(&str, &str)]) {
    common::populate_rootfs(dir);
    for (at, target) in links {
        std::os::unix::fs::symlink(target, dir.join(at)).unwrap();
    }
    common::run_ok(
        Command::new("chown")
            .args(["-R", "-h"])
            .arg(format!("{0}:{0}", common::HOST_ID_BASE))
            .arg(dir),
    );
}

/// The spec as the wrapper writes it when destinations are judged by
/// their text: /sys a recursive read-only bind of the host's, the other
/// binds as written (a writable one "elsewhere" kept).
fn converted_by_text(spec: &mut Value) {
    for m in spec["mounts"].as_array_mut().unwrap() {
        if m["destination"] == "/sys" {
            *m = json!({"destination": "/sys", "type": "bind", "source": "/sys",
                        "options": ["rbind", "rro", "nosuid", "nodev", "noexec"]});
        }
    }
}

fn links_onto_sys_are_refused_and_real(runtime: Runtime) {
    for layout in layouts() {
        let what = format!("{} on {}", layout.name, runtime.name());
        let sandbox = Sandbox::new(runtime);
        let bundle = Bundle::userns_hostnet(&common::probe_args());
        let rootfs = bundle.dir().join("rootfs");
        rootfs_with(&rootfs, layout.rootfs_links);
        let host = tempfile::Builder::new()
            .prefix("uhn-dest-host-")
            .tempdir()
            .unwrap();
        for (at, target) in layout.host_links {
            std::os::unix::fs::symlink(target, host.path().join(at)).unwrap();
        }
        let host_path = host.path().to_str().unwrap().to_owned();
        bundle.edit(|spec| {
            spec["root"]["path"] = json!("rootfs");
            let mounts = spec["mounts"].as_array_mut().unwrap();
            assert_eq!(mounts.len(), 7, "runc spec's mounts: {mounts:?}");
            for mut m in (layout.mounts)() {
                if m["source"] == "HOST" {
                    m["source"] = json!(host_path);
                }
                mounts.push(m);
            }
        });

        // Through the wrapper: refused, config.json untouched.
        let snap = bundle.snapshot();
        let id = common::unique_id("dest");
        let guard = ContainerGuard::new(&sandbox, &id);
        let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
        assert!(!out.success(), "{what}: ran\n{}", out.describe());
        let line = out
            .stderr
            .lines()
            .find(|l| l.starts_with("userns-hostnet-runtime: refused: "))
            .unwrap_or_else(|| panic!("{what}: no refusal line\n{}", out.describe()));
        assert!(
            line.contains(layout.refusal),
            "{what}: refused, but not with {:?}:\n{line}",
            layout.refusal
        );
        assert_eq!(out.stderr.lines().count(), 1, "{what}: {}", out.stderr);
        snap.assert_unchanged(&bundle.config_path(), "a refusal");
        eprintln!("{what}: {line}");
        drop(guard);

        // Without the refusal: the runtime mounts it over /sys.
        bundle.edit(converted_by_text);
        let id = common::unique_id("dest-real");
        let _guard = ContainerGuard::new(&sandbox, &id);
        let out = common::run_probe(&sandbox.real(), &bundle, &id);
        out.assert_success();
        let probe = Probe::parse(&out.stdout);
        let top = probe
            .topmost(layout.lands_on)
            .unwrap_or_else(|| panic!("{what}: nothing at {}\n{}", layout.lands_on, probe.table()));
        assert!(
            !top.has("ro"),
            "{what}: the mount on top of {} is read-only: the runtime did not follow the link\n{}",
            layout.lands_on,
            probe.table()
        );
        let writable: Vec<String> = common::writable_under_sys(&probe)
            .iter()
            .map(|m| format!("{} {}", m.mount_point, m.fstype))
            .collect();
        // runc brings the host's submounts of /sys along, writable: the
        // host's cgroup hierarchy among them (crun 1.8.1 brings none).
        if runtime.is_runc() {
            assert!(
                writable.iter().any(|m| m.ends_with(" cgroup2")),
                "{what}: no writable cgroup hierarchy under /sys: {writable:?}\n{}",
                probe.table()
            );
        }
        eprintln!(
            "{what}: without the refusal, {} ran with the host's /sys tree writable at {} (topmost {} {}); writable under /sys: {}",
            runtime.name(),
            layout.lands_on,
            top.fstype,
            top.options.join(","),
            writable.join(", ")
        );
    }
}

/// The variants the walk must also follow, through the wrapper alone (the
/// refusal comes before the runtime runs): a chain of links, `..` after a
/// link, a link to the container's root, a loop, and a /sys destination a
/// link leads elsewhere.
/// A variant: its name, the links in the rootfs, the mount appended
/// (`null`: none, the rootfs's /sys itself a link), the text of the line.
type Variant = (
    &'static str,
    &'static [(&'static str, &'static str)],
    Value,
    &'static str,
);

fn variants_are_refused(runtime: Runtime) {
    let cases: &[Variant] = &[
        (
            "a chain of links",
            &[("a", "b"), ("b", "/c"), ("c", "sys")],
            bind("/a/fs/cgroup", "/sys/fs/cgroup", &["rbind", "rw"]),
            "resolves to /sys/fs/cgroup through /a -> b (in the rootfs), /b -> /c (in the rootfs), /c -> sys (in the rootfs)",
        ),
        (
            "`..` after a link",
            &[("deep", "/sys/fs/cgroup")],
            bind("/deep/../bpf", "/sys/fs/bpf", &["rbind", "rw"]),
            "\"/deep/../bpf\" resolves to /sys/fs/bpf through /deep -> /sys/fs/cgroup (in the rootfs)",
        ),
        (
            "a link to the root",
            &[("host", "/")],
            bind("/host", "/", &["rbind", "rw"]),
            "\"/host\" resolves to / through /host -> / (in the rootfs): a destination that reaches the container's root",
        ),
        (
            "a loop",
            &[("l1", "l2"), ("l2", "l1")],
            bind("/l1/x", "/sys", &["rbind", "rw"]),
            "more than 255 symbolic links followed",
        ),
        (
            "/sys led elsewhere",
            &[],
            json!(null),
            "\"/sys\" resolves to /elsewhere through /sys -> /elsewhere (in the rootfs): a destination written at or below /sys that a symbolic link in the rootfs leads elsewhere",
        ),
    ];
    for (name, links, mount, want) in cases {
        let sandbox = Sandbox::new(runtime);
        let bundle = Bundle::userns_hostnet(&common::probe_args());
        let rootfs = bundle.dir().join("rootfs");
        rootfs_with(&rootfs, links);
        if mount.is_null() {
            std::fs::remove_dir(rootfs.join("sys")).unwrap();
            std::os::unix::fs::symlink("/elsewhere", rootfs.join("sys")).unwrap();
        }
        bundle.edit(|spec| {
            spec["root"]["path"] = json!("rootfs");
            if !mount.is_null() {
                spec["mounts"].as_array_mut().unwrap().push(mount.clone());
            }
        });
        let snap = bundle.snapshot();
        let id = common::unique_id("dest-var");
        let _guard = ContainerGuard::new(&sandbox, &id);
        let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
        let line = out
            .stderr
            .lines()
            .find(|l| l.starts_with("userns-hostnet-runtime: refused: destination-links: mounts["))
            .unwrap_or_else(|| panic!("{name}: not refused by this rule\n{}", out.describe()));
        assert!(line.contains(want), "{name}: {line}");
        assert!(!out.success());
        snap.assert_unchanged(&bundle.config_path(), "a refusal");
        eprintln!("{name}: {line}");
    }
}

/// A missing rootfs cannot be walked: refused, saying so.
fn a_missing_rootfs_is_refused(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    bundle.edit(|spec| spec["root"]["path"] = json!("no-rootfs"));
    let id = common::unique_id("dest-none");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
    assert!(!out.success());
    assert!(
        out.stderr.contains(
            "destination-links: mounts[0].destination: \"/proc\" cannot be resolved in the rootfs"
        ) && out.stderr.contains("no-rootfs: No such file or directory"),
        "{}",
        out.describe()
    );
}

/// A link that stays on its side of /sys is the image's own business: the
/// container runs converted.
fn a_link_elsewhere_runs_converted(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    let rootfs = bundle.dir().join("rootfs");
    rootfs_with(&rootfs, &[("data", "var")]);
    bundle.edit(|spec| {
        spec["root"]["path"] = json!("rootfs");
        spec["mounts"]
            .as_array_mut()
            .unwrap()
            .push(json!({"destination": "/data", "type": "tmpfs", "source": "tmpfs"}));
    });
    let id = common::unique_id("dest-ok");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    // crun 1.8.1 brings none of the host's submounts of /sys along.
    common::assert_converted_view(&probe, runtime.is_runc());
    assert!(
        probe
            .mounts
            .iter()
            .any(|m| m.mount_point == "/var" && m.fstype == "tmpfs"),
        "the tmpfs is where the link leads\n{}",
        probe.table()
    );
}

common::for_runtimes!(runc_and_crun:
    links_onto_sys_are_refused_and_real,
    variants_are_refused,
    a_missing_rootfs_is_refused,
    a_link_elsewhere_runs_converted,
);
