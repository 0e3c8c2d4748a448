//! Records the git commit the binaries are built from, for `--version`:
//! `USERNS_HOSTNET_COMMIT` is the short commit hash, or `unknown` outside
//! a git checkout (a source tarball) or without git. And the build date,
//! for `userns-hostnet version`: `USERNS_HOSTNET_BUILD_DATE`, UTC in RFC
//! 3339, taken from `SOURCE_DATE_EPOCH` when set (reproducible builds),
//! else the time this script ran.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_owned()).filter(|t| !t.is_empty())
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (the proleptic
/// Gregorian calendar, as `date -u` prints it).
fn rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to a civil date: shift the epoch to 0000-03-01, count 400-year eras.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn build_date() -> String {
    let epoch = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) => v
            .trim()
            .parse::<i64>()
            .unwrap_or_else(|_| panic!("SOURCE_DATE_EPOCH={v:?} is not a number of seconds")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    };
    rfc3339(epoch)
}

fn main() {
    println!("cargo:rustc-env=USERNS_HOSTNET_BUILD_DATE={}", build_date());
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
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
