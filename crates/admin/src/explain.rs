//! `userns-hostnet explain`: what the wrapper would do with a spec, and why.
//!
//! The spec goes through [`userns_hostnet::plan`], the wrapper's own path from a
//! spec to a plan, with the same config file and the same runtime choice:
//! no rule is implemented here. This module only reads the input and prints
//! the plan (or the refusal) for an operator, or as one JSON document.

use super::AdminError;
use crate::cli::ExplainArgs;
use serde::Serialize;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use userns_hostnet::bundle;
use userns_hostnet::config::{self, NodeConfig};
use userns_hostnet::plan::{self, Rro};
use userns_hostnet::runtime;
use userns_hostnet_engine::{Change, Plan, Refusal, Spec};

/// Exit status: the container would start.
pub const EXIT_START: i32 = 0;
/// Exit status: the wrapper would refuse the container.
pub const EXIT_REFUSED: i32 = 1;
/// Exit status: the input (or the config file) could not be read.
pub const EXIT_UNREADABLE: i32 = 2;

/// The `--json` document. Field names are stable (documented in docs/admin.md).
#[derive(Debug, Default, Serialize)]
pub struct Explanation {
    /// The file read (`-` for standard input).
    pub input: String,
    /// The config file used; `null` for the defaults.
    pub config: Option<String>,
    /// The real runtime the wrapper would run; `null` when none was found.
    pub runtime: Option<String>,
    /// Would the container start through the wrapper?
    pub would_start: bool,
    /// Does the container need the conversion (a user namespace that does
    /// not own its network namespace)? `null` when that could not be told.
    pub needs_conversion: Option<bool>,
    /// Would the wrapper rewrite config.json?
    pub changed: bool,
    /// The decision's stable name (`host-network`, `own-network-namespace`, ...).
    pub decision: Option<&'static str>,
    /// The decision in words.
    pub reason: Option<String>,
    /// Each edit, in the order the rules make them.
    pub changes: Vec<Change>,
    pub warnings: Vec<String>,
    /// Why the container would be refused.
    pub refused: Option<Refusal>,
    /// Where `--output` wrote the spec; `null` when nothing was written.
    pub output: Option<String>,
    /// What `--output` did: `converted` (the converted spec written),
    /// `unchanged` (the input written as it is, byte for byte: the wrapper
    /// would leave config.json alone), `not-written` (the container would
    /// be refused); `null` without `--output`.
    pub output_result: Option<&'static str>,
    /// The bytes `--output` wrote.
    pub output_bytes: Option<usize>,
}

/// Why explain stopped before it had a plan: printed as one line on
/// stderr, or under `--json` as `{"error": {...}}` on stdout.
#[derive(Debug, Serialize)]
pub struct Stop {
    /// The input as named on the command line (`-` for standard input).
    pub input: String,
    /// What is at fault: a file, a JSON path in the spec, or `config`.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
    /// The line the wrapper prints when it refuses the container over
    /// this; `null` when the wrapper would not get that far.
    pub wrapper: Option<String>,
}

impl Stop {
    fn unreadable(input: &str, field: impl Into<String>, reason: impl ToString) -> Stop {
        Stop {
            input: input.to_owned(),
            field: field.into(),
            reason: reason.to_string(),
            wrapper: None,
        }
    }

    /// The wrapper's create stops on this input: its own line, and the
    /// field and reason out of it.
    fn by_wrapper(input: &str, path: &Path, f: &bundle::SpecError) -> Stop {
        let line = format!("{}: {f}", userns_hostnet::WRAPPER_NAME);
        let (field, reason) = match f {
            bundle::SpecError::Refused(r) => (r.field.clone(), r.message.clone()),
            other => {
                let text = other.to_string();
                let prefix = format!("bundle: {}: ", path.display());
                let reason = text.strip_prefix(&prefix).unwrap_or(&text).to_owned();
                (path.display().to_string(), reason)
            }
        };
        Stop {
            input: input.to_owned(),
            field,
            reason,
            wrapper: Some(line),
        }
    }

    /// The one line on stderr.
    pub fn line(&self) -> String {
        match &self.wrapper {
            Some(w) => format!("{}: the wrapper would refuse it: {w}", self.input),
            None if self.field == self.input => format!("{}: {}", self.field, self.reason),
            None => format!("{}: {}: {}", self.input, self.field, self.reason),
        }
    }
}

