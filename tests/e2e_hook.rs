//! `userns-hostnet hook create-runtime` under the real runc 1.1.5, no
//! wrapper: the bundle binds /sys with `rbind,ro` the way podman and
//! CRI-O <= 1.36 write it, so runc gets past the sysfs mount, and the hook
//! sits in `hooks.createRuntime`. Without the hook the host's submounts of
//! /sys stay writable; with it every mount of the tree is read-only, and a
//! bad ID mapping aborts the create.

mod common;

use common::{show, writable_under_sys, Bundle, ContainerGuard, Probe, Runtime, Sandbox};
use serde_json::{json, Value};

const TOOL: &str = common::TOOL;

/// /sys as podman 4.3 and CRI-O <= 1.36 bind it for a user namespace on
/// the host network: recursive bind, but a non-recursive `ro`.
fn podman_shaped_sys(spec: &mut Value) {
    let list = spec["mounts"].as_array_mut().expect("mounts");
    let sys = list
        .iter_mut()
        .find(|m| m["destination"] == "/sys")
        .expect("runc spec mounts /sys");
    *sys = json!({
        "destination": "/sys",
        "type": "bind",
        "source": "/sys",
        "options": ["rprivate", "nosuid", "noexec", "nodev", "ro", "rbind"]
    });
}

/// The hook in `hooks.createRuntime`, pointed at the sandbox's config file
/// (runc gives a hook only the environment its definition lists).
fn add_hook(spec: &mut Value, sandbox: &Sandbox) {
    spec["hooks"] = json!({
        "createRuntime": [{
            "path": TOOL,
            "args": ["userns-hostnet", "hook", "create-runtime"],
            "env": [format!("USERNS_HOSTNET_CONFIG={}", sandbox.config_path().display())],
            "timeout": 10
        }]
    });
}

fn hooked_bundle(sandbox: &Sandbox, hook: bool) -> Bundle {
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    bundle.edit(|spec| {
        podman_shaped_sys(spec);
        if hook {
            add_hook(spec, sandbox);
        }
    });
    bundle
}

fn run(sandbox: &Sandbox, bundle: &Bundle, tag: &str) -> common::Outcome {
    let id = common::unique_id(tag);
    let _guard = ContainerGuard::new(sandbox, &id);
    let out = common::run_probe(&sandbox.real(), bundle, &id);
    assert!(
        sandbox.real().state(&id).is_none(),
        "runc still holds {id} after `run`"
    );
    out
}

/// The hooked bundle with `mounts` added, run to the end; what its
/// probe saw.
fn run_with_mounts(sandbox: &Sandbox, tag: &str, mounts: Vec<Value>) -> Probe {
    let bundle = hooked_bundle(sandbox, true);
    bundle.edit(|spec| spec["mounts"].as_array_mut().unwrap().extend(mounts));
    let out = run(sandbox, &bundle, tag);
    out.assert_success();
    Probe::parse(&out.stdout)
}

/// The mounts the probe saw at or under `dir`.
fn mounts_under<'p>(probe: &'p Probe, dir: &str) -> Vec<&'p common::MountEntry> {
    probe
        .mounts
        .iter()
        .filter(|m| m.is_at_or_under(dir))
        .collect()
}

/// `m` carries each of `options`; `table` is the probe's mounts, shown
/// when it does not.
fn assert_options(m: &common::MountEntry, options: &[&str], table: &str) {
    for opt in options {
        assert!(
            m.has(opt),
            "{} ({}) lacks {opt}: {:?}\n{table}",
            m.mount_point,
            m.fstype,
            m.options
        );
    }
}

#[test]
fn without_the_hook_rbind_ro_leaves_host_submounts_writable() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = hooked_bundle(&sandbox, false);
    let out = run(&sandbox, &bundle, "nohook");
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    show("runc, rbind,ro, no hook", &probe);
    let writable = writable_under_sys(&probe);
    for fstype in ["bpf", "securityfs"] {
        assert!(
            writable.iter().any(|m| m.fstype == fstype),
            "the host's {fstype} submount should be writable without the hook: {writable:?}\n{}",
            probe.table()
        );
    }
}

