//! Hostile and malformed input, as a table: each case sets up a bundle (or
//! an argv), runs the wrapper in front of a stub runtime, and checks the
//! exit status, the message, and that the bundle is unchanged (or, for the
//! cases that must convert, that config.json is the converted spec).
//!
//! The stub stands for the real runtime: it answers `features` like runc
//! (so the rro probe succeeds) and otherwise prints a marker and exits 42,
//! so a pass-through is told from a refusal without running containers.

use serde_json::{json, Value};
use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const WRAPPER: &str = env!("CARGO_BIN_EXE_userns-hostnet-runtime");
const MARKER: &str = "stub-runtime-ran";
const PASS_STATUS: i32 = 42;

/// A private directory with the stub runtime and a config file whose
/// decision log stays here.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::Builder::new()
            .prefix("uhn-hostile-")
            .tempdir()
            .unwrap();
        let stub = dir.path().join("stub-runtime");
        fs::write(
            &stub,
            format!(
                "#!/bin/sh\nif [ \"$1\" = features ]; then echo '{{\"ociVersionMin\":\"1.0.0\",\"mountOptions\":[\"bind\",\"rbind\",\"ro\",\"rro\"]}}'; exit 0; fi\necho {MARKER}\nexit {PASS_STATUS}\n"
            ),
        )
        .unwrap();
        fs::set_permissions(&stub, fs::Permissions::from_mode(0o755)).unwrap();
        let log = dir.path().join("decisions.log");
        fs::write(
            dir.path().join("config.toml"),
            format!("[log]\nfile = {:?}\n", log.display().to_string()),
        )
        .unwrap();
        Env { dir }
    }

    fn command(&self) -> Command {
        let mut c = Command::new(WRAPPER);
        c.env(
            "USERNS_HOSTNET_RUNTIME",
            self.dir.path().join("stub-runtime"),
        )
        .env("USERNS_HOSTNET_CONFIG", self.dir.path().join("config.toml"))
        .env_remove("USERNS_HOSTNET_DEBUG")
        .stdin(Stdio::null());
        c
    }

    fn bundle(&self, name: &str) -> PathBuf {
        let b = self.dir.path().join(name);
        // The rootfs the specs name (`rootfs`): a converted container's
        // destinations are resolved in it.
        fs::create_dir_all(b.join("rootfs")).unwrap();
        b
    }
}

/// A user namespace on the host network, as `runc spec` plus the edits
/// TESTING.md describes: it needs the conversion.
fn base() -> Value {
    let text = include_str!("../crates/engine/fixtures/runc-spec.json");
    let mut spec: Value = serde_json::from_str(text).unwrap();
    let ns = spec["linux"]["namespaces"].as_array_mut().unwrap();
    ns.retain(|n| n["type"] != "network");
    ns.push(json!({"type": "user"}));
    let map = json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
    spec["linux"]["uidMappings"] = map.clone();
    spec["linux"]["gidMappings"] = map;
    spec
}

