//! The wrapper's data path. create, run, restore: argv -> bundle ->
//! config.json -> plan ([`crate::plan`]) -> record -> atomic write ->
//! execve. exec: the record of a converted container decides whether the
//! process file and `--cap` lose the network capabilities. delete: the
//! records of containers that are gone are removed. Every other subcommand is an immediate exec (reading
//! the config file only when nothing else names the real runtime). Nothing
//! imports this module: what it shares lives in plan, runtime and bundle.

use crate::argv::{self, Creating, Dialect, Invocation};
use crate::bundle::{self, BundleError};
use crate::config::{self, ConfigError, NodeConfig};
use crate::decisionlog::{Ending, Entry, PodName};
use crate::plan::{self, Rro};
use crate::records::{RecordError, Records, Target};
use crate::runclog;
use crate::runtime::{self, Kind, LookupError, NamedBy, RealRuntime};
use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use tracing::{debug, warn};
use userns_hostnet_engine::policy::NetCapabilities;
use userns_hostnet_engine::{write, Plan, Refusal, Spec};

pub const NAME: &str = crate::WRAPPER_NAME;
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
    #[error("config: {0}")]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("cannot execute {}: {source}", path.display())]
    Exec {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<bundle::SpecError> for Failure {
    fn from(e: bundle::SpecError) -> Failure {
        match e {
            bundle::SpecError::Refused(r) => Failure::Refused(r),
            bundle::SpecError::Bundle(b) => Failure::Bundle(b),
        }
    }
}

/// Run the wrapper with the full argv (argv[0] included). Returns only when
/// it could not become the real runtime: the exit status to use.
pub fn main(args: Vec<OsString>) -> i32 {
    let rest = args.get(1..).unwrap_or_default();
    // Until the real runtime is known, the strict reading (what runc and
    // crun read alike) names the log file and whether the command line
    // may create a container.
    let mut inv = argv::scan(rest, Dialect::Strict);
    inv.argv0 = args.first().cloned();
    runclog::init_debug(inv.debug || std::env::var_os(DEBUG_ENV).is_some_and(|v| !v.is_empty()));
    let failure = match become_runtime(&mut inv, rest) {
        Ok(never) => match never {},
        Err(f) => f,
    };
    report(&inv, &failure.to_string());
    1
}

/// `inv` is the strict reading on entry; once the real runtime is known it
/// becomes that runtime's reading.
fn become_runtime(
    inv: &mut Invocation,
    args: &[OsString],
) -> Result<std::convert::Infallible, Failure> {
    let named = named_runtime(inv);
    // A pass-through whose runtime is already named reads no file at all.
    // A broken config file stops only the creates whose decision needs
    // it (below); state, kill and delete go on.
    let loaded = named.is_none().then(config::load);
    let candidates = match &loaded {
        Some(Ok(c)) => c.runtime.clone(),
        Some(Err(_)) => NodeConfig::default().runtime,
        None => Vec::new(),
    };
    let path = runtime::find(
        named.as_ref().map(|(v, by)| (v.as_os_str(), *by)),
        &candidates,
    )?;
    // The runtime's kind and the command line as the runtime exec'd will
    // read it, when it may name a subcommand the wrapper acts on (a
    // pass-through such as `state` resolves nothing more).
    let runtime = if argv::may_act_on(args) {
        let runtime = RealRuntime::of(path);
        let argv0 = inv.argv0.take();
        *inv = argv::scan(args, runtime.kind.dialect());
        inv.argv0 = argv0;
        runtime
    } else {
        RealRuntime::passing_through(path)
    };
    let inv = &*inv;
    let (config, broken) = match (inv.creating, loaded) {
        // A broken config file must not stop state, kill or delete (pods
        // would hang terminating): they took the runtime from the defaults.
        (None, Some(Err(e))) => {
            warn_defaults(inv, &e);
            (None, None)
        }
        (None, _) => (None, None),
        (Some(_), None) => match config::load() {
            Ok(c) => (Some(c), None),
            Err(e) => (Some(NodeConfig::default()), Some(e)),
        },
        (Some(_), Some(Ok(c))) => (Some(c), None),
        // Nor a create that needs no policy: only a container with a user
        // namespace is decided by the file. The others run on the
        // defaults' runtime, as state, kill and delete do.
        (Some(_), Some(Err(e))) => (Some(NodeConfig::default()), Some(e)),
    };
    let records = Records::system();
    let mut argv = Cow::Borrowed(args);
    if let (Some(creating), Some(config)) = (inv.creating, &config) {
        let bundle = inv.bundle.as_deref().unwrap_or(Path::new("."));
        let outcome = match &inv.problem {
            Some(p) => Err(argv_refusal(p).into()),
            None => prepare_spec(
                &inv.spec_file(),
                bundle,
                (config, broken),
                &runtime,
                |plan| {
                    remember(
                        &records,
                        inv,
                        runtime.kind,
                        plan,
                        config.policy.net_capabilities,
                    )
                },
            ),
        };
        log_decision(inv, creating, bundle, &runtime.path, config, &outcome);
        // execve frees the whole address space at once; freeing a large
        // spec value by value first would only add to every create.
        std::mem::forget(outcome?);
    } else if let Some(exec) = &inv.exec {
        // A command line the runtime's versions read differently (crun's
        // `--rootless DIR`, the state directory before crun 1.22 and
        // nothing since) may name another container than the record's.
        if let Some(p) = &inv.problem {
            return Err(argv_refusal(p).into());
        }
        if let Some(hardened) = harden_exec(&records, inv, runtime.kind, exec, args)? {
            argv = Cow::Owned(hardened);
        }
    } else if inv.subcommand.as_deref() == Some(OsStr::new("start")) {
        records.bind_pending(inv.container_id.as_deref());
    } else if inv.subcommand.as_deref() == Some(OsStr::new("delete")) {
        if let Some(id) = &inv.container_id {
            records.release(&target(inv, runtime.kind, id));
        }
    }
    if is_version_request(inv, args) {
        return version(&runtime.path, args);
    }
    debug!(runtime = %runtime.path.display(), "exec");
    let source = runtime::exec(&runtime.path, &argv);
    Err(Failure::Exec {
        path: runtime.path,
        source,
    })
}

/// `--version` (`-v`), after global options only: runc's and crun's
/// version request.
fn is_version_request(inv: &Invocation, args: &[OsString]) -> bool {
    inv.subcommand.is_none() && args.iter().any(|a| a == "--version" || a == "-v")
}

/// The real runtime's version, intact and first, then the wrapper's own
/// line. Callers read the runtime's: containerd's go-runc takes
/// `runc version X` from the first line and `commit:` and `spec:` from any
/// line, podman shows the whole text; the wrapper's line starts with its
/// own name, which none of them looks for. The one place the wrapper
/// writes to standard output: asked for, as runc answers there.
fn version(runtime: &Path, args: &[OsString]) -> Result<std::convert::Infallible, Failure> {
    use std::io::Write;
    let status = std::process::Command::new(runtime)
        .args(args)
        .status()
        .map_err(|source| Failure::Exec {
            path: runtime.to_owned(),
            source,
        })?;
    if status.success() {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "{} {}, running {}",
            crate::WRAPPER_NAME,
            crate::VERSION,
            runtime.display()
        );
        let _ = out.flush();
    }
    std::process::exit(status.code().unwrap_or(1));
}

