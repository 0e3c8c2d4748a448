//! Fail closed on capability names as the runtimes read them, and on exec
//! by any spelling of the container, judged by what the container saw:
//! the five capability sets of the container's init and of the exec'd
//! process, from /proc/self/status, on the real runc and crun.
//!
//! - Names crun's libcap reads as network capabilities (`CAP_NET_RAW1`,
//!   `cap_net_admin-x`, `014`, `0xd`, generated variants) in the spec, in
//!   an exec process file and in `exec --cap` reach no set; a name no
//!   runtime reads is refused.
//! - An exec by another spelling of `--root` (trailing or doubled slash, a
//!   symbolic link, the default given explicitly) or, under crun, of the
//!   id (`./ID`, `ID/`, `../ROOT/ID`) is recognised as going into the
//!   converted container.

mod common;

use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::Path;

use common::{Bundle, Cli, ContainerGuard, Outcome, Runtime, Sandbox};
use serde_json::{json, Value};

const SETS: [&str; 5] = ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"];
const STATUS: [&str; 3] = ["/bin/grep", "^Cap", "/proc/self/status"];

/// The five capability sets a process printed (`grep ^Cap /proc/self/status`).
fn sets_of(out: &Outcome) -> Vec<(&'static str, u64)> {
    out.assert_success();
    SETS.iter()
        .map(|set| {
            let hex = out
                .stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{set}:")))
                .unwrap_or_else(|| panic!("no {set} line\n{}", out.describe()));
            (*set, u64::from_str_radix(hex.trim(), 16).unwrap())
        })
        .collect()
}

/// No network capability in any set; CAP_KILL (5) still bounded.
fn assert_no_network_capability(out: &Outcome, what: &str) {
    let sets = sets_of(out);
    for (set, mask) in &sets {
        let net: Vec<u32> = common::NET_CAP_BITS
            .iter()
            .copied()
            .filter(|b| common::has_cap_bit(*mask, *b))
            .collect();
        assert!(
            net.is_empty(),
            "{what}: {set} {mask:016x} has {net:?}\n{}",
            out.describe()
        );
    }
    let bnd = sets.iter().find(|(s, _)| *s == "CapBnd").unwrap().1;
    assert!(
        common::has_cap_bit(bnd, 5),
        "{what}: CAP_KILL lost: {bnd:016x}"
    );
}

