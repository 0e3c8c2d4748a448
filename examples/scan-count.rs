//! The scanner on one file, for an instruction count per byte: the count
//! of a run with N scans less that of a run with none, over N times the
//! file's size.
//!
//!     cargo run --release --example engine-rss -- gen SIZE > FILE
//!     valgrind --tool=callgrind target/release/examples/scan-count FILE 0
//!     valgrind --tool=callgrind target/release/examples/scan-count FILE N
//!
//! It scans FILE as a spec N times (1 if not given) and says on stderr
//! whether it was accepted.

use std::hint::black_box;
use userns_hostnet::engine::strict::scan::scan;
use userns_hostnet::engine::strict::spans::SPEC;
use userns_hostnet::engine::strict::Document;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, times) = match &args[..] {
        [path] => (path, Ok(1)),
        [path, n] => (path, n.parse::<usize>()),
        _ => fail("usage: scan-count FILE [N]"),
    };
    let times = times.unwrap_or_else(|e| fail(&format!("N: {e}")));
    let bytes = std::fs::read(path).unwrap_or_else(|e| fail(&format!("{path}: {e}")));
    let mut accepted = true;
    for _ in 0..times {
        accepted &= black_box(scan(black_box(&bytes), Document::Spec, SPEC)).is_some();
    }
    eprintln!(
        "{path}: {} bytes, scanned {times} times, accepted: {accepted}",
        bytes.len()
    );
    std::process::exit(if accepted { 0 } else { 1 });
}

fn fail(message: &str) -> ! {
    eprintln!("scan-count: {message}");
    std::process::exit(2)
}
