//! OCI hook mode, for stacks that run without the wrapper.
//!
//! `hook create-runtime` runs after the runtime has made the container's
//! mounts and before `pivot_root`. It cannot change the spec any more, but
//! it can harden and verify: for a container that needs the conversion it
//! enters the container's mount namespace, makes the tree at `<rootfs>/sys`
//! recursively read-only, nosuid, nodev and noexec (what `rro` would have
//! done), checks the result in `/proc/PID/mountinfo`, and fails the create
//! with one line on stderr when that or the engine's checks (ID mappings)
//! fail. Every other container costs a parse of the state and of
//! config.json.
//!
//! `hook precreate` (podman only) gets the proposed spec on stdin and
//! prints the converted one: the wrapper's conversion, without the wrapper.

pub mod harden;
pub mod mountinfo;

use serde::Deserialize;
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use userns_hostnet::bundle;
use userns_hostnet::config;
use userns_hostnet::decisionlog::{Ending, Entry};
use userns_hostnet::host;
use userns_hostnet::plan::{self, Rro};
use userns_hostnet::runtime;
use userns_hostnet::sys;
use userns_hostnet_engine::{fields, strict, write, Plan, Refusal, Spec};

/// The words naming each stage in errors and the decision log.
pub const CREATE_RUNTIME: &str = "hook create-runtime";
pub const PRECREATE: &str = "hook precreate";

/// The OCI state is a few kilobytes; a spec rarely more than a hundred.
const MAX_STATE: u64 = 1 << 20;
const MAX_SPEC: u64 = strict::MAX_BYTES;

/// The part of the OCI state the hook reads.
#[derive(Debug, Deserialize)]
pub struct State {
    #[serde(default)]
    pub id: String,
    pub pid: Option<i64>,
    pub bundle: PathBuf,
}

impl State {
    pub fn parse(bytes: &[u8]) -> Result<State, HookError> {
        serde_json::from_slice(bytes).map_err(HookError::State)
    }

    /// The container's init process, which the runtime must have given.
    pub fn pid(&self) -> Result<i32, HookError> {
        match self.pid {
            Some(p) if p > 0 => i32::try_from(p).map_err(|_| HookError::PidOutOfRange(p)),
            Some(p) => Err(HookError::NoProcess(format!("has pid {p}"))),
            None => Err(HookError::NoProcess("has no pid".into())),
        }
    }
}

/// `hook create-runtime`: the exit status.
pub fn create_runtime() -> Result<i32, StageError> {
    let stage = |e| StageError(CREATE_RUNTIME, e);
    let input = read_input(MAX_STATE).map_err(stage)?;
    create_runtime_with(&input).map_err(stage)?;
    Ok(0)
}

/// What `hook create-runtime` did for one container.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The container does not need the conversion: nothing was done.
    NotNeeded,
    /// These mount points were made read-only, recursively, and verified:
    /// the number of mounts in the tree.
    Hardened { points: Vec<String>, mounts: usize },
}

