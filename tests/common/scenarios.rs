//! What a container sees, one body per scenario for every runtime's suite
//! (e2e_runc, e2e_crun, e2e_youki), and what a running container sees of
//! a mount the host makes later (e2e_failclosed_sys, e2e_hook).

use super::*;

/// The wrapper runs a userns + host-network container that the real runtime
/// alone cannot run safely; config.json comes out converted.
pub fn converted_run(runtime: Runtime, expect_host_submounts: bool) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&probe_args());
    let before = bundle.spec();
    let id = unique_id("conv");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = run_probe(&sandbox.wrapper(), &bundle, &id);
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    assert_converted_view(&probe, expect_host_submounts);

    let after = bundle.spec();
    assert_converted_spec(&after);
    assert_eq!(
        namespaces(&after),
        namespaces(&before),
        "namespaces must not change"
    );
    for key in ["uidMappings", "gidMappings"] {
        assert_eq!(after["linux"][key], before["linux"][key], "linux.{key}");
    }
    assert_eq!(after["process"]["args"], before["process"]["args"]);
    assert_eq!(after["root"], before["root"]);
    let kept: Vec<&str> = TEST_CAPS
        .iter()
        .copied()
        .filter(|c| !NET_CAPS.contains(c))
        .collect();
    for set in ["bounding", "effective", "permitted"] {
        assert_eq!(
            string_list(&after["process"]["capabilities"][set]),
            kept,
            "capabilities.{set}: only the network capabilities may go, order kept"
        );
    }
}

/// The container has its own cgroup namespace and nothing mounted at
/// /sys/fs/cgroup: the wrapper adds a read-only cgroup mount after /sys, so
/// the container sees its own cgroup tree rather than the host's.
pub fn cgroupns_gets_own_cgroup_mount(runtime: Runtime, expect_host_submounts: bool) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&probe_args());
    bundle.edit(|spec| {
        add_namespace(spec, "cgroup");
        remove_mount(spec, "/sys/fs/cgroup");
    });
    let id = unique_id("cgns");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = run_probe(&sandbox.wrapper(), &bundle, &id);
    out.assert_success();

    let spec = bundle.spec();
    assert_converted_spec(&spec);
    let sys_at = mount_index(&spec, "/sys").unwrap();
    // The last mount there, the one on top (crun's rows have a read-only
    // tmpfs under it).
    let cg_at = mounts(&spec)
        .iter()
        .rposition(|m| m["destination"] == "/sys/fs/cgroup")
        .unwrap_or_else(|| panic!("no /sys/fs/cgroup mount added: {:#}", spec["mounts"]));
    assert!(cg_at > sys_at, "the cgroup mount must follow /sys");
    let cg = &mounts(&spec)[cg_at];
    assert_eq!(cg["type"], "cgroup", "added mount: {cg}");
    assert!(
        string_list(&cg["options"]).iter().any(|o| o == "ro"),
        "added cgroup mount is not read-only: {cg}"
    );

    let probe = Probe::parse(&out.stdout);
    assert_converted_view(&probe, expect_host_submounts);
    let table = probe.table();
    let top = probe
        .topmost("/sys/fs/cgroup")
        .unwrap_or_else(|| panic!("nothing at /sys/fs/cgroup:\n{table}"));
    assert_eq!(top.fstype, "cgroup2", "{table}");
    assert!(top.has("ro"), "/sys/fs/cgroup is writable:\n{table}");
    if expect_host_submounts {
        let parent = probe.by_id(top.parent).map(|p| p.mount_point.clone());
        assert_eq!(
            parent.as_deref(),
            Some("/sys/fs/cgroup"),
            "the container's own cgroup mount must cover the host's:\n{table}"
        );
    }
}

