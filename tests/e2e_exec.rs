//! The wrapper execs the real runtime transparently: the container's exit
//! status comes back unchanged, file descriptors passed with `--preserve-fds`
//! reach the container, and the wrapper adds nothing to stdout. A process
//! exec'd into a converted container gets what its init got.

mod common;

use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::Path;

use common::{Bundle, Cli, ContainerGuard, Runtime, Sandbox};
use serde_json::json;

/// The wrapper's record of a container, found as an exec finds it.
fn record_of(
    runtime: Runtime,
    root: &std::path::Path,
    id: &str,
) -> Option<userns_hostnet_engine::policy::NetCapabilities> {
    let kind = match runtime {
        Runtime::Crun | Runtime::Crun127 => userns_hostnet::runtime::Kind::Crun,
        Runtime::Youki => userns_hostnet::runtime::Kind::Youki,
        _ => userns_hostnet::runtime::Kind::Runc,
    };
    userns_hostnet::records::Records::system()
        .lookup(&userns_hostnet::records::Target {
            runtime: kind,
            root: Some(root.as_os_str()),
            id: std::ffi::OsStr::new(id),
        })
        .unwrap()
}

fn exit_status_passes_through(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sh", "-c", "exit 7"]);
    let id = common::unique_id("exit");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
    assert_eq!(out.code(), Some(7), "{}", out.describe());
    common::assert_converted_spec(&bundle.spec());
}

fn stdout_is_the_containers_alone(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/echo", "only the container speaks"]);
    let id = common::unique_id("stdout");
    let _guard = ContainerGuard::new(&sandbox, &id);

    let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
    out.assert_success();
    assert_eq!(
        out.stdout,
        "only the container speaks\n",
        "{}",
        out.describe()
    );
}

/// fd 3 is opened by the caller (as conmon does with its sync pipes) and
/// handed to the container with `--preserve-fds 1`.
fn inherited_fd_reaches_the_container(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/cat", "/proc/self/fd/3"]);
    let id = common::unique_id("fd");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let payload = sandbox.path().join("payload");
    fs::write(&payload, "through fd 3\n").unwrap();

    let cli = sandbox.wrapper();
    let mut argv: Vec<OsString> = vec![
        "sh".into(),
        "-c".into(),
        "exec 3<\"$0\"; exec \"$@\"".into(),
        payload.into(),
    ];
    argv.extend(common::sigchld_blocked_for(runtime));
    argv.push(cli.program().into());
    argv.extend(runtime.global_args().into_iter().map(OsString::from));
    argv.extend([
        "--root".into(),
        sandbox.root().into(),
        "run".into(),
        "--preserve-fds".into(),
        "1".into(),
        "--bundle".into(),
        bundle.dir().into(),
        id.clone().into(),
    ]);
    let mut cmd = common::in_sys_view(&argv);
    cmd.env("USERNS_HOSTNET_RUNTIME", runtime.path())
        .env("USERNS_HOSTNET_CONFIG", sandbox.path().join("config.toml"));
    let out = common::run_capture(&mut cmd);
    out.assert_success();
    assert_eq!(out.stdout, "through fd 3\n", "{}", out.describe());
    common::assert_converted_spec(&bundle.spec());
}

/// A process file as containerd writes it for `crictl exec`: from its own
/// spec, network capabilities included.
fn write_process_file(path: &std::path::Path) -> Vec<u8> {
    let caps = json!([
        "CAP_KILL",
        "CAP_NET_RAW",
        "CAP_NET_BIND_SERVICE",
        "CAP_NET_ADMIN"
    ]);
    let doc = json!({
        "user": {"uid": 0, "gid": 0},
        "args": ["/bin/grep", "CapBnd", "/proc/self/status"],
        "env": ["PATH=/bin"],
        "cwd": "/",
        "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
        "noNewPrivileges": true
    });
    let bytes = serde_json::to_vec(&doc).unwrap();
    fs::write(path, &bytes).unwrap();
    bytes
}

fn cap_bnd_of(out: &common::Outcome) -> u64 {
    out.assert_success();
    let hex = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("CapBnd:"))
        .unwrap_or_else(|| panic!("no CapBnd line\n{}", out.describe()));
    u64::from_str_radix(hex.trim(), 16).unwrap()
}

fn net_bits(mask: u64) -> Vec<u32> {
    common::NET_CAP_BITS
        .iter()
        .copied()
        .filter(|b| common::has_cap_bit(mask, *b))
        .collect()
}

fn create_started(cli: &Cli, bundle: &Bundle, id: &str) {
    cli.run(&[
        OsStr::new("create"),
        OsStr::new("--bundle"),
        bundle.dir().as_os_str(),
        OsStr::new(id),
    ])
    .assert_success();
    cli.run(&["start", id]).assert_success();
}