#[test]
fn the_hook_makes_every_mount_under_sys_read_only() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = hooked_bundle(&sandbox, true);
    let snap = bundle.snapshot();
    let out = run(&sandbox, &bundle, "hook");
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    show("runc, rbind,ro, createRuntime hook", &probe);
    let table = probe.table();
    assert!(
        probe.under_sys().len() > 2,
        "the host's submounts should be there:\n{table}"
    );
    for m in probe.under_sys() {
        // runc masks /sys/firmware with a read-only tmpfs after the hooks ran.
        let masked = m.mount_point == "/sys/firmware" && m.fstype == "tmpfs";
        let want: &[&str] = if masked {
            &["ro"]
        } else {
            &["ro", "nosuid", "nodev", "noexec"]
        };
        assert_options(m, want, &table);
    }
    for (dir, fstype) in [
        ("/sys/fs/bpf", "bpf"),
        ("/sys/kernel/security", "securityfs"),
    ] {
        assert!(
            probe.at(dir).iter().any(|m| m.fstype == fstype),
            "{fstype} missing at {dir}:\n{table}"
        );
    }
    // The hook cannot change the spec: the capabilities stay, and it says so.
    assert!(
        common::has_cap_bit(probe.cap_bnd(), 12),
        "CAP_NET_ADMIN is in the spec and a createRuntime hook cannot drop it"
    );
    snap.assert_unchanged(&bundle.config_path(), "the hook");
    let log = sandbox.decisions();
    let line = log
        .iter()
        .find(|l| l["command"] == "hook create-runtime")
        .unwrap_or_else(|| panic!("no decision log line from the hook: {log:?}"));
    assert_eq!(line["converted"], true, "{line}");
    assert_eq!(line["decision"], "host-network", "{line}");
    assert!(
        line["warnings"].to_string().contains("capabilities"),
        "the log should say the capabilities were not dropped: {line}"
    );
}

/// A second bind of the host's /sys (a hostPath volume, as node-exporter
/// has at /host/sys) carries the same writable submounts: the hook makes
/// that tree read-only too, as the wrapper's sys-binds rule would have
/// the runtime do, and says nothing of it as "not applied".
#[test]
fn the_hook_makes_a_second_bind_of_sys_read_only_too() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let probe = run_with_mounts(
        &sandbox,
        "hostsys",
        vec![
            json!({
                "destination": "/host/sys",
                "type": "bind",
                "source": "/sys",
                "options": ["rbind", "ro"]
            }),
            // An application's own read-only volume: read-only
            // recursively, as it asks, and nothing more.
            json!({
                "destination": "/opt/tools",
                "type": "bind",
                "source": "/usr/lib",
                "options": ["rbind", "rro"]
            }),
        ],
    );
    let table = probe.table();
    let host_sys = mounts_under(&probe, "/host/sys");
    assert!(
        host_sys.iter().any(|m| m.fstype == "bpf") && host_sys.len() > 2,
        "the host's submounts should be under /host/sys:\n{table}"
    );
    for m in &host_sys {
        assert_options(m, &["ro", "nosuid", "nodev", "noexec"], &table);
    }
    let tools = probe.at("/opt/tools");
    assert!(
        !tools.is_empty() && tools.iter().all(|m| m.has("ro") && !m.has("noexec")),
        "the application's rro volume should be read-only and nothing more:\n{table}"
    );
    let log = sandbox.decisions();
    let line = log
        .iter()
        .find(|l| l["command"] == "hook create-runtime")
        .unwrap_or_else(|| panic!("no decision log line from the hook: {log:?}"));
    assert_eq!(line["converted"], true, "{line}");
    assert!(
        !line["warnings"].to_string().contains("sys-binds"),
        "the hook applied sys-binds itself: {line}"
    );
}

