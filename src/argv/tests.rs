//! The command line as runc 1.1 to 1.4 and crun 1.8 read it, form by form,
//! and the strict reading for any other runtime: the intersection.

use super::*;

mod crun_1_27;
mod exec;

fn argv(s: &str) -> Vec<OsString> {
    s.split_whitespace().map(OsString::from).collect()
}

const DIALECTS: [Dialect; 3] = [Dialect::Runc, Dialect::Crun, Dialect::Strict];

/// The same reading under every dialect (what real clients send): the
/// invocation, once.
fn scan(args: &[OsString]) -> Invocation {
    let norm = |mut inv: Invocation| {
        inv.dialect = Dialect::Strict;
        if inv.creating.is_none() {
            inv.problem = None;
        }
        inv
    };
    let all: Vec<Invocation> = DIALECTS
        .iter()
        .map(|&d| norm(super::scan(args, d)))
        .collect();
    assert_eq!(all[0], all[1], "runc and crun read {args:?} differently");
    assert_eq!(all[0], all[2], "runc and strict read {args:?} differently");
    all.into_iter().next().unwrap()
}

/// What a create, run or restore must come to.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// Read: bundle, spec file (crun -f), state directory, container id.
    Reads(
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        &'static str,
    ),
    /// Refused: the argument named, and a piece of the reason.
    Refuses(&'static str, &'static str),
    /// Not a create at all (help, version): the runtime prints and exits.
    Passes,
}
use Want::{Passes, Reads, Refuses};

fn check(args: &str, dialect: Dialect, want: Want) -> Option<String> {
    let inv = super::scan(&argv(args), dialect);
    let got = match (&inv.creating, &inv.problem) {
        (None, _) => "passes".to_owned(),
        (Some(_), Some(p)) => format!("refuses {:?}: {}", p.arg, p.reason),
        (Some(_), None) => format!(
            "reads bundle {:?} spec {:?} root {:?} id {:?}",
            inv.bundle, inv.config_file, inv.root, inv.container_id
        ),
    };
    let ok = match want {
        Passes => inv.creating.is_none(),
        Refuses(arg, why) => {
            inv.creating.is_some()
                && inv
                    .problem
                    .as_ref()
                    .is_some_and(|p| p.arg == arg && p.reason.contains(why))
        }
        Reads(bundle, spec, root, id) => {
            inv.creating.is_some()
                && inv.problem.is_none()
                && inv.bundle.as_deref() == bundle.map(Path::new)
                && inv.config_file.as_deref() == spec.map(Path::new)
                && inv.root.as_deref() == root.map(OsStr::new)
                && inv.container_id.as_deref() == Some(OsStr::new(id))
        }
    };
    (!ok).then(|| format!("{dialect:?} `{args}`: want {want:?}, got {got}"))
}

const R: &str = "; runc would refuse this command line";
const C: &str = "; crun would refuse this command line";
const NEITHER: &str = "the real runtime is not known to be runc or crun";

