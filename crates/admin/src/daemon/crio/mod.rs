//! CRI-O's runtime handlers: crio.conf and the drop-ins of crio.conf.d,
//! read in that order. A handler table in a later file takes the place of
//! an earlier one of that name whole (CRI-O 1.36: a drop-in defining
//! `[crio.runtime.runtimes.runc]` with `runtime_root` alone loses the
//! main file's `monitor_path` for runc), and `default_runtime` is the last
//! one set.

pub mod doctor;
pub mod live;
pub mod node;
pub mod plan;
pub mod serving;

use super::binary::Missing;
use super::config::{bare_copy, dig, leaf_keys, Derived, Layout};
use super::register::{edit::InstallPlan, error::InstallError, Registration};
use std::path::{Path, PathBuf};
use toml_edit::{value, DocumentMut, Item, Table};

/// Where CRI-O keeps the wrapper's runtime state (`--root`): a root of
/// its own, apart from the source handler's, as the two handlers' real
/// runtimes keep different containers.
pub const RUNTIME_ROOT: &str = "/run/userns-hostnet-runtime";
pub const BINARY: &[&str] = &["runtime_path"];

pub fn layout() -> Layout {
    Layout {
        runtimes: vec!["crio", "runtime", "runtimes"],
        binary: BINARY,
        default: Some((vec!["crio", "runtime"], "default_runtime")),
    }
}

/// CRI-O's default handler when no file sets `default_runtime`: crun from
/// 1.31 on, runc before; with the version unknown, the one of the two the
/// files define when they define one only, else runc.
pub fn builtin_default(crio: Option<(u64, u64)>, files: &[(PathBuf, DocumentMut)]) -> String {
    if let Some(v) = crio {
        return if v >= (1, 31) { "crun" } else { "runc" }.to_owned();
    }
    let defined = |n: &str| {
        files
            .iter()
            .any(|(_, d)| super::config::handler(&layout(), d, n).is_some())
    };
    if defined("crun") && !defined("runc") {
        "crun".to_owned()
    } else {
        "runc".to_owned()
    }
}

/// The handler a new one is derived from, as CRI-O reads its files.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    /// Its table, from the last file that defines it; `None` when no file
    /// does (CRI-O's built-in handler of that name).
    pub table: Option<Table>,
    pub file: Option<PathBuf>,
}

impl Source {
    /// The runtime CRI-O runs for this handler: its `runtime_path`, else
    /// the handler's name, which CRI-O looks up in PATH.
    pub fn runtime(&self) -> String {
        self.table
            .as_ref()
            .and_then(|t| t.get("runtime_path"))
            .and_then(Item::as_str)
            .filter(|p| !p.is_empty())
            .map_or_else(|| self.name.clone(), str::to_owned)
    }

    /// Where [`Source::runtime`] was read, for the notes (after "the").
    pub fn runtime_from(&self) -> String {
        let has_path = self.runtime() != self.name;
        match (&self.file, has_path) {
            (Some(f), true) => format!("runtime_path of handler {} in {}", self.name, f.display()),
            _ => format!(
                "runtime CRI-O runs for handler {}, which has no runtime_path: `{}` in PATH",
                self.name, self.name
            ),
        }
    }
}

/// The default handler of `files` (in CRI-O's reading order), whose
/// default is `builtin` when none sets `default_runtime`.
pub fn source(files: &[(PathBuf, DocumentMut)], builtin: &str) -> Source {
    let l = layout();
    let mut default = builtin.to_owned();
    for (_, doc) in files {
        if let Some(d) =
            dig(doc.as_item(), &["crio", "runtime", "default_runtime"]).and_then(Item::as_str)
        {
            default = d.to_owned();
        }
    }
    let mut out = Source {
        name: default.clone(),
        table: None,
        file: None,
    };
    for (file, doc) in files {
        if let Some(t) = super::config::handler(&l, doc, &default).and_then(Item::as_table_like) {
            out.table = Some(bare_copy(t));
            out.file = Some(file.clone());
        }
    }
    out
}

