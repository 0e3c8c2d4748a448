//! The config file names the runtime that runs as root, so the wrapper
//! honours it only when root alone can change it: a file owned by someone
//! else, writable by group or others, or in a directory others can write,
//! stops create with one line that names the file, the reason and the fix,
//! while state and delete still reach the default runtime (with a warning),
//! as for any other error in the file.

mod common;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Bundle, ContainerGuard, Outcome, Runtime, Sandbox};

/// The wrapper with no runtime named, so it reads the config file; with
/// `USERNS_HOSTNET_DEBUG`, its warnings go to stderr.
fn wrapper(sandbox: &Sandbox, args: &[&str], debug: bool) -> Outcome {
    let mut argv: Vec<OsString> = vec![
        common::WRAPPER.into(),
        "--root".into(),
        sandbox.root().into(),
    ];
    argv.extend(args.iter().map(OsString::from));
    let mut cmd = common::in_sys_view(&argv);
    cmd.env_remove("USERNS_HOSTNET_RUNTIME")
        .env("USERNS_HOSTNET_CONFIG", sandbox.config_path());
    if debug {
        cmd.env("USERNS_HOSTNET_DEBUG", "1");
    } else {
        cmd.env_remove("USERNS_HOSTNET_DEBUG");
    }
    common::run_capture(&mut cmd)
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
}

/// create is refused with exactly `reason` and its fix, on stderr and in
/// the `--log` file, and the bundle stays as it was.
fn assert_create_refused(sandbox: &Sandbox, reason: &str, fixed: &Path) {
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    let snap = bundle.snapshot();
    let id = common::unique_id("untrusted");
    let _guard = ContainerGuard::new(sandbox, &id);
    let log = sandbox.path().join("runc.log");
    let _ = std::fs::remove_file(&log);
    let out = wrapper(
        sandbox,
        &[
            "--log",
            log.to_str().unwrap(),
            "--log-format",
            "json",
            "create",
            "--bundle",
            bundle.dir().to_str().unwrap(),
            &id,
        ],
        false,
    );
    let f = fixed.display();
    let line = format!(
        "userns-hostnet-runtime: config: {}: not trusted: {reason}; fix: chown root:root {f}; chmod go-w {f}",
        sandbox.config_path().display()
    );
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert_eq!(out.stderr, format!("{line}\n"), "{}", out.describe());
    assert_eq!(out.stdout, "", "{}", out.describe());
    let logged: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim_end()).unwrap();
    assert_eq!(logged["level"], "error");
    assert_eq!(logged["msg"], line.as_str());
    snap.assert_unchanged(
        &bundle.config_path(),
        "create with an untrusted config file",
    );
    assert!(
        sandbox.real().state(&id).is_none(),
        "container {id} exists after a refused create"
    );
}

/// A container created while the file was trusted: once it is not,
/// `state` still answers as runc does and says why in a warning, and
/// `delete` still removes the container; `create` is refused.
#[test]
fn an_untrusted_config_file_stops_create_but_not_state() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let config = sandbox.config_path();
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("trust");
    let _guard = ContainerGuard::new(&sandbox, &id);
    wrapper(
        &sandbox,
        &["create", "--bundle", bundle.dir().to_str().unwrap(), &id],
        false,
    )
    .assert_success();
    common::assert_converted_spec(&bundle.spec());

    chown(&config, 1000, 1000);
    let through = wrapper(&sandbox, &["state", &id], true);
    let real = sandbox.real().run(&["state", &id]);
    assert_eq!(through.code(), Some(0), "{}", through.describe());
    assert_eq!(through.stdout, real.stdout, "{}", through.describe());
    let c = config.display();
    let warning = format!(
        "config: {c}: not trusted: owned by uid 1000, not root; fix: chown root:root {c}; chmod go-w {c}: `state` takes the real runtime from the defaults"
    );
    assert!(through.stderr.contains(&warning), "{}", through.describe());

    assert_create_refused(&sandbox, "owned by uid 1000, not root", &config);

    chown(&config, 0, 0);
    chmod(&config, 0o666);
    assert_create_refused(
        &sandbox,
        "writable by group and others (mode 0666)",
        &config,
    );

    wrapper(&sandbox, &["delete", "--force", &id], false).assert_success();
    assert!(sandbox.real().state(&id).is_none());
}

/// A directory on the way that others can write lets them swap the file;
/// a sticky one (as /tmp, where the sandbox lives) does not.
#[test]
fn a_directory_others_can_write_is_refused_unless_sticky() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let dir = sandbox.path().to_owned();
    let real_dir = std::fs::canonicalize(&dir).unwrap();
    chmod(&dir, 0o777);
    assert_create_refused(
        &sandbox,
        &format!(
            "its directory {} is writable by group and others (mode 0777), who could replace the file",
            real_dir.display()
        ),
        &real_dir,
    );
    chmod(&dir, 0o1777);
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    let id = common::unique_id("sticky");
    let _guard = ContainerGuard::new(&sandbox, &id);
    wrapper(
        &sandbox,
        &["create", "--bundle", bundle.dir().to_str().unwrap(), &id],
        false,
    )
    .assert_success();
    chmod(&dir, 0o700);
}
