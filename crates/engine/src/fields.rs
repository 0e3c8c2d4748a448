//! Reading the parts of a runtime spec the rules need, from the JSON document
//! itself. Shapes are checked where they are read, and a wrong shape becomes a
//! refusal naming the field, never a panic.

use super::report::Refusal;
use oci_spec::runtime::{LinuxNamespace, LinuxNamespaceType};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// One entry of `linux.namespaces`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    pub kind: LinuxNamespaceType,
    /// `Some` when the container joins an existing namespace.
    pub path: Option<String>,
}

/// `linux.namespaces`, parsed entry by entry so an error names its index.
pub fn namespaces(spec: &Value) -> Result<Vec<Namespace>, Refusal> {
    let Some(list) = spec.get("linux").and_then(|l| l.get("namespaces")) else {
        return Ok(Vec::new());
    };
    let list = match list {
        Value::Null => return Ok(Vec::new()),
        Value::Array(a) => a,
        other => return Err(Refusal::malformed("linux.namespaces", "an array", other)),
    };
    list.iter()
        .enumerate()
        .map(|(i, entry)| {
            let ns = LinuxNamespace::deserialize(entry).map_err(|e| {
                Refusal::new("spec", format!("linux.namespaces[{i}]"), e.to_string())
            })?;
            let path = ns
                .path()
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .filter(|p| !p.is_empty());
            Ok(Namespace {
                kind: ns.typ(),
                path,
            })
        })
        .collect()
}

/// A mount's destination, cleaned lexically the way runtimes resolve it
/// inside the rootfs (`/sys/`, `//sys` and `sys` are all `/sys`).
pub fn destination(index: usize, mount: &Value) -> Result<Cow<'_, str>, Refusal> {
    let Some(obj) = mount.as_object() else {
        return Err(Refusal::malformed(
            format!("mounts[{index}]"),
            "an object",
            mount,
        ));
    };
    match obj.get("destination") {
        Some(Value::String(d)) => Ok(clean_dest(d)),
        Some(other) => Err(Refusal::malformed(
            format!("mounts[{index}].destination"),
            "a string",
            other,
        )),
        None => Err(Refusal::new(
            "spec",
            format!("mounts[{index}].destination"),
            "missing",
        )),
    }
}

/// An optional string member of a mount (`type`, `source`).
pub fn mount_str<'a>(
    index: usize,
    mount: &'a Value,
    key: &str,
) -> Result<Option<&'a str>, Refusal> {
    match mount.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Refusal::malformed(
            format!("mounts[{index}].{key}"),
            "a string",
            other,
        )),
    }
}

/// Does this mount bind a path (rather than mount a file system)? A bind
/// is named by its type or by a `bind`/`rbind` option; runc and crun also
/// bind when the type is empty or `none` and a source is given.
pub fn is_bind(i: usize, m: &Value) -> Result<bool, Refusal> {
    let kind = mount_str(i, m, "type")?;
    Ok(matches!(kind, None | Some("" | "bind" | "rbind" | "none"))
        || mount_options(i, m)?
            .iter()
            .any(|o| *o == "bind" || *o == "rbind"))
}

/// A mount's `options`, all of which must be strings.
pub fn mount_options(index: usize, mount: &Value) -> Result<Vec<&str>, Refusal> {
    string_list(&format!("mounts[{index}].options"), mount.get("options"))
}

/// An optional array of strings; absent or null is empty.
pub fn string_list<'a>(field: &str, v: Option<&'a Value>) -> Result<Vec<&'a str>, Refusal> {
    let mut list = Vec::new();
    for_each_string(|| field.to_owned(), v, |s| list.push(s))?;
    Ok(list)
}

/// `each` called with every string of an optional array of strings; a
/// refusal naming the field `field` makes (only then made) for anything
/// else. Absent or null is empty.
pub fn for_each_string<'a>(
    field: impl Fn() -> String,
    v: Option<&'a Value>,
    mut each: impl FnMut(&'a str),
) -> Result<(), Refusal> {
    match v {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(a)) => {
            for (i, s) in a.iter().enumerate() {
                match s.as_str() {
                    Some(s) => each(s),
                    None => {
                        return Err(Refusal::malformed(
                            format!("{}[{i}]", field()),
                            "a string",
                            s,
                        ))
                    }
                }
            }
            Ok(())
        }
        Some(other) => Err(Refusal::malformed(field(), "an array", other)),
    }
}

