use super::*;
use userns_hostnet_engine::policy::{AllowedRanges, IdRange};

fn origin() -> &'static Path {
    Path::new("/etc/userns-hostnet/config.toml")
}

fn err(text: &str) -> String {
    parse(text, origin()).unwrap_err().to_string()
}

fn without_source(mut c: NodeConfig) -> NodeConfig {
    c.source = None;
    c
}

#[test]
fn missing_file_means_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let c = load_from(&dir.path().join("config.toml")).unwrap();
    assert_eq!(c, NodeConfig::default());
    assert_eq!(c.source, None);
    assert_eq!(c.runtime, ["runc", "crun"]);
    assert_eq!(c.log.file, Path::new("/var/log/userns-hostnet.log"));
    assert_eq!(c.log.level, Level::Info);
    assert_eq!(c.policy, Policy::default());
}

#[test]
fn empty_file_means_defaults_with_its_source() {
    let c = parse("", origin()).unwrap();
    assert_eq!(c.source.as_deref(), Some(origin()));
    assert_eq!(without_source(c), NodeConfig::default());
}

#[test]
fn every_setting_is_read() {
    let text = r#"
runtime = ["/usr/local/bin/youki", "crun"]
[sysfs]
fallback = "ro"
[capabilities]
net = "refuse"
[sysctl]
net = "drop"
[idmap]
allow_host_root = true
allowed_ranges = { uid = [{ start = 100000, size = 65536 }], gid = [{ start = 200000, size = 10 }, { start = 300000, size = 1 }] }
require_process_user_mapped = false
[cgroup]
own_view = false
allow_writable_v1 = true
[log]
file = "/tmp/u.log"
level = "debug"
"#;
    let c = parse(text, origin()).unwrap();
    assert_eq!(
        c,
        NodeConfig {
            runtime: vec!["/usr/local/bin/youki".into(), "crun".into()],
            policy: Policy {
                sysfs_fallback: SysfsFallback::Ro,
                net_capabilities: NetCapabilities::Refuse,
                net_sysctls: NetSysctls::Drop,
                own_cgroup_view: false,
                allow_writable_cgroup_v1: true,
                idmap: IdmapPolicy {
                    allow_host_root: true,
                    allowed_ranges: AllowedRanges::Explicit {
                        uid: vec![IdRange {
                            start: 100000,
                            size: 65536
                        }],
                        gid: vec![
                            IdRange {
                                start: 200000,
                                size: 10
                            },
                            IdRange {
                                start: 300000,
                                size: 1
                            }
                        ],
                    },
                    require_process_user_mapped: false,
                },
            },
            log: LogSettings {
                file: "/tmp/u.log".into(),
                level: Level::Debug,
            },
            source: Some(origin().to_owned()),
        }
    );
}

#[test]
fn each_enum_value_is_read() {
    let get = |t: &str| parse(t, origin()).unwrap().policy;
    assert_eq!(
        get("[sysfs]\nfallback = \"refuse\"").sysfs_fallback,
        SysfsFallback::Refuse
    );
    assert_eq!(
        get("[capabilities]\nnet = \"drop\"").net_capabilities,
        NetCapabilities::Drop
    );
    assert_eq!(
        get("[capabilities]\nnet = \"keep\"").net_capabilities,
        NetCapabilities::Keep
    );
    assert_eq!(
        get("[sysctl]\nnet = \"refuse\"").net_sysctls,
        NetSysctls::Refuse
    );
    assert_eq!(
        get("[idmap]\nallowed_ranges = { subid_user = \"kubelet\" }")
            .idmap
            .allowed_ranges,
        AllowedRanges::SubidUser("kubelet".into())
    );
    let levels = [
        Level::Error,
        Level::Warn,
        Level::Info,
        Level::Debug,
        Level::Debug,
    ];
    assert_eq!(LOG_LEVELS.len(), levels.len());
    for (word, level) in LOG_LEVELS.iter().zip(levels) {
        let c = parse(&format!("[log]\nlevel = \"{word}\""), origin()).unwrap();
        assert_eq!(c.log.level, level, "{word}");
    }
    let c = parse("[log]\nlevel = \"WARN\"", origin()).unwrap();
    assert_eq!(c.log.level, Level::Warn);
}

