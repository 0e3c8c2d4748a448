//! The Helm chart deploy/helm/userns-hostnet, linted and rendered by the
//! real helm v4 (`make helm`) for each distribution and a few value sets,
//! the objects parsed with PyYAML (Debian's python3-yaml): each DaemonSet
//! passes `userns-hostnet deploy` the distribution's config file and
//! restart in variables deploy reads, placement values land in both
//! DaemonSets, the RuntimeClass selects the label the installer sets, and
//! deploy/'s manifests are the chart's default render. No cluster, no root.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::CommandFactory;
use serde_json::{json, Value};
use userns_hostnet_admin::cli::Cli;
use userns_hostnet_admin::daemon::containerd::node::rancher_distro;
use userns_hostnet_admin::deploy::LABEL;

/// scripts/helm.sh's version and cache.
const HELM_VERSION: &str = "v4.3.2";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn chart() -> PathBuf {
    repo().join("deploy/helm/userns-hostnet")
}

/// The helm binary `make helm` builds (or $USERNS_HOSTNET_HELM); missing,
/// the test fails saying how to get it.
fn helm_binary() -> PathBuf {
    let path = std::env::var_os("USERNS_HOSTNET_HELM")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new("/var/cache/userns-hostnet/helm")
                .join(HELM_VERSION)
                .join("helm")
        });
    assert!(
        path.is_file(),
        "helm {HELM_VERSION} is missing at {}: run `make helm` (scripts/helm.sh builds it from the Go module proxy)",
        path.display()
    );
    path
}

/// helm with its cache, config and data in a directory of its own, so
/// that the test reads and writes nothing of the user's.
struct Helm {
    bin: PathBuf,
    home: tempfile::TempDir,
}

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Helm {
    fn new() -> Helm {
        Helm {
            bin: helm_binary(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, args: &[&str], values: &[(&str, &str)]) -> Out {
        self.run_chart(&chart(), args, values)
    }

    fn run_chart(&self, chart: &Path, args: &[&str], values: &[(&str, &str)]) -> Out {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args).arg(chart);
        for (k, v) in values {
            cmd.arg("--set").arg(format!("{k}={v}"));
        }
        let h = self.home.path();
        let out = cmd
            .env("HELM_CACHE_HOME", h.join("cache"))
            .env("HELM_CONFIG_HOME", h.join("config"))
            .env("HELM_DATA_HOME", h.join("data"))
            // No cluster: nothing of the user's is read.
            .env("KUBECONFIG", h.join("kubeconfig"))
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", self.bin.display()));
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// A values file in the helm home, for values `--set` cannot spell
    /// plainly (lists of maps, nested affinity).
    fn values_file(&self, name: &str, values: &Value) -> String {
        let p = self.home.path().join(name);
        fs::write(&p, values.to_string()).unwrap();
        p.to_str().unwrap().to_owned()
    }

    fn lint(&self, extra: &[&str], values: &[(&str, &str)]) {
        let mut args = vec!["lint", "--strict"];
        args.extend(extra);
        let out = self.run(&args, values);
        assert!(
            out.ok,
            "helm lint {extra:?} {values:?}:\n{}{}",
            out.stdout, out.stderr
        );
    }

    /// The objects `helm template` renders, as JSON.
    fn template(&self, extra: &[&str], values: &[(&str, &str)]) -> Vec<Value> {
        self.template_of(&chart(), "userns-hostnet", extra, values)
    }

    /// The objects `helm template RELEASE CHART` renders, as JSON.
    fn template_of(
        &self,
        chart: &Path,
        release: &str,
        extra: &[&str],
        values: &[(&str, &str)],
    ) -> Vec<Value> {
        let mut args = vec!["template", release];
        args.extend(extra);
        let out = self.run_chart(chart, &args, values);
        assert!(out.ok, "helm template {extra:?} {values:?}: {}", out.stderr);
        yaml_documents(&out.stdout)
    }

    /// The one error line of a refused render.
    fn refused(&self, values: &[(&str, &str)]) -> String {
        let out = self.run(&["template", "userns-hostnet"], values);
        assert!(!out.ok, "{values:?} rendered:\n{}", out.stdout);
        out.stderr
    }
}

fn yaml_documents(text: &str) -> Vec<Value> {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(sys.stdin) if d is not None]))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run python3 (install the Debian packages python3 and python3-yaml)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the render does not parse as YAML: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("python3 printed JSON")
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
}

fn installer(docs: &[Value]) -> &Value {
    find(docs, "DaemonSet", "userns-hostnet-deploy")
        .unwrap_or_else(|| panic!("no installer DaemonSet in {docs:#?}"))
}

fn cleanup(docs: &[Value]) -> &Value {
    find(docs, "DaemonSet", "userns-hostnet-cleanup")
        .unwrap_or_else(|| panic!("no cleanup DaemonSet in {docs:#?}"))
}

/// The container's env, name to value (`valueFrom` as its JSON).
fn env_of(ds: &Value) -> BTreeMap<String, String> {
    ds["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .map(|e| {
            let v = match &e["value"] {
                Value::String(s) => s.clone(),
                Value::Null => e["valueFrom"].to_string(),
                other => panic!("env {} is not a string: {other}", e["name"]),
            };
            (e["name"].as_str().unwrap().to_owned(), v)
        })
        .collect()
}

