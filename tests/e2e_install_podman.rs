//! `install crio --hook`, `install podman --hook`: the createRuntime hook
//! definition written into the hooks directory each one reads (checked on
//! temp dirs, and against the real CRI-O 1.36's `crio config`), and run by
//! the real podman 4.3 from there; `install podman`:
//! the `[engine.runtimes]` entry of containers.conf that `podman --runtime
//! NAME` finds.

mod common;

use common::install::{args_for, install, left, ok, refused, s, text, uninstall};
use common::podman::{GIDMAP, UIDMAP, ULIMITS};
use common::TOOL;
use common::{show, writable_under_sys, Probe};
use std::path::{Path, PathBuf};
use std::process::Command;

const NAME_PREFIX: &str = "uhn-instpod-";

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// CRI-O: the hooks_dir its config (a drop-in over crio.conf) names;
/// --dry-run writes nothing; uninstall removes the
/// file and only it.
#[test]
fn crio_hook_goes_where_crio_reads_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("crio.conf");
    let hooks = dir.path().join("hooks.d");
    std::fs::write(
        &conf,
        "[crio.runtime]\nhooks_dir = [\"/nowhere/crio/hooks.d\"]\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("crio.conf.d")).unwrap();
    std::fs::write(
        dir.path().join("crio.conf.d/10-hooks.conf"),
        format!("[crio.runtime]\nhooks_dir = [{:?}]\n", s(&hooks)),
    )
    .unwrap();
    let file = hooks.join("userns-hostnet.json");

    // The program run from its build directory (or, for a checkout under
    // /tmp, its temporary path, which is said first) is no path for a hook.
    let err = refused(&args_for(
        "install",
        "crio",
        &conf,
        &["--hook", "--dry-run"],
    ));
    let reason = if ["/tmp/", "/var/tmp/", "/dev/shm/"]
        .iter()
        .any(|t| TOOL.starts_with(t))
    {
        "a temporary path"
    } else {
        "a cargo build directory"
    };
    assert!(
        err.contains(&format!("--hook: the hook would run {TOOL} ({reason})"))
            && err.contains("or pass --force"),
        "{err}"
    );
    let out = install("crio", &conf, &["--hook", "--force", "--dry-run"]);
    assert!(out.contains(&format!("+++ {}", file.display())), "{out}");
    assert!(out.contains("\"createRuntime\""), "{out}");
    assert!(!hooks.exists(), "dry run wrote {}", hooks.display());

    let out = install("crio", &conf, &["--hook", "--force"]);
    assert!(out.contains("no restart needed"), "{out}");
    let def = read_json(&file);
    assert_eq!(def["hook"]["path"], TOOL);
    assert_eq!(def["stages"], serde_json::json!(["createRuntime"]));
    assert!(
        def["comment"]
            .as_str()
            .unwrap()
            .starts_with("Added by `userns-hostnet install`"),
        "{def}"
    );
    let out = install("crio", &conf, &["--hook", "--force"]);
    assert!(out.starts_with("nothing to change"), "{out}");

    std::fs::write(hooks.join("other.json"), "{}").unwrap();
    uninstall("crio", &conf, &["--hook"]);
    assert!(!file.exists());
    assert!(hooks.join("other.json").exists());
    let out = uninstall("crio", &conf, &["--hook"]);
    assert!(out.starts_with("nothing to change"), "{out}");
}

