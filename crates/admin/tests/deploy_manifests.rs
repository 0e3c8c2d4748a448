//! The cluster manifests in deploy/ parse (PyYAML, Debian's python3-yaml),
//! form one kustomization, and carry what docs/cluster.md promises: a
//! privileged DaemonSet without hostPID whose only host mount is the host
//! root the installer works under, env the `deploy` command reads, RBAC for
//! nodes get/patch alone, a RuntimeClass selecting the label the installer
//! sets, a sample pod with hostNetwork, hostUsers: false and the class.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::CommandFactory;
use serde_json::Value;
use userns_hostnet_admin::cli::Cli;
use userns_hostnet_admin::deploy::LABEL;

const NAMESPACE: &str = "userns-hostnet-system";
const SERVICE_ACCOUNT: &str = "userns-hostnet-deploy";

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

/// Every YAML document of a file in deploy/, as JSON.
fn documents(name: &str) -> Vec<Value> {
    let path = deploy_dir().join(name);
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(&path)
        .output()
        .expect("run python3 (install the Debian packages python3 and python3-yaml)");
    assert!(
        out.status.success(),
        "deploy/{name} does not parse as YAML: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("python3 printed JSON")
}

fn one(name: &str) -> Value {
    let mut docs = documents(name);
    assert_eq!(docs.len(), 1, "deploy/{name}: one document");
    docs.remove(0)
}

fn kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {docs:#?}"))
}

fn kustomization() -> Value {
    one("kustomization.yaml")
}

fn resources() -> Vec<String> {
    kustomization()["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_kustomization_names_every_manifest_but_the_sample() {
    let k = kustomization();
    assert_eq!(k["kind"], "Kustomization");
    assert_eq!(k["namespace"], NAMESPACE);
    let mut listed = resources();
    listed.sort();
    assert_eq!(
        listed,
        [
            "daemonset.yaml",
            "namespace.yaml",
            "rbac.yaml",
            "runtimeclass.yaml"
        ]
    );
    let mut on_disk: Vec<String> = fs::read_dir(deploy_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
        .collect();
    on_disk.sort();
    listed.push("sample-pod.yaml".into());
    listed.sort();
    assert_eq!(on_disk, listed, "every manifest is listed or is the sample");
    for r in resources() {
        for d in documents(&r) {
            assert!(
                d["apiVersion"].is_string() && d["kind"].is_string(),
                "{r}: {d:#}"
            );
        }
    }
    let ns = one("namespace.yaml");
    assert_eq!(ns["metadata"]["name"], NAMESPACE);
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "privileged"
    );
    // The image kustomize substitutes is the one the DaemonSet names (the
    // chart's render: name and tag).
    let image = &k["images"][0];
    let ds = one("daemonset.yaml");
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["image"],
        format!(
            "{}:{}",
            image["name"].as_str().unwrap(),
            image["newTag"].as_str().unwrap()
        )
    );
    assert_eq!(
        image["newTag"].as_str(),
        Some(env!("CARGO_PKG_VERSION")),
        "the tag scripts/image.sh builds"
    );
}

fn env_of(container: &Value) -> Vec<(String, Value)> {
    container["env"]
        .as_array()
        .expect("env")
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e.clone()))
        .collect()
}

#[test]
fn the_daemonset_is_privileged_with_one_host_mount_and_no_host_pid() {
    let ds = one("daemonset.yaml");
    assert_eq!(ds["kind"], "DaemonSet");
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], SERVICE_ACCOUNT);
    assert_ne!(pod["hostPID"], true, "the restart needs no hostPID");
    assert_ne!(pod["hostNetwork"], true);
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(c["securityContext"]["privileged"], true);
    // One host mount: / at the root the installer works under.
    let volumes = pod["volumes"].as_array().unwrap();
    assert_eq!(volumes.len(), 1, "{volumes:#?}");
    assert_eq!(volumes[0]["hostPath"]["path"], "/");
    let mounts = c["volumeMounts"].as_array().unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0]["name"], volumes[0]["name"]);
    let env = env_of(c);
    let get = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no env {k}"))
    };
    assert_eq!(
        get("USERNS_HOSTNET_HOST_ROOT")["value"],
        mounts[0]["mountPath"]
    );
    assert_eq!(get("USERNS_HOSTNET_BIN_DIR")["value"], "/usr/local/bin");
    assert_eq!(get("USERNS_HOSTNET_RESTART")["value"], "true");
    assert!(
        env.iter().all(|(n, _)| n != "USERNS_HOSTNET_CLEANUP"),
        "a stopping installer pod must not undo the install"
    );
    assert_eq!(
        parse_deploy(c, "readinessProbe"),
        ["--check"],
        "ready when the node is registered"
    );
    assert_eq!(
        get("NODE_NAME")["valueFrom"]["fieldRef"]["fieldPath"],
        "spec.nodeName"
    );
    // Every variable set is one `userns-hostnet deploy` reads.
    let cli = Cli::command();
    let deploy = cli
        .get_subcommands()
        .find(|s| s.get_name() == "deploy")
        .expect("deploy subcommand");
    let read: Vec<String> = deploy
        .get_arguments()
        .filter_map(|a| a.get_env())
        .map(|e| e.to_string_lossy().into_owned())
        .collect();
    for (name, _) in &env {
        assert!(
            read.contains(name),
            "{name} is not read by deploy: {read:?}"
        );
    }
}

