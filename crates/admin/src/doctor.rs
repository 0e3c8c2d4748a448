//! `userns-hostnet doctor`: is this host ready for user-namespaced
//! containers on the host network? One line per check, with the fix for
//! each warning or failure. The probes are the wrapper's own (`probe`,
//! `config`, `host`), so doctor and the wrapper cannot disagree.

use super::check::check;
pub use super::check::{Check, Status};
use super::daemon::serving::Daemon;
use super::daemon::{self, node::Handler};
use super::matrix;
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

/// CRI-O's files of the host's `conf` ([`daemon::crio::node::files`]).
fn crio_files(root: &Root, conf: &Path) -> Vec<PathBuf> {
    daemon::crio::node::files(conf, &|p| Ok::<_, std::convert::Infallible>(root.at(p)))
        .unwrap_or_default()
}

/// The config file a daemon reads, as a host path: named, else its default.
fn daemon_config_path(args: &DoctorArgs, daemon: Daemon) -> PathBuf {
    let named = match daemon {
        Daemon::Containerd => args.containerd_config.as_deref(),
        Daemon::Crio => args.crio_config.as_deref(),
    };
    named.map_or_else(|| PathBuf::from(daemon.default_config()), Path::to_owned)
}

/// The daemon binary that serves its config (`daemon::serving::find`).
fn serving_binary(
    root: &Root,
    args: &DoctorArgs,
    daemon: Daemon,
) -> Option<daemon::serving::Binary> {
    let named = match daemon {
        Daemon::Containerd => args.containerd.as_deref(),
        Daemon::Crio => args.crio.as_deref(),
    };
    // Under --root, the host's usual binary directories; else doctor's PATH.
    let path_env = if root.fake() {
        daemon::serving::SERVICE_PATH.to_owned()
    } else {
        std::env::var("PATH").unwrap_or_default()
    };
    daemon::serving::find(
        daemon,
        &daemon_config_path(args, daemon),
        named,
        &path_env,
        &|p| root.at(p),
    )
}

/// The daemon's own check of its config file (`containerd config dump`,
/// `crio config`), then the binaries each handler needs, which CRI-O
/// checks only when it starts: any of them missing stops the daemon
/// (CRI-O) or loses the handler.
fn daemon_config(
    root: &Root,
    args: &DoctorArgs,
    daemon: Daemon,
    bin: Option<&daemon::serving::Binary>,
    fx: &Fixes,
) -> Check {
    let name = match daemon {
        Daemon::Containerd => "containerd.config",
        Daemon::Crio => "crio.config",
    };
    let host = daemon_config_path(args, daemon);
    let file = root.at(&host);
    let shown = host.display();
    let map = |p: &Path| root.at(p);
    let Some(bin) = bin else {
        let mut c = check(
            name,
            Status::Warn,
            format!(
                "no {0} binary found (no running {0} that doctor can see reads {shown}, none in PATH): its own check of the file was not run",
                daemon.binary_name()
            ),
        )
        .fix(format!(
            "name the binary that serves the file: userns-hostnet doctor {} PATH",
            daemon.flag()
        ));
        if daemon == Daemon::Crio {
            // What CRI-O checks on start needs no crio binary.
            let docs: Vec<DocumentMut> = crio_files(root, &host)
                .iter()
                .filter_map(|f| toml::read(f).ok())
                .collect();
            let missing = daemon::crio::serving::missing(
                &daemon::crio::serving::merge(&docs),
                daemon::serving::SERVICE_PATH,
                &map,
            );
            if let Some(fail) = missing_check(name, daemon, &missing, &shown.to_string(), "", fx) {
                c = fail;
            }
        }
        return c;
    };
    let asked = bin.describe();
    let config_dir = (daemon == Daemon::Crio)
        .then(|| root.at(host.parent().unwrap_or(Path::new("/")).join("crio.conf.d")));
    // No crio.conf: CRI-O reads its drop-ins alone (`--config ""`).
    let staged = if daemon == Daemon::Containerd && root.fake() {
        StagedCopy::of_containerd(root, &host)
    } else {
        None
    };
    let read = if let Some(copy) = &staged {
        copy.0.clone()
    } else if file.is_file() {
        file.clone()
    } else if daemon == Daemon::Crio {
        PathBuf::new()
    } else {
        return check(
            name,
            Status::Skip,
            format!("{shown}: no file, so {asked} has nothing to check"),
        );
    };
    let effective = match daemon::serving::check_config(bin, &read, config_dir.as_deref()) {
        daemon::serving::Verdict::Accepts(text) => text,
        // Not root: the daemon may refuse for want of root's files alone.
        daemon::serving::Verdict::Refuses(said) if !fx.as_root.is_empty() => {
            return not_as_root(name, format!("{asked} refuses {shown}: {said}"), fx)
        }
        daemon::serving::Verdict::Refuses(said) => {
            return check(
                name,
                Status::Fail,
                format!("{asked} refuses {shown}: {said}"),
            )
            .fix(format!(
                "{}correct {shown} (the daemon will not start on it); if another {} binary serves it, name that one: userns-hostnet doctor {} PATH",
                fx.as_root,
                daemon.binary_name(),
                daemon.flag()
            ))
        }
        daemon::serving::Verdict::NotRun(why) => {
            return check(
                name,
                Status::Warn,
                format!("{asked}: cannot run its config check: {why}"),
            )
            .fix(format!(
                "name the binary that serves {shown}: userns-hostnet doctor {} PATH",
                daemon.flag()
            ))
        }
    };
    let verb = match daemon {
        Daemon::Containerd => "config dump",
        Daemon::Crio => "config",
    };
    let dumped = effective.parse::<DocumentMut>();
    if let (Daemon::Containerd, Ok(doc), Ok(own)) = (daemon, &dumped, toml::read(&file)) {
        let (theirs, read) = (
            daemon::containerd::version(&own),
            daemon::containerd::version(doc),
        );
        // containerd 1.x reads a newer file without a word, as a version 2
        // file whose plugin tables it does not know: none of them counts.
        if theirs > read {
            return check(
                name,
                Status::Fail,
                format!("{asked} reads config version {read} at most, and {shown} is version {theirs}: it ignores that file's plugin tables, its runtime handlers included"),
            )
            .fix(format!(
                "run a containerd that reads version {theirs} (if one does and is not running, name it: userns-hostnet doctor --containerd PATH); or write {shown} for this one: {}containerd config default > FILE, then userns-hostnet install containerd --config FILE",
                fx.as_root
            ));
        }
    }
    let missing = match dumped {
        Ok(doc) => match daemon {
            Daemon::Containerd => daemon::containerd::serving::missing(&doc, &map),
            Daemon::Crio => daemon::crio::serving::missing(&doc, &bin.search_path, &map),
        },
        Err(_) => Vec::new(),
    };
    if let Some(fail) = missing_check(name, daemon, &missing, &shown.to_string(), &asked, fx) {
        return fail;
    }
    check(
        name,
        Status::Ok,
        format!(
            "{asked} accepts {shown} (`{verb}`), and every handler's runtime{} is there",
            if daemon == Daemon::Crio {
                " and monitor"
            } else {
                ""
            }
        ),
    )
}

