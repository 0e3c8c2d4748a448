//! A Kubernetes pod without Kubernetes: a sandbox container and an app
//! container that joins it by path, as containerd's CRI writes them for
//! `hostNetwork: true` + `hostUsers: false`. The app container joins the
//! sandbox's user and ipc namespaces and, by `/proc/<sandbox>/ns/{net,uts}`,
//! the host's own network and uts namespaces: runc 1.1 cannot join those
//! from inside the user namespace, so the wrapper drops the entries.

mod common;

use std::ffi::OsStr;

use common::{Bundle, ContainerGuard, Probe, Runtime, Sandbox};
use serde_json::json;

/// The app container's namespaces, as containerd 1.7 writes them.
fn join_sandbox(app: &Bundle, sandbox_pid: u64) {
    app.edit(|spec| {
        spec["linux"]["namespaces"] = json!([
            {"type": "pid"},
            {"type": "ipc", "path": format!("/proc/{sandbox_pid}/ns/ipc")},
            {"type": "uts", "path": format!("/proc/{sandbox_pid}/ns/uts")},
            {"type": "mount"},
            {"type": "network", "path": format!("/proc/{sandbox_pid}/ns/net")},
            {"type": "user", "path": format!("/proc/{sandbox_pid}/ns/user")},
        ]);
    });
}

fn app_container_joins_its_sandbox(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let pause = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    // A host-network sandbox shares the host's uts namespace too.
    pause.edit(|spec| {
        common::remove_namespace(spec, "uts");
        spec.as_object_mut().unwrap().remove("hostname");
    });
    let pause_id = common::unique_id("pod-sandbox");
    let app_id = common::unique_id("pod-app");
    let _pause_guard = ContainerGuard::new(&sandbox, &pause_id);
    let _app_guard = ContainerGuard::new(&sandbox, &app_id);
    let wrapper = sandbox.wrapper();
    wrapper
        .run(&[
            OsStr::new("create"),
            OsStr::new("--bundle"),
            pause.dir().as_os_str(),
            OsStr::new(&pause_id),
        ])
        .assert_success();
    let state = sandbox.real().state(&pause_id).expect("sandbox state");
    let pid = state["pid"].as_u64().expect("sandbox pid");

    let app = Bundle::userns_hostnet(&common::probe_args());
    join_sandbox(&app, pid);
    app.edit(|spec| {
        spec.as_object_mut().unwrap().remove("hostname");
    });
    if runtime.is_runc_13_or_later() {
        // runc 1.3 and later join the user namespace and the others in two
        // stages: the baseline starts, and only the wrapper's other rules
        // are left to apply.
        let baseline = Bundle::userns_hostnet(&common::probe_args());
        join_sandbox(&baseline, pid);
        baseline.edit(|spec| {
            spec.as_object_mut().unwrap().remove("hostname");
            for m in spec["mounts"].as_array_mut().unwrap() {
                if m["destination"] == "/sys" {
                    *m = json!({"destination": "/sys", "type": "bind", "source": "/sys",
                                "options": ["rbind", "rro", "nosuid", "nodev", "noexec"]});
                }
            }
        });
        let out = common::run_probe(&sandbox.real(), &baseline, &app_id);
        assert!(
            out.success(),
            "{} was expected to join the sandbox's namespaces\n{}",
            runtime.name(),
            out.describe()
        );
        let _ = sandbox.real().run(&["delete", "--force", &app_id]);
    }
    if runtime == Runtime::Runc {
        // The baseline: runc 1.1 alone cannot start it, even with its /sys
        // already converted by hand.
        let baseline = Bundle::userns_hostnet(&common::probe_args());
        join_sandbox(&baseline, pid);
        baseline.edit(|spec| {
            spec.as_object_mut().unwrap().remove("hostname");
            for m in spec["mounts"].as_array_mut().unwrap() {
                if m["destination"] == "/sys" {
                    *m = json!({"destination": "/sys", "type": "bind", "source": "/sys",
                                "options": ["rbind", "rro", "nosuid", "nodev", "noexec"]});
                }
            }
        });
        let out = common::run_probe(&sandbox.real(), &baseline, &app_id);
        assert!(
            !out.success(),
            "runc 1.1 joined host namespaces from a user namespace?\n{}",
            out.describe()
        );
        assert!(
            out.stderr.contains("failed to setns into"),
            "{}",
            out.describe()
        );
        let _ = sandbox.real().run(&["delete", "--force", &app_id]);
    }

    let out = common::run_probe(&wrapper, &app, &app_id);
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    common::assert_converted_view(&probe, runtime.is_runc());
    let spec = app.spec();
    let kinds: Vec<&str> = spec["linux"]["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["pid", "ipc", "mount", "user"], "{spec:#}");
    let decision = sandbox
        .decisions()
        .into_iter()
        .find(|d| d["id"] == app_id.as_str())
        .expect("a decision line for the app container");
    assert_eq!(decision["decision"], "host-network", "{decision}");
    let rules: Vec<&str> = decision["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"own-namespaces"), "{decision}");
}

common::for_runtimes!(runc_and_crun: app_container_joins_its_sandbox);

/// youki 0.7.0 cannot run the app container, wrapper or not: it opens the
/// sandbox's `/proc/<pid>/ns/ipc` after entering the new container's user
/// namespace, where it may not (EACCES), before the wrapper's concern
/// arises. Kept as a test so a youki that fixes it is noticed.
#[test]
#[should_panic(expected = "failed to open namespace file err=EACCES")]
fn youki_0_7_cannot_join_the_sandboxs_namespaces() {
    app_container_joins_its_sandbox(Runtime::Youki);
}
