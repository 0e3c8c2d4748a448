//! `userns-hostnet install` / `uninstall` for CRI-O: its drop-in, the
//! runtime path and the operator's handler kept, and CRI-O 1.36.3
//! (unpacked by scripts/cri-tools.sh) starting on the packaging's
//! drop-in after install. containerd: admin_install and
//! admin_install_versions.

mod common;

use common::install::*;
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// CRI-O 1.36.3, unpacked by scripts/cri-tools.sh.
fn crio_bin() -> PathBuf {
    let p = common::tools_target().join("cri-o/crio");
    assert!(p.is_file(), "{p:?} missing: run scripts/cri-tools.sh");
    p
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
        &args_for("install", "crio", &conf, &["--wrapper", common::WRAPPER]),
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
    let out = Command::new(common::TOOL)
        .args(args)
        .arg("--handlers-dir")
        .arg(dir.join("handlers"))
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", text(&out));
    text(&out)
}
