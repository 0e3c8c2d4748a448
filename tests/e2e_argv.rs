//! The command line as the real runtime reads it, with the real runc and
//! crun: every obfuscated form of create/run's argv (abbreviated long
//! options, `-bDIR`, `-f/--config FILE`, `--rootless DIR`, options after the
//! container id, one dash for a long option, ...) either runs a converted
//! container (every mount under its /sys read-only, the network
//! capabilities gone) or is refused with one exact line, the spec files
//! untouched and no container left. None runs unhardened.

mod common;

use common::{Bundle, ContainerGuard, Outcome, Probe, Runtime, Sandbox};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

/// The words of one form, with what it needs filled in.
struct Place<'a> {
    root: &'a Path,
    bundle: &'a Path,
    /// A spec file outside the bundle (crun's `-f FILE`).
    spec: &'a Path,
    id: &'a str,
}

/// What a form must come to with one runtime.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// The container ran, converted; `true`: from the spec file outside
    /// the bundle (config.json stays as it was).
    Converted { from_spec_file: bool },
    /// Refused: exit 1 and exactly this stderr line, with `{B}`, `{I}`,
    /// `{F}` standing for the bundle, the id and the spec file.
    Refused(&'static str),
    /// The runtime itself rejects the command line (its own words on
    /// stderr contain this): nothing ran; a spec file that changed is the
    /// converted spec.
    RuntimeFails(&'static str),
}
use Want::{Converted, Refused, RuntimeFails};

const CONVERTED: Want = Converted {
    from_spec_file: false,
};

type Words = fn(&Place<'_>) -> Vec<OsString>;

/// A form: its name, its words, and what runc and crun must make of it.
struct Form {
    name: &'static str,
    words: Words,
    runc: Want,
    crun: Want,
}

fn w(parts: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_os_string()).collect()
}

fn joined(a: &str, p: &Path) -> OsString {
    let mut s = OsString::from(a);
    s.push(p);
    s
}

fn forms() -> Vec<Form> {
    vec![
        Form {
            name: "--bundle DIR (what clients send)",
            words: |p| w(&[&"--root", &p.root, &"run", &"--bundle", &p.bundle, &p.id]),
            runc: CONVERTED,
            crun: CONVERTED,
        },
        Form {
            name: "--bund DIR",
            words: |p| w(&[&"--root", &p.root, &"run", &"--bund", &p.bundle, &p.id]),
            runc: Refused("argv: --bund: not a `run` option of runc; runc would refuse this command line"),
            crun: CONVERTED,
        },
        Form {
            name: "--bun=DIR",
            words: |p| w(&[&"--root", &p.root, &"run", &joined("--bun=", p.bundle), &p.id]),
            runc: Refused("argv: --bun={B}: not a `run` option of runc; runc would refuse this command line"),
            crun: CONVERTED,
        },
        Form {
            name: "-bDIR",
            words: |p| w(&[&"--root", &p.root, &"run", &joined("-b", p.bundle), &p.id]),
            runc: Refused("argv: -b{B}: not a `run` option of runc; runc would refuse this command line"),
            crun: CONVERTED,
        },
        Form {
            name: "--roo DIR",
            words: |p| w(&[&"--roo", &p.root, &"run", &"--bundle", &p.bundle, &p.id]),
            runc: Refused("argv: --roo: not a global option of runc; runc would refuse this command line"),
            // crun before 1.22 takes it for --root, crun 1.22 and later
            // refuse it as ambiguous: the wrapper cannot tell which.
            crun: Refused("argv: --roo: an abbreviation of more than one global option of crun (--root, --rootless); crun 1.22 or later would refuse this command line (while crun before 1.22 accepts it); the wrapper reads only what every crun version reads alike"),
        },
        Form {
            name: "--log-f json",
            words: |p| w(&[&"--root", &p.root, &"--log-f", &"json", &"run", &"--bundle", &p.bundle, &p.id]),
            runc: Refused("argv: --log-f: not a global option of runc; runc would refuse this command line"),
            crun: CONVERTED,
        },
        Form {
            name: "--cgroup-m disabled",
            words: |p| w(&[&"--root", &p.root, &"--cgroup-m", &"disabled", &"run", &"--bundle", &p.bundle, &p.id]),
            runc: Refused("argv: --cgroup-m: not a global option of runc; runc would refuse this command line"),
            crun: CONVERTED,
        },
        Form {
            // crun before 1.22 reads --rootless as its --root, crun 1.22 and
            // later ignore it: the container's state, and the wrapper's
            // record of it, would be in one place or the other.
            name: "--rootless DIR as the only state directory",
            words: |p| w(&[&"--rootless", &p.root, &"run", &"--bundle", &p.bundle, &p.id]),
            // runc takes the directory for its rootless mode, converts
            // nothing less, and fails on it: nothing runs.
            runc: RuntimeFails("ParseBool"),
            crun: Refused("argv: --rootless: crun before 1.22 and crun 1.22 or later read it differently (the state directory: crun before 1.22 \"{R}\", crun 1.22 or later nothing); the wrapper reads only what every crun version reads alike"),
        },
        Form {
            name: "--rootless false",
            words: |p| w(&[&"--rootless", &"false", &"--root", &p.root, &"run", &"--bundle", &p.bundle, &p.id]),
            runc: CONVERTED,
            // The last of --rootless and --root wins: the same directory.
            crun: CONVERTED,
        },
        Form {
            name: "-f FILE",
            words: |p| w(&[&"--root", &p.root, &"run", &"--bundle", &p.bundle, &"-f", &p.spec, &p.id]),
            runc: Refused("argv: -f: not a `run` option of runc; runc would refuse this command line"),
            crun: Converted {
                from_spec_file: true,
            },
        },
        Form {
            name: "--config FILE",
            words: |p| w(&[&"--root", &p.root, &"run", &"--config", &p.spec, &"--bundle", &p.bundle, &p.id]),
            runc: Refused("argv: --config: not a `run` option of runc; runc would refuse this command line"),
            crun: Converted {
                from_spec_file: true,
            },
        },
        Form {
            name: "--conf=FILE -bDIR",
            words: |p| {
                w(&[&"--root", &p.root, &"run", &joined("--conf=", p.spec), &joined("-b", p.bundle), &p.id])
            },
            runc: Refused("argv: --conf={F}: not a `run` option of runc; runc would refuse this command line"),
            crun: Converted {
                from_spec_file: true,
            },
        },
        Form {
            name: "-fFILE",
            words: |p| w(&[&"--root", &p.root, &"run", &joined("-f", p.spec), &"--bundle", &p.bundle, &p.id]),
            runc: Refused("argv: -f{F}: not a `run` option of runc; runc would refuse this command line"),
            crun: Converted {
                from_spec_file: true,
            },
        },
        Form {
            name: "options after the container id",
            words: |p| w(&[&"--root", &p.root, &"run", &p.id, &"--bundle", &p.bundle]),
            runc: CONVERTED,
            crun: Refused("argv: --bundle: after the container id {I}, where crun reads no options but one more argument; crun would refuse this command line"),
        },
        Form {
            name: "-bundle DIR (one dash)",
            words: |p| w(&[&"--root", &p.root, &"run", &"-bundle", &p.bundle, &p.id]),
            runc: CONVERTED,
            crun: Refused("argv: {I}: one argument too many after the container id {B}; crun would refuse this command line"),
        },
        Form {
            name: "-b=DIR",
            words: |p| w(&[&"--root", &p.root, &"run", &joined("-b=", p.bundle), &p.id]),
            runc: CONVERTED,
            // crun's bundle is "=DIR", a directory that does not exist.
            crun: RuntimeFails("realpath `="),
        },
        Form {
            name: "-b OTHER --bundle DIR",
            words: |p| w(&[&"--root", &p.root, &"run", &"-b", &"/nonexistent", &"--bundle", &p.bundle, &p.id]),
            runc: Refused("argv: --bundle: given both as -b and as --bundle; runc would refuse this command line"),
            crun: CONVERTED,
        },
        Form {
            name: "--debug=false",
            words: |p| w(&[&"--debug=false", &"--root", &p.root, &"run", &"--bundle", &p.bundle, &p.id]),
            runc: CONVERTED,
            crun: Refused("argv: --debug=false: takes no value; crun would refuse this command line"),
        },
        Form {
            name: "-- before the id",
            words: |p| w(&[&"--root", &p.root, &"run", &"--bundle", &p.bundle, &"--", &p.id]),
            runc: CONVERTED,
            crun: CONVERTED,
        },
        Form {
            name: "an unknown global option before run",
            words: |p| w(&[&"--root", &p.root, &"--frob", &"run", &"--bundle", &p.bundle, &p.id]),
            runc: Refused("argv: --frob: not a global option of runc; runc would refuse this command line"),
            crun: Refused("argv: --frob: not a global option of crun; crun would refuse this command line"),
        },
    ]
}

fn fill(template: &str, p: &Place<'_>) -> String {
    template
        .replace("{B}", &p.bundle.display().to_string())
        .replace("{R}", &p.root.display().to_string())
        .replace("{F}", &p.spec.display().to_string())
        .replace("{I}", p.id)
}

/// One form with one runtime: what is wrong, if anything.
fn try_form(sandbox: &Sandbox, form: &Form, want: Want, n: usize) -> Vec<String> {
    let runtime = sandbox.runtime;
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    // The spec file crun's -f names: the same container, outside the
    // bundle. config.json stays the plain runtime's spec: if the runtime
    // ran it instead, the probe would see a writable /sys.
    let spec_dir = tempfile::Builder::new()
        .prefix("uhn-argv-spec-")
        .tempdir()
        .unwrap();
    let spec = spec_dir.path().join("spec.json");
    fs::copy(bundle.config_path(), &spec).unwrap();
    let config_before = bundle.snapshot();
    let spec_before = common::FileSnapshot::of(&spec);
    let id = common::unique_id(&format!("argv{n}"));
    let _guard = ContainerGuard::new(sandbox, &id);
    let root = sandbox.root();
    let place = Place {
        root: &root,
        bundle: bundle.dir(),
        spec: &spec,
        id: &id,
    };
    let out: Outcome = sandbox.wrapper().raw(&(form.words)(&place));
    let what = format!("{} `{}`", runtime.name(), form.name);
    let mut bad = Vec::new();
    let lines: Vec<&str> = out.stderr.lines().collect();
    match want {
        Converted { from_spec_file } => {
            if !out.success() {
                bad.push(format!("{what}: did not run\n{}", out.describe()));
                return bad;
            }
            let probe = Probe::parse(&out.stdout);
            let view = std::panic::catch_unwind(|| {
                common::assert_converted_view(&probe, runtime.is_runc())
            });
            if view.is_err() {
                bad.push(format!("{what}: the container was not hardened"));
            }
            let (converted, untouched, untouched_snap) = if from_spec_file {
                (spec.clone(), bundle.config_path(), &config_before)
            } else {
                (bundle.config_path(), spec.clone(), &spec_before)
            };
            let doc: serde_json::Value =
                serde_json::from_slice(&fs::read(&converted).unwrap()).unwrap();
            if std::panic::catch_unwind(|| common::assert_converted_spec(&doc)).is_err() {
                bad.push(format!("{what}: {} is not converted", converted.display()));
            }
            if common::FileSnapshot::of(&untouched) != *untouched_snap {
                bad.push(format!("{what}: {} changed", untouched.display()));
            }
        }
        Refused(line) => {
            let line = format!("userns-hostnet-runtime: refused: {}", fill(line, &place));
            if out.code() != Some(1) || !out.stdout.is_empty() || lines != [line.as_str()] {
                bad.push(format!("{what}: want exactly `{line}`\n{}", out.describe()));
            }
        }
        RuntimeFails(words) => {
            if out.success() || !out.stderr.contains(words) || !out.stdout.is_empty() {
                bad.push(format!(
                    "{what}: want the runtime's own failure ({words})\n{}",
                    out.describe()
                ));
            }
        }
    }
    if !matches!(want, Converted { .. }) {
        for (path, before) in [
            (bundle.config_path(), &config_before),
            (spec.clone(), &spec_before),
        ] {
            if common::FileSnapshot::of(&path) == *before {
                continue;
            }
            let doc: serde_json::Value =
                serde_json::from_slice(&fs::read(&path).unwrap()).unwrap_or_default();
            let converted =
                std::panic::catch_unwind(|| common::assert_converted_spec(&doc)).is_ok();
            if matches!(want, Refused(_)) || !converted {
                bad.push(format!("{what}: {} changed", path.display()));
            }
        }
    }
    if sandbox.real().state(&id).is_some() {
        bad.push(format!("{what}: a container is left"));
    }
    bad
}

fn every_form(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let forms = forms();
    let mut bad = Vec::new();
    let mut refused = 0;
    for (n, form) in forms.iter().enumerate() {
        let want = match runtime {
            Runtime::Youki => {
                unreachable!("these are runc's and crun's rules; youki gets the strict reading")
            }
            Runtime::Runc | Runtime::Runc14 | Runtime::Runc15 => form.runc,
            Runtime::Crun | Runtime::Crun127 => form.crun,
        };
        refused += usize::from(matches!(want, Refused(_)));
        bad.extend(try_form(&sandbox, form, want, n));
    }
    assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n\n"));
    // Each refusal is in the decision log, as the argv rule.
    let logged = sandbox
        .decisions()
        .iter()
        .filter(|d| d["refused"]["rule"] == "argv")
        .count();
    assert_eq!(logged, refused, "argv refusals in the decision log");
    assert!(refused >= 3, "too few refusals to prove anything");
}

/// A refusal also goes to `--log` in runc's format, where containerd reads
/// it: the same line as on stderr.
fn refusal_goes_to_the_runtime_log(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    let snap = bundle.snapshot();
    let id = common::unique_id("argvlog");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let log = sandbox.path().join("runtime-log.json");
    // An option neither runtime knows, after the log options.
    let argv: Vec<OsString> = w(&[
        &"--root",
        &sandbox.root(),
        &"--log",
        &log,
        &"--log-format",
        &"json",
        &"create",
        &"--bundle",
        &bundle.dir(),
        &"--no-such-option",
        &id,
    ]);
    let out = sandbox.wrapper().raw(&argv);
    let rules = runtime.program_name();
    let line = format!(
        "userns-hostnet-runtime: refused: argv: --no-such-option: not a `create` option of {rules}; {rules} would refuse this command line"
    );
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert_eq!(out.stderr.lines().collect::<Vec<_>>(), [line.as_str()]);
    let text = fs::read_to_string(&log).expect("the runtime log was written");
    let entry: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(entry["level"], "error");
    assert_eq!(entry["msg"], line.as_str());
    snap.assert_unchanged(&bundle.config_path(), "refused argv");
    assert!(sandbox.real().state(&id).is_none());
}

/// crun's `-f FILE` relative to the working directory: crun resolves it
/// there before it enters the bundle, and so does the wrapper.
fn relative_spec_file(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    let dir = tempfile::Builder::new()
        .prefix("uhn-argv-cwd-")
        .tempdir()
        .unwrap();
    let spec: PathBuf = dir.path().join("spec.json");
    fs::copy(bundle.config_path(), &spec).unwrap();
    let snap = bundle.snapshot();
    let id = common::unique_id("argvrel");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let argv = w(&[
        &"--root",
        &sandbox.root(),
        &"run",
        &"--bundle",
        &bundle.dir(),
        &"--config",
        &"spec.json",
        &id,
    ]);
    let out = common::run_capture(sandbox.wrapper().raw_command(&argv).current_dir(dir.path()));
    match runtime {
        Runtime::Youki => {
            unreachable!("these are runc's and crun's rules; youki gets the strict reading")
        }
        Runtime::Crun | Runtime::Crun127 => {
            out.assert_success();
            common::assert_converted_view(&Probe::parse(&out.stdout), false);
            let doc: serde_json::Value = serde_json::from_slice(&fs::read(&spec).unwrap()).unwrap();
            common::assert_converted_spec(&doc);
            snap.assert_unchanged(&bundle.config_path(), "crun -f spec.json");
        }
        Runtime::Runc | Runtime::Runc14 | Runtime::Runc15 => {
            assert_eq!(
                out.stderr.lines().collect::<Vec<_>>(),
                ["userns-hostnet-runtime: refused: argv: --config: not a `run` option of runc; runc would refuse this command line"],
                "{}",
                out.describe()
            );
            snap.assert_unchanged(&bundle.config_path(), "runc --config");
        }
    }
    assert!(sandbox.real().state(&id).is_none());
}

fn cap_bnd(out: &Outcome) -> u64 {
    out.assert_success();
    let hex = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("CapBnd:"))
        .unwrap_or_else(|| panic!("no CapBnd line\n{}", out.describe()));
    u64::from_str_radix(hex.trim(), 16).unwrap()
}