/// Under `--root`, containerd would read a config's absolute imports on
/// this host: it reads a temporary copy whose imports name the files
/// under the root instead (removed when dropped).
struct StagedCopy(PathBuf);

impl StagedCopy {
    /// `node`: the config as the node names it; relative imports are
    /// relative to its directory, as containerd takes them.
    fn of_containerd(root: &Root, node: &Path) -> Option<StagedCopy> {
        let file = root.at(node);
        let mut doc = toml::read(&file).ok()?;
        let dir = node.parent().unwrap_or(Path::new("/"));
        let list = doc.get("imports").and_then(toml_edit::Item::as_array)?;
        let mapped: toml_edit::Array = list
            .iter()
            .filter_map(|v| v.as_str())
            .map(|e| root.at(dir.join(e)).to_string_lossy().into_owned())
            .collect();
        doc["imports"] = toml_edit::value(mapped);
        let path = std::env::temp_dir().join(format!(
            "userns-hostnet-doctor-{}-{}",
            std::process::id(),
            file.file_name()?.to_string_lossy()
        ));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .ok()?;
        let copy = StagedCopy(path);
        std::io::Write::write_all(&mut f, doc.to_string().as_bytes()).ok()?;
        Some(copy)
    }
}

impl Drop for StagedCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The handlers' missing binaries as one check: a failure when the daemon
/// will not start or a handler of the wrapper is lost, else a warning.
fn missing_check(
    name: &'static str,
    daemon: Daemon,
    missing: &[daemon::serving::Missing],
    shown: &str,
    asked: &str,
    fx: &Fixes,
) -> Option<Check> {
    if missing.is_empty() {
        return None;
    }
    let list = missing
        .iter()
        .map(daemon::serving::Missing::sentence)
        .collect::<Vec<_>>()
        .join("; ");
    let fatal = missing.iter().any(|m| m.fatal);
    let ours = missing
        .iter()
        .any(|m| m.role != "monitor_path" && daemon::is_wrapper(&m.what));
    let by = if asked.is_empty() {
        String::new()
    } else {
        format!(", as {asked} reads it")
    };
    let (status, effect) = match (fatal, ours, daemon) {
        (true, _, _) => (
            Status::Fail,
            format!("{} will not start", daemon.binary_name()),
        ),
        (false, true, _) => (
            Status::Fail,
            "the wrapper's handler cannot run a container".to_owned(),
        ),
        (false, false, Daemon::Crio) => (
            Status::Warn,
            "CRI-O drops those handlers when it starts".to_owned(),
        ),
        (false, false, Daemon::Containerd) => (
            Status::Warn,
            "containers of those handlers fail to start".to_owned(),
        ),
    };
    Some(
        check(name, status, format!("{shown}{by}: {list}: {effect}")).fix(format!(
            "{}install what is missing, or point the handler at the binary that is there{}",
            fx.as_root,
            if daemon == Daemon::Crio {
                " (a handler's monitor_path: CRI-O's packages put conmon at /usr/libexec/crio/conmon, Debian's at /usr/bin/conmon)"
            } else {
                ""
            }
        )),
    )
}

/// Where the kubelet's flags may be kept, besides a running kubelet's
/// command line: kubeadm's, then the distributions' environment files.
const KUBELET_FLAG_FILES: [&str; 3] = [
    "/var/lib/kubelet/kubeadm-flags.env",
    "/etc/default/kubelet",
    "/etc/sysconfig/kubelet",
];
const ENDPOINT_FLAG: &str = "container-runtime-endpoint";
/// The kubelet's containerRuntimeEndpoint when neither its config nor a
/// flag sets one (Kubernetes >= 1.27).
const KUBELET_DEFAULT_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";

/// The CRI endpoint the kubelet is given, and where that was found.
struct Endpoint {
    value: String,
    cri: matrix::Cri,
    from: String,
}

/// What doctor found of the kubelet on this node.
struct Kubelet {
    /// The running kubelet's command line (NUL-separated) and its PID.
    running: Option<(u32, String)>,
    config_path: PathBuf,
    /// Its config file's text, or why it cannot be read.
    config: Result<String, String>,
    endpoint: Option<Endpoint>,
}

/// A running kubelet: the first /proc/PID whose comm is `kubelet`.
fn running_kubelet(root: &Root) -> Option<(u32, String)> {
    let proc = root.at("/proc");
    daemon::node::process_ids(&proc)?
        .into_iter()
        .find_map(|pid| {
            let dir = proc.join(pid.to_string());
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            (comm.trim() == "kubelet")
                .then(|| std::fs::read(dir.join("cmdline")).ok())
                .flatten()
                .map(|c| (pid, String::from_utf8_lossy(&c).into_owned()))
        })
}