/// Spellings of the four network capabilities that crun's libcap (or
/// youki) reads, the examples and generated ones: every case
/// mix of the names with a tail libcap ignores, and the numbers 10 to 13
/// in decimal, octal and hex with a tail.
fn network_spellings(seed: u64) -> Vec<String> {
    let mut names: Vec<String> = [
        "CAP_NET_RAW1",
        "cap_net_admin-x",
        "014",
        "0xd",
        "NET_BIND_SERVICE",
    ]
    .map(String::from)
    .to_vec();
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let bases = ["net_bind_service", "net_broadcast", "net_admin", "net_raw"];
    // A NUL is refused by the strict reader before any rule runs.
    let tails = ["", "1", "-x", ".", " ", "é", "9", "+e"];
    for (i, base) in bases.iter().enumerate() {
        let word: String = format!("cap_{base}")
            .chars()
            .map(|c| {
                if next() % 2 == 0 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect();
        names.push(format!(
            "{word}{}",
            tails[(next() % tails.len() as u64) as usize]
        ));
        let n = 10 + i as u32;
        let number = match next() % 3 {
            0 => format!("{n}"),
            1 => format!("0{n:o}"),
            _ => format!("0x{n:x}"),
        };
        names.push(format!(
            "{number}{}",
            ["", "z", " ", "_"][(next() % 4) as usize]
        ));
    }
    names
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn with_caps(names: &[String]) -> Value {
    let mut list = vec![json!("CAP_KILL")];
    list.extend(names.iter().map(|n| json!(n)));
    let list = Value::Array(list);
    json!({
        "bounding": list, "effective": list, "permitted": list,
        "inheritable": list, "ambient": list
    })
}

/// The spec asks for network capabilities under crun's spellings: the
/// container's init has none in any set.
fn spec_spellings_reach_no_set(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&STATUS);
    let names = network_spellings(seed());
    bundle.edit(|s| s["process"]["capabilities"] = with_caps(&names));
    let id = common::unique_id("fc-spec");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
    assert_no_network_capability(&out, &format!("spec {names:?}"));
}

/// A name no runtime reads as a capability, unless it is a plain name
/// with no `NET` in it, is refused, naming the field and the name; nothing
/// runs, config.json is left as it was. A plain one goes to the runtime,
/// which decides (runc 1.2 and later ignore it; runc 1.1, crun and youki
/// refuse the container): nothing of it reaches a set either way.
fn an_unknown_name_in_the_spec_is_refused(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&STATUS);
    bundle
        .edit(|s| s["process"]["capabilities"]["bounding"] = json!(["CAP_KILL", "CAP_FROBNICATE"]));
    let id = common::unique_id("fc-plain");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
    assert!(
        !out.stderr.contains("userns-hostnet-runtime: refused"),
        "a plain unknown name is the runtime's to judge\n{}",
        out.describe()
    );
    if out.success() {
        assert_no_network_capability(&out, "CAP_FROBNICATE");
    }
    for name in ["64", " CAP_NET_RAW", "+13", "CAP_NETFROB", "0x40"] {
        bundle.edit(|s| s["process"]["capabilities"]["bounding"] = json!(["CAP_KILL", name]));
        let before = fs::read(bundle.config_path()).unwrap();
        let id = common::unique_id("fc-unknown");
        let _guard = ContainerGuard::new(&sandbox, &id);
        let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
        assert_eq!(out.code(), Some(1), "{}", out.describe());
        let want = format!(
            "userns-hostnet-runtime: refused: capabilities: process.capabilities.bounding: {name:?}: not a capability runc, crun (libcap) or youki reads"
        );
        assert!(out.stderr.contains(&want), "{want}\n{}", out.describe());
        assert_eq!(fs::read(bundle.config_path()).unwrap(), before);
    }
}

/// A spec with no capability sets (the member missing, or null): runc 1.2
/// and later then keep every capability runc has, network ones included;
/// runc 1.1 and crun give none. Through the wrapper the container's init
/// has none in any set on each runtime; runc 1.4.3 and 1.5.3 alone keep NET_RAW.
fn a_spec_without_capability_sets_gets_none(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    for missing in [None, Some(Value::Null), Some(json!({}))] {
        // `{}`: an object of no set, which every runtime reads as empty sets.
        let absent = !matches!(&missing, Some(Value::Object(_)));
        let bundle = Bundle::userns_hostnet(&STATUS);
        bundle.edit(|s| {
            let process = s["process"].as_object_mut().unwrap();
            match &missing {
                None => {
                    process.shift_remove("capabilities");
                }
                Some(v) => {
                    process.insert("capabilities".into(), v.clone());
                }
            }
        });
        let what = format!("capabilities {missing:?} on {}", runtime.name());
        if runtime.is_runc_13_or_later() && absent {
            let id = common::unique_id("fc-nocaps-base");
            let _guard = ContainerGuard::new(&sandbox, &id);
            let base = Bundle::userns_hostnet(&STATUS);
            base.edit(|s| {
                s["process"] = bundle.spec()["process"].clone();
                for m in s["mounts"].as_array_mut().unwrap() {
                    if m["destination"] == "/sys" {
                        *m = json!({"destination": "/sys", "type": "bind", "source": "/sys",
                                    "options": ["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"]});
                    }
                }
            });
            let out = common::run_probe(&sandbox.real(), &base, &id);
            let bnd = sets_of(&out)
                .iter()
                .find(|(s, _)| *s == "CapBnd")
                .unwrap()
                .1;
            assert!(
                common::has_cap_bit(bnd, 13),
                "{what}: {} alone was expected to keep NET_RAW: {bnd:016x}",
                runtime.name()
            );
        }
        let id = common::unique_id("fc-nocaps");
        let _guard = ContainerGuard::new(&sandbox, &id);
        let out = common::run_probe(&sandbox.wrapper(), &bundle, &id);
        for (set, mask) in sets_of(&out) {
            assert_eq!(mask, 0, "{what}: {set} {mask:016x}\n{}", out.describe());
        }
        if absent {
            assert_eq!(
                bundle.spec()["process"]["capabilities"],
                json!({"bounding": [], "effective": [], "inheritable": [], "permitted": [], "ambient": []}),
                "{what}: written explicitly"
            );
        }
    }
}

fn create_started(cli: &Cli, root: &Path, bundle: &Bundle, id: &str) {
    cli.raw(&[
        OsStr::new("--root"),
        root.as_os_str(),
        OsStr::new("create"),
        OsStr::new("--bundle"),
        bundle.dir().as_os_str(),
        OsStr::new(id),
    ])
    .assert_success();
    cli.raw(&[
        OsStr::new("--root"),
        root.as_os_str(),
        OsStr::new("start"),
        OsStr::new(id),
    ])
    .assert_success();
}

/// exec's process file and `--cap` under crun's spellings: the exec'd
/// process has no network capability.
fn exec_spellings_reach_no_set(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("fc-exec");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let wrapper = sandbox.wrapper();
    create_started(&wrapper, &sandbox.root(), &bundle, &id);

    let names = network_spellings(seed());
    let process = sandbox.path().join("process.json");
    let doc = json!({
        "user": {"uid": 0, "gid": 0},
        "args": STATUS,
        "env": ["PATH=/bin"],
        "cwd": "/",
        "capabilities": with_caps(&names),
    });
    fs::write(&process, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = wrapper.run(&["exec", "--process", process.to_str().unwrap(), &id]);
    assert_no_network_capability(&out, &format!("exec --process {names:?}"));

    // --cap takes what argv can hold: no NUL.
    let mut args: Vec<String> = vec!["exec".into(), "--cap".into(), "CAP_KILL".into()];
    for n in names.iter().filter(|n| !n.contains('\u{0}')) {
        args.push("--cap".into());
        args.push(n.clone());
    }
    args.push(id.clone());
    args.extend(STATUS.map(String::from));
    let out = wrapper.run(&args);
    assert_no_network_capability(&out, &format!("exec --cap {names:?}"));

    let out = wrapper.run(&["exec", "--cap", "0x40", &id, "/bin/true"]);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert!(
        out.stderr
            .contains("refused: capabilities: exec --cap: \"0x40\": not a capability"),
        "{}",
        out.describe()
    );
}

/// The spellings of `--root` and of the id by which an exec reaches the
/// container, for this runtime.
fn exec_spellings(runtime: Runtime, root: &Path, id: &str, link: &Path) -> Vec<(OsString, String)> {
    let r = root.to_str().unwrap();
    let mut v: Vec<(OsString, String)> = vec![
        (format!("{r}/").into(), id.into()),
        (format!("/{r}").into(), id.into()),
        (r.replacen('/', "//", 2).into(), id.into()),
        (format!("{r}/.").into(), id.into()),
        (link.as_os_str().to_owned(), id.into()),
        (format!("{}/", link.display()).into(), id.into()),
    ];
    // crun 1.8.1 joins the id to the root as a path (youki 0.7 and crun
    // 1.27.1 refuse a `/`).
    if runtime == Runtime::Crun {
        let base = root.file_name().unwrap().to_str().unwrap();
        v.extend([
            (r.into(), format!("./{id}")),
            (r.into(), format!("{id}/")),
            (r.into(), format!("/{id}")),
            (r.into(), format!("../{base}/{id}")),
            (format!("{r}/").into(), format!(".//{id}//")),
        ]);
    }
    v
}

/// Every spelling finds the converted container: the exec'd process asks
/// for NET_RAW and NET_ADMIN with `--cap` and gets neither.
fn exec_by_any_spelling_is_recognised(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("fc-spell");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let wrapper = sandbox.wrapper();
    let root = sandbox.root();
    create_started(&wrapper, &root, &bundle, &id);
    let link = sandbox.path().join("root-link");
    std::os::unix::fs::symlink(&root, &link).unwrap();

    // The baseline: the real runtime grants what --cap asks for.
    let direct = sets_of(&sandbox.real().run(&[
        "exec",
        "--cap",
        "CAP_NET_RAW",
        "--cap",
        "CAP_KILL",
        &id,
        STATUS[0],
        STATUS[1],
        STATUS[2],
    ]));
    assert!(
        common::has_cap_bit(direct[3].1, 13),
        "baseline CapBnd {:016x}",
        direct[3].1
    );

    for (root_arg, id_arg) in exec_spellings(runtime, &root, &id, &link) {
        let mut argv: Vec<OsString> = vec!["--root".into(), root_arg.clone(), "exec".into()];
        for cap in ["CAP_NET_RAW", "CAP_NET_ADMIN", "CAP_KILL"] {
            argv.extend(["--cap".into(), cap.into()]);
        }
        argv.push(id_arg.clone().into());
        argv.extend(STATUS.map(OsString::from));
        let out = wrapper.raw(&argv);
        assert_no_network_capability(&out, &format!("--root {root_arg:?} exec {id_arg:?}"));
    }
}

/// Created without `--root` (the runtime's default state directory), exec'd
/// with the default given explicitly, and the other way round.
fn exec_with_the_default_root_spelled_out(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/sleep", "1000"]);
    let id = common::unique_id("fc-default");
    let default = match runtime {
        Runtime::Crun | Runtime::Crun127 => "/run/crun",
        _ => "/run/runc",
    };
    let wrapper = sandbox.wrapper();
    let _guard = DefaultRootGuard {
        cli: sandbox.real(),
        id: id.clone(),
    };
    wrapper
        .raw(&[
            OsStr::new("create"),
            OsStr::new("--bundle"),
            bundle.dir().as_os_str(),
            OsStr::new(&id),
        ])
        .assert_success();
    wrapper.raw(&["start", &id]).assert_success();
    for root in [Some(default.to_owned()), Some(format!("{default}/")), None] {
        let mut argv: Vec<String> = Vec::new();
        if let Some(r) = &root {
            argv.extend(["--root".into(), r.clone()]);
        }
        argv.extend(["exec", "--cap", "CAP_NET_RAW", "--cap", "CAP_KILL", &id].map(String::from));
        argv.extend(STATUS.map(String::from));
        let out = wrapper.raw(&argv);
        assert_no_network_capability(&out, &format!("exec with --root {root:?}"));
    }
}

/// Removes a container made in the runtime's default state directory.
struct DefaultRootGuard {
    cli: Cli,
    id: String,
}

impl Drop for DefaultRootGuard {
    fn drop(&mut self) {
        let _ = self.cli.raw(&["delete", "--force", &self.id]);
        let _ = self.cli.raw(&["delete", "-f", &self.id]);
    }
}

/// Under crun, a create whose id is a path is refused for a converted
/// container: exec could reach it by other spellings.
fn a_path_as_id_at_create_is_refused(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    let id = common::unique_id("fc-pathid");
    let _guard = ContainerGuard::new(&sandbox, &id);
    let out = sandbox.wrapper().run(&[
        OsStr::new("create"),
        OsStr::new("--bundle"),
        bundle.dir().as_os_str(),
        OsStr::new(&format!("./{id}")),
    ]);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert!(
        out.stderr
            .contains("refused: create: container id: container id \"./"),
        "{}",
        out.describe()
    );
}

mod runc_1_4 {
    #[test]
    fn a_spec_without_capability_sets_gets_none() {
        super::a_spec_without_capability_sets_gets_none(crate::common::Runtime::Runc14);
    }
}

mod runc_1_5 {
    #[test]
    fn a_spec_without_capability_sets_gets_none() {
        super::a_spec_without_capability_sets_gets_none(crate::common::Runtime::Runc15);
    }
    #[test]
    fn spec_spellings_reach_no_set() {
        super::spec_spellings_reach_no_set(crate::common::Runtime::Runc15);
    }
    #[test]
    fn an_unknown_name_in_the_spec_is_refused() {
        super::an_unknown_name_in_the_spec_is_refused(crate::common::Runtime::Runc15);
    }
    #[test]
    fn exec_spellings_reach_no_set() {
        super::exec_spellings_reach_no_set(crate::common::Runtime::Runc15);
    }
    #[test]
    fn exec_by_any_spelling_is_recognised() {
        super::exec_by_any_spelling_is_recognised(crate::common::Runtime::Runc15);
    }
    #[test]
    fn exec_with_the_default_root_spelled_out() {
        super::exec_with_the_default_root_spelled_out(crate::common::Runtime::Runc15);
    }
}

mod crun_1_27 {
    #[test]
    fn a_spec_without_capability_sets_gets_none() {
        super::a_spec_without_capability_sets_gets_none(crate::common::Runtime::Crun127);
    }
    #[test]
    fn spec_spellings_reach_no_set() {
        super::spec_spellings_reach_no_set(crate::common::Runtime::Crun127);
    }
    #[test]
    fn an_unknown_name_in_the_spec_is_refused() {
        super::an_unknown_name_in_the_spec_is_refused(crate::common::Runtime::Crun127);
    }
    #[test]
    fn exec_spellings_reach_no_set() {
        super::exec_spellings_reach_no_set(crate::common::Runtime::Crun127);
    }
    #[test]
    fn exec_by_any_spelling_is_recognised() {
        super::exec_by_any_spelling_is_recognised(crate::common::Runtime::Crun127);
    }
    #[test]
    fn exec_with_the_default_root_spelled_out() {
        super::exec_with_the_default_root_spelled_out(crate::common::Runtime::Crun127);
    }
    #[test]
    fn a_path_as_id_at_create_is_refused() {
        super::a_path_as_id_at_create_is_refused(crate::common::Runtime::Crun127);
    }
}

mod runc {
    #[test]
    fn a_spec_without_capability_sets_gets_none() {
        super::a_spec_without_capability_sets_gets_none(crate::common::Runtime::Runc);
    }
    #[test]
    fn spec_spellings_reach_no_set() {
        super::spec_spellings_reach_no_set(crate::common::Runtime::Runc);
    }
    #[test]
    fn an_unknown_name_in_the_spec_is_refused() {
        super::an_unknown_name_in_the_spec_is_refused(crate::common::Runtime::Runc);
    }
    #[test]
    fn exec_spellings_reach_no_set() {
        super::exec_spellings_reach_no_set(crate::common::Runtime::Runc);
    }
    #[test]
    fn exec_by_any_spelling_is_recognised() {
        super::exec_by_any_spelling_is_recognised(crate::common::Runtime::Runc);
    }
    #[test]
    fn exec_with_the_default_root_spelled_out() {
        super::exec_with_the_default_root_spelled_out(crate::common::Runtime::Runc);
    }
}

mod crun {
    #[test]
    fn a_spec_without_capability_sets_gets_none() {
        super::a_spec_without_capability_sets_gets_none(crate::common::Runtime::Crun);
    }
    #[test]
    fn spec_spellings_reach_no_set() {
        super::spec_spellings_reach_no_set(crate::common::Runtime::Crun);
    }
    #[test]
    fn an_unknown_name_in_the_spec_is_refused() {
        super::an_unknown_name_in_the_spec_is_refused(crate::common::Runtime::Crun);
    }
    #[test]
    fn exec_spellings_reach_no_set() {
        super::exec_spellings_reach_no_set(crate::common::Runtime::Crun);
    }
    #[test]
    fn exec_by_any_spelling_is_recognised() {
        super::exec_by_any_spelling_is_recognised(crate::common::Runtime::Crun);
    }
    #[test]
    fn exec_with_the_default_root_spelled_out() {
        super::exec_with_the_default_root_spelled_out(crate::common::Runtime::Crun);
    }
    #[test]
    fn a_path_as_id_at_create_is_refused() {
        super::a_path_as_id_at_create_is_refused(crate::common::Runtime::Crun);
    }
}

mod youki {
    #[test]
    fn spec_spellings_reach_no_set() {
        super::spec_spellings_reach_no_set(crate::common::Runtime::Youki);
    }
    #[test]
    fn exec_by_any_spelling_is_recognised() {
        super::exec_by_any_spelling_is_recognised(crate::common::Runtime::Youki);
    }
}