/// The state directory as the runtime reads it keys the record of a
/// converted container: crun's `--root DIR` at create and `--root=DIR` at
/// exec, runc's `-root DIR` and `-root=DIR`, all name the same place,
/// so an exec's `--cap CAP_NET_RAW` still leaves the network capability
/// out (which the real runtime alone grants). exec's own options are read
/// as the runtime reads them too.
fn exec_finds_the_record_under_the_state_directory_as_read(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("argvexec");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let root = sandbox.root();
    let (create_root, exec_root): (Vec<OsString>, Vec<OsString>) = match runtime {
        Runtime::Youki => {
            unreachable!("these are runc's and crun's rules; youki gets the strict reading")
        }
        // `--rootless DIR` and `--roo DIR` are refused (crun 1.22 and later
        // read them otherwise than crun 1.8: every_form).
        Runtime::Crun | Runtime::Crun127 => {
            (w(&[&"--root", &root]), vec![joined("--root=", &root)])
        }
        Runtime::Runc | Runtime::Runc14 | Runtime::Runc15 => {
            (w(&[&"-root", &root]), vec![joined("-root=", &root)])
        }
    };
    let mut create = create_root;
    create.extend(w(&[&"create", &"--bundle", &bundle.dir(), &id]));
    sandbox.wrapper().raw(&create).assert_success();
    sandbox.wrapper().run(&["start", &id]).assert_success();
    assert!(
        userns_hostnet::records::Records::system()
            .lookup(&userns_hostnet::records::Target {
                runtime: match runtime {
                    Runtime::Crun | Runtime::Crun127 => userns_hostnet::runtime::Kind::Crun,
                    _ => userns_hostnet::runtime::Kind::Runc,
                },
                root: Some(root.as_os_str()),
                id: std::ffi::OsStr::new(&id),
            })
            .unwrap()
            .is_some(),
        "no record of the conversion under {}",
        root.display()
    );
    let exec_tail = w(&[
        &"exec",
        &"--cap",
        &"CAP_NET_RAW",
        &id,
        &"/bin/grep",
        &"CapBnd",
        &"/proc/self/status",
    ]);
    let mut exec = exec_root;
    exec.extend(exec_tail.iter().cloned());
    const NET_RAW: u32 = 13;
    let direct = cap_bnd(&sandbox.real().run(&exec_tail));
    assert!(
        common::has_cap_bit(direct, NET_RAW),
        "the real runtime alone grants CAP_NET_RAW: {direct:016x}"
    );
    let through = cap_bnd(&sandbox.wrapper().raw(&exec));
    assert!(
        !common::has_cap_bit(through, NET_RAW),
        "exec through the wrapper got CAP_NET_RAW back: {through:016x}"
    );
    if runtime.is_crun() {
        // crun before 1.22 takes `--rootless DIR` for its state directory,
        // crun 1.22 and later ignore it: the exec is refused, never passed
        // through with the capability (which crun 1.8 would grant).
        let mut ambiguous = w(&[&"--rootless", &root]);
        ambiguous.extend(exec_tail.iter().cloned());
        let out = sandbox.wrapper().raw(&ambiguous);
        assert!(
            !out.success()
                && out.stderr.contains(
                    "argv: --rootless: crun before 1.22 and crun 1.22 or later read it differently"
                ),
            "an exec with --rootless DIR was not refused: {out:?}"
        );
    }

    // `-process`: runc reads the process file FILE; crun reads `-p rocess`,
    // the file `rocess` in the working directory, and the next word as
    // the container. Either way the file the runtime reads loses the
    // network capabilities.
    let cwd = tempfile::Builder::new()
        .prefix("uhn-argv-exec-")
        .tempdir()
        .unwrap();
    let file = cwd.path().join("rocess");
    let caps = ["CAP_KILL", "CAP_NET_RAW"];
    let process = serde_json::json!({
        "user": {"uid": 0, "gid": 0},
        "args": ["/bin/grep", "CapBnd", "/proc/self/status"],
        "env": ["PATH=/bin"],
        "cwd": "/",
        "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
    });
    fs::write(&file, serde_json::to_vec(&process).unwrap()).unwrap();
    let argv = match runtime {
        Runtime::Youki => {
            unreachable!("these are runc's and crun's rules; youki gets the strict reading")
        }
        Runtime::Crun | Runtime::Crun127 => {
            w(&[&"--root", &root, &"exec", &"-process", &id, &"/bin/true"])
        }
        Runtime::Runc | Runtime::Runc14 | Runtime::Runc15 => {
            w(&[&"--root", &root, &"exec", &"-process", &file, &id])
        }
    };
    let out = common::run_capture(sandbox.wrapper().raw_command(&argv).current_dir(cwd.path()));
    let through = cap_bnd(&out);
    assert!(
        !common::has_cap_bit(through, NET_RAW),
        "exec -process got CAP_NET_RAW back: {through:016x}"
    );
    let rewritten: serde_json::Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    assert_eq!(
        rewritten["capabilities"]["bounding"],
        serde_json::json!(["CAP_KILL"])
    );

    // A network capability grouped with a switch cannot leave the argv
    // alone: refused for a converted container.
    let grouped = w(&[
        &"--root",
        &root,
        &"exec",
        &"-dcCAP_NET_RAW",
        &id,
        &"/bin/true",
    ]);
    let out = sandbox.wrapper().raw(&grouped);
    let line = match runtime {
        Runtime::Youki => unreachable!("these are runc's and crun's rules; youki gets the strict reading"),
        Runtime::Crun | Runtime::Crun127 => format!(
            "userns-hostnet-runtime: refused: exec: argv: -dcCAP_NET_RAW: a network capability grouped with other options, in an exec into {id}, a container it converted: it cannot leave the capability out alone"
        ),
        Runtime::Runc | Runtime::Runc14 | Runtime::Runc15 => format!(
            "userns-hostnet-runtime: refused: exec: argv: -dcCAP_NET_RAW: not an exec option this wrapper knows, in an exec into {id}, a container it converted: it cannot tell what the option adds to the process"
        ),
    };
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert_eq!(out.stderr.lines().collect::<Vec<_>>(), [line.as_str()]);

    sandbox
        .wrapper()
        .run(&["kill", &id, "KILL"])
        .assert_success();
    sandbox.real().wait_for_status(&id, "stopped");
    sandbox.wrapper().run(&["delete", &id]).assert_success();
}