#[derive(Serialize)]
struct ErrorDocument<'a> {
    error: &'a Stop,
}

/// Run the subcommand; the exit status.
pub fn run(args: &ExplainArgs) -> Result<i32, AdminError> {
    let (input, shown) = match input_of(args) {
        Ok(v) => v,
        Err(stop) => return stopped(args, &stop),
    };
    match explain_input(&input, &shown, args.output.as_deref()) {
        Ok(ex) => {
            super::report(args.json, &ex, render)?;
            Ok(if ex.would_start {
                EXIT_START
            } else {
                EXIT_REFUSED
            })
        }
        Err(stop) => stopped(args, &stop),
    }
}

/// Report `stop` as text on stderr, or as JSON on stdout under `--json`.
/// Exit 2, as for any input explain cannot read, the wrapper's refusals of
/// the file itself included: the status scripts already rely on.
fn stopped(args: &ExplainArgs, stop: &Stop) -> Result<i32, AdminError> {
    if args.json {
        super::print(&super::json_line(&ErrorDocument { error: stop }))?;
    } else {
        eprintln!("userns-hostnet: explain: {}", stop.line());
    }
    Ok(EXIT_UNREADABLE)
}

/// The input to read and the name to show for it.
fn input_of(args: &ExplainArgs) -> Result<(PathBuf, String), Stop> {
    match &args.container {
        Some(id) => container_bundle(id, args.root.as_deref()).map(|b| {
            let shown = b.display().to_string();
            (b, shown)
        }),
        None => Ok((args.input.clone(), args.input.display().to_string())),
    }
}

/// A live container's bundle directory, from the state of the real
/// runtime the wrapper would run (with the same config file): `RUNTIME
/// [--root DIR] state ID`, its `bundle`. Without `--root` the runtime's
/// own default applies, as it does for the daemons that call the wrapper
/// without one.
pub fn container_bundle(id: &str, root: Option<&Path>) -> Result<PathBuf, Stop> {
    let shown = format!("container {id}");
    let config = config::load().map_err(|e| Stop::unreadable(&shown, "config", e))?;
    let runtime = runtime::choose(None, &config.runtime)
        .map_err(|e| Stop::unreadable(&shown, "runtime", e))?;
    let mut cmd = std::process::Command::new(&runtime);
    if let Some(root) = root {
        cmd.arg("--root").arg(root);
    }
    let out = cmd
        .arg("state")
        .arg(id)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Stop::unreadable(&shown, runtime.display().to_string(), e))?;
    let said = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim().to_owned();
    let stop = |why: String| Stop::unreadable(&shown, shown.clone(), why);
    let rt = runtime.display();
    if !out.status.success() {
        let err = said(&out.stderr);
        return Err(stop(format!("{rt} state failed ({}): {err}", out.status)));
    }
    let state: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| stop(format!("{rt} state: not JSON ({e}): {}", said(&out.stdout))))?;
    match state.get("bundle").and_then(Value::as_str) {
        Some(b) if !b.is_empty() => Ok(PathBuf::from(b)),
        _ => Err(stop(format!("{rt} state names no bundle"))),
    }
}

/// Read `input` as the wrapper's create would, load the config, explain.
fn explain_input(input: &Path, shown: &str, output: Option<&Path>) -> Result<Explanation, Stop> {
    let (shown, doc) = read_input(input, shown)?;
    let config = config::load().map_err(|e| {
        Stop::unreadable(
            &shown,
            "config",
            format!("{e} (the wrapper would refuse every container)"),
        )
    })?;
    // Relative bind sources are resolved where the runtime would: the
    // bundle directory (unknown for standard input).
    let bundle = match input {
        i if i.as_os_str() == "-" => None,
        i if i.is_dir() => Some(i.to_owned()),
        i => i.parent().map(Path::to_owned),
    };
    explain(shown.clone(), doc, bundle.as_deref(), &config, output).map_err(|e| {
        let field = output.map_or_else(|| shown.clone(), |p| p.display().to_string());
        Stop::unreadable(&shown, field, e)
    })
}