/// The whole stage for one state document. `Err` is the line for stderr.
pub fn create_runtime_with(state_bytes: &[u8]) -> Result<Outcome, HookError> {
    let state = State::parse(state_bytes)?;
    let file = bundle::SpecFile::read(&state.bundle.join(bundle::CONFIG))?
        .ok_or_else(|| HookError::NoConfig(state.bundle.clone()))?;
    // The runtime read this spec already, but maybe not as the engine
    // would: a spec that two readers could read differently fails here too.
    let doc = Spec::read(file.bytes).map_err(|r| {
        refused_unread(CREATE_RUNTIME, &r, Some(&state));
        HookError::Refused(r)
    })?;
    // The fast path: no file but config.json is read, no system call is
    // made unless the spec names namespace paths. A spec the engine
    // refuses (a namespace path it cannot read, say) is refused here too:
    // with the plain runtime behind podman or CRI-O, this stage is the only
    // guard, and "not needed" would let the container start unhardened.
    let prepared = match plan::prepare(doc) {
        Ok(p) if p.needs_conversion() => p,
        Ok(_) => return Ok(Outcome::NotNeeded),
        Err(r) => {
            refused_unread(CREATE_RUNTIME, &r, Some(&state));
            return Err(HookError::Refused(r));
        }
    };
    let pid = state.pid()?;
    let config = config::load()?;
    let rootfs = rootfs_of(prepared.spec(), &state.bundle)?;
    let sys_in_spec = mounts_at_sys(prepared.spec());
    // This stage makes the tree read-only itself: the runtime's support for
    // `rro` does not matter here.
    let planned = prepared.evaluate(Some(&state.bundle), &config.policy, Rro::Assume);
    let result = match &planned {
        Err(r) => Err(HookError::Refused(r.clone())),
        Ok(plan) => match read_only_trees(plan) {
            Err(r) => Err(HookError::Refused(r)),
            Ok(trees) => harden(pid, &rootfs, &trees, sys_in_spec).map_err(HookError::Harden),
        },
    };
    let warnings = planned.as_ref().map(unapplied_changes).unwrap_or_default();
    let mut entry = Entry::ending(
        CREATE_RUNTIME,
        match (&planned, &result) {
            (Err(r), _) => Ending::Refused(r),
            (Ok(plan), Err(e)) => Ending::Failed(Some(plan), e.to_string()),
            (Ok(plan), Ok(_)) => Ending::Planned(Some(plan)),
        },
    );
    entry.id = Some(state.id.clone());
    entry.bundle = state.bundle.display().to_string();
    entry.converted = result.is_ok();
    // This stage changes no spec: what the plan would have changed that it
    // cannot goes into the warnings instead.
    entry.changes = &[];
    entry.warnings = &warnings;
    entry.record(&config.log);
    result
}

/// What the plan would change in the spec that this stage cannot: the
/// operator should know that, e.g., the network capabilities stay.
fn unapplied_changes(plan: &Plan) -> Vec<String> {
    let mut out = plan.findings.warnings.clone();
    let mut rules: Vec<&str> = plan
        .findings
        .changes
        .iter()
        .map(|c| c.rule)
        .filter(|r| {
            // The hook hardens /sys and the other binds of the host's
            // /sys tree itself; the namespaces were joined already (the
            // runtime got this far).
            ![
                userns_hostnet_engine::rules::sysfs::NAME,
                userns_hostnet_engine::rules::sys_binds::NAME,
                userns_hostnet_engine::rules::order::NAME,
                userns_hostnet_engine::rules::own_ns::NAME,
            ]
            .contains(r)
        })
        .collect();
    rules.dedup();
    if !rules.is_empty() {
        out.push(format!(
            "a createRuntime hook cannot change the spec; not applied: {} (use the wrapper or, with podman, the precreate hook)",
            rules.join(", ")
        ));
    }
    out
}

/// The rootfs as the runtime mounted it: `root.path`, relative to the
/// bundle, with links resolved.
pub fn rootfs_of(doc: &Spec, bundle_dir: &Path) -> Result<PathBuf, HookError> {
    let root = doc
        .view()
        .get("root")
        .and_then(|r| r.get("path"))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .ok_or(HookError::NoRootPath)?;
    let joined = bundle_dir.join(root);
    Ok(std::fs::canonicalize(&joined)
        .unwrap_or_else(|_| PathBuf::from(fields::clean_path(&joined.to_string_lossy()))))
}

/// The state's pid must be the container's: hardening the hook's own or
/// the host's mount namespace would make the host's /sys read-only.
fn refuse_own_mount_namespace(pid: i32) -> Result<(), String> {
    let id = |path: &str| {
        host::namespace_facts(path, false)
            .map(|f| f.id)
            .map_err(|e| format!("{path}: {e}"))
    };
    let refuse = |whose: &str| {
        Err(format!(
            "pid {pid} of the OCI state is in {whose} mount namespace, not a container's: refusing to harden it"
        ))
    };
    if pid == 1 {
        return refuse("the initial");
    }
    let target = id(&format!("/proc/{pid}/ns/mnt"))?;
    if id("/proc/self/ns/mnt")? == target {
        return refuse("this hook's own");
    }
    // A runtime may run the hook without the right to inspect pid 1
    // (EACCES): then only the comparisons above can be made.
    if id("/proc/1/ns/mnt").is_ok_and(|init| init == target) {
        return refuse("the initial");
    }
    Ok(())
}

/// Does the spec mount anything at /sys?
fn mounts_at_sys(doc: &Spec) -> bool {
    doc.mounts().is_ok_and(|list| {
        list.iter()
            .enumerate()
            .any(|(i, m)| m.destination(i).is_ok_and(|d| d == "/sys"))
    })
}

