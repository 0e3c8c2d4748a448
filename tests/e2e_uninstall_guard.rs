//! uninstall never strands a running pod, on the real daemons: with a pod
//! of the handler running on containerd 2.3.4 (its handler written by
//! `install containerd`) or CRI-O 1.36.3 (`install crio`), `uninstall`
//! refuses, naming the pod's containers, and changes nothing: the config
//! bytes and the handler's links stay, and the CRI still stops and
//! removes the pod. Once the pod is gone, uninstall gives back the files
//! as they were before install. A pod of another handler sharing the
//! handler's runc root (containerd) does not count. On CRI-O, `--force`
//! strands the pod with a warning, `registrations` then still lists it,
//! and installing again makes it stoppable.
//!
//! Prerequisites as tests/e2e_cri.rs and tests/e2e_crio.rs (root, runc,
//! crun, conmon, jq, and `scripts/cri-tools.sh`'s containerd 2.3.4, runc
//! 1.4.3, CRI-O and crictl): missing ones fail the tests.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::cri::{self, Cri, Stack, Userns};
use common::crio::{self, Crio, Mode};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every file of `paths` and under them: its bytes, or a link's target.
fn snapshot(dirs: &[PathBuf]) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, all: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                let target = fs::read_link(e.path()).unwrap();
                all.insert(e.path(), target.into_os_string().into_encoded_bytes());
            } else if t.is_dir() {
                walk(&e.path(), all);
            } else {
                all.insert(e.path(), fs::read(e.path()).unwrap());
            }
        }
    }
    let mut all = BTreeMap::new();
    for d in dirs {
        if d.is_file() {
            all.insert(d.clone(), fs::read(d).unwrap());
        }
        walk(d, &mut all);
    }
    all
}