/// A cgroup mount listed before /sys would be hidden by the /sys bind: the
/// wrapper moves /sys first, so the container's cgroup mount stays visible.
pub fn sys_moves_before_cgroup(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&probe_args());
    bundle.edit(|spec| {
        let list = spec["mounts"].as_array_mut().unwrap();
        let sys = list
            .iter()
            .position(|m| m["destination"] == "/sys")
            .unwrap();
        let sys_mount = list.remove(sys);
        let cg = list
            .iter()
            .position(|m| m["destination"] == "/sys/fs/cgroup")
            .expect("runc spec has a /sys/fs/cgroup mount");
        list.insert(cg + 1, sys_mount);
    });
    let before = bundle.spec();
    assert!(
        mount_index(&before, "/sys/fs/cgroup").unwrap() < mount_index(&before, "/sys").unwrap()
    );
    let id = unique_id("order");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = run_probe(&sandbox.wrapper(), &bundle, &id);
    out.assert_success();
    assert_converted_spec(&bundle.spec());

    let probe = Probe::parse(&out.stdout);
    let table = probe.table();
    let top = probe
        .topmost("/sys/fs/cgroup")
        .unwrap_or_else(|| panic!("nothing at /sys/fs/cgroup:\n{table}"));
    assert!(
        top.fstype == "cgroup2" && top.has("ro") && top.has("nosuid") && top.has("noexec"),
        "/sys/fs/cgroup should be the container's own ro,nosuid,nodev,noexec cgroup mount, \
         not the host's:\n{table}"
    );
}

/// The unconverted bundle with the real runtime alone: the sysfs mount fails.
pub fn plain_runtime_fails_with_eperm(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&probe_args());
    let snap = bundle.snapshot();
    let id = unique_id("plain");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = run_probe(&sandbox.real(), &bundle, &id);
    assert!(
        !out.success(),
        "{} alone should fail this bundle\n{}",
        runtime.name(),
        out.describe()
    );
    let err = out.stderr.to_lowercase();
    assert!(
        // runc and crun: "operation not permitted"; youki: `EPERM`.
        err.contains("sysfs") && (err.contains("operation not permitted") || err.contains("eperm")),
        "expected the sysfs EPERM from {}\n{}",
        runtime.name(),
        out.describe()
    );
    snap.assert_unchanged(&bundle.config_path(), "the real runtime");
}

/// What a running container sees of a mount the host makes under /sys
/// after it started, on a host whose mounts are shared (a private mount
/// namespace made rshared stands in for a systemd host): `argv` is the
/// runtime (the wrapper, or the real one) with its global options. The
/// container's lines of mountinfo at that place.
pub fn mounted_after_start(
    sandbox: &Sandbox,
    bundle: &Bundle,
    argv: &[OsString],
    id: &str,
) -> Vec<MountEntry> {
    const LATER: &str = "/sys/kernel/mm";
    let script = r#"set -e
mount --make-rshared /
"$@" --root "$ROOT" create --bundle "$BUNDLE" "$ID" </dev/null >/dev/null
"$@" --root "$ROOT" start "$ID"
mount -t tmpfs -o size=64k later "$LATER"
"$@" --root "$ROOT" exec "$ID" cat /proc/self/mountinfo
"$@" --root "$ROOT" kill "$ID" KILL
"#;
    let mut full: Vec<OsString> = vec!["sh".into(), "-c".into(), script.into(), "later".into()];
    full.extend(argv.iter().cloned());
    let mut cmd = in_sys_view(&full);
    cmd.env("ROOT", sandbox.root())
        .env("LATER", LATER)
        .env("BUNDLE", bundle.dir())
        .env("ID", id)
        .env("USERNS_HOSTNET_RUNTIME", sandbox.runtime.path())
        .env("USERNS_HOSTNET_CONFIG", sandbox.config_path())
        .current_dir("/");
    let out = run_capture(&mut cmd);
    assert!(out.success(), "{}", out.describe());
    parse_mountinfo(&out.stdout)
        .into_iter()
        .filter(|m| m.is_at_or_under(LATER))
        .collect()
}
