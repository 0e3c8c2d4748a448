//! containerd's CRI runtime handlers: config versions 2 (containerd 1.x),
//! 3 (2.0 to 2.2) and 4 (2.3, whose `containerd config default` writes
//! `version = 4`; the CRI runtime plugin's tables are those of version 3).

use super::{bare_copy, dig, leaf_keys, Derived, Layout};
use toml_edit::{value, DocumentMut, Item, Table};

/// containerd's runc shim, which runs the runtime named by `BinaryName`.
pub const RUNC_SHIM: &str = "io.containerd.runc.v2";
/// Within a handler, the runtime binary the runc shim runs.
pub const BINARY: &[&str] = &["options", "BinaryName"];
/// The newest config version whose layout install knows.
pub const NEWEST_VERSION: i64 = 4;

/// The config file's `version`: 1 when absent, as containerd reads it.
pub fn version(doc: &DocumentMut) -> i64 {
    doc.get("version").and_then(Item::as_integer).unwrap_or(1)
}

/// The keys of the CRI runtime handlers table for a config version.
pub fn runtimes_path(version: i64) -> Option<[&'static str; 4]> {
    let plugin = match version {
        1 => "cri",
        2 => "io.containerd.grpc.v1.cri",
        3 | 4 => "io.containerd.cri.v1.runtime",
        _ => return None,
    };
    Some(["plugins", plugin, "containerd", "runtimes"])
}

/// The handlers of a config of `version` (2 and later).
pub fn layout(version: i64) -> Option<Layout> {
    let runtimes = runtimes_path(version).filter(|_| version >= 2)?;
    Some(Layout {
        runtimes: runtimes.to_vec(),
        binary: BINARY,
        default: Some((runtimes[..3].to_vec(), "default_runtime_name")),
    })
}

/// The handler a new one is derived from: the default runtime handler
/// when it is a runc shim handler, else the one named `runc`.
pub fn source<'a>(layout: &Layout, doc: &'a DocumentMut) -> Option<(String, &'a Item)> {
    let all = dig(doc.as_item(), &layout.runtimes)?;
    let default = layout
        .default
        .as_ref()
        .and_then(|(t, k)| dig(doc.as_item(), t).and_then(|c| dig(c, &[k])))
        .and_then(Item::as_str);
    let is_shim = |h: &Item| dig(h, &["runtime_type"]).and_then(Item::as_str) == Some(RUNC_SHIM);
    default.into_iter().chain(["runc"]).find_map(|name| {
        let h = dig(all, &[name])?;
        is_shim(h).then(|| (name.to_owned(), h))
    })
}

/// The new handler: every setting of `source` (base_runtime_spec,
/// snapshotter, cni_conf_dir, the annotations, privileged_without_host_devices,
/// runtime_path, every option...), the runc shim, and `options.BinaryName`
/// naming `binary`. Nothing of the shim's table is left out: the runc
/// shim passes each of them to the runtime it runs, and the wrapper passes
/// them on to the real one.
pub fn derive(source: Option<&Item>, binary: &str) -> Derived {
    let mut d = Derived::default();
    let mut h = match source.and_then(Item::as_table_like) {
        Some(t) => bare_copy(t),
        None => Table::new(),
    };
    if let Some(s) = source {
        leaf_keys(s, "", &mut d.carried);
    }
    d.carried
        .retain(|k| k != "options.BinaryName" && k != "runtime_type");
    if h.get("runtime_type").and_then(Item::as_str) != Some(RUNC_SHIM) {
        h.insert("runtime_type", value(RUNC_SHIM));
    }
    let options = h
        .entry("options")
        .or_insert_with(|| Item::Table(Table::new()));
    if !options.is_table() {
        *options = Item::Table(Table::new());
    }
    if let Some(o) = options.as_table_mut() {
        o.insert("BinaryName", value(binary));
    }
    d.changed
        .push("options.BinaryName: the wrapper (its real runtime: the source's)".into());
    d.table = h;
    d
}

/// The CRI plugin a config's `disabled_plugins` turns off (Docker's
/// containerd config has `disabled_plugins = ["cri"]`).
pub fn cri_disabled(doc: &DocumentMut) -> Option<String> {
    const CRI: [&str; 4] = [
        "cri",
        "io.containerd.grpc.v1.cri",
        "io.containerd.cri.v1.runtime",
        "io.containerd.cri.v1.images",
    ];
    doc.get("disabled_plugins")?
        .as_array()?
        .iter()
        .filter_map(|v| v.as_str())
        .find(|p| CRI.contains(p))
        .map(str::to_owned)
}