/// The kubelet's CRI endpoint: a running kubelet's flag, else a flag in
/// its flag files, else its config file's `containerRuntimeEndpoint`
/// (flags win over the config file, as in the kubelet), else the
/// kubelet's default when there is a kubelet at all.
fn kubelet(root: &Root) -> Kubelet {
    let running = running_kubelet(root);
    let config_path = running
        .as_ref()
        .and_then(|(_, cmd)| matrix::flag_value(cmd, "config"))
        .map_or_else(|| root.at(matrix::KUBELET_CONFIG), |c| root.at(c));
    let config = std::fs::read_to_string(&config_path)
        .map_err(|e| format!("{}: {e}", config_path.display()));
    let make = |value: String, from: String| Endpoint {
        cri: matrix::Cri::of_endpoint(&value),
        value,
        from,
    };
    let from_flags = match &running {
        Some((pid, cmd)) => matrix::flag_value(cmd, ENDPOINT_FLAG).map(|v| {
            make(
                v,
                format!("the running kubelet's --{ENDPOINT_FLAG} (PID {pid})"),
            )
        }),
        None => KUBELET_FLAG_FILES.iter().find_map(|f| {
            let text = std::fs::read_to_string(root.at(f)).ok()?;
            matrix::flag_value(&text, ENDPOINT_FLAG)
                .map(|v| make(v, format!("--{ENDPOINT_FLAG} in {f}")))
        }),
    };
    let endpoint = from_flags.or_else(|| {
        let text = config.as_ref().ok()?;
        Some(match matrix::config_endpoint(text) {
            Some(v) => make(
                v,
                format!("containerRuntimeEndpoint in {}", config_path.display()),
            ),
            None => make(
                KUBELET_DEFAULT_ENDPOINT.to_owned(),
                format!(
                    "the kubelet's default: {} sets no containerRuntimeEndpoint",
                    config_path.display()
                ),
            ),
        })
    });
    let endpoint = endpoint.or_else(|| {
        running.as_ref().map(|(pid, _)| {
            make(
                KUBELET_DEFAULT_ENDPOINT.to_owned(),
                format!("the kubelet's default: the running kubelet (PID {pid}) names no endpoint and no readable config"),
            )
        })
    });
    Kubelet {
        running,
        config_path,
        config,
        endpoint,
    }
}

fn kubelet_check(k: &Kubelet) -> Check {
    const NAME: &str = "kubelet";
    match &k.endpoint {
        None => check(
            NAME,
            Status::Skip,
            format!(
                "no kubelet found (none running, no {}, no --{ENDPOINT_FLAG} in {}): every installed daemon is checked",
                k.config_path.display(),
                KUBELET_FLAG_FILES.join(", ")
            ),
        ),
        Some(e) if e.cri == matrix::Cri::Other => check(
            NAME,
            Status::Warn,
            format!(
                "the kubelet uses {} ({}), neither containerd nor CRI-O: no handler that install registers serves its pods",
                e.value, e.from
            ),
        )
        .fix("register the wrapper as that runtime's handler by hand, or point the kubelet at containerd or CRI-O"),
        Some(e) => check(
            NAME,
            Status::Ok,
            format!(
                "the kubelet{} uses {} ({}, from {})",
                if k.running.is_some() { " (running)" } else { "" },
                e.cri.name(),
                e.value,
                e.from
            ),
        ),
    }
}

/// The kubelet's user-namespace feature gates, when its config is readable.
fn kubelet_gates(k: &Kubelet, fx: &Fixes) -> Option<Check> {
    use matrix::Gate;
    const NAME: &str = "kubelet.gates";
    let text = k.config.as_ref().ok()?;
    let gates = matrix::parse_kubelet_gates(text);
    let said = |name: &str, g: &Gate| match g {
        Gate::Set(true) => format!("{name} on"),
        Gate::Set(false) => format!("{name} off"),
        Gate::Unset | Gate::Unreadable(_) => format!("{name} not set (the release's default)"),
    };
    let msg = format!(
        "{}: {}, {}",
        k.config_path.display(),
        said(matrix::USERNS_GATE, &gates.user_namespaces),
        said(matrix::KUBELET_GATE, &gates.host_network)
    );
    let off: Vec<&str> = [
        (matrix::USERNS_GATE, &gates.user_namespaces),
        (matrix::KUBELET_GATE, &gates.host_network),
    ]
    .iter()
    .filter(|(_, g)| **g == Gate::Set(false))
    .map(|(n, _)| *n)
    .collect();
    Some(if off.is_empty() {
        check(NAME, Status::Ok, msg)
    } else {
        check(
            NAME,
            Status::Warn,
            format!("{msg}: the kubelet refuses pods with hostUsers: false{}", if off == [matrix::KUBELET_GATE] { " and hostNetwork: true" } else { "" }),
        )
        .fix(format!(
            "{}set {} to true under featureGates in {} (and on the API server), then restart the kubelet",
            fx.as_root,
            off.join(" and "),
            k.config_path.display()
        ))
    })
}

