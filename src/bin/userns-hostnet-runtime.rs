//! A runc-compatible runtime wrapper: converts the bundles of containers
//! that have a user namespace on the host network, then execs the real
//! runtime with the same argv.
//!
//! It starts at C's `main`: most calls pass straight through to the real
//! runtime, and the standard library's own start-up (a stack guard for
//! the main thread, found by reading `/proc/self/maps`) would be most of
//! what the wrapper costs them. `sys::start` does the rest of that
//! start-up, and its arguments are read from C's `argv` (musl, unlike
//! glibc, does not hand them to the standard library before `main`).

#![no_main]

use std::ffi::{c_char, c_int};
use userns_hostnet::sys::arena::Arena;

/// 512 KiB: every allocation of a create of a spec of up to about 50 KB
/// (containerd's and CRI-O's are 5 to 25 KB), carved without a system
/// call; a larger spec spills into musl's allocator (`sys::arena` says
/// why). A create of a 5 MB spec peaks at most this much higher.
#[global_allocator]
static ALLOCATOR: Arena<{ 1 << 19 }> = Arena::new();

/// # Safety
/// Called by the C start-up code only, with its own argc and argv.
#[no_mangle]
pub unsafe extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    userns_hostnet::sys::start::init();
    // SAFETY: C's main's own argc and argv.
    let args = unsafe { userns_hostnet::sys::start::args(argc, argv) };
    let code = userns_hostnet::wrapper::main(args);
    std::process::exit(code);
}
