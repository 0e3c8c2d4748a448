//! The host's /sys bound at another destination (a hostPath volume, as
//! node-exporter mounts it at /host/sys), in a converted container: read
//! only with a plain `ro`, its submounts would stay writable. Through the
//! wrapper the whole tree is read-only, whichever spelling names /sys.

mod common;

use common::{Bundle, ContainerGuard, Probe, Runtime, Sandbox};
use serde_json::json;

fn host_sys_elsewhere_is_read_only_all_the_way_down(runtime: Runtime) {
    for source in ["/sys", "/proc/self/root/sys"] {
        let sandbox = Sandbox::new(runtime);
        let bundle = Bundle::userns_hostnet(&common::probe_args());
        bundle.edit(|spec| {
            spec["mounts"].as_array_mut().unwrap().push(json!({
                "destination": "/host/sys", "type": "bind", "source": source,
                "options": ["rbind", "rprivate", "ro"]
            }));
        });
        let id = common::unique_id("hostsys");
        let _guard = ContainerGuard::new(&sandbox, &id);
        let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
        out.assert_success();
        let probe = Probe::parse(&out.stdout);
        let tree: Vec<_> = probe
            .mounts
            .iter()
            .filter(|m| m.mount_point == "/host/sys" || m.mount_point.starts_with("/host/sys/"))
            .collect();
        assert!(
            !tree.is_empty(),
            "{source}: nothing at /host/sys\n{}",
            probe.table()
        );
        if runtime.is_runc() {
            // runc binds the tree with its submounts (bpf, securityfs, cgroup).
            assert!(tree.len() > 1, "{source}: no submounts\n{}", probe.table());
        }
        for m in &tree {
            assert!(
                m.has("ro"),
                "{source}: {} is writable\n{}",
                m.mount_point,
                probe.table()
            );
        }
        let spec = bundle.spec();
        let host_sys = spec["mounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["destination"] == "/host/sys")
            .unwrap();
        assert_eq!(
            host_sys["options"],
            json!(["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"]),
            "{source}"
        );
        assert_eq!(host_sys["source"], source);
    }
}

common::for_runtimes!(host_sys_elsewhere_is_read_only_all_the_way_down);
