//! doctor's checks of containerd: its handlers that run the wrapper, and
//! what its imports throw away.

use crate::check::{check, Check, Status};
use crate::daemon::health::{cri::cri_view, handlers::handlers_runtime, *};
use crate::daemon::{self};
use crate::matrix;
use std::path::{Path, PathBuf};
use toml_edit::DocumentMut;
use userns_hostnet::sys::toml;

pub(crate) fn containerd(
    n: &daemon::DoctorNode,
    bin: Option<&daemon::binary::Binary>,
) -> Vec<Check> {
    let (root, named, fx) = (n.root, n.named, n.fx);
    if let Some(skip) = unused(&daemon::containerd::Containerd, n.uses).filter(|_| !named) {
        return vec![skip];
    }
    if !named && !installed(root, "containerd") {
        return vec![check(
            "containerd",
            Status::Skip,
            "containerd is not installed",
        )];
    }
    let mut found = Vec::new();
    let c = containerd_handlers(root, &n.config, bin, fx, &mut found);
    let mut out = vec![unless_running(
        c,
        root,
        daemon::containerd::node::SOCKET,
        named,
        "containerd",
    )];
    out.extend(handlers_runtime("containerd.runtime", &found, root, fx));
    let docs: Vec<_> = toml::read(&root.at(&n.config)).into_iter().collect();
    out.extend(cri_view(
        "containerd.cri",
        (&docs, daemon::containerd::node::SOCKET, "containerd"),
        &["grpc", "address"],
        &found,
        root,
    ));
    out
}

/// The handlers of containerd's config (its imports merged as the
/// containerd that serves it merges them) that run the wrapper.
pub(crate) fn containerd_handlers(
    root: &Root,
    node_config: &Path,
    bin: Option<&daemon::binary::Binary>,
    fx: &Fixes,
    found: &mut Vec<daemon::node::Handler>,
) -> Check {
    let config = root.at(node_config);
    let flag = fx.install_flag("containerd");
    let fix = &fx.admin(format!(
        "userns-hostnet install containerd{flag}, then restart containerd"
    ));
    let doc = match served_config(node_config, &config, fx) {
        Ok(doc) => doc,
        Err(finding) => return finding,
    };
    let version = daemon::containerd::version(&doc);
    let files = with_imports(root, node_config, config.clone(), doc);
    // Before 2.0, containerd replaces a plugin's whole table with an
    // import's; a version 3 config is read by 2.x only.
    let binary = bin
        .and_then(|b| b.version.as_deref())
        .and_then(matrix::parse_containerd_version)
        .map(|(major, minor, _)| (major, minor));
    let replaces = version <= 2 && !binary.is_some_and(|(major, _)| major >= 2);
    let cri = daemon::containerd::node::cri_plugin(version).unwrap_or_default();
    if replaces {
        if let Some(c) = daemon::containerd::node::clobbers_1x(&files)
            .into_iter()
            .find(|c| c.plugin == cri)
        {
            return clobbered(&c, binary, &config, fx);
        }
    }
    let mut handlers = Vec::new();
    for (file, doc) in &files {
        let own_cri = doc
            .get("plugins")
            .and_then(|p| daemon::config::dig(p, &[cri]))
            .is_some();
        if replaces && own_cri {
            handlers.clear();
        }
        handlers.extend(daemon::containerd::node::handlers(doc, file, version));
    }
    found.extend(handlers.iter().cloned());
    registered(
        HANDLERS,
        handlers,
        root,
        fix,
        &reinstall("containerd", flag, fx),
    )
}

/// The name of [`containerd_handlers`]' check.
const HANDLERS: &str = "containerd";

/// containerd's main config, read; the finding instead when there is
/// none, it does not parse, or it serves no kubelet (its CRI disabled).
fn served_config(node_config: &Path, config: &Path, fx: &Fixes) -> Result<DocumentMut, Check> {
    let flag = fx.install_flag("containerd");
    if !config.is_file() {
        return Err(check(
            HANDLERS,
            Status::Fail,
            format!(
                "{}: no config file, so no runtime handler runs the wrapper",
                config.display()
            ),
        )
        .fix(format!(
            "{}containerd config default > {}; userns-hostnet install containerd{flag}, then restart containerd",
            fx.as_root,
            node_config.display()
        )));
    }
    let doc = match toml::read(config) {
        Ok(d) => d,
        Err(e) => {
            return Err(check(HANDLERS, Status::Fail, e.to_string())
                .fix(format!("{}correct the file", fx.as_root)))
        }
    };
    if let Some(plugin) = daemon::containerd::cri_disabled(&doc) {
        return Err(check(
            HANDLERS,
            Status::Skip,
            format!(
                "{}: disabled_plugins turns {plugin:?} off: this containerd serves no kubelet (Docker's containerd, for one)",
                config.display()
            ),
        ));
    }
    Ok(doc)
}

/// The main config (`doc`, read from `config`) and the files it imports
/// that can be read, in the order containerd merges them.
fn with_imports(
    root: &Root,
    node_config: &Path,
    config: PathBuf,
    doc: DocumentMut,
) -> Vec<(PathBuf, DocumentMut)> {
    let mut files = vec![(config, doc)];
    let imports = daemon::containerd::node::imports(&files[0].1, node_config, &|p| {
        Ok::<_, std::convert::Infallible>(root.at(p))
    });
    for (_, import) in imports.unwrap_or_default() {
        if let Ok(d) = toml::read(&import) {
            files.push((import, d));
        }
    }
    files
}

/// An import that throws away CRI settings of the files before it.
pub(crate) fn clobbered(
    c: &daemon::containerd::node::Clobber,
    binary: Option<(u64, u64)>,
    config: &Path,
    fx: &Fixes,
) -> Check {
    const SHOWN: usize = 6;
    let which = match binary {
        Some((major, minor)) => format!("containerd {major}.{minor}, as here,"),
        None => "containerd before 2.0".to_owned(),
    };
    let mut lost = c.lost[..c.lost.len().min(SHOWN)].join(", ");
    if c.lost.len() > SHOWN {
        lost.push_str(&format!(" and {} more", c.lost.len() - SHOWN));
    }
    check(
        "containerd",
        Status::Fail,
        format!(
            "{} replaces the whole plugins.\"{}\" table: {which} keeps none of the earlier files' settings in it: {lost} are lost",
            c.import.display(),
            c.plugin
        ),
    )
    .fix(format!(
        "{2}carry those settings into {0}, or move its settings into {1} and remove it; a drop-in written by `userns-hostnet install containerd --drop-in`: userns-hostnet uninstall containerd --drop-in --config {1} && userns-hostnet install containerd --config {1}",
        c.import.display(),
        config.display(),
        fx.as_root
    ))
}
