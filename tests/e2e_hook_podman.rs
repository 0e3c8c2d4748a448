//! The hooks under the real podman 4.3 with plain runc as its runtime (no
//! wrapper), loaded from a `--hooks-dir` the test writes: the `precreate`
//! hook converts the spec podman proposes (its /sys bind becomes
//! `rbind,rro,...`, the network capabilities go); the `createRuntime` hook
//! makes podman's `rbind,ro` tree read-only but cannot drop capabilities.
//! podman runs a hook with only the environment its definition lists and
//! does not show a failing hook's stderr: the decision log has the reason.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::podman::{GIDMAP, UIDMAP, ULIMITS};
use common::{show, Outcome, Probe};
use serde_json::{json, Value};
use tempfile::TempDir;

const TOOL: &str = common::TOOL;
const NAME_PREFIX: &str = "uhn-hookpod-";

/// A writable rootfs for podman, a hooks directory, and a config file that
/// keeps the decision log here.
struct Setup {
    tmp: TempDir,
}

impl Setup {
    fn new(stages: &[&str]) -> Setup {
        common::podman::require_podman();
        common::podman::remove_dead_containers(&format!("{NAME_PREFIX}uhn-c-"));
        let tmp = common::podman::writable_rootfs("uhn-hookpod-");
        let setup = Setup { tmp };
        std::fs::write(
            setup.config(),
            format!("[log]\nfile = {:?}\n", setup.log().display().to_string()),
        )
        .unwrap();
        std::fs::create_dir(setup.hooks_dir()).unwrap();
        for stage in stages {
            setup.add_hook(stage);
        }
        setup
    }

    fn rootfs(&self) -> PathBuf {
        self.tmp.path().join("rootfs")
    }

    fn config(&self) -> PathBuf {
        self.tmp.path().join("config.toml")
    }

    fn log(&self) -> PathBuf {
        self.tmp.path().join("decisions.log")
    }

    fn hooks_dir(&self) -> PathBuf {
        self.tmp.path().join("hooks.d")
    }

    /// The shipped definition of `stage`, with the built tool as its path
    /// and this setup's config file in its environment.
    fn add_hook(&self, stage: &str) {
        let shipped = match stage {
            "createRuntime" => "hooks.d/userns-hostnet.json",
            "precreate" => "hooks.d/podman/userns-hostnet-precreate.json",
            other => panic!("no shipped hook for {other}"),
        };
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(shipped))
            .expect("read the shipped hook definition");
        let mut def: Value = serde_json::from_str(&text).expect("hook definition is JSON");
        def["hook"]["path"] = json!(TOOL);
        def["hook"]["env"] = json!([format!("USERNS_HOSTNET_CONFIG={}", self.config().display())]);
        std::fs::write(
            self.hooks_dir().join(format!("{stage}.json")),
            serde_json::to_vec_pretty(&def).unwrap(),
        )
        .unwrap();
    }

    fn decisions(&self) -> Vec<Value> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("decision log line is JSON"))
            .collect()
    }

    /// `podman --runtime runc --hooks-dir DIR run --rm --network host
    /// --gidmap ... [EXTRA] --rootfs ROOTFS ARGS`; EXTRA holds the
    /// `--uidmap`s.
    fn run(&self, name: &Name, extra: &[&str], args: &[&str]) -> Outcome {
        self.run_on("host", name, extra, args)
    }

    /// `run` on the podman network NETWORK.
    fn run_on(&self, network: &str, name: &Name, extra: &[&str], args: &[&str]) -> Outcome {
        common::run_capture(
            Command::new("podman")
                .arg("--runtime")
                .arg(common::Runtime::Runc.path())
                .arg("--hooks-dir")
                .arg(self.hooks_dir())
                .args(["run", "--rm", "--name", &name.0, "--network", network])
                .args(GIDMAP)
                .args(ULIMITS)
                .args(extra)
                .arg("--rootfs")
                .arg(self.rootfs())
                .args(args),
        )
    }

    /// A probe container on the host network with the usual mapping: what
    /// it saw, printed for the test log as WHAT.
    fn probe(&self, what: &str) -> Probe {
        let name = Name::new();
        let out = self.run(&name, UIDMAP, &common::probe_args());
        out.assert_success();
        let probe = Probe::parse(&out.stdout);
        show(what, &probe);
        probe
    }
}

/// A container name; dropping it removes what a failed test left.
struct Name(String);

impl Name {
    fn new() -> Name {
        Name(format!("{NAME_PREFIX}{}", common::unique_id("c")))
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "--force", "--ignore", "--time", "0", &self.0])
            .output();
    }
}

