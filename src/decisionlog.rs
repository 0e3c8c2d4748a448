//! The decision log: one JSON line per create, run or restore, in the
//! wrapper's own log file (never the runtime's `--log`), so an operator can
//! answer "is this in use on this node, and what did it change". Writing it
//! never fails a container start.

use crate::config::{Level, LogSettings};
use serde::Serialize;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::SystemTime;
use userns_hostnet_engine::slices::POD_ANNOTATIONS;
use userns_hostnet_engine::{Change, Plan, Refusal, Spec};

/// What became of the container, for selecting lines (`jq
/// 'select(.outcome == "refused")'`): set when the line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The spec was converted and the runtime started on it.
    Converted,
    /// The wrapper refused the container: the runtime never ran.
    Refused,
    /// Something other than a rule stopped the start (an error).
    Failed,
    /// Passed to the runtime as it was: nothing to change, or no spec.
    #[default]
    Untouched,
}

/// The pod and container a line is about, from the spec's annotations
/// (containerd's CRI plugin and CRI-O write them; a container started
/// by hand has none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PodName {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}

impl PodName {
    /// From a spec's annotations: containerd's keys, else CRI-O's names.
    pub fn of(spec: &Spec) -> PodName {
        let [pod, namespace, container, crio_sandbox, crio_name] = POD_ANNOTATIONS;
        let get = |key: &str| {
            spec.annotation(key)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        if let Some(pod) = get(pod) {
            return PodName {
                pod: Some(pod),
                namespace: get(namespace),
                container: get(container),
            };
        }
        let sandbox = spec.annotation(crio_sandbox).unwrap_or_default();
        let name = spec.annotation(crio_name).unwrap_or_default();
        crio_names(sandbox, name).unwrap_or_default()
    }
}

/// CRI-O's names: the sandbox's `k8s_POD_NAMESPACE_UID_ATTEMPT`, a
/// container's `k8s_CONTAINER_POD_NAMESPACE_UID_ATTEMPT` (Kubernetes names
/// hold no `_`; the pod's own sandbox has its sandbox name as its name).
pub fn crio_names(sandbox: &str, name: &str) -> Option<PodName> {
    let parts: Vec<&str> = sandbox.split('_').collect();
    let [k8s, pod, namespace, _uid, _attempt] = parts[..] else {
        return None;
    };
    if k8s != "k8s" {
        return None;
    }
    let own: Vec<&str> = name.split('_').collect();
    let container = match own[..] {
        [_, container, p, n, _, _] if p == pod && n == namespace => Some(container.to_owned()),
        _ => None,
    };
    Some(PodName {
        pod: Some(pod.to_owned()),
        namespace: Some(namespace.to_owned()),
        container,
    })
}

/// One line of the log.
#[derive(Debug, Serialize)]
pub struct Entry<'a> {
    pub time: String,
    pub level: &'static str,
    pub command: &'a str,
    pub id: Option<String>,
    /// The pod's name and namespace and the container's name, when the
    /// spec's annotations carry them.
    #[serde(flatten)]
    pub pod: PodName,
    pub bundle: String,
    pub runtime: Option<String>,
    pub outcome: Outcome,
    pub converted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub changes: &'a [Change],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub warnings: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<&'a Refusal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How a command that reads a spec ended, for its log line.
#[derive(Debug)]
pub enum Ending<'a> {
    /// The engine planned (`None`: no spec was read, as for a command
    /// that reads none).
    Planned(Option<&'a Plan>),
    /// The spec file (config.json, or crun's `-f FILE`) was missing: the
    /// command went to the runtime untouched, which reports that itself.
    NoSpec(&'a Path),
    Refused(&'a Refusal),
    /// Something other than the engine stopped it, after the plan if any.
    Failed(Option<&'a Plan>, String),
}

impl<'a> Entry<'a> {
    /// A line for `command` that ended so; the caller fills in where it ran.
    pub fn ending(command: &'a str, ending: Ending<'a>) -> Self {
        let (plan, refused, error, no_spec) = match ending {
            Ending::Planned(plan) => (plan, None, None, None),
            Ending::NoSpec(path) => (None, None, None, Some(path)),
            Ending::Refused(r) => (None, Some(r), None, None),
            Ending::Failed(plan, e) => (plan, None, Some(e), None),
        };
        let mut entry = Entry::new(command, plan);
        entry.refused = refused;
        entry.error = error;
        if let Some(path) = no_spec {
            entry.reason = Some(format!(
                "no spec file {}: nothing to convert; passed to the runtime as it is, which reports the missing file",
                path.display()
            ));
        }
        entry
    }

    /// A line for `command`, with what the plan decided and changed, if the
    /// engine got that far; the caller fills in where it ran.
    pub fn new(command: &'a str, plan: Option<&'a Plan>) -> Self {
        Entry {
            time: now(),
            level: "",
            command,
            id: None,
            pod: plan.map(|p| PodName::of(&p.spec)).unwrap_or_default(),
            bundle: String::new(),
            runtime: None,
            outcome: Outcome::Untouched,
            converted: plan.is_some_and(Plan::changed),
            decision: plan.map(|p| p.decision.kind()),
            reason: plan.map(|p| p.decision.to_string()),
            changes: plan
                .map(|p| p.findings.changes.as_slice())
                .unwrap_or_default(),
            warnings: plan
                .map(|p| p.findings.warnings.as_slice())
                .unwrap_or_default(),
            refused: None,
            error: None,
        }
    }

    /// Append to the configured log. A log that cannot be written never
    /// fails a container: the caller's debug output says so.
    pub fn record(&mut self, log: &LogSettings) {
        if let Err(e) = append(&log.file, log.level, self) {
            tracing::debug!(log = %log.file.display(), error = %e, "cannot write the decision log");
        }
    }

    /// What became of the container.
    pub fn outcome(&self) -> Outcome {
        if self.refused.is_some() {
            Outcome::Refused
        } else if self.error.is_some() {
            Outcome::Failed
        } else if self.converted {
            Outcome::Converted
        } else {
            Outcome::Untouched
        }
    }

    /// The level this line is logged at.
    pub fn severity(&self) -> Level {
        if self.refused.is_some() || self.error.is_some() {
            Level::Error
        } else if !self.warnings.is_empty() {
            Level::Warn
        } else {
            Level::Info
        }
    }
}

pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Append `entry` if its severity is within `max`. One `write` of one
/// line, on a file opened with O_APPEND, so concurrent wrappers do not
/// interleave.
pub fn append(path: &Path, max: Level, entry: &mut Entry<'_>) -> std::io::Result<()> {
    let severity = entry.severity();
    if severity > max {
        return Ok(());
    }
    entry.level = match severity {
        Level::Error => "error",
        Level::Warn => "warning",
        _ => "info",
    };
    entry.outcome = entry.outcome();
    let mut line = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
    line.push(b'\n');
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o640)
        .custom_flags(nix::fcntl::OFlag::O_CLOEXEC.bits())
        .open(path)?;
    f.write_all(&line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(refused: Option<&'a Refusal>, changes: &'a [Change]) -> Entry<'a> {
        Entry {
            time: now(),
            level: "",
            command: "create",
            id: Some("c1".into()),
            pod: PodName::default(),
            bundle: "/b".into(),
            runtime: Some("/usr/sbin/runc".into()),
            outcome: Outcome::Untouched,
            converted: !changes.is_empty(),
            decision: Some("host-network"),
            reason: None,
            changes,
            warnings: &[],
            refused,
            error: None,
        }
    }

    #[test]
    fn lines_append_and_parse() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sub/log.jsonl");
        let change = Change {
            rule: "capabilities",
            field: "process.capabilities.bounding".into(),
            summary: "dropped CAP_NET_RAW".into(),
            before: serde_json::json!(["CAP_NET_RAW"]),
            after: serde_json::json!([]),
        };
        append(
            &log,
            Level::Info,
            &mut entry(None, std::slice::from_ref(&change)),
        )
        .unwrap();
        let r = Refusal::new("sysctl", "linux.sysctl", "net.x cannot be set");
        append(&log, Level::Info, &mut entry(Some(&r), &[])).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["level"], "info");
        assert_eq!(lines[0]["outcome"], "converted");
        assert_eq!(lines[1]["outcome"], "refused");
        assert_eq!(lines[0]["converted"], true);
        assert_eq!(lines[0]["decision"], "host-network");
        assert_eq!(lines[0]["changes"][0]["rule"], "capabilities");
        assert_eq!(lines[1]["level"], "error");
        assert_eq!(lines[1]["refused"]["field"], "linux.sysctl");
        assert!(lines[1].get("changes").is_none());
    }

    /// containerd's annotations, else CRI-O's, name the pod; none: no
    /// field at all.
    #[test]
    fn pod_names_come_from_the_annotations() {
        let spec = |annotations: serde_json::Value| {
            Spec::from_value(&serde_json::json!({
                "ociVersion": "1.0.2",
                "root": {"path": "rootfs"},
                "annotations": annotations,
            }))
            .unwrap()
        };
        let containerd = spec(serde_json::json!({
            "io.kubernetes.cri.container-type": "container",
            "io.kubernetes.cri.sandbox-name": "web-0",
            "io.kubernetes.cri.sandbox-namespace": "shop",
            "io.kubernetes.cri.container-name": "nginx",
        }));
        let crio = spec(serde_json::json!({
            "io.kubernetes.cri-o.SandboxName": "k8s_web-1_shop_0b6d-11ef_0",
            "io.kubernetes.cri-o.Name": "k8s_app_web-1_shop_0b6d-11ef_2",
        }));
        let crio_sandbox = spec(serde_json::json!({
            "io.kubernetes.cri-o.SandboxName": "k8s_web-1_shop_0b6d-11ef_0",
            "io.kubernetes.cri-o.Name": "k8s_web-1_shop_0b6d-11ef_0",
        }));
        let want = |p: &str, n: &str, c: &str| PodName {
            pod: Some(p.into()),
            namespace: Some(n.into()),
            container: Some(c.into()),
        };
        assert_eq!(PodName::of(&containerd), want("web-0", "shop", "nginx"));
        assert_eq!(PodName::of(&crio), want("web-1", "shop", "app"));
        assert_eq!(
            PodName::of(&crio_sandbox),
            PodName {
                container: None,
                ..want("web-1", "shop", "")
            }
        );
        assert_eq!(crio_names("not-k8s", ""), None);
        assert_eq!(crio_names("k8s_a_b_c", ""), None);
        let none = PodName::of(&spec(serde_json::json!({"other": "x"})));
        assert_eq!(none, PodName::default());
        let mut e = entry(None, &[]);
        e.pod = PodName::of(&containerd);
        let line = serde_json::to_value(&e).unwrap();
        assert_eq!(
            (&line["pod"], &line["namespace"], &line["container"]),
            (
                &serde_json::json!("web-0"),
                &serde_json::json!("shop"),
                &serde_json::json!("nginx")
            )
        );
        e.pod = none;
        let line = serde_json::to_value(&e).unwrap();
        assert!(
            line.get("pod").is_none() && line.get("container").is_none(),
            "{line}"
        );
    }

    #[test]
    fn a_missing_spec_has_a_reason() {
        let entry = Entry::ending("create", Ending::NoSpec(Path::new("/b/config.json")));
        assert!(!entry.converted);
        assert_eq!(entry.decision, None);
        let reason = entry.reason.as_deref().unwrap_or_default();
        assert!(
            reason.starts_with("no spec file /b/config.json: nothing to convert"),
            "{reason}"
        );
        assert_eq!(entry.severity(), Level::Info);
        assert_eq!(entry.outcome(), Outcome::Untouched);
    }

    #[test]
    fn level_filters() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        append(&log, Level::Error, &mut entry(None, &[])).unwrap();
        assert!(!log.exists());
        assert_eq!(Level::from_word("WARN"), Some(Level::Warn));
        assert_eq!(Level::from_word("trace"), Some(Level::Debug));
        assert_eq!(Level::from_word("bogus"), None);
    }
}