/// An argument of create, run or restore the wrapper cannot place with
/// certainty: `argv: <argument>: <why>`.
fn argv_refusal(p: &argv::Problem) -> Refusal {
    Refusal::new("argv", p.shown_arg(), p.reason.clone())
}

/// The runtime named without reading any file: the environment first, then
/// the wrapper's own name.
fn named_runtime(inv: &Invocation) -> Option<(OsString, NamedBy)> {
    match std::env::var_os(runtime::RUNTIME_ENV).filter(|v| !v.is_empty()) {
        Some(v) => Some((v, NamedBy::Env)),
        None => inv
            .argv0
            .as_deref()
            .and_then(runtime::named_by_own_name)
            .map(|v| (v, NamedBy::OwnName)),
    }
}

/// A pass-through whose config file cannot be read says so in the
/// default decision log (and on stderr with `--debug`), then goes on.
fn warn_defaults(inv: &Invocation, e: &ConfigError) {
    let word = inv
        .subcommand
        .as_deref()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let warnings = [format!(
        "config: {e}: `{word}` takes the real runtime from the defaults"
    )];
    warn!("{}", warnings[0]);
    let mut entry = Entry::ending(&word, Ending::Planned(None));
    entry.id = inv
        .container_id
        .as_ref()
        .map(|i| i.to_string_lossy().into_owned());
    entry.warnings = &warnings;
    entry.record(&NodeConfig::default().log);
}

