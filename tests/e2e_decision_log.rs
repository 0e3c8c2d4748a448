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
            "io.kubernetes.pod.name": "router-7",
            "io.kubernetes.pod.namespace": "edge",
            "io.kubernetes.container.name": "bird",
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