/// The version matrix (`admin/matrix.rs`), when containerd is installed:
/// its version, the real runtime's `features`, the kubelet's gate.
fn matrix_checks(
    args: &DoctorArgs,
    config: Option<&Config>,
    kubelet: &Kubelet,
    containerd: Option<&daemon::serving::Binary>,
) -> Vec<Check> {
    let Some(containerd) = containerd else {
        return Vec::new();
    };
    let answer = |bin: &Path, arg| match run_with_timeout(bin, arg) {
        Ok((true, out)) => Some(out),
        _ => None,
    };
    let defaults = Config::default();
    let named = args.runtime.as_deref().map(std::ffi::OsStr::new);
    let runtime = crate::runtime::choose(named, &config.unwrap_or(&defaults).runtime).ok();
    let shown = runtime.as_ref().map_or("no runtime".to_owned(), |r| {
        let version = answer(r, "--version").unwrap_or_default();
        format!(
            "{} ({})",
            r.display(),
            version.lines().next().unwrap_or("").trim()
        )
    });
    let facts = matrix::Facts {
        containerd: containerd
            .version
            .as_deref()
            .and_then(matrix::parse_containerd_version),
        runtime: shown,
        features: matrix::parse_features(runtime.and_then(|r| answer(&r, "features")).as_deref()),
        gate: match &kubelet.config {
            Ok(text) => matrix::parse_kubelet_gate(text),
            Err(e) => matrix::Gate::Unreadable(e.clone()),
        },
    };
    matrix::findings(&facts)
        .into_iter()
        .map(|mut f| {
            // Say which containerd was asked: the one that serves the config.
            if f.name == "matrix.containerd" && f.status != Status::Skip {
                f.message = format!("{}; asked {}", f.message, containerd.describe());
            }
            f
        })
        .collect()
}

fn kernel_mount_setattr(fx: &Fixes) -> Check {
    if probe::kernel_supports_mount_setattr() {
        check(
            "kernel.mount_setattr",
            Status::Ok,
            "mount_setattr(2) is available: /sys can be made read-only recursively (rro)",
        )
    } else {
        check("kernel.mount_setattr", Status::Fail, probe::KERNEL_REASON).fix(format!(
            "run Linux >= 5.12; or, to accept a /sys whose submounts stay writable, {}",
            fx.admin(fx.setting("sysfs.fallback=ro"))
        ))
    }
}

fn read_number(path: &Path) -> Result<i64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.trim()
        .parse()
        .map_err(|_| format!("{}: not a number: {:?}", path.display(), text.trim()))
}

fn user_namespaces(root: &Root, fx: &Fixes) -> Check {
    const NAME: &str = "kernel.user_namespaces";
    match read_number(&root.at("/proc/sys/user/max_user_namespaces")) {
        Ok(n) if n > 0 => check(NAME, Status::Ok, format!("user.max_user_namespaces = {n}")),
        Ok(n) => check(
            NAME,
            Status::Fail,
            format!("user.max_user_namespaces = {n}: no user namespace can be created"),
        )
        .fix(fx.admin("sysctl -w user.max_user_namespaces=63000 (and set it in /etc/sysctl.d/)")),
        Err(e) => check(NAME, Status::Fail, format!("cannot read: {e}"))
            .fix("a kernel built with CONFIG_USER_NS"),
    }
}

/// The config file the wrapper reads: `USERNS_HOSTNET_CONFIG`, else the
/// default path (either under `--root`).
fn config_path(root: &Root) -> PathBuf {
    match std::env::var_os(config::CONFIG_ENV).filter(|v| !v.is_empty()) {
        Some(p) => root.at(p),
        None => root.at(config::DEFAULT_PATH),
    }
}

/// The config file's trust as the wrapper running as root judges it: the
/// file, then each directory of its path as named.
fn trusted_by_root(path: &Path) -> Result<(), config::Distrust> {
    use std::os::unix::fs::MetadataExt;
    if let Ok(m) = std::fs::metadata(path) {
        config::check_file(m.uid(), m.mode(), 0)?;
    }
    let mut dirs: Vec<&Path> = path.ancestors().skip(1).collect();
    dirs.reverse();
    for dir in dirs.into_iter().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(m) = std::fs::metadata(dir) {
            config::check_dir(dir, m.uid(), m.mode(), 0)?;
        }
    }
    Ok(())
}

fn config_file(root: &Root, fx: &Fixes) -> (Check, Option<Config>) {
    const NAME: &str = "config";
    let path = config_path(root);
    match config::load_from(&path) {
        Ok(c) => {
            // Not root: the file was judged as this user's wrapper (rootless
            // podman) judges it; containerd's and CRI-O's run as root.
            if let (Some(p), false) = (&c.source, fx.as_root.is_empty()) {
                if let Err(reason) = trusted_by_root(p) {
                    return (
                        check(
                            NAME,
                            Status::Warn,
                            format!(
                                "{}: parses, and a wrapper running as uid {} (rootless podman) trusts it, but one running as root (containerd, CRI-O) refuses every container: {reason}",
                                p.display(),
                                nix::unistd::geteuid()
                            ),
                        )
                        .fix(fx.admin(reason.fix(p))),
                        Some(c),
                    );
                }
            }
            let msg = match &c.source {
                Some(p) => format!("{} parses", p.display()),
                None => format!("{}: no file, the defaults apply", path.display()),
            };
            (check(NAME, Status::Ok, msg), Some(c))
        }
        // Untrusted: the wrapper refuses every container until root alone
        // can change the file; the fix is the commands that make it so.
        Err(config::ConfigError::Untrusted { path, reason }) => (
            check(
                NAME,
                Status::Fail,
                format!(
                    "{}: not trusted: {reason}; the wrapper refuses every container until only root can change it",
                    path.display()
                ),
            )
            .fix(fx.admin(reason.fix(&path))),
            None,
        ),
        Err(e) => (
            check(NAME, Status::Fail, e.to_string()).fix(format!(
                "{}correct the setting named above in {}; the wrapper refuses every container until the file parses (`userns-hostnet config default` documents every setting)",
                fx.as_root,
                path.display()
            )),
            None,
        ),
    }
}

