//! The decision log names the pod and container a line is about (from the
//! spec's annotations, as containerd and CRI-O write them), and says what
//! became of the container in one field, `outcome`, so that refusals are
//! as easy to select as conversions. Real runc, the real wrapper.

mod common;

use common::{Bundle, ContainerGuard, Runtime, Sandbox};
use serde_json::{json, Value};

fn last_line(sandbox: &Sandbox) -> Value {
    sandbox
        .decisions()
        .pop()
        .expect("the wrapper wrote no decision log line")
}

/// containerd's CRI annotations on a pod's container.
fn containerd_annotations() -> Value {
    json!({
        "io.kubernetes.cri.container-type": "container",
        "io.kubernetes.cri.sandbox-id": "5d1c0ffee",
        "io.kubernetes.cri.sandbox-name": "web-0",
        "io.kubernetes.cri.sandbox-namespace": "shop",
        "io.kubernetes.cri.container-name": "nginx",
    })
}

#[test]
fn a_converted_container_is_named_by_its_pod() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    bundle.edit(|spec| spec["annotations"] = containerd_annotations());
    let id = common::unique_id("dlog-conv");
    let _guard = ContainerGuard::new(&sandbox, &id);
    sandbox
        .wrapper()
        .run(&["create", "--bundle", bundle.dir().to_str().unwrap(), &id])
        .assert_success();
    let line = last_line(&sandbox);
    assert_eq!(line["id"], id.as_str(), "{line}");
    assert_eq!(line["outcome"], "converted", "{line}");
    assert_eq!(line["converted"], true, "{line}");
    assert_eq!(
        (&line["pod"], &line["namespace"], &line["container"]),
        (&json!("web-0"), &json!("shop"), &json!("nginx")),
        "{line}"
    );
    // The annotations are read, never written: the converted spec keeps them.
    assert_eq!(bundle.spec()["annotations"], containerd_annotations());
}

/// A refusal: `outcome` is `refused` (where `converted: false` also
/// matches a container left alone), named by CRI-O's annotations.
#[test]
fn a_refused_container_is_named_and_selectable() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    bundle.edit(|spec| {
        spec["linux"]["sysctl"] = json!({ "net.ipv4.ip_forward": "1" });
        spec["annotations"] = json!({
            "io.kubernetes.cri-o.SandboxName": "k8s_router-7_edge_9f2e_0",
            "io.kubernetes.cri-o.Name": "k8s_bird_router-7_edge_9f2e_0",
        });
    });
    let id = common::unique_id("dlog-refuse");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let out = sandbox
        .wrapper()
        .run(&["create", "--bundle", bundle.dir().to_str().unwrap(), &id]);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    let line = last_line(&sandbox);
    assert_eq!(line["outcome"], "refused", "{line}");
    assert_eq!(line["converted"], false, "{line}");
    assert_eq!(line["refused"]["field"], "linux.sysctl", "{line}");
    assert_eq!(
        (&line["pod"], &line["namespace"], &line["container"]),
        (&json!("router-7"), &json!("edge"), &json!("bird")),
        "{line}"
    );
}

/// A container the wrapper leaves alone (no user namespace), started by
/// hand (no annotations): `untouched`, and no pod fields at all.
#[test]
fn an_untouched_container_without_annotations() {
    let sandbox = Sandbox::new(Runtime::Runc);
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    bundle.edit(|spec| {
        common::remove_namespace(spec, "user");
        spec["linux"].as_object_mut().unwrap().remove("uidMappings");
        spec["linux"].as_object_mut().unwrap().remove("gidMappings");
    });
    let before = bundle.snapshot();
    let id = common::unique_id("dlog-plain");
    let _guard = ContainerGuard::new(&sandbox, &id);
    sandbox
        .wrapper()
        .run(&["create", "--bundle", bundle.dir().to_str().unwrap(), &id])
        .assert_success();
    before.assert_unchanged(&bundle.config_path(), "a container left alone");
    let line = last_line(&sandbox);
    assert_eq!(line["outcome"], "untouched", "{line}");
    assert_eq!(line["decision"], "no-user-namespace", "{line}");
    for absent in ["pod", "namespace", "container"] {
        assert!(line.get(absent).is_none(), "{absent}: {line}");
    }
}

/// The real daemons' annotations: a userns pod on the host network with
/// an app container, through the wrapper's handler; both the sandbox's
/// and the app's lines name the pod, the app's its container.
fn assert_named_by(decisions: &[Value], sandbox: &str, app: &str, pod: &str) {
    let line = |id: &str| {
        decisions
            .iter()
            .rev()
            .find(|d| d["id"] == id && d["command"] == "create")
            .unwrap_or_else(|| panic!("no create line for {id}: {decisions:#?}"))
            .clone()
    };
    let app_line = line(app);
    assert_eq!(app_line["outcome"], "converted", "{app_line}");
    assert_eq!(
        (
            &app_line["pod"],
            &app_line["namespace"],
            &app_line["container"]
        ),
        (&json!(pod), &json!("uhn-e2e"), &json!("app")),
        "{app_line}"
    );
    let sandbox_line = line(sandbox);
    assert_eq!(
        (&sandbox_line["pod"], &sandbox_line["namespace"]),
        (&json!(pod), &json!("uhn-e2e")),
        "{sandbox_line}"
    );
}

#[test]
fn containerd_pods_are_named() {
    use common::cri::{self, Cri, Userns};
    let cri = Cri::start();
    let name = "dlog-ctd";
    let userns = Userns::Pod {
        host_id: cri::next_host_range(),
    };
    let pod = cri
        .run_pod(
            cri::handler::WRAPPER,
            &cri::pod_config(name, userns, &cri.log_dir(name)),
        )
        .unwrap_or_else(|out| panic!("RunPodSandbox failed\n{}", out.describe()));
    let app = cri.create_and_start(&pod, &cri::container_config("app", userns, cri::APP_SCRIPT));
    assert_named_by(&cri.decisions(), &pod.id, &app, name);
    cri.stop_and_remove(&app);
    cri.stop_and_remove_pod(&pod);
}

#[test]
fn crio_pods_are_named() {
    use common::cri::{self, Userns};
    use common::crio::{handler, Crio, Mode};
    let mut crio = Crio::start(Mode::InfraContainer);
    let name = "dlog-crio";
    let userns = Userns::Pod {
        host_id: cri::next_host_range(),
    };
    let pod = crio
        .run_pod(
            handler::WRAPPER,
            &cri::pod_config(name, userns, &crio.log_dir(name)),
        )
        .unwrap_or_else(|out| panic!("RunPodSandbox failed\n{}", out.describe()));
    let app = crio.create_and_start(&pod, &cri::container_config("app", userns, cri::APP_SCRIPT));
    assert_named_by(&crio.decisions(), &pod.id, &app, name);
    crio.stop_and_remove(&app);
    crio.stop_and_remove_pod(&pod);
    let left = crio.stop();
    assert!(left.is_empty(), "{left:?}");
}