/// `v` as an object, or a refusal naming `field`.
pub fn object<'a>(field: &str, v: &'a Value) -> Result<&'a Map<String, Value>, Refusal> {
    v.as_object()
        .ok_or_else(|| Refusal::malformed(field, "an object", v))
}

/// `clean_path`, without an allocation for the common, already clean path
/// (runs once per mount per rule, so it matters for large specs).
pub fn clean_dest(p: &str) -> Cow<'_, str> {
    if is_clean(p.as_bytes()) {
        Cow::Borrowed(p)
    } else {
        Cow::Owned(clean_path(p))
    }
}

/// Is `p` absolute, with no empty, `.` or `..` component and no trailing
/// slash (but the root)? One pass over the bytes: it runs for every mount.
fn is_clean(p: &[u8]) -> bool {
    let Some((b'/', rest)) = p.split_first() else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    // The length of the component being read, and how many of its bytes
    // are dots: a component of 0 bytes, or of 1 or 2 dots only, is not
    // clean.
    let (mut len, mut dots) = (0u32, 0u32);
    for &b in rest {
        if b == b'/' {
            if len == dots && len <= 2 {
                return false;
            }
            (len, dots) = (0, 0);
        } else {
            len += 1;
            dots += u32::from(b == b'.');
        }
    }
    !(len == dots && len <= 2)
}

/// Lexical path cleaning: repeated slashes, `.` and trailing slashes go,
/// `..` climbs but never above the root, and the result is absolute.
pub fn clean_path(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut out = String::with_capacity(p.len() + 1);
    for c in &parts {
        out.push('/');
        out.push_str(c);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clean_path_resolves_like_a_runtime() {
        for (raw, want) in [
            ("/sys/fs/cgroup", "/sys/fs/cgroup"),
            ("/sys/../etc", "/etc"),
            ("/.hidden/x", "/.hidden/x"),
            ("/sys", "/sys"),
            ("/sys/", "/sys"),
            ("//sys//", "/sys"),
            ("sys", "/sys"),
            ("/./sys/.", "/sys"),
            ("/sys/fs/../fs/cgroup", "/sys/fs/cgroup"),
            ("/../../sys", "/sys"),
            ("", "/"),
            ("/", "/"),
        ] {
            assert_eq!(clean_path(raw), want, "{raw:?}");
            assert_eq!(clean_dest(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn clean_dest_agrees_with_clean_path_on_every_short_path() {
        const PARTS: &[&str] = &["", ".", "..", "...", "a", ".a", "a.", "sys"];
        let mut paths = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = paths
                .iter()
                .flat_map(|p| PARTS.iter().map(move |c| format!("{p}/{c}")))
                .collect();
            paths.extend(longer);
        }
        for p in paths
            .iter()
            .flat_map(|p| [p.clone(), p[1.min(p.len())..].to_owned()])
        {
            assert_eq!(clean_dest(&p), clean_path(&p), "{p:?}");
        }
    }

    #[test]
    fn namespaces_name_the_bad_entry() {
        let spec = json!({"linux": {"namespaces": [{"type": "user"}, {"type": "bogus"}]}});
        let err = namespaces(&spec).unwrap_err();
        assert_eq!(err.field, "linux.namespaces[1]");
        let spec = json!({"linux": {"namespaces": {"type": "user"}}});
        assert_eq!(
            namespaces(&spec).unwrap_err().to_string(),
            "spec: linux.namespaces: expected an array, found an object"
        );
    }

    #[test]
    fn namespaces_read_paths() {
        let spec = json!({"linux": {"namespaces": [
            {"type": "user", "path": "/proc/1/ns/user"}, {"type": "network", "path": ""}, {"type": "mount"}
        ]}});
        let ns = namespaces(&spec).unwrap();
        assert_eq!(ns[0].path.as_deref(), Some("/proc/1/ns/user"));
        assert_eq!(ns[1].path, None, "an empty path means a new namespace");
        assert_eq!(ns[2].kind, LinuxNamespaceType::Mount);
    }

    #[test]
    fn mount_fields_are_checked() {
        let m = json!({"destination": 7});
        assert_eq!(
            destination(2, &m).unwrap_err().to_string(),
            "spec: mounts[2].destination: expected a string, found a number"
        );
        let m = json!({"destination": "/x", "options": ["ro", 1]});
        assert_eq!(
            mount_options(0, &m).unwrap_err().field,
            "mounts[0].options[1]"
        );
        assert!(destination(0, &json!("x")).is_err());
    }
}