/// Every form, with what runc, crun and the strict reading make of it.
fn forms() -> Vec<(&'static str, [Want; 3])> {
    let b = Some("/b");
    vec![
        // The forms real clients send: the same everywhere.
        ("create --bundle /b id", [Reads(b, None, None, "id"); 3]),
        ("create --bundle=/b id", [Reads(b, None, None, "id"); 3]),
        ("create -b /b id", [Reads(b, None, None, "id"); 3]),
        ("create id", [Reads(None, None, None, "id"); 3]),
        ("create -- id", [Reads(None, None, None, "id"); 3]),
        ("create --bundle /b -- id", [Reads(b, None, None, "id"); 3]),
        ("-- create --bundle /b id", [Reads(b, None, None, "id"); 3]),
        ("create --bundle /a --bundle /b id", [Reads(b, None, None, "id"); 3]),
        (
            "--root /r --log /l --log-format json create --bundle /b --pid-file /p id",
            [Reads(b, None, Some("/r"), "id"); 3],
        ),
        (
            "--root=/r --systemd-cgroup create --bundle /b --no-pivot --console-socket /s id",
            [Reads(b, None, Some("/r"), "id"); 3],
        ),
        // A value that looks like an option is still the value.
        ("create --pid-file -b id", [Reads(None, None, None, "id"); 3]),
        ("create --bundle -- id", [Reads(Some("--"), None, None, "id"); 3]),
        ("run --detach --bundle /b id", [Reads(b, None, None, "id"); 3]),
        ("restore --image-path /i --bundle /b id", [Reads(b, None, None, "id"); 3]),
        // Abbreviations: argp reads them, Go's flag package does not.
        (
            "create --bund /b id",
            [
                Refuses("--bund", "not a `create` option of runc"),
                Reads(b, None, None, "id"),
                Refuses("--bund", NEITHER),
            ],
        ),
        (
            "create --bun=/b id",
            [
                Refuses("--bun=/b", R),
                Reads(b, None, None, "id"),
                Refuses("--bun=/b", "while crun accepts it"),
            ],
        ),
        (
            "--roo /r create id",
            [
                Refuses("--roo", "not a global option of runc"),
                // --root and --rootless are two options since crun 1.22.
                Refuses(
                    "--roo",
                    "crun 1.22 or later would refuse this command line (while crun before 1.22 accepts it)",
                ),
                Refuses("--roo", NEITHER),
            ],
        ),
        (
            "--r=/r create id",
            [
                Refuses("--r=/r", R),
                Refuses("--r=/r", "crun 1.22 or later would refuse this command line"),
                Refuses("--r=/r", NEITHER),
            ],
        ),
        (
            "--log-f json create id",
            [
                Refuses("--log-f", R),
                Reads(None, None, None, "id"),
                Refuses("--log-f", NEITHER),
            ],
        ),
        (
            "--cgroup-m disabled create id",
            [
                Refuses("--cgroup-m", R),
                Reads(None, None, None, "id"),
                Refuses("--cgroup-m", NEITHER),
            ],
        ),
        (
            "--l /x create id",
            [
                Refuses("--l", R),
                Refuses("--l", "more than one global option of crun (--log, --log-format, --log-level)"),
                Refuses("--l", R),
            ],
        ),
        (
            "create --p /x id",
            [
                Refuses("--p", R),
                Refuses("--p", "(--preserve-fds, --pid-file, --program-name)"),
                Refuses("--p", R),
            ],
        ),
        // crun before 1.22 reads --rootless as its --root; 1.22 and later
        // read its value and ignore it: the wrapper cannot tell which root
        // the container's state, and its record, will be in.
        (
            "--rootless /r create id",
            [
                Reads(None, None, None, "id"),
                Refuses(
                    "--rootless",
                    "crun before 1.22 and crun 1.22 or later read it differently (the state directory: crun before 1.22 \"/r\", crun 1.22 or later nothing)",
                ),
                Refuses(
                    "--rootless",
                    "runc and crun read it differently (the state directory: runc nothing, crun \"/r\")",
                ),
            ],
        ),
        (
            "--rootless false --root /r create id",
            [
                Reads(None, None, Some("/r"), "id"),
                Reads(None, None, Some("/r"), "id"),
                Reads(None, None, Some("/r"), "id"),
            ],
        ),
        // Short options with attached values, grouped.
        (
            "create -b/b id",
            [
                Refuses("-b/b", R),
                Reads(b, None, None, "id"),
                Refuses("-b/b", NEITHER),
            ],
        ),
        (
            "create -b=/b id",
            [
                Reads(b, None, None, "id"),
                Reads(Some("=/b"), None, None, "id"),
                Refuses("-b=/b", "the bundle: runc \"/b\", crun \"=/b\""),
            ],
        ),
        (
            "run -db /b id",
            [
                Refuses("-db", R),
                Reads(b, None, None, "id"),
                Refuses("-db", NEITHER),
            ],
        ),
        // One dash for a long option: Go's flag package reads it whole,
        // argp as -b with the value "undle".
        (
            "create -bundle /b id",
            [
                Reads(b, None, None, "id"),
                Refuses("id", "one argument too many after the container id /b; crun"),
                Refuses("id", NEITHER),
            ],
        ),
        (
            "--debug=false create id",
            [
                Reads(None, None, None, "id"),
                Refuses("--debug=false", "takes no value; crun would refuse"),
                Refuses("--debug=false", NEITHER),
            ],
        ),
        (
            "-debug create id",
            [
                Reads(None, None, None, "id"),
                Refuses("-debug", C),
                Refuses("-debug", NEITHER),
            ],
        ),
        (
            "--criu /c create id",
            [
                Reads(None, None, None, "id"),
                Refuses("--criu", C),
                Refuses("--criu", NEITHER),
            ],
        ),
        (
            "--cgroup-manager disabled create id",
            [
                Refuses("--cgroup-manager", R),
                Reads(None, None, None, "id"),
                Refuses("--cgroup-manager", NEITHER),
            ],
        ),
        // crun 1.17 and later: a global option (crun 1.8 refuses it itself).
        (
            "--log-level debug create id",
            [
                Refuses("--log-level", "not a global option"),
                Reads(None, None, None, "id"),
                Refuses("--log-level", "not a global option"),
            ],
        ),
        // crun's -f/--config: the spec file.
        (
            "create -f /c.json id",
            [
                Refuses("-f", "not a `create` option of runc"),
                Reads(None, Some("/c.json"), None, "id"),
                Refuses("-f", NEITHER),
            ],
        ),
        (
            "run --config /c.json --bundle /b id",
            [
                Refuses("--config", R),
                Reads(b, Some("/c.json"), None, "id"),
                Refuses("--config", NEITHER),
            ],
        ),
        (
            "create --conf=c.json id",
            [
                Refuses("--conf=c.json", R),
                Reads(None, Some("c.json"), None, "id"),
                Refuses("--conf=c.json", NEITHER),
            ],
        ),
        (
            "create -fc.json -b/b id",
            [
                Refuses("-fc.json", R),
                Reads(b, Some("c.json"), None, "id"),
                Refuses("-fc.json", NEITHER),
            ],
        ),
        (
            "restore -f /c.json id",
            [Refuses("-f", R), Refuses("-f", C), Refuses("-f", R)],
        ),
        // Options after the container id: runc moves them forward, crun
        // takes them for a second argument.
        (
            "create id --bundle /b",
            [
                Reads(b, None, None, "id"),
                Refuses("--bundle", "after the container id id, where crun reads no options"),
                Refuses("--bundle", NEITHER),
            ],
        ),
        (
            "create --no-pivot id --bundle /b",
            [
                Refuses("--bundle", "one argument too many after the container id id; runc"),
                Refuses("--bundle", "after the container id id"),
                Refuses("--bundle", R),
            ],
        ),
        (
            "create id extra",
            [
                Refuses("extra", R),
                Refuses("extra", C),
                Refuses("extra", R),
            ],
        ),
        (
            "restore --image-path /i id extra",
            [
                Refuses("extra", R),
                Reads(None, None, None, "id"),
                Refuses("extra", NEITHER),
            ],
        ),
        ("create -- --bundle /b id", [Refuses("/b", "one argument too many"); 3]),
        // Two names of one option: urfave/cli refuses that.
        (
            "create -b /a --bundle /b id",
            [
                Refuses("--bundle", "given both as -b and as --bundle; runc would refuse"),
                Reads(b, None, None, "id"),
                Refuses("--bundle", NEITHER),
            ],
        ),
        // Missing pieces.
        ("create", [Refuses("create", "no container id"); 3]),
        ("create --bundle", [Refuses("--bundle", "needs a value"); 3]),
        ("create --bundle /b", [Refuses("create", "no container id"); 3]),
        (
            "create id --bundle",
            [
                Refuses("create", "no container id; runc"),
                Refuses("--bundle", "after the container id"),
                Refuses("create", R),
            ],
        ),
        (
            "---bundle /b create id",
            [
                Refuses("---bundle", "bad flag syntax; runc"),
                Refuses("---bundle", "not a global option of crun"),
                Refuses("---bundle", "bad flag syntax; runc"),
            ],
        ),
        ("create -x id", [Refuses("-x", R), Refuses("-x", C), Refuses("-x", R)]),
        // Help and version: the runtime prints and creates nothing.
        ("create --help", [Passes; 3]),
        ("--version create id", [Passes; 3]),
        ("-v create id", [Passes; 3]),
        (
            "create -h id",
            [Passes, Refuses("-h", C), Refuses("-h", NEITHER)],
        ),
        (
            "create -? id",
            [Refuses("-?", R), Passes, Refuses("-?", NEITHER)],
        ),
        // An option before the subcommand that cannot be read, with a
        // create further on: refused, never passed through.
        ("--bogus x run y", [Refuses("--bogus", "not a global option"); 3]),
        ("--bogus kill create", [Refuses("--bogus", "not a global option"); 3]),
    ]
}

