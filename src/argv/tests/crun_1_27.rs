//! The options crun 1.27.1 reads that crun 1.8 lacks.

use super::*;

/// crun 1.27.1 reads a few options crun 1.8 lacks: the global
/// `--log-level` (crun 1.17), `run --keep`, and restore's `--tcp-close`,
/// `--network-lock`, `--lsm-profile VALUE` and `--lsm-mount-context VALUE`.
/// The crun dialect reads them as crun 1.27.1 does (crun 1.8 refuses them
/// itself); an abbreviation that has become ambiguous is refused; runc
/// 1.5.3 has none of them.
#[test]
fn crun_1_27_options_are_read_as_it_reads_them() {
    let b = Some("/b");
    let cases: [(&str, [Want; 3]); 6] = [
        (
            "--log-level warning --root /r run --keep --bundle /b id",
            [
                Refuses("--log-level", "not a global option of runc"),
                Reads(b, None, Some("/r"), "id"),
                Refuses("--log-level", NEITHER),
            ],
        ),
        (
            "--log-level=debug create --bundle /b id",
            [
                Refuses("--log-level=debug", "not a global option of runc"),
                Reads(b, None, None, "id"),
                Refuses("--log-level=debug", NEITHER),
            ],
        ),
        // `--log-` stands for --log-format or --log-level.
        (
            "--log- json create --bundle /b id",
            [
                Refuses("--log-", "runc"),
                Refuses(
                    "--log-",
                    "an abbreviation of more than one global option of crun",
                ),
                Refuses("--log-", "runc"),
            ],
        ),
        (
            "run --kee -b /b id",
            [
                Refuses("--kee", R),
                Reads(b, None, None, "id"),
                Refuses("--kee", NEITHER),
            ],
        ),
        (
            "restore --lsm-profile selinux:x --network-lock --tcp-close --bundle /b id",
            [
                Refuses("--network-lock", R),
                Reads(b, None, None, "id"),
                Refuses("--network-lock", NEITHER),
            ],
        ),
        // The value of --lsm-mount-context (runc's too) is not the bundle.
        (
            "restore --lsm-mount-context --bundle id",
            [
                Reads(None, None, None, "id"),
                Reads(None, None, None, "id"),
                Reads(None, None, None, "id"),
            ],
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .flat_map(|(line, wants)| {
            DIALECTS
                .iter()
                .zip(wants)
                .filter_map(|(&d, &w)| check(line, d, w))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
