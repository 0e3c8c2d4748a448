//! Which versions a node needs for `hostNetwork: true` + `hostUsers: false`
//! pods, as measured (docs/registering.md, "Version matrix"): facts about
//! containerd, the real runtime and the kubelet in, findings out. Pure: the
//! caller runs the binaries and reads the files.
//!
//! - containerd 2.x asks the runtime's `features` before every
//!   user-namespaced container and refuses it unless the user namespace and
//!   idmapped mounts are listed (`failed to validate OCI runtime features`);
//!   runc 1.1.5 lists no idmap, crun 1.8.1 has no `features` at all.
//!   containerd 1.7 asks nothing.
//! - The kubelet's `UserNamespacesHostNetworkSupport` admits such a pod
//!   only when the runtime declares `user_namespaces_host_network` through
//!   the CRI (NodeDeclaredFeatures), which containerd does from 2.3.4 on.

use super::check::{check, Check, Status};

/// A release, `major.minor.patch`.
pub type Version = (u64, u64, u64);

/// The first containerd release whose CRI creates user namespaces
/// (`userns_options`); Debian 12's 1.6.20 ignores them.
pub const CRI_USERNS_SINCE: Version = (1, 7, 0);

/// The containerd release that declares `user_namespaces_host_network`.
pub const HOST_NETWORK_USERNS_SINCE: Version = (2, 3, 4);

/// The kubelet's feature gate for user-namespaced host-network pods.
pub const KUBELET_GATE: &str = "UserNamespacesHostNetworkSupport";

/// Where the kubelet's configuration file usually is.
pub const KUBELET_CONFIG: &str = "/var/lib/kubelet/config.yaml";

/// What the real runtime's `features` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeFeatures {
    /// No usable answer (no such subcommand, not JSON).
    None,
    Listed {
        user_namespaces: bool,
        idmap: bool,
    },
}

/// The kubelet's gate, as its configuration file sets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// No file (or it cannot be read): no kubelet here, or elsewhere.
    Unreadable(String),
    /// The file does not name the gate: the kubelet's default applies.
    Unset,
    Set(bool),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// `containerd --version`, when containerd is installed and answers.
    pub containerd: Option<Version>,
    /// The real runtime, as shown (path and version line).
    pub runtime: String,
    pub features: RuntimeFeatures,
    pub gate: Gate,
}

/// `containerd --version`'s third word: `v2.3.4`, `1.7.24~ds1`,
/// `2.4.2+unknown`.
pub fn parse_containerd_version(stdout: &str) -> Option<Version> {
    let word = stdout.lines().next()?.split_whitespace().nth(2)?;
    release(word.strip_prefix('v').unwrap_or(word))
}

/// `MAJOR.MINOR[.PATCH]`, each the digits it starts with (a missing
/// patch is 0).
fn release(word: &str) -> Option<Version> {
    let mut parts = word.splitn(3, '.').map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u64>().ok()
    });
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

/// What the newest releases the matrix knows do alone, without the
/// wrapper, for a user-namespaced container on the host network, as
/// measured: (program, major.minor, what it does).
const ALONE: &[(&str, (u64, u64), &str)] = &[
    ("containerd", (2, 4), "binds /sys rbind,rro, but mounts the host's cgroup tree into the container (root=/../..) and keeps CAP_NET_RAW and CAP_NET_BIND_SERVICE"),
    ("runc", (1, 5), "mounts sysfs as the spec asks, which fails (EPERM) unless the daemon made /sys a bind, and keeps the network capabilities"),
    ("crun", (1, 27), "binds the host's /sys itself, recursively read-only, and mounts the container's own cgroups, but leaves its /sys/fs/cgroup tmpfs writable by the container's root and keeps every capability the spec asks for"),
];

/// What `program` (containerd, runc, crun) at `version` does alone, when
/// the matrix knows its release: "; alone, crun 1.27 binds ...".
fn alone(program: &str, (major, minor, _): Version) -> String {
    ALONE
        .iter()
        .find(|(p, release, _)| *p == program && *release == (major, minor))
        .map_or(String::new(), |(p, (a, b), what)| {
            format!("; alone, {p} {a}.{b} {what}")
        })
}

