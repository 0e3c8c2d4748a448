//! `userns-hostnet install` / `uninstall` on real containerd 1.6 configs
//! (checked by the real `containerd config dump`), a commented config with
//! custom handlers, a version-3 sample and CRI-O's drop-in; and a handler
//! installed for crun running a container end to end.

mod common;

use common::install::{
    args_for, code, dump, dump_with, install, left, ok, refused, s, text, tool, uninstall,
    v2_handler,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// `config.toml` in `dir`, holding `text`.
fn config_file(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("config.toml");
    std::fs::write(&p, text).unwrap();
    p
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

/// containerd 1.7.24, unpacked by scripts/cri-tools.sh.
fn containerd_17() -> PathBuf {
    let p = common::tools_target().join("containerd-1.7/usr/bin/containerd");
    assert!(p.is_file(), "{p:?} missing: run scripts/cri-tools.sh");
    p
}

/// containerd 2.3.4, unpacked by scripts/cri-tools.sh.
fn containerd_23() -> PathBuf {
    let p = common::tools_target().join("containerd-2.3/containerd");
    assert!(p.is_file(), "{p:?} missing: run scripts/cri-tools.sh");
    p
}

/// A runtime handler in a dump of containerd 1.x (version 2) or 2.x
/// (version 3, which 2.x migrates every config to).
fn handler_in<'a>(doc: &'a toml::Value, name: &str) -> Option<&'a toml::Value> {
    v2_handler(doc, name).or_else(|| {
        doc.get("plugins")?
            .get("io.containerd.cri.v1.runtime")?
            .get("containerd")?
            .get("runtimes")?
            .get(name)
    })
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

/// The link to the wrapper that install makes for handler userns-hostnet
/// when the config in `dir` names a real runtime.
/// Where PATH finds runc, as install links it.
fn runc_in_path() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("runc"))
        .find(|p| p.is_file())
        .expect("runc is installed (Debian package runc)")
}

fn handler_link(dir: &Path) -> PathBuf {
    dir.join("handlers/userns-hostnet/userns-hostnet-runtime")
}

#[test]
fn default_containerd_config_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = default_config(dir.path());
    let original = std::fs::read(&cfg).unwrap();
    let out = install("containerd", &cfg, &["--backup"]);
    assert!(out.contains("restart containerd"), "{out}");
    assert!(
        out.contains(&format!("backup {}.bak-", cfg.display())),
        "{out}"
    );
    let d = dump(&cfg);
    let h = v2_handler(&d, "userns-hostnet").expect("containerd lists the handler");
    assert_eq!(h["runtime_type"].as_str(), Some("io.containerd.runc.v2"));
    // No BinaryName: the runc shim runs `runc` from PATH, which the
    // handler keeps as its real runtime through its own link.
    assert_eq!(
        h["options"]["BinaryName"].as_str(),
        Some(s(&handler_link(dir.path())))
    );
    assert_eq!(
        std::fs::read_link(dir.path().join("handlers/userns-hostnet/runtime")).unwrap(),
        runc_in_path()
    );
    assert_eq!(h["options"]["SystemdCgroup"].as_bool(), Some(false));
    assert_eq!(backups(dir.path()), 1);
    let installed = std::fs::read(&cfg).unwrap();

    // Idempotent: nothing written, no new backup.
    let out = install("containerd", &cfg, &[]);
    assert!(out.starts_with("nothing to change"), "{out}");
    assert_eq!(std::fs::read(&cfg).unwrap(), installed);
    assert_eq!(backups(dir.path()), 1);

    uninstall("containerd", &cfg, &[]);
    assert_eq!(std::fs::read(&cfg).unwrap(), original, "not byte-identical");
    assert!(v2_handler(&dump(&cfg), "userns-hostnet").is_none());
    let out = uninstall("containerd", &cfg, &[]);
    assert!(out.starts_with("nothing to change"), "{out}");
}

#[test]
fn comments_order_and_custom_handlers_survive() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), COMMENTED);
    install(
        "containerd",
        &cfg,
        &[
            "--handler",
            "uhn",
            "--wrapper",
            "/opt/bin/userns-hostnet-runtime",
        ],
    );
    let text = std::fs::read_to_string(&cfg).unwrap();
    // Every original line is still there, in order.
    let mut lines = text.lines();
    for want in COMMENTED.lines() {
        assert!(lines.any(|l| l == want), "lost or moved: {want:?}\n{text}");
    }
    let d = dump(&cfg);
    let h = v2_handler(&d, "uhn").unwrap();
    // The runc handler names its binary: the new handler keeps it as the
    // real runtime, through its own link to the wrapper.
    let links = dir.path().join("handlers/uhn");
    assert_eq!(
        h["options"]["BinaryName"].as_str(),
        Some(s(&links.join("userns-hostnet-runtime")))
    );
    assert_eq!(
        std::fs::read_link(links.join("userns-hostnet-runtime")).unwrap(),
        Path::new("/opt/bin/userns-hostnet-runtime")
    );
    assert_eq!(
        std::fs::read_link(links.join("runtime")).unwrap(),
        Path::new("/usr/sbin/runc")
    );
    assert_eq!(h["options"]["SystemdCgroup"].as_bool(), Some(true));
    assert!(v2_handler(&d, "gvisor").is_some());
    assert_eq!(
        v2_handler(&d, "runc").unwrap()["options"]["BinaryName"].as_str(),
        Some("/usr/sbin/runc")
    );
    uninstall("containerd", &cfg, &["--handler", "uhn"]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
    assert!(!dir.path().join("handlers").exists());
}

#[test]
fn version_3_sample() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), VERSION3);
    install("containerd", &cfg, &[]);
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let h =
        &doc["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["userns-hostnet"];
    assert_eq!(h["runtime_type"].as_str(), Some("io.containerd.runc.v2"));
    assert_eq!(h["options"]["SystemdCgroup"].as_bool(), Some(true));
    assert!(doc["plugins"].get("io.containerd.grpc.v1.cri").is_none());
    uninstall("containerd", &cfg, &[]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), VERSION3);
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), COMMENTED);
    let out = install("containerd", &cfg, &["--dry-run"]);
    assert!(
        out.contains(&format!(
            "--- {}\n+++ {}\n@@ ",
            cfg.display(),
            cfg.display()
        )),
        "{out}"
    );
    // Added lines, laid out like their neighbours (indented).
    let added = |line: &str| {
        out.lines()
            .any(|l| l.strip_prefix('+').is_some_and(|l| l.trim_start() == line))
    };
    assert!(
        added("[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.userns-hostnet]"),
        "{out}"
    );
    let link = handler_link(dir.path());
    assert!(
        added(&format!("BinaryName = \"{}\"", link.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "\nwould link {} -> /usr/bin/userns-hostnet-runtime\n",
            link.display()
        )),
        "{out}"
    );
    assert!(
        out.contains("real runtime of handler userns-hostnet: /usr/sbin/runc (the BinaryName of handler runc in "),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
    assert_eq!(backups(dir.path()), 0);
    assert!(!dir.path().join("handlers").exists());
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
        let c2 = containerd_23();
        let before = dump_with(&c2, &cfg);
        let drop_in_args = ["--drop-in", "--containerd", s(&c2)];
        install("containerd", &cfg, &drop_in_args);
        let drop_in = dir.path().join("conf.d/99-userns-hostnet.toml");
        assert!(drop_in.is_file());
        let after = dump_with(&c2, &cfg);
        let h = handler_in(&after, "userns-hostnet")
            .expect("containerd loads the drop-in through imports")
            .clone();
        assert_eq!(
            h["options"]["BinaryName"].as_str(),
            Some(s(&handler_link(dir.path())))
        );
        assert_eq!(
            without_handler(&after, "userns-hostnet"),
            without_handler(&before, "userns-hostnet"),
            "containerd 2.x merges the drop-in into the CRI table, which keeps everything else"
        );
        let out = install("containerd", &cfg, &drop_in_args);
        assert!(out.starts_with("nothing to change"), "{out}");
        // Without --drop-in, uninstall does not say "already removed" of a
        // handler the drop-in still registers.
        let text = left(&args_for("uninstall", "containerd", &cfg, &[]));
        assert!(
            text.contains(&format!(
                "runtime handler userns-hostnet is registered by {}",
                drop_in.display()
            )) && text.contains("userns-hostnet uninstall containerd --drop-in removes it")
                && !text.contains("nothing to change"),
            "{text}"
        );
        uninstall("containerd", &cfg, &["--drop-in"]);
        assert!(!drop_in.exists());
        assert_eq!(
            std::fs::read(&cfg).unwrap(),
            original,
            "imports line not restored (with_imports = {with_imports})"
        );
    }
}

