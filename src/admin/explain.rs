//! `userns-hostnet explain`: what the wrapper would do with a spec, and why.
//!
//! The spec goes through [`crate::plan`], the wrapper's own path from a
//! spec to a plan, with the same config file and the same runtime choice:
//! no rule is implemented here. This module only reads the input and prints
//! the plan (or the refusal) for an operator, or as one JSON document.

use super::AdminError;
use crate::bundle;
use crate::cli::ExplainArgs;
use crate::config::{self, Config};
use crate::engine::{self, Change, Plan, Refusal};
use crate::plan::{self, Rro};
use crate::runtime;
use serde::Serialize;
use serde_json::Value;
use std::io::Read;
use std::path::Path;

/// Exit status: the container would start.
pub const EXIT_START: i32 = 0;
/// Exit status: the wrapper would refuse the container.
pub const EXIT_REFUSED: i32 = 1;
/// Exit status: the input (or the config file) could not be read.
pub const EXIT_UNREADABLE: i32 = 2;

/// The `--json` document. Field names are stable (documented in README).
#[derive(Debug, Serialize)]
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
    /// Where `--output` wrote the converted spec.
    pub output: Option<String>,
}

/// Run the subcommand; the exit status.
pub fn run(args: &ExplainArgs) -> Result<i32, AdminError> {
    let (shown, bytes) = match read_input(&args.input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("userns-hostnet: explain: {e}");
            return Ok(EXIT_UNREADABLE);
        }
    };
    let doc = match parse(&bytes) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!("userns-hostnet: explain: {shown}: {e}");
            return Ok(EXIT_UNREADABLE);
        }
    };
    let config = match config::load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "userns-hostnet: explain: config: {e} (the wrapper would refuse every container)"
            );
            return Ok(EXIT_UNREADABLE);
        }
    };
    let ex = explain(shown, doc, &config, args.output.as_deref(), &bytes)?;
    if args.json {
        super::print(&super::json_line(&ex))?;
    } else {
        super::print(render(&ex).as_bytes())?;
    }
    Ok(if ex.would_start {
        EXIT_START
    } else {
        EXIT_REFUSED
    })
}

/// Explain `doc` as the wrapper would treat it with `config`, writing the
/// converted spec to `output` if asked (and the container would start).
pub fn explain(
    input: String,
    doc: Value,
    config: &Config,
    output: Option<&Path>,
    original: &[u8],
) -> Result<Explanation, AdminError> {
    let runtime = runtime::choose(None, &config.runtime);
    let mut warnings = Vec::new();
    // The decision alone, so that a refusal still says what was decided.
    let mut decision = None;
    let result = plan::prepare(doc).and_then(|prepared| {
        decision = Some(prepared.decision().clone());
        match &runtime {
            Ok(rt) => prepared.evaluate(&config.policy, Rro::Probe(rt)),
            Err(e) => {
                if prepared.needs_conversion() {
                    warnings.push(format!(
                        "{e}: rro support of the runtime is unknown and assumed; the wrapper itself would fail to start the container"
                    ));
                }
                prepared.evaluate(&config.policy, Rro::Assume)
            }
        }
    });
    let mut ex = Explanation {
        input,
        config: config.source.as_ref().map(|p| p.display().to_string()),
        runtime: runtime.as_ref().ok().map(|p| p.display().to_string()),
        would_start: false,
        needs_conversion: decision.as_ref().map(|d| d.converts()),
        changed: false,
        decision: decision.as_ref().map(|d| d.kind()),
        reason: decision.as_ref().map(|d| d.to_string()),
        changes: Vec::new(),
        warnings,
        refused: None,
        output: None,
    };
    match result {
        Ok(plan) => {
            fill_from_plan(&mut ex, &plan);
            if let Some(path) = output {
                let bytes = if plan.changed() {
                    bundle::serialize_like(&plan.spec, original)
                } else {
                    original.to_vec()
                };
                std::fs::write(path, bytes).map_err(|source| AdminError::Write {
                    path: path.to_owned(),
                    source,
                })?;
                ex.output = Some(path.display().to_string());
            }
        }
        Err(refusal) => ex.refused = Some(refusal),
    }
    Ok(ex)
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

/// A bundle directory (its config.json, never through a symlink), a file,
/// or `-` for standard input; the name to show and the bytes.
fn read_input(input: &Path) -> Result<(String, Vec<u8>), String> {
    if input.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("standard input: {e}"))?;
        return Ok(("-".into(), bytes));
    }
    let meta = std::fs::metadata(input).map_err(|e| format!("{}: {e}", input.display()))?;
    if meta.is_dir() {
        return match bundle::read(input).map_err(|e| e.to_string())? {
            Some(cfg) => Ok((cfg.path.display().to_string(), cfg.bytes)),
            None => Err(format!(
                "{}: no {} in this directory",
                input.display(),
                bundle::CONFIG
            )),
        };
    }
    let bytes = std::fs::read(input).map_err(|e| format!("{}: {e}", input.display()))?;
    Ok((input.display().to_string(), bytes))
}

/// The input read as the wrapper reads it ([`engine::strict`]), or the
/// wrapper's refusal: it refuses a spec it cannot read exactly as the
/// runtimes would.
fn parse(bytes: &[u8]) -> Result<Value, String> {
    engine::strict::read_spec(bytes)
        .map_err(|r| format!("the wrapper would refuse it: refused: {r}"))
}

/// The text an operator reads.
pub fn render(ex: &Explanation) -> String {
    let mut s = String::new();
    let verdict = match (&ex.refused, ex.changed) {
        (Some(_), _) => "would be REFUSED".to_owned(),
        (None, true) => format!(
            "would start, CONVERTED ({} change{})",
            ex.changes.len(),
            if ex.changes.len() == 1 { "" } else { "s" }
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
    for (i, c) in ex.changes.iter().enumerate() {
        s.push_str(&format!("\n{}. [{}] {}\n", i + 1, c.rule, c.field));
        s.push_str(&format!("   {}\n", c.summary));
        for line in before_after(c) {
            s.push_str(&format!("   {line}\n"));
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
    if let Some(out) = &ex.output {
        s.push_str(&format!("\nconverted spec written to {out}\n"));
    }
    s
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
        let removed: Vec<&str> = before
            .iter()
            .filter(|b| !after.contains(b))
            .copied()
            .collect();
        let added: Vec<&str> = after
            .iter()
            .filter(|a| !before.contains(a))
            .copied()
            .collect();
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
