//! OCI hook definition files (CRI-O's and podman's hooks directories):
//! the createRuntime hook install writes, with its marker in a `comment`
//! member (JSON has no comments; CRI-O and podman ignore unknown members),
//! and the checks of the program path it names.

use super::config::{marker_hex, owner_by_marker, Owner};
use std::path::Path;
use userns_hostnet::hash::fnv1a;

/// The createRuntime hook definition the package ships inert.
pub const SHIPPED: &str = include_str!("../../../../hooks.d/userns-hostnet.json");
/// The name install gives it in a hooks directory: the name the package
/// ships, so that a definition under /etc masks one under /usr/share
/// instead of running the hook twice.
pub const FILE: &str = "userns-hostnet.json";
/// The administrator's hooks directory, which masks the vendor one.
pub const ADMIN_DIR: &str = "/etc/containers/oci/hooks.d";
/// The vendor's hooks directory, CRI-O's only one by default.
pub const VENDOR_DIR: &str = "/usr/share/containers/oci/hooks.d";

/// The CRI-O drop-in that makes CRI-O read the administrator's hooks
/// directory besides the vendor's (CRI-O's default reads the vendor's
/// alone); the later directory's file wins over a same-named one.
pub fn crio_hooks_drop_in() -> String {
    format!(
        "# Written by `userns-hostnet install crio --hook`, removed by `userns-hostnet uninstall crio --hook`\n# while unchanged: CRI-O reads the administrator's hooks directory too.\n[crio.runtime]\nhooks_dir = [\n    \"{VENDOR_DIR}\",\n    \"{ADMIN_DIR}\",\n]\n"
    )
}

/// The start of the `comment` member of a definition install wrote.
const MARK: &str = "Added by `userns-hostnet install` (fingerprint ";

/// A JSON value with every object's members in name order, so that a
/// fingerprint does not depend on their layout.
fn sorted_json(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            serde_json::Value::Object(
                keys.into_iter()
                    .filter_map(|k| Some((k.clone(), sorted_json(m.get(k)?))))
                    .collect(),
            )
        }
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.iter().map(sorted_json).collect())
        }
        other => other.clone(),
    }
}

/// The fingerprint of a hook definition, its `comment` aside.
fn fingerprint(def: &serde_json::Value) -> u64 {
    let mut def = def.clone();
    if let Some(m) = def.as_object_mut() {
        m.remove("comment");
    }
    fnv1a(sorted_json(&def).to_string().as_bytes())
}

/// The shipped definition, run by `tool`, with the install marker.
pub fn definition(tool: &str, daemon: &str) -> Result<String, serde_json::Error> {
    let mut def: serde_json::Value = serde_json::from_str(SHIPPED)?;
    if let Some(hook) = def.get_mut("hook").and_then(|h| h.as_object_mut()) {
        hook.insert("path".into(), serde_json::Value::from(tool));
    }
    let fp = fingerprint(&def);
    let mut out = serde_json::Map::new();
    out.insert(
        "comment".into(),
        serde_json::Value::from(format!(
            "{MARK}{fp:016x}): `userns-hostnet uninstall {daemon} --hook` removes this file while unchanged"
        )),
    );
    if let Some(m) = def.as_object() {
        out.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    Ok(serde_json::to_string_pretty(&serde_json::Value::Object(out))? + "\n")
}

/// Who a hook definition file belongs to.
pub fn owner(text: &str) -> Owner {
    let Ok(def) = serde_json::from_str::<serde_json::Value>(text) else {
        return Owner::Operator;
    };
    let marked = def
        .get("comment")
        .and_then(|c| c.as_str())
        .and_then(|c| c.strip_prefix(MARK))
        .and_then(marker_hex);
    owner_by_marker(marked, || fingerprint(&def))
}

/// Why `tool` (the program a hook definition would run, `uid` its
/// owner's) is no path to write into one: a temporary or build path, gone
/// once the build is, or a program others than root could change, which
/// would then run as root for every container.
pub fn unfit_tool(tool: &Path, uid: Option<u32>) -> Option<String> {
    let text = tool.to_string_lossy();
    if text.starts_with("/tmp/") || text.starts_with("/var/tmp/") || text.starts_with("/dev/shm/") {
        return Some("a temporary path".into());
    }
    if tool.components().any(|c| c.as_os_str() == "target")
        && tool
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "debug" || n == "release" || n == "deps")
    {
        return Some("a cargo build directory".into());
    }
    match uid {
        Some(0) => None,
        Some(u) => Some(format!("owned by uid {u}, not root")),
        None => Some("not there".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_is_checked() {
        let def = definition("/usr/bin/userns-hostnet", "crio").unwrap();
        assert_eq!(owner(&def), Owner::Install, "{def}");
        let v: serde_json::Value = serde_json::from_str(&def).unwrap();
        assert_eq!(v["hook"]["path"], "/usr/bin/userns-hostnet");
        assert_eq!(v["stages"][0], "createRuntime");
        let compact = serde_json::to_string(&v).unwrap();
        assert_eq!(owner(&compact), Owner::Install);
        assert_eq!(
            owner(&def.replace("\"timeout\": 10", "\"timeout\": 30")),
            Owner::Changed
        );
        assert_eq!(owner(SHIPPED), Owner::Operator);
        assert_eq!(owner("not json"), Owner::Operator);
    }

    #[test]
    fn build_and_temporary_paths_are_unfit() {
        let p = |s: &str| PathBuf::from(s);
        use std::path::PathBuf;
        assert_eq!(unfit_tool(&p("/usr/bin/userns-hostnet"), Some(0)), None);
        assert_eq!(
            unfit_tool(&p("/usr/local/bin/userns-hostnet"), Some(0)),
            None
        );
        assert!(unfit_tool(&p("/tmp/x/userns-hostnet"), Some(0)).is_some());
        assert_eq!(
            unfit_tool(&p("/src/uhn/target/debug/userns-hostnet"), Some(0)).as_deref(),
            Some("a cargo build directory")
        );
        assert!(unfit_tool(
            &p("/src/uhn/target/x86_64-unknown-linux-gnu/release/userns-hostnet"),
            Some(0)
        )
        .is_some());
        assert_eq!(
            unfit_tool(&p("/home/a/bin/userns-hostnet"), Some(1000)).as_deref(),
            Some("owned by uid 1000, not root")
        );
    }
}
