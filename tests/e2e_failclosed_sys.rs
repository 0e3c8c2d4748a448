//! Every path to the host's /sys, and every way of naming a joined user
//! namespace, on the real runtimes, judged by what the container saw.
//!
//! A converted container (a user namespace and the host's network) must
//! either be refused by the wrapper with one line naming the field, or run
//! with every mount at or under /sys and every sysfs, cgroup, bpf and
//! securityfs mount anywhere read-only, and no host root in its uid_map.
//! The spellings are generated: absolute ones with empty, `.` and `..`
//! components, `/proc/self/root`, links and chains of links (absolute and
//! relative), relative sources resolved in the bundle while the wrapper
//! runs from another directory, parts of /sys, and parents of /sys bound
//! recursively or not (the host's `/`, and a bind of it elsewhere).

mod common;

use common::{Bundle, ContainerGuard, Outcome, Probe, Runtime, Sandbox};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// File system types of the /sys family, wherever they are mounted.
const FAMILY: &[&str] = &["sysfs", "cgroup", "cgroup2", "bpf", "securityfs"];

/// What the container saw that it must not have: writable /sys-family
/// mounts, host root mapped.
fn violations(probe: &Probe) -> Vec<String> {
    let mut bad: Vec<String> = probe
        .mounts
        .iter()
        .filter(|m| m.is_at_or_under("/sys") || FAMILY.contains(&m.fstype.as_str()))
        .filter(|m| !m.has("ro"))
        .map(|m| {
            format!(
                "{} ({}) writable: {}",
                m.mount_point,
                m.fstype,
                m.options.join(",")
            )
        })
        .collect();
    for line in probe.uid_map.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.get(1) == Some(&"0") {
            bad.push(format!("uid_map maps host root: {line}"));
        }
    }
    bad
}

/// How a case ended: the wrapper refused it (its one line), or the
/// container ran and this is what it saw.
enum Seen {
    Refused(String),
    Ran(Probe),
    /// The real runtime itself failed to start it (nothing ran).
    RuntimeFailed(String),
}

/// Run the probe in `bundle` through the wrapper, in the /sys view, after
/// `prepare` (a shell snippet run in the same private mount namespace), from
/// a working directory that is not the bundle.
fn run_case(sandbox: &Sandbox, bundle: &Bundle, prepare: &str, id: &str) -> (Outcome, Seen) {
    let runtime = sandbox.runtime;
    let mut argv: Vec<OsString> = vec![
        "sh".into(),
        "-c".into(),
        format!("set -e; {prepare}\nexec \"$@\"").into(),
        "prepare".into(),
    ];
    argv.extend(common::sigchld_blocked_for(runtime));
    argv.push(common::WRAPPER.into());
    argv.extend(runtime.global_args().into_iter().map(OsString::from));
    for a in [
        OsString::from("--root"),
        sandbox.root().into_os_string(),
        "run".into(),
        "--bundle".into(),
        bundle.dir().as_os_str().to_owned(),
        id.into(),
    ] {
        argv.push(a);
    }
    let mut cmd = common::in_sys_view(&argv);
    cmd.env("USERNS_HOSTNET_RUNTIME", runtime.path())
        .env("USERNS_HOSTNET_CONFIG", sandbox.config_path())
        .current_dir("/");
    let out = common::run_capture(&mut cmd);
    let seen = if out.success() {
        Seen::Ran(Probe::parse(&out.stdout))
    } else if let Some(line) = out
        .stderr
        .lines()
        .find(|l| l.starts_with("userns-hostnet-runtime: refused: "))
    {
        Seen::Refused(line.to_owned())
    } else {
        // The runtime's own error line (youki follows it with a backtrace).
        let last = out
            .stderr
            .lines()
            .rfind(|l| l.to_lowercase().contains("error"))
            .or_else(|| out.stderr.lines().last())
            .unwrap_or("(no stderr)");
        Seen::RuntimeFailed(last.to_owned())
    };
    (out, seen)
}

