//! doctor's checks of the wrapper itself: its config and log files, the
//! runtimes it runs and their features, the handlers' runtime links.

use super::*;

/// The config file the wrapper reads: `USERNS_HOSTNET_CONFIG`, else the
/// default path (either under `--root`).
pub(super) fn config_path(root: &Root) -> PathBuf {
    root.at(config::path_from_env())
}

/// The config file's trust as the wrapper running as root judges it: the
/// file, then each directory of its path as named.
pub(super) fn trusted_by_root(path: &Path) -> Result<(), config::Distrust> {
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

pub(super) fn config_file(root: &Root, fx: &Fixes) -> (Check, Option<NodeConfig>) {
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
                                "{}: parses, and a wrapper running as uid {} (rootless podman) trusts it, but one running as root (containerd, CRI-O) refuses every container with a user namespace: {reason}",
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
        // Untrusted: the wrapper refuses every container with a user
        // namespace until root alone
        // can change the file; the fix is the commands that make it so.
        Err(config::ConfigError::Untrusted { path, reason }) => (
            check(
                NAME,
                Status::Fail,
                format!(
                    "{}: not trusted: {reason}; the wrapper refuses every container with a user namespace until only root can change it",
                    path.display()
                ),
            )
            .fix(fx.admin(reason.fix(&path))),
            None,
        ),
        Err(e) => (
            check(NAME, Status::Fail, e.to_string()).fix(format!(
                "{}correct the setting named above in {}; the wrapper refuses every container with a user namespace until the file parses (`userns-hostnet config default` documents every setting)",
                fx.as_root,
                path.display()
            )),
            None,
        ),
    }
}

pub(super) fn log_file(root: &Root, config: &NodeConfig, fx: &Fixes) -> Check {
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
pub(super) fn log_rotation(root: &Root, config: &NodeConfig, fx: &Fixes) -> Option<Check> {
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
                .any(|p| daemon::node::glob_covers(p, &file.to_string_lossy()))
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
pub(super) fn not_as_root(name: &'static str, message: String, fx: &Fixes) -> Check {
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

/// The runtime doctor checks, chosen as the wrapper chooses it, and its
/// answers to `--version` and `features`: asked once, for the runtime
/// checks and for the version matrix.
pub(super) struct Asked {
    /// The runtime and its answer to `--version`.
    runtime: Result<(PathBuf, Answer), userns_hostnet::runtime::LookupError>,
    /// Asked only of a runtime that answered `--version`.
    features: Option<String>,
}

/// Whether the runtime exited 0, and its standard output; or why it did
/// not answer.
type Answer = Result<(bool, String), String>;

impl Asked {
    pub(super) fn of(args: &DoctorArgs, config: Option<&NodeConfig>) -> Asked {
        let defaults = NodeConfig::default();
        let named = args.runtime.as_deref().map(std::ffi::OsStr::new);
        let runtime = userns_hostnet::runtime::choose(named, &config.unwrap_or(&defaults).runtime)
            .map(|r| {
                let version = run_with_timeout(&r, "--version");
                (r, version)
            });
        let features = match &runtime {
            Ok((r, Ok((true, _)))) => match run_with_timeout(r, "features") {
                Ok((true, text)) => Some(text),
                _ => None,
            },
            _ => None,
        };
        Asked { runtime, features }
    }

    /// The runtime's path and the first line of its version, as the
    /// matrix shows it.
    pub(super) fn shown(&self) -> String {
        match &self.runtime {
            Ok((r, Ok((true, out)))) => {
                format!(
                    "{} ({})",
                    r.display(),
                    out.lines().next().unwrap_or("").trim()
                )
            }
            Ok((r, _)) => format!("{} ()", r.display()),
            Err(_) => "no runtime".to_owned(),
        }
    }

    pub(super) fn features(&self) -> Option<&str> {
        self.features.as_deref()
    }
}

pub(super) fn runtime_checks(asked: &Asked, args: &DoctorArgs, fx: &Fixes) -> Vec<Check> {
    let (runtime, version) = match &asked.runtime {
        Ok((path, version)) => (path, version),
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
    let version = match version {
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
        match probe::runtime_knows_rro(runtime, Path::new(probe::CACHE_DIR)) {
            Ok(how) => check("runtime.rro", Status::Ok, format!("knows rro: {how}")),
            Err(why) => check("runtime.rro", Status::Fail, why.to_string()).fix(format!(
                "upgrade to runc >= 1.1 or crun >= 1.4; or, to accept a weaker /sys, {}",
                fx.admin(fx.setting("sysfs.fallback=ro"))
            )),
        },
    );
    out.push(features(asked.features()));
    out
}

/// `features`: user namespaces and idmapped mounts.
pub(super) fn features(answer: Option<&str>) -> Check {
    const NAME: &str = "runtime.features";
    let matrix::RuntimeFeatures::Listed {
        user_namespaces: userns,
        idmap,
    } = matrix::parse_features(answer)
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
