//! The wrapper execs the real runtime transparently: the container's exit
//! status comes back unchanged, file descriptors passed with `--preserve-fds`
//! reach the container, and the wrapper adds nothing to stdout.

mod common;

use std::ffi::OsString;
use std::fs;

use common::{Bundle, ContainerGuard, Runtime, Sandbox};

fn exit_status_passes_through(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sh", "-c", "exit 7"]);
    let id = common::unique_id("exit");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
    assert_eq!(out.code(), Some(7), "{}", out.describe());
    common::assert_converted_spec(&bundle.spec());
}

fn stdout_is_the_containers_alone(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/echo", "only the container speaks"]);
    let id = common::unique_id("stdout");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
    out.assert_success();
    assert_eq!(
        out.stdout,
        "only the container speaks\n",
        "{}",
        out.describe()
    );
}

/// fd 3 is opened by the caller (as conmon does with its sync pipes) and
/// handed to the container with `--preserve-fds 1`.
fn inherited_fd_reaches_the_container(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/cat", "/proc/self/fd/3"]);
    let id = common::unique_id("fd");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let payload = sandbox.path().join("payload");
    fs::write(&payload, "through fd 3\n").unwrap();

    let cli = sandbox.wrapper();
    let mut argv: Vec<OsString> = vec![
        "sh".into(),
        "-c".into(),
        "exec 3<\"$0\"; exec \"$@\"".into(),
        payload.into(),
        cli.program().into(),
    ];
    argv.extend(runtime.global_args().into_iter().map(OsString::from));
    argv.extend([
        "--root".into(),
        sandbox.root().into(),
        "run".into(),
        "--preserve-fds".into(),
        "1".into(),
        "--bundle".into(),
        bundle.dir().into(),
        id.clone().into(),
    ]);
    let mut cmd = common::in_sys_view(&argv);
    cmd.env("USERNS_HOSTNET_RUNTIME", runtime.name())
        .env("USERNS_HOSTNET_CONFIG", sandbox.path().join("config.toml"));
    let out = common::run_capture(&mut cmd);
    out.assert_success();
    assert_eq!(out.stdout, "through fd 3\n", "{}", out.describe());
    common::assert_converted_spec(&bundle.spec());
}

common::for_runtimes!(
    exit_status_passes_through,
    stdout_is_the_containers_alone,
    inherited_fd_reaches_the_container,
);