#[test]
fn runtime_is_a_string_or_a_list() {
    let get = |t: &str| parse(t, origin()).unwrap().runtime;
    assert_eq!(get("runtime = \"crun\""), ["crun"]);
    assert_eq!(
        get("runtime = \"/usr/local/bin/youki\""),
        ["/usr/local/bin/youki"]
    );
    assert_eq!(get("runtime = [\"crun\"]"), ["crun"]);
    assert_eq!(get("runtime = [\"crun\", \"runc\"]"), ["crun", "runc"]);
    assert_eq!(
        err("runtime = []"),
        "/etc/userns-hostnet/config.toml:1: runtime: lists no runtime"
    );
    assert_eq!(
        err("runtime = \"\""),
        "/etc/userns-hostnet/config.toml:1: runtime: a runtime must be a name or a path, not empty"
    );
    assert_eq!(
        err("\nruntime = 3"),
        "/etc/userns-hostnet/config.toml:2: runtime: invalid type: integer \"3\", expected a runtime name or path, or a list of them"
    );
    assert_eq!(
        err("runtime = [\"runc\", 3]"),
        "/etc/userns-hostnet/config.toml:1: runtime[1]: invalid type: integer \"3\", expected a string"
    );
}

#[test]
fn unknown_value_names_file_line_and_key() {
    let text = "runtime = \"runc\"\n\n# comment\n\n[capabilities]\n\nnet = \"dorp\"\n";
    assert_eq!(
        err(text),
        r#"/etc/userns-hostnet/config.toml:7: capabilities.net: unknown variant "dorp", expected one of "drop", "keep", "refuse""#
    );
    assert_eq!(
        err("[sysfs]\nfallback = \"rro\""),
        r#"/etc/userns-hostnet/config.toml:2: sysfs.fallback: unknown variant "rro", expected "refuse" or "ro""#
    );
    assert_eq!(
        err("[sysctl]\nnet = \"keep\""),
        r#"/etc/userns-hostnet/config.toml:2: sysctl.net: unknown variant "keep", expected "refuse" or "drop""#
    );
    assert_eq!(
        err("[cgroup]\nown_view = \"yes\""),
        r#"/etc/userns-hostnet/config.toml:2: cgroup.own_view: invalid type: string "yes", expected a boolean"#
    );
    assert_eq!(
        err("[log]\n\nlevel = \"verbose\""),
        r#"/etc/userns-hostnet/config.toml:3: log.level: unknown level "verbose", expected one of "error", "warn", "info", "debug", "trace""#
    );
    assert_eq!(
        err("[log]\nfile = \"userns.log\""),
        r#"/etc/userns-hostnet/config.toml:2: log.file: "userns.log" is not an absolute path"#
    );
}

