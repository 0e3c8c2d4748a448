//! `--version` of the wrapper and of the admin tool: the real runtime's
//! answer stays intact and first, for the callers that parse it
//! (containerd's go-runc reads `runc version X` from the first line and
//! `commit:` / `spec:` from any line), and the wrapper's own line, with the
//! git commit it was built from, comes last.

mod common;

use std::process::Command;

const WRAPPER: &str = env!("CARGO_BIN_EXE_userns-hostnet-runtime");
const TOOL: &str = common::TOOL;

/// The commit build.rs recorded: this checkout's HEAD.
fn head() -> String {
    let out = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git is installed");
    assert!(out.status.success(), "the tests run from a git checkout");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// go-runc's reading of `runc --version`: (version, commit, spec).
fn go_runc(text: &str) -> (String, String, String) {
    let lines: Vec<&str> = text.trim().lines().collect();
    let version = lines[0]
        .strip_prefix("runc version ")
        .unwrap_or_default()
        .to_owned();
    let field = |p: &str| {
        lines
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix(p))
            .unwrap_or_default()
            .to_owned()
    };
    (version, field("commit: "), field("spec: "))
}

#[test]
fn the_runtimes_answer_first_then_the_wrappers_line() {
    common::require_prerequisites(common::Runtime::Runc);
    common::require_prerequisites(common::Runtime::Crun);
    let version = env!("CARGO_PKG_VERSION");
    let commit = head();
    for (runtime, global) in [("runc", &[][..]), ("crun", &["--root", "/run/crun"][..])] {
        let path = common::find_in_path(runtime).unwrap();
        let real = stdout(Command::new(&path).args(global).arg("--version"));
        let ours = stdout(
            Command::new(WRAPPER)
                .args(global)
                .arg("--version")
                .env("USERNS_HOSTNET_RUNTIME", &path),
        );
        let rest = ours
            .strip_prefix(real.as_str())
            .unwrap_or_else(|| panic!("{runtime}'s answer is not intact and first:\n{ours}"));
        assert_eq!(
            rest,
            format!(
                "userns-hostnet-runtime {version} (commit {commit}), running {}\n",
                path.display()
            )
        );
        if runtime == "runc" {
            let parsed = go_runc(&ours);
            assert_eq!(parsed, go_runc(&real));
            assert!(!parsed.0.is_empty() && !parsed.1.is_empty() && !parsed.2.is_empty());
        }
    }
    // -v is runc's short form.
    let ours = stdout(
        Command::new(WRAPPER)
            .arg("-v")
            .env("USERNS_HOSTNET_RUNTIME", "runc"),
    );
    assert!(ours.starts_with("runc version "), "{ours}");
    assert!(
        ours.ends_with(&format!("(commit {commit}), running /usr/sbin/runc\n")),
        "{ours}"
    );
}

#[test]
fn the_admin_tool_names_its_commit() {
    let out = stdout(Command::new(TOOL).arg("--version"));
    assert_eq!(
        out,
        format!(
            "userns-hostnet {} (commit {})\n",
            env!("CARGO_PKG_VERSION"),
            head()
        )
    );
}