/// A runtime's `--version` first line, `runc version 1.5.3`: its name
/// and release (a missing patch is 0).
fn runtime_release(line: &str) -> Option<(&str, Version)> {
    let (program, rest) = line.split_once(" version ")?;
    Some((program, release(rest.split_whitespace().next()?)?))
}

/// A `features` document (`None` for no answer or not JSON).
pub fn parse_features(stdout: Option<&str>) -> RuntimeFeatures {
    let Some(doc) = stdout.and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok()) else {
        return RuntimeFeatures::None;
    };
    let linux = &doc["linux"];
    RuntimeFeatures::Listed {
        user_namespaces: linux["namespaces"]
            .as_array()
            .is_some_and(|a| a.iter().any(|n| n == "user")),
        idmap: linux["mountExtensions"]["idmap"]["enabled"] == true,
    }
}

/// What a runtime handler's own real runtime answers: the binary the
/// handler runs, as the daemon would run it, and not the runtime doctor
/// finds first in PATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerRuntime {
    /// The handler's name.
    pub handler: String,
    /// Its real runtime, as the node names it.
    pub runtime: String,
    /// The first line of its `--version`, or why it did not answer.
    pub version: Result<String, String>,
    pub features: RuntimeFeatures,
    /// Whether it knows `rro` (why not, when it does not).
    pub rro: Result<(), String>,
}

/// Can a handler's real runtime run `hostNetwork: true` + `hostUsers:
/// false` pods? The kubelet admits them only for a handler whose
/// runtime lists the user namespace and idmapped mounts (CRI-O reports
/// the handler's features from the runtime's `features`; containerd 2.x
/// refuses the container otherwise), and the wrapper needs `rro`.
pub fn judge_handler(h: &HandlerRuntime) -> (Status, String) {
    let (name, path) = (&h.handler, &h.runtime);
    let version = match &h.version {
        Ok(v) => v,
        Err(why) => {
            return (
                Status::Fail,
                format!(
                    "handler {name}: its real runtime {path} does not answer `--version`: {why}"
                ),
            )
        }
    };
    let runs = format!("handler {name} runs {version} ({path})");
    let old_crun = if runtime_release(version)
        .is_some_and(|(program, (major, minor, _))| program == "crun" && major == 1 && minor < 9)
    {
        "; and crun before 1.9 refuses every container whose ociVersion is not 1.0 (\"unknown version specified\")"
    } else {
        ""
    };
    let refused = "the kubelet sees no user namespace support for this handler and refuses its pods with hostUsers: false, and containerd 2.x refuses them (\"failed to validate OCI runtime features\")";
    match (h.features, &h.rro) {
        (RuntimeFeatures::None, _) => (
            Status::Fail,
            format!("{runs}, which has no `features` answer: {refused}{old_crun}"),
        ),
        (
            RuntimeFeatures::Listed {
                user_namespaces: false,
                ..
            },
            _,
        ) => (
            Status::Fail,
            format!("{runs}, whose `features` lists no user namespace: {refused}"),
        ),
        (RuntimeFeatures::Listed { idmap: false, .. }, _) => (
            Status::Fail,
            format!("{runs}, whose `features` lists no idmapped mounts: {refused}{old_crun}"),
        ),
        (_, Err(why)) => (
            Status::Fail,
            format!("{runs}, which does not know rro ({why}): the wrapper refuses every container it must convert"),
        ),
        (_, Ok(())) => (
            Status::Ok,
            format!(
                "{runs}: lists the user namespace and idmapped mounts, knows rro{}",
                runtime_release(version).map_or(String::new(), |(p, v)| alone(p, v))
            ),
        ),
    }
}