/// Explain `doc` as the wrapper would treat it with `config`, writing the
/// converted spec to `output` if asked (and the container would start).
pub fn explain(
    input: String,
    doc: Spec,
    bundle: Option<&Path>,
    config: &NodeConfig,
    output: Option<&Path>,
) -> Result<Explanation, AdminError> {
    let runtime = runtime::choose(None, &config.runtime);
    let real = runtime.as_ref().ok().cloned().map(runtime::RealRuntime::of);
    let mut warnings = Vec::new();
    // The decision alone, so that a refusal still says what was decided.
    let mut decision = None;
    let result = plan::prepare(doc).and_then(|prepared| {
        decision = Some(prepared.decision().clone());
        let rro = match (&real, &runtime) {
            (Some(rt), _) => Rro::Probe(rt),
            (None, Ok(_)) => Rro::Assume,
            (None, Err(e)) => {
                if prepared.needs_conversion() {
                    warnings.push(format!(
                        "{e}: rro support of the runtime is unknown and assumed; the wrapper itself would fail to start the container"
                    ));
                }
                Rro::Assume
            }
        };
        // A spec without its rootfs (copied out of its bundle, or read
        // from standard input) is explained all the same, its mount
        // destinations unresolved, and said so; a bundle is judged as the
        // wrapper judges it.
        let missing = prepared
            .needs_conversion()
            .then(|| missing_rootfs(prepared.spec(), bundle))
            .flatten();
        match missing {
            Some(why) => {
                warnings.push(format!(
                    "the mount destinations could not be checked against the rootfs: {why}; the wrapper resolves each one in the rootfs, and refuses one that a symbolic link there leads to or away from /sys, or that it cannot resolve"
                ));
                prepared.evaluate_without_rootfs(bundle, &config.policy, rro)
            }
            None => prepared.evaluate(bundle, &config.policy, rro),
        }
    });
    let mut ex = Explanation {
        input,
        config: config.source.as_ref().map(|p| p.display().to_string()),
        runtime: runtime.as_ref().ok().map(|p| p.display().to_string()),
        needs_conversion: decision.as_ref().map(|d| d.converts()),
        decision: decision.as_ref().map(|d| d.kind()),
        reason: decision.as_ref().map(|d| d.to_string()),
        warnings,
        ..Explanation::default()
    };
    // The bytes the wrapper would write, checked as it checks them: a
    // write it would refuse is explained as that refusal.
    let result = result.and_then(|plan| {
        let bytes = match plan.changed() {
            true => userns_hostnet_engine::write::write_checked(&plan.spec)?,
            false => plan.spec.source().to_vec(),
        };
        Ok((plan, bytes))
    });
    match result {
        Ok((plan, bytes)) => {
            fill_from_plan(&mut ex, &plan);
            if let Some(path) = output {
                std::fs::write(path, &bytes).map_err(|source| AdminError::Write {
                    path: path.to_owned(),
                    source,
                })?;
                ex.output = Some(path.display().to_string());
                ex.output_result = Some(if plan.changed() {
                    "converted"
                } else {
                    "unchanged"
                });
                ex.output_bytes = Some(bytes.len());
            }
        }
        Err(refusal) => {
            ex.refused = Some(refusal);
            if output.is_some() {
                ex.output_result = Some("not-written");
            }
        }
    }
    Ok(ex)
}

/// Why the rootfs `spec` names cannot be looked into, when it is not
/// there: not on this machine, or relative to a bundle directory that is
/// not known (standard input). `None` when it is there, or when the spec
/// names none (both judged as the wrapper judges them): a rootfs that is
/// there but cannot be walked is the wrapper's refusal, not this.
fn missing_rootfs(spec: &Spec, bundle: Option<&Path>) -> Option<String> {
    let root = spec.view().get("root")?.get("path")?.as_str()?;
    let path = match bundle {
        _ if root.starts_with('/') => PathBuf::from(root),
        Some(bundle) => bundle.join(root),
        None => {
            return Some(format!(
                "root.path {root:?} is relative and the bundle directory is not known"
            ))
        }
    };
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some(format!("{} is not there", path.display()))
        }
        _ => None,
    }
}

fn fill_from_plan(ex: &mut Explanation, plan: &Plan) {
    ex.would_start = true;
    ex.needs_conversion = Some(plan.decision.converts());
    ex.changed = plan.changed();
    ex.decision = Some(plan.decision.kind());
    ex.reason = Some(plan.decision.to_string());
    ex.changes = plan.findings.changes.clone();
    ex.warnings.extend(plan.findings.warnings.iter().cloned());
}

