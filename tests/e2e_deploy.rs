//! The installer image (Containerfile, scripts/image.sh) and its `deploy`
//! mode, run under podman against a fake host root: a temporary directory
//! with etc/containerd/config.toml (containerd's own defaults) and
//! usr/local/bin holding an older admin tool. The binaries land, the
//! handler is registered as containerd reads it (`containerd config dump`),
//! a second run changes nothing, SIGTERM (a pod stopping) leaves the
//! install in place, `--check` (the readiness probe) says so, an upgrade
//! replaces the wrapper by rename while a container of the handler runs,
//! and `--uninstall` (the cleanup DaemonSet) puts every file back byte for
//! byte.
//!
//! The node's daemon restarted and its label: e2e_deploy_node.
//!
//! Prerequisites (root, podman, containerd, file, and the staged image
//! context target/image from `make image`) fail the tests when missing.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::deploy::{
    build_image, changes, dumped_handler, fake_host_root, identities, podman_run, snapshot, Node,
    PODMAN_RUN, STAGE,
};
use common::run_capture;

#[test]
fn the_image_installs_a_stop_leaves_it_and_uninstall_restores_it() {
    let image = build_image("e2e-deploy");
    let size = run_capture(Command::new("podman").args([
        "image",
        "inspect",
        "--format",
        "{{.Size}}",
        &image,
    ]));
    size.assert_success();
    println!("installer image {image}: {} bytes", size.stdout.trim());

    let root = fake_host_root();
    let r = root.path();
    let config = r.join("etc/containerd/config.toml");
    let before = snapshot(r);
    assert!(dumped_handler(&config, "userns-hostnet").is_none());

    // First run: install and exit.
    let first = podman_run(&image, r, &[], &["--once"]);
    first.assert_success();
    assert!(
        first
            .stdout
            .contains("node not labelled: NODE_NAME is not set"),
        "{}",
        first.describe()
    );
    let installed = snapshot(r);
    println!(
        "install changed:\n{}",
        changes(&before, &installed).join("\n")
    );
    for bin in ["userns-hostnet", "userns-hostnet-runtime"] {
        assert_eq!(
            installed.get(&PathBuf::from("usr/local/bin").join(bin)),
            Some(&Node::File {
                mode: 0o755,
                owner: (0, 0),
                bytes: fs::read(Path::new(STAGE).join(bin)).unwrap()
            }),
            "{bin} landed"
        );
    }
    for link in [
        "userns-hostnet-runtime-crun",
        "userns-hostnet-runtime-youki",
    ] {
        assert_eq!(
            installed.get(&PathBuf::from("usr/local/bin").join(link)),
            Some(&Node::Link {
                target: "userns-hostnet-runtime".into()
            })
        );
    }
    assert!(matches!(
        installed.get(Path::new("etc/userns-hostnet/config.toml")),
        Some(Node::File { mode: 0o644, .. })
    ));
    let h = dumped_handler(&config, "userns-hostnet").expect("handler registered");
    assert_eq!(h["runtime_type"].as_str(), Some("io.containerd.runc.v2"));
    assert_eq!(
        h["options"]["BinaryName"].as_str(),
        Some("/usr/local/bin/userns-hostnet-runtime"),
        "{h:#?}"
    );

    // Second run: nothing changes, not even an inode or a time stamp.
    let ids = identities(r, &installed);
    let second = podman_run(&image, r, &[], &["--once"]);
    second.assert_success();
    assert!(
        second.stdout.contains("already registered"),
        "{}",
        second.describe()
    );
    let again = snapshot(r);
    assert_eq!(changes(&installed, &again), Vec::<String>::new());
    assert_eq!(identities(r, &again), ids, "a second run rewrote a file");

    // The DaemonSet's way: wait; the readiness probe says registered; a
    // SIGTERM (rollout, eviction, drain, deletion) leaves everything.
    let name = format!("uhn-deploy-{}", std::process::id());
    let mut cmd = Command::new("podman");
    cmd.args(PODMAN_RUN)
        .args([
            "--detach",
            "--privileged",
            "--network",
            "none",
            "--name",
            &name,
        ])
        .args(common::podman::ULIMITS)
        .arg("--volume")
        .arg(format!("{}:/host", r.display()))
        .arg(&image);
    run_capture(&mut cmd).assert_success();
    let logs = || run_capture(Command::new("podman").args(["logs", &name]));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !logs().stdout.contains("installed; waiting") {
        if Instant::now() > deadline {
            let out = logs();
            let _ = run_capture(Command::new("podman").args(["rm", "--force", &name]));
            panic!("the installer never waited:\n{}", out.describe());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let probe = run_capture(Command::new("podman").args([
        "exec",
        &name,
        "/usr/local/bin/userns-hostnet",
        "deploy",
        "--check",
    ]));
    run_capture(Command::new("podman").args(["stop", "--time", "60", &name])).assert_success();
    let code = run_capture(Command::new("podman").args([
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        &name,
    ]));
    let out = logs();
    let _ = run_capture(Command::new("podman").args(["rm", "--force", &name]));
    // Without --restart containerd has not read the handler yet: not ready.
    assert_eq!(probe.status.code(), Some(1), "{}", probe.describe());
    assert_eq!(
        probe.stdout,
        "not registered: containerd must be restarted for handler userns-hostnet to take effect (no running daemon found reading that file)\n",
        "{}",
        probe.describe()
    );
    assert_eq!(code.stdout.trim(), "0", "{}", out.describe());
    assert!(
        out.stdout.contains("SIGTERM: stopping"),
        "{}",
        out.describe()
    );
    assert!(!out.stdout.contains("removed"), "{}", out.describe());
    let stopped = snapshot(r);
    assert_eq!(
        changes(&installed, &stopped),
        Vec::<String>::new(),
        "a stopping pod leaves the install"
    );
    assert_eq!(
        identities(r, &stopped),
        ids,
        "a stopping pod rewrote a file"
    );
    let not_removed = podman_run(&image, r, &[], &["--check", "--uninstall"]);
    assert_eq!(
        not_removed.status.code(),
        Some(1),
        "{}",
        not_removed.describe()
    );

    // The cleanup DaemonSet's way: --uninstall, then nothing is left.
    let out = podman_run(&image, r, &[], &["--uninstall"]);
    out.assert_success();
    assert!(out.stdout.contains("undone"), "{}", out.describe());
    let after = snapshot(r);
    println!(
        "cleanup left, against the first snapshot: {:?}",
        changes(&before, &after)
    );
    assert_eq!(changes(&before, &after), Vec::<String>::new());
    assert_eq!(
        after, before,
        "the uninstall restores every file byte for byte"
    );
    podman_run(&image, r, &[], &["--check", "--uninstall"]).assert_success();
    let probe = podman_run(&image, r, &[], &["--check"]);
    assert_eq!(probe.status.code(), Some(1), "{}", probe.describe());
    assert!(
        probe.stdout.contains("not registered: no deploy state"),
        "{}",
        probe.describe()
    );
}

#[test]
fn an_operator_edit_after_install_survives_the_cleanup() {
    let image = build_image("e2e-deploy");
    let root = fake_host_root();
    let r = root.path();
    let config = r.join("etc/containerd/config.toml");
    let original = fs::read_to_string(&config).unwrap();
    podman_run(&image, r, &[], &["--once"]).assert_success();
    // The operator changes another setting after the install.
    let edited = fs::read_to_string(&config).unwrap().replace(
        "max_concurrent_downloads = 3",
        "max_concurrent_downloads = 7",
    );
    assert!(edited.contains("max_concurrent_downloads = 7"));
    fs::write(&config, &edited).unwrap();
    // The cleanup run with another handler in its environment still takes
    // out the handler the deploy registered, as its state says.
    let out = podman_run(
        &image,
        r,
        &["--env", "USERNS_HOSTNET_HANDLER=uhn-another"],
        &["--uninstall"],
    );
    out.assert_success();
    assert!(
        out.stdout.contains("changed since deploy"),
        "{}",
        out.describe()
    );
    let now = fs::read_to_string(&config).unwrap();
    assert!(dumped_handler(&config, "userns-hostnet").is_none(), "{now}");
    assert_eq!(
        now,
        original.replace(
            "max_concurrent_downloads = 3",
            "max_concurrent_downloads = 7"
        ),
        "only the handler went; the operator's edit stays"
    );
    assert!(!r.join("var").exists(), "the state went too");
}

/// A CRI-O host (crio.conf, no containerd config): deploy finds it,
/// registers the handler in its own drop-in, and the undo removes the
/// drop-in and the directory it created.
#[test]
fn a_crio_host_gets_the_drop_in_and_loses_it_on_cleanup() {
    let image = build_image("e2e-deploy");
    let root = tempfile::Builder::new()
        .prefix("uhn-deploy-crio-")
        .tempdir_in("/tmp")
        .unwrap();
    let r = root.path();
    fs::create_dir_all(r.join("etc/crio")).unwrap();
    fs::write(
        r.join("etc/crio/crio.conf"),
        "[crio.runtime]\ndefault_runtime = \"runc\"\n",
    )
    .unwrap();
    let before = snapshot(r);
    let out = podman_run(&image, r, &[], &["--once"]);
    out.assert_success();
    let drop_in = r.join("etc/crio/crio.conf.d/99-userns-hostnet.conf");
    let text = fs::read_to_string(&drop_in).unwrap_or_else(|e| panic!("{e}: {}", out.describe()));
    let doc: toml::Table = text.parse().unwrap();
    assert_eq!(
        doc["crio"]["runtime"]["runtimes"]["userns-hostnet"]["runtime_path"].as_str(),
        Some("/usr/local/bin/userns-hostnet-runtime"),
        "{text}"
    );
    assert!(
        out.stdout.contains("crio must be restarted"),
        "{}",
        out.describe()
    );
    podman_run(&image, r, &[], &["--uninstall"]).assert_success();
    assert_eq!(changes(&before, &snapshot(r)), Vec::<String>::new());
}

/// The node's containerd config is an absolute link into another
/// directory (`/etc/containerd/config.toml -> /etc/k0s/containerd.toml`):
/// the installer, whose own root is the image's, follows it inside the
/// host root, writes the target and leaves the link; the cleanup gives
/// the target back byte for byte, the link still the same.
#[test]
fn a_nodes_config_link_is_followed_inside_the_host_root() {
    let image = build_image("e2e-deploy");
    let root = fake_host_root();
    let r = root.path();
    let link = r.join("etc/containerd/config.toml");
    let target = r.join("etc/k0s/containerd.toml");
    let node_target = Path::new("/etc/k0s/containerd.toml");
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    fs::rename(&link, &target).unwrap();
    std::os::unix::fs::symlink(node_target, &link).unwrap();
    let original = fs::read(&target).unwrap();
    let first = podman_run(&image, r, &[], &["--once"]);
    first.assert_success();
    assert_eq!(fs::read_link(&link).unwrap(), node_target);
    assert!(
        dumped_handler(&target, "userns-hostnet").is_some(),
        "{}",
        first.describe()
    );
    assert!(
        first
            .stdout
            .contains("registered runtime handler userns-hostnet in /etc/k0s/containerd.toml"),
        "{}",
        first.describe()
    );
    let out = podman_run(&image, r, &[], &["--uninstall"]);
    out.assert_success();
    assert_eq!(fs::read_link(&link).unwrap(), node_target);
    assert_eq!(fs::read(&target).unwrap(), original, "{}", out.describe());
    assert!(!r.join("var").exists(), "the state went too");
}

/// `deploy --check` judges what deploy owns in the daemon's config, its
/// handler, not the whole file: another tool appending its own runtime
/// table (as `nvidia-ctk runtime configure` does) leaves it registered;
/// the handler taken out is not, and deploy run again puts it back.
#[test]
fn another_tools_table_in_the_config_leaves_the_handler_registered() {
    let root = fake_host_root();
    let r = root.path();
    // The restart command runs in the host's root: a shell there.
    fs::create_dir_all(r.join("bin")).unwrap();
    fs::copy("/bin/busybox", r.join("bin/sh")).unwrap();
    let from = Path::new(common::TOOL).parent().unwrap().to_owned();
    let deploy = |mode: &[&str]| {
        let mut cmd = Command::new(common::TOOL);
        cmd.args(["deploy", "--host-root"])
            .arg(r)
            .args([
                "--daemon",
                "containerd",
                "--restart",
                "--restart-command",
                "true",
            ])
            .args(mode)
            .arg("--from")
            .arg(&from)
            .env_remove("NODE_NAME")
            .env_remove("KUBERNETES_SERVICE_HOST");
        run_capture(&mut cmd)
    };
    deploy(&["--once"]).assert_success();
    let probe = deploy(&["--check"]);
    probe.assert_success();
    assert!(
        probe.stdout.starts_with("registered: "),
        "{}",
        probe.describe()
    );
    let config = r.join("etc/containerd/config.toml");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push_str("\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n  runtime_type = \"io.containerd.runc.v2\"\n  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n    BinaryName = \"/usr/bin/nvidia-container-runtime\"\n");
    fs::write(&config, &text).unwrap();
    let probe = deploy(&["--check"]);
    assert!(
        probe.status.success() && probe.stdout.starts_with("registered: "),
        "{}",
        probe.describe()
    );
    // Another tool rewrites the file without the handler.
    let without = run_capture(Command::new("containerd").args(["config", "default"])).stdout;
    fs::write(&config, &without).unwrap();
    assert!(dumped_handler(&config, "userns-hostnet").is_none());
    let probe = deploy(&["--check"]);
    assert!(
        !probe.status.success() && probe.stdout.starts_with("not registered: "),
        "{}",
        probe.describe()
    );
    deploy(&["--once"]).assert_success();
    assert!(dumped_handler(&config, "userns-hostnet").is_some());
    let probe = deploy(&["--check"]);
    assert!(probe.status.success(), "{}", probe.describe());
}

/// A k3s-shaped node: containerd's config is the file k3s writes anew at
/// every start. Auto-detection finds no daemon, and with the file named
/// install refuses it (the template is where the handler goes): in both
/// cases deploy writes nothing, and `--check` then says not registered.
#[test]
fn a_refused_deploy_writes_nothing_and_is_not_registered() {
    let root = tempfile::Builder::new()
        .prefix("uhn-deploy-k3s-")
        .tempdir_in("/tmp")
        .unwrap();
    let r = root.path();
    let etc = r.join("var/lib/rancher/k3s/agent/etc/containerd");
    fs::create_dir_all(&etc).unwrap();
    let default = run_capture(Command::new("containerd").args(["config", "default"]));
    default.assert_success();
    fs::write(etc.join("config.toml"), &default.stdout).unwrap();
    fs::create_dir_all(r.join("usr/local/bin")).unwrap();
    let from = Path::new(common::TOOL).parent().unwrap().to_owned();
    let deploy = |extra: &[&str]| {
        let mut cmd = Command::new(common::TOOL);
        cmd.args(["deploy", "--host-root"])
            .arg(r)
            .args(extra)
            .arg("--from")
            .arg(&from)
            .env_remove("NODE_NAME")
            .env_remove("KUBERNETES_SERVICE_HOST");
        run_capture(&mut cmd)
    };
    let before = snapshot(r);
    let detect = deploy(&["--once"]);
    assert_eq!(detect.status.code(), Some(2), "{}", detect.describe());
    assert!(
        detect
            .stderr
            .contains("cannot tell whether this node runs containerd or CRI-O"),
        "{}",
        detect.describe()
    );
    assert_eq!(changes(&before, &snapshot(r)), Vec::<String>::new());
    let named = deploy(&[
        "--daemon",
        "containerd",
        "--daemon-config",
        "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
        "--once",
    ]);
    assert_eq!(named.status.code(), Some(2), "{}", named.describe());
    assert!(
        named.stderr.contains("k3s writes this file anew"),
        "{}",
        named.describe()
    );
    assert_eq!(
        changes(&before, &snapshot(r)),
        Vec::<String>::new(),
        "{}",
        named.describe()
    );
    let probe = deploy(&["--check"]);
    assert_eq!(probe.status.code(), Some(1), "{}", probe.describe());
    assert!(
        probe.stdout.starts_with("not registered: "),
        "{}",
        probe.describe()
    );
    // A config install cannot read: named as the node names it, not
    // where its root is mounted here; nothing written either.
    fs::create_dir_all(r.join("etc/containerd")).unwrap();
    fs::write(r.join("etc/containerd/config.toml"), "version = 2\n[x\n").unwrap();
    let before = snapshot(r);
    let broken = deploy(&["--daemon", "containerd", "--once"]);
    assert_eq!(broken.status.code(), Some(2), "{}", broken.describe());
    assert!(
        broken
            .stderr
            .starts_with("userns-hostnet: /etc/containerd/config.toml: ")
            && !broken.stderr.contains(&r.display().to_string()),
        "{}",
        broken.describe()
    );
    assert_eq!(changes(&before, &snapshot(r)), Vec::<String>::new());
}