#[test]
fn a_mapping_of_host_root_aborts_the_create() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = hooked_bundle(&sandbox, true);
    bundle.edit(|spec| {
        let bad = json!([
            {"containerID": 0, "hostID": common::HOST_ID_BASE, "size": common::ID_RANGE},
            {"containerID": common::ID_RANGE, "hostID": 0, "size": 1}
        ]);
        spec["linux"]["uidMappings"] = bad;
    });
    let out = run(&sandbox, &bundle, "badmap");
    assert!(
        !out.success(),
        "the hook should abort the create\n{}",
        out.describe()
    );
    assert!(
        out.stderr
            .contains("userns-hostnet: hook create-runtime: refused: idmap: linux.uidMappings"),
        "the hook's line should reach runc's error\n{}",
        out.describe()
    );
    assert!(
        !out.stdout.contains("### mountinfo"),
        "the container process must not have run\n{}",
        out.describe()
    );
    let log = sandbox.decisions();
    assert!(
        log.iter()
            .any(|l| l["command"] == "hook create-runtime" && l["refused"]["rule"] == "idmap"),
        "{log:?}"
    );
}

/// The host's / bound recursively and read-only (at /host/root) carries
/// the host's /sys too: the sys-binds rule gives it `rro` alone, so the
/// hook makes that whole tree read-only and adds nothing the rule does
/// not: programs there still run.
#[test]
fn the_hook_makes_a_bind_of_a_parent_of_sys_read_only_and_nothing_more() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let probe = run_with_mounts(
        &sandbox,
        "hostroot",
        vec![json!({
            "destination": "/host/root",
            "type": "bind",
            "source": "/",
            "options": ["rbind", "ro"]
        })],
    );
    let table = probe.table();
    let under = mounts_under(&probe, "/host/root");
    assert!(
        under
            .iter()
            .any(|m| m.mount_point == "/host/root/sys/fs/bpf"),
        "the host's /sys submounts should be under /host/root:\n{table}"
    );
    for m in &under {
        assert_options(m, &["ro"], &table);
    }
    let top = probe.at("/host/root");
    assert!(
        top.iter().all(|m| !m.has("noexec")),
        "the rule gives /host/root rro alone; the hook added more:\n{table}"
    );
}

/// Containers that do not need the conversion: the hook returns at once
/// and changes nothing (their /sys is a fresh sysfs, left as runc made it).
#[test]
fn the_hook_leaves_other_containers_alone() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let own_net = Bundle::userns_ownnet(&common::probe_args());
    let no_userns = Bundle::userns_hostnet(&common::probe_args());
    no_userns.edit(|spec| {
        common::remove_namespace(spec, "user");
        common::add_namespace(spec, "network");
        spec["linux"]
            .as_object_mut()
            .unwrap()
            .retain(|k, _| k != "uidMappings" && k != "gidMappings");
    });
    for (bundle, tag) in [(&own_net, "ownnet"), (&no_userns, "nouserns")] {
        bundle.edit(|spec| add_hook(spec, &sandbox));
        let snap = bundle.snapshot();
        let out = run(&sandbox, bundle, tag);
        out.assert_success();
        let probe = Probe::parse(&out.stdout);
        let sys = probe.topmost("/sys").expect("/sys is mounted");
        assert_eq!(sys.fstype, "sysfs", "{tag}: {}", probe.table());
        snap.assert_unchanged(&bundle.config_path(), tag);
    }
    assert!(
        sandbox.decisions().is_empty(),
        "the fast path writes nothing: {:?}",
        sandbox.decisions()
    );
}

/// With a fresh sysfs in the spec runc fails at the sysfs mount, before
/// any createRuntime hook: the hook cannot rescue that, the wrapper can.
#[test]
fn a_fresh_sysfs_fails_before_the_hook_runs() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    bundle.edit(|spec| add_hook(spec, &sandbox));
    let out = run(&sandbox, &bundle, "sysfs");
    assert!(!out.success(), "{}", out.describe());
    let err = out.stderr.to_lowercase();
    assert!(
        err.contains("sysfs") && err.contains("operation not permitted"),
        "{}",
        out.describe()
    );
    assert!(
        sandbox.decisions().is_empty(),
        "the hook should never have run: {:?}",
        sandbox.decisions()
    );
}

