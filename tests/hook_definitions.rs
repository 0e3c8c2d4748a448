//! The shipped hook definitions (`hooks.d/`) against the rules of the
//! hooks 1.0.0 schema that CRI-O and podman load them with, and the
//! containerd base runtime spec that adds the createRuntime hook.
//!
//! CRI-O refuses a definition with a stage it does not know, and fails to
//! start when one sits in its hooks directory: `precreate` is podman's
//! alone, so its definition lives in `hooks.d/podman/`, never in the
//! directory both read.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const TOOL: &str = common::TOOL;
const INSTALLED_PATH: &str = "/usr/bin/userns-hostnet";

/// The OCI stages every 1.0.0 loader knows.
const OCI_STAGES: &[&str] = &[
    "prestart",
    "createRuntime",
    "createContainer",
    "startContainer",
    "poststart",
    "poststop",
];

#[derive(Clone, Copy, Debug)]
enum Target {
    Crio,
    Podman,
}

impl Target {
    fn knows(self, stage: &str) -> bool {
        OCI_STAGES.contains(&stage) || matches!(self, Target::Podman) && stage == "precreate"
    }
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn load(rel: &str) -> Value {
    let text = std::fs::read_to_string(repo(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel}: not JSON: {e}"))
}

/// The 1.0.0 rules: `version`, an absolute `hook.path`, string `args` and
/// `KEY=VALUE` `env`, a positive `timeout`, at least one `when` condition
/// of a known kind, and stages the target knows. Unknown keys are errors
/// here, stricter than the loaders, so a typo cannot hide a setting.
fn validate(def: &Value, target: Target) -> Result<(), String> {
    let obj = def.as_object().ok_or("not an object")?;
    for k in obj.keys() {
        if !["version", "hook", "when", "stages"].contains(&k.as_str()) {
            return Err(format!("unknown key {k}"));
        }
    }
    if def["version"] != "1.0.0" {
        return Err(format!("version {} is not 1.0.0", def["version"]));
    }
    let hook = def["hook"].as_object().ok_or("hook is not an object")?;
    for k in hook.keys() {
        if !["path", "args", "env", "timeout"].contains(&k.as_str()) {
            return Err(format!("unknown key hook.{k}"));
        }
    }
    let path = hook
        .get("path")
        .and_then(Value::as_str)
        .ok_or("hook.path is missing")?;
    if !path.starts_with('/') {
        return Err(format!("hook.path {path} is not absolute"));
    }
    if let Some(args) = hook.get("args") {
        let args = args.as_array().ok_or("hook.args is not an array")?;
        if args.iter().any(|a| !a.is_string()) {
            return Err("hook.args holds a non-string".into());
        }
    }
    if let Some(env) = hook.get("env") {
        let env = env.as_array().ok_or("hook.env is not an array")?;
        if env
            .iter()
            .any(|e| !e.as_str().is_some_and(|s| s.contains('=')))
        {
            return Err("hook.env holds an entry without =".into());
        }
    }
    if let Some(t) = hook.get("timeout") {
        if !t.as_u64().is_some_and(|t| t > 0) {
            return Err(format!("hook.timeout {t} is not a positive integer"));
        }
    }
    let when = def["when"].as_object().ok_or("when is not an object")?;
    let mut conditions = 0;
    for (k, v) in when {
        match k.as_str() {
            "always" | "hasBindMounts" => {
                if !v.is_boolean() {
                    return Err(format!("when.{k} is not a boolean"));
                }
                conditions += 1;
            }
            "annotations" => {
                if !v.is_object() {
                    return Err("when.annotations is not an object".into());
                }
                conditions += 1;
            }
            "commands" => {
                if !v.is_array() {
                    return Err("when.commands is not an array".into());
                }
                conditions += 1;
            }
            other => return Err(format!("unknown condition when.{other}")),
        }
    }
    if conditions == 0 {
        return Err("when has no condition".into());
    }
    let stages = def["stages"].as_array().ok_or("stages is not an array")?;
    if stages.is_empty() {
        return Err("stages is empty".into());
    }
    for s in stages {
        let s = s.as_str().ok_or("a stage is not a string")?;
        if !target.knows(s) {
            return Err(format!("unknown stage {s} for {target:?}"));
        }
    }
    Ok(())
}

const SHARED: &str = "hooks.d/userns-hostnet.json";
const PODMAN_ONLY: &str = "hooks.d/podman/userns-hostnet-precreate.json";
const CONTAINERD_BASE_SPEC: &str = "hooks.d/containerd-base-spec.json";

#[test]
fn the_shared_definition_is_valid_for_crio_and_podman() {
    let def = load(SHARED);
    for target in [Target::Crio, Target::Podman] {
        validate(&def, target).unwrap_or_else(|e| panic!("{SHARED} for {target:?}: {e}"));
    }
    assert_eq!(def["stages"], serde_json::json!(["createRuntime"]));
    assert_eq!(def["when"]["always"], true);
    assert_eq!(def["hook"]["path"], INSTALLED_PATH);
}

#[test]
fn the_precreate_definition_is_for_podman_only() {
    let def = load(PODMAN_ONLY);
    validate(&def, Target::Podman).unwrap_or_else(|e| panic!("{PODMAN_ONLY}: {e}"));
    assert_eq!(def["stages"], serde_json::json!(["precreate"]));
    let crio = validate(&def, Target::Crio).unwrap_err();
    assert!(crio.contains("unknown stage precreate"), "{crio}");
}

/// Everything directly in hooks.d/ is what packages install into the
/// directory CRI-O and podman share: each file must be valid for both.
#[test]
fn the_shared_directory_holds_nothing_crio_refuses() {
    let mut found = 0;
    for entry in std::fs::read_dir(repo("hooks.d")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !path.is_file() || !name.ends_with(".json") || path == repo(CONTAINERD_BASE_SPEC) {
            continue;
        }
        let def = load(&format!("hooks.d/{name}"));
        validate(&def, Target::Crio).unwrap_or_else(|e| panic!("hooks.d/{name}: {e}"));
        found += 1;
    }
    assert_eq!(found, 1, "one hook definition for the shared directory");
}

#[test]
fn validation_catches_what_loaders_refuse() {
    let good = load(SHARED);
    type Edit = fn(&mut Value);
    let cases: &[(&str, Edit)] = &[
        ("version", |d| d["version"] = "0.1.0".into()),
        ("not absolute", |d| {
            d["hook"]["path"] = "userns-hostnet".into()
        }),
        ("no condition", |d| d["when"] = serde_json::json!({})),
        ("unknown stage", |d| {
            d["stages"] = serde_json::json!(["createruntime"])
        }),
        ("stages is empty", |d| d["stages"] = serde_json::json!([])),
        ("unknown key", |d| d["cmds"] = serde_json::json!([])),
    ];
    for (want, edit) in cases {
        let mut d = good.clone();
        edit(&mut d);
        let e = validate(&d, Target::Podman).expect_err(want);
        assert!(e.contains(want), "{want}: {e}");
    }
}

/// The arguments the definitions give are subcommands the tool has.
#[test]
fn the_definitions_name_real_subcommands() {
    for rel in [SHARED, PODMAN_ONLY] {
        let def = load(rel);
        let args: Vec<String> = def["hook"]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(args[0], "userns-hostnet", "{rel}: argv[0]");
        let out = Command::new(TOOL)
            .args(&args[1..])
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "{rel}: {args:?} --help: {out:?}");
    }
}

/// containerd: the base runtime spec of a runtime handler is a whole
/// default spec (`ctr oci spec`) with the createRuntime hook added.
#[test]
fn the_containerd_base_spec_carries_the_hook() {
    let spec = load(CONTAINERD_BASE_SPEC);
    let typed: oci_spec::runtime::Spec = serde_json::from_value(spec.clone())
        .unwrap_or_else(|e| panic!("{CONTAINERD_BASE_SPEC} is not a runtime spec: {e}"));
    let hooks = typed.hooks().as_ref().expect("hooks");
    let create_runtime = hooks.create_runtime().as_ref().expect("createRuntime");
    assert_eq!(create_runtime.len(), 1);
    let shared = load(SHARED);
    assert_eq!(
        spec["hooks"]["createRuntime"][0]["path"],
        shared["hook"]["path"]
    );
    assert_eq!(
        spec["hooks"]["createRuntime"][0]["args"],
        shared["hook"]["args"]
    );
    assert!(spec["process"].is_object() && spec["mounts"].is_array() && spec["linux"].is_object());
    let hooks_page = std::fs::read_to_string(repo("docs/hooks.md")).unwrap();
    assert!(
        hooks_page.contains(CONTAINERD_BASE_SPEC),
        "docs/hooks.md documents {CONTAINERD_BASE_SPEC}"
    );
}