/// What install refuses before touching a file, and what it warns of.
#[test]
fn install_validates_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), NODE_1X);
    for (extra, needle) in [
        (&["--handler", "bad name!"][..], "not a DNS-1123 label"),
        (&["--handler", "Bad_Name"][..], "not a DNS-1123 label"),
        (&["--handler=-x"][..], "not a DNS-1123 label"),
        (
            &["--wrapper", "bin/userns-hostnet-runtime"][..],
            "not an absolute path",
        ),
    ] {
        let text = refused(&args_for("install", "containerd", &cfg, extra));
        assert!(text.contains(needle), "{extra:?}: {text}");
    }
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), NODE_1X);

    let missing = dir.path().join("no-such-wrapper");
    let out = install("containerd", &cfg, &["--dry-run", "--wrapper", s(&missing)]);
    assert!(
        out.contains(&format!(
            "warning: --wrapper {} is not an executable file",
            missing.display()
        )),
        "{out}"
    );

    // CRI turned off: a warning with the fix.
    std::fs::write(
        &cfg,
        NODE_1X.replace(
            "version = 2\n",
            "version = 2\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n",
        ),
    )
    .unwrap();
    let out = install("containerd", &cfg, &["--dry-run"]);
    assert!(
        out.contains("lists \"io.containerd.grpc.v1.cri\" in disabled_plugins")
            && out.contains("remove it from disabled_plugins"),
        "{out}"
    );

    // Docker's containerd config, and a version 1 config: refused with
    // the way out.
    std::fs::write(&cfg, "disabled_plugins = [\"cri\"]\n").unwrap();
    let text = refused(&args_for("install", "containerd", &cfg, &[]));
    assert!(
        text.contains("Docker's containerd config") && text.contains("containerd config default >"),
        "{text}"
    );
    std::fs::write(&cfg, "[plugins.cri]\nsandbox_image = \"p\"\n").unwrap();
    let text = refused(&args_for("install", "containerd", &cfg, &[]));
    assert!(text.contains("add `version = 2`"), "{text}");
}

#[test]
fn uninstall_help_says_what_drop_in_removes() {
    let help = ok(&["uninstall", "--help"]);
    assert!(
        help.contains("the file when nothing else is left in it, and its imports line"),
        "{help}"
    );
    assert!(!help.contains("write a drop-in file"), "{help}");
    // Its own options only: none of install's, in install's words.
    for install_only in ["--set-as-default", "--backup", "--wrapper", "--containerd"] {
        assert!(!help.contains(install_only), "{install_only}: {help}");
    }
    // uninstall's --force is its own: removing a handler that still has
    // containers, not install's hook program check.
    assert!(!help.contains("temporary or build path"), "{help}");
    assert!(
        help.contains("even while containers of it are on the node"),
        "{help}"
    );
}

#[test]
fn crio_drop_in() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("crio.conf");
    let drop_in = dir.path().join("crio.conf.d/99-userns-hostnet.conf");
    let out = install("crio", &conf, &["--dry-run"]);
    assert!(out.contains("+runtime_type = \"oci\""), "{out}");
    assert!(!drop_in.exists());
    let out = install("crio", &conf, &["--handler", "uhn"]);
    assert!(out.contains("restart crio"), "{out}");
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&drop_in).unwrap()).unwrap();
    let h = &doc["crio"]["runtime"]["runtimes"]["uhn"];
    // No crio.conf, no `crio` to ask: CRI-O's built-in runc handler runs
    // `runc` from PATH, the wrapper's own first choice: the handler names
    // the wrapper alone.
    assert_eq!(
        h["runtime_path"].as_str(),
        Some("/usr/bin/userns-hostnet-runtime")
    );
    assert_eq!(h["runtime_type"].as_str(), Some("oci"));
    assert_eq!(
        h["runtime_root"].as_str(),
        Some("/run/userns-hostnet-runtime")
    );
    let out = install("crio", &conf, &["--handler", "uhn"]);
    assert!(out.starts_with("nothing to change"), "{out}");
    uninstall("crio", &conf, &["--handler", "uhn"]);
    assert!(!drop_in.exists());
    // install made crio.conf.d: uninstall removed it, empty.
    assert!(!drop_in.parent().unwrap().exists());
    // Someone else's file of that name is left alone.
    std::fs::create_dir(drop_in.parent().unwrap()).unwrap();
    std::fs::write(&drop_in, "[crio.runtime]\n").unwrap();
    refused(&args_for("install", "crio", &conf, &[]));
}

#[test]
fn refuses_what_is_not_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), COMMENTED);
    // A handler of that name that runs something else.
    let err = refused(&args_for(
        "install",
        "containerd",
        &cfg,
        &["--handler", "gvisor"],
    ));
    assert!(err.contains("already exists and differs"));
    let err = refused(&args_for(
        "uninstall",
        "containerd",
        &cfg,
        &["--handler", "runc"],
    ));
    assert!(err.contains("does not run the wrapper"));
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
    // Version 1 and a missing file.
    std::fs::write(&cfg, "[plugins.cri]\n").unwrap();
    let err = refused(&args_for("install", "containerd", &cfg, &[]));
    assert!(err.contains("config version 1 (no `version` line), the format containerd 2.0 removed"));
    let err = refused(&args_for(
        "install",
        "containerd",
        Path::new("/nonexistent/config.toml"),
        &[],
    ));
    assert!(err.contains("containerd config default"));
}

/// A handler installed for crun, through the wrapper's `-crun` name, runs a
/// userns + host-network container under a private containerd 1.6: the
/// BinaryName containerd reads back from the installed config is the
/// binary `ctr run --runc-binary` starts.
/// An error is one line that names its cause once.
#[test]
fn an_unreadable_config_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::create_dir(&cfg).unwrap();
    for command in ["install", "uninstall"] {
        let err = refused(&args_for(command, "containerd", &cfg, &[]));
        assert_eq!(
            err,
            format!(
                "userns-hostnet: {}: Is a directory (os error 21)\n",
                cfg.display()
            )
        );
    }
}