/// Each mount of `doc` as its cleaned destination and its options.
fn mount_options(doc: &Spec) -> Result<Vec<(String, Vec<String>)>, Refusal> {
    let list = doc.mounts()?;
    let mut out = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let options = m.options(i)?.into_iter().map(|o| o.into_owned()).collect();
        out.push((list.destination(i)?.into_owned(), options));
    }
    Ok(out)
}

/// A tree of mounts this stage restricts: where it is in the container,
/// and the options each of its mounts must have after.
struct Tree {
    dest: String,
    options: Vec<&'static str>,
}

/// The trees the plan mounts read-only recursively (`rro`), each with
/// the options it names: /sys, with nosuid, nodev and noexec, each other
/// bind of the host's /sys tree the sys-binds rule converts (a hostPath of
/// /sys at /host/sys with the same; the host's / at /host/root, read-only
/// alone), and any mount the spec itself says `rro` for. What the wrapper
/// has the runtime make, this stage makes itself, and verifies: a runtime
/// that does not know `rro` (runc before 1.2 takes it for filesystem data
/// and ignores it on a bind) leaves such a tree's submounts writable.
fn read_only_trees(plan: &Plan) -> Result<Vec<Tree>, Refusal> {
    let mut trees = vec![Tree {
        dest: "/sys".to_owned(),
        options: mountinfo::HARDENED.to_vec(),
    }];
    for (dest, options) in mount_options(&plan.spec)? {
        if !options.iter().any(|o| o == "rro") || trees.iter().any(|t| t.dest == dest) {
            continue;
        }
        let given = |o: &str| options.iter().any(|x| x == o);
        trees.push(Tree {
            dest,
            options: mountinfo::HARDENED
                .into_iter()
                .filter(|o| *o == "ro" || given(o))
                .collect(),
        });
    }
    Ok(trees)
}

/// Make every mount at or under each of `trees` in the container's mount
/// namespace carry the tree's options (read-only, and nosuid, nodev and
/// noexec as given), and check that it does. A tree other than /sys that
/// is not mounted fails: the plan says the runtime mounted it, and what is
/// not there cannot be verified. An unmounted /sys fails only when the
/// spec mounts one (`expect_sys`).
fn harden(pid: i32, rootfs: &Path, trees: &[Tree], expect_sys: bool) -> Result<Outcome, String> {
    let container = harden::Container::open(pid)?;
    refuse_own_mount_namespace(pid)?;
    let before = sys::mountinfo::parse(&container.mountinfo()?);
    let mut targets = Vec::new();
    for tree in trees {
        let target = rootfs
            .join(tree.dest.trim_start_matches('/'))
            .to_string_lossy()
            .into_owned();
        let found = mountinfo::visible_tree(&before, &target);
        if found.mounts.is_empty() {
            if tree.dest != "/sys" || expect_sys {
                return Err(format!(
                    "no mount at {target} in /proc/{pid}/mountinfo: the container's {} cannot be hardened or verified",
                    tree.dest
                ));
            }
            continue;
        }
        targets.push((target, found.points, &tree.options));
    }
    let mut points: Vec<String> = Vec::new();
    for p in targets.iter().flat_map(|(_, p, _)| p) {
        if !points.contains(p) {
            points.push(p.clone());
        }
    }
    if points.is_empty() {
        return Ok(Outcome::Hardened { points, mounts: 0 });
    }
    container.enter_mount_namespace()?;
    for (_, tree_points, options) in &targets {
        for p in tree_points {
            harden::restrict(p, options)?;
        }
    }
    let after = sys::mountinfo::parse(&container.mountinfo()?);
    let mut mounts = 0;
    for (target, was, options) in &targets {
        let tree = mountinfo::visible_tree(&after, target);
        let mut bad = mountinfo::lacking(&tree.mounts, options);
        bad.extend(mountinfo::receiving(&tree.mounts));
        if !bad.is_empty() {
            return Err(format!(
                "{target} is not read-only after mount_setattr: {}",
                bad.join("; ")
            ));
        }
        if tree.points != *was {
            return Err(format!(
                "the mounts at {target} changed while hardening them: {was:?} became {:?}",
                tree.points
            ));
        }
        mounts += tree.mounts.len();
    }
    Ok(Outcome::Hardened { points, mounts })
}

