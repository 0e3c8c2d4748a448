//! containerd 1.6 through `ctr run --runc-binary`: the shim calls the wrapper
//! as `--root R --log B/log.json --log-format json create --bundle B ...`,
//! surfaces the wrapper's refusals from that log, and later calls it again
//! for `exec`, `kill`, `state` and `delete`. The daemon (tests/common/
//! containerd.rs) runs with bpffs and securityfs under its /sys and a pure
//! cgroup v2 view, as on a real node.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::containerd::Containerd;
use common::{show, wrapper, Bundle, Outcome, Probe, Runtime};
use serde_json::{json, Value};

/// A userns + host-network spec for `ctr run --config` (absolute root.path,
/// the busybox rootfs read-only, a cgroup mount after /sys as `runc spec`
/// writes it).
fn spec_file(args: &[&str]) -> (Bundle, PathBuf) {
    let bundle = Bundle::userns_hostnet(args);
    bundle.edit(|spec| {
        spec["process"]["env"] = json!(["PATH=/bin"]);
    });
    let path = bundle.config_path();
    (bundle, path)
}

fn edit_file(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut value: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    f(&mut value);
    fs::write(path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
}

fn assert_no_leftovers(ctd: &mut Containerd) {
    let leaked = ctd.stop();
    assert!(leaked.is_empty(), "left behind: {leaked:#?}");
}

#[test]
fn ctr_runs_userns_hostnet_container_through_wrapper() {
    let mut ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&common::probe_args());
    let id = common::unique_id("ctr");

    let out = ctd.run(wrapper(), &spec, &id);
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    show("containerd + wrapper + runc", &probe);
    // runc binds the host's /sys with its submounts: bpffs and securityfs
    // are there, read-only.
    common::assert_converted_view(&probe, true);
    let table = probe.table();
    let cg = probe
        .topmost("/sys/fs/cgroup")
        .unwrap_or_else(|| panic!("nothing at /sys/fs/cgroup:\n{table}"));
    assert!(
        cg.fstype == "cgroup2" && cg.has("ro") && cg.has("nosuid"),
        "the spec's own cgroup mount must be on top:\n{table}"
    );
    assert_no_leftovers(&mut ctd);
}

#[test]
fn ctr_with_plain_runc_fails_with_sysfs_eperm() {
    let mut ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&common::probe_args());
    let id = common::unique_id("ctr-plain");

    let out = ctd.run(&Runtime::Runc.path(), &spec, &id);
    assert!(!out.success(), "{}", out.describe());
    assert!(
        out.stderr
            .contains("error mounting \"sysfs\" to rootfs at \"/sys\"")
            && out.stderr.contains("operation not permitted"),
        "expected runc's sysfs EPERM\n{}",
        out.describe()
    );
    assert_no_leftovers(&mut ctd);
}

fn assert_refused(out: &Outcome, needles: &[&str]) {
    assert!(!out.success(), "{}", out.describe());
    assert!(
        out.stderr.contains("userns-hostnet-runtime: refused:"),
        "containerd should show the wrapper's refusal (read from the runtime's --log)\n{}",
        out.describe()
    );
    for n in needles {
        assert!(
            out.stderr.contains(n),
            "ctr's error lacks `{n}`\n{}",
            out.describe()
        );
    }
}

/// containerd reports the last error line of the runtime's log: operators see
/// the wrapper's reason in the failure.
#[test]
fn ctr_shows_the_net_sysctl_refusal() {
    let mut ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&["/bin/true"]);
    edit_file(&spec, |v| {
        v["linux"]["sysctl"] = json!({ "net.ipv4.ip_forward": "1" })
    });
    let id = common::unique_id("ctr-sysctl");

    let out = ctd.run(wrapper(), &spec, &id);
    assert_refused(&out, &["sysctl", "net.ipv4.ip_forward"]);
    assert_no_leftovers(&mut ctd);
}

#[test]
fn ctr_shows_the_overlapping_mapping_refusal() {
    let mut ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&["/bin/true"]);
    edit_file(&spec, |v| {
        v["linux"]["uidMappings"] = json!([
            { "containerID": 0, "hostID": 100000, "size": 65536 },
            { "containerID": 1000, "hostID": 300000, "size": 10 },
        ])
    });
    let id = common::unique_id("ctr-idmap");

    let out = ctd.run(wrapper(), &spec, &id);
    assert_refused(&out, &["idmap", "linux.uidMappings[1]", "overlaps"]);
    assert_no_leftovers(&mut ctd);
}

/// The wrapper installed as `userns-hostnet-runtime-crun` runs crun under
/// the shim, which passes no hint of its own.
#[test]
fn ctr_runs_userns_hostnet_container_through_wrapper_onto_crun() {
    let mut ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&common::probe_args());
    let id = common::unique_id("ctr-crun");

    let out = ctd.run(&ctd.wrapper_crun(), &spec, &id);
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    show("containerd + wrapper + crun", &probe);
    // crun 1.8.1 clones the /sys bind without its submounts.
    common::assert_converted_view(&probe, false);
    assert_no_leftovers(&mut ctd);
}

