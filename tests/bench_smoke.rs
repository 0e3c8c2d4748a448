//! The benchmarks still run: `bench/run.sh --quick` measures each figure
//! once (no timing is asserted) and prints the README's table.

use std::process::Command;

#[test]
fn bench_script_runs_in_quick_mode() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{root}/bench/run.sh"))
        .arg("--quick")
        .env("WRAPPER", env!("CARGO_BIN_EXE_userns-hostnet-runtime"))
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
        "create + delete",
        "engine, 5 MB",
        "peak RSS",
    ] {
        assert!(stdout.contains(row), "no `{row}` row:\n{stdout}");
    }
}
