//! `userns-hostnet install` / `uninstall` on real containerd 1.6 configs
//! (checked by the real `containerd config dump`), a commented config with
//! custom handlers, a version-3 sample and CRI-O's drop-in; and a handler
//! installed for crun running a container end to end.

mod common;

use common::containerd::Containerd;
use common::Bundle;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TOOL: &str = env!("CARGO_BIN_EXE_userns-hostnet");

const COMMENTED: &str = r#"# Node config, managed by hand.
version = 2
root = "/var/lib/containerd"   # keep on the big disk

[plugins]
  # The CRI plugin.
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.9"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        # systemd manages the cgroups on this node
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = true
          BinaryName = "/usr/sbin/runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gvisor]
        runtime_type = "io.containerd.runsc.v1"

# Metrics for the node exporter.
[metrics]
  address = "127.0.0.1:1338"
"#;

const VERSION3: &str = r#"version = 3

[plugins]
  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          runtime_type = 'io.containerd.runc.v2'
          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
            SystemdCgroup = true
"#;

fn tool(args: &[&str]) -> Output {
    Command::new(TOOL).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = tool(args);
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn default_config(dir: &Path) -> PathBuf {
    let out = Command::new("containerd")
        .args(["config", "default"])
        .output()
        .expect("containerd is installed (Debian package containerd)");
    assert!(out.status.success());
    let p = dir.join("config.toml");
    std::fs::write(&p, out.stdout).unwrap();
    p
}

/// `containerd --config F config dump`: the merged config as containerd 1.6
/// loads it.
fn dump(config: &Path) -> toml::Value {
    let out = Command::new("containerd")
        .arg("--config")
        .arg(config)
        .args(["config", "dump"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "containerd cannot load {config:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    toml::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

fn v2_handler<'a>(doc: &'a toml::Value, name: &str) -> Option<&'a toml::Value> {
    doc.get("plugins")?
        .get("io.containerd.grpc.v1.cri")?
        .get("containerd")?
        .get("runtimes")?
        .get(name)
}

fn backups(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".bak-")
        })
        .count()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn default_containerd_config_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = default_config(dir.path());
    let original = std::fs::read(&cfg).unwrap();
    let out = ok(&["install", "containerd", "--config", s(&cfg)]);
    assert!(out.contains("restart containerd"), "{out}");
    let d = dump(&cfg);
    let h = v2_handler(&d, "userns-hostnet").expect("containerd lists the handler");
    assert_eq!(h["runtime_type"].as_str(), Some("io.containerd.runc.v2"));
    assert_eq!(
        h["options"]["BinaryName"].as_str(),
        Some("/usr/bin/userns-hostnet-runtime")
    );
    assert_eq!(h["options"]["SystemdCgroup"].as_bool(), Some(false));
    assert_eq!(backups(dir.path()), 1);
    let installed = std::fs::read(&cfg).unwrap();

    // Idempotent: nothing written, no new backup.
    let out = ok(&["install", "containerd", "--config", s(&cfg)]);
    assert!(out.starts_with("nothing to change"), "{out}");
    assert_eq!(std::fs::read(&cfg).unwrap(), installed);
    assert_eq!(backups(dir.path()), 1);

    ok(&["uninstall", "containerd", "--config", s(&cfg)]);
    assert_eq!(std::fs::read(&cfg).unwrap(), original, "not byte-identical");
    assert!(v2_handler(&dump(&cfg), "userns-hostnet").is_none());
    let out = ok(&["uninstall", "containerd", "--config", s(&cfg)]);
    assert!(out.starts_with("nothing to change"), "{out}");
}

#[test]
fn comments_order_and_custom_handlers_survive() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, COMMENTED).unwrap();
    ok(&[
        "install",
        "containerd",
        "--config",
        s(&cfg),
        "--handler",
        "uhn",
        "--wrapper",
        "/opt/bin/userns-hostnet-runtime",
    ]);
    let text = std::fs::read_to_string(&cfg).unwrap();
    // Every original line is still there, in order.
    let mut lines = text.lines();
    for want in COMMENTED.lines() {
        assert!(lines.any(|l| l == want), "lost or moved: {want:?}\n{text}");
    }
    let d = dump(&cfg);
    let h = v2_handler(&d, "uhn").unwrap();
    assert_eq!(
        h["options"]["BinaryName"].as_str(),
        Some("/opt/bin/userns-hostnet-runtime")
    );
    assert_eq!(h["options"]["SystemdCgroup"].as_bool(), Some(true));
    assert!(v2_handler(&d, "gvisor").is_some());
    assert_eq!(
        v2_handler(&d, "runc").unwrap()["options"]["BinaryName"].as_str(),
        Some("/usr/sbin/runc")
    );
    ok(&[
        "uninstall",
        "containerd",
        "--config",
        s(&cfg),
        "--handler",
        "uhn",
    ]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
}

#[test]
fn version_3_sample() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, VERSION3).unwrap();
    ok(&["install", "containerd", "--config", s(&cfg)]);
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let h =
        &doc["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["userns-hostnet"];
    assert_eq!(h["runtime_type"].as_str(), Some("io.containerd.runc.v2"));
    assert_eq!(h["options"]["SystemdCgroup"].as_bool(), Some(true));
    assert!(doc["plugins"].get("io.containerd.grpc.v1.cri").is_none());
    ok(&["uninstall", "containerd", "--config", s(&cfg)]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), VERSION3);
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, COMMENTED).unwrap();
    let out = ok(&["install", "containerd", "--config", s(&cfg), "--dry-run"]);
    assert!(
        out.contains(&format!(
            "--- {}\n+++ {}\n@@ ",
            cfg.display(),
            cfg.display()
        )),
        "{out}"
    );
    assert!(
        out.contains("+[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.userns-hostnet]"),
        "{out}"
    );
    assert!(
        out.contains("+BinaryName = \"/usr/bin/userns-hostnet-runtime\""),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
    assert_eq!(backups(dir.path()), 0);
}

