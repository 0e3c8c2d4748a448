//! containerd's CRI runtime handlers: config versions 2 (containerd 1.x),
//! 3 (2.0 to 2.2) and 4 (2.3, whose `containerd config default` writes
//! `version = 4`; the CRI runtime plugin's tables are those of version 3).

pub mod doctor;
pub mod live;
pub mod node;
pub mod plan;
pub mod serving;

use super::config::{bare_copy, dig, leaf_keys, Derived, Layout};
use super::register::{edit::InstallPlan, error::InstallError, Registration};
use std::path::{Path, PathBuf};
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

/// How containerd merges an imported file into the config read so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// containerd 2.x: tables merge key by key, all the way down; a value
    /// (an array included) of a later file replaces the earlier one.
    Deep,
    /// containerd 1.x: the table of each plugin an import names replaces
    /// the one read before whole; other tables merge key by key.
    WholePlugins,
}

/// The config containerd reads: `main` with `imports` (in the order
/// containerd processes them: the list's order, each glob expanded and
/// sorted) merged in. `version` and `imports` stay the main file's.
pub fn merged(main: &DocumentMut, imports: &[DocumentMut], how: Merge) -> DocumentMut {
    let mut out = main.clone();
    for import in imports {
        for (key, item) in import.iter() {
            if key == "version" || key == "imports" {
                continue;
            }
            match (how, key, item.as_table_like()) {
                (Merge::WholePlugins, "plugins", Some(plugins)) => {
                    let to = out
                        .entry("plugins")
                        .or_insert_with(|| Item::Table(Table::new()));
                    if let Some(to) = as_table_mut(to) {
                        for (name, plugin) in plugins.iter() {
                            to.insert(name, plugin.clone());
                        }
                    }
                }
                _ => merge_item(out.as_table_mut(), key, item),
            }
        }
    }
    out
}

/// `to`'s item, made a (non-inline) table when it is table-like.
fn as_table_mut(item: &mut Item) -> Option<&mut Table> {
    if let Some(t) = item.as_inline_table() {
        *item = Item::Table(bare_copy(t));
    }
    item.as_table_mut()
}

/// Merge `item` into `to[key]`: tables key by key, anything else replaces.
fn merge_item(to: &mut Table, key: &str, item: &Item) {
    match (to.get_mut(key), item.as_table_like()) {
        (Some(existing), Some(from)) if existing.is_table_like() => {
            if let Some(t) = as_table_mut(existing) {
                for (k, v) in from.iter() {
                    merge_item(t, k, v);
                }
            }
        }
        _ => {
            to.insert(key, item.clone());
        }
    }
}

