//! The argv scanner on arbitrary words: NUL separates the arguments, as in
//! the kernel's argv. It must never panic, and what it reports must come
//! from the words it was given.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use userns_hostnet::argv::{scan, Dialect};

fuzz_target!(|data: &[u8]| {
    let args: Vec<OsString> = data
        .split(|&b| b == 0)
        .map(|w| OsString::from_vec(w.to_vec()))
        .collect();
    for dialect in [Dialect::Runc, Dialect::Crun, Dialect::Strict] {
        check(&args, scan(&args, dialect));
    }
});

fn check(args: &[OsString], inv: userns_hostnet::argv::Invocation) {
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
    if let Some(p) = &inv.problem {
        assert!(args.contains(&p.arg), "refused {:?} is not an argument", p.arg);
        assert!(!p.shown_arg().contains('\n') && !p.reason.contains('\n'));
    }
}