/// The env as `deploy`'s command line: every variable is one deploy reads,
/// and the whole parses as the admin tool parses it.
fn check_deploy_reads(env: &BTreeMap<String, String>) {
    let cli = Cli::command();
    let deploy = cli
        .get_subcommands()
        .find(|s| s.get_name() == "deploy")
        .expect("deploy subcommand");
    let mut argv = vec!["userns-hostnet".to_owned(), "deploy".to_owned()];
    for (name, value) in env {
        let arg = deploy
            .get_arguments()
            .find(|a| a.get_env().is_some_and(|e| e == name.as_str()))
            .unwrap_or_else(|| panic!("{name} is not read by deploy"));
        let long = format!("--{}", arg.get_long().expect("a long option"));
        if arg.get_action().takes_values() {
            if name != "NODE_NAME" {
                argv.extend([long, value.clone()]);
            }
        } else if value == "true" {
            argv.push(long);
        } else {
            assert_eq!(value, "false", "{name}: a flag is true or false");
        }
    }
    if let Err(e) = <Cli as clap::Parser>::try_parse_from(&argv) {
        panic!("{argv:?} does not parse: {e}");
    }
}

const DISTRIBUTIONS: [&str; 5] = ["k8s", "k3s", "rke2", "k0s", "microk8s"];

/// What each distribution must hand deploy: USERNS_HOSTNET_DAEMON,
/// USERNS_HOSTNET_DAEMON_CONFIG, and the units restarted (the first
/// active one), each written here from the distribution's own layout.
fn expected(distribution: &str) -> (Option<&str>, Option<&str>, &[&str]) {
    match distribution {
        "k8s" => (None, None, &[]),
        "k3s" => (
            Some("containerd"),
            Some("/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl"),
            &["k3s-agent", "k3s"],
        ),
        "rke2" => (
            Some("containerd"),
            Some("/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl"),
            &["rke2-agent", "rke2-server"],
        ),
        "k0s" => (
            Some("containerd"),
            Some("/etc/k0s/containerd.toml"),
            &["k0sworker", "k0scontroller"],
        ),
        "microk8s" => (
            Some("containerd"),
            Some("/var/snap/microk8s/current/args/containerd-template.toml"),
            &["snap.microk8s.daemon-containerd.service"],
        ),
        other => panic!("no expectation for {other}"),
    }
}

