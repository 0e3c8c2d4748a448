use super::format::*;
use super::state::*;
use super::*;
use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;

fn t<'a>(runtime: Kind, root: &'a Path, id: &'a str) -> Target<'a> {
    Target {
        runtime,
        root: Some(root.as_os_str()),
        id: OsStr::new(id),
    }
}

fn me() -> Process {
    Process::current().unwrap()
}

/// A state file as each runtime writes it, naming `p` as the init.
fn write_state(runtime: Kind, root: &Path, id: &str, p: Process) {
    let dir = root.join(id);
    fs::create_dir_all(&dir).unwrap();
    let (name, text) = match runtime {
        Kind::Runc => (
            "state.json",
            format!(
                r#"{{"id":"{id}","init_process_pid":{},"init_process_start":{},"created":"2026-01-01T00:00:00Z","config":{{"rootfs":"/r"}}}}"#,
                p.pid, p.start
            ),
        ),
        Kind::Crun => (
            "status",
            format!(
                r#"{{"pid":{},"process-start-time":{},"cgroup-path":"","rootfs":"/r","systemd-cgroup":false,"bundle":"/b","created":"2026-01-01T00:00:00Z","detached":true}}"#,
                p.pid, p.start
            ),
        ),
        _ => (
            "state.json",
            format!(
                r#"{{"ociVersion":"1.0.2","id":"{id}","status":"running","pid":{},"bundle":"/b"}}"#,
                p.pid
            ),
        ),
    };
    fs::write(dir.join(name), text).unwrap();
}

/// A store in a temporary directory, and an empty state root beside it
/// (the directory goes when the first value is dropped).
fn store_and_root() -> (tempfile::TempDir, Records, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::new(dir.path().join("records"));
    let root = dir.path().join("state");
    fs::create_dir(&root).unwrap();
    (dir, r, root)
}

/// A process that has exited, as a record would name it.
fn gone() -> Process {
    let mut child = std::process::Command::new("sleep")
        .arg("100")
        .spawn()
        .unwrap();
    let p = Process::of(child.id() as i32).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    p
}

#[test]
fn start_time_of_a_stat_line() {
    let line = b"42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
    assert_eq!(start_time(line), Some(98765));
    let zombie = b"42 (x) Z 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
    assert_eq!(start_time(zombie), None);
    assert_eq!(start_time(b"42 (x) S 1"), None);
    assert_eq!(start_time(b"garbage"), None);
    assert!(me().alive());
    assert!(!gone().alive());
}