/// `exec --process FILE` (containerd, CRI-O) and `exec --cap` (runc's own
/// flag) into a converted container: the network capabilities stay out,
/// while the real runtime alone would grant them. Deleting the container
/// forgets it.
fn exec_into_a_converted_container_gets_no_network_capabilities(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("exec");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let wrapper = sandbox.wrapper();
    create_started(&wrapper, &bundle, &id);
    let root = sandbox.root();
    assert!(record_of(runtime, &root, &id).is_some());

    let process = sandbox.path().join("process.json");
    let p = process.to_str().unwrap();
    // The baseline: the real runtime grants what the process file asks for.
    write_process_file(&process);
    let direct = cap_bnd_of(&sandbox.real().run(&["exec", "--process", p, &id]));
    assert_eq!(
        net_bits(direct),
        [10, 12, 13],
        "direct CapBnd {direct:016x}"
    );

    write_process_file(&process);
    let through = cap_bnd_of(&wrapper.run(&["exec", "--process", p, &id]));
    assert!(
        net_bits(through).is_empty(),
        "exec --process CapBnd {through:016x}"
    );
    assert!(
        common::has_cap_bit(through, 5),
        "CAP_KILL stays: {through:016x}"
    );
    let rewritten: serde_json::Value =
        serde_json::from_slice(&fs::read(&process).unwrap()).unwrap();
    assert_eq!(rewritten["capabilities"]["bounding"], json!(["CAP_KILL"]));
    assert_eq!(rewritten["noNewPrivileges"], json!(true));

    let grep = ["/bin/grep", "CapBnd", "/proc/self/status"];
    let mut cap_args = vec![
        "exec",
        "--cap",
        "CAP_NET_RAW",
        "--cap=CAP_NET_ADMIN",
        "--cap",
        "CAP_KILL",
        &id,
    ];
    cap_args.extend(grep);
    let direct = cap_bnd_of(&sandbox.real().run(&cap_args));
    assert_eq!(
        net_bits(direct),
        [12, 13],
        "direct --cap CapBnd {direct:016x}"
    );
    let through = cap_bnd_of(&wrapper.run(&cap_args));
    assert!(
        net_bits(through).is_empty(),
        "exec --cap CapBnd {through:016x}"
    );

    // An option the wrapper cannot place is refused for a converted container.
    let out = wrapper.run(&["exec", "--frobnicate", &id, "/bin/true"]);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert!(
        out.stderr.contains("userns-hostnet-runtime: refused: exec: argv: --frobnicate: not an exec option this wrapper knows"),
        "{}",
        out.describe()
    );

    wrapper.run(&["kill", &id, "KILL"]).assert_success();
    sandbox.real().wait_for_status(&id, "stopped");
    wrapper.run(&["delete", &id]).assert_success();
    assert!(record_of(runtime, &root, &id).is_none());
}

/// A container the wrapper did not convert (its own network namespace):
/// exec passes through untouched, process file and capabilities alike.
fn exec_into_an_unconverted_container_passes_through(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_ownnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("exec-own");
    let _guard = ContainerGuard::new(&sandbox, &id);
    create_started(&sandbox.wrapper(), &bundle, &id);
    let process = sandbox.path().join("process.json");
    let bytes = write_process_file(&process);
    let bnd =
        cap_bnd_of(
            &sandbox
                .wrapper()
                .run(&["exec", "--process", process.to_str().unwrap(), &id]),
        );
    assert_eq!(net_bits(bnd), [10, 12, 13], "CapBnd {bnd:016x}");
    assert_eq!(fs::read(&process).unwrap(), bytes);
}

/// `dir`'s regular files in a new directory `to`, copied or hard-linked.
fn alias_files(dir: &Path, to: &Path, hard: bool) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if !e.file_type().unwrap().is_file() {
            continue;
        }
        let at = to.join(e.file_name());
        if hard {
            fs::hard_link(e.path(), at).unwrap();
        } else {
            fs::copy(e.path(), at).unwrap();
        }
    }
}

