//! The daemon's restart after its config changed: the operator's
//! command or systemctl, run as a host program in the host's root.

use super::{able, DeployError, Host};
use crate::cli::DeployArgs;
use crate::say;

/// The restart: the operator's `--restart-command`, run by the host's
/// `sh -c`, else `systemctl restart UNIT`. The argv, and how it is shown.
pub(super) fn restart_command(args: &DeployArgs, unit: &str) -> Vec<std::ffi::OsString> {
    match &args.restart_command {
        Some(line) => vec!["/bin/sh".into(), "-c".into(), line.into()],
        None => vec![systemctl(), "restart".into(), unit.into()],
    }
}

pub(super) fn shown(argv: &[std::ffi::OsString]) -> String {
    match argv {
        [sh, c, line] if sh == "/bin/sh" && c == "-c" => line.to_string_lossy().into_owned(),
        _ => argv
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Runs the restart command as a host program in the host's root (its
/// own libraries, its systemctl talking to systemd over /run/systemd): the
/// child alone enters the root, this process never does.
pub(super) fn restart(host: &Host, args: &DeployArgs, unit: &str) -> Result<(), DeployError> {
    let argv = restart_command(args, unit);
    let command = shown(&argv);
    say(&command);
    let failed = |why: String| DeployError::Restart {
        command: command.clone(),
        why,
    };
    let mut cmd = able::in_host_root(host, &argv).map_err(failed)?;
    // systemctl that believes it runs in a chroot (its root is not pid
    // 1's, as it may judge from a pod's mount namespace) ignores
    // `restart` and exits 0; this is the host's own root.
    cmd.env("SYSTEMD_IGNORE_CHROOT", "1");
    let out = cmd.output().map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        return Err(failed(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// `systemctl`, looked up in the host's PATH; builds with the `test-hooks`
/// feature take another from `USERNS_HOSTNET_SYSTEMCTL`, so that a test can
/// stand in for systemd.
pub(super) fn systemctl() -> std::ffi::OsString {
    #[cfg(feature = "test-hooks")]
    if let Some(p) = std::env::var_os("USERNS_HOSTNET_SYSTEMCTL").filter(|v| !v.is_empty()) {
        return p;
    }
    "systemctl".into()
}