/// The handler `default_runtime_name` names, when it names one the
/// document does not define. containerd's built-in `runc` handler is
/// defined whether or not a file defines it.
pub fn missing_default(layout: &Layout, doc: &DocumentMut) -> Option<String> {
    let (table, key) = layout.default.as_ref()?;
    let name = dig(doc.as_item(), table)
        .and_then(|c| dig(c, &[key]))
        .and_then(Item::as_str)?;
    let defined = dig(doc.as_item(), &layout.runtimes).and_then(|all| dig(all, &[name]));
    (defined.is_none() && name != "runc").then(|| name.to_owned())
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
        .push("options.BinaryName names the wrapper".into());
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

/// containerd, as the commands ask it.
pub struct Containerd;

impl super::DaemonModule for Containerd {
    fn name(&self) -> &'static str {
        "containerd"
    }

    fn plan(&self, args: &Registration, install: bool) -> Result<InstallPlan, InstallError> {
        plan::plan(args, install)
    }

    fn containers_running(
        &self,
        root: &Path,
        files: &dyn super::live::Files,
        runs: &dyn Fn(&str) -> bool,
    ) -> Vec<(String, Option<&'static str>)> {
        let state = userns_hostnet::sys::toml::read(&super::node::under(root, node::CONFIG))
            .map(|doc| live::state_dir(&doc))
            .unwrap_or_else(|_| live::DEFAULT_STATE.to_owned());
        live::live_tasks(files, Path::new(&state), runs)
            .into_iter()
            .map(|c| (format!("containerd container {c} runs the wrapper"), None))
            .collect()
    }

    fn matrix(&self) -> bool {
        true
    }

    fn release(&self, version_line: &str) -> Option<String> {
        crate::matrix::parse_containerd_version(version_line)
            .map(|(a, b, c)| format!("{a}.{b}.{c}"))
    }

    fn layouts(&self) -> Vec<Layout> {
        [2, 3].iter().filter_map(|v| layout(*v)).collect()
    }

    fn in_use(
        &self,
        args: &Registration,
        removed: &[Item],
        links: Vec<String>,
    ) -> Result<Option<Box<dyn super::live::Handler>>, InstallError> {
        let mut binaries = links;
        for h in removed {
            let b = self
                .layouts()
                .iter()
                .find_map(|l| super::config::binary_of(l, h).map(str::to_owned));
            binaries.extend(b);
        }
        binaries.sort();
        binaries.dedup();
        Ok(Some(Box::new(plan::containerd_handler(args, binaries)?)))
    }
    fn doctor(
        &self,
        n: &super::DoctorNode,
        bin: Option<&super::binary::Binary>,
    ) -> Vec<crate::check::Check> {
        doctor::containerd(n, bin)
    }

    fn config_files(&self, root: &Path) -> Vec<PathBuf> {
        node::read_files(root)
    }

    fn config_check(&self) -> Option<super::ConfigCheck> {
        Some(super::ConfigCheck {
            name: "containerd.config",
            verb: "config dump",
            commands: &["config", "publish", "oci-hook", "help", "h"],
            needs: "runtime",
            drop_ins: None,
            stages_imports: true,
            other_missing: "containers of those handlers fail to start",
            packaged: "",
        })
    }

    fn missing_at_start(
        &self,
        effective: &DocumentMut,
        _search_path: &str,
        map: &dyn Fn(&Path) -> PathBuf,
    ) -> Vec<super::binary::Missing> {
        serving::missing(effective, map)
    }

    fn reads_less(&self, own: &DocumentMut, dumped: &DocumentMut) -> Option<(i64, i64)> {
        let (theirs, read) = (version(own), version(dumped));
        (theirs > read).then_some((theirs, read))
    }

    fn service(&self) -> Option<super::Service> {
        Some(super::Service {
            config: node::CONFIG,
            socket: node::SOCKET,
            unit: "containerd.service",
            drop_ins: None,
        })
    }
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

    const MAIN_V3: &str = "version = 3\nimports = ['/etc/containerd/conf.d/*.toml']\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\ndefault_runtime_name = 'site'\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\nruntime_type = 'io.containerd.runc.v2'\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\nSystemdCgroup = false\n";
    const SITE_V3: &str = "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.site]\nruntime_type = 'io.containerd.runc.v2'\nsnapshotter = 'native'\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.site.options]\nBinaryName = '/opt/x/runc-custom'\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\nSystemdCgroup = true\n";

    #[test]
    fn the_default_handler_is_found_in_an_import() {
        let main: DocumentMut = MAIN_V3.parse().unwrap();
        let l = layout(3).unwrap();
        // Alone, the main config names a default it does not define.
        assert_eq!(missing_default(&l, &main).as_deref(), Some("site"));
        let site: DocumentMut = SITE_V3.parse().unwrap();
        let all = merged(&main, &[site], Merge::Deep);
        assert_eq!(missing_default(&l, &all), None);
        let (name, h) = source(&l, &all).unwrap();
        assert_eq!(name, "site");
        assert_eq!(
            dig(h, BINARY).and_then(Item::as_str),
            Some("/opt/x/runc-custom")
        );
        assert_eq!(
            dig(h, &["snapshotter"]).and_then(Item::as_str),
            Some("native")
        );
        // containerd 2.x merges deep: runc keeps its runtime_type and
        // takes the import's SystemdCgroup.
        let runc = handler_of(&l, &all, "runc");
        assert_eq!(
            dig(runc, &["runtime_type"]).and_then(Item::as_str),
            Some(RUNC_SHIM)
        );
        assert_eq!(
            dig(runc, &["options", "SystemdCgroup"]).and_then(Item::as_bool),
            Some(true)
        );
        assert_eq!(all.get("version").and_then(Item::as_integer), Some(3));
    }

    fn handler_of<'a>(l: &Layout, doc: &'a DocumentMut, name: &str) -> &'a Item {
        dig(doc.as_item(), &l.runtimes)
            .and_then(|a| dig(a, &[name]))
            .unwrap()
    }

    #[test]
    fn containerd_1x_imports_replace_a_plugin_table_whole() {
        let main: DocumentMut = "version = 2\n[plugins.'io.containerd.grpc.v1.cri']\nsandbox_image = 'p'\n[plugins.'io.containerd.grpc.v1.cri'.containerd.runtimes.runc]\nruntime_type = 'io.containerd.runc.v2'\n[debug]\nlevel = 'info'\n".parse().unwrap();
        let import: DocumentMut = "[plugins.'io.containerd.grpc.v1.cri'.containerd.runtimes.runc.options]\nBinaryName = '/opt/runc'\n[debug]\naddress = '/d'\n".parse().unwrap();
        let all = merged(&main, &[import], Merge::WholePlugins);
        let l = layout(2).unwrap();
        let runc = handler_of(&l, &all, "runc");
        assert!(dig(runc, &["runtime_type"]).is_none());
        assert!(dig(
            all.as_item(),
            &["plugins", "io.containerd.grpc.v1.cri", "sandbox_image"]
        )
        .is_none());
        assert_eq!(
            dig(all.as_item(), &["debug", "level"]).and_then(Item::as_str),
            Some("info")
        );
        assert_eq!(
            dig(all.as_item(), &["debug", "address"]).and_then(Item::as_str),
            Some("/d")
        );
    }

    #[test]
    fn a_default_named_nowhere_is_missing_but_runc_is_built_in() {
        let l = layout(3).unwrap();
        let doc: DocumentMut = "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\ndefault_runtime_name = 'runc'\n".parse().unwrap();
        assert_eq!(missing_default(&l, &doc), None);
        let doc: DocumentMut = "version = 3\n".parse().unwrap();
        assert_eq!(missing_default(&l, &doc), None);
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
        assert!(crate::daemon::node::glob_covers(
            "/etc/containerd/conf.d/*.toml",
            "/etc/containerd/conf.d/99-userns-hostnet.toml"
        ));
        assert!(!crate::daemon::node::glob_covers(
            "/etc/containerd/*.toml",
            "/etc/containerd/conf.d/99-userns-hostnet.toml"
        ));
        assert!(crate::daemon::node::glob_covers(
            "/etc/containerd/conf.d/99-*",
            "/etc/containerd/conf.d/99-userns-hostnet.toml"
        ));
        assert!(!crate::daemon::node::glob_covers(
            "/etc/containerd/conf.d/*.conf",
            "/etc/containerd/conf.d/99-userns-hostnet.toml"
        ));
        assert!(crate::daemon::node::glob_covers("/a/b.toml", "/a/b.toml"));
    }
}
