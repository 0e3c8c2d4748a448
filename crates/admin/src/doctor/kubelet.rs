//! doctor's checks of the kubelet: its feature gates, the runtime endpoint
//! it is given, and the version matrix of what it runs.

use super::*;

/// Where the kubelet's flags may be kept, besides a running kubelet's
/// command line: kubeadm's, then the distributions' environment files.
pub(super) const KUBELET_FLAG_FILES: [&str; 3] = [
    "/var/lib/kubelet/kubeadm-flags.env",
    "/etc/default/kubelet",
    "/etc/sysconfig/kubelet",
];

pub(super) const ENDPOINT_FLAG: &str = "container-runtime-endpoint";

/// The kubelet's containerRuntimeEndpoint when neither its config nor a
/// flag sets one (Kubernetes >= 1.27).
pub(super) const KUBELET_DEFAULT_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";

/// The CRI endpoint the kubelet is given, and where that was found.
pub(super) struct Endpoint {
    value: String,
    pub(super) cri: daemon::Cri,
    from: String,
}

/// What doctor found of the kubelet on this node.
pub(super) struct Kubelet {
    /// The running kubelet's command line (NUL-separated) and its PID.
    pub(super) running: Option<(u32, String)>,
    pub(super) config_path: PathBuf,
    /// Its config file's text, or why it cannot be read.
    pub(super) config: Result<String, String>,
    pub(super) endpoint: Option<Endpoint>,
}

/// A running kubelet: the first /proc/PID whose comm is `kubelet`.
pub(super) fn running_kubelet(root: &Root) -> Option<(u32, String)> {
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
pub(super) fn kubelet(root: &Root) -> Kubelet {
    let running = running_kubelet(root);
    let config_path = running
        .as_ref()
        .and_then(|(_, cmd)| matrix::flag_value(cmd, "config"))
        .map_or_else(|| root.at(matrix::KUBELET_CONFIG), |c| root.at(c));
    let config = std::fs::read_to_string(&config_path)
        .map_err(|e| format!("{}: {e}", config_path.display()));
    let make = |value: String, from: String| Endpoint {
        cri: daemon::of_endpoint(&value),
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

pub(super) fn kubelet_check(k: &Kubelet) -> Check {
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
        Some(e) if e.cri == daemon::Cri::Other => check(
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
                e.cri.title(),
                e.value,
                e.from
            ),
        ),
    }
}

/// The kubelet's user-namespace feature gates, when its config is readable.
pub(super) fn kubelet_gates(k: &Kubelet, fx: &Fixes) -> Option<Check> {
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
pub(super) fn matrix_checks(
    asked: &Asked,
    kubelet: &Kubelet,
    containerd: Option<&daemon::binary::Binary>,
) -> Vec<Check> {
    let Some(containerd) = containerd else {
        return Vec::new();
    };
    let facts = matrix::Facts {
        containerd: containerd
            .version
            .as_deref()
            .and_then(matrix::parse_containerd_version),
        runtime: asked.shown(),
        features: matrix::parse_features(asked.features()),
        gate: match &kubelet.config {
            Ok(text) => matrix::parse_kubelet_gates(text).host_network,
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
