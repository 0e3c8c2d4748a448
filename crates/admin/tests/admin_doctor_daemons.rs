//! `userns-hostnet doctor` on prepared fake roots: the daemons' checks
//! (containerd, CRI-O, a config import, the daemon that serves a config,
//! the runtime a handler runs) and the daemon the kubelet chooses, one per
//! branch. The host's checks: admin_doctor. tests/e2e_doctor.rs runs
//! doctor on this machine.

mod fake_root;

use std::path::Path;
use std::process::Command;

use fake_root::*;

#[test]
fn containerd_branches() {
    let r = Root::ready();
    // A handler in an imported drop-in counts.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n",
    );
    r.write(
        "etc/containerd/conf.d/99-userns-hostnet.toml",
        "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "ok", "{v:#}");
    assert!(message(&v, "containerd").contains("conf.d/99-userns-hostnet.toml"));
    // Version 3 keys.
    r.remove("etc/containerd/conf.d");
    r.write(
        "etc/containerd/config.toml",
        "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "ok", "{v:#}");
    // Only runc: not registered.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\nruntime_type = \"io.containerd.runc.v2\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "containerd")), (1, "fail".into()));
    assert!(find(&v, "containerd")["fix"]
        .as_str()
        .unwrap()
        .contains("userns-hostnet install containerd"));
    // The handler's binary is missing.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.uhn.options]\nBinaryName = \"/opt/userns-hostnet-runtime\"\n",
    );
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "fail");
    assert!(message(&v, "containerd").contains("does not exist"));
    // A handler that keeps its own runtime through install's links.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.uhn.options]\nBinaryName = \"/etc/userns-hostnet/handlers/uhn/userns-hostnet-runtime\"\n",
    );
    r.write("etc/userns-hostnet/handlers/uhn/userns-hostnet-runtime", "");
    r.write("opt/runc-1.4", "");
    std::os::unix::fs::symlink(
        "/opt/runc-1.4",
        r.path("etc/userns-hostnet/handlers/uhn/runtime"),
    )
    .unwrap();
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "ok", "{v:#}");
    assert!(
        message(&v, "containerd").contains("(real runtime /opt/runc-1.4)"),
        "{v:#}"
    );
    r.remove("opt/runc-1.4");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "fail", "{v:#}");
    assert!(
        message(&v, "containerd").contains("the real runtime /opt/runc-1.4, which does not exist"),
        "{v:#}"
    );
    // No config file; no containerd at all.
    r.remove("etc/containerd/config.toml");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "containerd"), "fail");
    r.remove("etc/containerd");
    r.remove("usr/bin/containerd");
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "containerd")), (0, "skip".into()));
}

/// No false failures: a daemon is found by its binary, not by a directory
/// in /etc; one installed but not running, or whose CRI plugin is off,
/// does not make the node "NOT ready"; a config named on the command line
/// is checked whatever runs, and the fix names it.
#[test]
fn daemons_in_use_and_named_configs() {
    let r = Root::ready();
    r.write(
        "etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\nruntime_type = \"io.containerd.runc.v2\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "containerd")), (1, "fail".into()));
    r.remove("run/containerd/containerd.sock");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd")),
        (0, "warn".into()),
        "{v:#}"
    );
    assert!(message(&v, "containerd").contains("containerd is not running"));

    // Named on the command line: checked, and the fix names it.
    // A host path: read under --root.
    let named = "/etc/containerd/config.toml";
    let runtime = r.path("runtime");
    let runtime = runtime.to_str().unwrap();
    let (code, v) = r.doctor_with(&["--runtime", runtime, "--containerd-config", named]);
    assert_eq!(
        (code, status(&v, "containerd")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert_eq!(
        find(&v, "containerd")["fix"].as_str().unwrap(),
        format!(
            "{}userns-hostnet install containerd --root {} --config {named}, then restart containerd",
            as_root(),
            r.dir.path().display()
        )
    );

    // Docker's containerd: no CRI, nothing to register.
    r.write("run/containerd/containerd.sock", "");
    r.write(
        "etc/containerd/config.toml",
        "disabled_plugins = [\"cri\"]\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd")),
        (0, "skip".into()),
        "{v:#}"
    );

    // /etc/crio left behind, no crio binary: not installed.
    r.write("etc/crio/crio.conf", "[crio.runtime]\n");
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "crio")), (0, "skip".into()), "{v:#}");
    // crio installed, not running: a warning.
    r.write("usr/bin/crio", "");
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "crio")), (0, "warn".into()), "{v:#}");
    // A crio.conf named on the command line, its drop-ins beside it.
    r.exe("usr/bin/conmon");
    let other = Path::new("/srv/crio/crio.conf");
    r.write("srv/crio/crio.conf", "[crio.runtime]\n");
    r.write(
        "srv/crio/crio.conf.d/99-userns-hostnet.conf",
        "[crio.runtime.runtimes.userns-hostnet]\nruntime_path = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (code, v) = r.doctor_with(&[
        "--runtime",
        runtime,
        "--crio-config",
        other.to_str().unwrap(),
    ]);
    assert_eq!((code, status(&v, "crio")), (0, "ok".into()), "{v:#}");
}