/// A bundle directory (its config.json), a file, or `-` for standard
/// input, read and parsed as the wrapper's create reads config.json
/// ([`bundle::SpecFile::read_spec`]: no symlink, no FIFO, the size cap, the strict
/// reading); the name to show, the bytes and the document.
fn read_input(input: &Path, shown: &str) -> Result<(String, Spec), Stop> {
    if input.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Stop::unreadable(shown, "standard input", e))?;
        if bytes.len() as u64 > userns_hostnet_engine::strict::MAX_BYTES {
            let r = userns_hostnet_engine::strict::too_large(bytes.len() as u64);
            return Err(Stop::by_wrapper(
                shown,
                input,
                &bundle::SpecError::Refused(r),
            ));
        }
        let doc = Spec::read(bytes)
            .map_err(|r| Stop::by_wrapper(shown, input, &bundle::SpecError::Refused(r)))?;
        return Ok((shown.to_owned(), doc));
    }
    // A directory is a bundle; the bundle directory itself may be reached
    // through a link, as the runtime reaches it, but not its config.json.
    let meta = std::fs::metadata(input).map_err(|e| Stop::unreadable(shown, shown, e))?;
    let path = if meta.is_dir() {
        input.join(bundle::CONFIG)
    } else {
        input.to_owned()
    };
    match bundle::SpecFile::read_spec(&path) {
        Ok(Some((_, doc))) => Ok((path.display().to_string(), doc)),
        Ok(None) if meta.is_dir() => Err(Stop::unreadable(
            shown,
            shown,
            format!("no {} in this directory", bundle::CONFIG),
        )),
        Ok(None) => Err(Stop::unreadable(shown, shown, "No such file or directory")),
        Err(f) => Err(Stop::by_wrapper(&path.display().to_string(), &path, &f)),
    }
}

/// The text an operator reads.
pub fn render(ex: &Explanation) -> String {
    let mut s = String::new();
    let shown = group_capabilities(&ex.changes);
    let verdict = match (&ex.refused, ex.changed) {
        (Some(_), _) => "would be REFUSED".to_owned(),
        (None, true) => format!(
            "would start, CONVERTED ({} change{})",
            shown.len(),
            if shown.len() == 1 { "" } else { "s" }
        ),
        (None, false) => "would start, unchanged".to_owned(),
    };
    s.push_str(&format!("{}: {verdict}\n", ex.input));
    if let (Some(kind), Some(reason)) = (ex.decision, &ex.reason) {
        s.push_str(&format!("  decision: {kind}: {reason}\n"));
    }
    s.push_str(&format!(
        "  runtime:  {}\n",
        ex.runtime.as_deref().unwrap_or("(none found)")
    ));
    s.push_str(&format!(
        "  config:   {}\n",
        ex.config.as_deref().unwrap_or("(defaults: no config file)")
    ));
    for (i, entry) in shown.iter().enumerate() {
        match entry {
            Shown::One(c) => {
                s.push_str(&format!("\n{}. [{}] {}\n", i + 1, c.rule, c.field));
                s.push_str(&format!("   {}\n", c.summary));
                for line in before_after(c) {
                    s.push_str(&format!("   {line}\n"));
                }
            }
            Shown::Capabilities {
                field,
                why,
                dropped,
            } => {
                s.push_str(&format!("\n{}. [{CAPABILITIES}] {field}\n", i + 1));
                s.push_str(&format!("   dropped from the sets named: {why}\n"));
                for (cap, sets) in dropped {
                    s.push_str(&format!("   {cap}: from {}\n", sets.join(", ")));
                }
            }
        }
    }
    if !ex.warnings.is_empty() {
        s.push('\n');
        for w in &ex.warnings {
            s.push_str(&format!("warning: {w}\n"));
        }
    }
    if let Some(r) = &ex.refused {
        s.push_str(&format!(
            "\nrefused: [{}] {}: {}\n",
            r.rule, r.field, r.message
        ));
    }
    match (ex.output_result, &ex.output, ex.output_bytes) {
        (Some("converted"), Some(out), Some(n)) => {
            s.push_str(&format!("\nconverted spec written to {out} ({n} bytes)\n"));
        }
        (Some("unchanged"), Some(out), Some(n)) => s.push_str(&format!(
            "\nthe input written to {out} unchanged ({n} bytes): the output equals the input, as the wrapper would leave config.json as it is\n"
        )),
        (Some("not-written"), _, _) => {
            s.push_str("\nnothing written to --output: the container would be refused\n");
        }
        _ => {}
    }
    s
}

