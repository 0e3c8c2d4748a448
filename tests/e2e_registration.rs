//! Registration against the real daemons, on the corpus of real configs
//! (tests/fixtures/daemons): for every file and every daemon version,
//! `install` on a private copy, then the daemon's own reader
//! (`containerd config dump`, `crio config`, `podman info`) must accept the
//! result; the new handler must have every setting of the handler it was
//! derived from (the runtime binary aside, which must be the wrapper's
//! link); the wrapper must run the real runtime that handler ran; a second
//! install changes no byte; uninstall gives back every file byte for byte.
//! Then what the operator walk broke, one test each, with the
//! daemons started on the result where starting is what broke.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::registration::{last_lines, text, Daemon, Stage, HANDLER};
use toml::Value;

/// A handler's settings, as dotted keys (`options.BinaryName`).
type Settings = BTreeMap<String, Value>;

fn flatten(prefix: &str, v: &Value, out: &mut Settings) {
    match v {
        Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        other => {
            out.insert(prefix.to_owned(), other.clone());
        }
    }
}

fn dig<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(v, |v, k| v.get(k))
}

/// What a daemon reads from a staged config: its default handler's name
/// and every handler's settings.
struct Reading {
    default: String,
    handlers: BTreeMap<String, Settings>,
}

impl Reading {
    fn of(st: &Stage) -> Result<Reading, String> {
        let dump = st.dump()?;
        let (cri, default_key): (&[&str], &str) = match st.daemon {
            Daemon::Crio => (&["crio", "runtime"], "default_runtime"),
            Daemon::Containerd16 | Daemon::Containerd17 => (
                &["plugins", "io.containerd.grpc.v1.cri", "containerd"],
                "default_runtime_name",
            ),
            _ => (
                &["plugins", "io.containerd.cri.v1.runtime", "containerd"],
                "default_runtime_name",
            ),
        };
        let section = dig(&dump, cri).ok_or_else(|| format!("no {cri:?} in the dump"))?;
        let default = section
            .get(default_key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut handlers = BTreeMap::new();
        if let Some(Value::Table(t)) = section.get("runtimes") {
            for (name, table) in t {
                let mut s = Settings::new();
                flatten("", table, &mut s);
                handlers.insert(name.clone(), s);
            }
        }
        Ok(Reading { default, handlers })
    }

    fn handler(&self, name: &str) -> &Settings {
        self.handlers.get(name).unwrap_or_else(|| {
            panic!(
                "the daemon reads no handler {name:?}: has {:?}",
                self.handlers.keys()
            )
        })
    }
}

/// The key naming the runtime binary, which must be the wrapper's link.
fn binary_key(d: Daemon) -> &'static str {
    if d == Daemon::Crio {
        "runtime_path"
    } else {
        "options.BinaryName"
    }
}

/// Keys the new handler may set to its own value: the real runtime's state
/// directory (the wrapper's handler keeps its containers apart).
fn own_keys(d: Daemon) -> &'static [&'static str] {
    if d == Daemon::Crio {
        &["runtime_root"]
    } else {
        &["options.Root"]
    }
}

/// CRI-O's per-platform runtime binaries (`platform_runtime_paths`).
const PLATFORM_PATHS: &str = "platform_runtime_paths.";

/// Compares the new handler with the one it was derived from, key by key:
/// Err lists what was dropped or changed.
fn compare(
    d: Daemon,
    derived: &Settings,
    new: &Settings,
    wrapper: &Path,
) -> Result<Vec<String>, Vec<String>> {
    let mut bad = Vec::new();
    let mut own = Vec::new();
    let norm = |k: &str, v: Option<&Value>| -> Option<Value> {
        // CRI-O reads an empty runtime_type as "oci"; containerd an empty
        // sandbox_mode (1.7) or sandboxer (2.x) as "podsandbox" (its
        // `crictl info` shows the new handler's "" as "podsandbox").
        match (d, k, v) {
            (Daemon::Crio, "runtime_type", Some(Value::String(s))) if s.is_empty() => {
                Some(Value::String("oci".into()))
            }
            (_, "sandbox_mode" | "sandboxer", Some(Value::String(s))) if s.is_empty() => {
                Some(Value::String("podsandbox".into()))
            }
            (_, _, v) => v.cloned(),
        }
    };
    let bin = binary_key(d);
    match new.get(bin).and_then(Value::as_str) {
        Some(p) if Path::new(p) == wrapper || p == common::WRAPPER => {}
        other => bad.push(format!(
            "{bin} = {other:?}, neither the wrapper {} nor its link {wrapper:?}",
            common::WRAPPER
        )),
    }
    // CRI-O runs a platform's own path instead of runtime_path: each must
    // be the wrapper too, or be gone (which install must report: see
    // crio_platform_runtime_paths_never_bypass_the_wrapper).
    for (k, v) in new {
        if k.starts_with(PLATFORM_PATHS) {
            match v.as_str() {
                Some(p) if Path::new(p) == wrapper || p == common::WRAPPER => {}
                _ => bad.push(format!("{k} = {v:?} runs past the wrapper")),
            }
        }
    }
    for (k, v) in derived {
        if k == bin || k.starts_with(PLATFORM_PATHS) {
            continue;
        }
        let (was, now) = (norm(k, Some(v)), norm(k, new.get(k)));
        if own_keys(d).contains(&k.as_str()) {
            if was != now {
                own.push(format!("{k}: {was:?} -> {now:?}"));
            }
            continue;
        }
        match now {
            None => bad.push(format!("{k} = {v:?} dropped")),
            Some(now) if Some(&now) != was.as_ref() => {
                bad.push(format!("{k} = {v:?} became {now:?}"))
            }
            Some(_) => {}
        }
    }
    // A key the derived handler leaves unset may appear with its zero
    // value (containerd's options of a handler copied from a template).
    for (k, v) in new {
        let zero = match v {
            Value::String(s) => s.is_empty(),
            Value::Integer(i) => *i == 0,
            Value::Boolean(b) => !b,
            Value::Array(a) => a.is_empty(),
            _ => false,
        };
        if !derived.contains_key(k) && k != bin && !k.starts_with(PLATFORM_PATHS) && !zero {
            bad.push(format!("{k} = {v:?} added"));
        }
    }
    if bad.is_empty() {
        Ok(own)
    } else {
        Err(bad)
    }
}