#[test]
fn drop_in_is_loaded_by_containerd_and_removed_again() {
    for with_imports in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = default_config(dir.path());
        if !with_imports {
            let text = std::fs::read_to_string(&cfg).unwrap();
            let text: String = text
                .lines()
                .filter(|l| !l.starts_with("imports"))
                .map(|l| format!("{l}\n"))
                .collect();
            std::fs::write(&cfg, text).unwrap();
        }
        let original = std::fs::read(&cfg).unwrap();
        ok(&["install", "containerd", "--config", s(&cfg), "--drop-in"]);
        let drop_in = dir.path().join("conf.d/99-userns-hostnet.toml");
        assert!(drop_in.is_file());
        let h = v2_handler(&dump(&cfg), "userns-hostnet")
            .expect("containerd loads the drop-in through imports")
            .clone();
        assert_eq!(
            h["options"]["BinaryName"].as_str(),
            Some("/usr/bin/userns-hostnet-runtime")
        );
        let out = ok(&["install", "containerd", "--config", s(&cfg), "--drop-in"]);
        assert!(out.starts_with("nothing to change"), "{out}");
        ok(&["uninstall", "containerd", "--config", s(&cfg), "--drop-in"]);
        assert!(!drop_in.exists());
        assert_eq!(
            std::fs::read(&cfg).unwrap(),
            original,
            "imports line not restored (with_imports = {with_imports})"
        );
    }
}

#[test]
fn crio_drop_in() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("crio.conf");
    let drop_in = dir.path().join("crio.conf.d/99-userns-hostnet.conf");
    let out = ok(&["install", "crio", "--config", s(&conf), "--dry-run"]);
    assert!(out.contains("+runtime_type = \"oci\""), "{out}");
    assert!(!drop_in.exists());
    let out = ok(&["install", "crio", "--config", s(&conf), "--handler", "uhn"]);
    assert!(out.contains("restart crio"), "{out}");
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&drop_in).unwrap()).unwrap();
    let h = &doc["crio"]["runtime"]["runtimes"]["uhn"];
    assert_eq!(
        h["runtime_path"].as_str(),
        Some("/usr/bin/userns-hostnet-runtime")
    );
    assert_eq!(h["runtime_type"].as_str(), Some("oci"));
    assert_eq!(
        h["runtime_root"].as_str(),
        Some("/run/userns-hostnet-runtime")
    );
    let out = ok(&["install", "crio", "--config", s(&conf), "--handler", "uhn"]);
    assert!(out.starts_with("nothing to change"), "{out}");
    ok(&[
        "uninstall",
        "crio",
        "--config",
        s(&conf),
        "--handler",
        "uhn",
    ]);
    assert!(!drop_in.exists());
    // Someone else's file of that name is left alone.
    std::fs::write(&drop_in, "[crio.runtime]\n").unwrap();
    let out = tool(&["install", "crio", "--config", s(&conf)]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn refuses_what_is_not_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, COMMENTED).unwrap();
    // A handler of that name that runs something else.
    let out = tool(&[
        "install",
        "containerd",
        "--config",
        s(&cfg),
        "--handler",
        "gvisor",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists and differs"));
    let out = tool(&[
        "uninstall",
        "containerd",
        "--config",
        s(&cfg),
        "--handler",
        "runc",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not run the wrapper"));
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
    // Version 1 and a missing file.
    std::fs::write(&cfg, "[plugins.cri]\n").unwrap();
    let out = tool(&["install", "containerd", "--config", s(&cfg)]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("version 1 is not supported"));
    let out = tool(&[
        "install",
        "containerd",
        "--config",
        "/nonexistent/config.toml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("containerd config default"));
}

/// A handler installed for crun, through the wrapper's `-crun` name, runs a
/// userns + host-network container under a private containerd 1.6: the
/// BinaryName containerd reads back from the installed config is the
/// binary `ctr run --runc-binary` starts.
#[test]
fn installed_crun_handler_runs_a_container() {
    let mut ctd = Containerd::start();
    let cfg = ctd.dir().join("installed.toml");
    std::fs::copy(ctd.dir().join("config.toml"), &cfg).unwrap();
    let wrapper = ctd.wrapper_crun();
    ok(&[
        "install",
        "containerd",
        "--config",
        s(&cfg),
        "--handler",
        "userns-hostnet-crun",
        "--wrapper",
        s(&wrapper),
    ]);
    let d = dump(&cfg);
    let binary = v2_handler(&d, "userns-hostnet-crun").unwrap()["options"]["BinaryName"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(binary, s(&wrapper));

    let bundle = Bundle::userns_hostnet(&["sh", "-c", "grep ' /sys ' /proc/self/mounts"]);
    bundle.edit(|spec| spec["process"]["env"] = json!(["PATH=/bin"]));
    let id = common::unique_id("install-crun");
    let out = ctd.run(Path::new(&binary), &bundle.config_path(), &id);
    out.assert_success();
    assert!(out.stdout.contains(" /sys "), "{}", out.describe());
    assert!(
        out.stdout.contains("ro,"),
        "/sys is not read-only: {}",
        out.stdout
    );
    let leaked = ctd.stop();
    assert!(leaked.is_empty(), "left behind: {leaked:#?}");
}
