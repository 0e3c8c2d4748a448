//! The shipped logrotate stanza (packaging/logrotate), run by the real
//! logrotate on a decision log the real wrapper wrote: the file it makes
//! after rotating has the wrapper's own mode and owner, a file past
//! `maxsize` is rotated before its week is out, and the wrapper goes on
//! appending to the new file.

mod common;

use common::{Bundle, Runtime, Sandbox};
use serde_json::json;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

const SHIPPED_PATH: &str = "/var/log/userns-hostnet.log";

/// A refused create: the wrapper appends one line and starts nothing.
fn refused_create(sandbox: &Sandbox) {
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    bundle.edit(|spec| spec["linux"]["sysctl"] = json!({ "net.ipv4.ip_forward": "1" }));
    let id = common::unique_id("logrotate");
    let out = sandbox
        .wrapper()
        .run(&["create", "--bundle", bundle.dir().to_str().unwrap(), &id]);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
}

#[test]
fn the_shipped_stanza_rotates_what_the_wrapper_writes() {
    let logrotate = common::find_in_path("logrotate")
        .or_else(|| Some(Path::new("/usr/sbin/logrotate").to_owned()).filter(|p| p.is_file()))
        .expect("logrotate is missing: apt-get install logrotate");
    let sandbox = Sandbox::new(Runtime::Runc);
    let log = sandbox.path().join("decisions.log");
    refused_create(&sandbox);
    let made = std::fs::metadata(&log).expect("the wrapper wrote its log");
    assert_eq!(made.mode() & 0o7777, 0o640, "the wrapper's log mode");
    assert_eq!(
        (made.uid(), made.gid()),
        (0, 0),
        "the wrapper runs as root here"
    );

    let shipped =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/logrotate"))
            .unwrap();
    assert!(shipped.contains(SHIPPED_PATH), "{shipped}");
    assert!(shipped.contains("maxsize "), "no size cap: {shipped}");
    let conf = sandbox.path().join("logrotate.conf");
    std::fs::write(&conf, shipped.replace(SHIPPED_PATH, log.to_str().unwrap())).unwrap();
    let state = sandbox.path().join("logrotate.state");
    let rotate = || {
        let out = Command::new(&logrotate)
            .arg("--state")
            .arg(&state)
            .arg(&conf)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    // Under maxsize in its first week: left alone.
    rotate();
    assert!(!sandbox.path().join("decisions.log.1").exists());
    // Past maxsize (sparse: no disk used): rotated on this run.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .set_len(101 << 20)
        .unwrap();
    rotate();
    let old = sandbox.path().join("decisions.log.1");
    assert_eq!(std::fs::metadata(&old).unwrap().len(), 101 << 20);
    let fresh = std::fs::metadata(&log).expect("logrotate made the new file");
    assert_eq!(
        (fresh.mode() & 0o7777, fresh.uid(), fresh.gid()),
        (made.mode() & 0o7777, made.uid(), made.gid()),
        "logrotate makes the file as the wrapper does"
    );
    assert_eq!(fresh.len(), 0);
    // The wrapper opens the file for each line: it writes to the new one.
    refused_create(&sandbox);
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("\"outcome\":\"refused\""), "{text}");
}
