//! Policies end to end, through the real wrapper and runc: ID-mapping
//! refusals where operators look, the config file, the decision log, and
//! choosing the real runtime by the wrapper's own name.

mod common;

use common::{Bundle, Outcome, Runtime, Sandbox};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::fs;
use std::path::Path;

fn create_argv(sandbox: &Sandbox, log: &Path, bundle: &Bundle, id: &str) -> Vec<OsString> {
    vec![
        "--root".into(),
        sandbox.root().into(),
        "--log".into(),
        log.into(),
        "--log-format".into(),
        "json".into(),
        "create".into(),
        "--bundle".into(),
        bundle.dir().into(),
        id.into(),
    ]
}

/// Exit 1, one stderr line containing `want`, the same in the --log JSON
/// error line, the bundle untouched, no container.
fn assert_refused_with(
    sandbox: &Sandbox,
    bundle: &Bundle,
    edit: impl FnOnce(&mut Value),
    want: &str,
) {
    bundle.edit(edit);
    let snap = bundle.snapshot();
    let id = common::unique_id("policy");
    let _guard = common::ContainerGuard::new(sandbox, &id);
    let log = sandbox.path().join(format!("{id}.log.json"));
    let out = sandbox
        .wrapper()
        .raw(&create_argv(sandbox, &log, bundle, &id));
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.describe());
    assert!(
        lines[0].contains(want),
        "stderr lacks {want:?}\n{}",
        out.describe()
    );
    let logged: Value = serde_json::from_str(fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(logged["level"], "error");
    assert!(logged["msg"].as_str().unwrap().contains(want), "{logged}");
    snap.assert_unchanged(&bundle.config_path(), "config.json after a refusal");
    assert!(sandbox.real().state(&id).is_none());
}

/// Bad ID mappings, one test each: refused where operators look
/// (`assert_refused_with`), and the refusal is the decision log's last line.
macro_rules! idmap_refusals {
    ($($test:ident: $bundle:ident, $edit:expr, $want:literal;)+) => {
        $(
            #[test]
            fn $test() {
                let sandbox = Sandbox::new(Runtime::Runc);
                let bundle = Bundle::$bundle(&["/bin/true"]);
                assert_refused_with(&sandbox, &bundle, $edit, $want);
                let decisions = sandbox.decisions();
                let last = decisions.last().expect("a decision line");
                assert_eq!(last["level"], "error", "{last}");
                assert_eq!(last["refused"]["rule"], "idmap", "{last}");
                assert_eq!(last["converted"], false, "{last}");
            }
        )+
    };
}

idmap_refusals! {
    overlapping_uid_mapping_is_refused_where_operators_look: userns_hostnet,
        |spec: &mut Value| {
            spec["linux"]["uidMappings"] = json!([
                {"containerID": 0, "hostID": 100000, "size": 65536},
                {"containerID": 1000, "hostID": 300000, "size": 10}
            ]);
        },
        "idmap: linux.uidMappings[1]: container 1000-1009 overlaps linux.uidMappings[0] (container 0-65535)";
    host_root_mapping_is_refused_where_operators_look: userns_hostnet,
        |spec: &mut Value| {
            spec["linux"]["gidMappings"] = json!([{"containerID": 0, "hostID": 0, "size": 65536}]);
        },
        "idmap: linux.gidMappings[0]: maps host root (host 0-65535)";
    unmapped_process_user_is_refused_even_with_own_network: userns_ownnet,
        |spec: &mut Value| spec["process"]["user"]["uid"] = json!(70000),
        "idmap: process.user.uid: 70000 is not mapped by linux.uidMappings (container 0-65535)";
}

fn write_config(sandbox: &Sandbox, extra: &str) {
    let log = sandbox.path().join("decisions.log");
    fs::write(
        sandbox.config_path(),
        format!("{extra}\n[log]\nfile = {:?}\n", log.display().to_string()),
    )
    .unwrap();
}

