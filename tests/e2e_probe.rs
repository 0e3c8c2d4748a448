//! The rro probe against the real runtimes of the Debian packages the
//! project is tested against (runc 1.1.5, crun 1.8.1), runc 1.4.3 (unpacked
//! by scripts/cri-tools.sh) and youki: these must be installed, and the
//! tests fail when they are not. The unit tests ask stub runtimes the same
//! questions.

use std::path::Path;
use userns_hostnet::probe::{rro_support, runtime_knows_rro};
use userns_hostnet_engine::RroSupport;

const RUNC: &str = "/usr/sbin/runc";
const CRUN: &str = "/usr/bin/crun";
const RUNC_14: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/containerd-2.3/runc");

/// Where a trial container would be made: runc and crun need none.
fn trials() -> std::path::PathBuf {
    std::env::temp_dir().join("uhn-no-trial-expected")
}

#[test]
fn real_runc_lists_rro_in_features() {
    assert_eq!(
        runtime_knows_rro(Path::new(RUNC), &trials()),
        Ok("\"features\" lists rro".to_owned())
    );
}

#[test]
fn runc_1_4_lists_rro_in_features() {
    assert!(
        Path::new(RUNC_14).is_file(),
        "runc 1.4.3 is missing: run scripts/cri-tools.sh"
    );
    assert_eq!(
        runtime_knows_rro(Path::new(RUNC_14), &trials()),
        Ok("\"features\" lists rro".to_owned())
    );
}

#[test]
fn real_crun_knows_rro_by_its_version() {
    let got = runtime_knows_rro(Path::new(CRUN), &trials());
    assert!(
        got.as_ref()
            .is_ok_and(|how| how.starts_with("crun ") || how == "\"features\" lists rro"),
        "{got:?}"
    );
}

#[test]
fn real_runtimes_are_supported_and_cached() {
    let d = tempfile::tempdir().unwrap();
    for rt in [RUNC, CRUN, RUNC_14] {
        assert_eq!(rro_support(Path::new(rt), d.path()), RroSupport::Supported);
        assert_eq!(rro_support(Path::new(rt), d.path()), RroSupport::Supported);
    }
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 3);
}

/// youki 0.7.0 lists no rro in `features` yet applies it: a trial
/// container settles it, and the answer says how. Run in the tests' view of
/// /sys (bpffs and securityfs under it), as the wrapper would on a node.
#[test]
fn real_youki_lists_no_rro_and_a_trial_shows_it_applies_it() {
    let youki = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/target/youki/bin/youki"
    ));
    assert!(youki.is_file(), "youki is not built: run scripts/youki.sh");
    let d = tempfile::tempdir().unwrap();
    let got = runtime_knows_rro(&youki, d.path());
    let how = got.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        how.starts_with("\"features\" lists no rro mount option, but a trial container: all ")
            && how.ends_with(" mounts at and under /sys read-only"),
        "{how}"
    );
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "the trial left files"
    );
}