fn log_file(root: &Root, config: &Config, fx: &Fixes) -> Check {
    const NAME: &str = "log";
    let path = root.at(&config.log.file);
    let shown = path.display();
    if path.exists() {
        return match std::fs::OpenOptions::new().append(true).open(&path) {
            Ok(_) => check(NAME, Status::Ok, format!("{shown} is writable")),
            // The wrapper writes it as root: another user's doctor
            // cannot tell.
            Err(e)
                if !fx.as_root.is_empty() && e.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                not_as_root(NAME, format!("{shown}: cannot write: {e}"), fx)
            }
            Err(e) => {
                check(NAME, Status::Fail, format!("{shown}: cannot write: {e}")).fix(format!(
                    "{}make it writable by root, or {}",
                    fx.as_root,
                    fx.setting("log.file=/path/to/userns-hostnet.log")
                ))
            }
        };
    }
    let dir = path.parent().unwrap_or(Path::new("/"));
    match nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK) {
        Ok(()) => check(
            NAME,
            Status::Ok,
            format!("{shown} will be created on the first container start"),
        ),
        Err(e) if !fx.as_root.is_empty() && e == nix::errno::Errno::EACCES => not_as_root(
            NAME,
            format!("{shown} cannot be created: {}: {}", dir.display(), e.desc()),
            fx,
        ),
        Err(e) => check(
            NAME,
            Status::Fail,
            format!("{shown} cannot be created: {}: {}", dir.display(), e.desc()),
        )
        .fix(format!(
            "{}create the directory, or {}",
            fx.as_root,
            fx.setting("log.file=/path/to/userns-hostnet.log")
        )),
    }
}

/// The logrotate stanza the package ships covers the default log file
/// only: a `log.file` elsewhere that no stanza names grows without bound.
fn log_rotation(root: &Root, config: &Config, fx: &Fixes) -> Option<Check> {
    const NAME: &str = "log.rotate";
    let file = &config.log.file;
    if file == Path::new(config::DEFAULT_LOG_FILE) {
        return None;
    }
    let shown = file.display();
    let mut sources = vec![root.at("/etc/logrotate.conf")];
    if let Ok(rd) = std::fs::read_dir(root.at("/etc/logrotate.d")) {
        let mut more: Vec<PathBuf> = rd.filter_map(|e| Some(e.ok()?.path())).collect();
        more.sort();
        sources.extend(more);
    }
    let covering = sources.iter().find(|f| {
        std::fs::read_to_string(f).is_ok_and(|text| {
            logrotate_paths(&text)
                .iter()
                .any(|p| logrotate_covers(p, &file.to_string_lossy()))
        })
    });
    Some(match covering {
        Some(f) => check(NAME, Status::Ok, format!("{shown} is rotated by {}", f.display())),
        None => check(
            NAME,
            Status::Warn,
            format!("{shown} (log.file) is named by no logrotate stanza: it grows without bound (the package's /etc/logrotate.d/userns-hostnet rotates {} only)", config::DEFAULT_LOG_FILE),
        )
        .fix(format!(
            "{}write /etc/logrotate.d/userns-hostnet-log: {shown} {{ weekly maxsize 100M rotate 8 compress delaycompress missingok notifempty create 0640 root root }}",
            fx.as_root
        )),
    })
}

/// Does `pattern`, a path of a logrotate stanza (glob(3): `*` and `?`
/// never cross a `/`), name `path`?
fn logrotate_covers(pattern: &str, path: &str) -> bool {
    let opts = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    glob::Pattern::new(pattern).is_ok_and(|p| p.matches_with(path, opts))
}

/// The paths a logrotate config rotates: the words starting with `/`
/// outside the braces of a stanza (globs kept).
pub fn logrotate_paths(text: &str) -> Vec<String> {
    let mut depth = 0usize;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        for word in line.split_whitespace() {
            for part in word.split_inclusive(['{', '}']) {
                let path = part.trim_end_matches(['{', '}']);
                if depth == 0 && path.starts_with('/') {
                    out.push(path.trim_matches('"').to_owned());
                }
                if part.ends_with('{') {
                    depth += 1;
                } else if part.ends_with('}') {
                    depth = depth.saturating_sub(1);
                }
            }
        }
    }
    out
}

/// What only root can check, checked by another user: a warning, and the
/// same doctor command to run as root.
fn not_as_root(name: &'static str, message: String, fx: &Fixes) -> Check {
    check(
        name,
        Status::Warn,
        format!(
            "{message}: the wrapper runs as root, and doctor runs as uid {}",
            nix::unistd::geteuid()
        ),
    )
    .fix(format!("run it as root: sudo {}", fx.rerun))
}

fn runtime_checks(args: &DoctorArgs, config: Option<&Config>, fx: &Fixes) -> Vec<Check> {
    let defaults = Config::default();
    let candidates = &config.unwrap_or(&defaults).runtime;
    let named = args.runtime.as_deref().map(std::ffi::OsStr::new);
    let runtime = match crate::runtime::choose(named, candidates) {
        Ok(p) => p,
        Err(e) => {
            let msg = match &args.runtime {
                Some(r) => format!("--runtime {r}: not found or not executable"),
                None => e.to_string(),
            };
            let fix = match &args.runtime {
                Some(r) => format!(
                    "install {r}, or give --runtime the path of an executable runtime; without --runtime, doctor checks the one the wrapper chooses"
                ),
                None => format!(
                    "{}install runc (>= 1.1) or crun (>= 1.4), or name it: {}",
                    fx.as_root,
                    fx.setting("runtime=/path/to/runtime")
                ),
            };
            return vec![check("runtime", Status::Fail, msg).fix(fix)];
        }
    };
    let shown = runtime.display().to_string();
    let version = match run_with_timeout(&runtime, "--version") {
        Ok((true, out)) => out.lines().next().unwrap_or("").trim().to_owned(),
        Ok((false, out)) => {
            return vec![check(
                "runtime",
                Status::Fail,
                format!("{shown} --version failed: {}", out.trim()),
            )
            .fix("reinstall the runtime")]
        }
        Err(e) => {
            return vec![check("runtime", Status::Fail, format!("{shown}: {e}"))
                .fix("reinstall the runtime")]
        }
    };
    let mut out = vec![check("runtime", Status::Ok, format!("{shown} ({version})"))];
    out.push(
        match probe::runtime_knows_rro(&runtime, Path::new(probe::CACHE_DIR)) {
            Ok(how) => check("runtime.rro", Status::Ok, format!("knows rro: {how}")),
            Err(why) => check("runtime.rro", Status::Fail, why.to_string()).fix(format!(
                "upgrade to runc >= 1.1 or crun >= 1.4; or, to accept a weaker /sys, {}",
                fx.admin(fx.setting("sysfs.fallback=ro"))
            )),
        },
    );
    out.push(features(&runtime));
    out
}