/// CRI-O's packaging: each handler has its monitor_path, conmon is not in
/// PATH, runc and crun live in /usr/libexec/crio.
const CRIO_PACKAGING: &str = "[crio.runtime]\ndefault_runtime = \"crun\"\n\n[crio.runtime.runtimes.crun]\nruntime_path = \"/usr/libexec/crio/crun\"\nruntime_root = \"/run/crun\"\nmonitor_path = \"/usr/libexec/crio/conmon\"\nallowed_annotations = [\n    \"io.containers.trace-syscall\",\n]\n\n[crio.runtime.runtimes.runc]\nruntime_path = \"/usr/libexec/crio/runc\"\nruntime_root = \"/run/runc\"\nmonitor_path = \"/usr/libexec/crio/conmon\"\n";

#[test]
fn crio_branches() {
    let r = Root::ready();
    r.host_binary("usr/bin/crio", &real(CRIO));
    r.write("run/crio/crio.sock", "");
    r.exe("usr/bin/runc");
    r.exe("usr/bin/conmon");
    r.write(
        "etc/crio/crio.conf",
        "[crio.runtime]\ndefault_runtime = \"runc\"\n[crio.runtime.runtimes.runc]\nruntime_path = \"/usr/bin/runc\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "crio")), (1, "fail".into()));
    assert_eq!(status(&v, "crio.config"), "ok", "{v:#}");
    r.write(
        "etc/crio/crio.conf.d/99-userns-hostnet.conf",
        "[crio.runtime.runtimes.userns-hostnet]\nruntime_path = \"/usr/bin/userns-hostnet-runtime\"\nruntime_type = \"oci\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "crio")), (0, "ok".into()), "{v:#}");
    assert_eq!(
        message(&v, "crio.config"),
        "crio 1.36.3 at /usr/bin/crio (first in PATH; no running crio that doctor can see reads this file) accepts /etc/crio/crio.conf (`config`), and every handler's runtime and monitor is there"
    );
    // What CRI-O refuses to read, in its own words.
    r.write(
        "etc/crio/crio.conf.d/50-typo.conf",
        "[crio.runtime]\ndefault_runtime = \"nosuch\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    let m = message(&v, "crio.config");
    assert!(
        m.contains("refuses /etc/crio/crio.conf: ")
            && m.contains("default_runtime set to \"nosuch\"")
            && !m.contains('\n'),
        "{m}"
    );
    r.remove("etc/crio/crio.conf.d/50-typo.conf");
    r.write("etc/crio/crio.conf.d/10-broken.conf", "[crio\n");
    let (_, v) = r.doctor();
    assert_eq!(status(&v, "crio"), "fail");
    assert_eq!(status(&v, "crio.config"), "fail");
    r.remove("etc/crio/crio.conf.d/10-broken.conf");

    // The packaging's shape: no crio.conf, conmon only where each
    // handler's monitor_path names it. The wrapper's handler has none, so
    // CRI-O looks for conmon in PATH and exits ("monitor fields
    // translation ... executable file not found in $PATH").
    r.remove("etc/crio/crio.conf");
    r.remove("usr/bin/conmon");
    r.write("etc/crio/crio.conf.d/10-crio.conf", CRIO_PACKAGING);
    for exe in [
        "usr/libexec/crio/crun",
        "usr/libexec/crio/runc",
        "usr/libexec/crio/conmon",
    ] {
        r.exe(exe);
    }
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert_eq!(status(&v, "crio"), "ok", "{v:#}");
    assert_eq!(
        message(&v, "crio.config"),
        "/etc/crio/crio.conf, as crio 1.36.3 at /usr/bin/crio (first in PATH; no running crio that doctor can see reads this file) reads it: handler userns-hostnet: monitor_path is unset and \"conmon\" is not in the daemon's PATH (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin): crio will not start"
    );
    // The handler carrying the monitor_path: ready.
    r.write(
        "etc/crio/crio.conf.d/99-userns-hostnet.conf",
        "[crio.runtime.runtimes.userns-hostnet]\nruntime_path = \"/usr/bin/userns-hostnet-runtime\"\nruntime_type = \"oci\"\nmonitor_path = \"/usr/libexec/crio/conmon\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "crio.config")), (0, "ok".into()), "{v:#}");
    // A monitor_path naming a conmon that is not there.
    r.remove("usr/libexec/crio/conmon");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    let m = message(&v, "crio.config");
    for h in ["crun", "runc", "userns-hostnet"] {
        assert!(
            m.contains(&format!(
                "handler {h}: monitor_path /usr/libexec/crio/conmon does not exist"
            )),
            "{m}"
        );
    }
    // No crio binary to ask: the same check on the files doctor merges.
    r.write("usr/bin/crio", "");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "crio.config").starts_with("/etc/crio/crio.conf: handler crun: monitor_path /usr/libexec/crio/conmon does not exist"),
        "{v:#}"
    );
    // A runtime that is not there: the default's stops CRI-O, another's
    // handler is dropped (the wrapper's: a failure all the same).
    r.host_binary("usr/bin/crio", &real(CRIO));
    r.exe("usr/libexec/crio/conmon");
    r.remove("usr/libexec/crio/runc");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (0, "warn".into()),
        "{v:#}"
    );
    assert!(message(&v, "crio.config").contains("handler runc: runtime_path /usr/libexec/crio/runc does not exist: CRI-O drops those handlers"), "{v:#}");
    r.remove("usr/bin/userns-hostnet-runtime");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.config")),
        (1, "fail".into()),
        "{v:#}"
    );
}

/// containerd before 2.0 replaces a plugin's whole table with an import's:
/// a drop-in holding only a handler throws the main config's CRI settings
/// (and handlers) away. The containerd that reads the file is asked its
/// version: Debian trixie's 1.7 here.
#[test]
fn an_import_that_replaces_the_cri_table_fails() {
    let r = Root::ready();
    r.host_binary("usr/bin/containerd", &real(CONTAINERD_17));
    r.write(
        "etc/containerd/config.toml",
        "version = 2\nimports = [\"/etc/containerd/conf.d/99-userns-hostnet.toml\"]\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"mirror/pause:3.9\"\n[plugins.\"io.containerd.grpc.v1.cri\".cni]\nbin_dir = \"/opt/custom-cni/bin\"\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"runc\"\n",
    );
    r.write(
        "etc/containerd/conf.d/99-userns-hostnet.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.userns-hostnet.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd")),
        (1, "fail".into()),
        "{v:#}"
    );
    let m = message(&v, "containerd");
    for lost in [
        "sandbox_image",
        "cni.bin_dir",
        "containerd.default_runtime_name",
    ] {
        assert!(m.contains(lost), "{m}");
    }
    assert!(find(&v, "containerd")["fix"]
        .as_str()
        .unwrap()
        .contains("userns-hostnet uninstall containerd --drop-in"));

    // A handler of the main config that an import's CRI table replaces is
    // not registered, even when nothing else is lost.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\nimports = [\"/etc/containerd/conf.d/99-userns-hostnet.toml\"]\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    r.write(
        "etc/containerd/conf.d/99-userns-hostnet.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "containerd")), (0, "ok".into()), "{v:#}");
    assert!(message(&v, "containerd").contains("99-userns-hostnet.toml"));
    // Version 3 is read by containerd 2.x only, which merges deeply;
    // containerd 1.6 ignores its plugin tables (1.7 refuses the file).
    r.host_binary("usr/bin/containerd", &real(CONTAINERD_16));
    r.write(
        "etc/containerd/config.toml",
        "version = 3\nimports = [\"/etc/containerd/conf.d/99-userns-hostnet.toml\"]\n[plugins.\"io.containerd.cri.v1.images\"]\nsandbox_image = \"mirror/pause:3.9\"\n[plugins.\"io.containerd.cri.v1.runtime\".containerd]\ndefault_runtime_name = \"runc\"\n",
    );
    r.write(
        "etc/containerd/conf.d/99-userns-hostnet.toml",
        "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.uhn.options]\nBinaryName = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "containerd.config").contains("containerd 1.6.20 at /usr/bin/containerd (first in PATH; no running containerd that doctor can see reads this file) reads config version 2 at most, and /etc/containerd/config.toml is version 3"),
        "{v:#}"
    );
    r.host_binary("usr/bin/containerd", &real(CONTAINERD_23));
    let (code, v) = r.doctor();
    assert_eq!((code, status(&v, "containerd")), (0, "ok".into()), "{v:#}");
    assert_eq!(status(&v, "containerd.config"), "ok", "{v:#}");
}

const KUBELET_CRIO: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///var/run/crio/crio.sock\nfeatureGates:\n  UserNamespacesSupport: true\n  UserNamespacesHostNetworkSupport: true\n";

/// The kubelet's endpoint decides which daemon is checked: flags over its
/// config file, a running kubelet over the flag files.
#[test]
fn the_kubelet_chooses_the_daemon() {
    let r = Root::ready();
    // containerd has no handler: it would fail, were it the kubelet's.
    r.write(
        "etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\nruntime_type = \"io.containerd.runc.v2\"\n",
    );
    r.host_binary("usr/bin/crio", &real(CRIO));
    // CRI-O's default handler, crun, and its monitor.
    r.exe("usr/bin/crun");
    r.exe("usr/bin/conmon");
    r.write("run/crio/crio.sock", "");
    r.write(
        "etc/crio/crio.conf.d/99-userns-hostnet.conf",
        "[crio.runtime.runtimes.userns-hostnet]\nruntime_path = \"/usr/bin/userns-hostnet-runtime\"\n",
    );
    r.write("var/lib/kubelet/config.yaml", KUBELET_CRIO);
    let (code, v) = r.doctor();
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(status(&v, "kubelet"), "ok");
    assert!(
        message(&v, "kubelet").contains(
            "uses CRI-O (unix:///var/run/crio/crio.sock, from containerRuntimeEndpoint in"
        ),
        "{v:#}"
    );
    assert_eq!(status(&v, "containerd"), "skip");
    assert_eq!(message(&v, "containerd"), "the kubelet uses CRI-O");
    assert_eq!(status(&v, "crio"), "ok");
    // No version matrix for a containerd the kubelet does not use.
    assert!(
        !v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "matrix.containerd"),
        "{v:#}"
    );
    assert_eq!(status(&v, "kubelet.gates"), "ok");
    assert!(message(&v, "kubelet.gates")
        .ends_with("UserNamespacesSupport on, UserNamespacesHostNetworkSupport on"));

    // A named containerd config is checked all the same.
    let named = Path::new("/etc/containerd/config.toml");
    let runtime = r.path("runtime");
    let (code, v) = r.doctor_with(&[
        "--runtime",
        runtime.to_str().unwrap(),
        "--containerd-config",
        named.to_str().unwrap(),
    ]);
    assert_eq!(
        (code, status(&v, "containerd")),
        (1, "fail".into()),
        "{v:#}"
    );

    // kubeadm's flag wins over the config file.
    r.write(
        "var/lib/kubelet/kubeadm-flags.env",
        "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.10\"\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(code, 1, "{v:#}");
    assert!(message(&v, "kubelet").contains("uses containerd (unix:///run/containerd/containerd.sock, from --container-runtime-endpoint in /var/lib/kubelet/kubeadm-flags.env)"), "{v:#}");
    assert_eq!(status(&v, "containerd"), "fail");
    assert_eq!(message(&v, "crio"), "the kubelet uses containerd");

    // A running kubelet's command line wins over the files, and its
    // --config is the config read.
    r.write("proc/4242/comm", "kubelet\n");
    r.write(
        "proc/4242/cmdline",
        "/usr/bin/kubelet\0--config\0/etc/kubernetes/kubelet.yaml\0",
    );
    r.write(
        "etc/kubernetes/kubelet.yaml",
        "kind: KubeletConfiguration\ncontainerRuntimeEndpoint: \"unix:///var/run/crio/crio.sock\"\nfeatureGates: {UserNamespacesSupport: false}\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(code, 0, "{v:#}");
    assert!(
        message(&v, "kubelet").contains("kubelet (running) uses CRI-O"),
        "{v:#}"
    );
    assert!(
        message(&v, "kubelet").contains("/etc/kubernetes/kubelet.yaml"),
        "{v:#}"
    );
    assert_eq!(status(&v, "kubelet.gates"), "warn");
    assert!(
        message(&v, "kubelet.gates")
            .contains("UserNamespacesSupport off, UserNamespacesHostNetworkSupport not set"),
        "{v:#}"
    );
    let fix = find(&v, "kubelet.gates")["fix"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        fix.starts_with("set UserNamespacesSupport to true under featureGates in ")
            && fix.contains("etc/kubernetes/kubelet.yaml"),
        "{fix}"
    );
    r.write(
        "proc/4242/cmdline",
        "/usr/bin/kubelet\0--config=/etc/kubernetes/kubelet.yaml\0--container-runtime-endpoint\0unix:///run/cri-dockerd.sock\0",
    );
    let (code, v) = r.doctor();
    assert_eq!(status(&v, "kubelet"), "warn", "{v:#}");
    assert!(
        message(&v, "kubelet")
            .contains("the running kubelet's --container-runtime-endpoint (PID 4242)"),
        "{v:#}"
    );
    assert_eq!(
        message(&v, "containerd"),
        "the kubelet uses another runtime"
    );
    assert_eq!(code, 0);
}

/// A kubelet config with no endpoint: the kubelet's default, containerd.
#[test]
fn a_kubelet_config_without_an_endpoint_means_containerd() {
    let r = Root::ready();
    r.write("usr/bin/crio", "");
    r.write(
        "var/lib/kubelet/config.yaml",
        "kind: KubeletConfiguration\n",
    );
    let (code, v) = r.doctor();
    assert_eq!(code, 0, "{v:#}");
    assert!(
        message(&v, "kubelet").contains(
            "uses containerd (unix:///run/containerd/containerd.sock, from the kubelet's default"
        ),
        "{v:#}"
    );
    assert_eq!(status(&v, "crio"), "skip");
    assert!(
        message(&v, "kubelet.gates").contains("UserNamespacesSupport not set"),
        "{v:#}"
    );
}

/// The containerd asked is the one that reads the config: the running
/// daemon started with it (its /proc entry), else the one named with
/// --containerd, else the first in PATH; each answer says which.
#[test]
fn the_daemon_that_serves_the_config_is_asked() {
    let r = Root::ready();
    let config_23 = "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.userns-hostnet]\n  runtime_type = \"io.containerd.runc.v2\"\n  [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.userns-hostnet.options]\n    BinaryName = \"/usr/bin/userns-hostnet-runtime\"\n";
    r.write("etc/containerd/config.toml", config_23);
    // Debian's 1.6 first in PATH: it ignores a version 3 file's plugins.
    r.host_binary("usr/bin/containerd", &real(CONTAINERD_16));
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "containerd.config").starts_with("containerd 1.6.20 at /usr/bin/containerd (first in PATH; no running containerd that doctor can see reads this file) reads config version 2 at most"),
        "{v:#}"
    );
    // Named: that one is asked.
    r.host_binary("opt/containerd-2.3/containerd", &real(CONTAINERD_23));
    let (code, v) = r.doctor_with(&[
        "--runtime",
        r.path("runtime").to_str().unwrap(),
        "--containerd",
        "/opt/containerd-2.3/containerd",
    ]);
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (0, "ok".into()),
        "{v:#}"
    );
    assert_eq!(
        message(&v, "containerd.config"),
        "containerd 2.3.4 at /opt/containerd-2.3/containerd (--containerd on the command line) accepts /etc/containerd/config.toml (`config dump`), and every handler's runtime is there"
    );
    assert!(
        message(&v, "matrix.containerd").starts_with("containerd 2.3.4 "),
        "{v:#}"
    );
    // Running with this file (by default, no --config): asked before both.
    r.link("proc/4242/exe", Path::new("/opt/containerd-2.3/containerd"));
    r.write(
        "proc/4242/cmdline",
        "/opt/containerd-2.3/containerd\0--log-level\0info\0",
    );
    r.write("proc/4242/environ", "PATH=/opt/bin:/usr/bin\0");
    // Another containerd, running with another file: not this one's.
    r.link("proc/99/exe", Path::new("/usr/bin/containerd"));
    r.write("proc/99/cmdline", "containerd\0--config=/srv/other.toml\0");
    let (code, v) = r.doctor_with(&[
        "--runtime",
        r.path("runtime").to_str().unwrap(),
        "--containerd",
        "/usr/bin/containerd",
    ]);
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (0, "ok".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "containerd.config").starts_with("containerd 2.3.4 at /opt/containerd-2.3/containerd (the running daemon, PID 4242) accepts"),
        "{v:#}"
    );
    // The other daemon's file: PID 99, containerd 1.6.
    r.write("srv/other.toml", "version = 2\n");
    let (_, v) = r.doctor_with(&[
        "--runtime",
        r.path("runtime").to_str().unwrap(),
        "--containerd-config",
        "/srv/other.toml",
    ]);
    assert!(
        message(&v, "containerd.config").starts_with("containerd 1.6.20 at /usr/bin/containerd (the running daemon, PID 99) accepts /srv/other.toml"),
        "{v:#}"
    );
    // What containerd refuses, in its words, on one line.
    r.write(
        "srv/other.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"\n",
    );
    let (code, v) = r.doctor_with(&[
        "--runtime",
        r.path("runtime").to_str().unwrap(),
        "--containerd-config",
        "/srv/other.toml",
    ]);
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    let m = message(&v, "containerd.config");
    assert!(
        m.starts_with("containerd 1.6.20 at /usr/bin/containerd (the running daemon, PID 99) refuses /srv/other.toml: containerd: failed to load TOML") && !m.contains('\n'),
        "{m}"
    );
    // A handler whose runtime is not executable.
    r.remove("usr/bin/userns-hostnet-runtime");
    r.write("usr/bin/userns-hostnet-runtime", "");
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "containerd.config")),
        (1, "fail".into()),
        "{v:#}"
    );
    assert!(
        message(&v, "containerd.config").contains("handler userns-hostnet: BinaryName /usr/bin/userns-hostnet-runtime is not executable: the wrapper's handler cannot run a container"),
        "{v:#}"
    );
}