/// Runs a restart command line as deploy has the host's /bin/sh run it,
/// with a systemctl that reports `active` active and records restarts:
/// the units restarted, and whether the line succeeded.
fn run_restart(line: &str, active: &[&str]) -> (Vec<String>, bool) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("restarted");
    let systemctl = dir.path().join("systemctl");
    fs::write(
        &systemctl,
        format!(
            "#!/bin/sh\ncase \"$1 $2\" in\n\"is-active --quiet\") for u in {active}; do [ \"$u\" = \"$3\" ] && exit 0; done; exit 3 ;;\n\"restart \"*) echo \"$2\" >>{log}; exit 0 ;;\nesac\nexit 2\n",
            active = active.join(" "),
            log = log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&systemctl, fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("/bin/sh")
        .args(["-c", line])
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .output()
        .unwrap();
    let restarted = fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    (restarted, out.status.success())
}

#[test]
fn the_chart_lints_for_every_distribution_and_value_set() {
    let helm = Helm::new();
    let placement = helm.values_file("placement.json", &placement_values());
    for d in DISTRIBUTIONS {
        helm.lint(&[], &[("distribution", d)]);
        helm.lint(&["-f", &placement], &[("distribution", d)]);
        helm.lint(&[], &[("distribution", d), ("createRuntimeClass", "false")]);
        helm.lint(&[], &[("distribution", d), ("action", "cleanup")]);
    }
    helm.lint(&[], &[("daemon", "crio")]);
    helm.lint(&[], &[("daemon", "containerd")]);
}

/// deploy/'s manifests are what scripts/helm-manifests.sh renders from the
/// chart now, byte for byte: the chart is their one source.
#[test]
fn deploy_manifests_are_the_charts_default_render() {
    let helm = helm_binary();
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(repo().join("scripts/helm-manifests.sh"))
        .arg(out.path())
        .env("HELM", &helm)
        .status()
        .expect("run scripts/helm-manifests.sh");
    assert!(status.success(), "scripts/helm-manifests.sh failed");
    for file in [
        "namespace.yaml",
        "rbac.yaml",
        "daemonset.yaml",
        "runtimeclass.yaml",
        "cleanup/daemonset.yaml",
    ] {
        let fresh = fs::read_to_string(out.path().join(file)).unwrap();
        let checked_in = fs::read_to_string(repo().join("deploy").join(file)).unwrap();
        assert!(
            fresh == checked_in,
            "deploy/{file} is not the chart's render: run scripts/helm-manifests.sh (it renders:\n{fresh})"
        );
        // kubectl applies them, not Helm: nothing claims otherwise.
        for doc in yaml_documents(&checked_in) {
            let labels = &doc["metadata"]["labels"];
            assert_eq!(
                labels["app.kubernetes.io/managed-by"], "kustomize",
                "{file}"
            );
            assert!(labels.get("helm.sh/chart").is_none(), "{file}");
        }
    }
    // And the render is the same objects helm installs, in the namespace
    // the script names, but for the uninstall hooks (which kubectl does
    // not run): nothing lost in the split.
    let helm = Helm::new();
    let docs = helm.template(
        &[],
        &[
            ("undoOnUninstall", "false"),
            ("namespace.name", "userns-hostnet-system"),
        ],
    );
    let mut kinds: Vec<String> = docs
        .iter()
        .map(|d| {
            format!(
                "{}/{}",
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "ClusterRole/userns-hostnet-deploy",
            "ClusterRoleBinding/userns-hostnet-deploy",
            "DaemonSet/userns-hostnet-deploy",
            "Namespace/userns-hostnet-system",
            "RuntimeClass/userns-hostnet",
            "ServiceAccount/userns-hostnet-deploy",
        ]
    );
}

#[test]
fn each_distribution_hands_deploy_its_config_file_and_restart() {
    let helm = Helm::new();
    for d in DISTRIBUTIONS {
        let docs = helm.template(&[], &[("distribution", d)]);
        let env = env_of(installer(&docs));
        check_deploy_reads(&env);
        let (daemon, config, units) = expected(d);
        assert_eq!(
            env.get("USERNS_HOSTNET_DAEMON").map(String::as_str),
            daemon,
            "{d}"
        );
        assert_eq!(
            env.get("USERNS_HOSTNET_DAEMON_CONFIG").map(String::as_str),
            config,
            "{d}"
        );
        assert_eq!(env["USERNS_HOSTNET_HOST_ROOT"], "/host", "{d}");
        assert_eq!(env["USERNS_HOSTNET_RESTART"], "true", "{d}");
        assert_eq!(env["USERNS_HOSTNET_HANDLER"], "userns-hostnet", "{d}");
        assert!(
            !env.contains_key("USERNS_HOSTNET_CLEANUP"),
            "{d}: a stopping installer pod must not undo the install"
        );
        // k3s and RKE2: the template install edits in place of the file
        // they generate anew at every start.
        if let Some(config) = config {
            let distro = rancher_distro(Path::new(config));
            if matches!(d, "k3s" | "rke2") {
                assert_eq!(distro, Some(d), "{config}");
                assert!(config.ends_with(".tmpl"), "{config}");
            } else {
                assert_eq!(distro, None, "{config}");
            }
        }
        match units {
            [] => {
                assert!(!env.contains_key("USERNS_HOSTNET_UNIT"), "{d}");
                assert!(!env.contains_key("USERNS_HOSTNET_RESTART_COMMAND"), "{d}");
            }
            [unit] => {
                assert_eq!(env["USERNS_HOSTNET_UNIT"], *unit, "{d}");
                assert!(!env.contains_key("USERNS_HOSTNET_RESTART_COMMAND"), "{d}");
            }
            [agent, server] => {
                assert!(!env.contains_key("USERNS_HOSTNET_UNIT"), "{d}");
                let line = &env["USERNS_HOSTNET_RESTART_COMMAND"];
                // An agent node restarts its agent, a server its server, a
                // node with both (a server that also runs an agent unit)
                // the agent; neither active is a failure deploy reports.
                assert_eq!(
                    run_restart(line, &[agent]),
                    (vec![agent.to_string()], true),
                    "{d}: {line}"
                );
                assert_eq!(
                    run_restart(line, &[server]),
                    (vec![server.to_string()], true),
                    "{d}: {line}"
                );
                assert_eq!(
                    run_restart(line, &[server, agent]),
                    (vec![agent.to_string()], true),
                    "{d}: {line}"
                );
                assert_eq!(run_restart(line, &[]), (vec![], false), "{d}: {line}");
            }
            _ => unreachable!(),
        }
        // The removal reads the same settings, so that the undo takes out
        // the handler and binaries the install put there.
        let removal = helm.template(&[], &[("distribution", d), ("action", "cleanup")]);
        assert_eq!(env_of(cleanup(&removal)), env, "{d}");
        assert!(
            find(&removal, "DaemonSet", "userns-hostnet-deploy").is_none(),
            "{d}: the cleanup replaces the installer"
        );
        assert!(
            !removal.iter().any(|o| o["kind"] == "RuntimeClass"),
            "{d}: no RuntimeClass while the handler is being removed"
        );
    }
}

/// The operator's overrides reach deploy as given.
#[test]
fn overrides_reach_deploy() {
    let helm = Helm::new();
    let docs = helm.template(
        &[],
        &[
            ("distribution", "k3s"),
            (
                "daemonConfig",
                "/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.tmpl",
            ),
            ("restartCommand", "rc-service k3s restart"),
            ("restart", "false"),
            ("handler", "hardened"),
            ("binDir", "/opt/bin"),
        ],
    );
    let env = env_of(installer(&docs));
    check_deploy_reads(&env);
    assert_eq!(
        env["USERNS_HOSTNET_DAEMON_CONFIG"],
        "/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.tmpl"
    );
    assert_eq!(
        env["USERNS_HOSTNET_RESTART_COMMAND"],
        "rc-service k3s restart"
    );
    assert_eq!(env["USERNS_HOSTNET_RESTART"], "false");
    assert_eq!(env["USERNS_HOSTNET_HANDLER"], "hardened");
    assert_eq!(env["USERNS_HOSTNET_BIN_DIR"], "/opt/bin");
    let rc = find(&docs, "RuntimeClass", "userns-hostnet").expect("RuntimeClass");
    assert_eq!(
        rc["handler"], "hardened",
        "the class names the handler registered"
    );
}

#[test]
fn daemon_crio_is_named_on_k8s_and_refused_elsewhere() {
    let helm = Helm::new();
    let docs = helm.template(&[], &[("daemon", "crio")]);
    let env = env_of(installer(&docs));
    check_deploy_reads(&env);
    assert_eq!(env["USERNS_HOSTNET_DAEMON"], "crio");
    assert!(!env.contains_key("USERNS_HOSTNET_DAEMON_CONFIG"));
    assert!(!env.contains_key("USERNS_HOSTNET_UNIT"));
    assert!(!env.contains_key("USERNS_HOSTNET_RESTART_COMMAND"));
    let err = helm.refused(&[("distribution", "k3s"), ("daemon", "crio")]);
    assert!(
        err.contains("daemon: crio is for distribution k8s only; k3s runs its own containerd"),
        "{err}"
    );
}

#[test]
fn bad_values_are_refused_naming_the_value() {
    let helm = Helm::new();
    for (key, value) in [
        ("distribution", "k3z"),
        ("daemon", "podman"),
        ("action", "remove"),
        ("image.pullPolicy", "Sometimes"),
    ] {
        let err = helm.refused(&[(key, value)]);
        let field = key.replace('.', "/");
        assert!(err.contains(&field), "{key}={value}: {err}");
    }
    let err = helm.refused(&[("binDir", "usr/local/bin")]);
    assert!(err.contains("binDir"), "{err}");
    let err = helm.refused(&[("handler", "a/b")]);
    assert!(err.contains("handler"), "{err}");
}

fn placement_values() -> Value {
    json!({
        "nodeSelector": {"node-role.example.org/hardened": "yes"},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "hardened", "effect": "NoSchedule"},
        ],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            ]}],
        }}},
        "priorityClassName": "hardened-critical",
        "updateStrategy": {"type": "OnDelete"},
        "image": {"repository": "registry.example.org/userns-hostnet-installer", "tag": "9.9.9", "pullPolicy": "Always"},
        "resources": {"requests": {"cpu": "20m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
    })
}