/// CRI-O's built-in handler `name` as `crio config` prints it. `crio
/// config` writes a setting equal to CRI-O's built-in default as a
/// comment, so with no config file (`crio --config /dev/null --config-dir
/// "" config`) the built-in handler is a commented-out table:
/// `# [crio.runtime.runtimes.crun]`, then `# key = value` lines.
pub fn builtin_handler(printed: &str, name: &str) -> Option<Table> {
    let header = format!("# [crio.runtime.runtimes.{name}]");
    let mut lines = printed.lines().skip_while(|l| l.trim_end() != header);
    lines.next()?;
    let mut body = String::new();
    for line in lines {
        let Some(l) = line.strip_prefix('#') else {
            break;
        };
        body.push_str(l.strip_prefix(' ').unwrap_or(l));
        body.push('\n');
    }
    let doc: DocumentMut = body.parse().ok()?;
    let t = bare_copy(doc.as_table());
    (!t.is_empty()).then_some(t)
}

/// `source` with the table of CRI-O's built-in handler of its name (read
/// by [`builtin_handler`]) when no file defines it. The built-in
/// monitor_cgroup follows the cgroup manager (`crio config` prints
/// systemd's, "system.slice", which CRI-O refuses with cgroupfs): with
/// `cgroup_manager = "cgroupfs"` set, it is left for CRI-O to choose.
pub fn with_builtin(
    mut source: Source,
    builtin: Table,
    files: &[(PathBuf, DocumentMut)],
) -> Source {
    if source.table.is_some() {
        return source;
    }
    let mut t = builtin;
    let cgroupfs = files.iter().rev().find_map(|(_, d)| {
        dig(d.as_item(), &["crio", "runtime", "cgroup_manager"]).and_then(Item::as_str)
    }) == Some("cgroupfs");
    if cgroupfs {
        t.remove("monitor_cgroup");
    }
    source.table = Some(t);
    source
}

/// Why a handler cannot be derived from CRI-O's default one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CrioRefusal {
    #[error("default handler {name} has runtime_type = {kind:?}: it starts a VM, not an OCI runtime the wrapper can run; set default_runtime to an OCI handler (runc, crun) or install on a node whose default is one")]
    NotOci { name: String, kind: String },
}

/// The new handler: every setting of the source (monitor_path,
/// monitor_cgroup, monitor_env, monitor_exec_cgroup, allowed_annotations,
/// default_annotations, privileged_without_host_devices, container_min_memory,
/// runtime_type...), with `runtime_path` naming `binary` and `runtime_root`
/// a root of its own.
pub fn derive(source: &Source, binary: &str) -> Result<Derived, CrioRefusal> {
    let mut d = Derived::default();
    let mut h = source.table.clone().unwrap_or_default();
    let kind = h
        .get("runtime_type")
        .and_then(Item::as_str)
        .unwrap_or("oci")
        .to_owned();
    if !matches!(kind.as_str(), "oci" | "pod" | "") {
        return Err(CrioRefusal::NotOci {
            name: source.name.clone(),
            kind,
        });
    }
    leaf_keys(&Item::Table(h.clone()), "", &mut d.carried);
    let changed = [
        "runtime_path",
        "runtime_root",
        "inherit_default_runtime",
        "platform_runtime_paths",
    ];
    d.carried.retain(|k| {
        !changed
            .iter()
            .any(|c| k == c || k.starts_with(&format!("{c}.")))
    });
    if h.remove("platform_runtime_paths").is_some() {
        d.dropped.push(format!(
            "platform_runtime_paths of handler {}: each would run its runtime without the wrapper; the wrapper runs {} for every platform",
            source.name,
            source.runtime()
        ));
    }
    if h.remove("inherit_default_runtime")
        .and_then(|i| i.as_bool())
        .unwrap_or(false)
    {
        d.changed.push("inherit_default_runtime: left out (it would take runtime_path back from the default handler)".into());
    }
    let kind_item = h
        .remove("runtime_type")
        .filter(|i| i.as_str() != Some(""))
        .unwrap_or_else(|| value("oci"));
    // runtime_path first, as CRI-O prints a handler.
    let mut out = Table::new();
    out.insert("runtime_path", value(binary));
    out.insert("runtime_type", kind_item);
    out.insert("runtime_root", value(RUNTIME_ROOT));
    h.remove("runtime_path");
    h.remove("runtime_root");
    for (k, v) in h.iter() {
        out.insert(k, v.clone());
    }
    d.changed.push("runtime_path names the wrapper".into());
    d.changed.push(format!(
        "runtime_root = {RUNTIME_ROOT}, apart from the source's"
    ));
    d.table = out;
    Ok(d)
}

