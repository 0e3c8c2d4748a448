//! The probe against stub runtimes: shell scripts that print a canned
//! `features` document or `--version` line and record each call. The real
//! runc and crun are the end-to-end tier's (tests/e2e_probe.rs).
use super::answer::major_minor;
use super::*;
use std::fs;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;

const RRO_FEATURES: &str =
    r#"{"ociVersionMin":"1.0.0","mountOptions":["bind","rbind","ro","rro","nosuid"]}"#;
const NO_RRO_FEATURES: &str = r#"{"ociVersionMin":"1.0.0","mountOptions":["bind","rbind","ro"]}"#;

/// An answer as the operator reads it.
fn said(answer: Result<String, ProbeError>) -> Result<String, String> {
    answer.map_err(|e| e.to_string())
}

/// A stub runtime: `features` and `--version` run the given shell
/// snippets; every run appends a line to `<dir>/calls`.
fn stub(dir: &Path, name: &str, features: &str, version: &str) -> PathBuf {
    let calls = dir.join("calls");
    let path = dir.join(name);
    let script = format!(
        "#!/bin/sh\necho \"$1\" >> '{}'\ncase \"$1\" in\n  features) {features} ;;\n  --version) {version} ;;\n  *) exit 2 ;;\nesac\n",
        calls.display()
    );
    // Written under another name and renamed, so no descriptor open for
    // writing is ever attached to the name that is executed.
    let tmp = dir.join(format!(".{name}.tmp"));
    fs::write(&tmp, script).unwrap();
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755)).unwrap();
    fs::rename(&tmp, &path).unwrap();
    path
}

