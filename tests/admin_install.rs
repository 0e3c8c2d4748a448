//! `userns-hostnet install` / `uninstall` on real containerd 1.6 configs
//! (checked by the real `containerd config dump`), a commented config with
//! custom handlers and a version-3 sample; the input refused, the JSON
//! answers, the backups, `--root`; and a run interrupted or killed midway.
//! containerd 1.7 and 2.3: admin_install_versions; CRI-O:
//! admin_install_crio.

mod common;

use common::install::*;
use serde_json::json;
use std::path::Path;
use std::process::Command;

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
            "/docs/containerd-v2.toml"
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

    install("containerd", &cfg, &["--wrapper", common::WRAPPER]);
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
    let out = install("containerd", &cfg, &["--wrapper", common::WRAPPER]);
    assert!(out.contains("whose links are not all there"), "{out}");

    uninstall("containerd", &cfg, &[]);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), text);
    assert!(!handlers.exists());
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
    let out = Command::new(common::TOOL)
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
    // SIGINT at its default action in the child, whatever cargo inherited.
    let mut child = common::process::default_signals(&mut Command::new(common::TOOL))
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