#[test]
fn config_file_policy_allows_host_root_and_drops_net_sysctls() {
    let sandbox = Sandbox::new(Runtime::Runc);
    write_config(
        &sandbox,
        "[idmap]\nallow_host_root = true\n[sysctl]\nnet = \"drop\"\n",
    );
    // Host root is allowed by the policy; the container still starts as the
    // mapped user, so give it host 0 only for a gid nobody uses.
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    bundle.edit(|spec| {
        spec["linux"]["gidMappings"] = json!([
            {"containerID": 0, "hostID": 100000, "size": 65536},
            {"containerID": 65536, "hostID": 0, "size": 1}
        ]);
        spec["linux"]["sysctl"] = json!({"net.ipv4.ip_forward": "1", "kernel.msgmax": "8192"});
    });
    let id = common::unique_id("cfg");
    let _guard = common::ContainerGuard::new(&sandbox, &id);
    sandbox
        .wrapper()
        .run(&["run", "--bundle", bundle.dir().to_str().unwrap(), &id])
        .assert_success();
    assert_eq!(
        bundle.spec()["linux"]["sysctl"],
        json!({"kernel.msgmax": "8192"})
    );
    let last = sandbox.decisions().pop().unwrap();
    let rules: Vec<&str> = last["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"sysctl"), "{last}");
}

#[test]
fn invalid_config_file_is_an_error_naming_the_line() {
    let sandbox = Sandbox::new(Runtime::Runc);
    write_config(&sandbox, "[capabilities]\n\nnet = \"dorp\"\n");
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    let snap = bundle.snapshot();
    let id = common::unique_id("badcfg");
    let out: Outcome =
        sandbox
            .wrapper()
            .run(&["create", "--bundle", bundle.dir().to_str().unwrap(), &id]);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    let want = format!("{}:3: capabilities.net: ", sandbox.config_path().display());
    assert!(out.stderr.contains(&want), "{}", out.describe());
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.describe());
    snap.assert_unchanged(&bundle.config_path(), "config.json after a config error");
}