/// A containerd 1.x node's config: settings a CRI plugin table must keep.
const NODE_1X: &str = r#"version = 2

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
fn without_handler(doc: &toml::Value, name: &str) -> toml::Value {
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

/// containerd before 2.0 replaces the whole CRI plugin table with an
/// import's: `--drop-in` is refused there, and install into the main
/// config keeps every setting, as the real 1.6 and 1.7 load it.
#[test]
fn drop_in_is_refused_on_containerd_1x_and_install_keeps_every_setting() {
    for bin in [PathBuf::from("/usr/bin/containerd"), containerd_17()] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config_file(dir.path(), NODE_1X);
        let before = dump_with(&bin, &cfg);
        let cri = &before["plugins"]["io.containerd.grpc.v1.cri"];
        assert_eq!(
            cri["sandbox_image"].as_str(),
            Some("registry.example.com/pause:3.9-custom")
        );
        assert_eq!(cri["cni"]["bin_dir"].as_str(), Some("/opt/custom-cni/bin"));
        assert_eq!(
            cri["containerd"]["default_runtime_name"].as_str(),
            Some("crun")
        );

        let text = refused(&args_for(
            "install",
            "containerd",
            &cfg,
            &["--drop-in", "--containerd", s(&bin)],
        ));
        assert!(
            text.contains("--drop-in refused: containerd 1.")
                && text.contains("install without --drop-in"),
            "{text}"
        );
        assert_eq!(std::fs::read_to_string(&cfg).unwrap(), NODE_1X);
        assert!(!dir.path().join("conf.d").exists());

        install("containerd", &cfg, &[]);
        let after = dump_with(&bin, &cfg);
        let h = v2_handler(&after, "userns-hostnet").expect("the handler is loaded");
        assert!(
            h["options"]["BinaryName"]
                .as_str()
                .is_some_and(|b| b.ends_with("handlers/userns-hostnet/userns-hostnet-runtime")),
            "the default handler crun's BinaryName stays the real runtime: {h:?}"
        );
        assert_eq!(
            without_handler(&after, "userns-hostnet"),
            without_handler(&before, "userns-hostnet"),
            "{bin:?}: a setting changed"
        );
        uninstall("containerd", &cfg, &[]);
        assert_eq!(std::fs::read_to_string(&cfg).unwrap(), NODE_1X);
        assert_eq!(dump_with(&bin, &cfg), before);
    }
    // Without a containerd to ask, a version 2 config gets no drop-in.
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), NODE_1X);
    let text = refused(&args_for(
        "install",
        "containerd",
        &cfg,
        &["--drop-in", "--containerd", "/nonexistent/containerd"],
    ));
    assert!(text.contains("cannot tell which containerd"), "{text}");
}

/// A drop-in that replaces the CRI table (as one written before 2.0's
/// merge was understood): install into the main config warns that the
/// handler is lost with it, doctor fails, and uninstall --drop-in is the
/// way back.
#[test]
fn a_clobbering_import_is_refused_on_containerd_1x() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    let drop_in = dir.path().join("conf.d/50-other.toml");
    std::fs::create_dir_all(drop_in.parent().unwrap()).unwrap();
    std::fs::write(
        &cfg,
        NODE_1X.replace(
            "version = 2\n",
            &format!("version = 2\nimports = [{:?}]\n", drop_in.to_str().unwrap()),
        ),
    )
    .unwrap();
    std::fs::write(
        &drop_in,
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.kata]\nruntime_type = \"io.containerd.kata.v2\"\n",
    )
    .unwrap();
    let d = dump_with(&containerd_17(), &cfg);
    assert_eq!(
        d["plugins"]["io.containerd.grpc.v1.cri"]["cni"]["bin_dir"].as_str(),
        Some("/usr/lib/cni"),
        "containerd 1.7 replaces the CRI table with the import's"
    );
    // containerd 1.7 would never serve the handler: refused, nothing
    // written (it used to exit 0 with a warning).
    let before = std::fs::read_to_string(&cfg).unwrap();
    let out = refused(&args_for(
        "install",
        "containerd",
        &cfg,
        &["--containerd", s(&containerd_17())],
    ));
    assert!(
        out.starts_with(&format!(
            "userns-hostnet: {}: refused: {} replaces the whole CRI plugin table of that file on containerd 1.7 (",
            cfg.display(),
            drop_in.display()
        )) && out.contains("runtime handler userns-hostnet would never be served")
            && out.lines().count() == 1,
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), before);
    assert!(!dir.path().join("handlers").exists());
}

/// An operator's own handler of that name, even one that runs the wrapper,
/// is neither taken over by install nor removed by uninstall.
#[test]
fn an_operators_own_handler_survives_uninstall() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    // The registering guide's snippet, as an operator pastes it.
    let own = format!(
        "{COMMENTED}\n{}",
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/containerd-v2.toml"
        ))
        .unwrap()
        .replace("version = 2\n", "")
    );
    std::fs::write(&cfg, &own).unwrap();
    for handler in ["userns-hostnet", "userns-hostnet-crun"] {
        let (status, out) = code(&args_for(
            "install",
            "containerd",
            &cfg,
            &["--handler", handler],
        ));
        assert_eq!(status, Some(0), "{out}");
        assert!(out.starts_with("nothing to change"), "{out}");
        assert!(out.contains("not added by install"), "{out}");
        let out = left(&args_for(
            "uninstall",
            "containerd",
            &cfg,
            &["--handler", handler],
        ));
        assert!(
            out.contains(&format!(
                "left runtime handler {handler} in {}: not added by install (no install marker)",
                cfg.display()
            )),
            "{out}"
        );
        assert_eq!(std::fs::read_to_string(&cfg).unwrap(), own);
    }
    assert_eq!(backups(dir.path()), 0);
    // Another handler installed next to them goes, and only it.
    install("containerd", &cfg, &["--handler", "uhn"]);
    uninstall("containerd", &cfg, &["--handler", "uhn"]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), own);
}

/// A handler changed since install stays (its links too); one only
/// re-indented or commented is still install's and goes.
#[test]
fn a_changed_handler_is_left_a_reformatted_one_removed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = default_config(dir.path());
    let original = std::fs::read_to_string(&cfg).unwrap();
    install("containerd", &cfg, &[]);
    let installed = std::fs::read_to_string(&cfg).unwrap();
    assert!(
        installed.contains("# Added by `userns-hostnet install` (fingerprint "),
        "{installed}"
    );

    // The installed handler comes after the marker: its lines are edited
    // there, the runc handler's (laid out alike) left alone.
    let at = installed
        .find("# Added by `userns-hostnet install`")
        .unwrap();
    let (head, tail) = installed.split_at(at);
    let changed = format!(
        "{head}{}",
        tail.replacen("NoPivotRoot = false", "NoPivotRoot = true", 1)
    );
    assert_ne!(changed, installed);
    std::fs::write(&cfg, &changed).unwrap();
    let out = left(&args_for("uninstall", "containerd", &cfg, &[]));
    assert!(out.contains("changed since install"), "{out}");
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), changed);
    // A second install leaves the changed handler as it is.
    let (status, out) = code(&args_for("install", "containerd", &cfg, &[]));
    assert_eq!(status, Some(0), "{out}");
    assert!(
        out.contains("changed since install: left as it is"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), changed);

    let reformatted = format!(
        "{head}{}",
        tail.replacen(
            "runtime_type = \"io.containerd.runc.v2\"",
            "# mine now\n  runtime_type = \"io.containerd.runc.v2\"",
            1,
        )
        .replacen(
            "SystemdCgroup = false",
            "SystemdCgroup   =   false   # as the node",
            1,
        )
    );
    assert_ne!(reformatted, installed);
    std::fs::write(&cfg, &reformatted).unwrap();
    uninstall("containerd", &cfg, &[]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), original);
}

/// A runc handler with its own `BinaryName`: the installed handler runs
/// the wrapper through its own link, and the wrapper runs that binary;
/// uninstall takes the links away again.
#[test]
fn a_custom_binary_name_stays_the_real_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = default_config(dir.path());
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("runc-1.4");
    let seen = dir.path().join("argv");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$0 $*\" > {}\n", seen.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.contains("BinaryName = \"\""), "{text}");
    let text = text.replacen(
        "BinaryName = \"\"",
        &format!("BinaryName = \"{}\"", fake.display()),
        1,
    );
    std::fs::write(&cfg, &text).unwrap();

    let out = install("containerd", &cfg, &["--dry-run"]);
    assert!(
        out.contains(&format!(
            "real runtime of handler userns-hostnet: {} (the BinaryName of handler runc in {})",
            fake.display(),
            cfg.display()
        )),
        "{out}"
    );
    assert!(!dir.path().join("handlers").exists());

    install("containerd", &cfg, &["--wrapper", common::wrapper()]);
    let handlers = dir.path().join("handlers");
    let link = handlers.join("userns-hostnet/userns-hostnet-runtime");
    let d = dump(&cfg);
    let h = v2_handler(&d, "userns-hostnet").unwrap();
    assert_eq!(h["options"]["BinaryName"].as_str(), Some(s(&link)));
    // The runc handler keeps its own binary.
    assert_eq!(
        v2_handler(&d, "runc").unwrap()["options"]["BinaryName"].as_str(),
        Some(s(&fake))
    );

    // containerd's shim starts BinaryName as argv[0]; the wrapper passes
    // `state` straight to the handler's runtime, with no config file read.
    let status = Command::new(&link)
        .args(["--root", "/run/x", "state", "c1"])
        .env("USERNS_HOSTNET_HANDLERS_DIR", &handlers)
        .env(
            "USERNS_HOSTNET_CONFIG",
            dir.path().join("no-such-config.toml"),
        )
        .env_remove("USERNS_HOSTNET_RUNTIME")
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        format!("{} --root /run/x state c1\n", fake.display())
    );

    // A second install notices a lost link.
    std::fs::remove_file(handlers.join("userns-hostnet/runtime")).unwrap();
    let out = install("containerd", &cfg, &["--wrapper", common::wrapper()]);
    assert!(out.contains("whose links are not all there"), "{out}");

    uninstall("containerd", &cfg, &[]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), text);
    assert!(!handlers.exists());
}

