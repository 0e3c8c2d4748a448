//! The benchmarks still run: `bench/run.sh --quick` measures each figure
//! once (no timing is asserted) and prints docs/performance.md's table. It creates
//! real containers: without root, runc, jq, busybox or GNU time the test
//! fails, naming what is missing; it never skips.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn bench_script_runs_in_quick_mode() {
    common::require_prerequisites(common::Runtime::Runc);
    assert!(
        common::find_in_path("jq").is_some(),
        "`jq` is missing: install the Debian package jq"
    );
    assert!(
        Path::new("/usr/bin/time").is_file(),
        "/usr/bin/time is missing: install the Debian package time"
    );
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{root}/bench/run.sh"))
        .arg("--quick")
        .env("WRAPPER", env!("CARGO_BIN_EXE_userns-hostnet-runtime"))
        // The script's `cargo test --bench engine` and `cargo build
        // --example engine-rss` (the engine crate's) build with this
        // build's features, so that they share it rather than compile the
        // workspace again.
        .env(
            "CARGO_FEATURES",
            if cfg!(feature = "test-hooks") {
                "test-hooks"
            } else {
                ""
            },
        )
        .output()
        .expect("run bench/run.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench/run.sh --quick failed\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("| measurement | result | target |"),
        "{stdout}"
    );
    for row in [
        "pass-through",
        "exec, container not converted",
        "start, container not converted",
        "create + delete",
        "engine, 5 MB",
        "peak RSS",
        "peak RSS of the wrapper, create of the 5 MB config",
    ] {
        assert!(stdout.contains(row), "no `{row}` row:\n{stdout}");
    }
}

/// `bench/load.sh --quick`: one and two converting creates at once, through
/// the wrapper and through runc alone, and the wrapper's CPU per create
/// beside two C execv wrappers' (gcc's default build, and static with
/// musl); the script itself fails when a container
/// fails or leaves a container, a record or a mount behind.
#[test]
fn load_script_runs_in_quick_mode() {
    common::require_prerequisites(common::Runtime::Runc);
    assert!(
        common::find_in_path("gcc").is_some(),
        "`gcc` is missing: install the Debian package gcc"
    );
    assert!(
        common::find_in_path("musl-gcc").is_some(),
        "`musl-gcc` is missing: install the Debian package musl-tools"
    );
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{root}/bench/load.sh"))
        .arg("--quick")
        .env("WRAPPER", env!("CARGO_BIN_EXE_userns-hostnet-runtime"))
        .output()
        .expect("run bench/load.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench/load.sh --quick failed\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for row in [
        "| 1 at once: create, start, delete",
        "| 2 at once: create, start, delete",
        "| CPU of one converting create, 5 runs: the wrapper's own / a C execv wrapper's own (gcc, dynamic)",
        "| CPU of one converting create, 5 runs: the wrapper's own / a C execv wrapper's own (musl, static)",
    ] {
        assert!(stdout.contains(row), "no `{row}` row:\n{stdout}");
    }
}