/// The real runtime the derived handler runs: its binary key, else what
/// the daemon runs for an empty one (containerd's shim: `runc`; CRI-O: the
/// handler's name, in PATH).
fn real_runtime_of(d: Daemon, name: &str, derived: &Settings) -> String {
    match derived.get(binary_key(d)).and_then(Value::as_str) {
        Some(p) if !p.is_empty() => p.to_owned(),
        _ if d == Daemon::Crio => name.to_owned(),
        _ => "runc".to_owned(),
    }
}

/// The wrapper, run through the handler's link, runs `expected` (a path, or
/// a name in the daemon's PATH): its `--version` text comes first in the
/// wrapper's, and a runtime the corpus names by path logs the run.
fn assert_wrapper_runs(st: &Stage, handler_binary: &Path, expected: &str) {
    if let Err(e) = check_wrapper_runs(st, handler_binary, expected) {
        panic!("{}/{}: {e}", st.daemon.fixture_dir(), st.case);
    }
}

fn check_wrapper_runs(st: &Stage, handler_binary: &Path, expected: &str) -> Result<(), String> {
    let want = st.version_of(expected);
    let marker = marker_of(st, expected);
    let runs_before = marker.map(|m| st.custom_runs(m).len());
    let got = st.wrapper_version(handler_binary);
    let first = want.lines().next().unwrap_or_default();
    let link = fs::read_link(st.runtime_link()).ok();
    if first.is_empty() || !got.starts_with(first) {
        return Err(format!(
            "the wrapper does not run {expected}: it answers\n{got}\n{expected} answers\n{want}\nruntime link: {link:?}"
        ));
    }
    if let (Some(m), Some(n)) = (marker, runs_before) {
        if st.custom_runs(m).len() != n + 1 {
            return Err(format!(
                "the wrapper does not run {expected} (which answers like the one it runs): {}\nruntime link: {link:?}",
                got.lines().last().unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// The run log's name of a runtime the corpus names by path.
fn marker_of<'a>(st: &Stage, path: &str) -> Option<&'a str> {
    let rel = Path::new(path).strip_prefix(st.root()).ok()?;
    Some(match rel.to_str()? {
        "opt/x/runc-custom" => "runc-custom",
        "opt/x/crun-custom" => "crun-custom",
        "usr/libexec/crio/crun" => "crio-crun",
        "usr/libexec/crio/runc" => "crio-runc",
        _ => return None,
    })
}

/// Files under the daemon's config directory only (the handlers directory
/// may stay, empty, after uninstall).
fn config_files(snap: &BTreeMap<PathBuf, Vec<u8>>, st: &Stage) -> BTreeMap<PathBuf, Vec<u8>> {
    snap.iter()
        .filter(|(p, _)| p.starts_with(st.etc()))
        .map(|(p, b)| (p.clone(), b.clone()))
        .collect()
}

/// Err: which files are new, gone or changed (the first differing line).
fn same_files(
    what: &str,
    want: &BTreeMap<PathBuf, Vec<u8>>,
    got: &BTreeMap<PathBuf, Vec<u8>>,
) -> Result<(), String> {
    if want == got {
        return Ok(());
    }
    let mut diff = Vec::new();
    for (p, b) in want {
        match got.get(p) {
            None => diff.push(format!("{} is gone", p.display())),
            Some(g) if g != b => {
                let (now, was) = (String::from_utf8_lossy(g), String::from_utf8_lossy(b));
                let (now, was): (Vec<&str>, Vec<&str>) =
                    (now.lines().collect(), was.lines().collect());
                let at = now.iter().zip(&was).take_while(|(a, b)| a == b).count();
                diff.push(format!(
                    "{} differs: {} lines, was {}; from line {}:\n  now: {:?}\n  was: {:?}",
                    p.display(),
                    now.len(),
                    was.len(),
                    at + 1,
                    now.get(at..(at + 3).min(now.len())).unwrap_or_default(),
                    was.get(at..(at + 3).min(was.len())).unwrap_or_default()
                ))
            }
            Some(_) => {}
        }
    }
    for p in got.keys() {
        if !want.contains_key(p) {
            diff.push(format!("{} is new", p.display()));
        }
    }
    Err(format!("{what}:\n{}", diff.join("\n")))
}

/// Item 3 of the issue for a containerd or CRI-O case; every failed check
/// is reported, not only the first.
fn registers(d: Daemon, case: &str) {
    let st = Stage::new(d, case);
    let label = format!("{}/{case}", d.fixture_dir());
    let original = st.snapshot();
    let before = Reading::of(&st).unwrap_or_else(|e| {
        panic!("{label}: the daemon does not read the corpus file itself: {e}")
    });
    let derived_name = if before.default.is_empty() {
        "runc".to_owned()
    } else {
        before.default.clone()
    };
    let derived = before.handler(&derived_name).clone();

    let out = st.install(&[]);
    let after = Reading::of(&st).unwrap_or_else(|e| {
        panic!("{label}: after install the daemon refuses its config: {e}\ninstall said:\n{out}")
    });
    let mut failed = Vec::new();
    // Every handler the daemon served is still served, unchanged.
    for (name, s) in &before.handlers {
        if after.handlers.get(name) != Some(s) {
            failed.push(format!("handler {name} changed"));
        }
    }
    if after.default != before.default {
        failed.push(format!(
            "the default handler changed: {:?} -> {:?}",
            before.default, after.default
        ));
    }
    let new = after.handler(HANDLER);
    match compare(d, &derived, new, &st.wrapper_link()) {
        Ok(own) => {
            let carried: Vec<&String> = derived
                .keys()
                .filter(|k| {
                    *k != binary_key(d)
                        && !k.starts_with(PLATFORM_PATHS)
                        && !own_keys(d).contains(&k.as_str())
                })
                .collect();
            println!(
                "{label}: derived from {derived_name}; carried: {carried:?}; own: {own:?}; {} names the wrapper",
                binary_key(d)
            );
        }
        Err(bad) => failed.push(format!(
            "the new handler is not the {derived_name} handler behind the wrapper:\n  {}",
            bad.join("\n  ")
        )),
    }
    let handler_binary = PathBuf::from(new[binary_key(d)].as_str().unwrap_or_default());
    if let Err(e) = check_wrapper_runs(
        &st,
        &handler_binary,
        &real_runtime_of(d, &derived_name, &derived),
    ) {
        failed.push(e);
    }
    again_and_undo(&st, &original, &mut failed);
    assert!(
        failed.is_empty(),
        "{label}:\n{}\ninstall said:\n{out}",
        failed.join("\n")
    );
}

/// A second install changes no byte; uninstall gives back every file and
/// leaves no link.
fn again_and_undo(st: &Stage, original: &BTreeMap<PathBuf, Vec<u8>>, failed: &mut Vec<String>) {
    let installed = st.snapshot();
    let out = st.tool("install", &[]);
    if !out.status.success() {
        failed.push(format!("a second install failed: {}", text(&out)));
    }
    if let Err(e) = same_files(
        "a second install changed something",
        &installed,
        &st.snapshot(),
    ) {
        failed.push(e);
    }
    let out = st.tool("uninstall", &[]);
    if !out.status.success() {
        failed.push(format!(
            "uninstall failed ({:?}): {}",
            out.status.code(),
            text(&out)
        ));
    }
    if let Err(e) = same_files(
        "uninstall did not give back the original files",
        &config_files(original, st),
        &config_files(&st.snapshot(), st),
    ) {
        failed.push(e);
    }
    let left: Vec<_> = st
        .snapshot()
        .into_keys()
        .filter(|p| {
            p.starts_with(st.handlers()) && fs::symlink_metadata(p).is_ok_and(|m| !m.is_dir())
        })
        .collect();
    if !left.is_empty() {
        failed.push(format!("uninstall left links: {left:?}"));
    }
}

/// Item 3 for podman: `podman --runtime userns-hostnet info` finds the
/// wrapper, and the wrapper runs the runtime podman ran by default.
fn registers_podman(case: &str) {
    let st = Stage::new(Daemon::Podman, case);
    let label = format!("podman-4.3.1/{case}");
    let original = st.snapshot();
    let default = st
        .podman_info(None)
        .unwrap_or_else(|e| panic!("{label}: podman info: {e}"));
    let default_path = default["path"].as_str().unwrap().to_owned();

    let out = st.install(&[]);
    let mut failed = Vec::new();
    let info = st.podman_info(Some(HANDLER)).unwrap_or_else(|e| {
        panic!("{label}: podman --runtime {HANDLER} info: {e}\ninstall said:\n{out}")
    });
    let handler_binary = PathBuf::from(info["path"].as_str().unwrap_or_default());
    if handler_binary != st.wrapper_link() && handler_binary != Path::new(common::WRAPPER) {
        failed.push(format!("podman does not find the wrapper: {info}"));
    }
    if st.podman_info(None).unwrap()["path"].as_str() != Some(default_path.as_str()) {
        failed.push("the default runtime changed".to_owned());
    }
    if let Err(e) = check_wrapper_runs(&st, &handler_binary, &default_path) {
        failed.push(e);
    }
    again_and_undo(&st, &original, &mut failed);
    assert!(
        failed.is_empty(),
        "{label}:\n{}\ninstall said:\n{out}",
        failed.join("\n")
    );
}

macro_rules! corpus {
    ($($test:ident: $daemon:ident $case:literal;)*) => {$(
        #[test]
        fn $test() {
            registers(Daemon::$daemon, $case);
        }
    )*};
}

corpus! {
    containerd_16_default: Containerd16 "default";
    containerd_16_operator: Containerd16 "operator";
    containerd_17_default: Containerd17 "default";
    containerd_17_operator: Containerd17 "operator";
    containerd_22_v3_default: Containerd22 "default";
    containerd_22_v3_operator: Containerd22 "operator";
    containerd_22_v3_dropins: Containerd22 "dropins";
    containerd_23_default: Containerd23 "default";
    containerd_23_operator: Containerd23 "operator";
    containerd_23_dropins: Containerd23 "dropins";
    crio_136_default: Crio "default";
    crio_136_packaging: Crio "packaging";
    crio_136_packaging_crun_from_path: Crio "packaging-crun-from-path";
    crio_136_platform_paths: Crio "platform-paths";
}

#[test]
fn podman_43_shipped() {
    registers_podman("shipped");
}

#[test]
fn podman_43_custom_runc() {
    registers_podman("custom-runc");
}

#[test]
fn podman_43_dropin() {
    registers_podman("dropin");
}

// The operator walk of the issue, one test each.

/// The handler names a running daemon serves (`crictl info`).
fn served(info: &serde_json::Value) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = info["runtimeHandlers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|h| h["name"].as_str())
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(t) = info["config"]["containerd"]["runtimes"].as_object() {
        names.extend(t.keys().cloned());
    }
    names
}

/// Starts the daemon on the stage's config: the handlers it serves, or
/// why it did not start.
fn start_and_list(st: &Stage, when: &str) -> Result<BTreeSet<String>, String> {
    let running = st.start().map_err(|log| {
        format!(
            "{}/{}: the daemon does not start {when}:\n{}",
            st.daemon.fixture_dir(),
            st.case,
            last_lines(&log, 3)
        )
    })?;
    Ok(served(&running.crictl_info()))
}

/// The daemon starts on the corpus file, after install (serving every
/// handler it served and the new one, which runs the wrapper) and after
/// uninstall (serving what it served before).
fn starts_before_after_and_undone(st: &Stage, failed: &mut Vec<String>) {
    let label = format!("{}/{}", st.daemon.fixture_dir(), st.case);
    let before = match start_and_list(st, "on the corpus file itself") {
        Ok(b) => b,
        Err(e) => return failed.push(e),
    };
    let out = st.tool("install", &[]);
    if !out.status.success() {
        return failed.push(format!("{label}: install: {}", text(&out).trim()));
    }
    match st.start() {
        Err(log) => {
            return failed.push(format!(
                "{label}: the daemon does not start after install:\n{}",
                last_lines(&log, 3)
            ))
        }
        Ok(running) => {
            let info = running.crictl_info();
            let now = served(&info);
            let missing: Vec<String> = before
                .iter()
                .cloned()
                .chain([HANDLER.to_owned()])
                .filter(|n| !now.contains(n))
                .collect();
            if !missing.is_empty() {
                failed.push(format!(
                    "{label}: after install the daemon does not serve {missing:?} (serves {now:?})"
                ));
            }
            if st.daemon.is_containerd() {
                let h = &info["config"]["containerd"]["runtimes"][HANDLER];
                let bin = h["options"]["BinaryName"].as_str().unwrap_or_default();
                if !(Path::new(bin) == st.wrapper_link() || bin == common::WRAPPER) {
                    failed.push(format!(
                        "{label}: the served handler does not run the wrapper: {h}"
                    ));
                }
            }
        }
    }
    let out = st.tool("uninstall", &[]);
    if !out.status.success() {
        return failed.push(format!("{label}: uninstall: {}", text(&out).trim()));
    }
    match start_and_list(st, "after uninstall") {
        Ok(after) if after == before => {}
        Ok(after) => failed.push(format!(
            "{label}: after uninstall the daemon serves {after:?}, before {before:?}"
        )),
        Err(e) => failed.push(e),
    }
}

/// CRI-O 1.36.3 on a drop-in shaped like its packaging (monitor_path
/// /usr/libexec/crio/conmon, no conmon in PATH) starts after install and
/// serves the new handler, and after uninstall serves what it did before.
#[test]
fn crio_starts_after_install_on_packaging_drop_in() {
    let mut failed = Vec::new();
    for case in ["packaging", "packaging-crun-from-path"] {
        starts_before_after_and_undone(&Stage::new(Daemon::Crio, case), &mut failed);
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// containerd 2.3.4's own `config default` (version 4) installs, and 2.3.4
/// reads the result.
#[test]
fn containerd_23_default_config_installs() {
    let st = Stage::new(Daemon::Containerd23, "default");
    let out = st.tool("install", &[]);
    assert!(
        out.status.success(),
        "install on containerd 2.3.4's default config: {}",
        text(&out)
    );
    let r = Reading::of(&st).expect("containerd 2.3.4 reads the result");
    r.handler(HANDLER);
}

/// containerd 1.7: the handler settings pods depend on are carried.
#[test]
fn containerd_17_handler_settings_carried() {
    let st = Stage::new(Daemon::Containerd17, "operator");
    let before = Reading::of(&st).unwrap();
    st.install(&[]);
    let after = Reading::of(&st).unwrap();
    let (was, now) = (before.handler("runc"), after.handler(HANDLER));
    let mut dropped = Vec::new();
    for key in [
        "base_runtime_spec",
        "snapshotter",
        "cni_conf_dir",
        "pod_annotations",
        "container_annotations",
        "privileged_without_host_devices",
        "options.SystemdCgroup",
    ] {
        if now.get(key) != was.get(key) {
            dropped.push(format!(
                "{key}: {:?} became {:?}",
                was.get(key),
                now.get(key)
            ));
        }
    }
    assert!(
        dropped.is_empty(),
        "containerd 1.7 operator config:\n  {}",
        dropped.join("\n  ")
    );
}

/// podman with `runc = ["/opt/x/runc-custom", ...]`: the wrapper runs
/// runc-custom.
#[test]
fn podman_custom_runc_path_is_what_the_wrapper_runs() {
    let st = Stage::new(Daemon::Podman, "custom-runc");
    st.install(&[]);
    let info = st.podman_info(Some(HANDLER)).unwrap();
    let handler_binary = PathBuf::from(info["path"].as_str().unwrap());
    let custom = st.root().join("opt/x/runc-custom");
    assert_wrapper_runs(&st, &handler_binary, custom.to_str().unwrap());
}

/// CRI-O whose default handler is crun with no runtime_path: the wrapper
/// runs crun, as the handler did.
#[test]
fn crio_crun_default_without_runtime_path_wrapper_runs_crun() {
    let st = Stage::new(Daemon::Crio, "packaging-crun-from-path");
    st.install(&[]);
    let r = Reading::of(&st).unwrap();
    let handler_binary = PathBuf::from(r.handler(HANDLER)["runtime_path"].as_str().unwrap());
    assert_wrapper_runs(&st, &handler_binary, "crun");
}

/// containerd 1.x: `--drop-in` is refused (1.x replaces a whole plugin
/// table with an imported one), alone or after a plain install, and the
/// refusal changes nothing.
#[test]
fn containerd_1x_drop_in_refused_and_nothing_changed() {
    let mut failed = Vec::new();
    for d in [Daemon::Containerd16, Daemon::Containerd17] {
        let st = Stage::new(d, "operator");
        for first in [false, true] {
            if first {
                st.install(&[]);
            }
            let before = st.snapshot();
            let out = st.tool("install", &["--drop-in"]);
            if out.status.code() != Some(2) {
                failed.push(format!(
                    "{} (plain install first: {first}): install --drop-in exited {:?}: {}",
                    d.fixture_dir(),
                    out.status.code(),
                    text(&out).trim()
                ));
            }
            if let Err(e) = same_files(
                "the refused --drop-in changed files",
                &before,
                &st.snapshot(),
            ) {
                failed.push(format!("{}: {e}", d.fixture_dir()));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// CRI-O's default handler with `platform_runtime_paths` (which CRI-O runs
/// instead of runtime_path on that platform): install refuses, naming the
/// setting, or registers a handler whose every path is the wrapper and says
/// what it did with the setting; never a copy that runs crun past the
/// wrapper, never a silent drop.
#[test]
fn crio_platform_runtime_paths_never_bypass_the_wrapper() {
    let st = Stage::new(Daemon::Crio, "platform-paths");
    let original = st.snapshot();
    let out = st.tool("install", &[]);
    let said = text(&out);
    match out.status.code() {
        Some(2) => {
            assert!(
                said.contains("platform_runtime_paths"),
                "the refusal does not name the setting: {said}"
            );
            assert_eq!(st.snapshot(), original, "the refusal changed files");
        }
        Some(0) => {
            let r =
                Reading::of(&st).unwrap_or_else(|e| panic!("crio refuses the result: {e}\n{said}"));
            let new = r.handler(HANDLER);
            for (k, v) in new {
                if k.starts_with(PLATFORM_PATHS) || k == "runtime_path" {
                    let p = v.as_str().unwrap_or_default();
                    assert!(
                        Path::new(p) == st.wrapper_link() || p == common::WRAPPER,
                        "{k} = {p:?}: the handler runs past the wrapper\n{said}"
                    );
                }
            }
            assert!(
                said.contains("platform_runtime_paths"),
                "install does not say what it did with platform_runtime_paths:\n{said}"
            );
        }
        other => panic!("install exited {other:?}: {said}"),
    }
}

/// Mixed drop-in and plain install (containerd 2.x): either refused, or
/// coherent: containerd reads the config and a handler of that name runs a
/// binary that exists, after every step; undoing both gives back the
/// original files.
#[test]
fn containerd_drop_in_and_plain_mixed_never_point_at_nothing() {
    let mut failed = Vec::new();
    for d in [Daemon::Containerd22, Daemon::Containerd23] {
        for order in [["", "--drop-in"], ["--drop-in", ""]] {
            // A handler derived from one with its own BinaryName: install
            // lays links, which must never go while a handler needs them.
            let st = Stage::new(d, "operator");
            let original = config_files(&st.snapshot(), &st);
            let args = |a: &'static str| if a.is_empty() { vec![] } else { vec![a] };
            let label = format!(
                "{}: install {:?} then {:?}",
                d.fixture_dir(),
                order[0],
                order[1]
            );
            let first = st.tool("install", &args(order[0]));
            if !first.status.success() {
                failed.push(format!(
                    "{label}: the first install failed: {}",
                    text(&first)
                ));
                continue;
            }
            let second = st.tool("install", &args(order[1]));
            if let Err(e) = handler_coherent(&st) {
                failed.push(format!(
                    "{e}: after {label} (exit {:?}: {})",
                    second.status.code(),
                    text(&second).trim()
                ));
            }
            // Undo in the same order: after each step, nothing dangles.
            for a in order {
                let out = st.tool("uninstall", &args(a));
                let step = format!(
                    "{label}, then uninstall {a:?} (exit {:?}: {})",
                    out.status.code(),
                    text(&out).trim()
                );
                if let Err(e) = handler_coherent(&st) {
                    failed.push(format!("{e}: after {step}"));
                }
            }
            let out = st.tool("uninstall", &[]);
            let out2 = st.tool("uninstall", &["--drop-in"]);
            if let Err(e) = same_files(
                &format!(
                    "{label}: undoing both did not give back the files ({} / {})",
                    text(&out).trim(),
                    text(&out2).trim()
                ),
                &original,
                &config_files(&st.snapshot(), &st),
            ) {
                failed.push(e);
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// The daemon reads the config; a handler of that name, if any, runs a
/// binary that exists.
fn handler_coherent(st: &Stage) -> Result<(), String> {
    let r = Reading::of(st).map_err(|e| format!("containerd refuses the config: {e}"))?;
    if let Some(h) = r.handlers.get(HANDLER) {
        let bin = h
            .get("options.BinaryName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if bin.is_empty() || !Path::new(bin).exists() {
            return Err(format!("handler {HANDLER} points at nothing ({bin:?})"));
        }
    }
    Ok(())
}

/// `--drop-in` on containerd 2.x's default config, whose `imports` glob
/// already covers conf.d/: the main file is not touched.
#[test]
fn containerd_drop_in_adds_no_import_the_glob_covers() {
    let mut failed = Vec::new();
    for d in [Daemon::Containerd22, Daemon::Containerd23] {
        let st = Stage::new(d, "default");
        let main = fs::read_to_string(st.config()).unwrap();
        let out = st.tool("install", &["--drop-in"]);
        if !out.status.success() {
            failed.push(format!(
                "{}: install --drop-in: {}",
                d.fixture_dir(),
                text(&out).trim()
            ));
            continue;
        }
        let now = fs::read_to_string(st.config()).unwrap();
        if now != main {
            let added: Vec<&str> = now
                .lines()
                .filter(|l| !main.lines().any(|m| m == *l))
                .collect();
            failed.push(format!(
                "{}: install --drop-in edited config.toml although its imports glob covers the drop-in: added {added:?}",
                d.fixture_dir()
            ));
        }
        if let Err(e) = Reading::of(&st).map(|r| r.handler(HANDLER).len()) {
            failed.push(format!("{}: {e}", d.fixture_dir()));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// install on a copy creates nothing on the host. With `--root R`, every
/// path is read and written under R, and the config names the node's
/// paths (as `deploy` writes into the host's root); with `--config` on a
/// copy and no `--root`, no handler links appear under the host's /etc.
/// The case derives from a handler with its own BinaryName, so install
/// lays links.
#[test]
fn install_on_a_copy_creates_nothing_on_the_host() {
    let name = format!("uhn-reg-{}", std::process::id());
    let host_links = Path::new("/etc/userns-hostnet/handlers").join(&name);
    let cleanup = || {
        let _ = fs::remove_dir_all(&host_links);
    };
    cleanup();
    let mut failed = Vec::new();
    let d = Daemon::Containerd17;

    // --root: the operator config as it is on the node, under R.
    let st = Stage::as_on_node(d, "operator");
    let r = st.root();
    // The wrapper as a package of the node lays it: an absolute link that
    // resolves only inside the node's root.
    fs::create_dir_all(r.join("usr/bin")).unwrap();
    fs::create_dir_all(r.join("usr/lib/userns-hostnet")).unwrap();
    fs::copy(common::WRAPPER, r.join("usr/lib/userns-hostnet/runtime")).unwrap();
    std::os::unix::fs::symlink(
        "/usr/lib/userns-hostnet/runtime",
        r.join("usr/bin/userns-hostnet-runtime"),
    )
    .unwrap();
    let before = st.snapshot();
    let out = Command::new(common::TOOL)
        .args(["install", "containerd", "--handler", &name])
        .args(["--wrapper", "/usr/bin/userns-hostnet-runtime"])
        .arg("--containerd")
        .arg(d.containerd())
        .arg("--root")
        .arg(r)
        .output()
        .unwrap();
    if host_links.exists() {
        failed.push(format!("install --root {r:?} created {host_links:?}"));
    }
    if text(&out).contains("is not an executable file") {
        failed.push(format!(
            "install --root followed a node's link outside the root: {}",
            text(&out).trim()
        ));
    }
    cleanup();
    if out.status.success() {
        let links = r.join("etc/userns-hostnet/handlers").join(&name);
        match fs::read_link(links.join("runtime")) {
            Ok(t) if t == Path::new("/opt/x/runc-custom") => {}
            other => failed.push(format!(
                "install --root: {links:?}/runtime should name the node's /opt/x/runc-custom: {other:?}"
            )),
        }
        let text = fs::read_to_string(st.config()).unwrap();
        let want = format!("/etc/userns-hostnet/handlers/{name}/userns-hostnet-runtime");
        if !text.contains(&format!("BinaryName = \"{want}\"")) || text.contains(r.to_str().unwrap())
        {
            failed.push(format!("install --root: the config should name {want}, the node's path, and nothing under the root"));
        }
        if st.snapshot() == before {
            failed.push("install --root changed nothing under the root".to_owned());
        }
    } else {
        failed.push(format!("install --root: {}", text(&out).trim()));
    }

    // --config on a copy, no --root.
    let copy = Stage::new(d, "operator");
    let out = Command::new(common::TOOL)
        .args(["install", "containerd", "--handler", &name])
        .args(["--wrapper", common::WRAPPER])
        .arg("--containerd")
        .arg(d.containerd())
        .arg("--config")
        .arg(copy.config())
        .output()
        .unwrap();
    if host_links.exists() {
        failed.push(format!(
            "install --config {:?} (a copy) created {host_links:?}: {}",
            copy.config(),
            text(&out).trim()
        ));
    }
    cleanup();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Every containerd version starts on an installed operator config (and the
/// drop-in variant of 2.x), serves every handler it served and the new one
/// (running the wrapper), and after uninstall serves what it did before.
#[test]
fn containerd_starts_and_serves_the_handler() {
    let mut failed = Vec::new();
    for (d, case) in [
        (Daemon::Containerd16, "operator"),
        (Daemon::Containerd17, "operator"),
        (Daemon::Containerd22, "dropins"),
        (Daemon::Containerd23, "operator"),
        (Daemon::Containerd23, "dropins"),
    ] {
        starts_before_after_and_undone(&Stage::new(d, case), &mut failed);
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// Moves the stage's `rel` (a file under its root) to `vendor/rel` and
/// puts an absolute link to it where it was, as a node whose daemon
/// config lives elsewhere (k0s, a config-management checkout) has it.
fn link_elsewhere(st: &Stage, rel: &str) -> (PathBuf, PathBuf) {
    let link = st.root().join(rel);
    let target = st.root().join("vendor").join(rel);
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    fs::rename(&link, &target).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    (link, target)
}

/// A daemon config that is a link (absolute, into another directory):
/// install writes through it, the real daemon starts on it and serves
/// the handler, the link is still the same link; uninstall gives the
/// target back byte for byte, the link untouched.
#[test]
fn a_config_that_is_a_link_stays_one() {
    let mut failed = Vec::new();
    for (d, case, links) in [
        (
            Daemon::Containerd23,
            "operator",
            &["etc/containerd/config.toml"][..],
        ),
        (
            Daemon::Crio,
            "packaging",
            &["etc/crio/crio.conf", "etc/crio/crio.conf.d/10-crio.conf"][..],
        ),
    ] {
        let st = Stage::new(d, case);
        let label = format!("{}/{case}", d.fixture_dir());
        let linked: Vec<(PathBuf, PathBuf, Vec<u8>)> = links
            .iter()
            .map(|rel| {
                let (link, target) = link_elsewhere(&st, rel);
                let bytes = fs::read(&target).unwrap();
                (link, target, bytes)
            })
            .collect();
        let links_are_kept = |when: &str, failed: &mut Vec<String>| {
            for (link, target, _) in &linked {
                let m = fs::symlink_metadata(link).unwrap();
                let now = fs::read_link(link).ok();
                if !m.file_type().is_symlink() || now.as_deref() != Some(target.as_path()) {
                    failed.push(format!(
                        "{label}: {when}, {link:?} is no longer the link to {target:?} (now {now:?}, {:?})",
                        m.file_type()
                    ));
                }
            }
        };
        let out = st.tool("install", &[]);
        if !out.status.success() {
            failed.push(format!("{label}: install: {}", text(&out).trim()));
            continue;
        }
        links_are_kept("after install", &mut failed);
        if d.is_containerd() {
            let (_, target, bytes) = &linked[0];
            if fs::read(target).unwrap() == *bytes {
                failed.push(format!(
                    "{label}: install did not write through to {target:?}"
                ));
            }
        }
        match start_and_list(&st, "after install") {
            Ok(served) if served.contains(HANDLER) => {}
            Ok(served) => failed.push(format!(
                "{label}: after install the daemon does not serve {HANDLER} (serves {served:?})"
            )),
            Err(e) => failed.push(e),
        }
        let out = st.tool("uninstall", &[]);
        if !out.status.success() {
            failed.push(format!("{label}: uninstall: {}", text(&out).trim()));
            continue;
        }
        links_are_kept("after uninstall", &mut failed);
        for (_, target, bytes) in &linked {
            if fs::read(target).unwrap() != *bytes {
                failed.push(format!(
                    "{label}: uninstall did not give {target:?} back byte for byte"
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// A config link to nothing is refused with one line naming it, and
/// nothing is written.
#[test]
fn a_config_link_to_nothing_is_refused() {
    let st = Stage::new(Daemon::Containerd23, "operator");
    let (link, target) = link_elsewhere(&st, "etc/containerd/config.toml");
    fs::remove_file(&target).unwrap();
    let before = st.snapshot();
    let out = st.tool("install", &[]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.trim().lines().count() == 1
            && said.contains(&format!(
                "{}: a symbolic link to {}, which does not exist",
                link.display(),
                target.display()
            )),
        "{said}"
    );
    assert_eq!(st.snapshot(), before);
    assert!(!target.exists());
}

/// Under `--root`, a config that is an absolute link resolves inside the
/// root (the node's /etc/k0s, not this host's): install writes the
/// target there, the link stays; uninstall gives the bytes back.
#[test]
fn under_root_an_absolute_config_link_resolves_inside_the_root() {
    let d = Daemon::Containerd17;
    let st = Stage::as_on_node(d, "operator");
    let r = st.root();
    let node_target = Path::new("/etc/uhn-k0s-test/containerd.toml");
    assert!(
        !node_target.exists(),
        "{node_target:?} exists on this host: the test would not tell the roots apart"
    );
    let link = st.config();
    let target = r.join(node_target.strip_prefix("/").unwrap());
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    fs::rename(&link, &target).unwrap();
    std::os::unix::fs::symlink(node_target, &link).unwrap();
    let original = fs::read(&target).unwrap();
    let run = |command: &str| {
        let mut cmd = Command::new(common::TOOL);
        cmd.args([command, "containerd", "--root"]).arg(r);
        if command == "install" {
            cmd.args(["--wrapper", "/usr/bin/userns-hostnet-runtime"])
                .arg("--containerd")
                .arg(d.containerd());
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{command} --root: {}", text(&out));
        text(&out)
    };
    let said = run("install");
    assert_eq!(fs::read_link(&link).unwrap(), node_target, "{said}");
    let now = fs::read_to_string(&target).unwrap();
    assert!(
        now.contains("containerd.runtimes.userns-hostnet]"),
        "{said}\n{now}"
    );
    assert!(!node_target.exists());
    let said = run("uninstall");
    assert_eq!(fs::read_link(&link).unwrap(), node_target, "{said}");
    assert_eq!(fs::read(&target).unwrap(), original, "{said}");
}