/// Two handlers in one drop-in: uninstalling one keeps the file and its
/// import; the last one takes both; an operator's own settings in the
/// drop-in keep the file.
#[test]
fn drop_in_holds_several_handlers() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = default_config(dir.path());
    let original = std::fs::read(&cfg).unwrap();
    let drop_in = dir.path().join("conf.d/99-userns-hostnet.toml");
    let c2 = containerd_23();
    for h in ["a", "b"] {
        install(
            "containerd",
            &cfg,
            &["--drop-in", "--containerd", s(&c2), "--handler", h],
        );
    }
    let d = dump_with(&c2, &cfg);
    assert!(handler_in(&d, "a").is_some() && handler_in(&d, "b").is_some());
    let out = uninstall("containerd", &cfg, &["--drop-in", "--handler", "a"]);
    assert!(out.contains("kept"), "{out}");
    let d = dump_with(&c2, &cfg);
    assert!(handler_in(&d, "a").is_none() && handler_in(&d, "b").is_some());
    // No backup inside conf.d, where an import glob could load it.
    assert_eq!(backups(&dir.path().join("conf.d")), 0);

    let mut text = std::fs::read_to_string(&drop_in).unwrap();
    text.push_str(
        "\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"mirror/pause:3.9\"\n",
    );
    std::fs::write(&drop_in, &text).unwrap();
    uninstall("containerd", &cfg, &["--drop-in", "--handler", "b"]);
    let kept = std::fs::read_to_string(&drop_in).unwrap();
    assert!(
        kept.contains("mirror/pause") && !kept.contains("runtimes.b"),
        "{kept}"
    );
    assert_ne!(
        std::fs::read(&cfg).unwrap(),
        original,
        "the import must stay"
    );
    std::fs::remove_file(&drop_in).unwrap();
    // With the drop-in gone, its import goes too: containerd refuses a
    // missing import.
    uninstall("containerd", &cfg, &["--drop-in", "--handler", "b"]);
    assert_eq!(std::fs::read(&cfg).unwrap(), original);
}

/// CRI-O: the default handler's `runtime_path` stays the real runtime; an
/// operator's handler in the wrapper's drop-in survives uninstall.
#[test]
fn crio_keeps_the_runtime_path_and_the_operators_handler() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("crio.conf");
    std::fs::write(
        &conf,
        "[crio.runtime]\ndefault_runtime = \"crun\"\n\n[crio.runtime.runtimes.crun]\nruntime_path = \"/usr/bin/crun\"\n",
    )
    .unwrap();
    let drop_in = dir.path().join("crio.conf.d/99-userns-hostnet.conf");
    let out = install("crio", &conf, &[]);
    assert!(
        out.contains("real runtime of handler userns-hostnet: /usr/bin/crun (the runtime_path of handler crun in "),
        "{out}"
    );
    let link = handler_link(dir.path());
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&drop_in).unwrap()).unwrap();
    assert_eq!(
        doc["crio"]["runtime"]["runtimes"]["userns-hostnet"]["runtime_path"].as_str(),
        Some(s(&link))
    );
    assert_eq!(
        std::fs::read_link(dir.path().join("handlers/userns-hostnet/runtime")).unwrap(),
        Path::new("/usr/bin/crun")
    );
    // The operator adds a handler of their own to that file.
    let mut text = std::fs::read_to_string(&drop_in).unwrap();
    text.push_str(
        "\n[crio.runtime.runtimes.mine]\nruntime_path = \"/usr/bin/userns-hostnet-runtime-crun\"\n",
    );
    std::fs::write(&drop_in, &text).unwrap();
    uninstall("crio", &conf, &[]);
    let kept = std::fs::read_to_string(&drop_in).unwrap();
    assert!(
        kept.contains("runtimes.mine") && !kept.contains("runtimes.userns-hostnet]"),
        "{kept}"
    );
    assert!(!dir.path().join("handlers").exists());
    let out = left(&args_for(
        "uninstall",
        "crio",
        &conf,
        &["--handler", "mine"],
    ));
    assert!(out.contains("not added by install"), "{out}");
    assert_eq!(std::fs::read_to_string(&drop_in).unwrap(), kept);
    assert_eq!(backups(&dir.path().join("crio.conf.d")), 0);
}

/// `--set-as-default`: containerd's default_runtime_name names the handler
/// (as the real containerd reads it), with an inline comment of the
/// operator's; uninstall puts the old value and comment back byte for
/// byte. Unset before, it is unset again.
#[test]
fn set_as_default_is_put_back_by_uninstall() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    let original = COMMENTED.replace(
        "default_runtime_name = \"runc\"",
        "default_runtime_name = \"runc\"  # what most pods use",
    );
    std::fs::write(&cfg, &original).unwrap();
    let w = "/opt/bin/userns-hostnet-runtime";
    let as_default = ["--handler", "uhn", "--wrapper", w, "--set-as-default"];
    install("containerd", &cfg, &as_default);
    let d = dump(&cfg);
    assert_eq!(
        d["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"].as_str(),
        Some("uhn")
    );
    // The new handler still copied runc's settings.
    assert_eq!(
        v2_handler(&d, "uhn").unwrap()["options"]["SystemdCgroup"].as_bool(),
        Some(true)
    );
    let out = install("containerd", &cfg, &as_default);
    assert!(out.starts_with("nothing to change"), "{out}");
    uninstall("containerd", &cfg, &["--handler", "uhn"]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), original);

    let unset = COMMENTED.replace("      default_runtime_name = \"runc\"\n", "");
    std::fs::write(&cfg, &unset).unwrap();
    install("containerd", &cfg, &as_default);
    assert_eq!(
        dump(&cfg)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"]
            .as_str(),
        Some("uhn")
    );
    uninstall("containerd", &cfg, &["--handler", "uhn"]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), unset);

    // CRI-O: default_runtime in the drop-in, which goes whole on uninstall.
    let conf = dir.path().join("crio.conf");
    std::fs::write(&conf, "[crio.runtime]\ndefault_runtime = \"crun\"\n").unwrap();
    let drop_in = dir.path().join("crio.conf.d/99-userns-hostnet.conf");
    install("crio", &conf, &["--set-as-default"]);
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&drop_in).unwrap()).unwrap();
    assert_eq!(
        doc["crio"]["runtime"]["default_runtime"].as_str(),
        Some("userns-hostnet")
    );
    uninstall("crio", &conf, &[]);
    assert!(!drop_in.exists());
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        "[crio.runtime]\ndefault_runtime = \"crun\"\n"
    );
}

fn json_of(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = tool(args);
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not one JSON document ({e}): {}", text(&out)));
    (out.status.code(), doc)
}