/// The container's state reached through other entries than its own: a
/// link to its directory in the same root, a copy of its files in
/// another root, and a directory holding hard links of its files. The
/// real runtime execs into the container through each, with the network
/// capabilities the process file asks for; through the wrapper they stay
/// out, as through the container's own id.
fn exec_through_an_alias_of_the_state_gets_no_network_capabilities(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("alias");
    let _guard = ContainerGuard::new(&sandbox, &id);
    create_started(&sandbox.wrapper(), &bundle, &id);
    let root = sandbox.root();
    let other = sandbox.path().join("other-root");
    let (link, copy, hard) = (format!("{id}-l"), format!("{id}-c"), format!("{id}-h"));
    std::os::unix::fs::symlink(&id, root.join(&link)).unwrap();
    alias_files(&root.join(&id), &other.join(&copy), false);
    alias_files(&root.join(&id), &root.join(&hard), true);

    let process = sandbox.path().join("process.json");
    let p = process.to_str().unwrap();
    for (at, alias) in [(&root, &link), (&other, &copy), (&root, &hard)] {
        let mut real = sandbox.real();
        real.root = at.clone();
        write_process_file(&process);
        let direct = cap_bnd_of(&real.run(&["exec", "--process", p, alias]));
        assert_eq!(
            net_bits(direct),
            [10, 12, 13],
            "{alias}: the runtime execs through it: {direct:016x}"
        );
        let mut wrapper = sandbox.wrapper();
        wrapper.root = at.clone();
        write_process_file(&process);
        let through = cap_bnd_of(&wrapper.run(&["exec", "--process", p, alias]));
        assert!(
            net_bits(through).is_empty(),
            "{alias} under {}: CapBnd {through:016x}",
            at.display()
        );
    }
    fs::remove_file(root.join(&link)).unwrap();
    fs::remove_dir_all(root.join(&hard)).unwrap();
}

/// No record of `id` among the wrapper's records.
fn assert_no_record_of(id: &str) {
    let left: Vec<_> = userns_hostnet::records::Records::system()
        .all()
        .into_iter()
        .filter(|r| r.id == id)
        .collect();
    assert!(left.is_empty(), "records left for {id}: {left:?}");
}

/// A create the runtime fails after the wrapper converted the spec (a bind
/// of a source that does not exist): its record goes by the next create
/// through the wrapper (a retry, as the kubelet's), whatever the caller
/// does after the failure. That next create, of the same id and not
/// converted, gets nothing of the failed one's record: its exec keeps the
/// capabilities its process file asks for.
fn a_failed_create_leaves_no_record(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let wrapper = sandbox.wrapper();
    let id = common::unique_id("fail");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let failing = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    failing.edit(|spec| {
        spec["mounts"].as_array_mut().unwrap().push(json!({
            "destination": "/mnt",
            "type": "bind",
            "source": "/nonexistent/userns-hostnet-test",
            "options": ["rbind"]
        }))
    });
    let out = wrapper.run(&[
        OsStr::new("create"),
        OsStr::new("--bundle"),
        failing.dir().as_os_str(),
        OsStr::new(&id),
    ]);
    assert!(!out.success(), "{}", out.describe());
    assert!(!out.stderr.contains("refused"), "{}", out.describe());
    common::assert_converted_spec(&failing.spec());

    let own = Bundle::userns_ownnet(&["/bin/sleep", "1000"]);
    create_started(&wrapper, &own, &id);
    assert_no_record_of(&id);
    let process = sandbox.path().join("process.json");
    write_process_file(&process);
    let bnd = cap_bnd_of(&wrapper.run(&["exec", "--process", process.to_str().unwrap(), &id]));
    assert_eq!(net_bits(bnd), [10, 12, 13], "CapBnd {bnd:016x}");
}

/// A converted container deleted behind the wrapper's back (by the real
/// runtime) leaves a record that names its init; a container created
/// later with the same id and root, not converted, has another init, so
/// that record never matches it; a delete through the wrapper removes it
/// once that init is reaped (here by this machine's init: nothing is its
/// subreaper, as a shim would be).
fn a_stale_record_does_not_match_a_new_container(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let wrapper = sandbox.wrapper();
    let real = sandbox.real();
    let id = common::unique_id("stale");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let converted = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    create_started(&wrapper, &converted, &id);
    assert!(record_of(runtime, &sandbox.root(), &id).is_some());
    let old_init = real.state(&id).and_then(|s| s["pid"].as_i64()).unwrap();
    real.run(&["delete", "--force", &id]).assert_success();

    let own = Bundle::userns_ownnet(&["/bin/sleep", "1000"]);
    create_started(&real, &own, &id);
    let process = sandbox.path().join("process.json");
    write_process_file(&process);
    let bnd = cap_bnd_of(&wrapper.run(&["exec", "--process", process.to_str().unwrap(), &id]));
    assert_eq!(net_bits(bnd), [10, 12, 13], "CapBnd {bnd:016x}");
    real.run(&["kill", &id, "KILL"]).assert_success();
    real.wait_for_status(&id, "stopped");
    let reaped = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::path::Path::new(&format!("/proc/{old_init}")).exists() {
        assert!(
            std::time::Instant::now() < reaped,
            "init {old_init} never reaped"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    wrapper.run(&["delete", &id]).assert_success();
    assert_no_record_of(&id);
}

common::for_runtimes!(
    exec_through_an_alias_of_the_state_gets_no_network_capabilities,
    a_failed_create_leaves_no_record,
    a_stale_record_does_not_match_a_new_container,
    exec_into_a_converted_container_gets_no_network_capabilities,
    exec_into_an_unconverted_container_passes_through,
    exit_status_passes_through,
    stdout_is_the_containers_alone,
    inherited_fd_reaches_the_container,
);
