//! `userns-hostnet explain --container ID`: a live container's bundle, found
//! through the state of the real runtime the wrapper would run, explained
//! as that bundle is.

mod common;

use common::{Bundle, Runtime, Sandbox};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const TOOL: &str = common::TOOL;

fn explain(config: &Path, runtime_env: Option<&Path>, args: &[&str]) -> (i32, Value) {
    let mut cmd = Command::new(TOOL);
    cmd.arg("explain")
        .arg("--json")
        .args(args)
        .env("USERNS_HOSTNET_CONFIG", config)
        .env_remove("USERNS_HOSTNET_RUNTIME");
    if let Some(rt) = runtime_env {
        cmd.env("USERNS_HOSTNET_RUNTIME", rt);
    }
    let out = cmd.output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), v)
}

#[test]
fn a_container_created_through_the_wrapper_is_explained_from_its_bundle() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = Bundle::userns_hostnet(&["sleep", "1000"]);
    let id = common::unique_id("explain-ctr");
    let root = sandbox.root();
    let _guard = common::ContainerGuard::new(&sandbox, &id);
    sandbox
        .wrapper()
        .run(&["create", "--bundle", bundle.dir().to_str().unwrap(), &id])
        .assert_success();
    assert_eq!(sandbox.real().status_of(&id).as_deref(), Some("created"));
    let runc = Runtime::Runc.path();
    let config = sandbox.config_path();
    let (code, by_id) = explain(
        &config,
        Some(&runc),
        &["--container", &id, "--root", root.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{by_id}");
    assert_eq!(
        by_id["input"],
        bundle.config_path().to_str().unwrap(),
        "{by_id}"
    );
    assert_eq!(by_id["decision"], "host-network");
    assert_eq!(by_id["would_start"], true);
    // The wrapper converted it at create: nothing is left to change.
    assert_eq!(by_id["changed"], false, "{by_id}");
    // The same explanation as for the bundle named directly.
    let (_, by_path) = explain(&config, Some(&runc), &[bundle.dir().to_str().unwrap()]);
    assert_eq!(by_id, by_path);
}

/// Deletes a container of runc's default state directory when dropped.
struct DefaultRootContainer(String);

impl Drop for DefaultRootContainer {
    fn drop(&mut self) {
        let _ = Command::new(Runtime::Runc.path())
            .args(["delete", "--force", &self.0])
            .output();
    }
}

#[test]
fn without_root_the_runtimes_default_state_and_the_configured_runtime_are_used() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = Bundle::userns_ownnet(&["sleep", "1000"]);
    let id = common::unique_id("explain-default-root");
    let _guard = DefaultRootContainer(id.clone());
    // runc with no --root: /run/runc.
    common::run_ok(&mut sandbox.real().raw_command(&[
        "create",
        "--bundle",
        bundle.dir().to_str().unwrap(),
        &id,
    ]));
    assert!(Path::new("/run/runc").join(&id).is_dir());
    // The runtime comes from the config file, as for the wrapper.
    let runc = Runtime::Runc.path();
    let config = sandbox.path().join("with-runtime.toml");
    std::fs::write(
        &config,
        format!(
            "runtime = {:?}\n[log]\nfile = \"/dev/null\"\n",
            runc.display().to_string()
        ),
    )
    .unwrap();
    let (code, v) = explain(&config, None, &["--container", &id]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["input"], bundle.config_path().to_str().unwrap());
    assert_eq!(v["runtime"], runc.to_str().unwrap());
    assert_eq!(v["decision"], "own-network-namespace");
    // A runtime named otherwise does not know the container: the error
    // names it, as JSON.
    let (code, v) = explain(
        &config,
        Some(&runc),
        &[
            "--container",
            &id,
            "--root",
            sandbox.root().to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["error"]["field"], format!("container {id}"));
    assert!(
        v["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("state failed"),
        "{v}"
    );
}