/// The hook is a plain process: its fast path on a real state document.
#[test]
fn the_fast_path_needs_no_process() {
    let bundle = Bundle::userns_ownnet(&["true"]);
    let state =
        json!({"ociVersion": "1.0.2", "id": "x", "status": "creating", "bundle": bundle.dir()});
    let out = hook_cli("create-runtime", state.to_string().as_bytes());
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
}

#[test]
fn a_broken_state_is_one_line_and_a_failure() {
    let out = hook_cli("create-runtime", b"not json");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("userns-hostnet: hook create-runtime: the OCI state on stdin"),
        "{err}"
    );
}

/// `hook precreate` on podman's real specs, the decision log kept in a
/// temporary directory.
fn precreate(stdin: &[u8]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let log = dir.path().join("decisions.log");
    std::fs::write(
        &config,
        format!("[log]\nfile = {:?}\n", log.display().to_string()),
    )
    .unwrap();
    hook_cli_with("precreate", stdin, &config)
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("crates/engine/fixtures")
            .join(name),
    )
    .unwrap()
}

#[test]
fn precreate_prints_an_unchanged_spec_byte_for_byte() {
    for name in ["podman-userns-ownnet.json", "podman-default.json"] {
        let input = fixture(name);
        let out = precreate(&input);
        assert!(out.status.success(), "{name}: {out:?}");
        assert!(
            out.stdout == input,
            "{name}: the output differs from the input"
        );
        assert!(out.stderr.is_empty(), "{name}: {out:?}");
    }
}

/// `spec` (bytes) with its `root.path`, `rootfs` in the fixtures, made
/// `rootfs` (absolute, as podman gives it: the hook is not told the
/// bundle, and the destinations are resolved in the rootfs), the bytes
/// around it as they were.
fn rooted_at(spec: &[u8], rootfs: &std::path::Path) -> Vec<u8> {
    let text = String::from_utf8(spec.to_vec()).unwrap();
    let abs = format!("\"path\": {:?}", rootfs.display().to_string());
    assert_eq!(text.matches("\"path\": \"rootfs\"").count(), 1);
    text.replace("\"path\": \"rootfs\"", &abs).into_bytes()
}

#[test]
fn precreate_converts_podmans_userns_hostnet_spec() {
    let rootfs = tempfile::tempdir().unwrap();
    let input = rooted_at(&fixture("podman-userns-hostnet.json"), rootfs.path());
    let compact = serde_json::to_vec(&serde_json::from_slice::<Value>(&input).unwrap()).unwrap();
    for (what, input) in [
        ("indented", input),
        ("compact, as podman sends it", compact),
    ] {
        let out = precreate(&input);
        assert!(out.status.success(), "{what}: {out:?}");
        let spec: Value = serde_json::from_slice(&out.stdout).expect("stdout is the spec");
        common::assert_converted_spec(&spec);
        assert_eq!(
            out.stdout.contains(&b'\n'),
            input.trim_ascii_end().contains(&b'\n'),
            "{what}: the output keeps the input's style"
        );
    }
}

#[test]
fn precreate_refuses_with_one_line() {
    let mut spec: Value = serde_json::from_slice(&fixture("podman-userns-hostnet.json")).unwrap();
    spec["linux"]["sysctl"] = json!({"net.ipv4.ip_forward": "1"});
    let out = precreate(spec.to_string().as_bytes());
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "nothing on stdout when refusing");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "userns-hostnet: hook precreate: refused: sysctl: linux.sysctl: net.ipv4.ip_forward"
        ),
        "{err}"
    );
    let out = precreate(b"[1]");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("refused: spec: (top level): not a runtime spec: the top level is an array"));
}