#[test]
fn placement_values_reach_both_daemonsets() {
    let helm = Helm::new();
    let values = placement_values();
    let file = helm.values_file("placement.json", &values);
    let install = helm.template(&["-f", &file], &[]);
    let removal = helm.template(&["-f", &file], &[("action", "cleanup")]);
    for ds in [installer(&install), cleanup(&removal)] {
        let pod = &ds["spec"]["template"]["spec"];
        let name = &ds["metadata"]["name"];
        // The chart's own selector stays; the operator's is added to it.
        assert_eq!(
            pod["nodeSelector"],
            json!({"kubernetes.io/os": "linux", "node-role.example.org/hardened": "yes"}),
            "{name}"
        );
        // A list replaces the chart's: the operator's tolerations alone.
        assert_eq!(pod["tolerations"], values["tolerations"], "{name}");
        assert_eq!(pod["affinity"], values["affinity"], "{name}");
        assert_eq!(pod["priorityClassName"], "hardened-critical", "{name}");
        let c = &pod["containers"][0];
        assert_eq!(
            c["image"], "registry.example.org/userns-hostnet-installer:9.9.9",
            "{name}"
        );
        assert_eq!(c["imagePullPolicy"], "Always", "{name}");
        assert_eq!(c["resources"], values["resources"], "{name}");
        assert_eq!(c["securityContext"]["privileged"], true, "{name}");
    }
    assert_eq!(
        installer(&install)["spec"]["updateStrategy"],
        json!({"type": "OnDelete"})
    );
    // The RuntimeClass does not follow the installer's placement: it
    // selects the nodes the installer labelled.
    let rc = find(&install, "RuntimeClass", "userns-hostnet").expect("RuntimeClass");
    assert_eq!(rc["scheduling"]["nodeSelector"], json!({LABEL: "true"}));
}

#[test]
fn the_runtime_class_is_optional_and_selects_the_installers_label() {
    let helm = Helm::new();
    let docs = helm.template(&[], &[]);
    let rc = find(&docs, "RuntimeClass", "userns-hostnet").expect("RuntimeClass");
    assert_eq!(rc["apiVersion"], "node.k8s.io/v1");
    assert_eq!(
        rc["handler"],
        env_of(installer(&docs))["USERNS_HOSTNET_HANDLER"]
    );
    assert_eq!(rc["scheduling"]["nodeSelector"], json!({LABEL: "true"}));
    let named = helm.template(&[], &[("runtimeClassName", "hardened-net")]);
    let rc = find(&named, "RuntimeClass", "hardened-net").expect("RuntimeClass hardened-net");
    assert_eq!(rc["handler"], "userns-hostnet");
    let none = helm.template(&[], &[("createRuntimeClass", "false")]);
    assert!(
        !none.iter().any(|o| o["kind"] == "RuntimeClass"),
        "{none:#?}"
    );
    installer(&none);
}

/// namespace.create=false: every namespaced object goes into the
/// operator's namespace, which the chart then leaves alone.
#[test]
fn an_existing_namespace_is_used_as_is() {
    let helm = Helm::new();
    let docs = helm.template(
        &[],
        &[
            ("namespace.create", "false"),
            ("namespace.name", "node-addons"),
        ],
    );
    assert!(!docs.iter().any(|o| o["kind"] == "Namespace"));
    for o in &docs {
        match o["kind"].as_str().unwrap() {
            "ClusterRole" | "RuntimeClass" => {}
            "ClusterRoleBinding" => assert_eq!(o["subjects"][0]["namespace"], "node-addons"),
            _ => assert_eq!(o["metadata"]["namespace"], "node-addons", "{o:#}"),
        }
    }
}

