//! `userns-hostnet doctor`: is this host ready for user-namespaced
//! containers on the host network? One line per check, with the fix for
//! each warning or failure. The probes are the wrapper's own (`probe`,
//! `config`, `host`), so doctor and the wrapper cannot disagree.

mod daemon_config;
mod kernel;
mod kubelet;
mod runtime;
use daemon_config::*;
use kernel::*;
use kubelet::*;
use runtime::*;

use super::daemon::health::*;
use super::daemon::register::paths::is_hosts_config;

use super::check::check;
use super::check::{Check, Status};
use super::daemon;
use super::matrix;
use crate::cli::DoctorArgs;
use serde::Serialize;
use std::path::{Path, PathBuf};
use toml_edit::DocumentMut;
use userns_hostnet::config::{self, NodeConfig};
use userns_hostnet::sys::{mountinfo, toml};
use userns_hostnet::{host, probe};
use userns_hostnet_engine::policy::AllowedRanges;

/// IDs kubelet gives each pod's user namespace.
pub const IDS_PER_POD: u64 = 65536;
/// The user whose /etc/subuid range kubelet allocates pods from.
pub const KUBELET_USER: &str = "kubelet";

#[derive(Debug, Serialize)]
struct Report<'a> {
    ok: bool,
    checks: &'a [Check],
}

/// Run the subcommand; the exit status.
pub fn run(args: &DoctorArgs) -> Result<i32, super::AdminError> {
    let checks = checks(args);
    let failed = checks.iter().any(|c| c.status == Status::Fail);
    let report = Report {
        ok: !failed,
        checks: &checks,
    };
    super::report(args.json, &report, |r| render(r.checks))?;
    Ok(i32::from(failed))
}

/// How the fixes are worded for this command line.
fn fixes(args: &DoctorArgs, root: &Root) -> Fixes {
    let flag = |name: &str, v: Option<&Path>| {
        v.map_or(String::new(), |v| format!(" --{name} {}", v.display()))
    };
    // What install needs to edit the config doctor read: the same
    // root; on this host, a config outside /etc is one install takes
    // for a copy unless the handlers' directory is named.
    let install_flag = |v: Option<&Path>| {
        let mut f = flag("root", args.root.as_deref());
        f.push_str(&flag("config", v));
        if v.is_some_and(|v| args.root.is_none() && !is_hosts_config(v)) {
            f.push_str(&flag(
                "handlers-dir",
                Some(&userns_hostnet::runtime::handlers_dir()),
            ));
        }
        f
    };
    Fixes {
        as_root: if nix::unistd::geteuid().is_root() {
            ""
        } else {
            "as root: "
        },
        config: config_path(root),
        install_flags: args
            .named()
            .iter()
            .map(|(d, config, _)| (*d, install_flag(*config)))
            .collect(),
        rerun: format!(
            "userns-hostnet doctor{}{}",
            args.runtime
                .as_deref()
                .map_or(String::new(), |r| format!(" --runtime {r}")),
            args.named()
                .iter()
                .map(|(d, config, _)| flag(&format!("{d}-config"), *config))
                .collect::<String>(),
        ),
    }
}

/// The text output: `STATUS name: message`, then `fix: ...` when needed.
pub fn render(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut s = String::new();
    for c in checks {
        s.push_str(&format!(
            "{:<4}  {:<width$}  {}\n",
            c.status.word(),
            c.name,
            c.message
        ));
        if let Some(fix) = &c.fix {
            s.push_str(&format!("{:<4}  {:<width$}  fix: {fix}\n", "", ""));
        }
    }
    let fails = checks.iter().filter(|c| c.status == Status::Fail).count();
    let warns = checks.iter().filter(|c| c.status == Status::Warn).count();
    s.push_str(&format!(
        "{}: {fails} failed, {warns} warning{}\n",
        if fails == 0 { "ready" } else { "NOT ready" },
        if warns == 1 { "" } else { "s" }
    ));
    s
}

/// Every check, in the order printed.
pub fn checks(args: &DoctorArgs) -> Vec<Check> {
    let root = Root::new(args.root.as_deref());
    let fx = fixes(args, &root);
    let mut out = vec![kernel_mount_setattr(&fx), user_namespaces(&root, &fx)];
    let (config_check, config) = config_file(&root, &fx);
    let asked = Asked::of(args, config.as_ref());
    out.extend(runtime_checks(&asked, args, &fx));
    out.push(cgroup(&root));
    out.push(subids(&root, config.as_ref(), &fx));
    out.push(ports(&root, &fx));
    out.push(config_check);
    if let Some(cfg) = &config {
        out.push(log_file(&root, cfg, &fx));
        out.extend(log_rotation(&root, cfg, &fx));
    }
    let kubelet = kubelet(&root);
    out.push(kubelet_check(&kubelet));
    if let Some(gates) = kubelet_gates(&kubelet, &fx) {
        out.push(gates);
    }
    let uses = kubelet.endpoint.as_ref().map(|e| e.cri);
    let named = args.named();
    let mut matrix_bin = None;
    for &d in &daemon::ALL {
        let (config, bin) = named
            .iter()
            .find(|(name, ..)| *name == d.name())
            .map_or((None, None), |(_, c, b)| (*c, *b));
        let node = daemon::DoctorNode {
            root: &root,
            config: config.map_or_else(
                || PathBuf::from(daemon::binary::default_config(d)),
                Path::to_owned,
            ),
            named: config.is_some(),
            uses,
            fx: &fx,
        };
        let bin = d
            .config_check()
            .and_then(|_| serving_binary(&root, d, &node.config, bin));
        let mut found = d.doctor(&node, bin.as_ref()).into_iter();
        if let Some(c) = found.next() {
            let checked = c.status != Status::Skip;
            out.push(c);
            if checked {
                out.extend(daemon_config(&root, d, &node.config, bin.as_ref(), &fx));
            }
        }
        out.extend(found);
        if d.matrix() && (node.named || uses.map_or(true, |u| u == daemon::Cri::Known(d))) {
            matrix_bin = Some(bin);
        }
    }
    if let Some(bin) = matrix_bin {
        out.extend(matrix_checks(&asked, &kubelet, bin.as_ref()));
    }
    out.extend(root.check());
    out
}