/// `--check` exits 1 while install (or uninstall) would change something
/// and writes nothing; `--json` says file by file what was done.
#[test]
fn check_and_json_for_automation() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), COMMENTED);
    let c = s(&cfg);
    let w = "/opt/bin/userns-hostnet-runtime";
    let base = ["--handler", "uhn", "--wrapper", w];
    let at: &Path = &cfg;
    let with = |command: &'static str, more: &[&'static str]| {
        let base = if command == "install" {
            &base[..]
        } else {
            &base[..2]
        };
        args_for(command, "containerd", at, &[base, more].concat())
    };

    let out = left(&with("install", &["--check"]));
    assert!(out.contains(&format!("would modify {c}")), "{out}");
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
    assert!(!dir.path().join("handlers").exists());

    let (status, doc) = json_of(&with("install", &["--dry-run", "--json"]));
    assert_eq!(status, Some(0));
    assert_eq!(doc["written"], false, "{doc:#}");
    assert_eq!(doc["changed"], true, "{doc:#}");
    assert_eq!(doc["files"][0]["action"], "modify", "{doc:#}");
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);

    let (status, doc) = json_of(&with("install", &["--json"]));
    assert_eq!(status, Some(0));
    assert_eq!(doc["written"], true, "{doc:#}");
    assert_eq!(doc["files"][0]["path"], c, "{doc:#}");
    assert_eq!(doc["files"][0]["action"], "modify", "{doc:#}");
    assert_eq!(doc["links"].as_array().unwrap().len(), 2, "{doc:#}");
    assert_eq!(doc["restart"], "systemctl restart containerd", "{doc:#}");
    assert!(v2_handler(&dump(&cfg), "uhn").is_some());

    let (status, out) = code(&with("install", &["--check"]));
    assert_eq!(status, Some(0), "{out}");
    assert!(out.contains("in place"), "{out}");

    let installed = std::fs::read_to_string(&cfg).unwrap();
    left(&with("uninstall", &["--check"]));
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), installed);
    let (status, doc) = json_of(&with("uninstall", &["--json"]));
    assert_eq!(status, Some(0));
    assert_eq!(doc["command"], "uninstall");
    assert_eq!(doc["files"][0]["action"], "modify", "{doc:#}");
    assert!(doc["links"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["action"] == "remove"));
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
    let (status, out) = code(&with("uninstall", &["--check"]));
    assert_eq!(status, Some(0), "{out}");
}

/// Under `--json` an error is a document too, on stdout, with the status
/// of an error and the line that stderr would have had.
#[test]
fn json_errors_are_a_document() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), COMMENTED);
    for (args, line) in [
        (
            args_for("install", "containerd", &cfg, &["--json", "--handler", "Bad_Name"]),
            "--handler \"Bad_Name\": not a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63), which a RuntimeClass handler must be".to_owned(),
        ),
        (
            args_for("uninstall", "containerd", &cfg, &["--json", "--handler", "runc"]),
            format!(
                "{}: runtime handler runc does not run the wrapper; leaving it alone",
                cfg.display()
            ),
        ),
        (
            args_for("install", "containerd", &cfg, &["--json", "--check", "--handler", "gvisor"]),
            format!(
                "{}: runtime handler gvisor already exists and differs; uninstall it or choose another --handler",
                cfg.display()
            ),
        ),
    ] {
        let out = tool(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(out.stderr.is_empty(), "{args:?}: {}", text(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: not one JSON document ({e}): {}", text(&out)));
        assert_eq!(doc, json!({ "error": line }), "{args:?}");
        let without: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
        assert_eq!(refused(&without), format!("userns-hostnet: {line}\n"));
    }
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
}

/// A write keeps no backup unless asked; uninstall removes the drop-in
/// directory install made once it is empty, and keeps one the operator
/// made or put a file in.
#[test]
fn no_backup_unless_asked_and_made_directories_go() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), COMMENTED);
    let out = install("containerd", &cfg, &[]);
    assert!(!out.contains("backup"), "{out}");
    assert_eq!(backups(dir.path()), 0);
    uninstall("containerd", &cfg, &[]);
    assert_eq!(backups(dir.path()), 0);

    let conf = dir.path().join("crio.conf");
    let conf_d = dir.path().join("crio.conf.d");
    install("crio", &conf, &[]);
    let out = uninstall("crio", &conf, &[]);
    assert!(
        out.contains(&format!("removed {}\n", conf_d.display())),
        "{out}"
    );
    assert!(!conf_d.exists());

    // Made by install, then given another file: kept.
    install("crio", &conf, &[]);
    std::fs::write(conf_d.join("10-other.conf"), "[crio.runtime]\n").unwrap();
    uninstall("crio", &conf, &[]);
    assert!(conf_d.join("10-other.conf").exists());
    std::fs::remove_file(conf_d.join("10-other.conf")).unwrap();

    // The operator's own (empty) directory: kept.
    install("crio", &conf, &[]);
    uninstall("crio", &conf, &[]);
    assert!(conf_d.is_dir());
}

/// k3s and RKE2 write containerd's config.toml anew at every start:
/// install there is refused with the template to edit instead, and works
/// on that template started as a copy; a Go template is named as such.
#[test]
fn k3s_and_rke2_point_to_their_template() {
    let dir = tempfile::tempdir().unwrap();
    for (distro, version3) in [("k3s", false), ("rke2", false), ("k3s", true)] {
        let etc = dir
            .path()
            .join(format!("var/lib/rancher/{distro}/agent/etc/containerd"));
        std::fs::create_dir_all(&etc).unwrap();
        let cfg = etc.join("config.toml");
        std::fs::write(&cfg, if version3 { VERSION3 } else { COMMENTED }).unwrap();
        let out = refused(&args_for("install", "containerd", &cfg, &[]));
        let template = etc.join(if version3 {
            "config-v3.toml.tmpl"
        } else {
            "config.toml.tmpl"
        });
        assert!(
            out.contains(&format!("{distro} writes this file anew"))
                && out.contains(&format!("cp {} {}", cfg.display(), template.display())),
            "{out}"
        );
        assert_eq!(
            std::fs::read_to_string(&cfg).unwrap(),
            if version3 { VERSION3 } else { COMMENTED }
        );
        std::fs::copy(&cfg, &template).unwrap();
        install("containerd", &template, &[]);
        uninstall("containerd", &template, &[]);
        std::fs::remove_file(&template).unwrap();
    }
    let etc = dir.path().join("var/lib/rancher/k3s/agent/etc/containerd");
    let template = etc.join("config.toml.tmpl");
    std::fs::write(
        &template,
        "{{ template \"base\" . }}\n\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.other]\n",
    )
    .unwrap();
    let out = refused(&args_for("install", "containerd", &template, &[]));
    assert!(out.contains("a Go template"), "{out}");
    // Elsewhere, a file named config.toml is edited as usual.
    let plain = dir.path().join("etc/containerd/config.toml");
    std::fs::create_dir_all(plain.parent().unwrap()).unwrap();
    std::fs::write(&plain, COMMENTED).unwrap();
    install("containerd", &plain, &[]);
}

/// CRI-O 1.36.3, unpacked by scripts/cri-tools.sh.
fn crio_bin() -> PathBuf {
    let p = common::tools_target().join("cri-o/crio");
    assert!(p.is_file(), "{p:?} missing: run scripts/cri-tools.sh");
    p
}

/// A directory of links for a daemon's PATH: `names` found in this PATH
/// (or given as (name, path)), and nothing else (no conmon).
fn bin_dir(dir: &Path, names: &[(&str, PathBuf)]) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for (name, target) in names {
        std::os::unix::fs::symlink(target, bin.join(name)).unwrap();
    }
    bin
}

fn in_path(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed"))
}