/// `hook precreate`: the exit status.
pub fn precreate() -> Result<i32, StageError> {
    let stage = |e| StageError(PRECREATE, e);
    let input = read_input(MAX_SPEC).map_err(stage)?;
    let output = precreate_with(&input).map_err(stage)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&output)
        .and_then(|()| out.flush())
        .map_err(|e| stage(HookError::Stdout(e)))?;
    Ok(0)
}

/// The converted spec for a proposed one: the input itself, byte for byte,
/// when nothing changes.
pub fn precreate_with(input: &[u8]) -> Result<Vec<u8>, HookError> {
    let doc = Spec::read(input.to_vec()).map_err(|r| {
        refused_unread(PRECREATE, &r, None);
        HookError::Refused(r)
    })?;
    let config = config::load()?;
    // podman does not tell a hook which runtime it runs: the one the
    // wrapper would choose.
    let runtime = runtime::choose(None, &config.runtime);
    let planned = match &runtime {
        Ok(rt) => plan::prepare(doc)
            .and_then(|p| {
                p.evaluate(
                    None,
                    &config.policy,
                    Rro::Probe(&runtime::RealRuntime::of(rt.clone())),
                )
            })
            .map_err(HookError::Refused),
        Err(e) => Err(HookError::Lookup(e.to_string())),
    };
    // Written and checked as the wrapper checks what it writes, before the
    // decision is logged: bytes that do not read back as the plan fail the
    // hook (and so the container), and the log says so.
    let written = planned.and_then(|plan| {
        let bytes = match plan.changed() {
            true => write::write_checked(&plan.spec).map_err(HookError::Refused)?,
            false => input.to_vec(),
        };
        Ok((plan, bytes))
    });
    let mut entry = Entry::ending(
        PRECREATE,
        match &written {
            Ok((plan, _)) => Ending::Planned(Some(plan)),
            Err(HookError::Refused(r)) => Ending::Refused(r),
            Err(HookError::Lookup(e)) => Ending::Failed(None, e.clone()),
            Err(e) => Ending::Failed(None, e.to_string()),
        },
    );
    entry.runtime = runtime.as_ref().ok().map(|r| r.display().to_string());
    entry.record(&config.log);
    Ok(written?.1)
}

/// The decision log line for a spec refused before any plan: podman shows
/// only a failing hook's exit status, the reason is there. A config file
/// that cannot be read leaves the refusal to stderr alone.
fn refused_unread(stage: &'static str, refusal: &Refusal, state: Option<&State>) {
    let Ok(config) = config::load() else {
        return;
    };
    let mut entry = Entry::ending(stage, Ending::Refused(refusal));
    if let Some(s) = state {
        entry.id = Some(s.id.clone());
        entry.bundle = s.bundle.display().to_string();
    }
    entry.record(&config.log);
}