/// A CRI-O node as its packages make it (`default_runtime = "crun"`),
/// whose handler `install crio` builds on Debian's crun 1.8.1: no
/// `features` answer, and it refuses every ociVersion but 1.0. The
/// runtime doctor finds in PATH (`--runtime`) lists everything; the
/// handler's own runtime does not, so the node is not ready.
#[test]
fn a_handler_is_judged_by_the_runtime_it_runs() {
    let r = Root::ready();
    r.host_binary("usr/bin/crio", &real(CRIO));
    r.write("run/crio/crio.sock", "");
    r.remove("usr/bin/containerd");
    r.remove("etc/containerd/config.toml");
    r.write("etc/crio/crio.conf.d/10-crio.conf", CRIO_PACKAGING);
    r.exe("usr/libexec/crio/conmon");
    r.exe("usr/libexec/crio/runc");
    r.host_binary("usr/libexec/crio/crun", Path::new("/usr/bin/crun"));
    let out = Command::new(TOOL)
        .args(["install", "crio", "--root"])
        .arg(r.dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (code, v) = r.doctor();
    assert_eq!(status(&v, "crio"), "ok", "{v:#}");
    // The runtime named on the command line is fine: doctor used to stop there.
    assert_eq!(status(&v, "runtime.features"), "ok", "{v:#}");
    assert_eq!(
        (code, status(&v, "crio.runtime")),
        (1, "fail".into()),
        "{v:#}"
    );
    let m = message(&v, "crio.runtime");
    assert!(
        m.starts_with("handler userns-hostnet runs crun version 1.8.1 (/usr/libexec/crio/crun), which has no `features` answer: "),
        "{m}"
    );
    assert!(m.contains("unknown version specified"), "{m}");
    assert!(fix(&v, "crio.runtime").contains("runc >= 1.2"), "{v:#}");
    // The same handler on a runtime that lists what the kubelet asks for.
    r.script(
        "usr/libexec/crio/crun",
        "case \"$1\" in features) echo '{\"mountOptions\":[\"rro\"],\"linux\":{\"namespaces\":[\"user\",\"network\"],\"mountExtensions\":{\"idmap\":{\"enabled\":true}}}}';; --version) echo 'crun version 1.19.1';; esac",
    );
    let (code, v) = r.doctor();
    assert_eq!(
        (code, status(&v, "crio.runtime")),
        (0, "ok".into()),
        "{v:#}"
    );
}
