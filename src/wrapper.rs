//! The wrapper's data path: argv -> bundle -> config.json -> host facts ->
//! engine plan -> atomic write -> execve. Nothing else runs on it; every
//! subcommand but create, run and restore is an immediate exec.

use crate::argv::{self, Invocation};
use crate::bundle::{self, BundleError};
use crate::engine::{self, Policy, Refusal};
use crate::host;
use crate::runclog;
use crate::runtime::{self, Lookup, LookupError, NamedBy};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use tracing::{debug, warn};

pub const NAME: &str = "userns-hostnet-runtime";
pub const DEBUG_ENV: &str = "USERNS_HOSTNET_DEBUG";

/// Why the wrapper stops instead of becoming the runtime.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("refused: {0}")]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    Lookup(#[from] LookupError),
    #[error("cannot execute {}: {source}", path.display())]
    Exec {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What the operator configured; the defaults until the config file is read.
#[derive(Debug, Clone)]
pub struct Settings {
    pub policy: Policy,
    pub candidates: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            policy: Policy::default(),
            candidates: runtime::DEFAULT_CANDIDATES
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

/// Run the wrapper with the full argv (argv[0] included). Returns only when
/// it could not become the real runtime: the exit status to use.
pub fn main(args: Vec<OsString>) -> i32 {
    let rest = args.get(1..).unwrap_or_default();
    let mut inv = argv::scan(rest);
    inv.argv0 = args.first().cloned();
    runclog::init_debug(inv.debug || std::env::var_os(DEBUG_ENV).is_some_and(|v| !v.is_empty()));
    let settings = Settings::default();
    let failure = match become_runtime(&inv, rest, &settings) {
        Ok(never) => match never {},
        Err(f) => f,
    };
    report(&inv, &failure.to_string());
    1
}

fn become_runtime(
    inv: &Invocation,
    args: &[OsString],
    settings: &Settings,
) -> Result<std::convert::Infallible, Failure> {
    let runtime = find_runtime(inv, settings)?;
    if inv.creating.is_some() && !inv.bundle_missing_value {
        let bundle = inv.bundle.as_deref().unwrap_or(Path::new("."));
        prepare_bundle(bundle, &settings.policy)?;
    }
    debug!(runtime = %runtime.display(), "exec");
    let source = runtime::exec(&runtime, args);
    Err(Failure::Exec {
        path: runtime,
        source,
    })
}

fn find_runtime(inv: &Invocation, settings: &Settings) -> Result<PathBuf, LookupError> {
    let named = match std::env::var_os(runtime::RUNTIME_ENV).filter(|v| !v.is_empty()) {
        Some(v) => Some((v, NamedBy::Env)),
        None => inv
            .argv0
            .as_deref()
            .and_then(runtime::named_by_own_name)
            .map(|v| (v, NamedBy::OwnName)),
    };
    let path_var = std::env::var_os("PATH");
    let self_exe = std::fs::canonicalize("/proc/self/exe").ok();
    Lookup {
        named: named.as_ref().map(|(v, by)| (v.as_os_str(), *by)),
        candidates: &settings.candidates,
        path_var: path_var.as_deref(),
        self_exe: self_exe.as_deref(),
    }
    .find()
}

/// Convert the bundle's config.json in place if the container needs it.
/// What the wrapper cannot read as a spec it leaves to the real runtime,
/// which reports it in its own words.
pub fn prepare_bundle(bundle: &Path, policy: &Policy) -> Result<(), Failure> {
    let Some(config) = bundle::read(bundle)? else {
        debug!(bundle = %bundle.display(), "no config.json: passing through");
        return Ok(());
    };
    let doc: serde_json::Value = match serde_json::from_slice(&config.bytes) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(_) => {
            debug!("config.json is not a JSON object: passing through");
            return Ok(());
        }
        Err(e) => {
            debug!(error = %e, "config.json does not parse: passing through");
            return Ok(());
        }
    };
    let facts = host::gather(&doc, policy);
    let plan = engine::evaluate(doc, &facts, policy)?;
    debug!(decision = %plan.decision, changes = plan.findings.changes.len(), "decided");
    for w in &plan.findings.warnings {
        warn!("{w}");
    }
    for c in &plan.findings.changes {
        debug!(rule = c.rule, field = %c.field, "{}", c.summary);
    }
    if plan.changed() {
        config.replace(&bundle::serialize_like(&plan.spec, &config.bytes))?;
    }
    Ok(())
}

/// One line on stderr and, when the caller gave `--log`, one error line in
/// runc's format there, where containerd looks for it.
fn report(inv: &Invocation, msg: &str) {
    let line = format!("{NAME}: {msg}");
    eprintln!("{line}");
    if let Some(log) = &inv.log_file {
        if let Err(e) = runclog::append_error(log, inv.log_format, &line) {
            debug!(log = %log.display(), error = %e, "cannot write the runtime log");
        }
    }
}
