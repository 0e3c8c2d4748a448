//! `userns-hostnet explain`: the wrapper's own plan, printed, on real
//! fixtures; the converted spec it writes equals what the wrapper writes.

mod common;

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const TOOL: &str = common::TOOL;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("crates/engine/fixtures")
            .join(name),
    )
    .unwrap()
}

/// A temporary directory with an empty config file (the defaults) and a
/// fake runtime that lists rro in `features` and otherwise does nothing.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("wrapper.toml"),
            format!(
                "[log]\nfile = \"{}\"\n",
                dir.path().join("decisions.log").display()
            ),
        )
        .unwrap();
        let rt = dir.path().join("fake-runtime");
        std::fs::write(
            &rt,
            "#!/bin/sh\n[ \"$1\" = features ] && echo '{\"mountOptions\":[\"ro\",\"rro\"]}'\nexit 0\n",
        )
        .unwrap();
        std::fs::set_permissions(&rt, std::fs::Permissions::from_mode(0o755)).unwrap();
        Env { dir }
    }

    fn bundle(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let b = self.dir.path().join(name);
        // The rootfs the fixtures name (`rootfs`): the destinations are
        // resolved in it.
        std::fs::create_dir_all(b.join("rootfs")).unwrap();
        std::fs::write(b.join("config.json"), bytes).unwrap();
        b
    }

    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env(
            "USERNS_HOSTNET_CONFIG",
            self.dir.path().join("wrapper.toml"),
        )
        .env(
            "USERNS_HOSTNET_RUNTIME",
            self.dir.path().join("fake-runtime"),
        );
        c
    }

    fn explain(&self, args: &[&str]) -> Output {
        self.cmd(TOOL).arg("explain").args(args).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let out = self.explain(&a);
        let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "--json output does not parse: {e}\n{}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        (out.status.code().unwrap(), v)
    }
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn rules(v: &Value) -> Vec<String> {
    v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn converted_bundle_is_explained_and_left_untouched() {
    let env = Env::new();
    let original = fixture("podman-userns-hostnet.json");
    let b = env.bundle("b", &original);
    let out = env.explain(&[b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let t = text(&out);
    // The three capability sets' edits are one entry.
    assert!(t.contains("would start, CONVERTED (2 changes)"), "{t}");
    assert!(t.contains("decision: host-network: "), "{t}");
    assert!(t.contains("[sysfs] mounts[2]"), "{t}");
    assert!(
        t.contains(
            "after:  /sys type=bind source=/sys options=rbind,rro,nosuid,nodev,noexec,rprivate"
        ),
        "{t}"
    );
    assert!(
        t.contains("2. [capabilities] process.capabilities\n"),
        "{t}"
    );
    assert!(
        t.contains("   CAP_NET_BIND_SERVICE: from bounding, effective, permitted\n"),
        "{t}"
    );
    assert_eq!(t.matches("CAP_NET_BIND_SERVICE").count(), 1, "{t}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(b.join("config.json")).unwrap(), original);
    let mut names: Vec<_> = std::fs::read_dir(&b)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["config.json", "rootfs"],
        "explain wrote into the bundle"
    );
}

#[test]
fn json_has_the_documented_fields() {
    let env = Env::new();
    let b = env.bundle("b", &fixture("podman-userns-hostnet.json"));
    let (code, v) = env.json(&[b.to_str().unwrap()]);
    assert_eq!(code, 0);
    for key in [
        "input",
        "config",
        "runtime",
        "would_start",
        "needs_conversion",
        "changed",
        "decision",
        "reason",
        "changes",
        "warnings",
        "refused",
        "output",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["would_start"], true);
    assert_eq!(v["needs_conversion"], true);
    assert_eq!(v["changed"], true);
    assert_eq!(v["decision"], "host-network");
    assert_eq!(v["refused"], Value::Null);
    assert_eq!(
        rules(&v),
        ["sysfs", "capabilities", "capabilities", "capabilities"]
    );
    let sysfs = &v["changes"][0];
    assert_eq!(sysfs["field"], "mounts[2]");
    assert_eq!(sysfs["before"]["options"][4], "ro");
    assert_eq!(
        sysfs["after"]["options"],
        json!(["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"])
    );
    assert!(v["runtime"].as_str().unwrap().ends_with("fake-runtime"));
}

#[test]
fn output_equals_what_the_wrapper_writes() {
    let env = Env::new();
    let original = fixture("podman-userns-hostnet.json");
    let b = env.bundle("b", &original);
    let out_file = env.dir.path().join("converted.json");
    let out = env.explain(&[
        "--output",
        out_file.to_str().unwrap(),
        b.join("config.json").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(text(&out).contains("converted spec written to"));
    // The wrapper, in front of the fake runtime, converts the bundle in place.
    let status = env
        .cmd(common::WRAPPER)
        .args(["create", "--bundle", b.to_str().unwrap(), "ctr1"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    // Its delete takes the wrapper's record of the container with it (a
    // fake runtime's containers cannot be looked up: the record stays
    // until then).
    let deleted = env
        .cmd(common::WRAPPER)
        .args(["delete", "ctr1"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(deleted.success());
    let by_wrapper = std::fs::read(b.join("config.json")).unwrap();
    assert_ne!(by_wrapper, original);
    assert_eq!(std::fs::read(&out_file).unwrap(), by_wrapper);
}

#[test]
fn mount_order_and_cgroup_view_are_shown_before_and_after() {
    let env = Env::new();
    let mut spec: Value = serde_json::from_slice(&fixture("runc-spec-rootless.json")).unwrap();
    let mounts = spec["mounts"].as_array_mut().unwrap();
    let sys = mounts
        .iter()
        .position(|m| m["destination"] == "/sys")
        .unwrap();
    let m = mounts.remove(sys);
    mounts.push(m);
    spec["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "cgroup"}));
    let map = json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
    spec["linux"]["uidMappings"] = map.clone();
    spec["linux"]["gidMappings"] = map;
    let b = env.bundle(
        "order",
        serde_json::to_string_pretty(&spec).unwrap().as_bytes(),
    );
    let out = env.explain(&[b.to_str().unwrap()]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("[mount-order] mounts"), "{t}");
    assert!(
        t.contains("before: /proc, /dev, /dev/pts, /dev/shm, /dev/mqueue, /sys/fs/cgroup, /sys"),
        "{t}"
    );
    assert!(
        t.contains("after:  /proc, /dev, /dev/pts, /dev/shm, /dev/mqueue, /sys, /sys/fs/cgroup"),
        "{t}"
    );

    // Without a mount at /sys/fs/cgroup, the cgroup view is added.
    let mounts = spec["mounts"].as_array_mut().unwrap();
    mounts.retain(|m| m["destination"] != "/sys/fs/cgroup");
    let b = env.bundle("cgroup", serde_json::to_string(&spec).unwrap().as_bytes());
    let (code, v) = env.json(&[b.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert!(rules(&v).contains(&"cgroup-view".to_owned()), "{v}");
    let out = env.explain(&[b.to_str().unwrap()]);
    let t = text(&out);
    assert!(t.contains("[cgroup-view] mounts["), "{t}");
    assert!(t.contains("before: (none)"), "{t}");
    assert!(
        t.contains("after:  /sys/fs/cgroup type=cgroup source=cgroup options=nosuid,noexec,nodev,relatime,ro"),
        "{t}"
    );
}

#[test]
fn refusal_exits_1_with_the_wrappers_message() {
    let env = Env::new();
    let mut spec: Value = serde_json::from_slice(&fixture("podman-userns-hostnet.json")).unwrap();
    spec["linux"]["sysctl"] = json!({"net.ipv4.ip_forward": "1"});
    let b = env.bundle("b", serde_json::to_string(&spec).unwrap().as_bytes());
    let out_file = env.dir.path().join("never.json");
    let out = env.explain(&["--output", out_file.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out);
    assert!(t.contains("would be REFUSED"), "{t}");
    assert!(t.contains("decision: host-network"), "{t}");
    assert!(
        t.contains("refused: [sysctl] linux.sysctl: net.ipv4.ip_forward cannot be set"),
        "{t}"
    );
    assert!(!out_file.exists(), "a refused spec was written");
    let (code, v) = env.json(&[b.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(v["would_start"], false);
    assert_eq!(v["refused"]["rule"], "sysctl");
    assert_eq!(v["refused"]["field"], "linux.sysctl");
    assert_eq!(v["decision"], "host-network");
}

#[test]
fn unconverted_spec_is_unchanged_and_output_is_the_same_bytes() {
    let env = Env::new();
    let original = fixture("podman-userns-ownnet.json");
    let b = env.bundle("b", &original);
    let out_file = env.dir.path().join("same.json");
    let (code, v) = env.json(&["--output", out_file.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(v["decision"], "own-network-namespace");
    assert_eq!(v["needs_conversion"], false);
    assert_eq!(v["changed"], false);
    assert_eq!(v["changes"], json!([]));
    assert_eq!(std::fs::read(&out_file).unwrap(), original);
    let t = text(&env.explain(&[b.to_str().unwrap()]));
    assert!(t.contains("would start, unchanged"), "{t}");
}

#[test]
fn standard_input_is_read_with_a_dash() {
    let env = Env::new();
    let mut child = env
        .cmd(TOOL)
        .args(["explain", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&fixture("ctr-nethost.json"))
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["input"], "-");
    // ctr-nethost has no user namespace.
    assert_eq!(v["decision"], "no-user-namespace");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn unreadable_input_exits_2_with_a_clear_message() {
    let env = Env::new();
    let cases: Vec<(PathBuf, &str)> = vec![
        (env.bundle("garbage", b"{ not json"), "not valid JSON"),
        (env.bundle("array", b"[1, 2]"), "not an object"),
        (env.dir.path().join("missing"), "No such file"),
        (env.dir.path().to_path_buf(), "no config.json"),
    ];
    for (input, want) in cases {
        let out = env.explain(&[input.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{input:?}: {err}");
        assert!(err.contains(want), "{input:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    let link = env.dir.path().join("link");
    std::fs::create_dir(&link).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", link.join("config.json")).unwrap();
    let out = env.explain(&[link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link"));
}

#[test]
fn default_input_is_config_json_in_the_working_directory() {
    let env = Env::new();
    let b = env.bundle("cwd", &fixture("podman-userns-hostnet.json"));
    let out = env
        .cmd(TOOL)
        .args(["explain", "--json"])
        .current_dir(&b)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["input"], "./config.json");
    assert_eq!(v["changed"], true);
}

#[test]
fn config_file_policies_apply_and_a_broken_config_exits_2() {
    let env = Env::new();
    let b = env.bundle("b", &fixture("podman-userns-hostnet.json"));
    std::fs::write(
        env.dir.path().join("wrapper.toml"),
        "[capabilities]\nnet = \"refuse\"\n[log]\nfile = \"/dev/null\"\n",
    )
    .unwrap();
    let (code, v) = env.json(&[b.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(v["refused"]["rule"], "capabilities");
    assert!(v["config"].as_str().unwrap().ends_with("wrapper.toml"));
    std::fs::write(
        env.dir.path().join("wrapper.toml"),
        "[capabilities]\nnet = \"dorp\"\n",
    )
    .unwrap();
    let out = env.explain(&[b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("capabilities.net"));
}

#[test]
fn without_a_runtime_rro_is_assumed_with_a_warning() {
    let env = Env::new();
    let b = env.bundle("b", &fixture("podman-userns-hostnet.json"));
    let out = env
        .cmd(TOOL)
        .args(["explain", "--json", b.to_str().unwrap()])
        .env("USERNS_HOSTNET_RUNTIME", "/nonexistent/runc")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["runtime"], Value::Null);
    assert_eq!(v["changed"], true);
    let w = v["warnings"][0].as_str().unwrap();
    assert!(
        w.contains("/nonexistent/runc") && w.contains("assumed"),
        "{w}"
    );
}

/// What the wrapper's create prints when it stops on `bundle`'s
/// config.json, with the runtime a fake that would otherwise succeed.
fn wrapper_line(env: &Env, bundle: &Path) -> String {
    let out = env
        .cmd(common::WRAPPER)
        .args(["create", "--bundle", bundle.to_str().unwrap(), "ctr1"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the wrapper started it: {out:?}");
    String::from_utf8_lossy(&out.stderr).trim().to_owned()
}

#[test]
fn explain_refuses_what_the_wrappers_create_refuses_with_its_line() {
    let env = Env::new();
    let real = env.bundle("real", &fixture("podman-userns-hostnet.json"));
    // A symlinked config.json, named as a file and as its bundle.
    let linked = env.dir.path().join("linked");
    std::fs::create_dir(&linked).unwrap();
    std::os::unix::fs::symlink(real.join("config.json"), linked.join("config.json")).unwrap();
    // A FIFO: neither may block on it.
    let fifo = env.dir.path().join("fifo");
    std::fs::create_dir(&fifo).unwrap();
    nix::unistd::mkfifo(&fifo.join("config.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    // Over the 64 MiB cap (sparse: nothing allocated).
    let large = env.dir.path().join("large");
    std::fs::create_dir(&large).unwrap();
    std::fs::File::create(large.join("config.json"))
        .unwrap()
        .set_len(65 << 20)
        .unwrap();
    for (bundle, want) in [
        (&linked, "is a symbolic link"),
        (&fifo, "not a regular file"),
        (&large, "larger than 64 MiB"),
    ] {
        let by_wrapper = wrapper_line(&env, bundle);
        assert!(by_wrapper.contains(want), "{by_wrapper}");
        for input in [bundle.clone(), bundle.join("config.json")] {
            let out = env.explain(&[input.to_str().unwrap()]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{input:?}: {err}");
            assert!(out.stdout.is_empty(), "{input:?}");
            assert!(
                err.trim_end()
                    .ends_with(&format!("the wrapper would refuse it: {by_wrapper}")),
                "{input:?}: {err}\nwrapper: {by_wrapper}"
            );
            let (code, v) = env.json(&[input.to_str().unwrap()]);
            assert_eq!(code, 2);
            assert_eq!(v["error"]["wrapper"], by_wrapper.as_str(), "{v}");
            assert!(v["error"]["reason"].as_str().unwrap().contains(want), "{v}");
            assert!(!v["error"]["field"].as_str().unwrap().is_empty(), "{v}");
            assert!(v.get("would_start").is_none(), "{v}");
        }
    }
}

#[test]
fn json_errors_are_json_on_stdout() {
    let env = Env::new();
    let missing = env.dir.path().join("missing");
    let (code, v) = env.json(&[missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(v["error"]["field"], missing.to_str().unwrap());
    assert!(
        v["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("No such file"),
        "{v}"
    );
    assert_eq!(v["error"]["wrapper"], Value::Null);
    // A spec the strict reading refuses: the field in the spec, the reason.
    let b = env.bundle("dup", br#"{"ociVersion": "1.0.2", "ociVersion": "1.1.0"}"#);
    let (code, v) = env.json(&[b.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        v["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("ociVersion")
            || v["error"]["field"].as_str().unwrap().contains("ociVersion"),
        "{v}"
    );
    assert!(
        v["error"]["wrapper"]
            .as_str()
            .unwrap()
            .starts_with("userns-hostnet-runtime: refused: "),
        "{v}"
    );
    // A broken config file.
    std::fs::write(
        env.dir.path().join("wrapper.toml"),
        "[capabilities]\nnet = \"dorp\"\n",
    )
    .unwrap();
    let ok = env.bundle("ok", &fixture("podman-userns-hostnet.json"));
    let (code, v) = env.json(&[ok.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(v["error"]["field"], "config");
    assert!(
        v["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("capabilities.net"),
        "{v}"
    );
}

#[test]
fn output_is_reported_as_what_was_written() {
    let env = Env::new();
    // Refused: nothing written, and said.
    let mut spec: Value = serde_json::from_slice(&fixture("podman-userns-hostnet.json")).unwrap();
    spec["linux"]["sysctl"] = json!({"net.ipv4.ip_forward": "1"});
    let refused = env.bundle("refused", serde_json::to_string(&spec).unwrap().as_bytes());
    let out_file = env.dir.path().join("out.json");
    let o = out_file.to_str().unwrap();
    let out = env.explain(&["--output", o, refused.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out);
    assert!(
        t.contains("nothing written to --output: the container would be refused"),
        "{t}"
    );
    assert!(!t.contains("spec written to"), "{t}");
    assert!(!out_file.exists());
    let (_, v) = env.json(&["--output", o, refused.to_str().unwrap()]);
    assert_eq!(v["output"], Value::Null);
    assert_eq!(v["output_result"], "not-written");
    assert!(!out_file.exists());
    // Unchanged: the input, byte for byte, and said so.
    let original = fixture("podman-userns-ownnet.json");
    let same = env.bundle("same", &original);
    let out = env.explain(&["--output", o, same.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let t = text(&out);
    assert!(
        t.contains(&format!(
            "the input written to {o} unchanged ({} bytes): the output equals the input",
            original.len()
        )),
        "{t}"
    );
    assert!(!t.contains("converted spec"), "{t}");
    assert_eq!(std::fs::read(&out_file).unwrap(), original);
    let (_, v) = env.json(&["--output", o, same.to_str().unwrap()]);
    assert_eq!(v["output"], o);
    assert_eq!(v["output_result"], "unchanged");
    assert_eq!(v["output_bytes"], original.len());
    // Converted: what was written.
    let conv = env.bundle("conv", &fixture("podman-userns-hostnet.json"));
    let (_, v) = env.json(&["--output", o, conv.to_str().unwrap()]);
    assert_eq!(v["output_result"], "converted");
    assert_eq!(v["output_bytes"], std::fs::read(&out_file).unwrap().len());
    // Unwritable: an error, as JSON under --json.
    let bad = env.dir.path().join("no/such/dir/out.json");
    let (code, v) = env.json(&["--output", bad.to_str().unwrap(), conv.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(v["error"]["field"], bad.to_str().unwrap());
}

/// The warning explain gives for a spec without its rootfs, `why` it
/// is not there.
fn unchecked(why: &str) -> String {
    format!("the mount destinations could not be checked against the rootfs: {why}; the wrapper resolves each one in the rootfs, and refuses one that a symbolic link there leads to or away from /sys, or that it cannot resolve")
}

/// A config.json copied out of its bundle: no rootfs beside it. explain
/// shows the conversion, exit 0, and warns that the destinations were not
/// checked; the wrapper's create on the same directory still refuses it.
#[test]
fn a_spec_without_its_rootfs_is_explained_with_a_warning() {
    let env = Env::new();
    let original = fixture("podman-userns-hostnet.json");
    let bare = env.dir.path().join("copied");
    std::fs::create_dir(&bare).unwrap();
    let spec = bare.join("config.json");
    std::fs::write(&spec, &original).unwrap();
    let rootfs = bare.join("rootfs");

    let out = env.explain(&[spec.to_str().unwrap()]);
    let t = text(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{t}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t.contains("would start, CONVERTED (2 changes)"), "{t}");
    assert!(t.contains("[sysfs] mounts[2]"), "{t}");
    assert!(
        t.contains(&format!(
            "\nwarning: {}\n",
            unchecked(&format!("{} is not there", rootfs.display()))
        )),
        "{t}"
    );
    assert!(!t.contains("refused"), "{t}");

    let (code, v) = env.json(&[spec.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["would_start"], true);
    assert_eq!(v["changed"], true);
    assert_eq!(v["refused"], Value::Null);
    assert_eq!(
        rules(&v),
        ["sysfs", "capabilities", "capabilities", "capabilities"]
    );
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [unchecked(&format!("{} is not there", rootfs.display()))],
        "{v}"
    );
    // --output writes what the wrapper would write with a rootfs there.
    let out_file = env.dir.path().join("converted.json");
    let (code, v) = env.json(&[
        "--output",
        out_file.to_str().unwrap(),
        spec.to_str().unwrap(),
    ]);
    assert_eq!((code, &v["output_result"]), (0, &json!("converted")), "{v}");
    let with_rootfs = env.bundle("with-rootfs", &original);
    let (_, v) = env.json(&[
        "--output",
        env.dir.path().join("with-rootfs.json").to_str().unwrap(),
        with_rootfs.to_str().unwrap(),
    ]);
    assert_eq!(v["warnings"], json!([]), "{v}");
    assert_eq!(
        std::fs::read(&out_file).unwrap(),
        std::fs::read(env.dir.path().join("with-rootfs.json")).unwrap()
    );

    // The wrapper gains none of it: no rootfs, no container.
    let by_wrapper = wrapper_line(&env, &bare);
    assert!(
        by_wrapper.contains(
            "destination-links: mounts[0].destination: \"/proc\" cannot be resolved in the rootfs"
        ),
        "{by_wrapper}"
    );
    assert_eq!(std::fs::read(&spec).unwrap(), original);
}

/// Standard input has no bundle: a relative root.path names no rootfs,
/// and the spec is explained with the same warning.
#[test]
fn standard_input_with_a_relative_rootfs_is_explained_with_a_warning() {
    let env = Env::new();
    let mut child = env
        .cmd(TOOL)
        .args(["explain", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&fixture("podman-userns-hostnet.json"))
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["changed"], true, "{v}");
    assert_eq!(
        v["warnings"],
        json!([unchecked(
            "root.path \"rootfs\" is relative and the bundle directory is not known"
        )]),
        "{v}"
    );
}

/// With its rootfs, a spec is judged as the wrapper judges it: a
/// destination a link in the rootfs leads to /sys is refused by both,
/// with the same line; the same spec copied out of the bundle is
/// explained, the warning saying what was not checked. A spec that needs
/// no conversion gets no warning: nothing is resolved for it.
#[test]
fn with_its_rootfs_a_spec_is_judged_as_the_wrapper_judges_it() {
    let env = Env::new();
    let mut spec: Value = serde_json::from_slice(&fixture("podman-userns-hostnet.json")).unwrap();
    spec["mounts"].as_array_mut().unwrap().push(json!({
        "destination": "/hsys",
        "type": "bind",
        "source": "/tmp",
        "options": ["rbind", "rw"]
    }));
    let bytes = serde_json::to_vec_pretty(&spec).unwrap();
    let b = env.bundle("linked", &bytes);
    std::os::unix::fs::symlink("sys", b.join("rootfs/hsys")).unwrap();
    let by_wrapper = wrapper_line(&env, &b);
    assert!(
        by_wrapper
            .contains("destination-links: mounts[10].destination: \"/hsys\" resolves to /sys"),
        "{by_wrapper}"
    );
    let out = env.explain(&[b.to_str().unwrap()]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains(
            "refused: [destination-links] mounts[10].destination: \"/hsys\" resolves to /sys"
        ),
        "{t}"
    );
    assert!(!t.contains("warning:"), "{t}");
    let (code, v) = env.json(&[b.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(v["refused"]["rule"], "destination-links");
    assert_eq!(v["warnings"], json!([]));

    let copied = env.dir.path().join("copied");
    std::fs::create_dir(&copied).unwrap();
    std::fs::write(copied.join("config.json"), &bytes).unwrap();
    let (code, v) = env.json(&[copied.join("config.json").to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["warnings"],
        json!([unchecked(&format!(
            "{} is not there",
            copied.join("rootfs").display()
        ))]),
        "{v}"
    );

    let own = env.dir.path().join("own");
    std::fs::create_dir(&own).unwrap();
    std::fs::write(
        own.join("config.json"),
        fixture("podman-userns-ownnet.json"),
    )
    .unwrap();
    let (code, v) = env.json(&[own.join("config.json").to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["needs_conversion"], false);
    assert_eq!(v["warnings"], json!([]), "{v}");
}
