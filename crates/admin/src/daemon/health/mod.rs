//! What doctor's checks of the daemons share: the node they read (under
//! `--root` or the host's), the fixes they word, and how a daemon's
//! handlers are checked ([`handlers`]: by the real runtime each runs;
//! [`cri`]: as the daemon declares them through the CRI).

pub(crate) mod cri;
pub(crate) mod handlers;

use crate::check::{check, Check, Status};
use crate::daemon::{self, node::Handler, Cri, DaemonModule};
use crate::matrix;
use std::path::{Path, PathBuf};
use std::time::Instant;
use toml_edit::DocumentMut;
use userns_hostnet::config;
use userns_hostnet::probe;
use userns_hostnet::sys::deadline::{self, RunError};
use userns_hostnet::sys::in_root::NodeRoot;

/// Files of the host: under `--root` when given, the node's links
/// followed inside it ([`NodeRoot`]).
pub(crate) struct Root {
    pub(crate) node: Result<NodeRoot, String>,
    pub(crate) fake: bool,
    /// The paths that could not be resolved under `--root`, with why.
    pub(crate) unresolved: std::cell::RefCell<Vec<String>>,
}

impl Root {
    pub(crate) fn new(root: Option<&Path>) -> Root {
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
    pub(crate) fn at(&self, abs: impl AsRef<Path>) -> PathBuf {
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

    /// A failure naming every path that could not be resolved under
    /// `--root`, if any.
    pub(crate) fn check(&self) -> Option<Check> {
        let seen = self.unresolved.borrow();
        (!seen.is_empty()).then(|| check("root", Status::Fail, seen.join("; ")))
    }
}

/// What every fix line must carry to be right for this run: commands
/// that change the host are marked for root when doctor runs as another
/// user, a setting names the config file actually read, and a command
/// naming a daemon's config gets the same `--config` doctor was given.
pub(crate) struct Fixes {
    /// "as root: " when doctor does not run as root, else "".
    pub(crate) as_root: &'static str,
    /// The config file the wrapper reads.
    pub(crate) config: PathBuf,
    /// ` --root R` when doctor was given one, ` --config F` when named
    /// (with ` --handlers-dir D` for a config outside /etc on this host),
    /// for `install DAEMON`, by the daemon's name.
    pub(crate) install_flags: Vec<(&'static str, String)>,
    /// This doctor command line, to run it again as root.
    pub(crate) rerun: String,
}

impl Fixes {
    /// The flags install needs for the config doctor read of `daemon`
    /// (by its name).
    pub(crate) fn install_flag(&self, daemon: &str) -> &str {
        self.install_flags
            .iter()
            .find(|(d, _)| *d == daemon)
            .map_or("", |(_, f)| f.as_str())
    }

    /// A command that changes the host.
    pub(crate) fn admin(&self, command: impl AsRef<str>) -> String {
        format!("{}{}", self.as_root, command.as_ref())
    }

    /// The command that changes a setting in the config file the wrapper
    /// reads (named, unless it is the default: sudo drops the
    /// environment that named it).
    pub(crate) fn setting(&self, assignment: &str) -> String {
        let file = if self.config == Path::new(config::DEFAULT_PATH) {
            String::new()
        } else {
            format!(" --file {}", self.config.display())
        };
        format!("userns-hostnet config set {assignment}{file}")
    }
}

/// The real runtime a handler's own link names (what `install` made for a
/// handler that keeps its runtime binary), as the node names it. The
/// handler's binary is not resolved first: under `--root` that would
/// follow its link to the wrapper and lose the handler's directory.
pub(crate) fn handler_runtime(h: &Handler, root: &Root) -> Option<PathBuf> {
    let link = Path::new(&h.binary);
    let dir = link.parent()?;
    if link.file_name()? != userns_hostnet::WRAPPER_NAME
        || dir.parent()? != userns_hostnet::runtime::handlers_dir()
        || !link.is_absolute()
    {
        return None;
    }
    let runtime = dir.join(userns_hostnet::runtime::HANDLER_RUNTIME_LINK);
    let here = match &root.node {
        Ok(n) => n.entry(&runtime).ok()?,
        Err(_) => return None,
    };
    Some(match std::fs::read_link(&here) {
        Ok(t) if t.is_absolute() => t,
        Ok(t) => dir.join(t),
        Err(_) => runtime,
    })
}

/// A daemon's binary is installed (in PATH; under the fake root, in
/// /usr/bin, /usr/sbin or /usr/local/bin), whatever /etc holds.
pub(crate) fn installed(root: &Root, binary: &str) -> bool {
    if root.fake {
        ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
            .iter()
            .any(|d| root.at(Path::new(d).join(binary)).is_file())
    } else {
        in_path(binary).is_some()
    }
}

/// A daemon that is installed but not running: what no handler means is
/// a warning, not a failure, unless its config was named (`--…-config`).
pub(crate) fn unless_running(
    c: Check,
    root: &Root,
    socket: &str,
    named: bool,
    daemon: &str,
) -> Check {
    if c.status != Status::Fail || named || root.at(socket).exists() {
        return c;
    }
    Check {
        status: Status::Warn,
        message: format!(
            "{}; {daemon} is not running (no {socket}), so nothing uses it yet",
            c.message
        ),
        ..c
    }
}

/// The daemon the kubelet does not use is skipped, unless its config was
/// named.
pub(crate) fn unused(daemon: &'static dyn DaemonModule, uses: Option<Cri>) -> Option<Check> {
    let other = uses.filter(|u| *u != Cri::Known(daemon))?;
    Some(check(
        daemon.name(),
        Status::Skip,
        format!("the kubelet uses {}", other.title()),
    ))
}

/// The first file `name` in this process's PATH.
pub(crate) fn in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Uninstall and install again a handler, with the same daemon config.
pub(crate) fn reinstall(daemon: &str, flag: &str, fx: &Fixes) -> String {
    fx.admin(format!(
        "userns-hostnet uninstall {daemon}{flag} && userns-hostnet install {daemon}{flag}"
    ))
}

pub(crate) fn registered(
    name: &'static str,
    handlers: Vec<Handler>,
    root: &Root,
    fix: &str,
    reinstall: &str,
) -> Check {
    if handlers.is_empty() {
        return check(name, Status::Fail, "no runtime handler runs the wrapper").fix(fix);
    }
    // Every handler's binary is looked up: one that cannot be resolved
    // under --root is told of by the root check, not only the first.
    let missing: Vec<&Handler> = handlers
        .iter()
        .filter(|h| !root.at(&h.binary).is_file())
        .collect();
    if let Some(h) = missing.first() {
        return check(
            name,
            Status::Fail,
            format!("handler {} runs {}, which does not exist", h.name, h.binary),
        )
        .fix(format!(
            "install the wrapper at {}; or register the installed one: {reinstall}",
            h.binary
        ));
    }
    let no_runtime = handlers.iter().find_map(|h| {
        let real = handler_runtime(h, root)?;
        (!root.at(&real).is_file()).then_some((h, real))
    });
    if let Some((h, real)) = no_runtime {
        return check(
            name,
            Status::Fail,
            format!(
                "handler {} runs the wrapper with the real runtime {}, which does not exist",
                h.name,
                real.display()
            ),
        )
        .fix(format!(
            "install that runtime, or register the handler again: {reinstall}"
        ));
    }
    check(
        name,
        Status::Ok,
        format!("handler {}", listed(&handlers, root)),
    )
}

pub(crate) fn listed(handlers: &[Handler], root: &Root) -> String {
    handlers
        .iter()
        .map(|h| match handler_runtime(h, root) {
            Some(real) => format!(
                "{} -> {} (real runtime {}) ({})",
                h.name,
                h.binary,
                real.display(),
                h.file.display()
            ),
            None => format!("{} -> {} ({})", h.name, h.binary, h.file.display()),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Run `runtime arg`, with no input and a deadline: (success, stdout).
pub(crate) fn run_with_timeout(runtime: &Path, arg: &str) -> Result<(bool, String), String> {
    let out =
        deadline::run(runtime, arg, Instant::now() + probe::PROBE_TIMEOUT).map_err(
            |e| match e {
                RunError::Timeout => format!("{arg} did not answer in time"),
                e => e.to_string(),
            },
        )?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}