/// podman: the default under /etc (shown by a dry run only: the test
/// writes nothing there), else containers.conf's hooks_dir; --hooks-dir
/// overrides both. A changed or foreign file is left, and uninstall says so.
#[test]
fn podman_hook_dirs_and_what_is_not_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("containers.conf");
    let out = install("podman", &conf, &["--hook", "--force", "--dry-run"]);
    assert!(
        out.contains("+++ /etc/containers/oci/hooks.d/userns-hostnet.json"),
        "{out}"
    );
    assert!(out.contains("the default"), "{out}");
    // Written for real, that copy's hook would land in this host's /etc.
    let err = refused(&args_for(
        "install",
        "podman",
        &conf,
        &["--hook", "--force"],
    ));
    assert!(
        err.contains("not this host's daemon config (it is outside /etc), yet the hook would go to /etc/containers/oci/hooks.d on this host"),
        "{err}"
    );

    let hooks = dir.path().join("podman-hooks");
    std::fs::write(
        &conf,
        format!(
            "[engine]\n# where our hooks live\nhooks_dir = [{:?}, \"/usr/share/containers/oci/hooks.d\"]\n",
            s(&hooks)
        ),
    )
    .unwrap();
    let out = install("podman", &conf, &["--hook", "--force", "--dry-run"]);
    assert!(
        out.contains(&format!("+++ {}/userns-hostnet.json", hooks.display())),
        "{out}"
    );

    let other = dir.path().join("elsewhere");
    install(
        "podman",
        &conf,
        &["--hook", "--force", "--hooks-dir", s(&other)],
    );
    let file = other.join("userns-hostnet.json");
    assert!(file.exists());
    assert!(!hooks.exists());

    // Changed since install: left, and uninstall exits 1 saying why.
    let changed = std::fs::read_to_string(&file)
        .unwrap()
        .replace("\"timeout\": 10", "\"timeout\": 30");
    std::fs::write(&file, &changed).unwrap();
    let args = ["uninstall", "podman", "--hook", "--hooks-dir", s(&other)];
    let out = left(&args);
    assert!(out.contains("changed since install"), "{out}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), changed);

    // The package's own definition, linked by hand: not install's.
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("hooks.d/userns-hostnet.json"),
        &file,
    )
    .unwrap();
    let out = ok(&[
        "install",
        "podman",
        "--hook",
        "--force",
        "--hooks-dir",
        s(&other),
    ]);
    assert!(out.contains("not written by install"), "{out}");
    left(&args);
    assert!(std::fs::symlink_metadata(&file).unwrap().is_symlink());

    let err = refused(&["install", "containerd", "--hook"]);
    assert!(err.contains("containerd reads no hooks directory"), "{err}");
}

/// A container name; dropping it removes what a failed test left.
struct Name(String);

impl Name {
    fn new() -> Name {
        Name(format!("{NAME_PREFIX}{}", common::unique_id("c")))
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "--force", "--ignore", "--time", "0", &self.0])
            .output();
    }
}

/// A directory with a writable rootfs in `rootfs/`, once podman is there
/// and the containers a failed run of these tests left are gone.
fn podman_and_rootfs() -> tempfile::TempDir {
    common::podman::require_podman();
    common::podman::remove_dead_containers(NAME_PREFIX);
    common::podman::writable_rootfs(NAME_PREFIX)
}

/// `podman GLOBAL-OPTIONS run` a probe on the host network with a user
/// namespace: what it saw.
fn podman_probe(podman: &mut Command, rootfs: &Path, what: &str) -> Probe {
    let name = Name::new();
    let out = common::run_capture(
        podman
            .args(["run", "--rm", "--name", &name.0, "--network", "host"])
            .args(UIDMAP)
            .args(GIDMAP)
            .args(ULIMITS)
            .arg("--rootfs")
            .arg(rootfs)
            .args(common::probe_args()),
    );
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    show(what, &probe);
    probe
}

/// `podman --runtime runc --hooks-dir DIR run` a probe.
fn runc_probe(rootfs: &Path, hooks_dir: &Path, what: &str) -> Probe {
    let mut podman = Command::new("podman");
    podman
        .arg("--runtime")
        .arg(common::Runtime::Runc.path())
        .arg("--hooks-dir")
        .arg(hooks_dir);
    podman_probe(&mut podman, rootfs, what)
}

/// podman with `conf` as its containers.conf, running the runtime
/// registered there as userns-hostnet.
fn podman_by_name(conf: &Path) -> Command {
    let mut podman = Command::new("podman");
    podman
        .env("CONTAINERS_CONF", conf)
        .args(["--runtime", "userns-hostnet"]);
    podman
}

/// The hook `install podman --hook` wrote runs under the real podman: the
/// host's submounts of /sys, writable with plain runc and an empty hooks
/// directory, are read-only with it; after uninstall they are writable
/// again.
#[test]
fn installed_hook_runs_under_podman() {
    let tmp = podman_and_rootfs();
    let rootfs = tmp.path().join("rootfs");
    let hooks: PathBuf = tmp.path().join("hooks.d");
    std::fs::create_dir(&hooks).unwrap();

    let plain = runc_probe(&rootfs, &hooks, "podman + runc, no hook");
    assert!(
        !writable_under_sys(&plain).is_empty(),
        "plain runc under podman should leave the host's /sys submounts writable:\n{}",
        plain.table()
    );

    ok(&[
        "install",
        "podman",
        "--hook",
        "--force",
        "--hooks-dir",
        s(&hooks),
    ]);
    let hooked = runc_probe(&rootfs, &hooks, "podman + runc + installed hook");
    assert!(
        hooked.under_sys().len() > 2,
        "the host's submounts of /sys should be there:\n{}",
        hooked.table()
    );
    assert!(
        writable_under_sys(&hooked).is_empty(),
        "the installed hook should make every /sys mount read-only:\n{}",
        hooked.table()
    );

    ok(&["uninstall", "podman", "--hook", "--hooks-dir", s(&hooks)]);
    assert_eq!(std::fs::read_dir(&hooks).unwrap().count(), 0);
    let after = runc_probe(&rootfs, &hooks, "podman + runc, hook uninstalled");
    assert!(!writable_under_sys(&after).is_empty(), "{}", after.table());
}

