//! Running a program that must answer in time: a runtime asked `features`
//! or `--version`. The caller's descriptors (conmon's sync pipes,
//! `--preserve-fds`) stay with the caller, the child dies with its parent,
//! and at the deadline it is killed with its whole process group.

use nix::libc;
use std::io::{ErrorKind, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// More output than this is not an answer to a question put to a runtime.
pub const MAX_OUTPUT: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot run: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("did not answer in time")]
    Timeout,
    #[error("more than {MAX_OUTPUT} bytes of output")]
    TooLarge,
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
}

/// What the program said, and how it ended.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
}

/// Run `program arg` with only stdio (stdin and stderr on /dev/null),
/// in its own process group, killed with its group at `deadline`. Its
/// stdout is read while it runs, so a child that writes more than a pipe
/// holds cannot stall until the deadline.
pub fn run(program: &Path, arg: &str, deadline: Instant) -> Result<Output, RunError> {
    run_args(program, &[arg], deadline)
}

/// [`run`] with several arguments.
pub fn run_args(program: &Path, args: &[&str], deadline: Instant) -> Result<Output, RunError> {
    let mut cmd = command(program, Stdio::piped(), Stdio::null());
    cmd.args(args);
    let mut child = spawn(&mut cmd)?;
    let result = match child.stdout.take() {
        Some(stdout) => collect(&mut child, stdout, deadline),
        None => Err(RunError::Read(ErrorKind::BrokenPipe.into())),
    };
    if result.is_err() {
        kill_and_reap(&mut child);
    }
    result
}

/// Run `program args` with stdin on /dev/null and stdout and stderr where
/// the caller says, in its own process group, killed with its group at
/// `deadline`; only its exit status is collected. For a program that leaves
/// a child holding its stdio (a runtime's `create` leaves the container's
/// init), where waiting for the end of a pipe would wait for the deadline.
pub fn run_status(
    program: &Path,
    args: &[&std::ffi::OsStr],
    stdout: Stdio,
    stderr: Stdio,
    deadline: Instant,
) -> Result<ExitStatus, RunError> {
    let mut cmd = command(program, stdout, stderr);
    cmd.args(args);
    let mut child = spawn(&mut cmd)?;
    let result = wait_until(&mut child, deadline);
    if result.is_err() {
        kill_and_reap(&mut child);
    }
    result
}

/// The child's exit status, polled until `deadline`.
fn wait_until(child: &mut Child, deadline: Instant) -> Result<ExitStatus, RunError> {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) => {}
            Err(e) => return Err(RunError::Read(e)),
        }
        let left = remaining(deadline).ok_or(RunError::Timeout)?;
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// `program` with stdin on /dev/null, in its own process group, with the
/// child's hygiene applied between fork and exec.
fn command(program: &Path, stdout: Stdio, stderr: Stdio) -> Command {
    let mut cmd = Command::new(program);
    cmd.stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    // SAFETY: the closure makes only async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(|| {
            child_hygiene();
            Ok(())
        });
    }
    cmd
}

/// In the child, between fork and exec: the caller's descriptors (from 3
/// on) stay with the caller; the probe dies with its parent.
fn child_hygiene() {
    // SAFETY: close_range and prctl are plain system calls; a failure
    // (close_range needs 5.11) leaves only descriptors that std marked
    // close-on-exec already and those the caller passed, which the runtime
    // inherits on every start anyway.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
        );
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
    }
}

/// Spawn, retrying briefly while the binary is being written (ETXTBSY).
fn spawn(cmd: &mut Command) -> Result<Child, RunError> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 5 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other.map_err(RunError::Spawn),
        }
    }
}

fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

/// Read stdout to its end and wait for the exit, both before `deadline`.
fn collect(
    child: &mut Child,
    mut stdout: ChildStdout,
    deadline: Instant,
) -> Result<Output, RunError> {
    let fd = stdout.as_raw_fd();
    // SAFETY: F_GETFL/F_SETFL on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let left = remaining(deadline).ok_or(RunError::Timeout)?;
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(RunError::Read(e));
        }
        if n == 0 {
            continue;
        }
        match stdout.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                out.extend_from_slice(&buf[..k]);
                if out.len() > MAX_OUTPUT {
                    return Err(RunError::TooLarge);
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
            Err(e) => return Err(RunError::Read(e)),
        }
    }
    let status = wait_until(child, deadline)?;
    Ok(Output {
        status,
        stdout: out,
    })
}

/// Kill the child's process group (its own children too) and reap it,
/// without waiting long on one that will not die.
fn kill_and_reap(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.kill();
    for _ in 0..100 {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, script: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("prog");
        let tmp = dir.join(".prog.tmp");
        std::fs::write(&tmp, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        path
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[test]
    fn output_and_status_are_collected() {
        let d = tempfile::tempdir().unwrap();
        let prog = sh(d.path(), "echo \"$1\"; echo noise >&2; exit 3");
        let out = run(&prog, "hello", soon()).unwrap();
        assert_eq!(out.stdout, b"hello\n");
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn more_than_a_pipe_holds_is_read_while_the_child_runs() {
        let d = tempfile::tempdir().unwrap();
        // 256 KiB, four times a pipe's buffer, before exiting.
        let prog = sh(d.path(), "head -c 262144 /dev/zero");
        let out = run(&prog, "x", soon()).unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout.len(), 262144);
    }

    #[test]
    fn too_much_output_and_no_answer_are_errors_in_time() {
        let d = tempfile::tempdir().unwrap();
        let prog = sh(d.path(), "exec yes");
        assert!(matches!(run(&prog, "x", soon()), Err(RunError::TooLarge)));
        let prog = sh(d.path(), "sleep 30");
        let start = Instant::now();
        let e = run(&prog, "x", Instant::now() + Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, RunError::Timeout), "{e}");
        assert!(start.elapsed() < Duration::from_secs(3));
        let e = run(&d.path().join("missing"), "x", soon()).unwrap_err();
        assert!(e.to_string().starts_with("cannot run: "), "{e}");
    }

    #[test]
    fn a_child_left_holding_stdio_does_not_hold_up_the_status() {
        let d = tempfile::tempdir().unwrap();
        // Like a runtime's create: the container's init keeps stdio open.
        let prog = sh(d.path(), "sleep 30 & echo \"$1\" >&2; exit 4");
        let err = std::fs::File::create(d.path().join("err")).unwrap();
        let start = Instant::now();
        let status = run_status(
            &prog,
            &["said".as_ref()],
            Stdio::null(),
            err.into(),
            Instant::now() + Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(status.code(), Some(4));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(std::fs::read(d.path().join("err")).unwrap(), b"said\n");
        let e = run_status(
            &sh(d.path(), "sleep 30"),
            &[],
            Stdio::null(),
            Stdio::null(),
            Instant::now() + Duration::from_millis(200),
        )
        .unwrap_err();
        assert!(matches!(e, RunError::Timeout), "{e}");
    }
}