/// `features`: user namespaces and idmapped mounts.
fn features(runtime: &Path) -> Check {
    const NAME: &str = "runtime.features";
    let answer = match run_with_timeout(runtime, "features") {
        Ok((true, text)) => Some(text),
        _ => None,
    };
    let matrix::RuntimeFeatures::Listed {
        user_namespaces: userns,
        idmap,
    } = matrix::parse_features(answer.as_deref())
    else {
        return check(
            NAME,
            Status::Warn,
            "no \"features\" answer (crun 1.8.1 has none): user namespaces and idmapped mounts cannot be confirmed",
        )
        .fix("none needed for runc or crun, which support user namespaces; idmapped mounts (mounts[].uidMappings) need runc >= 1.2 or crun >= 1.9");
    };
    match (userns, idmap) {
        (false, _) => check(NAME, Status::Fail, "\"features\" lists no user namespace")
            .fix("use a runtime built with user namespace support"),
        (true, true) => check(
            NAME,
            Status::Ok,
            "user namespaces and idmapped mounts supported",
        ),
        (true, false) => check(
            NAME,
            Status::Warn,
            "user namespaces supported; idmapped mounts not listed: specs with mounts[].uidMappings will fail in the runtime",
        )
        .fix("runc >= 1.2 or crun >= 1.9 for idmapped mounts (not needed otherwise)"),
    }
}

/// Run `runtime arg`, with no input and a deadline: (success, stdout).
fn run_with_timeout(runtime: &Path, arg: &str) -> Result<(bool, String), String> {
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

fn cgroup(root: &Root) -> Check {
    const NAME: &str = "cgroup";
    let path = root.at("/proc/self/mountinfo");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return check(NAME, Status::Warn, format!("{}: {e}", path.display())),
    };
    let mounts = mountinfo::parse(&text);
    // The filesystem at a mount point: the last mount there is on top.
    let at = |p: &str| {
        mounts
            .iter()
            .rev()
            .find(|m| m.mount_point == p)
            .map(|m| m.fstype.as_str())
    };
    let fix = "boot with systemd.unified_cgroup_hierarchy=1 (cgroup v2 only); Kubernetes user namespaces and crun's cgroup management expect it";
    match at("/sys/fs/cgroup") {
        Some("cgroup2") => check(NAME, Status::Ok, "cgroup v2 at /sys/fs/cgroup"),
        Some("tmpfs") if at("/sys/fs/cgroup/unified") == Some("cgroup2") => check(
            NAME,
            Status::Warn,
            "hybrid: cgroup v1 controllers under /sys/fs/cgroup, cgroup v2 only at /sys/fs/cgroup/unified: the cgroup mount the wrapper adds for a container with a cgroup namespace is a v1 view (one mount per controller), Kubernetes user-namespaced pods expect cgroup v2, and crun 1.8.1 needs --cgroup-manager=disabled",
        )
        .fix(fix),
        Some("tmpfs") => check(
            NAME,
            Status::Warn,
            "cgroup v1: the cgroup mount the wrapper adds for a container with a cgroup namespace is a v1 view (one mount per controller), and Kubernetes user-namespaced pods expect cgroup v2",
        )
        .fix(fix),
        Some(other) => check(
            NAME,
            Status::Warn,
            format!("/sys/fs/cgroup is {other}, not cgroup2"),
        )
        .fix(fix),
        None => check(NAME, Status::Warn, "nothing is mounted at /sys/fs/cgroup").fix(fix),
    }
}

/// The kubelet's own range when it reads no /etc/subuid (its
/// getKubeletMappings: every ID from 65536 up).
const KUBELET_DEFAULT_FIRST_ID: u64 = 1 << 16;

/// Does the kubelet read /etc/subuid here? Only when a `kubelet` user
/// exists and `getsubids` is installed; otherwise it gives pods IDs from
/// its built-in range. What is missing, when it does not.
fn kubelet_reads_subids(root: &Root) -> Result<(), String> {
    let passwd = std::fs::read_to_string(root.at("/etc/passwd")).unwrap_or_default();
    let user = passwd
        .lines()
        .any(|l| l.split(':').next() == Some(KUBELET_USER));
    let getsubids = if root.fake() {
        ["/usr/bin/getsubids", "/bin/getsubids"]
            .iter()
            .any(|p| root.at(p).is_file())
    } else {
        in_path("getsubids")
    };
    match (user, getsubids) {
        (true, true) => Ok(()),
        (false, true) => Err(format!("no `{KUBELET_USER}` user in /etc/passwd")),
        (true, false) => Err("no getsubids (Debian package uidmap)".to_owned()),
        (false, false) => Err(format!(
            "no `{KUBELET_USER}` user in /etc/passwd and no getsubids (Debian package uidmap)"
        )),
    }
}

