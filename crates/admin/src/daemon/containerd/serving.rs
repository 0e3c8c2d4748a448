//! How containerd is asked what it would load: its handlers whose runtime
//! is missing.

use crate::daemon::binary::{executable, Missing};
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item};

/// containerd's runc handlers of an effective config (`config dump`):
/// a `BinaryName` that is not there.
pub fn missing(doc: &DocumentMut, map: &dyn Fn(&Path) -> PathBuf) -> Vec<Missing> {
    let version = crate::daemon::containerd::version(doc);
    // A version 4 config keeps the runtimes where version 3 does.
    let path = crate::daemon::containerd::runtimes_path(version.min(3));
    let Some(handlers) = path
        .and_then(|p| crate::daemon::config::dig(doc.as_item(), &p))
        .and_then(Item::as_table_like)
    else {
        return Vec::new();
    };
    handlers
        .iter()
        .filter_map(|(name, h)| {
            let binary = crate::daemon::config::dig(h, &["options", "BinaryName"])?.as_str()?;
            if binary.is_empty() {
                return None;
            }
            let why = executable(&map(Path::new(binary))).err()?;
            Some(Missing {
                handler: name.to_owned(),
                role: "BinaryName",
                what: binary.to_owned(),
                why,
                fatal: false,
            })
        })
        .collect()
}