/// Why a node cannot run `hostNetwork: true` + `hostUsers: false` pods
/// through the handler, or `None` when it can: the daemon must declare
/// the feature through the CRI (containerd from 2.3.4; before, the
/// kubelet refuses the pod) and the handler's runtime must pass
/// [`judge_handler`]. `containerd`: the version of a daemon whose version
/// the matrix judges (containerd's; `Some(None)` when it did not answer),
/// `None` for one whose handler's runtime alone decides (CRI-O).
pub fn why_unable(containerd: Option<Option<Version>>, handler: &HandlerRuntime) -> Option<String> {
    match containerd {
        Some(None) => {
            return Some("containerd does not answer `--version`: whether it declares user_namespaces_host_network is not known".to_owned())
        }
        Some(Some(v)) if v < HOST_NETWORK_USERNS_SINCE => {
            return Some(format!(
                "containerd {} does not declare user_namespaces_host_network through the CRI: the kubelet refuses pods with hostNetwork: true and hostUsers: false (containerd >= {} does)",
                shown(v),
                shown(HOST_NETWORK_USERNS_SINCE)
            ))
        }
        _ => {}
    }
    match judge_handler(handler) {
        (Status::Ok, _) => None,
        (_, why) => Some(why),
    }
}

/// The kubelet's gate for user namespaces at all (`hostUsers: false`).
pub const USERNS_GATE: &str = "UserNamespacesSupport";

/// The kubelet's two user-namespace gates, as its config file sets them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gates {
    pub user_namespaces: Gate,
    pub host_network: Gate,
}

/// [`USERNS_GATE`] and [`KUBELET_GATE`] in a KubeletConfiguration.
pub fn parse_kubelet_gates(yaml: &str) -> Gates {
    Gates {
        user_namespaces: parse_gate(yaml, USERNS_GATE),
        host_network: parse_gate(yaml, KUBELET_GATE),
    }
}

/// A gate in a KubeletConfiguration (YAML): `featureGates:` at the top
/// level, as a block (`  Name: true`) or a flow mapping (`{Name: true}`).
/// A value other than true or false reads as unset, which the finding
/// says.
fn parse_gate(yaml: &str, gate: &str) -> Gate {
    let value = |v: &str| {
        let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
        match v {
            "true" | "True" | "TRUE" => Some(true),
            "false" | "False" | "FALSE" => Some(false),
            _ => None,
        }
    };
    let mut lines = yaml.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("featureGates:") else {
            continue;
        };
        let rest = rest.split('#').next().unwrap_or("").trim();
        if let Some(flow) = rest.strip_prefix('{') {
            let flow = flow.trim_end_matches('}');
            for pair in flow.split(',') {
                if let Some((k, v)) = pair.split_once(':') {
                    if k.trim().trim_matches('"') == gate {
                        return value(v).map_or(Gate::Unset, Gate::Set);
                    }
                }
            }
            return Gate::Unset;
        }
        for entry in lines.by_ref() {
            if entry.trim().is_empty() || entry.trim_start().starts_with('#') {
                continue;
            }
            if !entry.starts_with([' ', '\t']) {
                break;
            }
            if let Some((k, v)) = entry.split_once(':') {
                if k.trim().trim_matches('"') == gate {
                    let v = v.split('#').next().unwrap_or("");
                    return value(v).map_or(Gate::Unset, Gate::Set);
                }
            }
        }
        return Gate::Unset;
    }
    Gate::Unset
}

/// `containerRuntimeEndpoint:` at the top level of a KubeletConfiguration.
pub fn config_endpoint(yaml: &str) -> Option<String> {
    yaml.lines().find_map(|line| {
        let rest = line.strip_prefix("containerRuntimeEndpoint:")?;
        let v = rest.split(" #").next().unwrap_or("").trim();
        let v = v.trim_matches(|c| c == '"' || c == '\'');
        (!v.is_empty()).then(|| v.to_owned())
    })
}