/// Does `pattern`, an `imports` entry as containerd expands it (Go's
/// filepath.Glob: `*` and `?` never cross a `/`), name `path`?
pub fn import_covers(pattern: &str, path: &str) -> bool {
    let opts = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    glob::Pattern::new(pattern).is_ok_and(|p| p.matches_with(path, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2: &str = r#"version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    base_runtime_spec = "/etc/containerd/base.json"
    snapshotter = "stargz"
    cni_conf_dir = "/etc/cni/other"
    pod_annotations = ["io.site/*"]
    container_annotations = ["io.site.c/*"]
    privileged_without_host_devices = true
    # the site's runc
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      BinaryName = "/opt/runc/runc"
      SystemdCgroup = true
      Root = "/run/site-runc"
"#;

    #[test]
    fn every_setting_of_the_source_is_carried() {
        let doc: DocumentMut = V2.parse().unwrap();
        let l = layout(2).unwrap();
        let (name, src) = source(&l, &doc).unwrap();
        assert_eq!(name, "runc");
        let d = derive(Some(src), "/h/userns-hostnet-runtime");
        let mut out = DocumentMut::new();
        out.insert("h", Item::Table(d.table));
        let got: ::toml::Value = ::toml::from_str(&out.to_string()).unwrap();
        let want: ::toml::Value = ::toml::from_str(
            r#"[h]
runtime_type = "io.containerd.runc.v2"
base_runtime_spec = "/etc/containerd/base.json"
snapshotter = "stargz"
cni_conf_dir = "/etc/cni/other"
pod_annotations = ["io.site/*"]
container_annotations = ["io.site.c/*"]
privileged_without_host_devices = true
[h.options]
BinaryName = "/h/userns-hostnet-runtime"
SystemdCgroup = true
Root = "/run/site-runc"
"#,
        )
        .unwrap();
        assert_eq!(got, want);
        assert!(
            d.carried.contains(&"base_runtime_spec".to_owned()),
            "{:?}",
            d.carried
        );
        assert!(d.carried.contains(&"options.Root".to_owned()));
        assert!(!d.carried.contains(&"options.BinaryName".to_owned()));
        assert!(d.dropped.is_empty());
        // The source's comment does not travel.
        assert!(!out.to_string().contains("site's"), "{out}");
    }

    #[test]
    fn versions_3_and_4_share_the_runtime_plugin() {
        assert_eq!(runtimes_path(3), runtimes_path(4));
        assert_eq!(runtimes_path(5), None);
        assert!(layout(1).is_none());
        let doc: DocumentMut = "version = 4\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\ndefault_runtime_name = 'crun'\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.crun]\nruntime_type = 'io.containerd.runc.v2'\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\nruntime_type = 'io.containerd.runc.v2'\n"
            .parse()
            .unwrap();
        let (name, _) = source(&layout(version(&doc)).unwrap(), &doc).unwrap();
        assert_eq!(name, "crun");
    }

    #[test]
    fn no_source_is_a_bare_runc_shim_handler() {
        let d = derive(None, "/usr/bin/userns-hostnet-runtime");
        let mut out = DocumentMut::new();
        out.insert("h", Item::Table(d.table));
        assert_eq!(
            out.to_string(),
            "[h]\nruntime_type = \"io.containerd.runc.v2\"\n\n[h.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n"
        );
    }

    #[test]
    fn imports_globs_match_as_go_does() {
        assert!(import_covers(
            "/etc/containerd/conf.d/*.toml",
            "/etc/containerd/conf.d/99-userns-hostnet.toml"
        ));
        assert!(!import_covers(
            "/etc/containerd/*.toml",
            "/etc/containerd/conf.d/99-userns-hostnet.toml"
        ));
        assert!(import_covers(
            "/etc/containerd/conf.d/99-*",
            "/etc/containerd/conf.d/99-userns-hostnet.toml"
        ));
        assert!(!import_covers(
            "/etc/containerd/conf.d/*.conf",
            "/etc/containerd/conf.d/99-userns-hostnet.toml"
        ));
        assert!(import_covers("/a/b.toml", "/a/b.toml"));
    }
}