#[test]
fn the_chart_carries_the_version_the_image_is_built_with() {
    let docs = yaml_documents(&fs::read_to_string(chart().join("Chart.yaml")).unwrap());
    let chart = &docs[0];
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["name"], "userns-hostnet");
    assert_eq!(chart["appVersion"], env!("CARGO_PKG_VERSION"));
    let helm = Helm::new();
    let docs = helm.template(&[], &[]);
    assert_eq!(
        installer(&docs)["spec"]["template"]["spec"]["containers"][0]["image"],
        format!(
            "localhost/userns-hostnet-installer:{}",
            env!("CARGO_PKG_VERSION")
        ),
        "the image scripts/image.sh builds"
    );
}

/// docs/cluster.md: the Helm section, five commands or fewer, and a row
/// of its values table for every value of values.yaml.
#[test]
fn the_cluster_doc_shows_the_helm_rollout_and_every_value() {
    let doc = fs::read_to_string(repo().join("docs/cluster.md")).unwrap();
    let at = doc
        .find("## Roll out with Helm")
        .expect("docs/cluster.md has a `## Roll out with Helm` section");
    let section = &doc[at..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let first_block: Vec<&str> = section
        .split("\n\n")
        .find(|p| p.starts_with("    "))
        .expect("a command block")
        .lines()
        .collect();
    assert!(
        (1..=5).contains(&first_block.len()),
        "the rollout is five commands or fewer: {first_block:#?}"
    );
    assert!(first_block.iter().any(|l| l.contains("helm install")));
    let values = yaml_documents(&fs::read_to_string(chart().join("values.yaml")).unwrap());
    let mut missing = vec![];
    for (key, value) in values[0].as_object().unwrap() {
        let keys: Vec<String> = match value.as_object().filter(|o| {
            !o.is_empty()
                && !matches!(
                    key.as_str(),
                    "nodeSelector" | "updateStrategy" | "resources"
                )
        }) {
            Some(o) => o.keys().map(|k| format!("{key}.{k}")).collect(),
            None => vec![key.clone()],
        };
        for k in keys {
            if !section.contains(&format!("| `{k}` |")) {
                missing.push(k);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/cluster.md's values table has no row for {missing:?}"
    );
}

/// `helm uninstall` of an install: the cleanup DaemonSet and then the Job
/// helm waits for, both pre-delete hooks kept until they succeed; the Job
/// names that DaemonSet as deploy's command line takes it, placed like
/// the installer, and may read only it and the namespace's pods. Neither
/// is rendered with undoOnUninstall false, nor with action=cleanup (whose
/// cleanup DaemonSet is an object of the release).
#[test]
fn uninstall_undoes_every_node_before_the_release_goes() {
    let helm = Helm::new();
    let values = placement_values();
    let file = helm.values_file("placement.json", &values);
    let docs = helm.template(&["-f", &file], &[("namespace.name", "node-addons")]);
    let hook = |o: &Value| {
        let a = &o["metadata"]["annotations"];
        (
            a["helm.sh/hook"].as_str().unwrap_or("").to_owned(),
            a["helm.sh/hook-weight"].as_str().unwrap_or("").to_owned(),
            a["helm.sh/hook-delete-policy"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        )
    };
    let kept = "before-hook-creation,hook-succeeded".to_owned();
    let ds = cleanup(&docs);
    assert_eq!(hook(ds), ("pre-delete".into(), "0".into(), kept.clone()));
    let job = find(&docs, "Job", "userns-hostnet-uninstall").expect("the uninstall Job");
    assert_eq!(hook(job), ("pre-delete".into(), "1".into(), kept));
    assert_eq!(
        job["metadata"]["annotations"]["helm.sh/hook-output-log-policy"],
        "hook-failed"
    );
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(
        pod["serviceAccountName"],
        ds["spec"]["template"]["spec"]["serviceAccountName"]
    );
    for key in [
        "nodeSelector",
        "tolerations",
        "affinity",
        "priorityClassName",
    ] {
        assert_eq!(pod[key], ds["spec"]["template"]["spec"][key], "{key}");
    }
    let c = &pod["containers"][0];
    assert_eq!(
        c["image"],
        "registry.example.org/userns-hostnet-installer:9.9.9"
    );
    assert_eq!(c["securityContext"]["capabilities"]["drop"], json!(["ALL"]));
    let args: Vec<String> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        args,
        ["--await-removal", "node-addons/userns-hostnet-cleanup"]
    );
    let argv = [
        &["userns-hostnet".to_owned(), "deploy".to_owned()][..],
        &args,
    ]
    .concat();
    if let Err(e) = <Cli as clap::Parser>::try_parse_from(&argv) {
        panic!("{argv:?} does not parse: {e}");
    }
    let role = find(&docs, "Role", "userns-hostnet-uninstall").expect("the uninstall Role");
    assert_eq!(role["metadata"]["namespace"], "node-addons");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": ["apps"], "resources": ["daemonsets"], "resourceNames": ["userns-hostnet-cleanup"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        ])
    );
    let binding = find(&docs, "RoleBinding", "userns-hostnet-uninstall").expect("RoleBinding");
    assert_eq!(binding["roleRef"]["name"], "userns-hostnet-uninstall");
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "userns-hostnet-deploy", "namespace": "node-addons"}])
    );
    for values in [
        &[("undoOnUninstall", "false")][..],
        &[("action", "cleanup")][..],
    ] {
        let docs = helm.template(&[], values);
        let hooks: Vec<&Value> = docs
            .iter()
            .filter(|o| !hook(o).0.is_empty() || o["kind"] == "Job" || o["kind"] == "Role")
            .collect();
        assert!(hooks.is_empty(), "{values:?}: {hooks:#?}");
    }
}

