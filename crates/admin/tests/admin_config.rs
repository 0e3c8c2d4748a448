//! `userns-hostnet config`: show, default, check and set, on files in a
//! temporary directory, read with the wrapper's own trust rules and
//! validation.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// The admin tool, which cargo builds for this crate's tests.
const TOOL: &str = env!("CARGO_BIN_EXE_userns-hostnet");
const SHIPPED: &str = include_str!("../../../packaging/config.toml");

fn config(args: &[&str], file_env: Option<&Path>, runtime_env: Option<&str>) -> Output {
    let mut c = Command::new(TOOL);
    c.arg("config").args(args);
    match file_env {
        Some(f) => c.env("USERNS_HOSTNET_CONFIG", f),
        None => c.env_remove("USERNS_HOSTNET_CONFIG"),
    };
    match runtime_env {
        Some(r) => c.env("USERNS_HOSTNET_RUNTIME", r),
        None => c.env_remove("USERNS_HOSTNET_RUNTIME"),
    };
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn default_prints_the_shipped_file() {
    let out = config(&["default"], None, None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), SHIPPED);
}

#[test]
fn check_names_the_setting_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, SHIPPED).unwrap();
    let out = config(&["check", file.to_str().unwrap()], None, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{}: ok\n", file.display()));

    std::fs::write(&file, "# ok\n[capabilities]\nnet = \"dorp\"\n").unwrap();
    let out = config(&["check", file.to_str().unwrap()], None, None);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "userns-hostnet: {}:3: capabilities.net: ",
            file.display()
        )) && err.contains("dorp"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    // Others could change it: the wrapper would refuse it.
    std::fs::write(&file, "").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = config(&["check", file.to_str().unwrap()], None, None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not trusted: writable by group and others"));

    let out = config(
        &["check", dir.path().join("none.toml").to_str().unwrap()],
        None,
        None,
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn show_says_where_each_value_comes_from() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, "[sysfs]\nfallback = \"ro\" # old kernel\n").unwrap();
    let out = config(&["show", "--json"], Some(&file), Some("crun"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["file"], file.to_str().unwrap());
    assert_eq!(v["file_from"]["name"], "USERNS_HOSTNET_CONFIG");
    assert_eq!(v["exists"], true);
    let get = |k: &str| {
        v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == k)
            .unwrap_or_else(|| panic!("{k}: {v:#}"))
            .clone()
    };
    // JSON values, not TOML text.
    assert_eq!(get("sysfs.fallback")["value"], "ro");
    assert_eq!(get("sysfs.fallback")["source"]["kind"], "file");
    assert_eq!(
        get("sysfs.fallback")["source"]["name"],
        file.to_str().unwrap()
    );
    assert_eq!(get("runtime")["value"], "crun");
    assert_eq!(get("runtime")["source"]["name"], "USERNS_HOSTNET_RUNTIME");
    assert_eq!(get("log.level")["value"], "info");
    assert_eq!(get("log.level")["source"]["kind"], "default");
    assert_eq!(get("idmap.allow_host_root")["value"], false);
    assert_eq!(get("idmap.allowed_ranges")["value"], Value::Null);
    let out = config(&["show", "--json"], Some(&file), None);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runtime = v["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "runtime")
        .unwrap()
        .clone();
    assert_eq!(runtime["value"], serde_json::json!(["runc", "crun"]));

    let out = config(&["show"], Some(&file), None);
    let t = text(&out.stdout);
    assert!(
        t.starts_with(&format!(
            "# {} (named by USERNS_HOSTNET_CONFIG)\n",
            file.display()
        )),
        "{t}"
    );
    let line = t.lines().find(|l| l.starts_with("sysfs.fallback")).unwrap();
    assert!(line.ends_with(&format!("# {}", file.display())), "{t}");
    let line = t.lines().find(|l| l.starts_with("runtime")).unwrap();
    assert!(
        line.starts_with("runtime = [\"runc\", \"crun\"]") && line.ends_with("# default"),
        "{t}"
    );

    // A file the wrapper refuses is not shown as if it applied.
    std::fs::write(&file, "[sysfs]\nfallback = \"rw\"\n").unwrap();
    let out = config(&["show"], Some(&file), None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("sysfs.fallback"),
        "{}",
        text(&out.stderr)
    );
    // No file: every value is the default.
    let out = config(&["show"], Some(&dir.path().join("none.toml")), None);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("no such file, the defaults apply"));
}

#[test]
fn set_edits_one_setting_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, SHIPPED).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let f = file.to_str().unwrap();
    let out = config(&["set", "log.level=debug", "--file", f], None, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // One line says what changed.
    assert_eq!(
        text(&out.stdout),
        format!("{f}: log.level = \"debug\" (not set, the default \"info\")\n")
    );
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.starts_with(SHIPPED), "every comment kept");
    // The shipped file documents [log] last: its key goes after that block.
    assert_eq!(&after[SHIPPED.len()..], "[log]\nlevel = \"debug\"\n");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Again, through the environment's file: the value is replaced in place.
    let out = config(&["set", "log.level = \"warn\""], Some(&file), None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("{f}: log.level = \"warn\" (was \"debug\")\n")
    );
    assert_eq!(
        &std::fs::read_to_string(&file).unwrap()[SHIPPED.len()..],
        "[log]\nlevel = \"warn\"\n"
    );
    // As doctor's fixes write it: in its table, where the file documents
    // it, not in a new table at the end.
    let out = config(&["set", "sysfs.fallback=ro", "--file", f], None, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.contains("#   fallback = \"ro\"\n[sysfs]\nfallback = \"ro\"\n\n# [capabilities]\n"),
        "{after}"
    );
    // A top-level setting: after its commented-out example, below the
    // header comment and before every table.
    let out = config(&["set", "runtime=[\"crun\"]", "--file", f], None, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.starts_with("# userns-hostnet configuration\n"),
        "{after}"
    );
    assert!(
        after.contains(
            "#   runtime = \"/usr/local/bin/youki\"\nruntime = [\"crun\"]\n\n# [sysfs]\n"
        ),
        "{after}"
    );
    // Nothing to change: said, nothing written.
    let out = config(&["set", "runtime=[\"crun\"]", "--file", f], None, None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        format!("{f}: runtime = [\"crun\"] already; nothing written\n")
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), after);
    // The wrapper reads what was set.
    let out = config(&["show", "--json"], Some(&file), None);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let values: Vec<(String, Value)> = v["settings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["source"]["kind"] == "file")
        .map(|s| (s["key"].as_str().unwrap().to_owned(), s["value"].clone()))
        .collect();
    assert_eq!(
        values,
        [
            ("runtime".to_owned(), serde_json::json!(["crun"])),
            ("sysfs.fallback".to_owned(), serde_json::json!("ro")),
            ("log.level".to_owned(), serde_json::json!("warn")),
        ]
    );
    let check = config(&["check", f], None, None);
    assert_eq!(check.status.code(), Some(0));
    // No leftover temporary or backup file.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let before = std::fs::read(&file).unwrap();
    // A value the wrapper would refuse: nothing written.
    let out = config(&["set", "capabilities.net=dorp", "--file", f], None, None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("capabilities.net"),
        "{}",
        text(&out.stderr)
    );
    // An unknown setting.
    let out = config(&["set", "log.levle=debug", "--file", f], None, None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("log.levle: unknown setting"),
        "{}",
        text(&out.stderr)
    );
    let out = config(&["set", "log.file=relative.log", "--file", f], None, None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not an absolute path"));
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // A file others can change is not edited.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = config(&["set", "sysfs.fallback=ro", "--file", f], None, None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not trusted"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // A new file.
    let new = dir.path().join("new.toml");
    let out = config(
        &["set", "runtime=[\"crun\"]", "--file", new.to_str().unwrap()],
        None,
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&new).unwrap(),
        "runtime = [\"crun\"]\n"
    );
}