#[test]
fn decision_log_records_converted_and_untouched_creates() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let converted = Bundle::userns_hostnet(&["/bin/true"]);
    let untouched = Bundle::userns_ownnet(&["/bin/true"]);
    for (bundle, tag) in [(&converted, "conv"), (&untouched, "own")] {
        let id = common::unique_id(tag);
        let _guard = common::ContainerGuard::new(&sandbox, &id);
        sandbox
            .wrapper()
            .run(&["create", "--bundle", bundle.dir().to_str().unwrap(), &id])
            .assert_success();
    }
    let lines = sandbox.decisions();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let (conv, own) = (&lines[0], &lines[1]);
    assert_eq!(conv["command"], "create");
    assert_eq!(conv["converted"], true);
    assert_eq!(conv["decision"], "host-network");
    assert_eq!(conv["bundle"], converted.dir().display().to_string());
    assert!(
        conv["runtime"].as_str().unwrap().ends_with("/runc"),
        "{conv}"
    );
    let dropped: Vec<&Value> = conv["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["rule"] == "capabilities")
        .collect();
    assert!(!dropped.is_empty(), "{conv}");
    assert!(conv["changes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["rule"] == "sysfs"));
    assert_eq!(own["converted"], false);
    assert_eq!(own["decision"], "own-network-namespace");
    assert!(own.get("changes").is_none());
}

#[test]
fn unwritable_decision_log_does_not_fail_the_container() {
    let sandbox = Sandbox::new(Runtime::Runc);
    fs::write(
        sandbox.config_path(),
        "[log]\nfile = \"/proc/version/cannot/be/here.log\"\n",
    )
    .unwrap();
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    let id = common::unique_id("nolog");
    let _guard = common::ContainerGuard::new(&sandbox, &id);
    let out = sandbox
        .wrapper()
        .run(&["run", "--bundle", bundle.dir().to_str().unwrap(), &id]);
    out.assert_success();
    assert!(out.stderr.is_empty(), "{}", out.describe());
}

/// `userns-hostnet-runtime-crun` runs crun: the environment variable is not
/// set, the config file names runc, the name wins.
#[test]
fn wrapper_named_for_crun_runs_crun() {
    let sandbox = Sandbox::new(Runtime::Crun);
    write_config(&sandbox, "runtime = \"runc\"");
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("userns-hostnet-runtime-crun");
    std::os::unix::fs::symlink(common::WRAPPER, &link).unwrap();
    let mut cmd = common::in_sys_view(&[link.as_os_str(), "--version".as_ref()]);
    cmd.env_remove("USERNS_HOSTNET_RUNTIME")
        .env("USERNS_HOSTNET_CONFIG", sandbox.config_path());
    let out = common::run_capture(&mut cmd);
    out.assert_success();
    assert!(out.stdout.starts_with("crun version"), "{}", out.describe());
    // And the config file's choice applies to the plain name.
    let mut cmd = common::in_sys_view(&[common::WRAPPER, "--version"]);
    cmd.env_remove("USERNS_HOSTNET_RUNTIME")
        .env("USERNS_HOSTNET_CONFIG", sandbox.config_path());
    let out = common::run_capture(&mut cmd);
    out.assert_success();
    assert!(out.stdout.starts_with("runc version"), "{}", out.describe());
}

/// A runtime that runs runc but whose `features` does not list `rro`, as an
/// older runtime would answer.
fn runtime_without_rro(dir: &Path, lists_rro: bool) -> std::path::PathBuf {
    stub_runtime(dir, lists_rro, false)
}

/// runc behind a stub whose `features` lists rro or not; unless it
/// `applies_rro`, it also fails the wrapper's trial container the way a
/// runtime that does not know the option would.
fn stub_runtime(dir: &Path, lists_rro: bool, applies_rro: bool) -> std::path::PathBuf {
    let stub = dir.join("old-runtime");
    let options = if lists_rro {
        "\"rro\", \"ro\""
    } else {
        "\"ro\""
    };
    let trial = if applies_rro {
        ""
    } else {
        "case \"$*\" in *userns-hostnet-rro-trial*) echo 'invalid mount option \"rro\"' >&2; exit 1 ;; esac\n"
    };
    // Written beside and renamed: a new inode, a new identity for the cache.
    let tmp = dir.join(".old-runtime.tmp");
    fs::write(
        &tmp,
        format!(
            "#!/bin/sh\nif [ \"$1\" = features ]; then echo '{{\"mountOptions\": [{options}]}}'; exit 0; fi\n{trial}exec {} \"$@\"\n",
            Runtime::Runc.path().display()
        ),
    )
    .unwrap();
    fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    fs::rename(&tmp, &stub).unwrap();
    stub
}

fn run_with_runtime(sandbox: &Sandbox, runtime: &Path, bundle: &Bundle, id: &str) -> Outcome {
    let root = sandbox.root();
    let mut cmd = common::in_sys_view(&[
        common::WRAPPER.as_ref(),
        "--root".as_ref(),
        root.as_os_str(),
        "run".as_ref(),
        "--bundle".as_ref(),
        bundle.dir().as_os_str(),
        id.as_ref(),
    ]);
    cmd.env("USERNS_HOSTNET_RUNTIME", runtime)
        .env("USERNS_HOSTNET_CONFIG", sandbox.config_path());
    common::run_capture(&mut cmd)
}

#[test]
fn without_rro_support_refuse_by_default_or_fall_back_to_ro() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let stubs = tempfile::tempdir().unwrap();
    let stub = runtime_without_rro(stubs.path(), false);

    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    let snap = bundle.snapshot();
    let id = common::unique_id("norro");
    let _guard = common::ContainerGuard::new(&sandbox, &id);
    let out = run_with_runtime(&sandbox, &stub, &bundle, &id);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert!(
        out.stderr.contains("refused: sysfs: mounts[")
            && out.stderr.contains("\"features\" lists no rro"),
        "{}",
        out.describe()
    );
    snap.assert_unchanged(&bundle.config_path(), "config.json after an rro refusal");

    write_config(&sandbox, "[sysfs]\nfallback = \"ro\"");
    let probe = Bundle::userns_hostnet(&common::probe_args());
    let id2 = common::unique_id("rofallback");
    let _guard2 = common::ContainerGuard::new(&sandbox, &id2);
    let out = run_with_runtime(&sandbox, &stub, &probe, &id2);
    out.assert_success();
    let sys = common::mount_index(&probe.spec(), "/sys").unwrap();
    assert_eq!(
        probe.spec()["mounts"][sys]["options"],
        json!(["rbind", "ro", "nosuid", "nodev", "noexec", "rprivate"])
    );
    let seen = common::Probe::parse(&out.stdout);
    assert!(seen.topmost("/sys").unwrap().has("ro"), "{}", seen.table());
    let last = sandbox.decisions().pop().unwrap();
    assert_eq!(last["level"], "warning", "{last}");
    assert!(
        last["warnings"][0].as_str().unwrap().contains("plain ro"),
        "{last}"
    );

    // The runtime is upgraded (new mtime and size): the cached answer is
    // stale and the next create uses rro.
    runtime_without_rro(stubs.path(), true);
    let upgraded = Bundle::userns_hostnet(&["/bin/true"]);
    let id3 = common::unique_id("upgraded");
    let _guard3 = common::ContainerGuard::new(&sandbox, &id3);
    run_with_runtime(&sandbox, &stub, &upgraded, &id3).assert_success();
    let sys = common::mount_index(&upgraded.spec(), "/sys").unwrap();
    assert_eq!(upgraded.spec()["mounts"][sys]["options"][1], "rro");
}

/// A runtime whose `features` lists no rro but which applies it (youki
/// 0.7.0 does): the wrapper's trial container shows it, the container is
/// converted with rro, and doctor says how that was decided.
#[test]
fn a_runtime_that_lists_no_rro_but_applies_it_is_shown_by_a_trial() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let stubs = tempfile::tempdir().unwrap();
    let stub = stub_runtime(stubs.path(), false, true);

    let bundle = Bundle::userns_hostnet(&common::probe_args());
    let id = common::unique_id("trialrro");
    let _guard = common::ContainerGuard::new(&sandbox, &id);
    let out = run_with_runtime(&sandbox, &stub, &bundle, &id);
    out.assert_success();
    let sys = common::mount_index(&bundle.spec(), "/sys").unwrap();
    assert_eq!(bundle.spec()["mounts"][sys]["options"][1], "rro");
    let seen = common::Probe::parse(&out.stdout);
    let writable = common::writable_under_sys(&seen);
    assert!(writable.is_empty(), "{}", seen.table());

    let doctor = common::run_capture(
        common::in_sys_view(&[common::TOOL, "doctor", "--json"])
            .env("USERNS_HOSTNET_RUNTIME", &stub)
            .env("USERNS_HOSTNET_CONFIG", sandbox.config_path()),
    );
    let report: serde_json::Value = serde_json::from_str(&doctor.stdout)
        .unwrap_or_else(|e| panic!("doctor --json: {e}\n{}", doctor.describe()));
    let rro = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "runtime.rro")
        .unwrap_or_else(|| panic!("no runtime.rro check: {report}"));
    assert_eq!(rro["status"], "ok", "{rro}");
    let detail = rro["message"].as_str().unwrap();
    assert!(
        detail.starts_with(
            "knows rro: \"features\" lists no rro mount option, but a trial container: all "
        ) && detail.ends_with(" mounts at and under /sys read-only"),
        "{detail}"
    );
}

/// podman 4.3 calls `kill` and `delete` with no PATH in the environment:
/// the wrapper still finds the runtime where systems install it.
#[test]
fn runtime_is_found_without_path() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let out = common::run_capture(
        std::process::Command::new(common::WRAPPER)
            .arg("--version")
            .env_clear()
            .env("USERNS_HOSTNET_CONFIG", sandbox.config_path()),
    );
    out.assert_success();
    assert!(out.stdout.starts_with("runc version"), "{}", out.describe());
}