/// A config file others can write is not trusted: the hook refuses, as
/// the wrapper does, naming the file, the reason and the fix.
#[test]
fn precreate_refuses_with_an_untrusted_config_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o646)).unwrap();
    let out = hook_cli_with("precreate", &fixture("podman-userns-hostnet.json"), &config);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "nothing on stdout when refusing");
    let c = config.display();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "userns-hostnet: hook precreate: config: {c}: not trusted: writable by others (mode 0646); fix: chown root:root {c}; chmod go-w {c}\n"
        )
    );
}

fn hook_cli(stage: &str, stdin: &[u8]) -> std::process::Output {
    hook_cli_with(
        stage,
        stdin,
        std::path::Path::new("/nonexistent/config.toml"),
    )
}

fn hook_cli_with(stage: &str, stdin: &[u8], config: &std::path::Path) -> std::process::Output {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(TOOL)
        .args(["hook", stage])
        .env("USERNS_HOSTNET_CONFIG", config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the tool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// crun 1.8.1 runs createRuntime hooks at the same point: the tree its
/// `rbind,ro` leaves is read-only after the hook.
#[test]
fn the_hook_hardens_under_crun_too() {
    let sandbox = Sandbox::new(Runtime::Crun);
    let bundle = hooked_bundle(&sandbox, true);
    let out = run(&sandbox, &bundle, "crun");
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    show("crun, rbind,ro, createRuntime hook", &probe);
    assert!(!probe.under_sys().is_empty(), "{}", probe.table());
    let writable = writable_under_sys(&probe);
    assert!(writable.is_empty(), "{writable:?}\n{}", probe.table());
    let sys = probe.topmost("/sys").expect("/sys is mounted");
    for opt in ["ro", "nosuid", "nodev", "noexec"] {
        assert!(sys.has(opt), "/sys lacks {opt}: {:?}", sys.options);
    }
    assert!(
        sandbox
            .decisions()
            .iter()
            .any(|l| l["command"] == "hook create-runtime" && l["converted"] == true),
        "{:?}",
        sandbox.decisions()
    );
}

/// A mount the host makes under /sys after the container started, on a
/// host whose mounts are shared: the runtime's default root propagation
/// (rslave) would carry it into the container's /sys bind, writable. The
/// hook makes the tree it hardens private, so nothing arrives; without the
/// hook, runc lets it arrive writable (crun makes /sys private itself).
fn a_later_host_mount_does_not_arrive_through_the_hook(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let mut argv: Vec<std::ffi::OsString> = vec![runtime.path().into()];
    argv.extend(runtime.global_args().into_iter().map(Into::into));
    for hook in [true, false] {
        let bundle = Bundle::userns_hostnet(&["/bin/sleep", "600"]);
        bundle.edit(|spec| {
            podman_shaped_sys(spec);
            // No propagation of its own: the root's (rslave) applies.
            let sys = spec["mounts"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|m| m["destination"] == "/sys")
                .unwrap();
            sys["options"] = json!(["nosuid", "noexec", "nodev", "ro", "rbind"]);
            if hook {
                add_hook(spec, &sandbox);
            }
        });
        let id = common::unique_id(if hook { "later-hook" } else { "later-nohook" });
        let _guard = ContainerGuard::new(&sandbox, &id);
        let seen = common::scenarios::mounted_after_start(&sandbox, &bundle, &argv, &id);
        let writable: Vec<&common::MountEntry> = seen.iter().filter(|m| !m.has("ro")).collect();
        eprintln!(
            "{}, rbind,ro, hook {hook}: {} mount(s) of the later mount seen, {} writable",
            runtime.name(),
            seen.len(),
            writable.len()
        );
        if hook {
            assert!(
                writable.is_empty(),
                "{}: a mount the host made later arrived writable through the hook: {writable:#?}",
                runtime.name()
            );
        } else if !runtime.is_crun() {
            assert!(
                !writable.is_empty(),
                "{}: without the hook the class is expected to be real: {seen:#?}",
                runtime.name()
            );
        }
    }
}

mod later_mounts {
    use super::a_later_host_mount_does_not_arrive_through_the_hook;
    crate::common::for_runtimes!(runc_and_crun: a_later_host_mount_does_not_arrive_through_the_hook);
}