#[test]
fn every_form_per_runtime() {
    let mut bad = Vec::new();
    for (args, wants) in forms() {
        for (d, want) in DIALECTS.into_iter().zip(wants) {
            bad.extend(check(args, d, want));
        }
    }
    assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn bad_flag_syntax_in_go() {
    let inv = super::scan(&argv("---bundle /b create id"), Dialect::Runc);
    assert_eq!(
        inv.problem.unwrap().reason,
        format!("bad flag syntax; runc {WOULD_REFUSE}")
    );
    let inv = super::scan(&argv("create -=x id"), Dialect::Runc);
    assert!(inv.problem.unwrap().reason.starts_with("bad flag syntax"));
}

#[test]
fn the_spec_file_crun_reads() {
    let inv = super::scan(&argv("create -b /b -f config.json id"), Dialect::Crun);
    assert_eq!(inv.spec_file(), PathBuf::from("/b/config.json"));
    let inv = super::scan(&argv("create -b /b -f ./config.json id"), Dialect::Crun);
    assert_eq!(inv.spec_file(), PathBuf::from("./config.json"));
    let inv = super::scan(&argv("create -b /b --config /s.json id"), Dialect::Crun);
    assert_eq!(inv.spec_file(), PathBuf::from("/s.json"));
    let inv = super::scan(&argv("create --config s.json id"), Dialect::Crun);
    assert_eq!(inv.spec_file(), PathBuf::from("s.json"));
    let inv = super::scan(&argv("create id"), Dialect::Crun);
    assert_eq!(inv.spec_file(), PathBuf::from("./config.json"));
}

#[test]
fn globals_in_every_form_each_runtime_takes() {
    let runc = super::scan(
        &argv("-root /r -log=/l -log-format json --debug run -d -b /bundle ctr"),
        Dialect::Runc,
    );
    assert_eq!(runc.problem, None);
    assert_eq!(runc.root, Some("/r".into()));
    assert_eq!(runc.log_file, Some(PathBuf::from("/l")));
    assert_eq!(runc.log_format, LogFormat::Json);
    assert!(runc.debug);
    assert_eq!(runc.bundle, Some(PathBuf::from("/bundle")));
    assert_eq!(runc.container_id, Some("ctr".into()));
    let runc = super::scan(
        &argv("--systemd-cgroup --rootless false --criu /usr/sbin/criu restore -image-path /img -bundle=/b -d id"),
        Dialect::Runc,
    );
    assert_eq!(runc.problem, None);
    assert_eq!(runc.creating, Some(Creating::Restore));
    assert_eq!(runc.bundle, Some(PathBuf::from("/b")));
    assert_eq!(runc.container_id, Some("id".into()));
    let crun = super::scan(
        &argv("--debug --systemd-cgroup --cgroup-manager disabled --log-f=json --log /l --root /r run -d -b /bundle ctr"),
        Dialect::Crun,
    );
    assert_eq!(crun.problem, None, "{crun:?}");
    assert_eq!(crun.root, Some("/r".into()));
    assert_eq!(crun.log_format, LogFormat::Json);
    assert!(crun.debug);
    assert_eq!(crun.bundle, Some(PathBuf::from("/bundle")));
    assert_eq!(crun.container_id, Some("ctr".into()));
}

#[test]
fn the_log_file_is_known_even_when_refused() {
    for d in DIALECTS {
        let inv = super::scan(&argv("--log /l --log-format json create --frob id"), d);
        assert!(inv.problem.is_some(), "{d:?}");
        assert_eq!(inv.log_file, Some(PathBuf::from("/l")), "{d:?}");
        assert_eq!(inv.log_format, LogFormat::Json, "{d:?}");
    }
}

#[test]
fn refusals_name_the_argument_on_one_line() {
    let inv = super::scan(
        &[
            OsString::from("create"),
            OsString::from("--bu\nnd"),
            OsString::from("id"),
        ],
        Dialect::Crun,
    );
    let p = inv.problem.unwrap();
    assert_eq!(p.shown_arg(), "--bu\\nnd");
    assert!(!p.reason.contains('\n'));
}

#[test]
fn containerd_shim_shape() {
    let inv = scan(&argv(include_str!("../../tests/fixtures/ctr-default.argv")));
    assert_eq!(inv.creating, Some(Creating::Create));
    assert_eq!(inv.bundle, Some(PathBuf::from("BUNDLE")));
    assert_eq!(inv.log_file, Some(PathBuf::from("BUNDLE/log.json")));
    assert_eq!(inv.log_format, LogFormat::Json);
    assert_eq!(inv.container_id, Some("CONTAINER_ID".into()));
}

#[test]
fn podman_shape() {
    let inv = scan(&argv(include_str!(
        "../../tests/fixtures/podman-default.argv"
    )));
    assert_eq!(inv.creating, Some(Creating::Create));
    assert_eq!(
        inv.bundle,
        Some(PathBuf::from(
            "/var/lib/containers/storage/overlay-containers/ID/userdata"
        ))
    );
    assert_eq!(inv.log_file, None);
    assert_eq!(inv.container_id, Some("CONTAINER_ID".into()));
}

#[test]
fn conmon_equals_forms() {
    let inv = scan(&argv(
        "--root=/run/runc --log=/x/log --log-format=json create --bundle=/b --pid-file /p --no-pivot id1",
    ));
    assert_eq!(inv.creating, Some(Creating::Create));
    assert_eq!(inv.bundle, Some(PathBuf::from("/b")));
    assert_eq!(inv.log_file, Some(PathBuf::from("/x/log")));
    assert_eq!(inv.log_format, LogFormat::Json);
    assert_eq!(inv.container_id, Some("id1".into()));
}

#[test]
fn bundle_defaults_to_working_directory() {
    let inv = scan(&argv("create --pid-file p myid"));
    assert_eq!(inv.creating, Some(Creating::Create));
    assert_eq!(inv.bundle, None);
    assert_eq!(inv.container_id, Some("myid".into()));
}

#[test]
fn other_subcommands_pass_through() {
    for s in [
        "state x",
        "--root /r kill x KILL",
        "features",
        "--version",
        "-v",
        "--help",
        "",
        "frobnicate --bundle /b",
        "--log",
    ] {
        let inv = scan(&argv(s));
        assert_eq!(inv.creating, None, "{s}");
        assert_eq!(inv.bundle, None, "{s}");
    }
}

#[test]
fn delete_finds_the_id() {
    let inv = scan(&argv("--root /r delete --force c9"));
    assert_eq!(inv.container_id, Some("c9".into()));
    assert_eq!(inv.root, Some("/r".into()));
    assert_eq!(scan(&argv("delete -f c8")).container_id, Some("c8".into()));
    // start: the records of that id are bound.
    assert_eq!(
        scan(&argv("--root /r start c7")).container_id,
        Some("c7".into())
    );
}

#[test]
fn non_utf8_survives() {
    use std::os::unix::ffi::OsStringExt;
    let args = vec![
        OsString::from("create"),
        OsString::from("--bundle"),
        OsString::from_vec(b"/b\xff\n dir".to_vec()),
        OsString::from("id"),
    ];
    let inv = scan(&args);
    assert_eq!(inv.bundle.unwrap().as_os_str().as_bytes(), b"/b\xff\n dir");
}

#[test]
fn only_some_words_need_a_reading() {
    for a in [
        "state id",
        "--root /r kill id KILL",
        "features",
        "--version",
        "",
    ] {
        assert!(!may_act_on(&argv(a)), "{a}");
        for d in DIALECTS {
            let inv = super::scan(&argv(a), d);
            assert!(inv.creating.is_none() && inv.exec.is_none(), "{a}");
        }
    }
    for a in [
        "--roo /r create id",
        "exec c1 sh",
        "delete c1",
        "--x run",
        "restore",
    ] {
        assert!(may_act_on(&argv(a)), "{a}");
    }
}

#[test]
fn a_long_command_line_is_read() {
    let mut args: Vec<OsString> = (0..100_000).map(|_| OsString::from("--debug")).collect();
    args.extend(argv("create"));
    args.extend((0..100_000).map(|_| OsString::from("--no-pivot")));
    args.extend(argv("--bundle /b id"));
    // How long it takes is bench/'s business, never a test's.
    for d in DIALECTS {
        let inv = super::scan(&args, d);
        assert_eq!(inv.problem, None, "{d:?}");
        assert_eq!(inv.bundle, Some(PathBuf::from("/b")), "{d:?}");
    }
}

/// Every command line of up to four words from a vocabulary of the tricky
/// ones: no dialect panics; a refusal names one of the words; and what the
/// strict reading accepts, runc and crun both read the same way.
#[test]
fn small_command_lines_exhaustively() {
    let vocab = [
        "create",
        "run",
        "restore",
        "id",
        "--bundle",
        "-b",
        "--bund",
        "-b/x",
        "-f",
        "--root",
        "--rootless",
        "--",
        "-",
        "--help",
        "-d",
        "--debug=false",
    ];
    let mut n = 0;
    let mut words: Vec<OsString> = Vec::new();
    fn each(vocab: &[&str], words: &mut Vec<OsString>, depth: usize, n: &mut usize) {
        check_line(words);
        *n += 1;
        if depth == 4 {
            return;
        }
        for v in vocab {
            words.push(OsString::from(v));
            each(vocab, words, depth + 1, n);
            words.pop();
        }
    }
    fn check_line(args: &[OsString]) {
        let [runc, crun, strict] = DIALECTS.map(|d| super::scan(args, d));
        for inv in [&runc, &crun, &strict] {
            if let Some(p) = &inv.problem {
                assert!(args.contains(&p.arg), "{args:?}: {p:?}");
            }
        }
        if strict.creating.is_some() && strict.problem.is_none() {
            for other in [&runc, &crun] {
                assert_eq!(other.problem, None, "{args:?}");
                assert_eq!(
                    (
                        other.creating,
                        &other.bundle,
                        &other.config_file,
                        &other.root,
                        &other.container_id
                    ),
                    (
                        strict.creating,
                        &strict.bundle,
                        &strict.config_file,
                        &strict.root,
                        &strict.container_id
                    ),
                    "{args:?}"
                );
            }
        }
        // Whatever may create under one runtime may create under the
        // strict reading: it is refused or read, never passed through.
        if runc.creating.is_some() || crun.creating.is_some() {
            assert!(strict.creating.is_some(), "{args:?}");
        }
    }
    each(&vocab, &mut words, 0, &mut n);
    assert!(n > 60_000);
}

/// The words in the order runc 1.1's and runc 1.2+'s urfave/cli hand them
/// to Go's parser, for `create` (traced by hand through `reorderArgs` of
/// v1.22.1 and v1.22.17).
#[test]
fn urfave_reorders_before_and_after_1_22_14() {
    let order = |line: &str, known: bool| -> String {
        let args = argv(line);
        let words: Vec<Word<'_>> = args
            .iter()
            .enumerate()
            .map(|(i, a)| (i, a.as_os_str()))
            .collect();
        let out = if known {
            grammar::urfave_reorder_known(&words, tables::RUNC_CREATE)
        } else {
            grammar::urfave_reorder(&words)
        };
        out.iter()
            .map(|(_, w)| w.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let cases = [
        // (line, runc 1.1, runc 1.2 and later)
        ("id --bundle /b", "--bundle /b id", "--bundle /b id"),
        // An unknown option after a value option is its value for 1.2+,
        // an option (taking the next word along) for 1.1.
        (
            "--pid-file -p id --bundle /b",
            "--pid-file -p id --bundle /b",
            "--pid-file -p --bundle /b id",
        ),
        // `--` where a value may stand is that value for 1.2+ only.
        ("id --bundle -- x", "--bundle id -- x", "--bundle -- id x"),
        // A `--` that ends the options moves before what stayed behind.
        (
            "id --bundle /b --",
            "--bundle /b id --",
            "--bundle /b -- id",
        ),
        // An unknown option stays where it is for 1.2+.
        ("id --nope", "--nope id", "id --nope"),
        ("---bundle=/b id", "---bundle=/b id", "---bundle=/b id"),
        ("--no-pivot -- id", "--no-pivot -- id", "--no-pivot -- id"),
    ];
    for (line, old, new) in cases {
        assert_eq!(order(line, false), old, "runc 1.1: `{line}`");
        assert_eq!(order(line, true), new, "runc 1.2+: `{line}`");
    }
}

/// runc 1.2 added `--pidfd-socket` (create, run, exec), runc 1.4 dropped
/// the global `--criu`: the runc dialect reads both, as the version that
/// has them does (the other refuses them itself). A command line the two
/// ways of reordering read differently, or that one accepts and the other
/// refuses, is refused.
#[test]
fn runc_versions_read_alike_or_refused() {
    let b = Some("/b");
    let cases: [(&str, [Want; 3]); 8] = [
        (
            "--root /r create --bundle /b --pidfd-socket /s id",
            [
                Reads(b, None, Some("/r"), "id"),
                Refuses("--pidfd-socket", "not a `create` option of crun"),
                Refuses("--pidfd-socket", "not a `create` option of crun"),
            ],
        ),
        (
            "run --pidfd-socket=/s -d --bundle /b id",
            [
                Reads(b, None, None, "id"),
                Refuses("--pidfd-socket=/s", C),
                Refuses("--pidfd-socket=/s", "crun"),
            ],
        ),
        (
            "--criu /c create --bundle /b id",
            [
                Reads(b, None, None, "id"),
                Refuses("--criu", C),
                Refuses("--criu", "crun"),
            ],
        ),
        (
            "create --pid-file -p id --bundle /b",
            [
                Refuses("--bundle", "(while runc 1.2 or later accepts it)"),
                Refuses("--bundle", C),
                Refuses("--bundle", "runc 1.2 or later accepts it"),
            ],
        ),
        (
            "create id --bundle -- x",
            [
                Refuses("x", "runc 1.2 or later would refuse this command line (while runc 1.1 accepts it)"),
                Refuses("--bundle", C),
                Refuses("x", "runc 1.1 accepts it"),
            ],
        ),
        (
            "create id --bundle /b --",
            [
                Refuses("--", "runc 1.1 would refuse this command line (while runc 1.2 or later accepts it)"),
                Refuses("--bundle", C),
                Refuses("--", "runc 1.2 or later accepts it"),
            ],
        ),
        // Both take the id along as the socket's path.
        (
            "create id --pidfd-socket",
            [
                Refuses("create", "no container id"),
                Refuses("--pidfd-socket", C),
                Refuses("create", "no container id"),
            ],
        ),
        // containerd's shim with go-runc's PidfdSocket set.
        (
            "--root /r --log /b/log.json --log-format json create --bundle /b --pid-file /b/init.pid --pidfd-socket /t/pidfd.sock id",
            [
                Reads(b, None, Some("/r"), "id"),
                Refuses("--pidfd-socket", C),
                Refuses("--pidfd-socket", "crun"),
            ],
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .flat_map(|(line, wants)| {
            DIALECTS
                .iter()
                .zip(wants)
                .filter_map(|(&d, &w)| check(line, d, w))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