/// Objects of a namespace: every kind the chart renders but these.
const CLUSTER_WIDE: [&str; 4] = [
    "ClusterRole",
    "ClusterRoleBinding",
    "Namespace",
    "RuntimeClass",
];

/// Every namespaced object of `docs` is in `ns`, and so is every
/// reference to one: the binding's subjects and the Job's DaemonSet.
fn all_in(docs: &[Value], ns: &str, what: &str) {
    for o in docs {
        let kind = o["kind"].as_str().unwrap();
        if CLUSTER_WIDE.contains(&kind) {
            assert!(o["metadata"].get("namespace").is_none(), "{what}: {o:#}");
        } else {
            assert_eq!(o["metadata"]["namespace"], ns, "{what}: {o:#}");
        }
        if let Some(subjects) = o["subjects"].as_array() {
            for s in subjects {
                assert_eq!(s["namespace"], ns, "{what}: {o:#}");
            }
        }
        if kind == "Job" {
            assert_eq!(
                o["spec"]["template"]["spec"]["containers"][0]["args"],
                json!(["--await-removal", format!("{ns}/userns-hostnet-cleanup")]),
                "{what}"
            );
        }
    }
}

/// `helm install -n NS --create-namespace`: every namespaced object in the
/// release's namespace, which Helm makes (the chart does not render it);
/// `namespace.name` overrides it, the chart then making that one.
#[test]
fn objects_go_to_the_releases_namespace_unless_a_value_names_another() {
    let helm = Helm::new();
    for values in [&[][..], &[("action", "cleanup")][..]] {
        let docs = helm.template(&["-n", "other"], values);
        assert!(
            !docs.iter().any(|o| o["kind"] == "Namespace"),
            "{values:?}: the release's namespace is Helm's to make: {docs:#?}"
        );
        all_in(&docs, "other", &format!("-n other {values:?}"));
        assert!(docs.len() >= 4, "{docs:#?}");
    }
    // The hooks too: the Job, its Role and binding, the cleanup.
    let docs = helm.template(&["-n", "other"], &[]);
    find(&docs, "Job", "userns-hostnet-uninstall").expect("the uninstall Job");
    cleanup(&docs);

    // Another namespace than the release's: made by the chart, labelled
    // for the privileged pods, unless it exists (create=false).
    let docs = helm.template(&["-n", "other"], &[("namespace.name", "node-addons")]);
    all_in(&docs, "node-addons", "namespace.name=node-addons");
    let ns = find(&docs, "Namespace", "node-addons").expect("the Namespace");
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "privileged"
    );
    let docs = helm.template(
        &["-n", "other"],
        &[
            ("namespace.name", "node-addons"),
            ("namespace.create", "false"),
        ],
    );
    assert!(!docs.iter().any(|o| o["kind"] == "Namespace"));
    all_in(&docs, "node-addons", "namespace.create=false");
    // Naming the release's own namespace changes nothing: Helm makes it.
    let docs = helm.template(&["-n", "other"], &[("namespace.name", "other")]);
    assert!(!docs.iter().any(|o| o["kind"] == "Namespace"));
    all_in(&docs, "other", "namespace.name=other");
}

/// A release of an earlier version of the chart, upgraded with
/// `--reuse-values`, renders with that version's defaults (Helm makes
/// them the chart's values): its objects stay in userns-hostnet-system,
/// which it keeps making, and its DaemonSets' selectors are the ones they
/// were created with. The values below are that version's values.yaml;
/// the keys added since are absent from it.
#[test]
fn an_earlier_release_upgraded_with_its_values_keeps_its_namespace_and_selectors() {
    let earlier = json!({
        "action": "install",
        "undoOnUninstall": true,
        "distribution": "k8s",
        "daemon": "auto",
        "daemonConfig": "",
        "restart": true,
        "restartCommand": "",
        "handler": "userns-hostnet",
        "binDir": "/usr/local/bin",
        "createRuntimeClass": true,
        "runtimeClassName": "userns-hostnet",
        "namespace": {"name": "userns-hostnet-system", "create": true},
        "image": {"repository": "localhost/userns-hostnet-installer", "tag": "", "pullPolicy": "IfNotPresent"},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"operator": "Exists"}],
        "affinity": {},
        "priorityClassName": "system-node-critical",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
    });
    let copy = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(chart())
        .arg(copy.path())
        .status()
        .unwrap();
    assert!(status.success());
    let chart = copy.path().join("userns-hostnet");
    fs::write(chart.join("values.yaml"), earlier.to_string()).unwrap();
    let helm = Helm::new();
    for values in [&[][..], &[("action", "cleanup")][..]] {
        let docs = helm.template_of(&chart, "userns-hostnet", &["--is-upgrade"], values);
        all_in(&docs, "userns-hostnet-system", &format!("{values:?}"));
        let ns = find(&docs, "Namespace", "userns-hostnet-system").expect("its Namespace");
        assert_eq!(
            ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
            "privileged"
        );
        for ds in docs.iter().filter(|o| o["kind"] == "DaemonSet") {
            let name = ds["metadata"]["name"].as_str().unwrap();
            assert_eq!(
                ds["spec"]["selector"],
                json!({"matchLabels": {"app.kubernetes.io/name": name}}),
                "{name}"
            );
            assert!(ds["spec"]["template"]["spec"]
                .get("imagePullSecrets")
                .is_none());
        }
    }
}

