//! The engine's peak memory, for `bench/run.sh` to measure with GNU time:
//!
//!     cargo run --release --example engine-rss -- gen SIZE > FILE
//!     /usr/bin/time -f %M target/release/examples/engine-rss convert FILE
//!
//! `gen` writes the benchmark's config of about SIZE bytes; `convert` reads
//! FILE and converts it as the wrapper does (strict reader recording
//! spans, rules, edits written into the bytes read and read back), the result going to
//! /dev/null, so the peak is the file, its converted copy and the engine.

use std::io::Write;
use userns_hostnet_engine::strict::read_spec;
use userns_hostnet_engine::{evaluate, evaluate_value, write, HostFacts, Policy, Spec};

#[path = "../benches/support/mod.rs"]
mod support;
use support::serialize_like;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["gen", size] => {
            let size = size
                .parse()
                .unwrap_or_else(|e| fail(&format!("{size}: {e}")));
            let bytes = support::config_of_size(size);
            std::io::stdout()
                .write_all(&bytes)
                .unwrap_or_else(|e| fail(&e.to_string()));
        }
        ["convert", file] => {
            let bytes = std::fs::read(file).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
            let spec = Spec::read(bytes).unwrap_or_else(|r| fail(&r.to_string()));
            let plan = evaluate(spec, &HostFacts::default(), &Policy::default())
                .unwrap_or_else(|r| fail(&r.to_string()));
            if !plan.changed() {
                fail("nothing to convert");
            }
            let out = write::write_checked(&plan.spec).unwrap_or_else(|r| fail(&r.to_string()));
            std::fs::write("/dev/null", &out).unwrap_or_else(|e| fail(&e.to_string()));
        }
        // The whole-document path (`explain`'s), for comparison.
        ["convert-whole", file] => {
            let bytes = std::fs::read(file).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
            let spec = read_spec(&bytes).unwrap_or_else(|r| fail(&r.to_string()));
            let plan = evaluate_value(&spec, &HostFacts::default(), &Policy::default())
                .unwrap_or_else(|r| fail(&r.to_string()));
            let doc = plan
                .spec
                .to_value()
                .unwrap_or_else(|r| fail(&r.to_string()));
            let out = serialize_like(&doc, &bytes);
            std::fs::write("/dev/null", &out).unwrap_or_else(|e| fail(&e.to_string()));
        }
        _ => fail("usage: engine-rss gen SIZE | engine-rss convert[-whole] FILE"),
    }
}

fn fail(why: &str) -> ! {
    eprintln!("engine-rss: {why}");
    std::process::exit(1);
}
