//! What the admin tool's tests share: the tool cargo builds for them, the
//! wrapper beside it, and the daemons scripts/cri-tools.sh unpacks.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

// install and uninstall as the tests run them: the root crate's tests run
// the same tool the same way, so both read the one file.
#[path = "../../../../tests/common/install.rs"]
pub mod install;

/// The admin tool (`userns-hostnet`), which cargo builds for this crate's
/// tests.
pub const TOOL: &str = env!("CARGO_BIN_EXE_userns-hostnet");

/// The wrapper, which the root crate builds into the tool's directory: the
/// tests that run it or name it to install need `cargo build` first (`make
/// bins`); they fail saying so when it is missing.
pub fn wrapper() -> &'static str {
    static WRAPPER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    WRAPPER.get_or_init(|| {
        let p = Path::new(TOOL).with_file_name("userns-hostnet-runtime");
        assert!(
            p.is_file(),
            "{} is missing: run `cargo build --features test-hooks` (make bins) first",
            p.display()
        );
        p.to_str().expect("a UTF-8 path").to_owned()
    })
}

/// The workspace's target/, where scripts/cri-tools.sh unpacks the daemons.
pub fn tools_target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target")
}
