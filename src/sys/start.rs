//! What Rust's runtime does before `main`, for a binary that starts at
//! C's `main` (`#![no_main]`) to be cheap on the pass-through path: the
//! standard descriptors made valid and SIGPIPE ignored, as the standard
//! library's start-up does them, without its main-thread stack guard
//! (which reads `/proc/self/maps` and maps a signal stack on every run).
//! A stack overflow is then a plain SIGSEGV rather than a message first.

use nix::libc;
use std::ffi::{c_char, c_int, CStr, OsString};
use std::os::unix::ffi::OsStringExt;

/// Call first thing in a `#![no_main]` binary's `main`.
pub fn init() {
    sanitize_standard_fds();
    // The runtime gets the default back at exec (`runtime::exec`).
    // SAFETY: ignoring a signal installs no handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// The arguments C's `main` was given. Read from `argv` itself: glibc
/// also hands them to the standard library before `main`, musl does not,
/// so `std::env::args_os` is empty in a `#![no_main]` musl binary.
///
/// # Safety
/// `argv` holds `argc` pointers to NUL-terminated strings, as C's `main`
/// receives them.
pub unsafe fn args(argc: c_int, argv: *const *const c_char) -> Vec<OsString> {
    let count = usize::try_from(argc).unwrap_or(0);
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        // SAFETY: the caller passes C's main's argc and argv.
        let arg = unsafe { *argv.add(i) };
        if arg.is_null() {
            break;
        }
        // SAFETY: each of them is a NUL-terminated string.
        let bytes = unsafe { CStr::from_ptr(arg) }.to_bytes();
        out.push(OsString::from_vec(bytes.to_vec()));
    }
    out
}

/// A closed descriptor 0, 1 or 2 is opened on /dev/null, so that no file
/// the wrapper opens takes its place and gets stderr lines written into it.
fn sanitize_standard_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: poll, fcntl and open on plain values; nothing is borrowed.
    unsafe {
        while libc::poll(fds.as_mut_ptr(), 3, 0) == -1 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                // RLIMIT_NOFILE or a temporary shortage can stop poll.
                Some(libc::EINVAL | libc::EAGAIN | libc::ENOMEM) => {
                    for fd in 0..3 {
                        if libc::fcntl(fd, libc::F_GETFD) == -1
                            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
                        {
                            open_dev_null();
                        }
                    }
                    return;
                }
                _ => libc::abort(),
            }
        }
        for pfd in fds {
            if pfd.revents & libc::POLLNVAL != 0 {
                open_dev_null();
            }
        }
    }
}

/// Takes the lowest free descriptor, which is the closed standard one.
fn open_dev_null() {
    // SAFETY: a constant C string; the descriptor is meant to stay open.
    if unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR, 0) } == -1 {
        std::process::abort();
    }
}