/// Start crio on `conf` and its crio.conf.d with `path` as its PATH:
/// `Ok` once its socket is up (it is then stopped), `Err(log)` when it
/// exits first.
fn crio_starts(dir: &Path, conf: &Path, path: &Path) -> Result<(), String> {
    let st = dir.join("state");
    std::fs::create_dir_all(&st).unwrap();
    let sock = st.join("crio.sock");
    let log = st.join("crio.log");
    let a = |p: &str| st.join(p).into_os_string();
    let mut child = Command::new(crio_bin())
        .arg("--config")
        .arg(conf)
        .arg("--config-dir")
        .arg(conf.with_file_name("crio.conf.d"))
        .args(["--storage-driver", "vfs", "--disable-hostport-mapping"])
        .arg("--root")
        .arg(a("root"))
        .arg("--runroot")
        .arg(a("run"))
        .arg("--listen")
        .arg(&sock)
        .arg("--log-dir")
        .arg(a("log"))
        .arg("--version-file")
        .arg(a("v"))
        .arg("--version-file-persist")
        .arg(a("vp"))
        .arg("--clean-shutdown-file")
        .arg(a("cs"))
        .arg("--cni-config-dir")
        .arg(a("cni"))
        .arg("--cni-plugin-dir")
        .arg(a("cnib"))
        .arg("--nri-listen")
        .arg(a("nri.sock"))
        .env_clear()
        .env("PATH", path)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let result = loop {
        if sock.exists() {
            break Ok(());
        }
        if let Some(status) = child.try_wait().unwrap() {
            break Err(format!(
                "crio exited ({status}): {}",
                std::fs::read_to_string(&log).unwrap()
            ));
        }
        if std::time::Instant::now() > deadline {
            break Err(format!(
                "crio neither started nor exited in 60 s: {}",
                std::fs::read_to_string(&log).unwrap()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// CRI-O's own packaging (crio.conf.d/10-crio.conf: crun the default, each
/// handler with monitor_path, conmon not in PATH): the handler install
/// adds carries monitor_path, monitor_env and allowed_annotations, and
/// runs crun, the default's runtime found in PATH; crio then starts.
#[test]
fn crio_packaging_drop_in_starts_after_install() {
    let dir = tempfile::tempdir().unwrap();
    let libexec = dir.path().join("libexec");
    std::fs::create_dir(&libexec).unwrap();
    std::os::unix::fs::symlink(in_path("conmon"), libexec.join("conmon")).unwrap();
    let crun = in_path("crun");
    let bin = bin_dir(
        dir.path(),
        &[
            ("crun", crun.clone()),
            ("runc", in_path("runc")),
            ("nsenter", in_path("nsenter")),
            ("pinns", crio_bin().with_file_name("pinns")),
        ],
    );
    let conf = dir.path().join("crio.conf");
    std::fs::write(&conf, "").unwrap();
    std::fs::create_dir(dir.path().join("crio.conf.d")).unwrap();
    let packaging = format!(
        r#"[crio.runtime]
default_runtime = "crun"

[crio.runtime.runtimes.crun]
runtime_path = ""
runtime_root = "/run/crun"
monitor_path = "{m}"
monitor_env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"]
allowed_annotations = [
    "io.containers.trace-syscall",
]

[crio.runtime.runtimes.runc]
runtime_root = "/run/runc"
monitor_path = "{m}"
"#,
        m = libexec.join("conmon").display()
    );
    std::fs::write(dir.path().join("crio.conf.d/10-crio.conf"), &packaging).unwrap();
    crio_starts(dir.path(), &conf, &bin).expect("crio starts before install");

    let out = tool_with_path(
        &args_for("install", "crio", &conf, &["--wrapper", common::wrapper()]),
        &bin,
    );
    assert!(
        out.contains(&format!(
            "real runtime of handler userns-hostnet: {} (the runtime CRI-O runs for handler crun, which has no runtime_path: `crun` in PATH)",
            bin.join("crun").display()
        )),
        "{out}"
    );
    assert!(
        out.contains(
            "carries every setting of handler crun: monitor_path, monitor_env, allowed_annotations"
        ),
        "{out}"
    );
    let drop_in = dir.path().join("crio.conf.d/99-userns-hostnet.conf");
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&drop_in).unwrap()).unwrap();
    let h = &doc["crio"]["runtime"]["runtimes"]["userns-hostnet"];
    let src =
        &toml::from_str::<toml::Value>(&packaging).unwrap()["crio"]["runtime"]["runtimes"]["crun"];
    for key in ["monitor_path", "monitor_env", "allowed_annotations"] {
        assert_eq!(h[key], src[key], "{key}");
    }
    assert_eq!(
        h["runtime_root"].as_str(),
        Some("/run/userns-hostnet-runtime")
    );
    assert_eq!(
        std::fs::read_link(dir.path().join("handlers/userns-hostnet/runtime")).unwrap(),
        bin.join("crun")
    );
    crio_starts(dir.path(), &conf, &bin).expect("crio starts after install");
    uninstall("crio", &conf, &[]);
    assert!(!drop_in.exists());
}

/// The tool with `path` as PATH; it must succeed: everything printed.
fn tool_with_path(args: &[&str], path: &Path) -> String {
    let at = args.iter().position(|a| *a == "--config").unwrap();
    let dir = Path::new(args[at + 1]).parent().unwrap();
    let out = Command::new(common::install::TOOL)
        .args(args)
        .arg("--handlers-dir")
        .arg(dir.join("handlers"))
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", text(&out));
    text(&out)
}

/// containerd 2.3.4's own `containerd config default` writes `version = 4`:
/// install accepts it, containerd 2.3 loads the handler with every setting
/// of runc's, and uninstall puts the file back byte for byte.
#[test]
fn containerd_23_default_config_version_4_installs() {
    let dir = tempfile::tempdir().unwrap();
    let c2 = containerd_23();
    let out = Command::new(&c2)
        .args(["config", "default"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, &out.stdout).unwrap();
    let original = std::fs::read(&cfg).unwrap();
    assert!(
        String::from_utf8_lossy(&original).starts_with("version = 4\n"),
        "containerd 2.3.4 writes version 4"
    );
    install("containerd", &cfg, &["--containerd", s(&c2)]);
    let after = dump_with(&c2, &cfg);
    let h = handler_in(&after, "userns-hostnet").expect("containerd 2.3 loads the handler");
    let runc = handler_in(&after, "runc").unwrap();
    for (key, v) in runc.as_table().unwrap() {
        if key != "options" {
            assert_eq!(&h[key], v, "{key}");
        }
    }
    for (key, v) in runc["options"].as_table().unwrap() {
        if key != "BinaryName" {
            assert_eq!(&h["options"][key], v, "options.{key}");
        }
    }
    assert_eq!(
        h["options"]["BinaryName"].as_str(),
        Some(s(&handler_link(dir.path())))
    );
    // Laid out like its neighbour, the runc handler: the same indentation
    // of headers and keys, strings in the file's own quotes.
    let text = std::fs::read_to_string(&cfg).unwrap();
    let indent_of = |needle: &str| {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(needle))
            .unwrap_or_else(|| panic!("no line {needle}: {text}"));
        line.len() - line.trim_start().len()
    };
    let runtimes = "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.";
    assert_eq!(
        indent_of(&format!("{runtimes}userns-hostnet]")),
        indent_of(&format!("{runtimes}runc]"))
    );
    assert_eq!(
        indent_of(&format!("{runtimes}userns-hostnet.options]")),
        indent_of(&format!("{runtimes}runc.options]"))
    );
    assert!(
        text.contains(&format!(
            "{}BinaryName = '{}'\n",
            " ".repeat(indent_of("SystemdCgroup = ")),
            handler_link(dir.path()).display()
        )),
        "{text}"
    );
    let out = install("containerd", &cfg, &["--containerd", s(&c2)]);
    assert!(out.starts_with("nothing to change"), "{out}");
    uninstall("containerd", &cfg, &[]);
    assert_eq!(std::fs::read(&cfg).unwrap(), original);
    // A version install does not know is refused with what to do, never
    // with advice to start from a file it would refuse too.
    std::fs::write(&cfg, "version = 5\n").unwrap();
    let err = refused(&args_for("install", "containerd", &cfg, &[]));
    assert!(
        err.contains("config version 5 is newer than this install knows"),
        "{err}"
    );
    assert!(!err.contains("config default"), "{err}");
}

/// containerd 1.7: every setting of the runc handler (base_runtime_spec,
/// snapshotter, cni_conf_dir, the annotations, privileged_without_host_devices,
/// options) is in the new handler as containerd 1.7 loads it.
#[test]
fn containerd_17_handler_keeps_every_setting() {
    let dir = tempfile::tempdir().unwrap();
    let c17 = containerd_17();
    let out = Command::new(&c17)
        .args(["config", "default"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let runc = "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n";
    assert!(text.contains(runc));
    let text = text
        .replace(
            "base_runtime_spec = \"\"",
            "base_runtime_spec = \"/etc/containerd/base.json\"",
        )
        .replace("cni_conf_dir = \"\"", "cni_conf_dir = \"/etc/cni/site\"")
        .replace("pod_annotations = []", "pod_annotations = [\"io.site/*\"]")
        .replace(
            "container_annotations = []",
            "container_annotations = [\"io.site.c/*\"]",
        )
        .replace(
            "privileged_without_host_devices = false",
            "privileged_without_host_devices = true",
        )
        .replace("SystemdCgroup = false", "SystemdCgroup = true")
        .replace("snapshotter = \"\"", "snapshotter = \"native\"");
    let cfg = config_file(dir.path(), &text);
    install("containerd", &cfg, &["--containerd", s(&c17)]);
    let d = dump_with(&c17, &cfg);
    let h = handler_in(&d, "userns-hostnet").unwrap();
    let runc = handler_in(&d, "runc").unwrap();
    assert_eq!(runc["snapshotter"].as_str(), Some("native"), "{runc:?}");
    for (key, v) in runc.as_table().unwrap() {
        if key != "options" {
            assert_eq!(&h[key], v, "{key}");
        }
    }
    for (key, v) in runc["options"].as_table().unwrap() {
        if key != "BinaryName" {
            assert_eq!(&h["options"][key], v, "options.{key}");
        }
    }
}

/// A drop-in and a plain install of one handler are never both there:
/// each refuses while the other holds the handler, naming the file and
/// the command that undoes it; `--drop-in` adds no imports entry that an
/// existing glob already covers.
#[test]
fn drop_in_and_plain_install_do_not_mix() {
    let dir = tempfile::tempdir().unwrap();
    let c2 = containerd_23();
    let out = Command::new(&c2)
        .args(["config", "default"])
        .output()
        .unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, &out.stdout).unwrap();
    let original = std::fs::read(&cfg).unwrap();
    let drop_in_args = ["--drop-in", "--containerd", s(&c2)];
    install("containerd", &cfg, &drop_in_args);
    let drop_in = dir.path().join("conf.d/99-userns-hostnet.toml");
    let err = refused(&args_for("install", "containerd", &cfg, &[]));
    assert!(
        err.contains(&format!(
            "{}: already holds runtime handler userns-hostnet; an install into the main config would register it twice: userns-hostnet uninstall containerd --drop-in --config {} first",
            drop_in.display(),
            cfg.display()
        )),
        "{err}"
    );
    uninstall("containerd", &cfg, &["--drop-in"]);
    assert_eq!(std::fs::read(&cfg).unwrap(), original);

    install("containerd", &cfg, &[]);
    let installed = std::fs::read(&cfg).unwrap();
    let err = refused(&args_for("install", "containerd", &cfg, &drop_in_args));
    assert!(
        err.contains(&format!(
            "{}: already holds runtime handler userns-hostnet; a drop-in would register it twice: userns-hostnet uninstall containerd --config {} first",
            cfg.display(),
            cfg.display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::read(&cfg).unwrap(), installed);
    assert!(!drop_in.exists());
    uninstall("containerd", &cfg, &[]);
    assert_eq!(std::fs::read(&cfg).unwrap(), original);

    // Both, as an older install could leave them: uninstall --drop-in
    // keeps the links the main config's handler still runs.
    install("containerd", &cfg, &[]);
    let main = std::fs::read(&cfg).unwrap();
    std::fs::create_dir_all(drop_in.parent().unwrap()).unwrap();
    let mut both = String::from_utf8(main.clone()).unwrap();
    both = both.replacen(
        "imports = ['/etc/containerd/conf.d/*.toml']",
        &format!("imports = [\"{}\"]", drop_in.display()),
        1,
    );
    std::fs::write(&cfg, &both).unwrap();
    let handler_table = {
        let main = String::from_utf8(main).unwrap();
        let from = main.find("# Added by `userns-hostnet install`").unwrap();
        let to = from + main[from..].find("\n    [plugins.").unwrap();
        format!("version = 4\n\n{}", &main[from..to])
    };
    std::fs::write(&drop_in, handler_table).unwrap();
    let text = left(&args_for("uninstall", "containerd", &cfg, &["--drop-in"]));
    assert!(
        text.contains("kept the links of handler userns-hostnet"),
        "{text}"
    );
    assert!(handler_link(dir.path()).symlink_metadata().is_ok());
    assert!(handler_in(&dump_with(&c2, &cfg), "userns-hostnet").is_some());
    std::fs::write(&cfg, &original).unwrap();
    std::fs::remove_dir_all(dir.path().join("handlers")).unwrap();

    // An imports glob that covers the drop-in already: no second entry.
    let globbed = String::from_utf8(original.clone()).unwrap().replacen(
        "imports = ['/etc/containerd/conf.d/*.toml']",
        "imports = [\"conf.d/*.toml\"]",
        1,
    );
    std::fs::write(&cfg, &globbed).unwrap();
    install("containerd", &cfg, &drop_in_args);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), globbed);
    assert!(handler_in(&dump_with(&c2, &cfg), "userns-hostnet").is_some());
    uninstall("containerd", &cfg, &["--drop-in"]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), globbed);
    assert!(!drop_in.exists());
}

/// `--root DIR`: every file read or written and every link is under DIR;
/// what is written names the paths as the node sees them. A config copy
/// outside /etc without --root makes no link on this host.
#[test]
fn root_keeps_every_path_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("node");
    let etc = root.join("etc/containerd");
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::write(etc.join("config.toml"), COMMENTED).unwrap();
    std::fs::create_dir_all(root.join("usr/sbin")).unwrap();
    let r = s(&root);
    let out = ok(&["install", "containerd", "--root", r, "--dry-run"]);
    assert!(out.contains("(dry run: nothing written)"), "{out}");
    assert!(!root.join("etc/userns-hostnet").exists());
    assert_eq!(
        std::fs::read_to_string(etc.join("config.toml")).unwrap(),
        COMMENTED
    );
    let out = ok(&["install", "containerd", "--root", r]);
    let node_link = "/etc/userns-hostnet/handlers/userns-hostnet/userns-hostnet-runtime";
    let host_link = root.join(&node_link[1..]);
    assert_eq!(
        std::fs::read_link(&host_link).unwrap(),
        Path::new("/usr/bin/userns-hostnet-runtime"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_link(host_link.with_file_name("runtime")).unwrap(),
        Path::new("/usr/sbin/runc")
    );
    let written = std::fs::read_to_string(etc.join("config.toml")).unwrap();
    assert!(
        written.contains(&format!("BinaryName = \"{node_link}\"")),
        "{written}"
    );
    let out = ok(&["uninstall", "containerd", "--root", r]);
    assert_eq!(
        std::fs::read_to_string(etc.join("config.toml")).unwrap(),
        COMMENTED,
        "{out}"
    );
    assert!(!root.join("etc/userns-hostnet").exists(), "{out}");

    // CRI-O: the default handler's runtime is looked up in the node's PATH
    // under DIR, and named as the node sees it.
    std::fs::create_dir_all(root.join("etc/crio/crio.conf.d")).unwrap();
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    std::fs::copy(in_path("crun"), root.join("usr/bin/crun")).unwrap();
    let packaging = "[crio.runtime]\ndefault_runtime = \"crun\"\n[crio.runtime.runtimes.crun]\nmonitor_path = \"/usr/libexec/crio/conmon\"\n";
    std::fs::write(root.join("etc/crio/crio.conf.d/10-crio.conf"), packaging).unwrap();
    let out = ok(&["install", "crio", "--root", r]);
    assert_eq!(
        std::fs::read_link(host_link.with_file_name("runtime")).unwrap(),
        Path::new("/usr/bin/crun"),
        "{out}"
    );
    let drop_in = root.join("etc/crio/crio.conf.d/99-userns-hostnet.conf");
    let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&drop_in).unwrap()).unwrap();
    let h = &doc["crio"]["runtime"]["runtimes"]["userns-hostnet"];
    assert_eq!(h["runtime_path"].as_str(), Some(node_link));
    assert_eq!(h["monitor_path"].as_str(), Some("/usr/libexec/crio/conmon"));
    ok(&["uninstall", "crio", "--root", r]);
    assert!(!drop_in.exists());
    // The directory install made for the links goes with them.
    assert!(!root.join("etc/userns-hostnet").exists());

    // A wrapper config that does not parse: install says so, dry run too.
    std::fs::create_dir_all(root.join("etc/userns-hostnet")).unwrap();
    std::fs::write(
        root.join("etc/userns-hostnet/config.toml"),
        "[sysfs]\nfallback = \"sometimes\"\n",
    )
    .unwrap();
    let out = ok(&["install", "crio", "--root", r, "--dry-run"]);
    assert!(
        out.lines().any(|l| l.starts_with("warning: ")
            && l.contains("config.toml")
            && l.contains("sysfs.fallback")
            && l.contains(
                "the wrapper refuses every container with a user namespace until it parses"
            )),
        "{out}"
    );
    // The operator's directory, with its file, stays.
    ok(&["install", "crio", "--root", r]);
    ok(&["uninstall", "crio", "--root", r]);
    assert!(root.join("etc/userns-hostnet/config.toml").exists());
    assert!(!root.join("etc/userns-hostnet/handlers").exists());
    std::fs::remove_dir_all(root.join("etc/userns-hostnet")).unwrap();

    // A copy outside /etc, no --root: refused before anything is written.
    let copy = config_file(dir.path(), COMMENTED);
    let out = Command::new(common::install::TOOL)
        .args(["install", "containerd", "--config", s(&copy)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("not this host's daemon config (it is outside /etc)"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), COMMENTED);
}

/// containerd 2.x: the default handler defined only in a file imported by
/// an import is found (imports are read breadth first, each glob sorted,
/// tables merged deep), and a default that no file defines is refused
/// with one line, nothing changed.
#[test]
fn containerd_default_handler_from_nested_imports_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c2 = containerd_23();
    let cfg = dir.path().join("config.toml");
    let main = format!(
        "version = 3\nimports = ['{}/conf.d/*.toml']\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\ndefault_runtime_name = 'site'\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\nruntime_type = 'io.containerd.runc.v2'\n",
        dir.path().display()
    );
    std::fs::write(&cfg, &main).unwrap();
    std::fs::create_dir_all(dir.path().join("conf.d/more")).unwrap();
    std::fs::write(
        dir.path().join("conf.d/10-a.toml"),
        "version = 3\nimports = ['more/site.toml']\n",
    )
    .unwrap();
    let runc = runc_in_path();
    std::fs::write(
        dir.path().join("conf.d/more/site.toml"),
        format!("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.site]\nruntime_type = 'io.containerd.runc.v2'\nsnapshotter = 'native'\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.site.options]\nBinaryName = '{}'\nSystemdCgroup = true\n", runc.display()),
    )
    .unwrap();
    let said = install("containerd", &cfg, &["--containerd", s(&c2)]);
    assert!(said.contains("BinaryName of handler site in "), "{said}");
    assert!(said.contains("more/site.toml"), "{said}");
    let after = dump_with(&c2, &cfg);
    let h = handler_in(&after, "userns-hostnet").expect("containerd 2.3 loads the handler");
    assert_eq!(h["snapshotter"].as_str(), Some("native"));
    assert_eq!(h["options"]["SystemdCgroup"].as_bool(), Some(true));
    let link = dir.path().join("handlers/userns-hostnet/runtime");
    assert_eq!(std::fs::read_link(&link).unwrap(), runc);
    uninstall("containerd", &cfg, &[]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), main);
    // No file defines the default: refused, never derived from runc.
    std::fs::remove_file(dir.path().join("conf.d/more/site.toml")).unwrap();
    let err = refused(&args_for(
        "install",
        "containerd",
        &cfg,
        &["--containerd", s(&c2)],
    ));
    assert!(
        err.contains("default_runtime_name names handler site, which neither this file nor"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), main);
}