fn calls(dir: &Path) -> Vec<String> {
    fs::read_to_string(dir.join("calls"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn echo(s: &str) -> String {
    format!("echo '{s}'")
}

const FAIL_FEATURES: &str = "echo 'unknown command features' >&2; exit 1";

#[test]
fn features_listing_rro_is_supported() {
    let d = tempfile::tempdir().unwrap();
    let rt = stub(d.path(), "rt", &echo(RRO_FEATURES), "exit 1");
    assert_eq!(
        said(runtime_knows_rro(&rt, &d.path().join("trials"))),
        Ok("\"features\" lists rro".to_owned())
    );
    assert_eq!(calls(d.path()), ["features"]);
}

/// What a stub that cannot create a container makes of the trial.
const NO_TRIAL: &str =
    "the runtime could not create the trial container (exit status: 2): it said nothing";

#[test]
fn features_without_rro_is_a_trial_without_asking_the_version() {
    let d = tempfile::tempdir().unwrap();
    let rt = stub(
        d.path(),
        "rt",
        &echo(NO_RRO_FEATURES),
        &echo("runc version 1.1.5"),
    );
    assert_eq!(
        said(runtime_knows_rro(&rt, &d.path().join("trials"))),
        Err(format!(
            "{}: \"features\" lists no rro mount option; {NO_TRIAL}",
            rt.display()
        ))
    );
    // features, then the trial's create and delete (both with --root).
    assert_eq!(calls(d.path()), ["features", "--root", "--root"]);
    assert_eq!(fs::read_dir(d.path().join("trials")).unwrap().count(), 0);
}

#[test]
fn features_without_mount_options_falls_back_to_the_version() {
    let d = tempfile::tempdir().unwrap();
    let rt = stub(
        d.path(),
        "rt",
        &echo(r#"{"ociVersionMin":"1.0.0"}"#),
        &echo("runc version 1.1.5+ds1"),
    );
    assert_eq!(
        said(runtime_knows_rro(&rt, &d.path().join("trials"))),
        Ok("runc 1.1 (rro since runc 1.1)".to_owned())
    );
    assert_eq!(calls(d.path()), ["features", "--version"]);
}

#[test]
fn no_features_falls_back_to_the_version() {
    let d = tempfile::tempdir().unwrap();
    let new = stub(
        d.path(),
        "new",
        FAIL_FEATURES,
        "echo 'crun version 1.8.1'; echo 'commit: f8a096be'",
    );
    assert_eq!(
        said(runtime_knows_rro(&new, &d.path().join("trials"))),
        Ok("crun 1.8 (rro since crun 1.4)".to_owned())
    );
    let old = stub(d.path(), "old", FAIL_FEATURES, &echo("crun version 1.3"));
    assert_eq!(
        said(runtime_knows_rro(&old, &d.path().join("trials"))),
        Err(format!(
            "{}: crun 1.3 predates rro (needs crun 1.4); {NO_TRIAL}",
            old.display()
        ))
    );
    // Text instead of JSON, with success, is no answer either.
    let text = stub(
        d.path(),
        "text",
        "echo 'usage: rt'",
        &echo("youki version 0.7.0"),
    );
    assert_eq!(
        said(runtime_knows_rro(&text, &d.path().join("trials"))),
        Ok("youki 0.7 (rro since youki 0.3)".to_owned())
    );
}

#[test]
fn unknown_runtimes_are_unsupported_with_a_reason() {
    let d = tempfile::tempdir().unwrap();
    let foo = stub(d.path(), "foo", FAIL_FEATURES, &echo("foo 2.0"));
    assert_eq!(
        said(runtime_knows_rro(&foo, &d.path().join("trials"))),
        Err(format!(
            "{}: no \"features\" answer and its version is unknown (\"foo 2.0\"); {NO_TRIAL}",
            foo.display()
        ))
    );
    let bar = stub(d.path(), "bar", FAIL_FEATURES, &echo("bar version 9.9"));
    assert_eq!(
        said(runtime_knows_rro(&bar, &d.path().join("trials"))),
        Err(format!(
            "{}: no \"features\" answer and \"bar version 9.9\" is not a runtime known to support rro; {NO_TRIAL}",
            bar.display()
        ))
    );
    let mute = stub(d.path(), "mute", FAIL_FEATURES, "exit 1");
    assert_eq!(
        said(runtime_knows_rro(&mute, &d.path().join("trials"))),
        Err(format!(
            "{}: neither \"features\" nor \"--version\" answered",
            mute.display()
        ))
    );
    let missing = d.path().join("missing");
    let e = said(runtime_knows_rro(&missing, &d.path().join("trials"))).unwrap_err();
    assert!(
        e.starts_with(&format!("{}: cannot run: ", missing.display())),
        "{e}"
    );
}

#[test]
fn a_hung_runtime_is_killed_in_time() {
    let d = tempfile::tempdir().unwrap();
    let rt = stub(d.path(), "hung", "sleep 30", &echo("runc version 1.1.5"));
    let start = Instant::now();
    let p = probe_runtime(&rt, Duration::from_millis(300), &d.path().join("trials"));
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert!(!p.definitive);
    assert_eq!(
        said(p.answer),
        Err(format!(
            "{}: \"features\" did not answer within 0.3s",
            rt.display()
        ))
    );
    // A timeout is not cached: the next start asks again.
    let cache = d.path().join("cache");
    let _ = runtime_knows_rro_cached(&rt, &cache, Duration::from_millis(100));
    assert!(fs::read_dir(&cache).map_or(true, |mut r| r.next().is_none()));
}

#[test]
fn a_runtime_that_keeps_stdout_open_after_exiting_times_out() {
    let d = tempfile::tempdir().unwrap();
    let rt = stub(d.path(), "bg", "sleep 30 & exit 0", "exit 1");
    let start = Instant::now();
    let p = probe_runtime(&rt, Duration::from_millis(300), &d.path().join("trials"));
    assert!(start.elapsed() < Duration::from_secs(3));
    assert!(p.answer.is_err());
}

#[test]
fn huge_output_is_no_answer() {
    let d = tempfile::tempdir().unwrap();
    let rt = stub(
        d.path(),
        "chatty",
        "yes '\"rro\",'",
        &echo("crun version 1.8.1"),
    );
    assert_eq!(
        said(probe_runtime(&rt, Duration::from_secs(5), &d.path().join("trials")).answer),
        Ok("crun 1.8 (rro since crun 1.4)".to_owned())
    );
}

#[test]
fn the_child_gets_only_stdio_and_dev_null() {
    let d = tempfile::tempdir().unwrap();
    // A descriptor this process leaves inheritable, as conmon's sync
    // pipes are.
    let file = File::open("/dev/zero").unwrap();
    let fd = nix::unistd::dup(file.as_raw_fd()).unwrap();
    let check = format!(
        "if [ -e /proc/$$/fd/{fd} ]; then echo '{NO_RRO_FEATURES}'; \
         elif [ \"$(readlink /proc/$$/fd/0)\" != /dev/null ] || [ \"$(readlink /proc/$$/fd/2)\" != /dev/null ]; then echo '{NO_RRO_FEATURES}'; \
         else echo '{RRO_FEATURES}'; fi; echo noise >&2"
    );
    let rt = stub(d.path(), "rt", &check, "exit 1");
    let answer = said(runtime_knows_rro(&rt, &d.path().join("trials")));
    let _ = nix::unistd::close(fd);
    assert_eq!(answer, Ok("\"features\" lists rro".to_owned()));
}

#[test]
fn the_answer_is_cached_until_the_binary_changes() {
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("cache");
    let rt = stub(d.path(), "rt", &echo(RRO_FEATURES), "exit 1");
    let t = Duration::from_secs(5);
    let ok = Ok("\"features\" lists rro".to_owned());
    assert_eq!(said(runtime_knows_rro_cached(&rt, &cache, t)), ok);
    assert_eq!(calls(d.path()).len(), 1);
    let mode = fs::metadata(&cache).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let files: Vec<_> = fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with("rro-") && files[0].ends_with(".json"));
    let entry: serde_json::Value =
        serde_json::from_slice(&fs::read(cache.join(&files[0])).unwrap()).unwrap();
    assert_eq!(entry["rro"]["Ok"], "\"features\" lists rro");
    assert_eq!(
        entry["runtime"]["path"],
        rt.canonicalize().unwrap().to_str().unwrap()
    );

    // Second start: no process.
    assert_eq!(said(runtime_knows_rro_cached(&rt, &cache, t)), ok);
    assert_eq!(calls(d.path()).len(), 1);

    // A new mtime: asked again.
    let when = nix::sys::time::TimeSpec::new(1_000_000_000, 5);
    nix::sys::stat::utimensat(
        None,
        &rt,
        &when,
        &when,
        nix::sys::stat::UtimensatFlags::FollowSymlink,
    )
    .unwrap();
    assert_eq!(said(runtime_knows_rro_cached(&rt, &cache, t)), ok);
    assert_eq!(calls(d.path()).len(), 2);
    assert_eq!(said(runtime_knows_rro_cached(&rt, &cache, t)), ok);
    assert_eq!(calls(d.path()).len(), 2);

    // Corrupt: ignored and rewritten.
    fs::write(cache.join(&files[0]), b"{\"rro\": tr").unwrap();
    assert_eq!(said(runtime_knows_rro_cached(&rt, &cache, t)), ok);
    assert_eq!(calls(d.path()).len(), 3);
    let entry: serde_json::Value =
        serde_json::from_slice(&fs::read(cache.join(&files[0])).unwrap()).unwrap();
    assert_eq!(entry["rro"]["Ok"], "\"features\" lists rro");
    assert_eq!(said(runtime_knows_rro_cached(&rt, &cache, t)), ok);
    assert_eq!(calls(d.path()).len(), 3);

    // A replaced binary answering otherwise: asked again (features, and a
    // trial's create and delete), new answer.
    let rt2 = stub(d.path(), "rt", &echo(NO_RRO_FEATURES), "exit 1");
    assert_eq!(rt2, rt);
    assert!(said(runtime_knows_rro_cached(&rt, &cache, t)).is_err());
    assert_eq!(calls(d.path()).len(), 6);
    assert!(said(runtime_knows_rro_cached(&rt, &cache, t)).is_err());
    assert_eq!(calls(d.path()).len(), 6);
    // The trial left nothing beside the cached answer.
    assert_eq!(fs::read_dir(&cache).unwrap().count(), 1);
    // No temporary files left behind.
    assert_eq!(fs::read_dir(&cache).unwrap().count(), 1);
}

#[test]
fn a_negative_version_answer_is_cached_too() {
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("cache");
    let rt = stub(d.path(), "rt", FAIL_FEATURES, &echo("crun version 1.3"));
    let t = Duration::from_secs(5);
    let first = runtime_knows_rro_cached(&rt, &cache, t);
    assert!(matches!(first, Err(ProbeError::Trial { .. })), "{first:?}");
    assert_eq!(
        calls(d.path()),
        ["features", "--version", "--root", "--root"]
    );
    // The same answer, typed, from the cache: no second trial.
    assert_eq!(runtime_knows_rro_cached(&rt, &cache, t), first);
    assert_eq!(calls(d.path()).len(), 4);
}

#[test]
fn unusable_cache_dirs_cost_a_probe_not_a_failure() {
    let d = tempfile::tempdir().unwrap();
    let rt = stub(d.path(), "rt", &echo(RRO_FEATURES), "exit 1");
    let t = Duration::from_secs(5);
    // A file where the directory should be.
    let file = d.path().join("file");
    fs::write(&file, "").unwrap();
    assert!(said(runtime_knows_rro_cached(&rt, &file, t)).is_ok());
    // A parent that does not exist.
    assert!(runtime_knows_rro_cached(&rt, &d.path().join("a/b"), t).is_ok());
    // A directory others can write: neither read nor written.
    let open = d.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    assert!(said(runtime_knows_rro_cached(&rt, &open, t)).is_ok());
    assert_eq!(fs::read_dir(&open).unwrap().count(), 0);
    assert_eq!(calls(d.path()).len(), 3);
}

#[test]
fn a_writable_cache_file_is_not_trusted() {
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("cache");
    let rt = stub(d.path(), "rt", &echo(NO_RRO_FEATURES), "exit 1");
    let t = Duration::from_secs(5);
    assert!(said(runtime_knows_rro_cached(&rt, &cache, t)).is_err());
    let id = Identity::of(&rt).unwrap();
    let entry = cache.join(id.file_name());
    let mut planted: serde_json::Value =
        serde_json::from_slice(&fs::read(&entry).unwrap()).unwrap();
    assert!(planted["rro"].get("Err").is_some(), "{planted}");
    planted["rro"] = serde_json::json!({"Ok": "planted"});
    fs::write(&entry, planted.to_string()).unwrap();
    // Written by us and nobody else: read as it says.
    fs::set_permissions(&entry, fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        said(runtime_knows_rro_cached(&rt, &cache, t)),
        Ok("planted".to_owned())
    );
    // features, and the trial's create and delete.
    assert_eq!(calls(d.path()).len(), 3);
    // Writable by others: not trusted, the runtime is asked again.
    fs::set_permissions(&entry, fs::Permissions::from_mode(0o666)).unwrap();
    assert!(said(runtime_knows_rro_cached(&rt, &cache, t)).is_err());
    assert_eq!(calls(d.path()).len(), 6);
}

#[test]
fn kernel_probe_matches_the_kernel_version() {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let (major, minor) = major_minor(release.trim()).unwrap();
    assert_eq!(kernel_has_mount_setattr(), (major, minor) >= (5, 12));
}

#[test]
fn rro_support_on_this_host() {
    let d = tempfile::tempdir().unwrap();
    let rt = stub(d.path(), "rt", &echo(NO_RRO_FEATURES), "exit 1");
    let got = rro_support(&rt, &d.path().join("cache"));
    if kernel_has_mount_setattr() {
        assert_eq!(
            got,
            RroSupport::Unsupported(format!(
                "{}: \"features\" lists no rro mount option; {NO_TRIAL}",
                rt.display()
            ))
        );
    } else {
        assert_eq!(got, RroSupport::Unsupported(KERNEL_REASON.to_owned()));
    }
}

#[test]
fn runtimes_like_runc_and_crun_are_supported_and_cached() {
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("cache");
    // runc 1.1.5 lists rro; crun 1.8.1 has no `features` and says its version.
    let runc = stub(
        d.path(),
        "runc",
        &echo(RRO_FEATURES),
        &echo("runc version 1.1.5"),
    );
    let crun = stub(
        d.path(),
        "crun",
        "echo 'unknown command features' >&2; exit 1",
        "echo 'crun version 1.8.1'; echo 'commit: f8a096be'",
    );
    let expected = if kernel_has_mount_setattr() {
        RroSupport::Supported
    } else {
        RroSupport::Unsupported(KERNEL_REASON.to_owned())
    };
    for rt in [&runc, &crun] {
        assert_eq!(rro_support(rt, &cache), expected);
        assert_eq!(rro_support(rt, &cache), expected);
    }
    if expected == RroSupport::Supported {
        assert_eq!(fs::read_dir(&cache).unwrap().count(), 2);
        assert_eq!(calls(d.path()), ["features", "features", "--version"]);
    }
}

/// A trial that could not be read (here: the runtime says it created the
/// container but wrote no pid file) is not an answer to keep: the next
/// create asks again, where a settled no would stay until the binary
/// changes.
#[test]
fn a_trial_that_could_not_be_read_is_not_cached() {
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("cache");
    let log = d.path().join("calls");
    let rt = d.path().join("rt");
    let tmp = d.path().join(".rt.tmp");
    fs::write(
        &tmp,
        format!(
            "#!/bin/sh\necho \"$1\" >> '{}'\n[ \"$1\" = features ] && echo '{NO_RRO_FEATURES}'\nexit 0\n",
            log.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755)).unwrap();
    fs::rename(&tmp, &rt).unwrap();
    let t = Duration::from_secs(5);
    let first = said(runtime_knows_rro_cached(&rt, &cache, t)).unwrap_err();
    assert!(
        first.contains("the trial container's pid file: "),
        "{first}"
    );
    assert_eq!(calls(d.path()).len(), 3);
    assert!(said(runtime_knows_rro_cached(&rt, &cache, t)).is_err());
    assert_eq!(calls(d.path()).len(), 6, "asked again, not cached");
}
