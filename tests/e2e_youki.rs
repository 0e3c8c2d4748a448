//! userns + host-network containers through the wrapper, backed by youki
//! 0.7.0 (built from crates.io by scripts/youki.sh into target/youki).

mod common;

use common::Runtime;

#[test]
fn wrapper_runs_userns_hostnet_container() {
    common::scenarios::converted_run(Runtime::Youki, true);
}

#[test]
fn plain_youki_fails_with_sysfs_eperm() {
    common::scenarios::plain_runtime_fails_with_eperm(Runtime::Youki);
}

#[test]
fn cgroup_namespace_gets_read_only_cgroup_mount() {
    common::scenarios::cgroupns_gets_own_cgroup_mount(Runtime::Youki, true);
}

#[test]
fn sys_is_mounted_before_the_cgroup_mount() {
    common::scenarios::sys_moves_before_cgroup(Runtime::Youki);
}

/// On this host's own cgroups (not the tests' cgroup2 view of /sys): on a
/// cgroup v1 or hybrid host, youki 0.7.0 mounts the container's cgroup
/// hierarchies writable although the spec says `ro`. The wrapper refuses
/// such a container by default, naming the mount and the switch; with
/// `cgroup.allow_writable_v1 = true` it runs, and the decision log says
/// what stays writable. On a cgroup v2 host they are read-only, the
/// container runs and nothing is said.
#[test]
fn youki_cgroup_v1_mounts_are_refused_unless_allowed() {
    let v2 = nix::sys::statfs::statfs("/sys/fs/cgroup")
        .unwrap()
        .filesystem_type()
        == nix::sys::statfs::CGROUP2_SUPER_MAGIC;
    for allow in [false, true] {
        let sandbox = common::Sandbox::new(Runtime::Youki);
        if allow {
            let config = std::fs::read_to_string(sandbox.config_path()).unwrap();
            std::fs::write(
                sandbox.config_path(),
                format!("[cgroup]\nallow_writable_v1 = true\n{config}"),
            )
            .unwrap();
        }
        let bundle = common::Bundle::userns_hostnet(&common::probe_args());
        let id = common::unique_id("v1");
        let _guard = common::ContainerGuard::new(&sandbox, &id);
        let mut argv = common::sigchld_blocked_for(Runtime::Youki);
        argv.extend(
            [
                common::WRAPPER.as_ref(),
                "--root".as_ref(),
                sandbox.root().as_os_str(),
                "run".as_ref(),
                "--bundle".as_ref(),
                bundle.dir().as_os_str(),
                id.as_ref(),
            ]
            .map(std::ffi::OsStr::to_os_string),
        );
        let mut cmd = std::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env("USERNS_HOSTNET_RUNTIME", Runtime::Youki.path())
            .env("USERNS_HOSTNET_CONFIG", sandbox.config_path());
        let out = common::run_capture(&mut cmd);
        if !v2 && !allow {
            assert_eq!(out.code(), Some(1), "{}", out.describe());
            let lines: Vec<&str> = out.stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{}", out.describe());
            assert!(
                lines[0].starts_with("userns-hostnet-runtime: refused: runtime-cgroup-v1: mounts[")
                    && lines[0].contains("youki mounts cgroup v1 hierarchies read-write")
                    && lines[0].contains("set cgroup.allow_writable_v1 = true"),
                "{}",
                lines[0]
            );
            eprintln!("youki, cgroup v1, default: {}", lines[0]);
            continue;
        }
        out.assert_success();
        let seen = common::Probe::parse(&out.stdout);
        common::show("youki on this host's cgroups", &seen);
        let decision = sandbox
            .decisions()
            .into_iter()
            .find(|d| d["id"] == id.as_str())
            .expect("a decision line");
        let warned = decision["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|w| {
                w.as_str()
                    .unwrap_or("")
                    .contains("youki mounts cgroup v1 hierarchies read-write")
            });
        let writable: Vec<String> = common::writable_under_sys(&seen)
            .iter()
            .map(|m| m.mount_point.clone())
            .collect();
        if v2 {
            assert!(!warned, "{decision}");
            assert!(writable.is_empty(), "{}", seen.table());
        } else {
            assert!(warned, "{decision}");
            // Only the container's own cgroup hierarchies: the host's /sys
            // tree is read-only all the way down.
            assert!(
                !writable.is_empty() && writable.iter().all(|m| m.starts_with("/sys/fs/cgroup")),
                "{}",
                seen.table()
            );
        }
    }
}