/// An interrupt while install writes waits until the change is whole:
/// stopped after its links (a test switch of `test-hooks` builds), sent
/// SIGINT and let go, install writes the config before SIGINT ends it: no
/// temporary file beside the config, no link without its handler; and
/// uninstall puts the file back byte for byte.
#[test]
fn an_interrupt_waits_for_the_change_to_be_whole() {
    use nix::sys::signal::{kill, Signal};
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), COMMENTED);
    let mut child = Command::new(common::install::TOOL)
        .args([
            "install",
            "containerd",
            "--config",
            s(&cfg),
            "--handlers-dir",
        ])
        .arg(dir.path().join("handlers"))
        .env("USERNS_HOSTNET_TEST_PAUSE_INSTALL", "1")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let stat = format!("/proc/{pid}/stat");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(&stat)
        .unwrap_or_default()
        .rsplit(')')
        .next()
        .is_some_and(|rest| rest.trim_start().starts_with('T'))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "install never stopped between its links and its files (built without test-hooks?)"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        handler_link(dir.path()).is_symlink(),
        "the links come first"
    );
    kill(pid, Signal::SIGINT).unwrap();
    kill(pid, Signal::SIGCONT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(Signal::SIGINT as i32), "{status:?}");
    let written = std::fs::read_to_string(&cfg).unwrap();
    assert!(written.contains("userns-hostnet-runtime"), "{written}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    uninstall("containerd", &cfg, &[]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
    assert!(!dir.path().join("handlers").exists());
}