/// A containers.conf an operator wrote: comments, order and other runtimes
/// must survive install and come back byte for byte on uninstall.
const CONTAINERS_CONF: &str = r#"# Node-wide podman settings.
[containers]
log_size_max = 1048576   # 1 MiB

[engine]
# crun first on this node
runtime = "crun"

[engine.runtimes]
crun = [
  "/usr/bin/crun",
  "/usr/local/bin/crun",
]

[network]
network_backend = "netavark"
"#;

/// `install podman`: the `[engine.runtimes]` entry is added next to the
/// operator's, a second install changes nothing, uninstall puts the file
/// back byte for byte; on a node without the file, uninstall leaves none.
#[test]
fn podman_runtimes_entry_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("containers.conf");
    std::fs::write(&conf, CONTAINERS_CONF).unwrap();
    let w = common::WRAPPER;
    // The entry runs the wrapper through the handler's own link, next to
    // a link to the runtime podman ran by default: crun's first path.
    let link = dir
        .path()
        .join("handlers/userns-hostnet/userns-hostnet-runtime");
    let l = link.to_str().unwrap();
    let out = install("podman", &conf, &["--wrapper", w, "--dry-run"]);
    assert!(
        out.contains(&format!("+userns-hostnet = [\"{l}\"]")),
        "{out}"
    );
    assert!(
        out.contains("real runtime of handler userns-hostnet: /usr/bin/crun (the first path of podman runtime crun in "),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), CONTAINERS_CONF);

    let out = install("podman", &conf, &["--wrapper", w]);
    assert!(out.contains("podman --runtime userns-hostnet"), "{out}");
    let written = std::fs::read_to_string(&conf).unwrap();
    assert!(
        written.starts_with("# Node-wide podman settings.\n"),
        "{written}"
    );
    assert!(written.contains("# crun first on this node\n"), "{written}");
    let v: toml::Value = toml::from_str(&written).unwrap();
    assert_eq!(
        v["engine"]["runtimes"]["userns-hostnet"],
        toml::Value::Array(vec![toml::Value::String(l.into())])
    );
    assert_eq!(
        std::fs::read_link(dir.path().join("handlers/userns-hostnet/runtime")).unwrap(),
        Path::new("/usr/bin/crun")
    );
    assert_eq!(v["engine"]["runtimes"]["crun"].as_array().unwrap().len(), 2);
    assert_eq!(v["engine"]["runtime"].as_str(), Some("crun"));
    let out = install("podman", &conf, &["--wrapper", w]);
    assert!(out.starts_with("nothing to change"), "{out}");

    uninstall("podman", &conf, &[]);
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), CONTAINERS_CONF);
    assert!(!dir.path().join("handlers").exists());

    // An entry of that name that is not install's stays.
    let own = CONTAINERS_CONF.replace(
        "[network]",
        &format!("userns-hostnet = [\"{w}\"]\n\n[network]"),
    );
    std::fs::write(&conf, &own).unwrap();
    let out = left(&args_for("uninstall", "podman", &conf, &[]));
    assert!(out.contains("not added by install"), "{out}");
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), own);
    let other = CONTAINERS_CONF.replace(
        "[network]",
        "userns-hostnet = [\"/usr/bin/crun\"]\n\n[network]",
    );
    std::fs::write(&conf, &other).unwrap();
    let err = refused(&args_for("install", "podman", &conf, &["--wrapper", w]));
    assert!(err.contains("does not run the wrapper"), "{err}");

    let fresh = dir.path().join("new/containers.conf");
    install("podman", &fresh, &["--wrapper", w]);
    assert!(fresh.exists());
    uninstall("podman", &fresh, &[]);
    assert!(!fresh.exists());
}