#[test]
fn the_current_format_reads_back() {
    let r = Record {
        policy: NetCapabilities::Refuse,
        stage: Stage::Pending {
            creator: Process {
                pid: 12,
                start: 345,
            },
        },
        runtime: Kind::Crun,
        root: Some(("fe00:1a".into(), PathBuf::from("/run/crun"))),
        id: OsString::from_vec(b"a\nb c".to_vec()),
    };
    let text = r.render();
    assert_eq!(
        std::str::from_utf8(&text).unwrap(),
        "userns-hostnet record 1\npolicy refuse\ncreator 12 345\nruntime crun\nroot fe00:1a 2f72756e2f6372756e\nid 610a622063\n"
    );
    assert_eq!(Record::parse(&text), Some(r.clone()));
    // As written on a node by this version.
    let bound = b"userns-hostnet record 1\npolicy drop\ninit 4321 99\nruntime runc\nroot 803:2 2f72756e2f72756e63\nid 6331\n";
    let b = Record::parse(bound).unwrap();
    assert_eq!(
        b.stage,
        Stage::Bound {
            init: Process {
                pid: 4321,
                start: 99
            }
        }
    );
    assert_eq!(
        (b.policy, b.runtime, b.id.as_os_str()),
        (NetCapabilities::Drop, Kind::Runc, OsStr::new("c1"))
    );
    assert_eq!(b.root, Some(("803:2".into(), PathBuf::from("/run/runc"))));
    // A later version's extra lines are skipped; a policy it names
    // that this one does not know reads as the default.
    let later =
        b"userns-hostnet record 2\npolicy audit\nnew thing\ninit 1 2\nruntime kata\nid 6331\n";
    let l = Record::parse(later).unwrap();
    assert_eq!(
        (l.policy, l.runtime, l.root),
        (NetCapabilities::Drop, Kind::Other, None)
    );
    for bad in [
        &b"drop"[..],
        b"userns-hostnet record 0\npolicy drop\ninit 1 2\nruntime runc\nid 61\n",
        b"userns-hostnet record 1\npolicy drop\nruntime runc\nid 61\n",
        b"userns-hostnet record 1\npolicy drop\ninit 1 2\nruntime runc\nid 6\n",
    ] {
        assert_eq!(
            Record::parse(bad),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn the_init_as_each_runtime_reads_its_state() {
    let runc = |s: &str| init_in_state(Kind::Runc, s.as_bytes());
    assert_eq!(
        runc(r#"{"init_process_pid":7,"init_process_start":8}"#),
        Ok(Some((7, Some(8))))
    );
    // Go leaves a missing or null start at zero, which no process has.
    assert_eq!(
        runc(r#"{"init_process_pid":7,"init_process_start":null}"#),
        Ok(Some((7, Some(0))))
    );
    assert_eq!(runc(r#"{"init_process_pid":0}"#), Ok(None));
    assert_eq!(runc(r#"{"init_process_pid":-3}"#), Ok(None));
    assert_eq!(runc(r#"{"id":"x"}"#), Ok(None));
    // What Go would read as the pid but the wrapper could misread.
    for bad in [
        r#"{"init_process_pid":7,"INIT_PROCESS_PID":9}"#,
        r#"{"Init_Process_Pid":7}"#,
        "{\"init_proce\u{17f}s_pid\":7}",
        r#"{"init_process_pid":7,"init_process_pid":9}"#,
        r#"{"init_process_pid":7.0}"#,
        r#"{"init_process_pid":"7"}"#,
        r#"{"init_process_pid":1e3}"#,
        r#"{"init_process_pid":99999999999}"#,
        r#"{"init_process_pid":7,"init_process_start":-1}"#,
        r#"[1]"#,
        r#"{"init_process_pid":7} trailing"#,
    ] {
        assert!(runc(bad).is_err(), "{bad}");
    }
    let crun = |s: &str| init_in_state(Kind::Crun, s.as_bytes());
    assert_eq!(
        crun(r#"{"pid":7,"process-start-time":8}"#),
        Ok(Some((7, Some(8))))
    );
    // crun's zero: not recorded; the live process's is used.
    assert_eq!(
        crun(r#"{"pid":7,"process-start-time":0}"#),
        Ok(Some((7, None)))
    );
    assert_eq!(crun(r#"{"pid":7}"#), Ok(Some((7, None))));
    // crun compares exactly: another case is another member.
    assert_eq!(crun(r#"{"pid":7,"PID":9}"#), Ok(Some((7, None))));
    assert!(crun(r#"{"pid":7,"pid":9}"#).is_err());
    let youki = |s: &str| init_in_state(Kind::Youki, s.as_bytes());
    assert_eq!(
        youki(r#"{"pid":7,"status":"running"}"#),
        Ok(Some((7, None)))
    );
    assert_eq!(youki(r#"{"pid":null}"#), Ok(None));
}

#[test]
fn an_exec_finds_the_container_through_any_entry_naming_its_init() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::new(dir.path().join("records"));
    for rt in [Kind::Runc, Kind::Crun, Kind::Youki] {
        let root = dir.path().join(format!("{rt:?}"));
        let c = t(rt, &root, "c1");
        assert_eq!(r.lookup(&c).unwrap(), None);
        r.mark(&c, NetCapabilities::Drop).unwrap();
        assert!(root.is_dir(), "the root is made as the runtime makes it");
        // Created: the runtime's state names the init (this process:
        // it started no later than the create's).
        write_state(rt, &root, "c1", me());
        assert_eq!(r.lookup(&c).unwrap(), Some(NetCapabilities::Drop), "{rt:?}");
        assert!(
            matches!(
                r.all()[..],
                [Record {
                    stage: Stage::Bound { .. },
                    ..
                }]
            ),
            "{:?}",
            r.all()
        );
        // A link to the directory, a copy elsewhere, a hard link.
        std::os::unix::fs::symlink("c1", root.join("alias")).unwrap();
        let other = dir.path().join(format!("{rt:?}-copy"));
        write_state(rt, &other, "copy", me());
        fs::create_dir(root.join("hard")).unwrap();
        for f in fs::read_dir(root.join("c1")).unwrap() {
            let f = f.unwrap();
            fs::hard_link(f.path(), root.join("hard").join(f.file_name())).unwrap();
        }
        for (at, id) in [
            (&root, "alias"),
            (&other, "copy"),
            (&root, "hard"),
            (&root, "c1"),
        ] {
            assert_eq!(
                r.lookup(&t(rt, at, id)).unwrap(),
                Some(NetCapabilities::Drop),
                "{rt:?} {id}"
            );
        }
        // The root spelled otherwise: the same state file.
        let spelled = |s: &str| PathBuf::from(format!("{}{s}", root.display()));
        std::os::unix::fs::symlink(&root, dir.path().join(format!("{rt:?}-link"))).unwrap();
        let link = dir.path().join(format!("{rt:?}-link"));
        for at in [spelled("/"), spelled("//"), spelled("/./"), link] {
            assert!(
                r.lookup(&t(rt, &at, "c1")).unwrap().is_some(),
                "{rt:?} {}",
                at.display()
            );
        }
        // Another init is another container.
        write_state(rt, &other, "else", Process::of(1).unwrap());
        assert_eq!(r.lookup(&t(rt, &other, "else")).unwrap(), None);
        fs::remove_file(r.bound().join(me().pid.to_string())).unwrap();
    }
}

#[test]
fn records_of_containers_that_are_gone_go() {
    let (_dir, r, root) = store_and_root();
    let key = dir_key(&root).unwrap();
    let pending = |id: &str, creator: Process| {
        let rec = Record {
            policy: NetCapabilities::Drop,
            stage: Stage::Pending { creator },
            runtime: Kind::Runc,
            root: Some((key.clone(), root.clone())),
            id: id.into(),
        };
        write_record(
            &r.pending()
                .join(format!("{}.{}", creator.pid, creator.start)),
            &rec,
        )
        .unwrap();
    };
    let dead = gone();
    // A create that failed: its process is gone, no container.
    pending("failed", dead);
    // One still running: its container is not there yet.
    pending("creating", me());
    // A bound record whose init has exited.
    let old = Record {
        policy: NetCapabilities::Drop,
        stage: Stage::Bound { init: dead },
        runtime: Kind::Runc,
        root: None,
        id: "old".into(),
    };
    write_record(&r.bound().join(dead.pid.to_string()), &old).unwrap();
    r.release(&t(Kind::Runc, &root, "old"));
    let ids: Vec<_> = r.all().into_iter().map(|x| x.id).collect();
    assert_eq!(ids, ["creating"]);
    // A container made later under a failed create's id is not its
    // own: the failed create's record went at the next create.
    pending("again", dead);
    r.bind_pending(Some(OsStr::new("again")));
    write_state(Kind::Runc, &root, "again", me());
    assert_eq!(r.lookup(&t(Kind::Runc, &root, "again")).unwrap(), None);
}

/// A pending record of runc's container `id` under `root`, named as a
/// create names it.
fn write_pending(r: &Records, root: &Path, id: &str, creator: Process) {
    let rec = Record {
        policy: NetCapabilities::Drop,
        stage: Stage::Pending { creator },
        runtime: Kind::Runc,
        root: Some((dir_key(root).unwrap(), root.to_owned())),
        id: id.into(),
    };
    write_record(
        &r.pending().join(pending_name(creator, OsStr::new(id))),
        &rec,
    )
    .unwrap();
}

/// The ids of every record, sorted.
fn ids(r: &Records) -> Vec<OsString> {
    let mut v: Vec<_> = r.all().into_iter().map(|x| x.id).collect();
    v.sort();
    v
}

fn stage_of(r: &Records, id: &str) -> Option<Stage> {
    r.all().into_iter().find(|x| x.id == id).map(|x| x.stage)
}

#[test]
fn a_start_reads_only_its_own_records_and_a_delete_those_whose_creator_is_gone_too() {
    let (_dir, r, root) = store_and_root();
    let pending = |id: &str, creator: Process| write_pending(&r, &root, id, creator);
    let dead = gone();
    // Two failed creates, of two ids, and the create of a third whose
    // container exists but has not started (this process stands for its
    // creator and its init).
    pending("a", dead);
    pending("b", dead);
    pending("x", me());
    write_state(Kind::Runc, &root, "x", me());
    // A start of `a` settles the records of `a` only.
    r.bind_pending(Some(OsStr::new("a")));
    assert_eq!(ids(&r), ["b", "x"]);
    // A delete of another container settles those whose creator is gone
    // too: `b`'s goes; `x`'s, of a create in flight, is not read (it
    // would bind).
    r.release(&t(Kind::Runc, &root, "other"));
    assert_eq!(ids(&r), ["x"]);
    assert!(matches!(stage_of(&r, "x"), Some(Stage::Pending { .. })));
    // The start of `x` binds it.
    r.bind_pending(Some(OsStr::new("x")));
    assert_eq!(stage_of(&r, "x"), Some(Stage::Bound { init: me() }));
    // A delete of another container leaves it: `x` runs on.
    r.release(&t(Kind::Runc, &root, "other"));
    assert_eq!(ids(&r), ["x"]);
    // A converting create (the kubelet's retry) removes a failed create's
    // record of another id, as a delete does.
    pending("c", dead);
    r.mark(&t(Kind::Runc, &root, "retry"), NetCapabilities::Drop)
        .unwrap();
    assert_eq!(ids(&r), ["retry", "x"]);
    fs::remove_file(r.bound().join(me().pid.to_string())).unwrap();
}

#[test]
fn a_call_about_one_id_binds_no_other_ids_record_and_removes_those_without_a_container() {
    let (_dir, r, root) = store_and_root();
    // Two creates that are over: `y` left a container whose init started
    // after its create, `z` none.
    let creator = gone();
    let mut init = std::process::Command::new("sleep")
        .arg("100")
        .spawn()
        .unwrap();
    let init_process = Process::of(init.id() as i32).unwrap();
    write_pending(&r, &root, "y", creator);
    write_state(Kind::Runc, &root, "y", init_process);
    write_pending(&r, &root, "z", creator);
    // A delete of another container: `z`'s record goes, `y`'s stays as it
    // was, for `y`'s own calls.
    r.release(&t(Kind::Runc, &root, "other"));
    assert_eq!(ids(&r), ["y"]);
    assert!(matches!(stage_of(&r, "y"), Some(Stage::Pending { .. })));
    // An exec of `y` before its start binds it, and finds it converted.
    assert_eq!(
        r.lookup(&t(Kind::Runc, &root, "y")).unwrap(),
        Some(NetCapabilities::Drop)
    );
    assert_eq!(stage_of(&r, "y"), Some(Stage::Bound { init: init_process }));
    init.kill().unwrap();
    init.wait().unwrap();
}

#[test]
fn a_pending_name_is_in_the_scope_of_its_id_and_an_untagged_one_in_every_scope() {
    // A creator that runs (this process): only its id's scope holds it.
    let p = me();
    let name = pending_name(p, OsStr::new("web"));
    assert_eq!(
        name,
        format!("{}.{}.{:016x}", p.pid, p.start, crate::hash::fnv1a(b"web"))
    );
    let web = Scope::Own(id_tag(OsStr::new("web")));
    let db = Scope::Own(id_tag(OsStr::new("db")));
    assert!(web.may_hold(Path::new(&name)));
    assert!(!db.may_hold(Path::new(&name)));
    assert!(Scope::All.may_hold(Path::new(&name)));
    // A creator that is gone: a delete's or a converting create's scope
    // holds it too, so that the next one removes a failed create's
    // record; a start's does not.
    let dead = pending_name(gone(), OsStr::new("web"));
    assert!(!db.may_hold(Path::new(&dead)));
    assert!(Scope::OwnAndOver(id_tag(OsStr::new("db"))).may_hold(Path::new(&dead)));
    // An earlier version's name, or one this version cannot read,
    // may be of any id.
    for other in ["12.34", "12.34.zz", "x", "1.2.3.4"] {
        assert!(db.may_hold(Path::new(other)), "{other}");
    }
}

#[test]
fn temporary_files_of_writers_that_died_go() {
    let (_dir, r, root) = store_and_root();
    let dead = gone();
    let mine = std::process::id();
    for sub in [r.pending(), r.bound()] {
        fs::create_dir_all(&sub).unwrap();
        fs::write(sub.join(format!(".7.8.{}", dead.pid)), "").unwrap();
        fs::write(sub.join(format!(".9.{mine}")), "").unwrap();
        fs::write(sub.join(".not-ours"), "").unwrap();
    }
    r.release(&t(Kind::Runc, &root, "any"));
    for sub in [r.pending(), r.bound()] {
        let mut left: Vec<_> = fs::read_dir(&sub)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, [format!(".9.{mine}"), ".not-ours".to_string()]);
    }
}

#[test]
fn a_state_the_wrapper_cannot_read_is_refused_while_records_exist() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::new(dir.path().join("records"));
    let root = dir.path().join("state");
    fs::create_dir_all(root.join("c1")).unwrap();
    fs::write(
        root.join("c1/state.json"),
        r#"{"init_process_pid":7,"INIT_PROCESS_PID":8}"#,
    )
    .unwrap();
    let c = t(Kind::Runc, &root, "c1");
    assert_eq!(r.lookup(&c).unwrap(), None, "no record: nothing to protect");
    r.mark(&t(Kind::Runc, &root, "c2"), NetCapabilities::Drop)
        .unwrap();
    let e = r.lookup(&c).unwrap_err();
    assert!(
        e.to_string()
            .contains("the wrapper cannot tell whether it converted it"),
        "{e}"
    );
    // A state file that is a link: runc versions follow it differently.
    fs::create_dir_all(root.join("c3")).unwrap();
    std::os::unix::fs::symlink("../c1/state.json", root.join("c3/state.json")).unwrap();
    assert!(r.lookup(&t(Kind::Runc, &root, "c3")).is_err());
    // No container, or an id runc refuses: nothing there to exec into.
    assert_eq!(r.lookup(&t(Kind::Runc, &root, "none")).unwrap(), None);
    assert_eq!(
        r.lookup(&t(Kind::Runc, &root, "../state/c1")).unwrap(),
        None
    );
}

#[test]
fn ids_that_are_paths_are_refused_at_create() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::new(dir.path().join("records"));
    let root = dir.path().join("state");
    for id in ["./c2", "c2/", "a/b", "..", "."] {
        let e = r
            .mark(&t(Kind::Crun, &root, id), NetCapabilities::Drop)
            .unwrap_err();
        assert!(e.to_string().contains("not a plain name"), "{e}");
        // runc refuses such ids itself: nothing to record.
        r.mark(&t(Kind::Runc, &root, id), NetCapabilities::Drop)
            .unwrap();
    }
    assert!(r.all().is_empty());
    // crun joins an id to the root as a path.
    r.mark(&t(Kind::Crun, &root, "c1"), NetCapabilities::Drop)
        .unwrap();
    write_state(Kind::Crun, &root, "c1", me());
    for id in ["./c1", "c1/", "/c1", "../state/c1"] {
        assert!(
            r.lookup(&t(Kind::Crun, &root, id)).unwrap().is_some(),
            "{id}"
        );
    }
}

#[test]
fn an_unknown_runtime_is_known_by_root_and_id() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::new(dir.path().join("records"));
    let none = Target {
        runtime: Kind::Other,
        root: None,
        id: OsStr::new("c1"),
    };
    r.mark(&none, NetCapabilities::Drop).unwrap();
    assert!(r.lookup(&none).unwrap().is_some());
    // Another create of the id replaces its record.
    r.mark(&none, NetCapabilities::Refuse).unwrap();
    assert_eq!(r.lookup(&none).unwrap(), Some(NetCapabilities::Refuse));
    assert_eq!(r.all().len(), 1);
    let root = dir.path().join("state");
    r.mark(&t(Kind::Other, &root, "c2"), NetCapabilities::Refuse)
        .unwrap();
    assert_eq!(
        r.lookup(&t(Kind::Other, &root, "c2")).unwrap(),
        Some(NetCapabilities::Refuse)
    );
    assert_eq!(r.lookup(&t(Kind::Other, &root, "c1")).unwrap(), None);
    let path = Target {
        runtime: Kind::Other,
        root: None,
        id: OsStr::new("./c2"),
    };
    assert!(r.lookup(&path).is_err());
}

#[test]
fn keep_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let r = Records::new(dir.path().join("records"));
    r.mark(
        &t(Kind::Runc, &dir.path().join("s"), "c1"),
        NetCapabilities::Keep,
    )
    .unwrap();
    assert!(r.all().is_empty());
}

#[test]
fn runc_ids() {
    for ok in ["abc", "a.b", "a+b,c-d_e", "..a"] {
        assert!(runc_valid(ok.as_bytes()), "{ok}");
    }
    for bad in ["", ".", "..", "a/b", "a b", "é", "a:b"] {
        assert!(!runc_valid(bad.as_bytes()), "{bad}");
    }
    assert_eq!(go_abs(Path::new("/a//b/../c/")), Path::new("/a/c"));
    assert_eq!(trim_slashes(b"//c1//"), b"c1");
    assert_eq!(unhex(&hex(b"\x00a/\xff")), Some(b"\x00a/\xff".to_vec()));
    assert_eq!(unhex("zz"), None);
}

#[test]
fn an_unwritable_directory_is_an_error_naming_the_container() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    fs::write(&file, "").unwrap();
    let root = dir.path().join("state");
    let e = Records::new(&file)
        .mark(&t(Kind::Runc, &root, "c1"), NetCapabilities::Drop)
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cannot record that container c1 was converted"),
        "{e}"
    );
}

#[test]
fn a_delete_removes_bound_records_whose_pid_is_free_and_reads_none() {
    let (_dir, r, root) = store_and_root();
    let bound = |init: Process, id: &str| Record {
        policy: NetCapabilities::Drop,
        stage: Stage::Bound { init },
        runtime: Kind::Runc,
        root: None,
        id: id.into(),
    };
    let dead = gone();
    write_record(&r.bound().join(dead.pid.to_string()), &bound(dead, "gone")).unwrap();
    // This process's pid, named with another start time: a record of an
    // init whose pid a later process took. It stays while that process
    // runs, and matches nothing.
    let before = Process {
        start: me().start - 1,
        ..me()
    };
    write_record(
        &r.bound().join(me().pid.to_string()),
        &bound(before, "reused"),
    )
    .unwrap();
    // An init that has exited and waits to be reaped.
    let mut zombie = std::process::Command::new("true").spawn().unwrap();
    let zpid = zombie.id() as i32;
    while Process::of(zpid).is_some() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        Path::new(&format!("/proc/{zpid}")).exists(),
        "not reaped yet"
    );
    let as_zombie = Process {
        pid: zpid,
        start: 1,
    };
    write_record(
        &r.bound().join(zpid.to_string()),
        &bound(as_zombie, "zombie"),
    )
    .unwrap();
    // A name that is no pid goes, unread.
    fs::write(r.bound().join("not-a-pid"), "").unwrap();
    r.release(&t(Kind::Runc, &root, "any"));
    let mut ids: Vec<_> = r.all().into_iter().map(|x| x.id).collect();
    ids.sort();
    assert_eq!(ids, ["reused", "zombie"], "a zombie's pid is still held");
    assert!(!r.bound().join("not-a-pid").exists());
    // Reaped, its pid is free: the next delete removes its record.
    zombie.wait().unwrap();
    r.release(&t(Kind::Runc, &root, "any"));
    let ids: Vec<_> = r.all().into_iter().map(|x| x.id).collect();
    assert_eq!(ids, ["reused"]);
    write_state(Kind::Runc, &root, "now", me());
    assert_eq!(r.lookup(&t(Kind::Runc, &root, "now")).unwrap(), None);
}
