//! The argv scanner on arbitrary words: NUL separates the arguments, as in
//! the kernel's argv. It must never panic, and what it reports must come
//! from the words it was given.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use userns_hostnet::argv::scan;

fuzz_target!(|data: &[u8]| {
    let args: Vec<OsString> = data
        .split(|&b| b == 0)
        .map(|w| OsString::from_vec(w.to_vec()))
        .collect();
    let inv = scan(&args);
    if inv.creating.is_some() {
        assert!(inv.subcommand.is_some());
    }
    if let Some(b) = &inv.bundle {
        let b = b.as_os_str().as_bytes();
        assert!(
            args.iter().any(|a| a.as_bytes().ends_with(b)),
            "bundle {b:?} is not the end of any argument"
        );
    }
    if let Some(id) = &inv.container_id {
        assert!(args.contains(id), "container id {id:?} is not an argument");
    }
});