/// Why a hook stage fails (and the container with it).
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("the OCI state on stdin: {0}")]
    State(serde_json::Error),
    #[error("pid {0} out of range")]
    PidOutOfRange(i64),
    #[error("the OCI state {0}: the container has no process yet")]
    NoProcess(String),
    #[error(transparent)]
    Bundle(#[from] bundle::BundleError),
    #[error("{}: no {}", .0.display(), bundle::CONFIG)]
    NoConfig(PathBuf),
    #[error("config.json: root.path is missing")]
    NoRootPath,
    #[error("config: {0}")]
    Config(#[from] config::ConfigError),
    #[error("refused: {0}")]
    Refused(Refusal),
    #[error("{0}")]
    Harden(String),
    #[error("cannot probe the runtime for rro: {0}")]
    Lookup(String),
    #[error("reading stdin: {0}")]
    Stdin(std::io::Error),
    #[error("more than {0} bytes on stdin")]
    TooLarge(u64),
    #[error("writing the spec to stdout: {0}")]
    Stdout(std::io::Error),
}

/// A hook error with the stage it stopped: `hook create-runtime: ...`.
#[derive(Debug, thiserror::Error)]
#[error("{0}: {1}")]
pub struct StageError(pub &'static str, pub HookError);

/// A decision log that cannot be written never fails a container.
fn read_input(limit: u64) -> Result<Vec<u8>, HookError> {
    let mut buf = Vec::new();
    std::io::stdin()
        .lock()
        .take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(HookError::Stdin)?;
    if buf.len() as u64 > limit {
        return Err(HookError::TooLarge(limit));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc_of(v: &Value) -> Spec {
        Spec::from_value(v).unwrap()
    }

    #[test]
    fn state_needs_a_pid() {
        let s = State::parse(br#"{"ociVersion":"1.0.2","id":"c","status":"creating","pid":42,"bundle":"/b","annotations":{"a":"b"}}"#).unwrap();
        assert_eq!((s.id.as_str(), s.pid().unwrap()), ("c", 42));
        assert_eq!(s.bundle, Path::new("/b"));
        let s = State::parse(br#"{"id":"c","bundle":"/b"}"#).unwrap();
        assert!(s.pid().unwrap_err().to_string().contains("no pid"));
        let s = State::parse(br#"{"id":"c","pid":0,"bundle":"/b"}"#).unwrap();
        assert!(s.pid().is_err());
        assert!(State::parse(b"{}").is_err(), "the bundle is required");
    }

    #[test]
    fn rootfs_is_relative_to_the_bundle() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("rootfs")).unwrap();
        std::os::unix::fs::symlink("rootfs", dir.path().join("link")).unwrap();
        let real = std::fs::canonicalize(dir.path().join("rootfs")).unwrap();
        for root in ["rootfs", "link", "./rootfs/"] {
            let doc = json!({"root": {"path": root}});
            assert_eq!(
                rootfs_of(&doc_of(&doc), dir.path()).unwrap(),
                real,
                "{root}"
            );
        }
        let doc = json!({"root": {"path": "/nonexistent/x/../y"}});
        assert_eq!(
            rootfs_of(&doc_of(&doc), dir.path()).unwrap(),
            Path::new("/nonexistent/y")
        );
        assert!(rootfs_of(&doc_of(&json!({})), dir.path()).is_err());
    }

    #[test]
    fn containers_without_the_need_cost_nothing_more() {
        let dir = tempfile::tempdir().unwrap();
        let spec = json!({"root": {"path": "rootfs"}, "linux": {"namespaces": [{"type": "mount"}, {"type": "network"}]}});
        std::fs::write(dir.path().join("config.json"), spec.to_string()).unwrap();
        let state = json!({"id": "x", "pid": 1, "bundle": dir.path()});
        assert_eq!(
            create_runtime_with(state.to_string().as_bytes()).unwrap(),
            Outcome::NotNeeded
        );
        let state = json!({"id": "x", "bundle": dir.path().join("missing")});
        let e = create_runtime_with(state.to_string().as_bytes()).unwrap_err();
        assert!(e.to_string().contains("no config.json"), "{e}");
    }

    #[test]
    fn a_namespace_it_cannot_read_is_refused_not_waved_through() {
        let dir = tempfile::tempdir().unwrap();
        let spec = json!({"root": {"path": "rootfs"}, "linux": {"namespaces": [
            {"type": "user", "path": "/proc/999999999/ns/user"},
            {"type": "network", "path": "/proc/999999999/ns/net"}]}});
        std::fs::write(dir.path().join("config.json"), spec.to_string()).unwrap();
        let state = json!({"id": "x", "pid": 1, "bundle": dir.path()});
        let e = create_runtime_with(state.to_string().as_bytes()).unwrap_err();
        assert!(
            matches!(&e, HookError::Refused(r) if r.field.starts_with("linux.namespaces[")),
            "{e}"
        );
    }

    #[test]
    fn the_hooks_own_mount_namespace_is_refused() {
        let e = refuse_own_mount_namespace(std::process::id() as i32).unwrap_err();
        assert!(e.contains("this hook's own mount namespace"), "{e}");
        assert!(refuse_own_mount_namespace(999_999_999).is_err());
        assert!(refuse_own_mount_namespace(1)
            .unwrap_err()
            .contains("the initial"));
    }

    #[test]
    fn sys_in_spec() {
        assert!(mounts_at_sys(&doc_of(
            &json!({"mounts": [{"destination": "/sys/"}]})
        )));
        assert!(!mounts_at_sys(&doc_of(
            &json!({"mounts": [{"destination": "/sys/fs/cgroup"}]})
        )));
        assert!(!mounts_at_sys(&doc_of(&json!({}))));
    }
}