/// The entry install wrote is what podman's runtime lookup by name finds:
/// `podman --runtime userns-hostnet` runs the userns + host-network
/// container through the wrapper, which converts it.
#[test]
fn podman_runs_the_installed_runtime_by_name() {
    let tmp = podman_and_rootfs();
    let conf = tmp.path().join("containers.conf");
    std::fs::write(&conf, CONTAINERS_CONF).unwrap();
    install("podman", &conf, &["--wrapper", common::WRAPPER]);

    let probe = podman_probe(
        &mut podman_by_name(&conf),
        &tmp.path().join("rootfs"),
        "podman --runtime userns-hostnet (installed)",
    );
    common::assert_converted_view(&probe, false);
    assert!(
        !common::has_cap_bit(probe.cap_bnd(), 10),
        "CAP_NET_BIND_SERVICE kept: the container did not run through the wrapper"
    );

    uninstall("podman", &conf, &[]);
    let out = common::run_capture(
        podman_by_name(&conf)
            .args(["run", "--rm", "--network", "host", "--rootfs"])
            .arg(tmp.path().join("rootfs"))
            .arg("true"),
    );
    assert!(
        !out.success(),
        "the runtime should be gone:\n{}",
        out.describe()
    );
}

/// The real CRI-O 1.36 (`crio config`, which prints the configuration it
/// would run with) reads the hooks_dir install chose from the same files:
/// crio.conf overridden by its crio.conf.d drop-ins, and, with neither
/// setting it, only /usr/share/containers/oci/hooks.d.
#[test]
fn crio_reads_the_hooks_dir_install_writes_to() {
    let crio = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/cri-o/crio");
    assert!(
        crio.is_file(),
        "{} missing: run scripts/cri-tools.sh",
        crio.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("crio.conf");
    let conf_d = dir.path().join("crio.conf.d");
    std::fs::create_dir(&conf_d).unwrap();
    let crio_dirs = || -> Vec<String> {
        let out = Command::new(&crio)
            .arg("--config")
            .arg(&conf)
            .arg("--config-dir")
            .arg(&conf_d)
            .arg("config")
            .output()
            .unwrap();
        assert!(out.status.success(), "crio config: {}", text(&out));
        let printed = String::from_utf8_lossy(&out.stdout);
        // It prints a value left at its default commented out, and a value
        // set uncommented: the hooks_dir block, either way.
        let block: Vec<&str> = printed
            .lines()
            .map(|l| l.trim_start_matches('#').trim())
            .skip_while(|l| !l.starts_with("hooks_dir = ["))
            .collect();
        let end = block
            .iter()
            .position(|l| *l == "]")
            .unwrap_or_else(|| panic!("no hooks_dir in crio config:\n{printed}"));
        let doc: toml::Value = toml::from_str(&block[..=end].join("\n")).unwrap();
        doc["hooks_dir"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    let chosen = || -> String {
        let out = install("crio", &conf, &["--hook", "--force", "--dry-run"]);
        out.lines()
            .find_map(|l| l.strip_prefix("+++ "))
            .and_then(|p| p.strip_suffix("/userns-hostnet.json"))
            .unwrap_or_else(|| panic!("no target in {out}"))
            .to_owned()
    };

    std::fs::write(&conf, "[crio]\n").unwrap();
    assert_eq!(crio_dirs(), vec!["/usr/share/containers/oci/hooks.d"]);
    // Neither sets it: the administrator's directory, which a drop-in
    // adds to CRI-O's hooks_dir (staged under --root: nothing on the host).
    assert_eq!(chosen(), "/etc/containers/oci/hooks.d");
    let root = dir.path().join("node");
    std::fs::create_dir_all(root.join("etc/crio")).unwrap();
    std::fs::write(root.join("etc/crio/crio.conf"), "[crio]\n").unwrap();
    let r = s(&root);
    let out = ok(&["install", "crio", "--hook", "--force", "--root", r]);
    assert!(out.contains("restart crio"), "{out}");
    assert!(
        out.contains("hooks directory: /etc/containers/oci/hooks.d (the administrator's;"),
        "{out}"
    );
    let def = read_json(&root.join("etc/containers/oci/hooks.d/userns-hostnet.json"));
    assert_eq!(def["hook"]["path"], "/usr/bin/userns-hostnet");
    let staged = Command::new(&crio)
        .arg("--config")
        .arg(root.join("etc/crio/crio.conf"))
        .arg("--config-dir")
        .arg(root.join("etc/crio/crio.conf.d"))
        .arg("config")
        .output()
        .unwrap();
    assert!(staged.status.success(), "{}", text(&staged));
    let printed = String::from_utf8_lossy(&staged.stdout);
    assert!(
        printed.contains("hooks_dir = [\n\t\"/usr/share/containers/oci/hooks.d\",\n\t\"/etc/containers/oci/hooks.d\",\n]"),
        "{printed}"
    );
    let out = ok(&["uninstall", "crio", "--hook", "--root", r]);
    assert!(
        !root
            .join("etc/containers/oci/hooks.d/userns-hostnet.json")
            .exists(),
        "{out}"
    );
    assert!(
        !root
            .join("etc/crio/crio.conf.d/98-userns-hostnet-hooks.conf")
            .exists(),
        "{out}"
    );

    std::fs::write(&conf, "[crio.runtime]\nhooks_dir = [\"/srv/hooks-a\"]\n").unwrap();
    std::fs::write(
        conf_d.join("10-hooks.conf"),
        "[crio.runtime]\nhooks_dir = [\"/srv/hooks-b\", \"/etc/uhn-test-hooks\"]\n",
    )
    .unwrap();
    let dirs = crio_dirs();
    assert_eq!(dirs, vec!["/srv/hooks-b", "/etc/uhn-test-hooks"]);
    let chosen = chosen();
    assert!(dirs.contains(&chosen), "{chosen} is not among {dirs:?}");
    assert_eq!(chosen, "/etc/uhn-test-hooks");
}

/// A custom runtime path of podman's default runtime (`runc =
/// ["/opt/.../runc-custom"]`) is the real runtime of the installed entry:
/// the first of its paths that exists, as podman picks it.
#[test]
fn podman_custom_runtime_path_is_the_real_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let custom = dir.path().join("opt/runc-custom");
    std::fs::create_dir_all(custom.parent().unwrap()).unwrap();
    std::fs::copy("/usr/sbin/runc", &custom).unwrap();
    let conf = dir.path().join("containers.conf");
    let text = format!(
        "[engine]\nruntime = \"runc\"\n\n[engine.runtimes]\nrunc = [\n  \"{}\",\n  \"{}\",\n  \"/usr/sbin/runc\",\n]\n",
        dir.path().join("missing/runc").display(),
        custom.display()
    );
    std::fs::write(&conf, &text).unwrap();
    let out = install("podman", &conf, &["--wrapper", common::WRAPPER]);
    assert!(
        out.contains(&format!(
            "real runtime of handler userns-hostnet: {} (the first path of podman runtime runc in {} that exists)",
            custom.display(),
            conf.display()
        )),
        "{out}"
    );
    assert_eq!(
        std::fs::read_link(dir.path().join("handlers/userns-hostnet/runtime")).unwrap(),
        custom
    );
    uninstall("podman", &conf, &[]);
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), text);
    assert!(!dir.path().join("handlers").exists());
}

