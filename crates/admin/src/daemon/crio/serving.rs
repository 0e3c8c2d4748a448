//! How CRI-O is asked what it would load: its handlers whose runtime or
//! monitor is missing, over its files merged as it merges them.

use crate::daemon::binary::{binary_missing, str_at, Missing};
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item};

/// CRI-O's runtime handlers of an effective config (`crio config`
/// output, or the files merged), checked as CRI-O does on start: an
/// `oci` handler's monitor (`monitor_path`, or the deprecated
/// `[crio.runtime] conmon`, else `conmon` in PATH) must be there or CRI-O
/// exits; a runtime (`runtime_path`, else the handler's name in PATH)
/// that is not there stops CRI-O for the default handler and drops any
/// other.
pub fn missing(
    doc: &DocumentMut,
    search_path: &str,
    map: &dyn Fn(&Path) -> PathBuf,
) -> Vec<Missing> {
    let runtime = crate::daemon::config::dig(doc.as_item(), &["crio", "runtime"])
        .and_then(Item::as_table_like);
    let Some(runtime) = runtime else {
        return Vec::new();
    };
    let default = str_at(runtime, "default_runtime")
        .filter(|d| !d.is_empty())
        .unwrap_or("crun");
    let conmon = str_at(runtime, "conmon").filter(|c| !c.is_empty());
    let Some(handlers) = runtime.get("runtimes").and_then(Item::as_table_like) else {
        return Vec::new();
    };
    let default_path = handlers
        .get(default)
        .and_then(Item::as_table_like)
        .and_then(|h| str_at(h, "runtime_path"))
        .unwrap_or("");
    let mut out = Vec::new();
    for (name, h) in handlers.iter() {
        let Some(h) = h.as_table_like() else { continue };
        let inherit = h.get("inherit_default_runtime").and_then(Item::as_bool) == Some(true);
        let runtime_path = if inherit {
            default_path
        } else {
            str_at(h, "runtime_path").unwrap_or("")
        };
        let lookup = if inherit { default } else { name };
        // CRI-O's built-in handlers (crun, with no runtime_path) are
        // dropped without a word when their runtime is missing: only the
        // default's lookup matters.
        let checked = !runtime_path.is_empty() || name == default;
        if let Some(m) = checked
            .then(|| binary_missing(name, "runtime_path", runtime_path, lookup, search_path, map))
            .flatten()
        {
            out.push(Missing {
                fatal: name == default,
                ..m
            });
        }
        let kind = str_at(h, "runtime_type").unwrap_or("");
        if kind.is_empty() || kind == "oci" {
            let monitor = conmon.unwrap_or(str_at(h, "monitor_path").unwrap_or(""));
            if let Some(m) =
                binary_missing(name, "monitor_path", monitor, "conmon", search_path, map)
            {
                out.push(Missing { fatal: true, ..m });
            }
        }
    }
    out
}

/// CRI-O's config files merged key by key, handler by handler, in the
/// order CRI-O reads them: the effective config when no crio binary can
/// print it.
pub fn merge(docs: &[DocumentMut]) -> DocumentMut {
    let mut out = DocumentMut::new();
    for doc in docs {
        merge_into(out.as_table_mut(), doc.as_table());
    }
    out
}

fn merge_into(to: &mut toml_edit::Table, from: &toml_edit::Table) {
    for (k, v) in from.iter() {
        match (to.get_mut(k), v.as_table_like()) {
            (Some(existing), Some(src)) if existing.is_table_like() => {
                let mut sub = toml_edit::Table::new();
                for (kk, vv) in src.iter() {
                    sub.insert(kk, vv.clone());
                }
                if let Some(t) = existing.as_table_mut() {
                    merge_into(t, &sub);
                } else if let Some(t) = existing.as_inline_table_mut() {
                    let mut dst = t.clone().into_table();
                    merge_into(&mut dst, &sub);
                    *existing = Item::Table(dst);
                }
            }
            _ => {
                to.insert(k, v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use toml_edit::DocumentMut;

    fn no_file(_: &Path) -> PathBuf {
        PathBuf::from("/nonexistent-for-the-test")
    }

    #[test]
    fn crio_handlers_missing_their_monitor_or_runtime() {
        let doc: DocumentMut = "[crio.runtime]\ndefault_runtime = \"runc\"\n\
[crio.runtime.runtimes.runc]\nruntime_path = \"/usr/bin/runc\"\nmonitor_path = \"/usr/libexec/crio/conmon\"\n\
[crio.runtime.runtimes.userns-hostnet]\nruntime_path = \"/usr/bin/userns-hostnet-runtime\"\nruntime_type = \"oci\"\n\
[crio.runtime.runtimes.kata]\nruntime_path = \"/opt/kata\"\nruntime_type = \"vm\"\n"
            .parse()
            .unwrap();
        let m = missing(&doc, "/usr/bin", &no_file);
        let said: Vec<String> = m.iter().map(Missing::sentence).collect();
        assert_eq!(
            said,
            [
                "handler runc: runtime_path /usr/bin/runc does not exist",
                "handler runc: monitor_path /usr/libexec/crio/conmon does not exist",
                "handler userns-hostnet: runtime_path /usr/bin/userns-hostnet-runtime does not exist",
                "handler userns-hostnet: monitor_path is unset and \"conmon\" is not in the daemon's PATH (/usr/bin)",
                "handler kata: runtime_path /opt/kata does not exist",
            ]
        );
        assert_eq!(
            m.iter().map(|m| m.fatal).collect::<Vec<_>>(),
            [true, true, false, true, false]
        );
    }

    #[test]
    fn crio_files_merge_key_by_key() {
        let a: DocumentMut = "[crio.runtime]\ndefault_runtime = \"runc\"\n[crio.runtime.runtimes.runc]\nruntime_path = \"/a\"\nmonitor_path = \"/m\"\n".parse().unwrap();
        let b: DocumentMut = "[crio.runtime.runtimes.runc]\nruntime_path = \"/b\"\n"
            .parse()
            .unwrap();
        let m = merge(&[a, b]);
        let runc =
            crate::daemon::config::dig(m.as_item(), &["crio", "runtime", "runtimes", "runc"])
                .unwrap();
        assert_eq!(runc["runtime_path"].as_str(), Some("/b"));
        assert_eq!(runc["monitor_path"].as_str(), Some("/m"));
        assert_eq!(
            m["crio"]["runtime"]["default_runtime"].as_str(),
            Some("runc")
        );
    }
}
