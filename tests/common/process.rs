//! The processes a test starts and stops itself (daemons, a tool it
//! interrupts): what they inherit, and how they are stopped.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// SIGTERM, 10 s to exit, then SIGKILL.
pub fn terminate(child: &mut Child) {
    if matches!(child.try_wait(), Ok(None)) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `cmd`'s child starts with the signals a test sends it (SIGINT, SIGQUIT,
/// SIGTERM, SIGHUP) at their default action: a child inherits the signals
/// its parent ignores (`cmd &` in a non-interactive shell ignores SIGINT
/// and SIGQUIT, nohup SIGHUP), and a test must not depend on how cargo
/// was started.
pub fn default_signals(cmd: &mut Command) -> &mut Command {
    use nix::sys::signal::{signal, SigHandler, Signal};
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure makes only signal(2)
    // calls, which are async-signal-safe, and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            for s in [
                Signal::SIGINT,
                Signal::SIGQUIT,
                Signal::SIGTERM,
                Signal::SIGHUP,
            ] {
                signal(s, SigHandler::SigDfl).map_err(std::io::Error::from)?;
            }
            Ok(())
        })
    }
}
