//! Whether the node can run the feature's pods through the deployed
//! handler, which decides its label: the RuntimeClass's node selector
//! sends pods only to nodes labelled able, so a node whose kubelet would
//! refuse them (containerd 1.6 and 1.7, a handler on crun 1.8.1 or runc
//! 1.1.5) is not labelled, and an annotation says why.

use super::*;
use crate::matrix;
use std::ffi::OsString;
use userns_hostnet::probe::answer::features_list_rro;

/// The node annotation that says why the node is not labelled able.
pub const WHY_NOT: &str = "userns-hostnet.io/not-able";

/// `argv` as a host program in the host's root (its own libraries, PATH
/// the fallback one): the child alone enters the root, this process
/// never does.
pub(super) fn in_host_root(
    host: &Host,
    argv: &[OsString],
) -> Result<std::process::Command, String> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env("PATH", userns_hostnet::runtime::FALLBACK_PATH)
        .stdin(std::process::Stdio::null());
    if let Some(root) = host.install_root() {
        let root =
            std::ffi::CString::new(root.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: between fork and exec the closure makes two system calls
        // on memory allocated before the fork, and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if nix::libc::chroot(root.as_ptr()) != 0 || nix::libc::chdir(c"/".as_ptr()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    Ok(cmd)
}

/// How long a node's program has to answer `--version` or `features`.
const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// `program arg` in the host's root: (success, stdout), or why it did not
/// run or answer in time (it is killed then: the install never hangs on
/// it).
fn ask(host: &Host, program: &Path, arg: &str) -> Result<(bool, String), String> {
    use std::io::Read;
    let shown = |e: &dyn std::fmt::Display| format!("{} {arg}: {e}", program.display());
    let mut child = in_host_root(host, &[program.into(), arg.into()])?
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| shown(&e))?;
    let deadline = std::time::Instant::now() + ASK_TIMEOUT;
    let status = loop {
        match child.try_wait().map_err(|e| shown(&e))? {
            Some(status) => break status,
            None if std::time::Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(shown(&"did not answer in time"));
            }
            None => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    };
    let mut text = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut text);
    }
    Ok((status.success(), text))
}

/// The binary the daemon runs for the handler, as the node names it: its
/// own link to the wrapper when install made one, else the wrapper.
fn handler_binary(host: &Host, args: &DeployArgs, handler: &str) -> PathBuf {
    let link = userns_hostnet::runtime::handlers_dir()
        .join(handler)
        .join(userns_hostnet::WRAPPER_NAME);
    match host.entry(&link) {
        Ok(p) if p.is_symlink() => link,
        _ => args.bin_dir.join(userns_hostnet::WRAPPER_NAME),
    }
}

/// What the handler's binary answers in the host's root: the wrapper
/// passes `--version` (its runtime's line first) and `features` to the
/// real runtime the handler runs, so these are the daemon's answers.
fn handler_runtime(host: &Host, binary: &Path, handler: &str) -> matrix::HandlerRuntime {
    let version = match ask(host, binary, "--version") {
        Ok((true, out)) => Ok(out.lines().next().unwrap_or("").trim().to_owned()),
        Ok((false, _)) => Err("it failed".to_owned()),
        Err(e) => Err(e),
    };
    let features = match ask(host, binary, "features") {
        Ok((true, text)) => Some(text),
        _ => None,
    };
    let rro = match &features {
        Some(text) if features_list_rro(text.as_bytes()) == Some(true) => Ok(()),
        _ => Err("`features` lists no rro".to_owned()),
    };
    matrix::HandlerRuntime {
        handler: handler.to_owned(),
        runtime: binary.display().to_string(),
        version,
        features: matrix::parse_features(features.as_deref()),
        rro,
    }
}

/// The daemon that serves `config` (the running daemon that reads it,
/// else the first in the node's PATH, as doctor finds it), asked its
/// version in the node's root.
fn daemon_version(
    host: &Host,
    daemon: &'static dyn DaemonModule,
    config: &Path,
) -> Option<matrix::Version> {
    let map = |p: &Path| host.found(p);
    let program = crate::daemon::binary::find(
        daemon,
        config,
        None,
        userns_hostnet::runtime::FALLBACK_PATH,
        &map,
    )
    .map_or_else(|| PathBuf::from(daemon.name()), |b| b.shown);
    ask(host, &program, "--version")
        .ok()
        .filter(|(ok, _)| *ok)
        .and_then(|(_, out)| matrix::parse_containerd_version(&out))
}

/// Why the node cannot run the feature's pods through `handler` of
/// `daemon` (its config `config`, as the node names it), or `None` when
/// it can.
pub(super) fn why_unable(
    host: &Host,
    args: &DeployArgs,
    (daemon, config): (&'static dyn DaemonModule, &Path),
    handler: &str,
) -> Option<String> {
    let facts = daemon
        .matrix()
        .then(|| daemon_version(host, daemon, config));
    let binary = handler_binary(host, args, handler);
    matrix::why_unable(facts, &handler_runtime(host, &binary, handler))
}