/// The `deploy` options of a container's `args` (`key` "args") or of an
/// exec probe (`key` the probe), checked to parse as the CLI parses them.
fn parse_deploy(container: &Value, key: &str) -> Vec<String> {
    let words: Vec<String> = if key == "args" {
        container["args"]
            .as_array()
            .map(|a| a.iter().map(|w| w.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    } else {
        let cmd: Vec<String> = container[key]["exec"]["command"]
            .as_array()
            .unwrap_or_else(|| panic!("no exec {key}: {container:#}"))
            .iter()
            .map(|w| w.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            cmd[..2],
            ["/usr/local/bin/userns-hostnet", "deploy"],
            "{key} runs the image's deploy"
        );
        cmd[2..].to_vec()
    };
    let argv = ["userns-hostnet", "deploy"]
        .into_iter()
        .map(String::from)
        .chain(words.iter().cloned());
    if let Err(e) = <Cli as clap::Parser>::try_parse_from(argv) {
        panic!("{key} {words:?} does not parse: {e}");
    }
    words
}

/// deploy/cleanup/: its own kustomization, a DaemonSet of the same image,
/// namespace, service account and host mount that runs `deploy
/// --uninstall --wait`, ready once nothing is left.
#[test]
fn the_cleanup_kustomization_removes_by_an_explicit_daemonset() {
    let k = one("cleanup/kustomization.yaml");
    assert_eq!(k["kind"], "Kustomization");
    assert_eq!(k["namespace"], NAMESPACE);
    assert_eq!(k["resources"], serde_json::json!(["daemonset.yaml"]));
    assert_eq!(k["images"], kustomization()["images"], "the same image");
    let ds = one("cleanup/daemonset.yaml");
    let installer = one("daemonset.yaml");
    assert_eq!(ds["kind"], "DaemonSet");
    assert_ne!(ds["metadata"]["name"], installer["metadata"]["name"]);
    let pod = &ds["spec"]["template"]["spec"];
    let ipod = &installer["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], SERVICE_ACCOUNT);
    assert_eq!(pod["volumes"], ipod["volumes"]);
    assert_eq!(pod["nodeSelector"], ipod["nodeSelector"]);
    assert_eq!(pod["tolerations"], ipod["tolerations"]);
    let c = &pod["containers"][0];
    let ic = &ipod["containers"][0];
    assert_eq!(c["image"], ic["image"]);
    assert_eq!(c["volumeMounts"], ic["volumeMounts"]);
    assert_eq!(c["securityContext"]["privileged"], true);
    assert_eq!(parse_deploy(c, "args"), ["--uninstall", "--wait"]);
    assert_eq!(
        parse_deploy(c, "readinessProbe"),
        ["--check", "--uninstall"]
    );
    // The same settings as the installer, so that the undo takes out the
    // handler and binaries it put there.
    assert_eq!(env_of(c), env_of(ic));
}

#[test]
fn rbac_allows_getting_and_patching_nodes_only() {
    let docs = documents("rbac.yaml");
    let sa = kind(&docs, "ServiceAccount");
    assert_eq!(sa["metadata"]["name"], SERVICE_ACCOUNT);
    assert_eq!(sa["metadata"]["namespace"], NAMESPACE);
    let role = kind(&docs, "ClusterRole");
    let rules = role["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["apiGroups"], serde_json::json!([""]));
    assert_eq!(rules[0]["resources"], serde_json::json!(["nodes"]));
    assert_eq!(rules[0]["verbs"], serde_json::json!(["get", "patch"]));
    let binding = kind(&docs, "ClusterRoleBinding");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(binding["subjects"][0]["kind"], "ServiceAccount");
    assert_eq!(binding["subjects"][0]["name"], SERVICE_ACCOUNT);
    assert_eq!(binding["subjects"][0]["namespace"], NAMESPACE);
}

#[test]
fn the_runtime_class_selects_the_label_the_installer_sets() {
    let rc = one("runtimeclass.yaml");
    assert_eq!(rc["kind"], "RuntimeClass");
    assert_eq!(rc["apiVersion"], "node.k8s.io/v1");
    assert_eq!(rc["metadata"]["name"], "userns-hostnet");
    assert_eq!(rc["handler"], "userns-hostnet");
    assert_eq!(rc["scheduling"]["nodeSelector"][LABEL], "true");
    let pod = one("sample-pod.yaml");
    assert_eq!(pod["kind"], "Pod");
    assert_eq!(pod["spec"]["runtimeClassName"], rc["metadata"]["name"]);
    assert_eq!(pod["spec"]["hostNetwork"], true);
    assert_eq!(pod["spec"]["hostUsers"], false);
}

#[test]
fn the_cluster_doc_covers_every_piece() {
    let doc =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cluster.md"))
            .expect("docs/cluster.md");
    for needle in [
        "## Install",
        "## Upgrade",
        "## Removal",
        "## What each piece may touch",
        "deploy/kustomization.yaml",
        "deploy/daemonset.yaml",
        "deploy/rbac.yaml",
        "deploy/runtimeclass.yaml",
        "deploy/sample-pod.yaml",
        "deploy/namespace.yaml",
        "deploy/cleanup/",
        "deploy --uninstall",
        "deploy --check",
        "Containerfile",
        "scripts/image.sh",
        "/var/lib/userns-hostnet/deploy",
        "hostPID",
        LABEL,
    ] {
        assert!(
            doc.contains(needle),
            "docs/cluster.md does not mention {needle}"
        );
    }
    let ds = one("daemonset.yaml");
    for (name, _) in env_of(&ds["spec"]["template"]["spec"]["containers"][0]) {
        if name != "NODE_NAME" {
            assert!(
                doc.contains(&name),
                "docs/cluster.md does not explain {name}"
            );
        }
    }
    assert!(doc.contains(userns_hostnet_admin::deploy::STATE_DIR));
}
