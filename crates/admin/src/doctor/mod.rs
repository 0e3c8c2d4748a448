//! `userns-hostnet doctor`: is this host ready for user-namespaced
//! containers on the host network? One line per check, with the fix for
//! each warning or failure. The probes are the wrapper's own (`probe`,
//! `config`, `host`), so doctor and the wrapper cannot disagree.

mod containerd;
mod crio;
mod kernel;
mod kubelet;
mod runtime;
mod serving;
use containerd::*;
use crio::*;
use kernel::*;
use kubelet::*;
use runtime::*;
use serving::*;

use super::check::check;
pub use super::check::{Check, Status};
use super::daemon::{self, node::Handler};
use super::matrix;
use crate::cli::Daemon;
use crate::cli::DoctorArgs;
use crate::config::{self, Config};
use crate::engine::policy::AllowedRanges;
use crate::sys::deadline::{self, RunError};
use crate::sys::in_root::NodeRoot;
use crate::sys::{mountinfo, toml};
use crate::{host, probe};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;
use toml_edit::DocumentMut;

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
    if args.json {
        super::print(&super::json_line(&Report {
            ok: !failed,
            checks: &checks,
        }))?;
    } else {
        super::print(render(&checks).as_bytes())?;
    }
    Ok(i32::from(failed))
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

/// Files of the host: under `--root` when given, the node's links
/// followed inside it ([`NodeRoot`]).
struct Root {
    node: Result<NodeRoot, String>,
    fake: bool,
    /// The paths that could not be resolved under `--root`, with why.
    unresolved: std::cell::RefCell<Vec<String>>,
}

impl Root {
    fn new(root: Option<&Path>) -> Root {
        let node = NodeRoot::new(root)
            .map_err(|e| format!("--root {}: {e}", root.unwrap_or(Path::new("/")).display()));
        Root {
            node,
            fake: root.is_some(),
            unresolved: Default::default(),
        }
    }

    /// Where a read of the host's `abs` goes. A path that cannot be
    /// resolved under `--root` (a link loop, a link to nothing, no
    /// openat2) is never read at a plain join, which would follow the
    /// node's links on this host: it is recorded for [`Root::check`] and
    /// comes back as a name no file has.
    fn at(&self, abs: impl AsRef<Path>) -> PathBuf {
        let abs = abs.as_ref();
        let found = match &self.node {
            Ok(n) => n.file(abs).map_err(|e| e.to_string()),
            Err(why) => Err(why.clone()),
        };
        match found {
            Ok(p) => p,
            // On this host, the kernel resolves it as the daemons do.
            Err(_) if !self.fake => abs.to_owned(),
            Err(why) => {
                let mut seen = self.unresolved.borrow_mut();
                if !seen.contains(&why) {
                    seen.push(why);
                }
                PathBuf::from(format!("{} (unresolved)", abs.display()))
            }
        }
    }

    fn fake(&self) -> bool {
        self.fake
    }

    /// A failure naming every path that could not be resolved under
    /// `--root`, if any.
    fn check(&self) -> Option<Check> {
        let seen = self.unresolved.borrow();
        (!seen.is_empty()).then(|| check("root", Status::Fail, seen.join("; ")))
    }
}

/// What every fix line must carry to be right for this run: commands
/// that change the host are marked for root when doctor runs as another
/// user, a setting names the config file actually read, and a command
/// naming a daemon's config gets the same `--config` doctor was given.
struct Fixes {
    /// "as root: " when doctor does not run as root, else "".
    as_root: &'static str,
    /// The config file the wrapper reads.
    config: PathBuf,
    /// ` --config F` for install containerd / install crio, when named.
    containerd_flag: String,
    crio_flag: String,
    /// This doctor command line, to run it again as root.
    rerun: String,
}

impl Fixes {
    fn new(args: &DoctorArgs, root: &Root) -> Fixes {
        let flag = |name: &str, v: Option<&Path>| {
            v.map_or(String::new(), |v| format!(" --{name} {}", v.display()))
        };
        Fixes {
            as_root: if nix::unistd::geteuid().is_root() {
                ""
            } else {
                "as root: "
            },
            config: config_path(root),
            containerd_flag: flag("config", args.containerd_config.as_deref()),
            crio_flag: flag("config", args.crio_config.as_deref()),
            rerun: format!(
                "userns-hostnet doctor{}{}{}",
                args.runtime
                    .as_deref()
                    .map_or(String::new(), |r| format!(" --runtime {r}")),
                flag("containerd-config", args.containerd_config.as_deref()),
                flag("crio-config", args.crio_config.as_deref()),
            ),
        }
    }

    /// A command that changes the host.
    fn admin(&self, command: impl AsRef<str>) -> String {
        format!("{}{}", self.as_root, command.as_ref())
    }

    /// The command that changes a setting in the config file the wrapper
    /// reads (named, unless it is the default: sudo drops the
    /// environment that named it).
    fn setting(&self, assignment: &str) -> String {
        let file = if self.config == Path::new(config::DEFAULT_PATH) {
            String::new()
        } else {
            format!(" --file {}", self.config.display())
        };
        format!("userns-hostnet config set {assignment}{file}")
    }
}

/// Every check, in the order printed.
pub fn checks(args: &DoctorArgs) -> Vec<Check> {
    let root = Root::new(args.root.as_deref());
    let fx = Fixes::new(args, &root);
    let mut out = vec![kernel_mount_setattr(&fx), user_namespaces(&root, &fx)];
    let (config_check, config) = config_file(&root, &fx);
    out.extend(runtime_checks(args, config.as_ref(), &fx));
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
    let containerd_bin = serving_binary(&root, args, Daemon::Containerd);
    let c = containerd(&root, args, uses, containerd_bin.as_ref(), &fx);
    let checked = c.status != Status::Skip;
    out.push(c);
    if checked {
        out.push(daemon_config(
            &root,
            args,
            Daemon::Containerd,
            containerd_bin.as_ref(),
            &fx,
        ));
    }
    let crio_bin = serving_binary(&root, args, Daemon::Crio);
    let c = crio(&root, args, uses, &fx);
    let checked = c.status != Status::Skip;
    out.push(c);
    if checked {
        out.push(daemon_config(
            &root,
            args,
            Daemon::Crio,
            crio_bin.as_ref(),
            &fx,
        ));
    }
    if args.containerd_config.is_some() || uses.is_none() || uses == Some(matrix::Cri::Containerd) {
        out.extend(matrix_checks(
            args,
            config.as_ref(),
            &kubelet,
            containerd_bin.as_ref(),
        ));
    }
    out.extend(root.check());
    out
}