/// The wrapper installed as `userns-hostnet-runtime-youki` runs youki under
/// the shim: converted, /sys read-only all the way down, no network
/// capabilities.
#[test]
fn ctr_runs_userns_hostnet_container_through_wrapper_onto_youki() {
    let mut ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&common::probe_args());
    let id = common::unique_id("ctr-youki");

    let out = ctd.run(&ctd.wrapper_youki(), &spec, &id);
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    show("containerd + wrapper + youki", &probe);
    common::assert_converted_view(&probe, true);
    assert_no_leftovers(&mut ctd);
}

/// crun alone under containerd falls back to a bind of /sys: no EPERM, but
/// the network capabilities stay and /sys loses nosuid,nodev,noexec.
#[test]
fn ctr_with_plain_crun_keeps_network_caps() {
    let mut ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&common::probe_args());
    let id = common::unique_id("ctr-crun-plain");

    let out = ctd.run(&ctd.plain_crun(), &spec, &id);
    out.assert_success();
    let probe = Probe::parse(&out.stdout);
    show("containerd + crun alone", &probe);
    let bnd = probe.cap_bnd();
    assert!(
        common::NET_CAP_BITS
            .iter()
            .all(|b| common::has_cap_bit(bnd, *b)),
        "crun alone keeps the network capabilities: CapBnd {bnd:016x}"
    );
    let sys = probe.topmost("/sys").expect("/sys is mounted");
    assert!(
        !(sys.has("nosuid") && sys.has("noexec")),
        "crun 1.8.1's fallback is expected to lose nosuid/noexec: {:?}",
        sys.options
    );
    assert_no_leftovers(&mut ctd);
}

/// `ctr task ls`, `ctr task exec` and `ctr task kill` on a task started
/// through the wrapper reach the real runtime unchanged.
#[test]
fn ctr_task_exec_kill_and_ls_pass_through() {
    let mut ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&[
        "/bin/sh",
        "-c",
        "trap 'exit 7' TERM; while :; do sleep 1; done",
    ]);
    let id = common::unique_id("ctr-task");

    ctd.run_detached(wrapper(), &spec, &id).assert_success();
    ctd.wait_task_status(&id, "RUNNING");
    assert_eq!(ctd.runtime_states(), vec![id.clone()]);

    let fifo = ctd.dir().join("fifo");
    let exec = ctd.ctr(&[
        "tasks",
        "exec",
        "--exec-id",
        "probe",
        "--fifo-dir",
        fifo.to_str().unwrap(),
        &id,
        "/bin/sh",
        "-c",
        common::PROBE_SCRIPT,
    ]);
    exec.assert_success();
    let probe = Probe::parse(&exec.stdout);
    show("containerd exec into a converted task", &probe);
    for m in probe.under_sys() {
        assert!(
            m.has("ro"),
            "exec sees writable {} {:?}:\n{}",
            m.mount_point,
            m.options,
            probe.table()
        );
    }
    assert_eq!(
        probe.uid_map.split_whitespace().collect::<Vec<_>>(),
        ["0", "100000", "65536"]
    );

    let failing = ctd.ctr(&["tasks", "exec", "--exec-id", "missing", &id, "/no/such"]);
    assert!(
        !failing.success(),
        "exec of a missing binary must fail\n{}",
        failing.describe()
    );

    ctd.ctr(&["tasks", "kill", &id]).assert_success();
    ctd.wait_task_status(&id, "STOPPED");
    let deleted = ctd.ctr(&["tasks", "delete", &id]);
    deleted.assert_success();
    ctd.ctr(&["containers", "delete", &id]).assert_success();
    assert!(ctd.list("containers").is_empty());
    assert!(
        ctd.runtime_states().is_empty(),
        "runtime state left: {:?}",
        ctd.runtime_states()
    );
    assert_no_leftovers(&mut ctd);
}

/// A container with its own network namespace needs nothing: through the
/// wrapper it sees exactly what it sees through runc alone.
#[test]
fn ctr_own_network_namespace_is_as_with_plain_runc() {
    let mut ctd = Containerd::start();
    let bundle = Bundle::userns_ownnet(&common::probe_args());
    bundle.edit(|spec| spec["process"]["env"] = json!(["PATH=/bin"]));
    let spec = bundle.config_path();

    let via = ctd.run(wrapper(), &spec, &common::unique_id("ctr-own-w"));
    via.assert_success();
    let plain = ctd.run(
        &Runtime::Runc.path(),
        &spec,
        &common::unique_id("ctr-own-r"),
    );
    plain.assert_success();
    let (via, plain) = (Probe::parse(&via.stdout), Probe::parse(&plain.stdout));
    assert_eq!(via.table(), plain.table(), "mounts differ");
    assert_eq!(via.cap_bnd(), plain.cap_bnd(), "capabilities differ");
    assert!(
        common::NET_CAP_BITS
            .iter()
            .all(|b| common::has_cap_bit(via.cap_bnd(), *b)),
        "own network namespace: the network capabilities are effective and stay"
    );
    assert!(
        via.at("/sys/fs/bpf").is_empty(),
        "a fresh sysfs, not the host's /sys with its submounts:\n{}",
        via.table()
    );
    assert_no_leftovers(&mut ctd);
}
