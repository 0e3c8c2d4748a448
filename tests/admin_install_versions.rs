//! `userns-hostnet install` / `uninstall` on the other containerd
//! versions, checked by their own `containerd config dump`: 1.7.24 and
//! 2.3.4 (unpacked by scripts/cri-tools.sh), their drop-ins and imports,
//! a version-4 default config, and a drop-in beside a plain install.
//! Debian's containerd 1.6: admin_install; CRI-O: admin_install_crio.

mod common;

use common::install::*;
use std::path::PathBuf;
use std::process::Command;

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
