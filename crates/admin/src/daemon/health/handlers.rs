//! doctor's `<daemon>.runtime`: each registered handler that runs the
//! wrapper judged by the real runtime it runs (its own link, or the
//! runtime its wrapper's name names), not by the runtime doctor finds in
//! PATH: a daemon runs the handler's binary, and the kubelet admits the
//! handler's pods by what that binary's `features` lists.

use super::*;

/// The real runtime `h` runs, as the node names it, when the handler
/// itself names one: its link, or a wrapper named
/// `userns-hostnet-runtime-NAME` (NAME looked up in the daemons' PATH).
/// `None` for a handler running the wrapper itself, whose runtime is the
/// one the `runtime` checks judge.
fn real_runtime(h: &Handler, root: &Root) -> Option<PathBuf> {
    if let Some(real) = handler_runtime(h, root) {
        return Some(real);
    }
    let base = Path::new(&h.binary).file_name()?.to_str()?;
    let name = base.strip_prefix(userns_hostnet::runtime::OWN_NAME_PREFIX)?;
    if name.is_empty() {
        return None;
    }
    daemon::binary::SERVICE_PATH
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| root.at(p).is_file())
}

/// What the handler's runtime answers, run from the node's file.
fn ask(handler: &str, real: &Path, root: &Root) -> matrix::HandlerRuntime {
    let exe = root.at(real);
    let version = match run_with_timeout(&exe, "--version") {
        Ok((true, out)) => Ok(out.lines().next().unwrap_or("").trim().to_owned()),
        Ok((false, out)) => Err(format!("it failed: {}", out.trim())),
        Err(e) => Err(e),
    };
    let features = match (&version, run_with_timeout(&exe, "features")) {
        (Ok(_), Ok((true, text))) => matrix::parse_features(Some(&text)),
        _ => matrix::RuntimeFeatures::None,
    };
    let rro = probe::runtime_knows_rro(&exe, Path::new(probe::CACHE_DIR))
        .map(|_| ())
        .map_err(|e| e.to_string());
    matrix::HandlerRuntime {
        handler: handler.to_owned(),
        runtime: real.display().to_string(),
        version,
        features,
        rro,
    }
}

/// One check over `handlers` (the daemon's that run the wrapper), the
/// worst of their verdicts; none when no handler names its own runtime.
pub(crate) fn handlers_runtime(
    name: &'static str,
    handlers: &[Handler],
    root: &Root,
    fx: &Fixes,
) -> Option<Check> {
    let verdicts: Vec<(Status, String)> = handlers
        .iter()
        .filter_map(|h| Some((h, real_runtime(h, root)?)))
        .map(|(h, real)| matrix::judge_handler(&ask(&h.name, &real, root)))
        .collect();
    let worst = verdicts.iter().map(|(s, _)| *s).max()?;
    let message = verdicts
        .into_iter()
        .map(|(_, m)| m)
        .collect::<Vec<_>>()
        .join("; ");
    let c = check(name, worst, message);
    Some(if worst == Status::Ok {
        c
    } else {
        c.fix(fx.admin(format!(
            "run the handler on a runtime whose `features` lists the user namespace and idmapped mounts and that knows rro (runc >= 1.2, crun >= 1.9): point {}/HANDLER/{} at it, or make it the runtime of the daemon's default handler and install the handler again",
            userns_hostnet::runtime::handlers_dir().display(),
            userns_hostnet::runtime::HANDLER_RUNTIME_LINK
        )))
    })
}
