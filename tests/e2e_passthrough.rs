//! Everything but create/run/restore is an immediate exec of the real runtime:
//! same stdout, same exit status, no file touched. Containers that need no
//! conversion keep their config.json byte for byte and inode for inode. The
//! argv shapes real clients use (conmon, the containerd shim) work.

mod common;

use std::ffi::OsString;
use std::path::Path;

use common::{Bundle, Cli, ContainerGuard, Outcome, Probe, Runtime, Sandbox};

fn assert_same_result(what: &str, wrapped: &Outcome, real: &Outcome) {
    assert_eq!(
        wrapped.code(),
        real.code(),
        "{what}: exit status differs\n--- wrapper\n{}\n--- real\n{}",
        wrapped.describe(),
        real.describe()
    );
    assert!(
        wrapped.stdout == real.stdout,
        "{what}: stdout differs\n--- wrapper\n{}\n--- real\n{}",
        wrapped.describe(),
        real.describe()
    );
}

fn compare(sandbox: &Sandbox, what: &str, args: &[&str]) -> Outcome {
    let wrapped = sandbox.wrapper().run(args);
    let real = sandbox.real().run(args);
    assert_same_result(what, &wrapped, &real);
    wrapped
}

fn os(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    args.iter().map(|a| a.as_ref().to_os_string()).collect()
}

/// `--version`: the real runtime's answer intact and first, then the
/// wrapper's own line (tests/e2e_version.rs checks that line).
fn version_passes_through(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let out = sandbox.wrapper().run(&["--version"]);
    let real = sandbox.real().run(&["--version"]);
    assert_eq!(out.code(), real.code(), "{}", out.describe());
    assert!(out.success(), "{}", out.describe());
    let ours = out
        .stdout
        .strip_prefix(real.stdout.as_str())
        .unwrap_or_else(|| panic!("not the runtime's answer first:\n{}", out.describe()));
    assert!(
        ours.starts_with("userns-hostnet-runtime ") && ours.lines().count() == 1,
        "{}",
        out.describe()
    );
    assert!(
        out.stdout
            .contains(&format!("{} version", runtime.program_name())),
        "{}",
        out.describe()
    );
}

fn features_passes_through(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    if runtime != Runtime::Youki {
        compare(&sandbox, "features", &["features"]);
        return;
    }
    // youki 0.7.0 lists its capabilities in a different order on every
    // run (a hash set), so the two answers are compared as sets.
    let wrapped = sandbox.wrapper().run(&["features"]);
    let real = sandbox.real().run(&["features"]);
    assert_eq!(wrapped.code(), real.code(), "{}", wrapped.describe());
    let canonical = |o: &Outcome| {
        let mut v: serde_json::Value = serde_json::from_str(&o.stdout)
            .unwrap_or_else(|e| panic!("features is not JSON ({e})\n{}", o.describe()));
        if let Some(caps) = v["linux"]["capabilities"].as_array_mut() {
            caps.sort_by_key(|c| c.to_string());
        }
        v
    };
    assert_eq!(canonical(&wrapped), canonical(&real));
}

fn state_of_missing_container_passes_through(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let id = common::unique_id("missing");
    let out = compare(&sandbox, "state of a missing container", &["state", &id]);
    assert!(!out.success(), "{}", out.describe());
}

fn create(cli: &Cli, bundle: &Bundle, id: &str) -> Outcome {
    let pid_file = bundle.dir().join("init.pid");
    cli.run(&os(&[
        &"create",
        &"--bundle",
        &bundle.dir(),
        &"--pid-file",
        &pid_file,
        &id,
    ]))
}

