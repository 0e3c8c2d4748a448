//! Records the git commit the binaries are built from, for `--version`:
//! `USERNS_HOSTNET_COMMIT` is the short commit hash, or `unknown` outside
//! a git checkout (a source tarball) or without git.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_owned()).filter(|t| !t.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=USERNS_HOSTNET_COMMIT={commit}");
    // Built again when HEAD moves (a commit, a checkout); a worktree keeps
    // HEAD in its own git directory and branch refs in the common one.
    // Only files that exist: cargo runs this again on every build for a
    // missing one.
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for what in watched {
        if let Some(p) = git(&["rev-parse", "--git-path", &what]) {
            if std::path::Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