/// A kubelet flag's value in a command line (`--flag=V` or `--flag V`),
/// whether its words are split by NULs (/proc/PID/cmdline), blanks or
/// quotes (kubeadm-flags.env, /etc/default/kubelet); the last one wins,
/// as it does for the kubelet.
pub fn flag_value(text: &str, flag: &str) -> Option<String> {
    let words: Vec<&str> = text
        .split(|c: char| c == '\0' || c.is_whitespace() || c == '"' || c == '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let mut found = None;
    for (i, w) in words.iter().enumerate() {
        let Some(rest) = w.strip_prefix("--").and_then(|r| r.strip_prefix(flag)) else {
            continue;
        };
        if let Some(v) = rest.strip_prefix('=') {
            found = Some(v.to_owned());
        } else if rest.is_empty() {
            found = words.get(i + 1).map(|v| (*v).to_owned());
        }
    }
    found
}

fn shown((major, minor, patch): Version) -> String {
    format!("{major}.{minor}.{patch}")
}

const RUNTIME_FIX: &str = "a runtime whose `features` lists the user namespace and idmapped mounts: runc >= 1.2, or crun built with idmap support; name it as the wrapper's real runtime (`runtime` in the config file, or the handler's link)";

/// What containerd makes of the real runtime, and what the kubelet will
/// admit.
pub fn findings(facts: &Facts) -> Vec<Check> {
    let Some(containerd) = facts.containerd else {
        return vec![check(
            "matrix.containerd",
            Status::Skip,
            "containerd does not answer `--version`: the version matrix is not checked",
        )];
    };
    vec![
        runtime_finding(containerd, facts),
        kubelet_finding(containerd, facts),
    ]
}

/// The runtime as containerd `containerd` runs it: whether its CRI has
/// user namespaces, and whether the runtime's `features` pass its check.
fn runtime_finding(containerd: Version, facts: &Facts) -> Check {
    let runtime = &facts.runtime;
    match (containerd.0 >= 2, facts.features) {
        (false, _) if containerd < CRI_USERNS_SINCE => check(
            "matrix.containerd",
            Status::Fail,
            format!(
                "containerd {}: its CRI has no user namespaces (they came in {}), so it cannot run pods with hostUsers: false, with the wrapper or without",
                shown(containerd),
                shown(CRI_USERNS_SINCE)
            ),
        )
        .fix("containerd >= 2.3.4 with a runtime that lists user namespaces and idmapped mounts (runc >= 1.2)"),
        (false, _) => check(
            "matrix.containerd",
            Status::Ok,
            format!(
                "containerd {}: it does not check the runtime's `features` before a user-namespaced container",
                shown(containerd)
            ),
        ),
        (true, RuntimeFeatures::Listed { user_namespaces: true, idmap: true }) => check(
            "matrix.containerd",
            Status::Ok,
            format!(
                "containerd {} checks `features` before every user-namespaced container: {runtime} lists the user namespace and idmapped mounts{}",
                shown(containerd),
                alone("containerd", containerd)
            ),
        ),
        (true, RuntimeFeatures::Listed { user_namespaces, .. }) => check(
            "matrix.containerd",
            Status::Fail,
            format!(
                "containerd {} refuses every user-namespaced container on {runtime}: its `features` lists no {} (\"failed to validate OCI runtime features\"), with the wrapper or without",
                shown(containerd),
                if user_namespaces { "idmapped mounts" } else { "user namespace" }
            ),
        )
        .fix(RUNTIME_FIX),
        (true, RuntimeFeatures::None) => check(
            "matrix.containerd",
            Status::Fail,
            format!(
                "containerd {} refuses every user-namespaced container on {runtime}: it has no `features` answer (\"failed to validate OCI runtime features\"), with the wrapper or without",
                shown(containerd)
            ),
        )
        .fix(RUNTIME_FIX),
    }
}

/// Whether the kubelet admits pods with hostNetwork and hostUsers: false
/// on containerd `containerd`: what it declares through the CRI, and the
/// kubelet's feature gate.
fn kubelet_finding(containerd: Version, facts: &Facts) -> Check {
    let gate = match &facts.gate {
        Gate::Set(true) => format!("the kubelet's {KUBELET_GATE} is on"),
        Gate::Set(false) => format!("the kubelet's {KUBELET_GATE} is off"),
        Gate::Unset => {
            format!("the kubelet's config does not set {KUBELET_GATE}: its default applies")
        }
        Gate::Unreadable(why) => format!("the kubelet's gate is not known ({why})"),
    };
    if containerd < HOST_NETWORK_USERNS_SINCE {
        check(
            "matrix.kubelet",
            Status::Warn,
            format!(
                "containerd {} does not declare user_namespaces_host_network through the CRI: the kubelet's {KUBELET_GATE} will not admit pods with hostNetwork: true and hostUsers: false through CRI-declared features; {gate}",
                shown(containerd)
            ),
        )
        .fix("containerd >= 2.3.4 with a runtime that lists user namespaces and idmapped mounts (runc >= 1.2), and the kubelet's feature gate on; or a kubelet that admits these pods without CRI-declared features")
    } else {
        let (level, fix) = match facts.gate {
            Gate::Set(true) | Gate::Unreadable(_) => (Status::Ok, None),
            Gate::Set(false) | Gate::Unset => (
                Status::Warn,
                Some("set featureGates: {UserNamespacesHostNetworkSupport: true} in the kubelet's config (and on the API server) where your Kubernetes release has it off by default"),
            ),
        };
        let c = check(
            "matrix.kubelet",
            level,
            format!(
                "containerd {} declares user_namespaces_host_network when the runtime lists user namespaces; {gate}",
                shown(containerd)
            ),
        );
        Check {
            fix: fix.map(str::to_owned),
            ..c
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(containerd: Option<Version>, features: RuntimeFeatures, gate: Gate) -> Facts {
        Facts {
            containerd,
            runtime: "/usr/sbin/runc (runc version 1.1.5)".to_owned(),
            features,
            gate,
        }
    }

    const BOTH: RuntimeFeatures = RuntimeFeatures::Listed {
        user_namespaces: true,
        idmap: true,
    };
    const NO_IDMAP: RuntimeFeatures = RuntimeFeatures::Listed {
        user_namespaces: true,
        idmap: false,
    };

    fn levels(f: &[Check]) -> Vec<(&'static str, Status)> {
        f.iter().map(|f| (f.name, f.status)).collect()
    }

    #[test]
    fn containerd_versions_as_they_print_them() {
        assert_eq!(
            parse_containerd_version(
                "containerd github.com/containerd/containerd/v2 v2.3.4 db8809540e1a7a9da5d518876894933ff55692ab\n"
            ),
            Some((2, 3, 4))
        );
        assert_eq!(
            parse_containerd_version(
                "containerd github.com/containerd/containerd 1.7.24~ds1 1.7.24~ds1-6+deb13u1"
            ),
            Some((1, 7, 24))
        );
        assert_eq!(
            parse_containerd_version("containerd containerd.io 1.6.20 2806fc1"),
            Some((1, 6, 20))
        );
        // Built from the module proxy, no commit stamped.
        assert_eq!(
            parse_containerd_version(
                "containerd github.com/containerd/containerd/v2 2.4.2+unknown\n"
            ),
            Some((2, 4, 2))
        );
        assert_eq!(
            parse_containerd_version(
                "containerd github.com/containerd/containerd/v2 v2.4.2+unknown"
            ),
            Some((2, 4, 2))
        );
        assert_eq!(parse_containerd_version("containerd"), None);
        assert_eq!(parse_containerd_version("containerd x dev"), None);
        assert_eq!(parse_containerd_version(""), None);
    }

    #[test]
    fn features_documents() {
        let runc_14 = r#"{"linux":{"namespaces":["cgroup","user"],"mountExtensions":{"idmap":{"enabled":true}}}}"#;
        let runc_11 = r#"{"linux":{"namespaces":["cgroup","user"]}}"#;
        assert_eq!(parse_features(Some(runc_14)), BOTH);
        assert_eq!(parse_features(Some(runc_11)), NO_IDMAP);
        assert_eq!(
            parse_features(Some("unknown command features")),
            RuntimeFeatures::None
        );
        assert_eq!(parse_features(None), RuntimeFeatures::None);
    }

    #[test]
    fn containerd_2_needs_user_namespaces_and_idmap_in_features() {
        let v2 = Some((2, 3, 4));
        for (features, level, missing) in [
            (BOTH, Status::Ok, None),
            (NO_IDMAP, Status::Fail, Some("idmapped mounts")),
            (
                RuntimeFeatures::Listed {
                    user_namespaces: false,
                    idmap: true,
                },
                Status::Fail,
                Some("user namespace"),
            ),
            (
                RuntimeFeatures::None,
                Status::Fail,
                Some("no `features` answer"),
            ),
        ] {
            let f = findings(&facts(v2, features, Gate::Set(true)));
            assert_eq!(f[0].name, "matrix.containerd");
            assert_eq!(f[0].status, level, "{features:?}: {f:#?}");
            assert_eq!(f[0].fix.is_some(), level == Status::Fail);
            if let Some(m) = missing {
                assert!(f[0].message.contains(m), "{}", f[0].message);
                let fix = f[0].fix.as_deref().unwrap_or_default();
                assert!(fix.contains("runc >= 1.2") && fix.contains("crun"), "{fix}");
            }
        }
        // containerd 2.0 is 2.x as well.
        let f = findings(&facts(Some((2, 0, 0)), NO_IDMAP, Gate::Unset));
        assert_eq!(f[0].status, Status::Fail);
    }

    #[test]
    fn containerd_1_does_not_ask_features() {
        for features in [BOTH, NO_IDMAP, RuntimeFeatures::None] {
            let f = findings(&facts(Some((1, 7, 24)), features, Gate::Set(true)));
            assert_eq!(f[0].status, Status::Ok, "{f:#?}");
        }
    }

    #[test]
    fn containerd_1_6_has_no_cri_user_namespaces() {
        let f = findings(&facts(Some((1, 6, 20)), BOTH, Gate::Set(true)));
        assert_eq!(f[0].status, Status::Fail, "{f:#?}");
        assert!(f[0]
            .message
            .starts_with("containerd 1.6.20: its CRI has no user namespaces"));
        assert!(f[0].fix.as_deref().unwrap().contains("2.3.4"));
    }

    #[test]
    fn before_2_3_4_the_kubelet_gate_cannot_admit_through_cri() {
        for v in [(1, 6, 20), (1, 7, 24), (2, 0, 0), (2, 3, 3)] {
            let f = findings(&facts(Some(v), BOTH, Gate::Set(true)));
            assert_eq!(f[1].name, "matrix.kubelet");
            assert_eq!(f[1].status, Status::Warn, "{v:?}");
            assert!(
                f[1].message.contains(KUBELET_GATE)
                    && f[1].message.contains("will not admit")
                    && f[1].message.contains("CRI-declared features"),
                "{}",
                f[1].message
            );
            assert!(f[1]
                .message
                .ends_with(&format!("the kubelet's {KUBELET_GATE} is on")));
        }
    }

    #[test]
    fn from_2_3_4_the_gate_decides() {
        let at = |gate: Gate| findings(&facts(Some((2, 3, 4)), BOTH, gate));
        assert_eq!(
            levels(&at(Gate::Set(true)))[1],
            ("matrix.kubelet", Status::Ok)
        );
        assert_eq!(levels(&at(Gate::Set(false)))[1].1, Status::Warn);
        assert_eq!(levels(&at(Gate::Unset))[1].1, Status::Warn);
        let unknown = at(Gate::Unreadable("no /var/lib/kubelet/config.yaml".into()));
        assert_eq!(unknown[1].status, Status::Ok);
        assert!(unknown[1]
            .message
            .contains("not known (no /var/lib/kubelet/config.yaml)"));
        assert_eq!(
            levels(&findings(&facts(Some((2, 4, 0)), BOTH, Gate::Set(true))))[1].1,
            Status::Ok
        );
    }

    #[test]
    fn no_containerd_no_matrix() {
        let f = findings(&facts(None, BOTH, Gate::Unset));
        assert_eq!(levels(&f), [("matrix.containerd", Status::Skip)]);
    }

    #[test]
    fn both_gates() {
        let yaml = "featureGates:\n  UserNamespacesSupport: false\n  UserNamespacesHostNetworkSupport: true\n";
        assert_eq!(
            parse_kubelet_gates(yaml),
            Gates {
                user_namespaces: Gate::Set(false),
                host_network: Gate::Set(true)
            }
        );
        let flow = "featureGates: {UserNamespacesSupport: true}\n";
        assert_eq!(
            parse_kubelet_gates(flow),
            Gates {
                user_namespaces: Gate::Set(true),
                host_network: Gate::Unset
            }
        );
    }

    #[test]
    fn endpoints_and_flags() {
        assert_eq!(
            config_endpoint("kind: KubeletConfiguration\ncontainerRuntimeEndpoint: \"unix:///var/run/crio/crio.sock\" # CRI-O\n"),
            Some("unix:///var/run/crio/crio.sock".to_owned())
        );
        assert_eq!(config_endpoint("kind: KubeletConfiguration\n"), None);
        assert_eq!(config_endpoint("  containerRuntimeEndpoint: x\n"), None);
        let env = "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.10\"\n";
        assert_eq!(
            flag_value(env, "container-runtime-endpoint"),
            Some("unix:///run/containerd/containerd.sock".to_owned())
        );
        let cmdline = "/usr/bin/kubelet\0--config\0/etc/k/config.yaml\0--container-runtime-endpoint\0/run/crio/crio.sock\0";
        assert_eq!(
            flag_value(cmdline, "container-runtime-endpoint").as_deref(),
            Some("/run/crio/crio.sock")
        );
        assert_eq!(
            flag_value(cmdline, "config").as_deref(),
            Some("/etc/k/config.yaml")
        );
        // A longer flag with the same start is another flag.
        assert_eq!(flag_value("--config-dir=/x", "config"), None);
        assert_eq!(
            flag_value(
                "--container-runtime-endpoint=a --container-runtime-endpoint=b",
                "container-runtime-endpoint"
            )
            .as_deref(),
            Some("b")
        );
    }

    fn gate_of(yaml: &str) -> Gate {
        parse_kubelet_gates(yaml).host_network
    }

    #[test]
    fn kubelet_config_forms() {
        let block = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  UserNamespacesSupport: true\n  UserNamespacesHostNetworkSupport: true # for hostNetwork pods\ncgroupDriver: systemd\n";
        assert_eq!(gate_of(block), Gate::Set(true));
        let off = "featureGates:\n  \"UserNamespacesHostNetworkSupport\": false\n";
        assert_eq!(gate_of(off), Gate::Set(false));
        let flow =
            "featureGates: {UserNamespacesSupport: true, UserNamespacesHostNetworkSupport: true}\n";
        assert_eq!(gate_of(flow), Gate::Set(true));
        let other = "featureGates:\n  UserNamespacesSupport: true\nkind: KubeletConfiguration\n  UserNamespacesHostNetworkSupport: true\n";
        assert_eq!(gate_of(other), Gate::Unset);
        assert_eq!(gate_of("kind: KubeletConfiguration\n"), Gate::Unset);
        assert_eq!(
            gate_of("featureGates:\n  UserNamespacesHostNetworkSupport: maybe\n"),
            Gate::Unset
        );
        assert_eq!(gate_of(""), Gate::Unset);
    }

    fn handler(
        version: &str,
        features: RuntimeFeatures,
        rro: Result<(), String>,
    ) -> HandlerRuntime {
        HandlerRuntime {
            handler: "uhn".into(),
            runtime: "/usr/libexec/crio/crun".into(),
            version: Ok(version.into()),
            features,
            rro,
        }
    }

    #[test]
    fn a_handler_is_judged_by_its_own_runtime() {
        let all = RuntimeFeatures::Listed {
            user_namespaces: true,
            idmap: true,
        };
        let (s, m) = judge_handler(&handler(
            "crun version 1.8.1",
            RuntimeFeatures::None,
            Ok(()),
        ));
        assert_eq!(s, Status::Fail);
        assert!(m.starts_with("handler uhn runs crun version 1.8.1 (/usr/libexec/crio/crun), which has no `features` answer: "), "{m}");
        assert!(m.contains("unknown version specified"), "{m}");
        let no_idmap = RuntimeFeatures::Listed {
            user_namespaces: true,
            idmap: false,
        };
        let (s, m) = judge_handler(&handler("runc version 1.1.5", no_idmap, Ok(())));
        assert_eq!(s, Status::Fail);
        assert!(
            m.contains("lists no idmapped mounts") && !m.contains("ociVersion"),
            "{m}"
        );
        let (s, _) = judge_handler(&handler("runc version 1.4.3", all, Err("no".into())));
        assert_eq!(s, Status::Fail);
        let (s, m) = judge_handler(&handler("crun version 1.19", all, Ok(())));
        assert_eq!((s, m.ends_with("knows rro")), (Status::Ok, true), "{m}");
        let mut gone = handler("", all, Ok(()));
        gone.version = Err("No such file or directory".into());
        assert_eq!(judge_handler(&gone).0, Status::Fail);
    }

    #[test]
    fn a_node_is_able_only_with_a_daemon_and_a_runtime_that_are() {
        let all = RuntimeFeatures::Listed {
            user_namespaces: true,
            idmap: true,
        };
        let good = handler("runc version 1.4.3", all, Ok(()));
        assert_eq!(why_unable(Some(Some((2, 3, 4))), &good), None);
        assert_eq!(why_unable(None, &good), None);
        for old in [(1, 6, 20), (1, 7, 24), (2, 2, 0)] {
            let why = why_unable(Some(Some(old)), &good).unwrap();
            assert!(
                why.contains("does not declare user_namespaces_host_network"),
                "{why}"
            );
        }
        assert!(why_unable(Some(None), &good).is_some());
        let crun = handler("crun version 1.8.1", RuntimeFeatures::None, Ok(()));
        assert!(why_unable(None, &crun)
            .unwrap()
            .contains("no `features` answer"));
        let runc115 = handler(
            "runc version 1.1.5",
            RuntimeFeatures::Listed {
                user_namespaces: true,
                idmap: false,
            },
            Ok(()),
        );
        assert!(why_unable(Some(Some((2, 3, 4))), &runc115).is_some());
        // deploy's rro answer is the wrapper's probe's own.
        use userns_hostnet::probe::answer::features_list_rro;
        assert_eq!(
            features_list_rro(b"{\"mountOptions\":[\"ro\",\"rro\"]}"),
            Some(true)
        );
        assert_eq!(
            features_list_rro(b"{\"mountOptions\":[\"ro\"]}"),
            Some(false)
        );
        assert_eq!(features_list_rro(b"unknown command"), None);
    }

    #[test]
    fn the_newest_releases_say_what_they_do_alone() {
        let all = RuntimeFeatures::Listed {
            user_namespaces: true,
            idmap: true,
        };
        let (s, m) = judge_handler(&handler("crun version 1.27.1", all, Ok(())));
        assert_eq!(s, Status::Ok);
        assert!(
            m.ends_with("knows rro; alone, crun 1.27 binds the host's /sys itself, recursively read-only, and mounts the container's own cgroups, but leaves its /sys/fs/cgroup tmpfs writable by the container's root and keeps every capability the spec asks for"),
            "{m}"
        );
        let (s, m) = judge_handler(&handler("runc version 1.5.3", all, Ok(())));
        assert_eq!(s, Status::Ok);
        assert!(m.contains("knows rro; alone, runc 1.5 mounts sysfs"), "{m}");
        // The releases measured before keep their words; an unknown one says nothing more.
        for v in [
            "runc version 1.4.3",
            "crun version 1.26.0",
            "runc version 1.6.0",
            "youki version 0.7.0",
        ] {
            let (s, m) = judge_handler(&handler(v, all, Ok(())));
            assert_eq!(s, Status::Ok);
            assert!(m.ends_with("knows rro"), "{m}");
        }
        let v = parse_containerd_version(
            "containerd github.com/containerd/containerd/v2 2.4.2+unknown",
        );
        let f = findings(&facts(v, BOTH, Gate::Set(true)));
        assert_eq!(
            levels(&f),
            [
                ("matrix.containerd", Status::Ok),
                ("matrix.kubelet", Status::Ok)
            ]
        );
        assert!(
            f[0].message.starts_with("containerd 2.4.2 checks `features`")
                && f[0].message.ends_with("; alone, containerd 2.4 binds /sys rbind,rro, but mounts the host's cgroup tree into the container (root=/../..) and keeps CAP_NET_RAW and CAP_NET_BIND_SERVICE"),
            "{}",
            f[0].message
        );
        assert!(f[1]
            .message
            .starts_with("containerd 2.4.2 declares user_namespaces_host_network"));
        let f = findings(&facts(Some((2, 3, 4)), BOTH, Gate::Set(true)));
        assert!(
            f[0].message.ends_with("idmapped mounts"),
            "{}",
            f[0].message
        );
        assert_eq!(
            runtime_release("crun version 1.27"),
            Some(("crun", (1, 27, 0)))
        );
        assert_eq!(runtime_release("runc"), None);
    }
}