fn subids(root: &Root, config: Option<&Config>, fx: &Fixes) -> Check {
    const NAME: &str = "subids";
    let configured = config.and_then(|c| match &c.policy.idmap.allowed_ranges {
        AllowedRanges::SubidUser(u) => Some(u.clone()),
        _ => None,
    });
    let user = configured
        .clone()
        .unwrap_or_else(|| KUBELET_USER.to_owned());
    let etc = root.at("/etc");
    let example = format!("{user}:{}:{}", IDS_PER_POD * 16, IDS_PER_POD * 110);
    let builtin = format!(
        "its built-in range, IDs {KUBELET_DEFAULT_FIRST_ID} to {}",
        u64::from(u32::MAX)
    );
    let make_reader = format!(
        "{}useradd --system --no-create-home --shell /usr/sbin/nologin {KUBELET_USER}; apt-get install uidmap (getsubids); add the same line, e.g. {example}, to /etc/subuid and /etc/subgid; restart the kubelet",
        fx.as_root
    );
    if user == KUBELET_USER {
        if let Err(missing) = kubelet_reads_subids(root) {
            let listed = host::read_subids(&user, &etc).is_ok();
            return match (&configured, listed) {
                (Some(_), _) => check(
                    NAME,
                    Status::Fail,
                    format!("idmap.allowed_ranges names {user}'s /etc/subuid ranges, but the kubelet reads /etc/subuid only with a `{KUBELET_USER}` user and getsubids ({missing}): it gives pods {builtin}, which that policy refuses"),
                )
                .fix(format!("{make_reader}; or drop allowed_ranges from {}", fx.config.display())),
                (None, true) => check(
                    NAME,
                    Status::Warn,
                    format!("/etc/subuid has a range for {user}, which the kubelet ignores ({missing}): it gives pods {builtin}"),
                )
                .fix(format!("for the kubelet to use that range: {make_reader}")),
                (None, false) => check(
                    NAME,
                    Status::Ok,
                    format!("the kubelet reads no /etc/subuid ({missing}): it gives pods {builtin}, {IDS_PER_POD} per pod"),
                ),
            };
        }
    }
    let ids = match host::read_subids(&user, &etc) {
        Ok(ids) => ids,
        Err(e) if configured.is_some() => {
            return check(
                NAME,
                Status::Fail,
                format!("{e}: idmap.allowed_ranges names {user}, so the wrapper refuses every user-namespaced container"),
            )
            .fix(format!(
                "{}add {user}:<start>:<count> to /etc/subuid and /etc/subgid (a multiple of {IDS_PER_POD} per pod, e.g. {example})",
                fx.as_root
            ))
        }
        Err(e) => {
            return check(
                NAME,
                Status::Fail,
                format!("{e}: a `{KUBELET_USER}` user and getsubids exist, so the kubelet asks getsubids for its range and cannot give pods a user namespace without one"),
            )
            .fix(format!(
                "{}add the same line, e.g. {example}, to /etc/subuid and /etc/subgid, then restart the kubelet",
                fx.as_root
            ))
        }
    };
    if user == KUBELET_USER && (ids.uid != ids.gid || ids.uid.len() != 1) {
        return check(
            NAME,
            Status::Fail,
            format!("{user}'s ranges in /etc/subuid and /etc/subgid are not one and the same range in both, which the kubelet needs: it refuses them"),
        )
        .fix(format!("{}give {user} the same single line in /etc/subuid and /etc/subgid, e.g. {example}", fx.as_root));
    }
    let total = |r: &[crate::engine::policy::IdRange]| r.iter().map(|r| r.size).sum::<u64>();
    let pods = total(&ids.uid).min(total(&ids.gid)) / IDS_PER_POD;
    let aligned = ids
        .uid
        .iter()
        .chain(&ids.gid)
        .all(|r| r.start % IDS_PER_POD == 0 && r.size % IDS_PER_POD == 0);
    if pods == 0 {
        return check(
            NAME,
            Status::Fail,
            format!("{user}: the ranges in /etc/subuid and /etc/subgid hold fewer than {IDS_PER_POD} IDs: not one pod fits"),
        )
        .fix(format!("{}give {user} at least {IDS_PER_POD} IDs per pod", fx.as_root));
    }
    let msg = format!(
        "{user}: {} uids, {} gids: room for {pods} pod{} at {IDS_PER_POD} IDs each",
        total(&ids.uid),
        total(&ids.gid),
        if pods == 1 { "" } else { "s" }
    );
    if aligned {
        check(NAME, Status::Ok, msg)
    } else {
        check(
            NAME,
            Status::Warn,
            format!(
                "{msg}; a start or size is not a multiple of {IDS_PER_POD}, which kubelet requires"
            ),
        )
        .fix(format!(
            "{}align {user}'s ranges to multiples of {IDS_PER_POD}",
            fx.as_root
        ))
    }
}

fn ports(root: &Root, fx: &Fixes) -> Check {
    const NAME: &str = "ports";
    match read_number(&root.at("/proc/sys/net/ipv4/ip_unprivileged_port_start")) {
        Ok(n) if n <= 0 => check(
            NAME,
            Status::Ok,
            "net.ipv4.ip_unprivileged_port_start = 0: userns containers on the host network can bind every port",
        ),
        Ok(n) if n <= 1024 => check(
            NAME,
            Status::Ok,
            format!("net.ipv4.ip_unprivileged_port_start = {n}: userns containers on the host network can bind ports >= {n} only (CAP_NET_BIND_SERVICE is checked against the host's user namespace; lower it with sysctl if a pod needs a lower port)"),
        ),
        Ok(n) => check(
            NAME,
            Status::Warn,
            format!("net.ipv4.ip_unprivileged_port_start = {n}: userns containers on the host network can bind ports >= {n} only"),
        )
        .fix(fx.admin("sysctl -w net.ipv4.ip_unprivileged_port_start=1024 (or lower, for the ports your pods need)")),
        Err(e) => check(NAME, Status::Warn, format!("cannot read: {e}")),
    }
}