/// create, state, start, state, kill, state, delete through the wrapper;
/// every state matches the real runtime's byte for byte, and after create
/// nothing touches config.json again.
fn lifecycle_passes_through(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("life");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let wrapper = sandbox.wrapper();
    let real = sandbox.real();

    create(&wrapper, &bundle, &id).assert_success();
    common::assert_converted_spec(&bundle.spec());
    let after_create = bundle.snapshot();
    assert_eq!(real.status_of(&id).as_deref(), Some("created"));
    compare(&sandbox, "state (created)", &["state", &id]);

    wrapper.run(&["start", &id]).assert_success();
    real.wait_for_status(&id, "running");
    compare(&sandbox, "state (running)", &["state", &id]);

    wrapper.run(&["kill", &id, "KILL"]).assert_success();
    real.wait_for_status(&id, "stopped");
    compare(&sandbox, "state (stopped)", &["state", &id]);

    wrapper.run(&["delete", &id]).assert_success();
    assert!(
        real.state(&id).is_none(),
        "container {id} still exists after delete through the wrapper"
    );
    compare(&sandbox, "state (deleted)", &["state", &id]);
    after_create.assert_unchanged(&bundle.config_path(), "state/start/kill/delete");
}

/// A container with its own network namespace needs nothing: config.json
/// keeps its bytes and inode, and the container keeps what it asked for.
fn own_network_namespace_is_untouched(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_ownnet(&common::probe_args());
    let snap = bundle.snapshot();
    let id = common::unique_id("ownnet");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
    out.assert_success();
    snap.assert_unchanged(&bundle.config_path(), "own network namespace");

    let probe = Probe::parse(&out.stdout);
    let sys = probe.topmost("/sys").expect("/sys is mounted");
    assert_eq!(sys.fstype, "sysfs", "{}", probe.table());
    let bnd = probe.cap_bnd();
    assert!(
        common::NET_CAP_BITS
            .iter()
            .all(|bit| common::has_cap_bit(bnd, *bit)),
        "network capabilities work in an own network namespace and must stay: CapBnd {bnd:016x}"
    );
}

/// conmon (CRI-O, podman): `--root=R create --bundle B --pid-file P --no-pivot ID`.
fn conmon_argv_shape(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("conmon");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let pid_file = sandbox.path().join("conmon.pid");
    let mut root_opt = OsString::from("--root=");
    root_opt.push(sandbox.root());

    let out = sandbox.wrapper().raw(&os(&[
        &root_opt,
        &"create",
        &"--bundle",
        &bundle.dir(),
        &"--pid-file",
        &pid_file,
        &"--no-pivot",
        &id,
    ]));
    out.assert_success();
    assert_created(&sandbox, &bundle, &id, &pid_file);

    let out = sandbox
        .wrapper()
        .raw(&os(&[&root_opt, &"delete", &"--force", &id]));
    out.assert_success();
    assert!(sandbox.real().state(&id).is_none(), "{id} not deleted");
}

/// The containerd shim: `--root R --log B/log.json --log-format json create
/// --bundle B --pid-file B/init.pid ID`.
fn containerd_shim_argv_shape(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("shim");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let log = bundle.dir().join("log.json");
    let pid_file = bundle.dir().join("init.pid");
    let root = sandbox.root();

    let out = sandbox.wrapper().raw(&os(&[
        &"--root",
        &root,
        &"--log",
        &log,
        &"--log-format",
        &"json",
        &"create",
        &"--bundle",
        &bundle.dir(),
        &"--pid-file",
        &pid_file,
        &id,
    ]));
    out.assert_success();
    assert_created(&sandbox, &bundle, &id, &pid_file);
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !log_text.contains("\"level\":\"error\""),
        "a successful create must leave no error in the shim's log:\n{log_text}"
    );

    let out = sandbox.wrapper().raw(&os(&[
        &"--root",
        &root,
        &"--log",
        &log,
        &"--log-format",
        &"json",
        &"delete",
        &"--force",
        &id,
    ]));
    out.assert_success();
    assert!(sandbox.real().state(&id).is_none(), "{id} not deleted");
}

