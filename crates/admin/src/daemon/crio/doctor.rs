//! doctor's checks of CRI-O: its handlers that run the wrapper.

use crate::check::{check, Check, Status};
use crate::daemon::health::{cri::cri_view, handlers::handlers_runtime, *};
use crate::daemon::{self};
use std::path::{Path, PathBuf};
use userns_hostnet::sys::toml;

/// CRI-O's files of the host's `conf` ([`daemon::crio::node::files`]).
pub(crate) fn crio_files(root: &Root, conf: &Path) -> Vec<PathBuf> {
    daemon::crio::node::files(conf, &|p| Ok::<_, std::convert::Infallible>(root.at(p)))
        .unwrap_or_default()
}

pub(crate) fn crio(n: &daemon::DoctorNode) -> Vec<Check> {
    let (root, named, fx) = (n.root, n.named, n.fx);
    if let Some(skip) = unused(&daemon::crio::Crio, n.uses).filter(|_| !named) {
        return vec![skip];
    }
    if !named && !installed(root, "crio") {
        return vec![check("crio", Status::Skip, "CRI-O is not installed")];
    }
    let mut found = Vec::new();
    let c = crio_handlers(root, &n.config, fx, &mut found);
    let mut out = vec![unless_running(
        c,
        root,
        daemon::crio::node::SOCKET,
        named,
        "CRI-O",
    )];
    out.extend(handlers_runtime("crio.runtime", &found, root, fx));
    let docs: Vec<_> = crio_files(root, &n.config)
        .iter()
        .filter_map(|f| toml::read(f).ok())
        .collect();
    out.extend(cri_view(
        "crio.cri",
        (&docs, daemon::crio::node::SOCKET, "crio"),
        &["crio", "api", "listen"],
        &found,
        root,
    ));
    out
}

pub(crate) fn crio_handlers(
    root: &Root,
    config: &Path,
    fx: &Fixes,
    found: &mut Vec<daemon::node::Handler>,
) -> Check {
    const NAME: &str = "crio";
    let mut handlers = Vec::new();
    for file in crio_files(root, config) {
        match toml::read(&file) {
            Ok(d) => handlers.extend(daemon::node::Handler::running_wrapper(
                &daemon::crio::layout(),
                &d,
                &file,
            )),
            Err(e) => {
                return check(NAME, Status::Fail, e.to_string())
                    .fix(format!("{}correct the file", fx.as_root))
            }
        }
    }
    let flag = fx.install_flag("crio");
    found.extend(handlers.iter().cloned());
    registered(
        NAME,
        handlers,
        root,
        &fx.admin(format!(
            "userns-hostnet install crio{flag}, then restart crio"
        )),
        &reinstall("crio", flag, fx),
    )
}