fn listed(handlers: &[Handler], root: &Root) -> String {
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

/// The real runtime a handler's own link names (what `install` made for a
/// handler that keeps its runtime binary).
fn handler_runtime(h: &Handler, root: &Root) -> Option<PathBuf> {
    crate::runtime::named_by_handler_link(
        root.at(&h.binary).as_os_str(),
        &root.at(crate::runtime::handlers_dir()),
    )
    .map(PathBuf::from)
}

fn in_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// A daemon's binary is installed (in PATH; under the fake root, in
/// /usr/bin, /usr/sbin or /usr/local/bin), whatever /etc holds.
fn installed(root: &Root, binary: &str) -> bool {
    if root.fake() {
        ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
            .iter()
            .any(|d| root.at(Path::new(d).join(binary)).is_file())
    } else {
        in_path(binary)
    }
}

/// A daemon that is installed but not running: what no handler means is
/// a warning, not a failure, unless its config was named (`--…-config`).
fn unless_running(c: Check, root: &Root, socket: &str, named: bool, daemon: &str) -> Check {
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
fn unused(daemon: matrix::Cri, uses: Option<matrix::Cri>, name: &'static str) -> Option<Check> {
    let other = uses.filter(|u| *u != daemon)?;
    Some(check(
        name,
        Status::Skip,
        format!("the kubelet uses {}", other.name()),
    ))
}

fn containerd(
    root: &Root,
    args: &DoctorArgs,
    uses: Option<matrix::Cri>,
    bin: Option<&daemon::serving::Binary>,
    fx: &Fixes,
) -> Check {
    let named = args.containerd_config.is_some();
    if let Some(skip) = (!named)
        .then(|| unused(matrix::Cri::Containerd, uses, "containerd"))
        .flatten()
    {
        return skip;
    }
    if !named && !installed(root, "containerd") {
        return check("containerd", Status::Skip, "containerd is not installed");
    }
    let c = containerd_handlers(root, args, bin, fx);
    unless_running(
        c,
        root,
        daemon::containerd::node::SOCKET,
        named,
        "containerd",
    )
}

fn containerd_handlers(
    root: &Root,
    args: &DoctorArgs,
    bin: Option<&daemon::serving::Binary>,
    fx: &Fixes,
) -> Check {
    const NAME: &str = "containerd";
    let config = root.at(daemon_config_path(args, Daemon::Containerd));
    let flag = &fx.containerd_flag;
    let fix = &fx.admin(format!(
        "userns-hostnet install containerd{flag}, then restart containerd"
    ));
    if !config.is_file() {
        return check(
            NAME,
            Status::Fail,
            format!(
                "{}: no config file, so no runtime handler runs the wrapper",
                config.display()
            ),
        )
        .fix(format!(
            "{}containerd config default > {}; userns-hostnet install containerd{flag}, then restart containerd",
            fx.as_root,
            args.containerd_config
                .as_deref()
                .unwrap_or(Path::new(daemon::containerd::node::CONFIG))
                .display()
        ));
    }
    let doc = match toml::read(&config) {
        Ok(d) => d,
        Err(e) => {
            return check(NAME, Status::Fail, e.to_string())
                .fix(format!("{}correct the file", fx.as_root))
        }
    };
    if let Some(plugin) = daemon::containerd::cri_disabled(&doc) {
        return check(
            NAME,
            Status::Skip,
            format!(
                "{}: disabled_plugins turns {plugin:?} off: this containerd serves no kubelet (Docker's containerd, for one)",
                config.display()
            ),
        );
    }
    let version = daemon::containerd::version(&doc);
    let mut files = vec![(config.clone(), doc)];
    let node_config = daemon_config_path(args, Daemon::Containerd);
    let imports = daemon::containerd::node::imports(&files[0].1, &node_config, &|p| {
        Ok::<_, std::convert::Infallible>(root.at(p))
    });
    for (_, import) in imports.unwrap_or_default() {
        if let Ok(d) = toml::read(&import) {
            files.push((import, d));
        }
    }
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
            .and_then(|p| daemon::dig(p, &[cri]))
            .is_some();
        if replaces && own_cri {
            handlers.clear();
        }
        handlers.extend(daemon::containerd::node::handlers(doc, file, version));
    }
    registered(
        NAME,
        handlers,
        root,
        fix,
        &reinstall("containerd", flag, fx),
    )
}

/// Uninstall and install again a handler, with the same daemon config.
fn reinstall(daemon: &str, flag: &str, fx: &Fixes) -> String {
    fx.admin(format!(
        "userns-hostnet uninstall {daemon}{flag} && userns-hostnet install {daemon}{flag}"
    ))
}

/// An import that throws away CRI settings of the files before it.
fn clobbered(
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

fn registered(
    name: &'static str,
    handlers: Vec<Handler>,
    root: &Root,
    fix: &str,
    reinstall: &str,
) -> Check {
    if handlers.is_empty() {
        return check(name, Status::Fail, "no runtime handler runs the wrapper").fix(fix);
    }
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

fn crio(root: &Root, args: &DoctorArgs, uses: Option<matrix::Cri>, fx: &Fixes) -> Check {
    let named = args.crio_config.is_some();
    if let Some(skip) = (!named)
        .then(|| unused(matrix::Cri::Crio, uses, "crio"))
        .flatten()
    {
        return skip;
    }
    if !named && !installed(root, "crio") {
        return check("crio", Status::Skip, "CRI-O is not installed");
    }
    let c = crio_handlers(root, args, fx);
    unless_running(c, root, daemon::crio::node::SOCKET, named, "CRI-O")
}

fn crio_handlers(root: &Root, args: &DoctorArgs, fx: &Fixes) -> Check {
    const NAME: &str = "crio";
    let mut handlers = Vec::new();
    for file in crio_files(root, &daemon_config_path(args, Daemon::Crio)) {
        match toml::read(&file) {
            Ok(d) => handlers.extend(daemon::crio::node::handlers(&d, &file)),
            Err(e) => {
                return check(NAME, Status::Fail, e.to_string())
                    .fix(format!("{}correct the file", fx.as_root))
            }
        }
    }
    let flag = &fx.crio_flag;
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