fn assert_created(sandbox: &Sandbox, bundle: &Bundle, id: &str, pid_file: &Path) {
    assert_eq!(
        sandbox.real().status_of(id).as_deref(),
        Some("created"),
        "container {id} was not created"
    );
    let pid =
        std::fs::read_to_string(pid_file).unwrap_or_else(|e| panic!("pid file {pid_file:?}: {e}"));
    assert!(pid.trim().parse::<u32>().is_ok(), "pid file holds {pid:?}");
    common::assert_converted_spec(&bundle.spec());
}

/// Without `--bundle` the bundle is the working directory.
fn bundle_defaults_to_working_directory(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    let id = common::unique_id("cwd");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = common::run_capture(
        sandbox
            .wrapper()
            .command(&["run", &id])
            .current_dir(bundle.dir()),
    );
    out.assert_success();
    common::assert_converted_spec(&bundle.spec());
    common::assert_converted_view(&Probe::parse(&out.stdout), runtime.is_runc());
}

common::for_runtimes!(
    version_passes_through,
    features_passes_through,
    state_of_missing_container_passes_through,
    lifecycle_passes_through,
    own_network_namespace_is_untouched,
    conmon_argv_shape,
    containerd_shim_argv_shape,
    bundle_defaults_to_working_directory,
);

/// A config file with an error stops only the creates its policies decide
/// (a container with a user namespace), never a pass-through: `state`
/// still reaches the default runtime (runc first in PATH), with the same
/// answer as runc's own, and so does a container without a user
/// namespace; the userns container's `create` refuses naming the file,
/// and the refusal is in the decision log (the defaults' file).
#[test]
fn a_broken_config_file_does_not_block_pass_through() {
    let sandbox = Sandbox::new(Runtime::Runc);
    std::fs::write(sandbox.config_path(), "[sysfs]\nfallback = \"sometimes\"\n").unwrap();
    let id = common::unique_id("badconf");
    let root = sandbox.root();
    let wrapper = |args: &[&str]| {
        let mut argv: Vec<OsString> =
            vec![common::WRAPPER.into(), "--root".into(), root.clone().into()];
        argv.extend(args.iter().map(OsString::from));
        let mut cmd = common::in_sys_view(&argv);
        cmd.env_remove("USERNS_HOSTNET_RUNTIME")
            .env("USERNS_HOSTNET_CONFIG", sandbox.config_path());
        common::run_capture(&mut cmd)
    };
    let through = wrapper(&["state", &id]);
    let real = sandbox.real().run(&["state", &id]);
    assert_same_result("state with a broken config file", &through, &real);

    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    let snap = bundle.snapshot();
    let out = wrapper(&["create", "--bundle", bundle.dir().to_str().unwrap(), &id]);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert!(
        out.stderr.starts_with("userns-hostnet-runtime: config: "),
        "{}",
        out.describe()
    );
    assert!(out.stderr.contains("sysfs.fallback"), "{}", out.describe());
    snap.assert_unchanged(&bundle.config_path(), "create with a broken config file");
    let log = std::fs::read_to_string("/var/log/userns-hostnet.log").unwrap_or_default();
    let entry = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["id"] == id.as_str())
        .unwrap_or_else(|| panic!("no decision log entry for {id}"));
    assert!(
        entry.to_string().contains("sysfs.fallback"),
        "the refusal names the setting: {entry}"
    );

    let plain = Bundle::userns_hostnet(&["/bin/true"]);
    plain.edit(|spec| {
        common::remove_namespace(spec, "user");
        common::add_namespace(spec, "network");
        let linux = spec["linux"].as_object_mut().unwrap();
        linux.remove("uidMappings");
        linux.remove("gidMappings");
    });
    let plain_snap = plain.snapshot();
    let plain_id = common::unique_id("badconf-plain");
    let out = wrapper(&["run", "--bundle", plain.dir().to_str().unwrap(), &plain_id]);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    plain_snap.assert_unchanged(&plain.config_path(), "a container without a user namespace");
}