/// CRI-O, as the commands ask it.
pub struct Crio;

impl super::DaemonModule for Crio {
    fn name(&self) -> &'static str {
        "crio"
    }

    fn plan(&self, args: &Registration, install: bool) -> Result<InstallPlan, InstallError> {
        plan::plan(args, install)
    }

    fn hooks(&self) -> Option<super::HooksLookup> {
        Some(plan::hook_dirs)
    }

    fn hooks_dirs_under(&self, root: &Path) -> Vec<String> {
        let files = node::files(Path::new(node::CONFIG), &|p| {
            Ok::<_, std::convert::Infallible>(super::node::under(root, &p.to_string_lossy()))
        })
        .unwrap_or_default();
        node::hooks_dirs(&files, None)
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn containers_running(
        &self,
        _root: &Path,
        files: &dyn super::live::Files,
        _runs: &dyn Fn(&str) -> bool,
    ) -> Vec<(String, Option<&'static str>)> {
        super::live::runtime_states(files, Path::new(RUNTIME_ROOT))
            .into_iter()
            .map(|(id, _)| {
                (
                    format!(
                        "CRI-O container {id} runs the wrapper (its state is in {RUNTIME_ROOT})"
                    ),
                    None,
                )
            })
            .collect()
    }

    fn title(&self) -> &'static str {
        "CRI-O"
    }

    fn release(&self, version_line: &str) -> Option<String> {
        version_line
            .strip_prefix("crio version ")
            .map(|v| v.trim().to_owned())
    }

    fn layouts(&self) -> Vec<Layout> {
        vec![layout()]
    }

    fn in_use(
        &self,
        args: &Registration,
        removed: &[Item],
        _links: Vec<String>,
    ) -> Result<Option<Box<dyn super::live::Handler>>, InstallError> {
        Ok(Some(Box::new(plan::crio_handler(args, removed.first()))))
    }
    fn doctor(
        &self,
        n: &super::DoctorNode,
        _bin: Option<&super::binary::Binary>,
    ) -> Vec<crate::check::Check> {
        doctor::crio(n)
    }

    fn config_files(&self, root: &Path) -> Vec<PathBuf> {
        super::node::main_and_drop_ins(root, node::CONFIG, node::DROP_INS)
    }

    fn config_check(&self) -> Option<super::ConfigCheck> {
        Some(super::ConfigCheck {
            name: "crio.config",
            verb: "config",
            commands: &[
                "check",
                "complete",
                "completion",
                "config",
                "help",
                "h",
                "man",
                "markdown",
                "md",
                "status",
                "version",
                "wipe",
            ],
            needs: "runtime and monitor",
            drop_ins: Some("crio.conf.d"),
            stages_imports: false,
            other_missing: "CRI-O drops those handlers when it starts",
            packaged: " (a handler's monitor_path: CRI-O's packages put conmon at /usr/libexec/crio/conmon, Debian's at /usr/bin/conmon)",
        })
    }

    fn missing_at_start(
        &self,
        effective: &DocumentMut,
        search_path: &str,
        map: &dyn Fn(&Path) -> PathBuf,
    ) -> Vec<Missing> {
        serving::missing(effective, search_path, map)
    }

    fn missing_without_binary(
        &self,
        config: &Path,
        map: &dyn Fn(&Path) -> PathBuf,
    ) -> Option<Vec<Missing>> {
        let files =
            node::files(config, &|p| Ok::<_, std::convert::Infallible>(map(p))).unwrap_or_default();
        let docs: Vec<DocumentMut> = files
            .iter()
            .filter_map(|f| userns_hostnet::sys::toml::read(f).ok())
            .collect();
        Some(serving::missing(
            &serving::merge(&docs),
            super::binary::SERVICE_PATH,
            map,
        ))
    }

    fn service(&self) -> Option<super::Service> {
        Some(super::Service {
            config: node::CONFIG,
            socket: node::SOCKET,
            unit: "crio.service",
            drop_ins: Some(node::DROP_INS),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(PathBuf, DocumentMut)> {
        list.iter()
            .map(|(p, t)| (PathBuf::from(p), t.parse().unwrap()))
            .collect()
    }

    /// CRI-O's packaging: crio.conf.d/10-crio.conf.
    const PACKAGING: &str = r#"[crio.runtime]
default_runtime = "crun"

[crio.runtime.runtimes.crun]
runtime_root = "/run/crun"
monitor_path = "/usr/libexec/crio/conmon"
monitor_env = ["PATH=/usr/libexec/crio:/usr/bin"]
allowed_annotations = [
    "io.containers.trace-syscall",
]

[crio.runtime.runtimes.runc]
runtime_root = "/run/runc"
monitor_path = "/usr/libexec/crio/conmon"
"#;

    #[test]
    fn the_packaging_default_is_carried_whole() {
        let f = files(&[
            ("/etc/crio/crio.conf", "[crio]\n"),
            ("/etc/crio/crio.conf.d/10-crio.conf", PACKAGING),
        ]);
        let s = source(&f, &builtin_default(None, &f));
        assert_eq!(s.name, "crun");
        assert_eq!(s.runtime(), "crun");
        assert!(
            s.runtime_from().contains("`crun` in PATH"),
            "{}",
            s.runtime_from()
        );
        let d = derive(&s, "/h/userns-hostnet-runtime").unwrap();
        let mut doc = DocumentMut::new();
        doc.insert("h", Item::Table(d.table));
        let got: ::toml::Value = ::toml::from_str(&doc.to_string()).unwrap();
        let want: ::toml::Value = ::toml::from_str(
            r#"[h]
runtime_path = "/h/userns-hostnet-runtime"
runtime_type = "oci"
runtime_root = "/run/userns-hostnet-runtime"
monitor_path = "/usr/libexec/crio/conmon"
monitor_env = ["PATH=/usr/libexec/crio:/usr/bin"]
allowed_annotations = ["io.containers.trace-syscall"]
"#,
        )
        .unwrap();
        assert_eq!(got, want);
        assert!(
            d.carried.contains(&"monitor_path".to_owned()),
            "{:?}",
            d.carried
        );
        assert!(!d.carried.contains(&"runtime_root".to_owned()));
    }

    /// `crio --config /dev/null --config-dir "" config` of CRI-O 1.36.3, cut.
    const PRINTED: &str = "# [crio.runtime.runtimes.runtime-handler]\n# runtime_path = \"/path/to/the/executable\"\n\n# [crio.runtime.runtimes.crun]\n# runtime_path = \"\"\n# runtime_type = \"oci\"\n# runtime_root = \"/run/crun\"\n# inherit_default_runtime = false\n# container_min_memory = \"500KiB\"\n# monitor_path = \"\"\n# monitor_cgroup = \"system.slice\"\n# monitor_env = [\n# \t\"PATH=/usr/local/sbin:/usr/bin\",\n# ]\n# allowed_annotations = [\n# \t\"io.containers.trace-syscall\",\n# \t\"devices.crio.io\",\n# ]\n# privileged_without_host_devices = false\n\n\n\n# The workloads table\n[crio.image]\n";

    #[test]
    fn the_builtin_handler_is_carried_when_no_file_defines_it() {
        let b = builtin_handler(PRINTED, "crun").unwrap();
        assert_eq!(
            b.get("container_min_memory").and_then(Item::as_str),
            Some("500KiB")
        );
        assert!(builtin_handler(PRINTED, "runc").is_none());
        let f = files(&[("/etc/crio/crio.conf", "[crio.runtime]\n")]);
        let s = with_builtin(source(&f, "crun"), b.clone(), &f);
        assert_eq!(s.runtime(), "crun");
        let d = derive(&s, "/w").unwrap();
        let mut doc = DocumentMut::new();
        doc.insert("h", Item::Table(d.table));
        let got: ::toml::Value = ::toml::from_str(&doc.to_string()).unwrap();
        let want: ::toml::Value = ::toml::from_str(
            r#"[h]
runtime_path = "/w"
runtime_type = "oci"
runtime_root = "/run/userns-hostnet-runtime"
container_min_memory = "500KiB"
monitor_path = ""
monitor_cgroup = "system.slice"
monitor_env = ["PATH=/usr/local/sbin:/usr/bin"]
allowed_annotations = ["io.containers.trace-syscall", "devices.crio.io"]
privileged_without_host_devices = false
"#,
        )
        .unwrap();
        assert_eq!(got, want);
        // cgroupfs: CRI-O chooses the monitor's cgroup itself.
        let f = files(&[("/c", "[crio.runtime]\ncgroup_manager = \"cgroupfs\"\n")]);
        let s = with_builtin(source(&f, "crun"), b.clone(), &f);
        assert!(s.table.unwrap().get("monitor_cgroup").is_none());
        // A file's own table wins over the built-in one.
        let f = files(&[("/c", PACKAGING)]);
        let s = with_builtin(source(&f, "crun"), b, &f);
        assert!(s.table.unwrap().get("container_min_memory").is_none());
    }

    #[test]
    fn a_later_file_replaces_a_handler_whole() {
        let f = files(&[
            ("/c", "[crio.runtime.runtimes.runc]\nmonitor_path = \"/m\"\nruntime_path = \"/opt/runc\"\n"),
            ("/d/10.conf", "[crio.runtime.runtimes.runc]\nruntime_root = \"/run/r\"\n"),
        ]);
        let s = source(&f, "runc");
        assert_eq!(s.file, Some(PathBuf::from("/d/10.conf")));
        assert_eq!(s.runtime(), "runc");
        assert!(s.table.unwrap().get("monitor_path").is_none());
    }

    #[test]
    fn the_builtin_default_follows_the_version() {
        let none = files(&[]);
        assert_eq!(builtin_default(Some((1, 36)), &none), "crun");
        assert_eq!(builtin_default(Some((1, 30)), &none), "runc");
        assert_eq!(builtin_default(None, &none), "runc");
        let f = files(&[("/c", "[crio.runtime.runtimes.crun]\n")]);
        assert_eq!(builtin_default(None, &f), "crun");
    }

    #[test]
    fn what_cannot_go_through_the_wrapper_is_reported_or_refused() {
        let f = files(&[(
            "/c",
            "[crio.runtime.runtimes.runc]\nruntime_path = \"/opt/runc\"\ninherit_default_runtime = true\n[crio.runtime.runtimes.runc.platform_runtime_paths]\n\"linux/arm64\" = \"/opt/runc-arm\"\n",
        )]);
        let s = source(&f, "runc");
        assert_eq!(s.runtime(), "/opt/runc");
        let d = derive(&s, "/w").unwrap();
        assert!(d.table.get("platform_runtime_paths").is_none());
        assert!(d.table.get("inherit_default_runtime").is_none());
        assert_eq!(d.dropped.len(), 1, "{:?}", d.dropped);
        let vm = files(&[("/c", "[crio.runtime]\ndefault_runtime = \"kata\"\n[crio.runtime.runtimes.kata]\nruntime_type = \"vm\"\n")]);
        let e = derive(&source(&vm, "runc"), "/w").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("default handler kata has runtime_type = \"vm\""),
            "{e}"
        );
    }
}
