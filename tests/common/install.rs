//! `userns-hostnet install` and `uninstall` as the tests run them: the
//! argument lists and the three outcomes (done, something left, refused).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::TOOL;

/// The tool; install and uninstall keep a handler's links in `handlers/`
/// next to the config file they edit, never under /etc.
pub fn tool(args: &[&str]) -> Output {
    let mut cmd = Command::new(TOOL);
    cmd.args(args);
    if matches!(args.first(), Some(&"install" | &"uninstall")) {
        if let Some(at) = args.iter().position(|a| *a == "--config") {
            let dir = Path::new(args[at + 1]).parent().unwrap();
            cmd.arg("--handlers-dir").arg(dir.join("handlers"));
        }
    }
    cmd.output().unwrap()
}

/// Standard output, then standard error.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The exit status and everything printed.
pub fn code(args: &[&str]) -> (Option<i32>, String) {
    let out = tool(args);
    (out.status.code(), text(&out))
}

/// The tool's standard output; it must succeed.
pub fn ok(args: &[&str]) -> String {
    let out = tool(args);
    assert!(out.status.success(), "{args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Everything printed; the tool must leave something in place and say so
/// (exit status 1).
pub fn left(args: &[&str]) -> String {
    let (status, text) = code(args);
    assert_eq!(status, Some(1), "{args:?}: {text}");
    text
}

/// The tool's standard error; it must refuse (exit status 2).
pub fn refused(args: &[&str]) -> String {
    let out = tool(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `COMMAND DAEMON --config CONFIG MORE...`.
pub fn args_for<'a>(
    command: &'a str,
    daemon: &'a str,
    config: &'a Path,
    more: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![command, daemon, "--config", s(config)];
    args.extend_from_slice(more);
    args
}

/// `install DAEMON --config CONFIG MORE...`, which must succeed: its output.
pub fn install(daemon: &str, config: &Path, more: &[&str]) -> String {
    ok(&args_for("install", daemon, config, more))
}

/// `uninstall DAEMON --config CONFIG MORE...`, which must succeed: its output.
pub fn uninstall(daemon: &str, config: &Path, more: &[&str]) -> String {
    ok(&args_for("uninstall", daemon, config, more))
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `BIN --config F config dump`: the merged config as that containerd
/// loads it.
pub fn dump_with(bin: &Path, config: &Path) -> toml::Value {
    let out = Command::new(bin)
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

/// `containerd --config F config dump`: the merged config as the first
/// containerd in PATH (Debian's 1.6) loads it.
pub fn dump(config: &Path) -> toml::Value {
    dump_with(Path::new("containerd"), config)
}

/// A runtime handler in a dump of a version 2 config (containerd 1.x).
pub fn v2_handler<'a>(doc: &'a toml::Value, name: &str) -> Option<&'a toml::Value> {
    doc.get("plugins")?
        .get("io.containerd.grpc.v1.cri")?
        .get("containerd")?
        .get("runtimes")?
        .get(name)
}

// The configs the install tests start from, the daemons that read them
// back, and what install leaves beside them.

pub const COMMENTED: &str = r#"# Node config, managed by hand.
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

pub const VERSION3: &str = r#"version = 3

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

/// `config.toml` in `dir`, holding `text`.
pub fn config_file(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("config.toml");
    std::fs::write(&p, text).unwrap();
    p
}

pub fn default_config(dir: &Path) -> PathBuf {
    let out = Command::new("containerd")
        .args(["config", "default"])
        .output()
        .expect("containerd is installed (Debian package containerd)");
    assert!(out.status.success());
    let p = dir.join("config.toml");
    std::fs::write(&p, out.stdout).unwrap();
    p
}

/// containerd 1.7.24, unpacked by scripts/cri-tools.sh.
pub fn containerd_17() -> PathBuf {
    let p = super::tools_target().join("containerd-1.7/usr/bin/containerd");
    assert!(p.is_file(), "{p:?} missing: run scripts/cri-tools.sh");
    p
}

/// containerd 2.3.4, unpacked by scripts/cri-tools.sh.
pub fn containerd_23() -> PathBuf {
    let p = super::tools_target().join("containerd-2.3/containerd");
    assert!(p.is_file(), "{p:?} missing: run scripts/cri-tools.sh");
    p
}

/// A runtime handler in a dump of containerd 1.x (version 2) or 2.x
/// (version 3, which 2.x migrates every config to).
pub fn handler_in<'a>(doc: &'a toml::Value, name: &str) -> Option<&'a toml::Value> {
    v2_handler(doc, name).or_else(|| {
        doc.get("plugins")?
            .get("io.containerd.cri.v1.runtime")?
            .get("containerd")?
            .get("runtimes")?
            .get(name)
    })
}

pub fn backups(dir: &Path) -> usize {
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

/// The link to the wrapper that install makes for handler userns-hostnet
/// when the config in `dir` names a real runtime.
/// Where PATH finds runc, as install links it.
pub fn runc_in_path() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("runc"))
        .find(|p| p.is_file())
        .expect("runc is installed (Debian package runc)")
}

pub fn handler_link(dir: &Path) -> PathBuf {
    dir.join("handlers/userns-hostnet/userns-hostnet-runtime")
}

/// A containerd 1.x node's config: settings a CRI plugin table must keep.
pub const NODE_1X: &str = r#"version = 2

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.example.com/pause:3.9-custom"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/custom-cni/bin"
    conf_dir = "/etc/custom-cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "crun"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun.options]
        BinaryName = "/usr/bin/crun"
"#;

/// A dump with one handler taken out, and the list of files it loaded.
pub fn without_handler(doc: &toml::Value, name: &str) -> toml::Value {
    let mut d = doc.clone();
    if let Some(t) = d.as_table_mut() {
        t.remove("imports");
    }
    for plugin in ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"] {
        if let Some(r) = d
            .get_mut("plugins")
            .and_then(|p| p.get_mut(plugin))
            .and_then(|c| c.get_mut("containerd"))
            .and_then(|c| c.get_mut("runtimes"))
            .and_then(toml::Value::as_table_mut)
        {
            r.remove(name);
        }
    }
    d
}

/// A directory of links for a daemon's PATH: `names` found in this PATH
/// (or given as (name, path)), and nothing else (no conmon).
pub fn bin_dir(dir: &Path, names: &[(&str, PathBuf)]) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for (name, target) in names {
        std::os::unix::fs::symlink(target, bin.join(name)).unwrap();
    }
    bin
}

pub fn in_path(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed"))
}
