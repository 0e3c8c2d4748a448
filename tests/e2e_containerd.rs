//! containerd 1.6 through `ctr run --runc-binary`: the shim calls the wrapper
//! as `--root R --log B/log.json --log-format json create --bundle B ...` on the
//! host's own (hybrid) cgroup view, and surfaces the wrapper's refusal.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Bundle, Outcome, Probe};
use serde_json::json;
use tempfile::TempDir;

/// A containerd daemon with its own root, state and socket, stopped on drop.
struct Containerd {
    dir: TempDir,
    child: Child,
}

impl Containerd {
    fn start() -> Containerd {
        common::require_prerequisites(common::Runtime::Runc);
        for tool in ["containerd", "ctr", "containerd-shim-runc-v2"] {
            assert!(
                common::find_in_path(tool).is_some(),
                "`{tool}` is missing: install the Debian package containerd"
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("uhn-ctd-")
            .tempdir_in("/tmp")
            .unwrap();
        let d = dir.path();
        let config = format!(
            "version = 2\nroot = \"{root}\"\nstate = \"{state}\"\n\
             [grpc]\n  address = \"{sock}\"\n[ttrpc]\n  address = \"{sock}.ttrpc\"\n\
             [debug]\n  address = \"\"\n[metrics]\n  address = \"\"\n",
            root = d.join("root").display(),
            state = d.join("state").display(),
            sock = d.join("sock").display(),
        );
        fs::write(d.join("config.toml"), config).unwrap();
        fs::write(d.join("wrapper.toml"), "").unwrap();
        let log = fs::File::create(d.join("containerd.log")).unwrap();
        let child = Command::new("containerd")
            .arg("--config")
            .arg(d.join("config.toml"))
            .env("USERNS_HOSTNET_RUNTIME", "runc")
            .env("USERNS_HOSTNET_CONFIG", d.join("wrapper.toml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start containerd");
        let ctd = Containerd { dir, child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ctd.ctr(&["version"]).success() {
            assert!(
                Instant::now() < deadline,
                "containerd did not answer within 30s:\n{}",
                fs::read_to_string(ctd.dir.path().join("containerd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        ctd
    }

    fn ctr(&self, args: &[&str]) -> Outcome {
        common::run_capture(
            Command::new("ctr")
                .arg("--address")
                .arg(self.dir.path().join("sock"))
                .args(args),
        )
    }

    /// `ctr run --rm --runc-binary BINARY --config SPEC ID`.
    fn run(&self, binary: &Path, spec: &Path, id: &str) -> Outcome {
        let binary = binary.to_str().unwrap();
        let spec = spec.to_str().unwrap();
        self.ctr(&["run", "--rm", "--runc-binary", binary, "--config", spec, id])
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        if let Ok(out) = Command::new("ctr")
            .arg("--address")
            .arg(self.dir.path().join("sock"))
            .args(["containers", "list", "--quiet"])
            .output()
        {
            for id in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = self.ctr(&["tasks", "kill", "--signal", "SIGKILL", id]);
                let _ = self.ctr(&["tasks", "delete", "--force", id]);
                let _ = self.ctr(&["containers", "delete", id]);
            }
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A userns + host-network spec for `ctr run --config`, shaped like the one
/// ctr writes itself: no cgroup mount (on this hybrid host runc 1.1.5 would
/// otherwise build a writable, container-private tmpfs at /sys/fs/cgroup).
fn spec_file(args: &[&str]) -> (Bundle, PathBuf) {
    let bundle = Bundle::userns_hostnet(args);
    bundle.edit(|spec| {
        spec["process"]["env"] = json!(["PATH=/bin"]);
        common::remove_mount(spec, "/sys/fs/cgroup");
    });
    let path = bundle.config_path();
    (bundle, path)
}

#[test]
fn ctr_runs_userns_hostnet_container_through_wrapper() {
    let ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&common::probe_args());
    let id = common::unique_id("ctr");

    let out = ctd.run(Path::new(common::WRAPPER), &spec, &id);
    out.assert_success();
    // The host's own /sys here: hybrid cgroups, no bpffs/securityfs.
    common::assert_converted_view(&Probe::parse(&out.stdout), false);
}

#[test]
fn ctr_with_plain_runc_fails_with_sysfs_eperm() {
    let ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&common::probe_args());
    let id = common::unique_id("ctr-plain");

    let out = ctd.run(&common::Runtime::Runc.path(), &spec, &id);
    assert!(!out.success(), "{}", out.describe());
    assert!(
        out.stderr.contains("sysfs") && out.stderr.contains("operation not permitted"),
        "{}",
        out.describe()
    );
}

/// containerd reports the last error line of the runtime's log: operators see
/// the wrapper's reason in the failure.
#[test]
fn ctr_shows_the_wrappers_refusal() {
    let ctd = Containerd::start();
    let (_bundle, spec) = spec_file(&["/bin/true"]);
    let mut value: serde_json::Value = serde_json::from_slice(&fs::read(&spec).unwrap()).unwrap();
    value["linux"]["sysctl"] = json!({ "net.ipv4.ip_forward": "1" });
    fs::write(&spec, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    let id = common::unique_id("ctr-refuse");

    let out = ctd.run(Path::new(common::WRAPPER), &spec, &id);
    assert!(!out.success(), "{}", out.describe());
    assert!(
        out.stderr.contains("userns-hostnet-runtime") && out.stderr.contains("net.ipv4.ip_forward"),
        "containerd should show the wrapper's error\n{}",
        out.describe()
    );
}
