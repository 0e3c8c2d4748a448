//! A runc-compatible runtime wrapper: converts the bundles of containers
//! that have a user namespace on the host network, then execs the real
//! runtime with the same argv.
//!
//! It starts at C's `main`: most calls pass straight through to the real
//! runtime, and the standard library's own start-up (a stack guard for
//! the main thread, found by reading `/proc/self/maps`) would be most of
//! what the wrapper costs them. `sys::start` does the rest of that
//! start-up; `std::env::args_os` still works (glibc hands the arguments
//! to the standard library before `main`).

#![no_main]

use std::ffi::{c_char, c_int};

#[no_mangle]
pub extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    userns_hostnet::sys::start::init();
    let code = userns_hostnet::wrapper::main(std::env::args_os().collect());
    std::process::exit(code);
}