#[test]
fn unknown_keys_are_refused_naming_the_key() {
    let helm = Helm::new();
    for (key, value, name) in [
        ("distro", "k3s", "distro"),
        ("image.tagg", "1.0", "tagg"),
        ("namespace.nam", "x", "nam"),
        (
            "updateStrategy.rollingUpdate.maxUnavailble",
            "2",
            "maxUnavailble",
        ),
        ("tolerations[0].opertor", "Exists", "opertor"),
        ("imagePullSecrets[0].nmae", "regcred", "nmae"),
        ("affinity.nodeAfinity.x", "y", "nodeAfinity"),
    ] {
        let err = helm.refused(&[(key, value)]);
        assert!(
            err.contains(&format!("'{name}' not allowed")),
            "{key}={value}: {err}"
        );
    }
}

#[test]
fn mistyped_values_are_refused_naming_the_value() {
    let helm = Helm::new();
    for (key, value, field, want) in [
        ("restart", "yes", "/restart", "want boolean"),
        ("undoOnUninstall", "1", "/undoOnUninstall", "want boolean"),
        (
            "namespace.create",
            "no",
            "/namespace/create",
            "want boolean",
        ),
        (
            "namespace.name",
            "Node_Addons",
            "/namespace/name",
            "does not match",
        ),
        ("image.tag", "7", "/image/tag", "want string"),
        ("tolerations", "all", "/tolerations", "want array"),
        (
            "imagePullSecrets[0]",
            "regcred",
            "/imagePullSecrets/0",
            "want object",
        ),
        (
            "nodeSelector.pool",
            "1",
            "/nodeSelector/pool",
            "want string",
        ),
    ] {
        let err = helm.refused(&[(key, value)]);
        assert!(
            err.contains(field) && err.contains(want),
            "{key}={value}: {err}"
        );
    }
}

/// The recommended labels, on every object and every pod, from one
/// release: its name, the application's version, the chart.
fn check_labels(o: &Value, release: &str, what: &str) {
    let labels = &o["metadata"]["labels"];
    let name = labels["app.kubernetes.io/name"].as_str().unwrap_or("");
    assert!(name.starts_with("userns-hostnet"), "{what}: {o:#}");
    assert_eq!(
        labels["app.kubernetes.io/instance"], release,
        "{what}: {o:#}"
    );
    assert_eq!(
        labels["app.kubernetes.io/version"],
        env!("CARGO_PKG_VERSION"),
        "{what}: {o:#}"
    );
    assert_eq!(
        labels["app.kubernetes.io/managed-by"], "Helm",
        "{what}: {o:#}"
    );
    assert!(
        labels["app.kubernetes.io/component"]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        "{what}: {o:#}"
    );
    let chart = yaml_documents(&fs::read_to_string(chart().join("Chart.yaml")).unwrap());
    assert_eq!(
        labels["helm.sh/chart"],
        format!(
            "userns-hostnet-{}",
            chart[0]["version"].as_str().expect("Chart.yaml's version")
        ),
        "{what}: {o:#}"
    );
}

#[test]
fn every_object_and_pod_carries_the_recommended_labels() {
    let helm = Helm::new();
    for values in [&[][..], &[("action", "cleanup")][..]] {
        let docs = helm.template_of(&chart(), "edge-nodes", &["-n", "other"], values);
        let docs_ns = helm.template_of(
            &chart(),
            "edge-nodes",
            &["-n", "other"],
            &[values, &[("namespace.name", "node-addons")][..]].concat(),
        );
        for o in docs.iter().chain(&docs_ns) {
            let what = format!("{values:?} {}/{}", o["kind"], o["metadata"]["name"]);
            check_labels(o, "edge-nodes", &what);
            if let Some(pod) = o["spec"]["template"].as_object() {
                check_labels(&Value::Object(pod.clone()), "edge-nodes", &what);
                // The selector stays the one the DaemonSet was created
                // with (it cannot change), and picks its own pods.
                if o["kind"] == "DaemonSet" {
                    let name = o["metadata"]["name"].as_str().unwrap();
                    assert_eq!(
                        o["spec"]["selector"],
                        json!({"matchLabels": {"app.kubernetes.io/name": name}}),
                        "{what}"
                    );
                    assert_eq!(pod["metadata"]["labels"]["app.kubernetes.io/name"], name);
                }
            }
        }
    }
    // The parts, by component.
    let docs = helm.template(&[], &[]);
    let component = |o: &Value| o["metadata"]["labels"]["app.kubernetes.io/component"].clone();
    assert_eq!(component(installer(&docs)), "installer");
    assert_eq!(component(cleanup(&docs)), "cleanup");
    let job = find(&docs, "Job", "userns-hostnet-uninstall").unwrap();
    assert_eq!(component(job), "uninstall");
    let rc = find(&docs, "RuntimeClass", "userns-hostnet").unwrap();
    assert_eq!(component(rc), "runtime-class");
}

#[test]
fn image_pull_secrets_reach_every_pod() {
    let helm = Helm::new();
    let secrets = json!([{"name": "regcred"}, {"name": "mirror-cred"}]);
    let file = helm.values_file("secrets.json", &json!({"imagePullSecrets": secrets}));
    let install = helm.template(&["-f", &file], &[]);
    let removal = helm.template(&["-f", &file], &[("action", "cleanup")]);
    let pods: Vec<&Value> = install
        .iter()
        .chain(&removal)
        .filter(|o| o["spec"]["template"]["spec"].is_object())
        .collect();
    // installer, cleanup hook, Job; cleanup.
    assert_eq!(pods.len(), 4, "{pods:#?}");
    for o in pods {
        assert_eq!(
            o["spec"]["template"]["spec"]["imagePullSecrets"], secrets,
            "{}",
            o["metadata"]["name"]
        );
    }
    helm.lint(&["-f", &file], &[]);
    // None by default.
    for o in helm.template(&[], &[]) {
        assert!(
            o["spec"]["template"]["spec"]
                .get("imagePullSecrets")
                .is_none(),
            "{o:#}"
        );
    }
}

