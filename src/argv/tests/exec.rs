//! `exec` as each runtime reads it: the container id, the process file,
//! every `--cap` with its place, and the options the wrapper does not know.

use super::*;

#[test]
fn exec_under_crun_abbreviations_finds_the_state_directory() {
    let inv = crate::argv::scan(
        &argv("--root=/r exec --cap CAP_NET_RAW c1 sh"),
        Dialect::Crun,
    );
    assert_eq!(inv.problem, None);
    assert_eq!(inv.root, Some("/r".into()));
    assert_eq!(inv.container_id, Some("c1".into()));
    assert_eq!(inv.exec.unwrap().caps.len(), 1);
    // crun before 1.22 reads `--roo` and `--rootless` as --root; 1.22 and
    // later refuse the first and ignore the second: the exec may act on a
    // container of another state directory than the one read, and is
    // refused (by the wrapper, which sees the problem on any exec).
    for (words, why) in [
        (
            "--roo /r exec --cap CAP_NET_RAW c1 sh",
            "crun 1.22 or later would refuse this command line",
        ),
        (
            "--rootless /r exec --cap CAP_NET_RAW c1 sh",
            "crun before 1.22 and crun 1.22 or later read it differently (the state directory",
        ),
    ] {
        let inv = crate::argv::scan(&argv(words), Dialect::Crun);
        let p = inv.problem.unwrap_or_else(|| panic!("{words}: no problem"));
        assert!(p.reason.contains(why), "{words}: {}", p.reason);
        assert!(inv.exec.is_some(), "{words}");
    }
}

#[test]
fn exec_as_containerd_and_cri_o_call_it() {
    // The generic exec scan, for a runtime that is neither runc nor crun.
    let strict = |a: &[OsString]| crate::argv::scan(a, Dialect::Strict);
    let inv = strict(&argv(
        "--root /run/containerd/runc/k8s.io --log /b/log.json --log-format json exec --process /tmp/runc-process123 --detach --pid-file /b/p.pid c1",
    ));
    assert_eq!(inv.creating, None);
    assert_eq!(inv.root, Some("/run/containerd/runc/k8s.io".into()));
    assert_eq!(inv.container_id, Some("c1".into()));
    let exec = inv.exec.unwrap();
    assert_eq!(exec.process, Some(PathBuf::from("/tmp/runc-process123")));
    assert!(exec.caps.is_empty());
    assert_eq!(exec.unknown_option, None);
    let inv = strict(&argv("--root=/r exec -p=/p.json -d c2"));
    assert_eq!(inv.root, Some("/r".into()));
    assert_eq!(inv.container_id, Some("c2".into()));
    assert_eq!(inv.exec.unwrap().process, Some(PathBuf::from("/p.json")));
}

#[test]
fn exec_caps_in_every_form_with_their_place() {
    let strict = |a: &[OsString]| crate::argv::scan(a, Dialect::Strict);
    let args = argv("exec --cap CAP_NET_RAW -c NET_ADMIN --cap=cap_net_bind_service -c12 -c=13 --ca 10 -t c1 sh -c --cap");
    let inv = strict(&args);
    let exec = inv.exec.unwrap();
    let got: Vec<(usize, usize, &str)> = exec
        .caps
        .iter()
        .map(|c| (c.at, c.len, c.value.to_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (1, 2, "CAP_NET_RAW"),
            (3, 2, "NET_ADMIN"),
            (5, 1, "cap_net_bind_service"),
            (6, 1, "12"),
            (7, 1, "13"),
            (8, 2, "10"),
        ]
    );
    assert_eq!(inv.container_id, Some("c1".into()));
    assert_eq!(exec.unknown_option, None);
}

#[test]
fn exec_with_an_unknown_option_keeps_both_candidate_ids() {
    let strict = |a: &[OsString]| crate::argv::scan(a, Dialect::Strict);
    let inv = strict(&argv("exec --frob x c1 sh"));
    let exec = inv.exec.unwrap();
    assert_eq!(exec.unknown_option, Some("--frob".into()));
    assert_eq!(inv.container_id, Some("x".into()));
    assert_eq!(exec.next_word, Some("c1".into()));
    // An ambiguous prefix and bundled short flags are unknown too.
    for a in ["exec --p x c1", "exec -dt c1"] {
        assert!(
            strict(&argv(a)).exec.unwrap().unknown_option.is_some(),
            "{a}"
        );
    }
    let inv = strict(&argv("exec -- c3 sh"));
    assert_eq!(inv.container_id, Some("c3".into()));
}