#[test]
fn unknown_keys_are_errors() {
    assert_eq!(
        err("[sysfs]\nfallback = \"refuse\"\nfalback = \"ro\"\n"),
        r#"/etc/userns-hostnet/config.toml:3: sysfs.falback: unknown field "falback", expected "fallback""#
    );
    assert_eq!(
        err("runtimes = \"crun\""),
        r#"/etc/userns-hostnet/config.toml:1: runtimes: unknown field "runtimes", expected one of "runtime", "sysfs", "capabilities", "sysctl", "idmap", "cgroup", "log""#
    );
    assert_eq!(
        err("[idmaps]\nallow_host_root = false"),
        r#"/etc/userns-hostnet/config.toml:1: idmaps: unknown field "idmaps", expected one of "runtime", "sysfs", "capabilities", "sysctl", "idmap", "cgroup", "log""#
    );
    // A setting written before its section lands at the top level.
    assert!(err("net = \"keep\"\n[capabilities]\n")
        .starts_with(r#"/etc/userns-hostnet/config.toml:1: net: unknown field "net""#));
    assert!(err(
        "[idmap]\nallowed_ranges = { uid = [{ start = 1, size = 1, end = 2 }], gid = [] }"
    )
    .starts_with(
        r#"/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.uid[0].end: unknown field "end""#
    ));
    assert!(err("[idmap]\nallowed_ranges = { subid_users = \"k\" }")
        .starts_with(r#"/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.subid_users: unknown field "subid_users""#));
}

#[test]
fn bad_ranges_are_refused_clearly() {
    let ranges = |v: &str| err(&format!("[idmap]\nallowed_ranges = {v}\n"));
    assert_eq!(
        ranges("{ uid = [{ start = 100000, size = 0 }], gid = [{ start = 1, size = 1 }] }"),
        "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.uid[0]: range at 100000 has size 0"
    );
    assert_eq!(
        ranges("{ uid = [{ start = 1, size = 1 }], gid = [{ start = 4294967295, size = 2 }] }"),
        "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.gid[0]: range of 2 IDs at 4294967295 goes past the highest ID, 4294967295"
    );
    assert_eq!(
        ranges("{ uid = [{ start = 9223372036854775807, size = 1 }], gid = [{ start = 1, size = 1 }] }"),
        "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.uid[0]: range of 1 IDs at 9223372036854775807 goes past the highest ID, 4294967295"
    );
    assert!(ranges("{ uid = [{ start = -1, size = 1 }], gid = [] }").starts_with(
        "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.uid[0].start: invalid value: integer \"-1\""
    ));
    assert_eq!(
        ranges("{ uid = [{ start = 1 }], gid = [] }"),
        r#"/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges.uid[0]: missing field "size""#
    );
    assert_eq!(
        ranges("{ uid = [{ start = 1, size = 1 }] }"),
        "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges: give both the uid and the gid lists"
    );
    assert_eq!(
        ranges("{ uid = [], gid = [] }"),
        "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges: an empty uid or gid list would refuse every container; remove allowed_ranges to allow any range"
    );
    assert_eq!(
        ranges("{ subid_user = \"kubelet\", uid = [{ start = 1, size = 1 }], gid = [{ start = 1, size = 1 }] }"),
        "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges: give either subid_user or the uid and gid lists, not both"
    );
    assert_eq!(
        ranges("{}"),
        "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges: empty: give subid_user, or the uid and gid lists, or remove allowed_ranges to allow any range"
    );
    assert_eq!(
        ranges("{ subid_user = \"\" }"),
        "/etc/userns-hostnet/config.toml:2: idmap.allowed_ranges: subid_user is empty: name the user whose /etc/subuid and /etc/subgid entries apply"
    );
    // The highest range that fits is accepted.
    let c = parse(
        "[idmap]\nallowed_ranges = { uid = [{ start = 0, size = 4294967296 }], gid = [{ start = 4294967295, size = 1 }] }",
        origin(),
    )
    .unwrap();
    assert_eq!(
        c.policy.idmap.allowed_ranges,
        AllowedRanges::Explicit {
            uid: vec![IdRange {
                start: 0,
                size: 1 << 32
            }],
            gid: vec![IdRange {
                start: u32::MAX.into(),
                size: 1
            }],
        }
    );
}

#[test]
fn syntax_errors_name_file_and_line_on_one_line() {
    let e = err("[sysfs]\nfallback = \n");
    assert!(e.starts_with("/etc/userns-hostnet/config.toml:2: "), "{e}");
    assert!(!e.contains('\n'), "{e}");
    let e = err("[log]\nlevel = \"info\"\n[log]\n");
    assert!(e.starts_with("/etc/userns-hostnet/config.toml:3: "), "{e}");
    assert!(e.contains("duplicate key"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn read_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        load_from(dir.path()).unwrap_err().to_string(),
        format!("{}: not a regular file", dir.path().display())
    );
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, b"runtime = \"\xff\"\n").unwrap();
    let e = load_from(&bad).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: cannot read: ", bad.display())),
        "{e}"
    );
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "\n[sysctl]\nnet = \"allow\"\n").unwrap();
    assert_eq!(
        load_from(&file).unwrap_err().to_string(),
        format!(
            r#"{}:3: sysctl.net: unknown variant "allow", expected "refuse" or "drop""#,
            file.display()
        )
    );
    std::fs::write(&file, "[sysctl]\nnet = \"drop\"\n").unwrap();
    let c = load_from(&file).unwrap();
    assert_eq!(c.source.as_deref(), Some(file.as_path()));
    assert_eq!(c.policy.net_sysctls, NetSysctls::Drop);
}

#[test]
fn a_fifo_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    assert!(matches!(
        load_from(&fifo),
        Err(ConfigError::NotRegular { .. })
    ));
}

#[test]
fn env_names_another_file() {
    assert_eq!(path_from(None), Path::new(DEFAULT_PATH));
    assert_eq!(path_from(Some("".into())), Path::new(DEFAULT_PATH));
    assert_eq!(
        path_from(Some("/srv/u.toml".into())),
        Path::new("/srv/u.toml")
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("other.toml");
    std::fs::write(&file, "runtime = \"crun\"\n").unwrap();
    // The only test that touches this variable.
    std::env::set_var(CONFIG_ENV, &file);
    let from_env = path_from_env();
    let loaded = load();
    std::env::remove_var(CONFIG_ENV);
    assert_eq!(from_env, file);
    let c = loaded.unwrap();
    assert_eq!(c.runtime, ["crun"]);
    assert_eq!(c.source.as_deref(), Some(file.as_path()));
}

#[test]
fn shipped_sample_equals_the_defaults() {
    let c = parse(SHIPPED, Path::new("packaging/config.toml")).unwrap();
    assert_eq!(without_source(c), NodeConfig::default());
}

/// A commented-out setting: `# key = value` (defaults) or, indented
/// further, `#   key = value` (examples of other values).
fn setting(line: &str) -> Option<(&str, bool)> {
    let rest = line.strip_prefix("# ")?;
    let body = rest.trim_start();
    let key_len = body
        .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
        .unwrap_or(body.len());
    if key_len == 0 || !body[key_len..].starts_with(" = ") {
        return None;
    }
    Some((body, rest.len() == body.len()))
}

/// The `# [section]` header in force at each line.
fn sections(text: &str) -> Vec<Option<&str>> {
    let mut current = None;
    text.lines()
        .map(|l| {
            if let Some(h) = l.strip_prefix("# [") {
                if h.ends_with(']') {
                    current = Some(&l[2..]);
                }
            }
            current
        })
        .collect()
}

#[test]
fn every_sample_setting_parses_when_uncommented() {
    let secs = sections(SHIPPED);
    let mut defaults = 0;
    let mut examples = 0;
    for (i, line) in SHIPPED.lines().enumerate() {
        let Some((setting, is_default)) = setting(line) else {
            continue;
        };
        let text = match secs[i] {
            Some(header) => format!("{header}\n{setting}\n"),
            None => format!("{setting}\n"),
        };
        let c = parse(&text, origin()).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        if is_default {
            defaults += 1;
            assert_eq!(without_source(c), NodeConfig::default(), "line {}", i + 1);
        } else {
            examples += 1;
            assert_ne!(without_source(c), NodeConfig::default(), "line {}", i + 1);
        }
    }
    // runtime, fallback, net (x2), allow_host_root,
    // require_process_user_mapped, own_view, file, level.
    assert_eq!(defaults, 9);
    assert!(examples >= 6, "{examples}");
}

#[test]
fn sample_uncommented_as_a_whole_equals_the_defaults() {
    let secs = sections(SHIPPED);
    let text: String = SHIPPED
        .lines()
        .enumerate()
        .map(|(i, line)| match setting(line) {
            Some((s, true)) => format!("{s}\n"),
            _ if secs[i].is_some_and(|h| line == format!("# {h}")) => {
                format!("{}\n", &line[2..])
            }
            _ => format!("{line}\n"),
        })
        .collect();
    assert!(text.contains("\n[idmap]\n") && text.contains("\nnet = \"drop\"\n"));
    let c = parse(&text, origin()).unwrap();
    assert_eq!(without_source(c), NodeConfig::default());
}

#[test]
fn error_line_of_offsets() {
    assert_eq!(line_of("", 0), 1);
    assert_eq!(line_of("a\nb\nc", 2), 2);
    assert_eq!(line_of("a\nb\nc", 99), 3);
}

#[test]
fn trust_of_the_file_from_its_owner_and_mode() {
    let f = Path::new("/etc/userns-hostnet/config.toml");
    assert_eq!(check_file(0, 0o100644, 0), Ok(()));
    assert_eq!(check_file(0, 0o100600, 0), Ok(()));
    assert_eq!(check_file(0, 0o100755, 0), Ok(()));
    // Not root's: unless the process runs as that user.
    assert_eq!(
        check_file(1000, 0o100644, 0),
        Err(Distrust::FileOwner { uid: 1000 })
    );
    assert_eq!(check_file(1000, 0o100644, 1000), Ok(()));
    let e = check_file(0, 0o100664, 0).unwrap_err();
    assert_eq!(e, Distrust::FileWritable { mode: 0o664 });
    assert_eq!(e.to_string(), "writable by group (mode 0664)");
    assert_eq!(
        check_file(0, 0o100646, 0).unwrap_err().to_string(),
        "writable by others (mode 0646)"
    );
    assert_eq!(
        check_file(0, 0o104666, 0).unwrap_err().to_string(),
        "writable by group and others (mode 4666)"
    );
    assert_eq!(
        e.fix(f),
        "chown root:root /etc/userns-hostnet/config.toml; chmod go-w /etc/userns-hostnet/config.toml"
    );
    let e = ConfigError::Untrusted {
        path: f.to_owned(),
        reason: Distrust::FileOwner { uid: 1000 },
    };
    assert_eq!(
        e.to_string(),
        "/etc/userns-hostnet/config.toml: not trusted: owned by uid 1000, not root; fix: chown root:root /etc/userns-hostnet/config.toml; chmod go-w /etc/userns-hostnet/config.toml"
    );
}

#[test]
fn trust_of_a_directory_on_the_way() {
    let d = Path::new("/etc/userns-hostnet");
    assert_eq!(check_dir(d, 0, 0o40755, 0), Ok(()));
    assert_eq!(check_dir(d, 0, 0o40700, 0), Ok(()));
    // Root's sticky /tmp: others cannot replace a file they do not own.
    assert_eq!(check_dir(Path::new("/tmp"), 0, 0o41777, 0), Ok(()));
    assert_eq!(check_dir(d, 0, 0o41770, 0), Ok(()));
    let e = check_dir(d, 0, 0o40777, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "its directory /etc/userns-hostnet is writable by group and others (mode 0777), who could replace the file"
    );
    assert_eq!(
        e.fix(Path::new("/etc/userns-hostnet/config.toml")),
        "chown root:root /etc/userns-hostnet; chmod go-w /etc/userns-hostnet"
    );
    assert!(check_dir(d, 0, 0o40775, 0).is_err());
    // Sticky but someone else's: its owner can replace anything in it.
    let e = check_dir(d, 1000, 0o41777, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "its directory /etc/userns-hostnet is owned by uid 1000, not root"
    );
    assert_eq!(check_dir(d, 1000, 0o40755, 1000), Ok(()));
}

#[test]
fn a_file_others_can_change_is_not_loaded() {
    use std::os::unix::fs::PermissionsExt;
    let set = |p: &Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("etc");
    std::fs::create_dir(&sub).unwrap();
    let file = sub.join("config.toml");
    std::fs::write(&file, "runtime = \"crun\"\n").unwrap();
    set(&file, 0o644);
    set(&sub, 0o755);
    assert_eq!(load_from(&file).unwrap().runtime, ["crun"]);

    set(&file, 0o666);
    let e = load_from(&file).unwrap_err();
    assert!(
        matches!(
            &e,
            ConfigError::Untrusted {
                reason: Distrust::FileWritable { mode: 0o666 },
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "{f}: not trusted: writable by group and others (mode 0666); fix: chown root:root {f}; chmod go-w {f}",
            f = file.display()
        )
    );
    set(&file, 0o644);

    // A directory others can write: they could swap the file.
    set(&sub, 0o777);
    let e = load_from(&file).unwrap_err().to_string();
    let real = std::fs::canonicalize(&sub).unwrap();
    assert!(
        e.contains(&format!(
            "not trusted: its directory {} is writable by group and others (mode 0777)",
            real.display()
        )),
        "{e}"
    );
    // Sticky, as /tmp: they cannot.
    set(&sub, 0o1777);
    assert!(load_from(&file).is_ok());
    set(&sub, 0o755);

    // Through a link: the directories of the real file count.
    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    assert!(load_from(&link).is_ok());
    set(&sub, 0o757);
    assert!(matches!(
        load_from(&link),
        Err(ConfigError::Untrusted {
            reason: Distrust::DirWritable { .. },
            ..
        })
    ));
    set(&sub, 0o755);
    // And so do those of the link: others could point it elsewhere.
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    let link = open.join("config.toml");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    assert!(load_from(&link).is_ok());
    set(&open, 0o777);
    assert_eq!(
        load_from(&link).unwrap_err().to_string(),
        format!(
            "{l}: not trusted: its directory {d} is writable by group and others (mode 0777), who could replace the file; fix: chown root:root {d}; chmod go-w {d}",
            l = link.display(),
            d = open.display()
        )
    );
    set(&open, 0o755);
}