/// podman has no daemon holding its containers, but a running one's
/// conmon names the runtime it runs: uninstall refuses while a container
/// of the handler runs (it could not be stopped without it), naming it,
/// and goes once it is gone.
#[test]
fn podman_uninstall_refuses_while_a_container_of_the_handler_runs() {
    let tmp = podman_and_rootfs();
    let conf = tmp.path().join("containers.conf");
    std::fs::write(&conf, CONTAINERS_CONF).unwrap();
    install("podman", &conf, &["--wrapper", common::WRAPPER]);
    // Removed through the handler (podman needs its runtime to stop it),
    // also when the test fails.
    struct Running<'a>(&'a Path, Name);
    impl Drop for Running<'_> {
        fn drop(&mut self) {
            let _ = podman_by_name(self.0)
                .args(["rm", "--force", "--ignore", "--time", "0", &self.1 .0])
                .output();
        }
    }
    let running = Running(&conf, Name::new());
    let name = &running.1;
    let out = common::run_capture(
        podman_by_name(&conf)
            .args(["run", "--detach", "--name", &name.0, "--network", "host"])
            .args(UIDMAP)
            .args(GIDMAP)
            .args(ULIMITS)
            .arg("--rootfs")
            .arg(tmp.path().join("rootfs"))
            .args(["sleep", "300"]),
    );
    out.assert_success();
    let id = out.stdout.trim().to_owned();
    let installed = std::fs::read_to_string(&conf).unwrap();
    let err = refused(&args_for("uninstall", "podman", &conf, &[]));
    assert!(
        err.contains("runtime handler userns-hostnet still has 1 container(s) on this node: ")
            && err.contains(&id[..13])
            && err.contains(&name.0),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), installed);
    common::run_capture(podman_by_name(&conf).args(["rm", "--force", "--time", "0", &name.0]))
        .assert_success();
    drop(running);
    uninstall("podman", &conf, &[]);
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), CONTAINERS_CONF);
}