/// `exec` as each runtime reads it: the id, the process file and every
/// `--cap` with its place.
#[test]
fn exec_per_runtime() {
    let caps = |inv: &Invocation| -> Vec<(usize, usize, String, bool)> {
        inv.exec
            .as_ref()
            .unwrap()
            .caps
            .iter()
            .map(|c| {
                (
                    c.at,
                    c.len,
                    c.value.to_string_lossy().into_owned(),
                    c.grouped,
                )
            })
            .collect()
    };
    let cap = |at, len, v: &str, g| (at, len, v.to_owned(), g);
    // Go's flag: one or two dashes, whole names, `-name=value`.
    let inv = crate::argv::scan(
        &argv("exec --cap A --cap=B -cap C c1 sh -c --cap"),
        Dialect::Runc,
    );
    assert_eq!(inv.container_id, Some("c1".into()));
    assert_eq!(
        caps(&inv),
        [
            cap(1, 2, "A", false),
            cap(3, 1, "B", false),
            cap(4, 2, "C", false)
        ]
    );
    let inv = crate::argv::scan(&argv("exec -process /p c1"), Dialect::Runc);
    assert_eq!(inv.container_id, Some("c1".into()));
    assert_eq!(inv.exec.unwrap().process, Some(PathBuf::from("/p")));
    // argp: `-process /p c1` is the process file `rocess` in container /p.
    let inv = crate::argv::scan(&argv("exec -process /p c1"), Dialect::Crun);
    assert_eq!(inv.container_id, Some("/p".into()));
    assert_eq!(inv.exec.unwrap().process, Some(PathBuf::from("rocess")));
    // argp: prefixes, `-cCAP`, `-c=CAP` (the value `=CAP`), grouped.
    let inv = crate::argv::scan(&argv("exec --ca A -cB -c=C -dcD c1 sh"), Dialect::Crun);
    assert_eq!(inv.container_id, Some("c1".into()));
    assert_eq!(
        caps(&inv),
        [
            cap(1, 2, "A", false),
            cap(3, 1, "B", false),
            cap(4, 1, "=C", false),
            cap(5, 1, "D", true)
        ]
    );
    // crun's --tty takes an optional value: `-tc X` is a tty, and X the id.
    let inv = crate::argv::scan(&argv("exec -tc CAP_NET_RAW c1"), Dialect::Crun);
    assert_eq!(inv.container_id, Some("CAP_NET_RAW".into()));
    assert!(caps(&inv).is_empty());
    // A command line the runtime refuses (runc: -c and --cap together; an
    // ambiguous prefix in crun) gets the generic scan.
    for (a, d) in [
        ("exec --cap A -c B c1", Dialect::Runc),
        ("exec --p x c1", Dialect::Crun),
        ("exec --frob x c1 sh", Dialect::Runc),
    ] {
        assert_eq!(
            crate::argv::scan(&argv(a), d).exec,
            crate::argv::scan(&argv(a), Dialect::Strict).exec,
            "{a}"
        );
    }
    // Help execs nothing.
    let inv = crate::argv::scan(&argv("exec --help c1"), Dialect::Crun);
    assert_eq!(inv.container_id, None);
    let inv = crate::argv::scan(&argv("exec -h c1"), Dialect::Runc);
    assert_eq!(inv.container_id, None);
}

/// `exec --pidfd-socket` (runc 1.2 and later), as containerd's shim passes
/// it with go-runc's PidfdSocket: the process file and the id are found.
#[test]
fn exec_with_a_pidfd_socket_under_runc() {
    let args = argv("--root /r exec --process /p --pidfd-socket /s --detach --cap CAP_NET_RAW id");
    let inv = crate::argv::scan(&args, Dialect::Runc);
    let exec = inv.exec.expect("an exec");
    assert_eq!(exec.process, Some(PathBuf::from("/p")));
    assert_eq!(exec.unknown_option, None);
    assert_eq!(exec.caps.len(), 1);
    assert_eq!(inv.container_id, Some(OsString::from("id")));
}