/// Record whether the container was converted, before its config.json is
/// replaced: its exec'd processes must get the same capabilities. Without
/// the record they would not, so a create that cannot write it is refused.
fn remember(
    records: &Records,
    inv: &Invocation,
    kind: Kind,
    plan: Option<&Plan>,
    policy: NetCapabilities,
) -> Result<(), Failure> {
    let Some(id) = &inv.container_id else {
        return Ok(());
    };
    match plan {
        Some(p) if p.decision.converts() => records
            .mark(&target(inv, kind, id), policy)
            .map_err(|e| record_failure("create", e))?,
        _ => records.bind_pending(Some(id)),
    }
    Ok(())
}

/// The container a command line names, for the records.
fn target<'a>(inv: &'a Invocation, runtime: Kind, id: &'a OsStr) -> Target<'a> {
    Target {
        runtime,
        root: inv.root.as_deref(),
        id,
    }
}

/// A container the wrapper cannot identify the way the runtime will is a
/// refusal (`<word>: container id: ...`); a record it cannot write is a
/// failure of its own.
fn record_failure(word: &'static str, e: RecordError) -> Failure {
    match e {
        RecordError::Unidentified { why } => Refusal::new(word, "container id", why).into(),
        e => e.into(),
    }
}

/// For an `exec` into a container the wrapper converted: the network
/// capabilities leave the process file and the `--cap` options, as the
/// policy recorded at create says. `Some` is the argv to exec instead.
/// A container it does not know passes through untouched.
fn harden_exec(
    records: &Records,
    inv: &Invocation,
    kind: Kind,
    exec: &argv::Exec,
    args: &[OsString],
) -> Result<Option<Vec<OsString>>, Failure> {
    let mut found = None;
    for id in [inv.container_id.as_deref(), exec.next_word.as_deref()]
        .into_iter()
        .flatten()
    {
        if let Some(p) = records
            .lookup(&target(inv, kind, id))
            .map_err(|e| record_failure("exec", e))?
        {
            found = Some((id, p));
            break;
        }
    }
    let Some((id, policy)) = found else {
        return Ok(None);
    };
    if let Some(option) = &exec.unknown_option {
        return Err(Refusal::new(
            "exec",
            "argv",
            format!(
                "{}: not an exec option this wrapper knows, in an exec into {}, a container it converted: it cannot tell what the option adds to the process",
                option.to_string_lossy(),
                id.to_string_lossy()
            ),
        )
        .into());
    }
    if let Some(path) = &exec.process {
        harden_process_file(path, policy)?;
    }
    let values: Vec<(usize, String)> = exec
        .caps
        .iter()
        .enumerate()
        .map(|(i, c)| (i, c.value.to_string_lossy().into_owned()))
        .collect();
    let dropped = userns_hostnet_engine::exec::net_cap_args(
        values.iter().map(|(i, v)| (*i, v.as_str())),
        policy,
    )?;
    if dropped.is_empty() {
        return Ok(None);
    }
    if let Some(c) = dropped.iter().map(|&i| &exec.caps[i]).find(|c| c.grouped) {
        return Err(Refusal::new(
            "exec",
            "argv",
            format!(
                "{}: a network capability grouped with other options, in an exec into {}, a container it converted: it cannot leave the capability out alone",
                args[c.at].to_string_lossy(),
                id.to_string_lossy()
            ),
        )
        .into());
    }
    let mut skip = vec![false; args.len()];
    for &i in &dropped {
        let c = &exec.caps[i];
        debug!(cap = %c.value.to_string_lossy(), "exec: network capability left out of --cap");
        for s in skip.iter_mut().skip(c.at).take(c.len) {
            *s = true;
        }
    }
    Ok(Some(
        args.iter()
            .zip(skip)
            .filter(|(_, s)| !s)
            .map(|(a, _)| a.clone())
            .collect(),
    ))
}