/// One case: a mount added (or put in the place of /sys), what to prepare
/// in the mount namespace, and what the wrapper must do.
struct Case {
    name: String,
    mount: Value,
    prepare: String,
    expect: Expect,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Expect {
    /// Runs hardened (the mount resolved and made read-only).
    Hardened,
    /// Refused, the line naming this text.
    Refused(&'static str),
    /// Runs hardened or is refused by the runtime itself: a plain bind of
    /// a parent carries no submount, and runtimes differ on whether the
    /// kernel lets them make it in a user namespace.
    HardenedOrRuntimeFails,
    /// Passed to the runtime, which fails on it (nothing ran).
    RuntimeFails,
}

fn judge(runtime: Runtime, case: &Case, out: &Outcome, seen: &Seen) {
    let what = format!("{} on {}", case.name, runtime.name());
    match (case.expect, seen) {
        (Expect::Refused(text), Seen::Refused(line)) => {
            assert!(
                line.contains(text),
                "{what}: refused, but not for {text:?}: {line}"
            );
            eprintln!("{what}: {line}");
        }
        (Expect::Hardened | Expect::HardenedOrRuntimeFails, Seen::Ran(probe)) => {
            let bad = violations(probe);
            assert!(bad.is_empty(), "{what}: {bad:#?}\n{}", probe.table());
            let extra = case.mount["destination"].as_str().unwrap();
            let at: Vec<String> = probe
                .mounts
                .iter()
                .filter(|m| m.is_at_or_under(extra))
                .map(|m| format!("{} {} {}", m.mount_point, m.fstype, m.options.join(",")))
                .collect();
            assert!(
                !at.is_empty(),
                "{what}: nothing mounted at {extra}\n{}",
                probe.table()
            );
            eprintln!(
                "{what}: ran; at {extra}: {} mounts, all /sys-family read-only",
                at.len()
            );
        }
        (Expect::HardenedOrRuntimeFails | Expect::RuntimeFails, Seen::RuntimeFailed(why)) => {
            eprintln!("{what}: the runtime refused it itself: {why}");
        }
        (_, Seen::Ran(probe)) => panic!(
            "{what}: expected {:?}, but it ran; violations: {:#?}\n{}",
            case.expect,
            violations(probe),
            probe.table()
        ),
        (_, Seen::Refused(line)) => panic!("{what}: expected {:?}, refused: {line}", case.expect),
        (_, Seen::RuntimeFailed(_)) => {
            panic!("{what}: expected {:?}\n{}", case.expect, out.describe())
        }
    }
}

/// A directory of links for one test, next to nothing else.
struct Links {
    dir: tempfile::TempDir,
}

impl Links {
    fn new() -> Links {
        Links {
            dir: tempfile::Builder::new()
                .prefix("uhn-links-")
                .tempdir()
                .unwrap(),
        }
    }

    fn link(&self, name: &str, target: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::os::unix::fs::symlink(target, &p).unwrap();
        p
    }
}

fn bind(dest: &str, source: &str, options: &[&str]) -> Value {
    json!({"destination": dest, "type": "bind", "source": source, "options": options})
}

/// Put `mount` in the spec: at /sys it takes the place of the sysfs mount
/// (and the mounts under /sys and the cgroup namespace go: a part of /sys,
/// or a parent, bound there has no `fs/cgroup` for the runtime to mount
/// on), elsewhere it is appended.
fn place(spec: &mut Value, mount: &Value) {
    if mount["destination"] == "/sys" {
        common::remove_namespace(spec, "cgroup");
        spec["mounts"]
            .as_array_mut()
            .unwrap()
            .retain(|m| !m["destination"].as_str().unwrap_or("").starts_with("/sys/"));
    }
    let mounts = spec["mounts"].as_array_mut().unwrap();
    if mount["destination"] == "/sys" {
        let i = mounts
            .iter()
            .position(|m| m["destination"] == "/sys")
            .unwrap();
        mounts[i] = mount.clone();
    } else {
        mounts.push(mount.clone());
    }
}

fn run_cases(runtime: Runtime, tag: &str, cases: Vec<Case>, bundle_setup: impl Fn(&Path)) {
    for case in cases {
        let sandbox = Sandbox::new(runtime);
        let bundle = Bundle::userns_hostnet(&common::probe_args());
        bundle_setup(bundle.dir());
        bundle.edit(|spec| place(spec, &case.mount));
        let id = common::unique_id(tag);
        let _guard = ContainerGuard::new(&sandbox, &id);
        let (out, seen) = run_case(&sandbox, &bundle, &case.prepare, &id);
        judge(runtime, &case, &out, &seen);
    }
}

/// Classes 2 and 3: the host's /sys, or part of it, under any spelling, at
/// /sys and elsewhere, read-only and (at /sys) writable.
fn sys_under_any_spelling_is_read_only_all_the_way_down(runtime: Runtime) {
    let links = Links::new();
    let abs = links.link("abs", "/sys");
    let chain = links.link("chain", abs.to_str().unwrap());
    let fs = links.link("fs", "/sys/fs");
    let mut sources: Vec<String> = vec![
        "/proc/self/root/sys".into(),
        "///sys".into(),
        "/sys/.".into(),
        "/sys/".into(),
        "/etc/../sys".into(),
        "/sys/fs".into(),
        "/sys/fs/cgroup".into(),
        "/proc/self/root/sys/fs/../kernel".into(),
        abs.display().to_string(),
        format!("{}/", chain.display()),
        format!("{}/cgroup", fs.display()),
        // Relative: resolved in the bundle, links made there below.
        "in-bundle".into(),
        "./chain-in-bundle/fs".into(),
        "up/sys".into(),
    ];
    sources.sort();
    let mut cases = Vec::new();
    for source in &sources {
        for (dest, options) in [
            ("/sys", &["rbind", "ro"][..]),
            ("/sys", &["rbind", "rw"][..]),
            ("/host/sys", &["rbind", "rprivate", "ro"][..]),
            // A writable hostPath of /sys: made read-only, never kept.
            ("/host/rw", &["rbind", "rw"][..]),
        ] {
            cases.push(Case {
                name: format!("{source} at {dest} {options:?}"),
                mount: bind(dest, source, options),
                prepare: String::new(),
                expect: if source.starts_with('/') {
                    Expect::Hardened
                } else {
                    relative_expect(runtime)
                },
            });
        }
    }
    let abs_link = abs.display().to_string();
    run_cases(runtime, "fcsys", cases, |bundle| {
        std::os::unix::fs::symlink(&abs_link, bundle.join("in-bundle")).unwrap();
        std::os::unix::fs::symlink("in-bundle", bundle.join("chain-in-bundle")).unwrap();
        std::os::unix::fs::symlink("/", bundle.join("up")).unwrap();
    });
}

/// A relative source: runc and crun resolve it in the bundle, as the
/// wrapper does. youki resolves it in its working directory (here `/`,
/// not the bundle), so the wrapper resolves it in both and hardens it if
/// either is the /sys tree: youki then runs it hardened (at /sys the
/// source becomes `/sys`) or fails to find it in `/`.
fn relative_expect(runtime: Runtime) -> Expect {
    match runtime {
        Runtime::Youki => Expect::HardenedOrRuntimeFails,
        _ => Expect::Hardened,
    }
}

/// Class 3 with `..`: a relative source climbing out of the bundle to a
/// link beside it.
fn relative_source_above_the_bundle(runtime: Runtime) {
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    for (dest, target) in [
        ("/sys", "/sys"),
        ("/host/sys", "/sys"),
        ("/host/cg", "/sys/fs/cgroup"),
    ] {
        let sandbox = Sandbox::new(runtime);
        let bundle = Bundle::userns_hostnet(&common::probe_args());
        let name = format!("{}-up", bundle.dir().file_name().unwrap().to_string_lossy());
        let beside = bundle.dir().parent().unwrap().join(&name);
        std::os::unix::fs::symlink(target, &beside).unwrap();
        let _remove = Remove(beside);
        let case = Case {
            name: format!("../{name} (-> {target}) at {dest}"),
            mount: bind(dest, &format!("../{name}"), &["rbind", "ro"]),
            prepare: String::new(),
            expect: relative_expect(runtime),
        };
        bundle.edit(|spec| place(spec, &case.mount));
        let id = common::unique_id("fcrel");
        let _guard = ContainerGuard::new(&sandbox, &id);
        let (out, seen) = run_case(&sandbox, &bundle, "", &id);
        judge(runtime, &case, &out, &seen);
    }
}

/// Class 4: parents of /sys. A recursive bind carries /sys and everything
/// under it; a plain one carries none of it.
fn parents_of_sys_bound_recursively_are_read_only(runtime: Runtime) {
    let alias = tempfile::Builder::new()
        .prefix("uhn-hostroot-")
        .tempdir()
        .unwrap();
    let alias = alias.path().display().to_string();
    let links = Links::new();
    let root_link = links.link("root", "/").display().to_string();
    // A bind of the host's / made in the test's private mount namespace,
    // as a node mounts its root at /host-root for an agent.
    let mount_alias = format!("mount --rbind / {alias}");
    let mut cases = Vec::new();
    for (source, prepare) in [
        ("/", String::new()),
        ("/.", String::new()),
        (root_link.as_str(), String::new()),
        (alias.as_str(), mount_alias.clone()),
    ] {
        cases.push(Case {
            name: format!("{source} at /host/root rbind,ro"),
            mount: bind("/host/root", source, &["rbind", "ro"]),
            prepare: prepare.clone(),
            expect: Expect::Hardened,
        });
        cases.push(Case {
            name: format!("{source} at /host/root bind,ro"),
            mount: bind("/host/root", source, &["bind", "ro"]),
            prepare: prepare.clone(),
            expect: Expect::HardenedOrRuntimeFails,
        });
    }
    cases.push(Case {
        name: "/ at /sys rbind,ro".into(),
        mount: bind("/sys", "/", &["rbind", "ro"]),
        prepare: String::new(),
        expect: Expect::Hardened,
    });
    run_cases(runtime, "fcparent", cases, |_| {});
}

/// A source that cannot be resolved in a converted container is refused,
/// naming the field; one that does not exist (missing, a dangling link)
/// binds nothing, and the runtime fails on it, as it would alone.
fn unresolvable_sources_are_refused(runtime: Runtime) {
    let cases = vec![
        Case {
            name: "missing relative".into(),
            mount: bind("/host/x", "missing-in-bundle", &["rbind", "ro"]),
            prepare: String::new(),
            expect: Expect::RuntimeFails,
        },
        Case {
            name: "a dangling link".into(),
            mount: bind("/host/x", "dangling", &["rbind", "ro"]),
            prepare: String::new(),
            expect: Expect::RuntimeFails,
        },
        Case {
            // pid 1 is in the host's mount namespace, the wrapper in the
            // test's private one: its /sys is not the one the wrapper sees.
            name: "/proc/1/root/sys from another mount namespace".into(),
            mount: bind("/sys", "/proc/1/root/sys", &["rbind", "ro"]),
            prepare: String::new(),
            expect: Expect::Refused("].source: \"/proc/1/root/sys\" cannot be resolved"),
        },
    ];
    run_cases(runtime, "fcunres", cases, |bundle| {
        std::os::unix::fs::symlink("/nonexistent/sys", bundle.join("dangling")).unwrap();
    });
}

/// A process in a user namespace that maps host root (uid_map `0 0 1`),
/// killed when dropped.
struct RootMappedNs {
    child: Child,
}

impl RootMappedNs {
    fn start() -> RootMappedNs {
        let held = RootMappedNs {
            child: Command::new("unshare")
                .args(["--user", "--map-root-user", "sleep", "600"])
                .spawn()
                .expect("unshare --user (util-linux)"),
        };
        let pid = held.pid();
        // Wait until the child is in its namespace with its maps written.
        for _ in 0..200 {
            let map = std::fs::read_to_string(format!("/proc/{pid}/uid_map")).unwrap_or_default();
            let own = std::fs::read_link(format!("/proc/{pid}/ns/user")).ok();
            if map.split_whitespace().nth(2) == Some("1")
                && own != std::fs::read_link("/proc/self/ns/user").ok()
            {
                return held;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("unshare --user --map-root-user did not get its namespace");
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for RootMappedNs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Class 5: a joined user namespace mapping host root, named by any path
/// to its nsfs file, is refused.
fn joined_user_namespace_by_any_path_is_checked(runtime: Runtime) {
    let ns = RootMappedNs::start();
    let pid = ns.pid();
    let links = Links::new();
    let link = links.link("userns", &format!("/proc/{pid}/ns/user"));
    let bound = links.dir.path().join("bound");
    std::fs::write(&bound, "").unwrap();
    let bind_ns = format!("mount --bind /proc/{pid}/ns/user {}", bound.display());
    let cases: Vec<(String, String)> = vec![
        (format!("/proc/{pid}/ns/user"), String::new()),
        (format!("/proc/{pid}/task/{pid}/ns/user"), String::new()),
        (format!("/proc/{pid}/./ns//user"), String::new()),
        (link.display().to_string(), String::new()),
        (bound.display().to_string(), bind_ns),
    ];
    // The spec gives no mappings (crun reads the namespace's), or gives
    // harmless ones that are not the namespace's (runc 1.1.5 wants some):
    // either way the container would run with uid_map `0 0 1`.
    let lie = json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
    for (path, prepare) in cases {
        for given in [None, Some(&lie)] {
            let sandbox = Sandbox::new(runtime);
            let bundle = Bundle::userns_hostnet(&common::probe_args());
            bundle.edit(|spec| join_user_namespace(spec, &path, given));
            let id = common::unique_id("fcns");
            let _guard = ContainerGuard::new(&sandbox, &id);
            let (out, seen) = run_case(&sandbox, &bundle, &prepare, &id);
            let case = Case {
                name: format!(
                    "user namespace joined by {path}, {}",
                    if given.is_some() {
                        "other mappings given"
                    } else {
                        "no mappings given"
                    }
                ),
                mount: json!({"destination": "/"}),
                prepare: prepare.clone(),
                expect: Expect::Refused(if given.is_some() {
                    "idmap: linux.uidMappings: differ from "
                } else {
                    "idmap: linux.uidMappings[0]: maps host root (host 0)"
                }),
            };
            judge(runtime, &case, &out, &seen);
        }
    }
    // A namespace no process is in any more, kept by its bind mount (as
    // CRI-O's pinns keeps a pod's): a child of the wrapper enters it, its
    // maps are read from there, and host root mapped is refused. The
    // process holding it is
    // made, bound and reaped in the wrapper's own mount namespace.
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    let path = bound.display().to_string();
    bundle.edit(|spec| join_user_namespace(spec, &path, None));
    let id = common::unique_id("fcnsgone");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let prepare = format!(
        "unshare --user --map-root-user sleep 600 & pid=$!\n\
         until [ \"$(awk '{{print $3}}' /proc/$pid/uid_map)\" = 1 ]; do sleep 0.05; done\n\
         mount --bind /proc/$pid/ns/user {path}\n\
         kill $pid; wait $pid || true"
    );
    let (out, seen) = run_case(&sandbox, &bundle, &prepare, &id);
    let case = Case {
        name: format!("user namespace kept only by a bind mount at {path}"),
        mount: json!({"destination": "/"}),
        prepare,
        expect: Expect::Refused("maps host root (host 0)"),
    };
    judge(runtime, &case, &out, &seen);
}

/// Join the user namespace at `path`, with `mappings` given for it or
/// none; devpts without `gid=5`, which a one-ID namespace does not map.
fn join_user_namespace(spec: &mut Value, path: &str, mappings: Option<&Value>) {
    for n in spec["linux"]["namespaces"].as_array_mut().unwrap() {
        if n["type"] == "user" {
            n["path"] = json!(path);
        }
    }
    let linux = spec["linux"].as_object_mut().unwrap();
    match mappings {
        Some(m) => {
            linux.insert("uidMappings".into(), m.clone());
            linux.insert("gidMappings".into(), m.clone());
        }
        None => {
            linux.remove("uidMappings");
            linux.remove("gidMappings");
        }
    }
    for m in spec["mounts"].as_array_mut().unwrap() {
        if m["type"] == "devpts" {
            if let Some(options) = m["options"].as_array_mut() {
                options.retain(|o| o != "gid=5");
            }
        }
    }
}

/// Anything mounted under the container's /sys is read-only: writable
/// binds of parts of the host's /sys (or of another directory) at a
/// destination under /sys, and a cgroup mount asked `rw`.
fn everything_under_sys_is_read_only(runtime: Runtime) {
    let dir = tempfile::Builder::new()
        .prefix("uhn-undersys-")
        .tempdir()
        .unwrap();
    let other = dir.path().display().to_string();
    let cases = vec![
        Case {
            name: "/sys/kernel at /sys/kernel rbind,rw".into(),
            mount: bind("/sys/kernel", "/sys/kernel", &["rbind", "rw"]),
            prepare: String::new(),
            expect: Expect::Hardened,
        },
        Case {
            name: "/sys at /sys/fs rbind".into(),
            mount: bind("/sys/fs", "/sys", &["rbind"]),
            prepare: String::new(),
            expect: Expect::Hardened,
        },
        Case {
            name: "/sys/fs/cgroup at /sys/kernel/mm rbind,rw".into(),
            mount: bind("/sys/kernel/mm", "/sys/fs/cgroup", &["rbind", "rw"]),
            prepare: String::new(),
            expect: Expect::Hardened,
        },
        Case {
            name: "another directory at /sys/block bind,rw".into(),
            mount: bind("/sys/block", &other, &["bind", "rw"]),
            prepare: String::new(),
            expect: Expect::Hardened,
        },
        Case {
            name: "cgroup at /sys/fs/cgroup rw".into(),
            mount: json!({"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
                          "options": ["nosuid", "noexec", "nodev", "rw"]}),
            prepare: String::new(),
            expect: Expect::Hardened,
        },
    ];
    run_cases(runtime, "fcunder", cases, |_| {});
}

/// Class 1 of the fourth round: runc's default root propagation (rslave)
/// makes a bind of the host's /sys a slave of it, and `rro` is applied
/// once; a mount the host makes there later would arrive writable. The
/// wrapper's /sys is `rprivate`: nothing arrives. Without the wrapper, a
/// spec with containerd 2.3's own `rbind,rro` /sys receives it writable
/// under runc (crun makes /sys private itself).
fn a_mount_the_host_makes_later_never_arrives_writable(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "600"]);
    let id = common::unique_id("later");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let mut argv: Vec<OsString> = vec![common::WRAPPER.into()];
    argv.extend(runtime.global_args().into_iter().map(OsString::from));
    let seen = common::scenarios::mounted_after_start(&sandbox, &bundle, &argv, &id);
    let writable: Vec<&common::MountEntry> = seen.iter().filter(|m| !m.has("ro")).collect();
    assert!(
        writable.is_empty(),
        "{}: a mount the host made later arrived writable: {writable:#?}",
        runtime.name()
    );
    eprintln!(
        "{} with the wrapper: {} mount(s) of the host's later mount seen, none writable",
        runtime.name(),
        seen.len()
    );

    let baseline = Bundle::userns_hostnet(&["/bin/sleep", "600"]);
    baseline.edit(|spec| {
        for m in spec["mounts"].as_array_mut().unwrap() {
            if m["destination"] == "/sys" {
                *m = json!({"destination": "/sys", "type": "bind", "source": "/sys",
                            "options": ["rbind", "rro", "nosuid", "nodev", "noexec"]});
            }
        }
    });
    let id = common::unique_id("later-base");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let mut argv: Vec<OsString> = vec![runtime.path().into()];
    argv.extend(runtime.global_args().into_iter().map(OsString::from));
    let seen = common::scenarios::mounted_after_start(&sandbox, &baseline, &argv, &id);
    let leaked = seen.iter().any(|m| !m.has("ro"));
    eprintln!(
        "{} alone, /sys rbind,rro without rprivate: later mount {}",
        runtime.name(),
        if leaked {
            "arrived writable"
        } else {
            "did not arrive writable"
        }
    );
    if !runtime.is_crun() {
        assert!(
            leaked,
            "{}: the class is expected to be real without the wrapper: {seen:#?}",
            runtime.name()
        );
    }
}

/// The fourth round's classes on runc 1.1.5, runc 1.4.3 and crun 1.8.1.
mod fourth_round {
    use super::{
        a_mount_the_host_makes_later_never_arrives_writable, everything_under_sys_is_read_only,
    };
    crate::common::for_runtimes!(
        runc_and_crun: everything_under_sys_is_read_only,
        a_mount_the_host_makes_later_never_arrives_writable
    );
}

common::for_runtimes!(
    sys_under_any_spelling_is_read_only_all_the_way_down,
    relative_source_above_the_bundle,
    parents_of_sys_bound_recursively_are_read_only,
    unresolvable_sources_are_refused,
    joined_user_namespace_by_any_path_is_checked,
);