/// `helm lint --strict` of what an operator of a release in a namespace
/// of its own gives.
#[test]
fn the_chart_lints_in_any_namespace() {
    let helm = Helm::new();
    helm.lint(&["-n", "other"], &[]);
    helm.lint(&["-n", "other"], &[("namespace.name", "node-addons")]);
    helm.lint(
        &["-n", "other"],
        &[
            ("namespace.name", "node-addons"),
            ("namespace.create", "false"),
        ],
    );
    helm.lint(&["-n", "other"], &[("action", "cleanup")]);
    let out = helm.run(&["lint", "--strict"], &[]);
    assert!(
        !out.stdout.contains("[WARNING]") && !out.stdout.contains("[ERROR]"),
        "{}",
        out.stdout
    );
}

/// An upgrade with the new defaults of a release whose objects an earlier
/// version of the chart put in userns-hostnet-system (which it made)
/// would move them and delete that namespace: refused, naming the value.
/// The chart finds that namespace with `lookup`, which only a real
/// upgrade answers: here a copy of the chart answers it with that
/// namespace as such a release left it.
#[test]
fn an_upgrade_that_would_delete_the_earlier_namespace_is_refused() {
    let copy = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(chart())
        .arg(copy.path())
        .status()
        .unwrap();
    assert!(status.success());
    let chart = copy.path().join("userns-hostnet");
    let helpers = chart.join("templates/_helpers.tpl");
    let text = fs::read_to_string(&helpers).unwrap();
    let lookup = r#"lookup "v1" "Namespace" "" $earlier"#;
    assert_eq!(text.matches(lookup).count(), 1, "{text}");
    fs::write(
        &helpers,
        text.replace(
            lookup,
            r#"dict "metadata" (dict "name" $earlier "annotations" (dict "meta.helm.sh/release-name" "userns-hostnet" "meta.helm.sh/release-namespace" "default"))"#,
        ),
    )
    .unwrap();
    let helm = Helm::new();
    let out = helm.run_chart(&chart, &["template", "userns-hostnet", "--is-upgrade"], &[]);
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "namespace.name: the objects of release userns-hostnet are in userns-hostnet-system"
        ) && out
            .stderr
            .contains("--set namespace.name=userns-hostnet-system"),
        "{}",
        out.stderr
    );
    // Kept where they are: rendered.
    let docs = helm.template_of(
        &chart,
        "userns-hostnet",
        &["--is-upgrade"],
        &[("namespace.name", "userns-hostnet-system")],
    );
    all_in(&docs, "userns-hostnet-system", "kept");
    // Another release's namespace, an install, a release of the
    // namespace itself: nothing of this release to lose.
    for (release, extra) in [
        ("other", &["--is-upgrade"][..]),
        ("userns-hostnet", &[][..]),
        ("userns-hostnet", &["--is-upgrade", "-n", "other"][..]),
    ] {
        helm.template_of(&chart, release, extra, &[]);
    }
}

/// One uninstall timeout everywhere: the NOTES `helm install` prints and
/// every command line of the docs that removes the install (`helm
/// uninstall`, or the upgrade to action=cleanup) give the same --timeout.
#[test]
fn one_uninstall_timeout_everywhere() {
    const TIMEOUT: &str = "30m";
    let timeout_of = |line: &str| -> Option<String> {
        let at = line.find("--timeout")? + "--timeout".len();
        let rest = line[at..].trim_start_matches(['=', ' ']);
        Some(rest.split_whitespace().next().unwrap_or("").to_owned())
    };
    let helm = Helm::new();
    for values in [&[][..], &[("undoOnUninstall", "false")][..]] {
        let out = helm.run(
            &["install", "rel", "-n", "other", "--dry-run=client"],
            values,
        );
        assert!(out.ok, "{}", out.stderr);
        let notes = &out.stdout[out.stdout.find("NOTES:").expect("NOTES")..];
        let lines: Vec<&str> = notes.lines().filter(|l| l.contains("helm ")).collect();
        assert!(!lines.is_empty(), "{notes}");
        let removal = lines
            .iter()
            .find(|l| l.contains("uninstall") || l.contains("action=cleanup"))
            .unwrap_or_else(|| panic!("{notes}"));
        assert_eq!(timeout_of(removal).as_deref(), Some(TIMEOUT), "{notes}");
        assert!(removal.contains("-n other"), "{notes}");
    }
    let mut checked = 0;
    for doc in ["docs/cluster.md", "README.md"] {
        let text = fs::read_to_string(repo().join(doc)).unwrap();
        for line in text.lines().filter(|l| l.starts_with("    ")) {
            if line.contains("helm uninstall") || line.contains("action=cleanup") {
                if let Some(t) = timeout_of(line) {
                    assert_eq!(t, TIMEOUT, "{doc}: {line}");
                    checked += 1;
                }
            }
        }
    }
    assert!(
        checked >= 2,
        "no removal command with a --timeout in the docs"
    );
}