/// The process file of `exec --process`, with the capability rule applied
/// and written back atomically when it changed. What cannot be read is
/// refused: this container was converted, and its exec must be too.
fn harden_process_file(path: &Path, policy: NetCapabilities) -> Result<(), Failure> {
    let in_file = |r: Refusal| {
        Refusal::new(
            "exec",
            path.display().to_string(),
            format!("the process file: {}: {}", r.field, r.message),
        )
    };
    let mut file = match bundle::SpecFile::read(path) {
        Ok(Some(file)) => file,
        // The runtime reports a missing process file in its own words.
        Ok(None) => return Ok(()),
        Err(e) => {
            let too_large = e
                .refusal()
                .map(|r| Refusal::new("exec", r.field, format!("the process file: {}", r.message)));
            return Err(too_large.map_or(e.into(), Failure::from));
        }
    };
    let mut doc = Spec::read_process(std::mem::take(&mut file.bytes)).map_err(in_file)?;
    let changes = userns_hostnet_engine::exec::process(doc.view_mut(), policy)?;
    for c in &changes {
        debug!(field = %c.field, "exec: {}", c.summary);
    }
    if !changes.is_empty() {
        file.replace(&write::write_checked(&doc).map_err(in_file)?)?;
    }
    Ok(())
}

/// Convert the spec the runtime will read (the bundle's config.json, or
/// crun's `-f FILE`) in place if the container needs it. A missing file is
/// left to the real runtime, which reports it in its own words:
/// `Ok(None)`. One the wrapper cannot read exactly as the runtimes would
/// ([`userns_hostnet_engine::strict`]) is refused. `before_write` sees the plan (or `None`) before
/// anything is written, and may stop the create.
/// `broken`: why the config file could not be read (`config` is then the
/// defaults): only a container with a user namespace, which the file's
/// policies decide, is refused for it.
pub fn prepare_spec(
    spec: &Path,
    bundle: &Path,
    (config, broken): (&NodeConfig, Option<ConfigError>),
    runtime: &RealRuntime,
    before_write: impl FnOnce(Option<&Plan>) -> Result<(), Failure>,
) -> Result<Option<Plan>, Failure> {
    let Some((file, doc)) = bundle::SpecFile::read_spec(spec)? else {
        debug!(spec = %spec.display(), "no spec file: passing through");
        if let Some(e) = &broken {
            warn!("config: {e}: no spec file: the defaults' runtime runs");
        }
        before_write(None)?;
        return Ok(None);
    };
    let prepared = plan::prepare(doc)?;
    if let Some(e) = broken {
        if prepared.decision().has_user_namespace() {
            return Err(e.into());
        }
        warn!("config: {e}: a container without a user namespace runs on the defaults' runtime");
    }
    let plan = prepared.evaluate(Some(bundle), &config.policy, Rro::Probe(runtime))?;
    before_write(Some(&plan))?;
    debug!(decision = %plan.decision, changes = plan.findings.changes.len(), "decided");
    for w in &plan.findings.warnings {
        warn!("{w}");
    }
    for c in &plan.findings.changes {
        debug!(rule = c.rule, field = %c.field, "{}", c.summary);
    }
    if plan.changed() {
        file.replace(&write::write_checked(&plan.spec)?)?;
    }
    Ok(Some(plan))
}

/// One line in the wrapper's own log for every create, run and restore.
/// A log that cannot be written never fails the container.
fn log_decision(
    inv: &Invocation,
    creating: Creating,
    bundle: &Path,
    runtime: &Path,
    config: &NodeConfig,
    outcome: &Result<Option<Plan>, Failure>,
) {
    let spec = absolute(&inv.spec_file());
    let ending = match outcome {
        Ok(None) => Ending::NoSpec(&spec),
        Ok(plan) => Ending::Planned(plan.as_ref()),
        Err(Failure::Refused(r)) => Ending::Refused(r),
        Err(f) => Ending::Failed(None, f.to_string()),
    };
    let mut entry = Entry::ending(creating.word(), ending);
    // A refused spec's plan is gone: its annotations are read again, on
    // this path alone, to name the pod.
    if let Err(Failure::Refused(_)) = outcome {
        if let Ok(Some((_, doc))) = bundle::SpecFile::read_spec(&spec) {
            entry.pod = PodName::of(&doc);
        }
    }
    entry.id = inv
        .container_id
        .as_ref()
        .map(|i| i.to_string_lossy().into_owned());
    entry.bundle = absolute(bundle).display().to_string();
    entry.runtime = Some(runtime.display().to_string());
    entry.record(&config.log);
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
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