/// `run --pidfd-socket SOCK` (runc 1.2 and later; containerd's go-runc
/// passes it when asked for a pidfd). runc 1.4.3 behind the wrapper runs
/// the container converted and sends its pidfd to the socket. runc 1.1.5
/// does not know the option and refuses the command line itself: the
/// wrapper read it as runc 1.4 does, and no container exists.
fn pidfd_socket(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    let id = common::unique_id("pidfd");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let sock = sandbox.path().join("pidfd.sock");
    // runc connects and sends: a bound socket queues it, nobody need accept.
    let listener = std::os::unix::net::UnixListener::bind(&sock).expect("bind the pidfd socket");
    let out = sandbox.wrapper().raw(&w(&[
        &"--root",
        &sandbox.root(),
        &"run",
        &"--pidfd-socket",
        &sock,
        &"--bundle",
        &bundle.dir(),
        &id,
    ]));
    match runtime {
        Runtime::Runc14 | Runtime::Runc15 => {
            out.assert_success();
            common::assert_converted_view(&Probe::parse(&out.stdout), true);
            common::assert_converted_spec(&bundle.spec());
            listener.set_nonblocking(true).unwrap();
            assert!(
                listener.accept().is_ok(),
                "{} never connected to the pidfd socket",
                runtime.name()
            );
        }
        _ => {
            assert!(
                !out.success()
                    && out
                        .stderr
                        .contains("flag provided but not defined: -pidfd-socket"),
                "runc 1.1.5 was expected to refuse --pidfd-socket itself\n{}",
                out.describe()
            );
            assert!(sandbox.real().state(&id).is_none(), "a container is left");
        }
    }
}

#[test]
fn pidfd_socket_runc_1_4() {
    pidfd_socket(Runtime::Runc14);
}

#[test]
fn pidfd_socket_runc_1_5() {
    pidfd_socket(Runtime::Runc15);
}

#[test]
fn pidfd_socket_runc_1_1() {
    pidfd_socket(Runtime::Runc);
}

common::for_runtimes!(
    runc_and_crun:
    every_form,
    refusal_goes_to_the_runtime_log,
    relative_spec_file,
    exec_finds_the_record_under_the_state_directory_as_read
);