/// Every mount of the tree is read-only; those the runtime made before the
/// hooks ran also nosuid, nodev, noexec (runc masks /sys/firmware and
/// /sys/dev/block with read-only tmpfs mounts afterwards).
fn assert_sys_tree_read_only(probe: &Probe) {
    let table = probe.table();
    assert!(
        probe.under_sys().len() > 2,
        "the host's submounts of /sys should be there:\n{table}"
    );
    for m in probe.under_sys() {
        assert!(
            m.has("ro"),
            "{} {} is writable: {:?}\n{table}",
            m.mount_point,
            m.fstype,
            m.options
        );
    }
}

#[test]
fn precreate_converts_podmans_spec() {
    let setup = Setup::new(&["precreate"]);
    let probe = setup.probe("podman + precreate hook + runc");
    assert_sys_tree_read_only(&probe);
    common::assert_converted_view(&probe, false);
    let log = setup.decisions();
    let line = log
        .iter()
        .find(|l| l["command"] == "hook precreate")
        .unwrap_or_else(|| panic!("no decision log line from the hook: {log:?}"));
    assert_eq!(line["converted"], true, "{line}");
    let rules: Vec<&str> = line["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["rule"].as_str())
        .collect();
    assert!(
        rules.contains(&"sysfs") && rules.contains(&"capabilities"),
        "{line}"
    );
}

#[test]
fn create_runtime_hardens_podmans_rbind_ro() {
    let setup = Setup::new(&["createRuntime"]);
    let probe = setup.probe("podman + createRuntime hook + runc");
    assert_sys_tree_read_only(&probe);
    for m in probe.under_sys() {
        let masked = m.fstype == "tmpfs" && m.options.iter().all(|o| o != "nosuid");
        if !masked {
            for opt in ["nosuid", "nodev", "noexec"] {
                assert!(m.has(opt), "{} lacks {opt}: {:?}", m.mount_point, m.options);
            }
        }
    }
    assert!(
        common::has_cap_bit(probe.cap_bnd(), 10),
        "a createRuntime hook cannot drop CAP_NET_BIND_SERVICE: CapBnd {:016x}",
        probe.cap_bnd()
    );
    let log = setup.decisions();
    assert!(
        log.iter()
            .any(|l| l["command"] == "hook create-runtime" && l["converted"] == true),
        "{log:?}"
    );
}

/// Both stages together, as a podman node would install them: the spec is
/// converted first, then the tree verified.
#[test]
fn both_stages_together() {
    let setup = Setup::new(&["precreate", "createRuntime"]);
    let probe = setup.probe("podman + both hooks + runc");
    common::assert_converted_view(&probe, false);
    let commands: Vec<String> = setup
        .decisions()
        .iter()
        .filter_map(|l| l["command"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        commands,
        vec!["hook precreate", "hook create-runtime"],
        "both hooks ran, in order"
    );
}

/// A mapping of host root: the precreate hook refuses, podman does not
/// create the container; the reason is in the decision log.
#[test]
fn precreate_refusal_stops_podman() {
    let setup = Setup::new(&["precreate"]);
    let name = Name::new();
    let out = setup.run(
        &name,
        &["--uidmap", "0:100000:65536", "--uidmap", "65536:0:1"],
        &["true"],
    );
    assert!(
        !out.success(),
        "podman should not run the container\n{}",
        out.describe()
    );
    assert!(
        out.stderr.contains("precreate"),
        "podman names the failing hook\n{}",
        out.describe()
    );
    let log = setup.decisions();
    assert!(
        log.iter()
            .any(|l| l["command"] == "hook precreate" && l["refused"]["rule"] == "idmap"),
        "{log:?}"
    );
}

/// Its own network namespace: the hooks leave the container as podman and
/// runc make it.
#[test]
fn own_network_namespace_is_left_alone() {
    let setup = Setup::new(&["precreate", "createRuntime"]);
    let name = Name::new();
    let out = setup.run_on("none", &name, UIDMAP, &common::probe_args());
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    let sys = probe.topmost("/sys").expect("/sys is mounted");
    assert_eq!(sys.fstype, "sysfs", "{}", probe.table());
    assert!(
        common::has_cap_bit(probe.cap_bnd(), 10),
        "own network namespace: CAP_NET_BIND_SERVICE stays"
    );
    let log = setup.decisions();
    assert!(
        log.iter()
            .all(|l| l["converted"] == false && l["command"] == "hook precreate"),
        "only precreate logs, converting nothing: {log:?}"
    );
}