fn sys_index(spec: &Value) -> usize {
    spec["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .position(|m| m["destination"] == "/sys")
        .unwrap()
}

#[derive(Debug, Clone, Copy)]
enum Want {
    /// The real runtime ran (its status and marker), nothing on stderr.
    PassThrough,
    /// Exit 1, one line `userns-hostnet-runtime: refused: <rule>: <field>: ...`.
    Refused(&'static str, &'static str),
    /// Exit 1, one line `userns-hostnet-runtime: bundle: ...` containing this.
    Bundle(&'static str),
    /// The runtime ran on a converted config.json.
    Converted,
}

type Setup = Box<dyn Fn(&Path)>;

struct Case {
    name: &'static str,
    setup: Setup,
    want: Want,
}

fn spec_case(name: &'static str, want: Want, edit: impl Fn(&mut Value) + 'static) -> Case {
    Case {
        name,
        want,
        setup: Box::new(move |dir| {
            let mut s = base();
            edit(&mut s);
            fs::write(
                dir.join("config.json"),
                serde_json::to_vec_pretty(&s).unwrap(),
            )
            .unwrap();
        }),
    }
}

fn bytes_case(name: &'static str, want: Want, bytes: impl Into<Vec<u8>>) -> Case {
    let bytes = bytes.into();
    Case {
        name,
        want,
        setup: Box::new(move |dir| fs::write(dir.join("config.json"), &bytes).unwrap()),
    }
}

fn text_with(edit: impl Fn(String) -> String) -> Vec<u8> {
    edit(serde_json::to_string_pretty(&base()).unwrap()).into_bytes()
}

fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

/// A pid that is not running: a child that has been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn cases() -> Vec<Case> {
    use Want::*;
    let r = Refused;
    vec![
        // Not one strict JSON object: the runtimes read some of these (runc
        // the first value of "{} {}", invalid UTF-8 as U+FFFD): refused.
        bytes_case("invalid JSON", r("spec", "ociVersion"), "{\"ociVersion\": "),
        bytes_case("empty file", r("spec", "(top level)"), ""),
        bytes_case("trailing garbage", r("spec", "(top level)"), "{} {}"),
        bytes_case(
            "spec then garbage",
            r("spec", "(top level)"),
            [text_with(|t| t), b" garbage {".to_vec()].concat(),
        ),
        bytes_case(
            "not UTF-8",
            r("spec", "a"),
            b"{\"a\": \"\xff\xfe\"}".to_vec(),
        ),
        bytes_case(
            "lone surrogate",
            r("spec", "hostname"),
            text_with(|t| t.replacen('{', "{\"hostname\": \"\\ud800\",", 1)),
        ),
        bytes_case(
            "comment",
            r("spec", "(top level)"),
            text_with(|t| t.replacen('{', "{ /* c */", 1)),
        ),
        bytes_case("JSON array", r("spec", "(top level)"), "[]"),
        bytes_case("JSON string", r("spec", "(top level)"), "\"config\""),
        bytes_case("JSON null", r("spec", "(top level)"), "null"),
        bytes_case("JSON number", r("spec", "(top level)"), "1e400"),
        bytes_case(
            "100,000-level nesting",
            r("spec", "[0][0]"),
            nested(100_000),
        ),
        bytes_case(
            "130-level nesting in a field",
            r("spec", "deep[0]"),
            text_with(|t| t.replacen('{', &format!("{{\"deep\": {},", nested(130)), 1)),
        ),
        // Read one way by runc, another by crun: refused.
        bytes_case(
            "duplicate keys",
            r("spec", "hostname"),
            text_with(|t| t.replacen('{', "{\"hostname\": \"first\",", 1)),
        ),
        bytes_case(
            "a second linux object",
            r("spec", "linux"),
            text_with(|t| {
                let end = t.rfind('}').unwrap();
                format!("{}, \"linux\": {{}}\n}}", &t[..end].trim_end())
            }),
        ),
        bytes_case(
            "duplicate key in a namespace entry",
            r("spec", "linux.namespaces"),
            text_with(|t| {
                t.replacen(
                    "\"type\": \"user\"",
                    "\"type\": \"user\", \"type\": \"network\"",
                    1,
                )
            }),
        ),
        bytes_case(
            "Linux",
            r("spec", "Linux"),
            text_with(|t| t.replacen("\"linux\":", "\"Linux\":", 1)),
        ),
        bytes_case(
            "UIDMappings",
            r("spec", "linux.UIDMappings"),
            text_with(|t| t.replacen("\"uidMappings\":", "\"UIDMappings\":", 1)),
        ),
        bytes_case(
            "Kelvin sign in a key",
            r("spec", "hoo\u{212A}s"),
            text_with(|t| t.replacen('{', "{\"hoo\u{212A}s\": {},", 1)),
        ),
        bytes_case(
            "NUL in a key",
            r("spec", "linux\\0"),
            text_with(|t| t.replacen('{', "{\"linux\\u0000\": {},", 1)),
        ),
        // Wrong shapes of the fields the engine reads: refused, naming the field.
        spec_case("mounts an object", r("spec", "mounts"), |s| {
            s["mounts"] = json!({"a": 1})
        }),
        spec_case("mounts a string", r("spec", "mounts"), |s| {
            s["mounts"] = json!("/sys")
        }),
        spec_case("mount a number", r("spec", "mounts[0]"), |s| {
            s["mounts"][0] = json!(7)
        }),
        spec_case(
            "destination a number",
            r("spec", "mounts[0].destination"),
            |s| s["mounts"][0]["destination"] = json!(7),
        ),
        spec_case(
            "destination missing",
            r("spec", "mounts[1].destination"),
            |s| {
                s["mounts"][1]
                    .as_object_mut()
                    .unwrap()
                    .remove("destination");
            },
        ),
        spec_case("options with a number", r("spec", "options[1]"), |s| {
            let i = sys_index(s);
            s["mounts"][i]["options"] = json!(["nosuid", 4, "ro"])
        }),
        spec_case("options a string", r("spec", "options"), |s| {
            let i = sys_index(s);
            s["mounts"][i]["options"] = json!("ro,nosuid")
        }),
        spec_case("type a number", r("spec", ".type"), |s| {
            let i = sys_index(s);
            s["mounts"][i]["type"] = json!(1)
        }),
        spec_case("source an array", r("spec", ".source"), |s| {
            let i = sys_index(s);
            s["mounts"][i]["type"] = json!("bind");
            s["mounts"][i]["source"] = json!(["/sys"])
        }),
        spec_case(
            "uidMappings a string",
            r("spec", "linux.uidMappings"),
            |s| s["linux"]["uidMappings"] = json!("0 100000 65536"),
        ),
        spec_case("uidMappings with strings", r("idmap", "hostID"), |s| {
            s["linux"]["uidMappings"][0]["hostID"] = json!("100000")
        }),
        spec_case("negative hostID", r("idmap", "hostID"), |s| {
            s["linux"]["uidMappings"][0]["hostID"] = json!(-1)
        }),
        spec_case("fractional size", r("idmap", "size"), |s| {
            s["linux"]["gidMappings"][0]["size"] = json!(1.5)
        }),
        bytes_case(
            "2^64 size",
            r("idmap", "size"),
            text_with(|t| t.replacen("\"size\": 65536", "\"size\": 18446744073709551616", 1)),
        ),
        spec_case("2^32 containerID", r("idmap", "containerID"), |s| {
            s["linux"]["uidMappings"][0]["containerID"] = json!(1u64 << 32)
        }),
        spec_case("size 0", r("idmap", "linux.uidMappings[0]"), |s| {
            s["linux"]["uidMappings"][0]["size"] = json!(0)
        }),
        spec_case(
            "mapping entry a string",
            r("spec", "linux.gidMappings[0]"),
            |s| s["linux"]["gidMappings"][0] = json!("0:100000:65536"),
        ),
        spec_case(
            "mount uidMappings an object",
            r("spec", "mounts[0].uidMappings"),
            |s| s["mounts"][0]["uidMappings"] = json!({"size": 1}),
        ),
        spec_case(
            "no mappings for a new user namespace",
            r("idmap", "linux.uidMappings"),
            |s| {
                s["linux"].as_object_mut().unwrap().remove("uidMappings");
            },
        ),
        spec_case(
            "host root mapped",
            r("idmap", "linux.uidMappings[0]"),
            |s| s["linux"]["uidMappings"][0]["hostID"] = json!(0),
        ),
        spec_case("namespaces an object", r("spec", "linux.namespaces"), |s| {
            s["linux"]["namespaces"] = json!({"type": "user"})
        }),
        spec_case(
            "unknown namespace type",
            r("spec", "linux.namespaces[0]"),
            |s| s["linux"]["namespaces"][0]["type"] = json!("bogus"),
        ),
        spec_case(
            "namespace type a number",
            r("spec", "linux.namespaces[0]"),
            |s| s["linux"]["namespaces"][0]["type"] = json!(3),
        ),
        spec_case(
            "capabilities a list",
            r("spec", "process.capabilities"),
            |s| s["process"]["capabilities"] = json!(["CAP_NET_RAW"]),
        ),
        spec_case(
            "bounding a string",
            r("spec", "process.capabilities.bounding"),
            |s| s["process"]["capabilities"]["bounding"] = json!("CAP_NET_RAW"),
        ),
        spec_case(
            "bounding with a number",
            r("spec", "process.capabilities.bounding[1]"),
            |s| s["process"]["capabilities"]["bounding"] = json!(["CAP_KILL", 12]),
        ),
        spec_case("sysctl an array", r("spec", "linux.sysctl"), |s| {
            s["linux"]["sysctl"] = json!(["net.ipv4.ip_forward=1"])
        }),
        spec_case("net sysctl", r("sysctl", "linux.sysctl"), |s| {
            s["linux"]["sysctl"] = json!({"net.core.somaxconn": "1024"})
        }),
        spec_case("process.user a string", r("spec", "process.user"), |s| {
            s["process"]["user"] = json!("root")
        }),
        spec_case("uid a string", r("spec", "process.user.uid"), |s| {
            s["process"]["user"]["uid"] = json!("0")
        }),
        spec_case(
            "additionalGids a number",
            r("spec", "process.user.additionalGids"),
            |s| s["process"]["user"]["additionalGids"] = json!(5),
        ),
        spec_case("uid not mapped", r("idmap", "process.user.uid"), |s| {
            s["process"]["user"]["uid"] = json!(70000)
        }),
        spec_case(
            "user namespace of a dead pid",
            r("idmap", "linux.uidMappings"),
            |s| {
                let pid = dead_pid();
                let ns = s["linux"]["namespaces"].as_array_mut().unwrap();
                ns.retain(|n| n["type"] != "user");
                ns.push(json!({"type": "user", "path": format!("/proc/{pid}/ns/user")}));
            },
        ),
        // Odd but valid: converted.
        spec_case("100-level nesting in a field", Converted, |s| {
            s["annotations"] = json!({"deep": serde_json::from_str::<Value>(&nested(100)).unwrap()})
        }),
        spec_case("unknown fields everywhere", Converted, |s| {
            s["x-vendor"] = json!({"a": [1, 2.5, null]});
            s["process"]["x-extra"] = json!(true);
            s["mounts"][0]["x-extra"] = json!("y");
            s["process"]["capabilities"]["bounding"] = json!(["cap_kill1", "CAP_NET_RAW"]);
        }),
        spec_case(
            "a capability name no runtime reads, not a plain name",
            r("capabilities", "process.capabilities.bounding"),
            |s| s["process"]["capabilities"]["bounding"] = json!(["CAP_KILL", "CAP_NETFROB"]),
        ),
        spec_case("linux a string", PassThrough, |s| {
            s["linux"] = json!("linux")
        }),
        // Files that are not what they seem.
        Case {
            name: "config.json a symlink",
            want: Bundle("symbolic link"),
            setup: Box::new(|dir| {
                fs::write(dir.join("real.json"), serde_json::to_vec(&base()).unwrap()).unwrap();
                symlink("real.json", dir.join("config.json")).unwrap();
            }),
        },
        Case {
            name: "config.json a dangling symlink",
            want: Bundle("symbolic link"),
            setup: Box::new(|dir| symlink("/nonexistent", dir.join("config.json")).unwrap()),
        },
        Case {
            name: "config.json a FIFO",
            want: Bundle("not a regular file"),
            setup: Box::new(|dir| {
                nix::unistd::mkfifo(&dir.join("config.json"), nix::sys::stat::Mode::S_IRWXU)
                    .unwrap()
            }),
        },
        Case {
            name: "config.json a directory",
            want: Bundle("not a regular file"),
            setup: Box::new(|dir| fs::create_dir(dir.join("config.json")).unwrap()),
        },
        Case {
            name: "config.json missing",
            want: PassThrough,
            setup: Box::new(|_| {}),
        },
    ]
}

/// Names, bytes and inodes of everything in the bundle directory.
fn snapshot(dir: &Path) -> Vec<(OsString, Vec<u8>, u64, u32)> {
    let mut out: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = fs::symlink_metadata(e.path()).unwrap();
            let bytes = if m.is_file() {
                fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            (e.file_name(), bytes, m.ino(), m.mode())
        })
        .collect();
    out.sort();
    out
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(env: &Env, args: &[OsString], cwd: Option<&Path>) -> Run {
    let mut c = env.command();
    c.args(args);
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    let out = c.output().unwrap();
    // A converted create leaves the wrapper's record of the container,
    // which, the stub's containers being unknowable, only its delete
    // removes: delete what the last argument names.
    if args.first().is_some_and(|a| a == "create") {
        if let Some(id) = args.last() {
            let mut d = env.command();
            d.arg("delete")
                .arg(id)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Some(dir) = cwd {
                d.current_dir(dir);
            }
            let _ = d.status();
        }
    }
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Checks one outcome; returns what is wrong.
fn check(
    want: Want,
    out: &Run,
    dir: &Path,
    before: &[(OsString, Vec<u8>, u64, u32)],
) -> Vec<String> {
    let mut bad = Vec::new();
    let lines: Vec<&str> = out.stderr.lines().collect();
    match want {
        Want::PassThrough | Want::Converted => {
            if out.code != Some(PASS_STATUS) || out.stdout.trim() != MARKER {
                bad.push("the real runtime did not run".into());
            }
            if !out.stderr.is_empty() {
                bad.push("stderr is not empty".into());
            }
        }
        Want::Refused(..) | Want::Bundle(_) => {
            if out.code != Some(1) {
                bad.push(format!("exit status {:?}, not 1", out.code));
            }
            if !out.stdout.is_empty() {
                bad.push("stdout is not empty".into());
            }
            if lines.len() != 1 {
                bad.push(format!("{} lines on stderr, not 1", lines.len()));
            }
        }
    }
    let line = lines.first().copied().unwrap_or_default();
    match want {
        Want::Refused(rule, field) => {
            let head = format!("userns-hostnet-runtime: refused: {rule}: ");
            if !line.starts_with(&head)
                || !line[head.len()..]
                    .split(": ")
                    .next()
                    .unwrap_or_default()
                    .contains(field)
            {
                bad.push(format!("stderr is not `{head}<…{field}…>: …`"));
            }
        }
        Want::Bundle(what)
            if !line.starts_with("userns-hostnet-runtime: bundle: ") || !line.contains(what) =>
        {
            bad.push(format!(
                "stderr is not `userns-hostnet-runtime: bundle: …{what}…`"
            ));
        }
        _ => {}
    }
    let after = snapshot(dir);
    match want {
        Want::Converted => {
            let spec: Value = fs::read(dir.join("config.json"))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default();
            let i = spec["mounts"]
                .as_array()
                .and_then(|m| m.iter().position(|m| m["destination"] == "/sys"));
            if i.map(|i| &spec["mounts"][i]["options"])
                != Some(&json!([
                    "rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"
                ]))
            {
                bad.push("config.json is not converted".into());
            }
            if after.len() != before.len() {
                bad.push("files were added or removed".into());
            }
        }
        _ => {
            if after != before {
                bad.push("the bundle changed".into());
            }
        }
    }
    bad
}

#[test]
fn hostile_table() {
    let env = Env::new();
    let table = cases();
    let mut failures = Vec::new();
    for (n, case) in table.iter().enumerate() {
        let dir = env.bundle(&format!("case-{n}"));
        (case.setup)(&dir);
        let before = snapshot(&dir);
        let args: Vec<OsString> = vec![
            "create".into(),
            "--bundle".into(),
            dir.clone().into(),
            format!("id{n}").into(),
        ];
        let out = run(&env, &args, None);
        for b in check(case.want, &out, &dir, &before) {
            failures.push(format!(
                "{}: {b}\n  status {:?}\n  stdout {:?}\n  stderr {:?}",
                case.name, out.code, out.stdout, out.stderr
            ));
        }
    }
    eprintln!("{} hostile cases in the table", table.len());
    assert!(table.len() >= 50);
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The cases that are about argv and the bundle's path rather than its
/// config.json.
#[test]
fn hostile_argv_and_paths() {
    let env = Env::new();
    let refused_spec = |dir: &Path| {
        let mut s = base();
        s["linux"]["sysctl"] = json!({"net.ipv4.ip_forward": "1"});
        fs::write(
            dir.join("config.json"),
            serde_json::to_vec_pretty(&s).unwrap(),
        )
        .unwrap();
    };
    let mut failures = Vec::new();
    let mut check_case = |name: &str,
                          want: Want,
                          args: Vec<OsString>,
                          cwd: Option<&Path>,
                          dir: &Path,
                          before: Vec<_>| {
        let out = run(&env, &args, cwd);
        for b in check(want, &out, dir, &before) {
            failures.push(format!(
                "{name}: {b}\n  status {:?}\n  stderr {:?}",
                out.code, out.stderr
            ));
        }
    };

    // `--bundle` as the last word: no runtime would create this container
    // (runc takes the id for the bundle and has no id left; crun takes
    // `--bundle` for a second argument). The stub is neither runc nor crun,
    // so the strict reading refuses it, naming where runc's reading fails;
    // the working directory's bundle is not read (it would be refused for
    // its sysctl).
    let cwd = env.bundle("cwd");
    refused_spec(&cwd);
    let before = snapshot(&cwd);
    check_case(
        "--bundle as the last word",
        Want::Refused("argv", "create"),
        vec!["create".into(), "id".into(), "--bundle".into()],
        Some(&cwd),
        &cwd,
        before,
    );
    let before = snapshot(&cwd);
    check_case(
        "-b as the last word",
        Want::Refused("argv", "run"),
        vec!["run".into(), "id".into(), "-b".into()],
        Some(&cwd),
        &cwd,
        before,
    );

    // A bundle path with spaces, a newline and a non-UTF-8 byte.
    let odd = env
        .dir
        .path()
        .join(OsString::from_vec(b"a b\nc\xff d".to_vec()));
    fs::create_dir(&odd).unwrap();
    fs::create_dir(odd.join("rootfs")).unwrap();
    fs::write(
        odd.join("config.json"),
        serde_json::to_vec_pretty(&base()).unwrap(),
    )
    .unwrap();
    let before = snapshot(&odd);
    check_case(
        "bundle path with spaces and newlines",
        Want::Converted,
        vec![
            "create".into(),
            "--bundle".into(),
            odd.clone().into(),
            "id".into(),
        ],
        None,
        &odd,
        before,
    );
    // The same directory refused: the message names the path as is.
    refused_spec(&odd);
    let before = snapshot(&odd);
    check_case(
        "refusal in a path with a newline",
        Want::Refused("sysctl", "linux.sysctl"),
        vec![
            "create".into(),
            {
                let mut a = OsString::from("--bundle=");
                a.push(&odd);
                a
            },
            "id".into(),
        ],
        None,
        &odd,
        before,
    );

    // A bundle directory that does not exist: config.json is missing.
    let gone = env.dir.path().join("no-such-bundle");
    fs::create_dir(&gone).unwrap();
    let before = snapshot(&gone);
    check_case(
        "missing bundle directory",
        Want::PassThrough,
        vec![
            "create".into(),
            "--bundle".into(),
            gone.join("sub").into(),
            "id".into(),
        ],
        None,
        &gone,
        before,
    );

    // 100,000 arguments after the container id: neither runtime takes a
    // second argument, so the first of them is refused, fast.
    let many = env.bundle("many-args");
    fs::write(
        many.join("config.json"),
        serde_json::to_vec_pretty(&base()).unwrap(),
    )
    .unwrap();
    let before = snapshot(&many);
    let mut args: Vec<OsString> = vec![
        "create".into(),
        "--bundle".into(),
        many.clone().into(),
        "id".into(),
    ];
    args.extend((0..100_000).map(|i| OsString::from(format!("a{}", i % 10))));
    let started = Instant::now();
    check_case(
        "100,000 arguments",
        Want::Refused("argv", "a0"),
        args,
        None,
        &many,
        before,
    );
    // ... and 100,000 global options before the subcommand: the first one
    // no runtime knows is refused, the create after it is not passed
    // through.
    refused_spec(&many);
    let before = snapshot(&many);
    let mut args: Vec<OsString> = (0..100_000).map(|_| OsString::from("-x")).collect();
    args.extend([
        "create".into(),
        "--bundle".into(),
        many.clone().into_os_string(),
        "id".into(),
    ]);
    check_case(
        "100,000 global options",
        Want::Refused("argv", "-x"),
        args,
        None,
        &many,
        before,
    );
    assert!(
        started.elapsed().as_secs() < 10,
        "200,000 arguments took {:?}",
        started.elapsed()
    );

    // A pass-through subcommand never reads the bundle.
    let before = snapshot(&cwd);
    check_case(
        "state with a refused bundle around",
        Want::PassThrough,
        vec![
            "state".into(),
            "--bundle".into(),
            cwd.clone().into(),
            "id".into(),
        ],
        None,
        &cwd,
        before,
    );

    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A 200 MB config.json (a 200 MB annotation in a spec that needs the
/// conversion), and a sparse one that claims 100 GB: refused by the cap
/// (64 MiB), fast and in little memory, naming the file and the cap; the
/// bundle is left as it was.
#[test]
fn config_over_the_cap_is_refused() {
    let env = Env::new();
    let dir = env.bundle("huge");
    let mut s = base();
    s["annotations"] = json!({"huge": "x".repeat(200 << 20)});
    fs::write(dir.join("config.json"), serde_json::to_vec(&s).unwrap()).unwrap();
    drop(s);
    let sparse = env.bundle("sparse");
    fs::File::create(sparse.join("config.json"))
        .unwrap()
        .set_len(100 << 30)
        .unwrap();
    let time = Path::new("/usr/bin/time");
    // Names, sizes, inodes and times: the sparse file is not read whole.
    let stat = |dir: &Path| -> Vec<(OsString, u64, u64, i64, i64)> {
        let mut v: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let m = fs::symlink_metadata(e.path()).unwrap();
                (e.file_name(), m.len(), m.ino(), m.mtime(), m.mtime_nsec())
            })
            .collect();
        v.sort();
        v
    };
    for dir in [dir, sparse] {
        let before = stat(&dir);
        let args: Vec<OsString> = vec![
            "create".into(),
            "--bundle".into(),
            dir.clone().into(),
            "id".into(),
        ];
        let started = Instant::now();
        let out = if time.is_file() {
            let c = env.command();
            let report = env.dir.path().join("time.txt");
            let o = Command::new(time)
                .arg("-f")
                .arg("%e s, %M KiB")
                .arg("-o")
                .arg(&report)
                .arg(WRAPPER)
                .args(&args)
                .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let figures = fs::read_to_string(&report).unwrap();
            eprintln!("{}: {}", dir.display(), figures.trim());
            let kib: u64 = figures
                .trim()
                .rsplit_once(", ")
                .and_then(|(_, m)| m.strip_suffix(" KiB"))
                .and_then(|m| m.parse().ok())
                .unwrap();
            assert!(kib < 64 << 10, "peak memory {kib} KiB");
            o
        } else {
            env.command().args(&args).output().unwrap()
        };
        let elapsed = started.elapsed();
        let run = Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        let config = dir.join("config.json").display().to_string();
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        assert!(run.stdout.is_empty());
        assert_eq!(
            run.stderr,
            format!("userns-hostnet-runtime: refused: spec: {config}: larger than 64 MiB (67108865 bytes or more), the most this wrapper reads: real specs are tens of kilobytes\n")
        );
        assert_eq!(stat(&dir), before, "the bundle changed");
        assert!(elapsed.as_secs() < 10, "took {elapsed:?}");
    }
}