/// A run killed between its write and its rename (SIGKILL, which nothing
/// can hold) leaves `.config.toml.userns-hostnet.PID.tmp` beside the
/// config: the next run that writes the config removes it, and says so;
/// one of a process still running stays.
#[test]
fn a_killed_runs_temporary_file_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), COMMENTED);
    // No process has this PID (above any pid_max).
    let stale = dir.path().join(".config.toml.userns-hostnet.999999999.tmp");
    std::fs::write(&stale, "half").unwrap();
    let live = dir.path().join(format!(
        ".config.toml.userns-hostnet.{}.tmp",
        std::process::id()
    ));
    std::fs::write(&live, "mine").unwrap();
    let out = install("containerd", &cfg, &[]);
    assert!(
        out.contains(&format!(
            "removed {}, left by an interrupted run",
            stale.display()
        )),
        "{out}"
    );
    assert!(!stale.exists());
    assert!(live.exists(), "a running process's file stays");
    // uninstall, too.
    std::fs::write(&stale, "half").unwrap();
    let out = uninstall("containerd", &cfg, &[]);
    assert!(out.contains("left by an interrupted run"), "{out}");
    assert!(!stale.exists());
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), COMMENTED);
    std::fs::remove_file(&live).unwrap();
}

/// An install cut short before its config write (SIGKILL) leaves the
/// handler's links, which no config names: uninstall removes them (and
/// their directories); links a config still names stay.
#[test]
fn links_no_config_names_are_removed_by_uninstall() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_file(dir.path(), COMMENTED);
    install("containerd", &cfg, &[]);
    let installed = std::fs::read_to_string(&cfg).unwrap();
    // As if install had been killed after its links.
    std::fs::write(&cfg, COMMENTED).unwrap();
    let out = uninstall("containerd", &cfg, &[]);
    assert!(
        out.contains("the links of handler userns-hostnet, which no daemon config names"),
        "{out}"
    );
    assert!(!dir.path().join("handlers").exists(), "{out}");
    // Named by the config: uninstall removes handler and links together,
    // and a second uninstall finds nothing.
    std::fs::write(&cfg, &installed).unwrap();
    install("containerd", &cfg, &[]);
    uninstall("containerd", &cfg, &[]);
    let out = uninstall("containerd", &cfg, &[]);
    assert!(out.starts_with("nothing to change"), "{out}");
}