/// The refusal names every container (as crictl prints its id), the pod
/// and the way to drain it, on one line, with a non-zero exit.
fn assert_refused(out: &Output, ids: &[&str], pod: &str) {
    let all = text(out);
    assert!(
        !out.status.success(),
        "uninstall with the pod running must refuse\n{all}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("still has"))
        .unwrap_or_else(|| panic!("no refusal line\n{all}"));
    for id in ids {
        assert!(line.contains(&id[..13]), "{id} not named: {line}");
    }
    assert!(
        line.contains(&format!("pod {pod}")) && line.contains("kubectl drain"),
        "{line}"
    );
}

const CTD_HANDLER: &str = "uhn-guard";

/// `userns-hostnet COMMAND containerd` on the daemon's config, the
/// handler's links beside it.
fn ctd_tool(cri: &Cri, command: &str, more: &[&str]) -> Output {
    let d = cri.dir();
    let mut cmd = Command::new(common::TOOL);
    cmd.arg(command)
        .args(["containerd", "--config"])
        .arg(d.join("config.toml"))
        .arg("--handlers-dir")
        .arg(d.join("handlers"))
        .args(["--handler", CTD_HANDLER]);
    if command == "install" {
        cmd.args(["--wrapper", common::WRAPPER, "--containerd"])
            .arg(cri::containerd_23_dir().join("containerd"));
    }
    cmd.args(more).output().unwrap()
}

#[test]
fn containerd_uninstall_refuses_while_a_pod_of_the_handler_runs() {
    let mut ctd = Cri::start_on(Stack::Containerd23);
    let d = ctd.dir().to_path_buf();
    let watched = [d.join("config.toml"), d.join("handlers")];
    let before = snapshot(&watched);
    let out = ctd_tool(&ctd, "install", &[]);
    assert!(out.status.success(), "install failed\n{}", text(&out));
    let installed = snapshot(&watched);
    let link = d
        .join("handlers")
        .join(CTD_HANDLER)
        .join("userns-hostnet-runtime");
    assert!(
        installed.contains_key(&link),
        "no link {link:?}: {installed:#?}"
    );
    ctd.restart();

    let userns = Userns::Pod {
        host_id: cri::next_host_range(),
    };
    let pod = ctd
        .run_pod(
            CTD_HANDLER,
            &cri::pod_config("g", userns, &ctd.log_dir("g")),
        )
        .unwrap_or_else(|o| panic!("RunPodSandbox failed\n{}", o.describe()));
    let app = ctd.create_and_start(&pod, &cri::container_config("app", userns, cri::APP_SCRIPT));
    // A pod of the default handler, whose runc root install's handler
    // shares (it copied the default handler's `Root`): not the handler's.
    let other = ctd
        .run_pod(
            cri::handler::RUNC,
            &cri::pod_config("other", Userns::Absent, &ctd.log_dir("other")),
        )
        .unwrap_or_else(|o| panic!("RunPodSandbox failed\n{}", o.describe()));

    let out = ctd_tool(&ctd, "uninstall", &[]);
    assert_refused(&out, &[&app, &pod.id], "uhn-e2e/g");
    assert!(
        !text(&out).contains(&other.id[..13]),
        "another handler's pod named\n{}",
        text(&out)
    );
    assert_eq!(snapshot(&watched), installed, "uninstall changed files");
    // --dry-run says so too, and writes nothing.
    let dry = ctd_tool(&ctd, "uninstall", &["--dry-run"]);
    assert!(
        text(&dry).contains("warning: runtime handler"),
        "{}",
        text(&dry)
    );
    assert_eq!(snapshot(&watched), installed);

    // The daemon, restarted, still stops and removes the pod.
    ctd.restart();
    ctd.stop_and_remove(&app);
    ctd.stop_and_remove_pod(&pod);

    let out = ctd_tool(&ctd, "uninstall", &[]);
    assert!(out.status.success(), "uninstall failed\n{}", text(&out));
    assert_eq!(snapshot(&watched), before, "not undone byte for byte");
    ctd.restart();
    ctd.stop_and_remove_pod(&other);
    let left = ctd.leftovers();
    assert!(left.is_empty(), "left behind: {left:#?}");
}

/// `userns-hostnet COMMAND crio` on the daemon's config, the handler's
/// links beside it.
fn crio_tool(c: &Crio, command: &str, more: &[&str]) -> Output {
    let d = c.dir();
    let mut cmd = Command::new(common::TOOL);
    cmd.arg(command)
        .args(["crio", "--config"])
        .arg(d.join("crio.conf"))
        .arg("--handlers-dir")
        .arg(d.join("handlers"));
    if command == "install" {
        cmd.args(["--wrapper", common::WRAPPER]);
    }
    cmd.args(more).output().unwrap()
}

#[test]
fn crio_uninstall_refuses_while_a_pod_of_the_handler_runs() {
    let c = Crio::start(Mode::DropInfra);
    let d = c.dir().to_path_buf();
    // The tier adds `monitor_env` to the handler install wrote (see
    // tests/common/crio.rs); take it out again so that the handler is
    // install's own, which uninstall removes. CRI-O read it already.
    let drop_in = d.join(crio::INSTALL_DROP_IN);
    let full = fs::read_to_string(&drop_in).unwrap();
    let (own, added) = full
        .rsplit_once("monitor_env = ")
        .expect("the tier's monitor_env line");
    assert_eq!(added.lines().count(), 1, "{full}");
    fs::write(&drop_in, own).unwrap();
    let conf = fs::read(d.join("crio.conf")).unwrap();
    let watched = [
        d.join("crio.conf"),
        d.join("crio.conf.d"),
        d.join("handlers"),
    ];
    let installed = snapshot(&watched);

    let userns = Userns::Pod {
        host_id: cri::next_host_range(),
    };
    let pod = c
        .run_pod(
            crio::handler::WRAPPER,
            &cri::pod_config("g", userns, &c.log_dir("g")),
        )
        .unwrap_or_else(|o| panic!("RunPodSandbox failed\n{}", o.describe()));
    let app = c.create_and_start(&pod, &cri::container_config("app", userns, cri::APP_SCRIPT));

    let out = crio_tool(&c, "uninstall", &[]);
    assert_refused(&out, &[&app, &pod.id], "uhn-e2e/g");
    assert_eq!(snapshot(&watched), installed, "uninstall changed files");

    // --force strands the pod, saying so; registrations still holds.
    let out = crio_tool(&c, "uninstall", &["--force"]);
    assert!(
        out.status.success(),
        "uninstall --force failed\n{}",
        text(&out)
    );
    let all = text(&out);
    assert!(
        all.contains("warning: --force") && all.contains(&app[..13]),
        "{all}"
    );
    assert!(!drop_in.exists(), "the handler stayed\n{all}");
    let reg = Command::new(common::TOOL)
        .arg("registrations")
        .output()
        .unwrap();
    assert_eq!(reg.status.code(), Some(1), "{}", text(&reg));
    assert!(
        text(&reg).contains(&format!("CRI-O container {app} runs the wrapper")),
        "{}",
        text(&reg)
    );
    // Installed again, the pod can be stopped and removed.
    let out = crio_tool(&c, "install", &[]);
    assert!(out.status.success(), "install failed\n{}", text(&out));
    assert_eq!(
        fs::read_to_string(&drop_in).unwrap(),
        own,
        "install differs"
    );
    c.stop_and_remove(&app);
    // The pod alone (no infra container runs) still names the handler.
    let out = crio_tool(&c, "uninstall", &[]);
    assert_refused(&out, &[&pod.id], "uhn-e2e/g");
    c.stop_and_remove_pod(&pod);

    let out = crio_tool(&c, "uninstall", &[]);
    assert!(out.status.success(), "uninstall failed\n{}", text(&out));
    let left: Vec<PathBuf> = snapshot(&watched).into_keys().collect();
    assert_eq!(left, [d.join("crio.conf")], "not undone");
    assert_eq!(fs::read(d.join("crio.conf")).unwrap(), conf);
    let left = c.leftovers();
    assert!(left.is_empty(), "left behind: {left:#?}");
}