/// The rule whose changes are shown per capability.
const CAPABILITIES: &str = "capabilities";

/// A change as the text shows it.
enum Shown<'a> {
    One(&'a Change),
    /// The capability rule's changes to one process's sets, one line per
    /// capability naming the sets it left, instead of one per set.
    Capabilities {
        field: &'a str,
        why: &'a str,
        dropped: Vec<(&'a str, Vec<&'a str>)>,
    },
}

/// The changes, the capability rule's edits of one `capabilities` object
/// merged into one entry at the place of the first.
fn group_capabilities(changes: &[Change]) -> Vec<Shown<'_>> {
    let mut out: Vec<Shown> = Vec::new();
    for c in changes {
        let split = (c.rule == CAPABILITIES)
            .then(|| c.field.rsplit_once('.'))
            .flatten()
            .zip(names(&c.before).zip(names(&c.after)));
        let Some(((field, set), (before, after))) = split else {
            out.push(Shown::One(c));
            continue;
        };
        let at = out
            .iter()
            .position(|s| matches!(s, Shown::Capabilities { field: f, .. } if *f == field));
        let at = at.unwrap_or_else(|| {
            // The reason, after "dropped NAMES from SET: ".
            let why = c
                .summary
                .split_once(": ")
                .map_or(c.summary.as_str(), |(_, w)| w);
            out.push(Shown::Capabilities {
                field,
                why,
                dropped: Vec::new(),
            });
            out.len() - 1
        });
        if let Some(Shown::Capabilities { dropped, .. }) = out.get_mut(at) {
            for cap in without(&before, &after) {
                match dropped.iter_mut().find(|(n, _)| *n == cap) {
                    Some((_, sets)) => sets.push(set),
                    None => dropped.push((cap, vec![set])),
                }
            }
        }
    }
    out
}

/// The before/after lines of one change: a mount compactly, a list of
/// names as what it lost and gained, anything else as compact JSON.
fn before_after(c: &Change) -> Vec<String> {
    if let (Some(before), Some(after)) = (names(&c.before), names(&c.after)) {
        if c.rule == "mount-order" {
            return vec![
                format!("before: {}", before.join(", ")),
                format!("after:  {}", after.join(", ")),
            ];
        }
        let removed = without(&before, &after);
        let added = without(&after, &before);
        let mut lines = Vec::new();
        if !removed.is_empty() {
            lines.push(format!("dropped: {}", removed.join(", ")));
        }
        if !added.is_empty() {
            lines.push(format!("added:   {}", added.join(", ")));
        }
        lines.push(format!("{} before, {} after", before.len(), after.len()));
        return lines;
    }
    vec![
        format!("before: {}", compact(&c.before)),
        format!("after:  {}", compact(&c.after)),
    ]
}

/// The names of `list` that `other` does not hold, in order.
fn without<'a>(list: &[&'a str], other: &[&str]) -> Vec<&'a str> {
    list.iter()
        .filter(|n| !other.contains(n))
        .copied()
        .collect()
}

fn names(v: &Value) -> Option<Vec<&str>> {
    v.as_array()?.iter().map(Value::as_str).collect()
}

/// A mount as `/sys  type=bind source=/sys options=rbind,rro,...`; other
/// values as compact JSON; `null` as `(none)`.
pub fn compact(v: &Value) -> String {
    let Some(m) = v.as_object() else {
        return match v {
            Value::Null => "(none)".to_owned(),
            other => other.to_string(),
        };
    };
    let mut parts = Vec::new();
    if let Some(d) = m.get("destination") {
        parts.push(d.as_str().map_or_else(|| d.to_string(), str::to_owned));
    }
    for (k, val) in m {
        if k == "destination" {
            continue;
        }
        let shown = match val {
            Value::String(s) => s.clone(),
            Value::Array(a) if a.iter().all(Value::is_string) => a
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
            other => other.to_string(),
        };
        parts.push(format!("{k}={shown}"));
    }
    parts.join(" ")
}
