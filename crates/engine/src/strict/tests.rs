use super::*;

use crate::fixtures::FIXTURES;

/// The refusal for `text`, as its one line.
fn refused(text: impl AsRef<[u8]>) -> String {
    match read_spec(text.as_ref()) {
        Ok(v) => panic!("read: {v}"),
        Err(r) => r.to_string(),
    }
}

fn assert_refused(text: impl AsRef<[u8]>, field: &str, words: &[&str]) {
    let r = read_spec(text.as_ref()).expect_err("refused");
    assert_eq!(r.rule, "spec", "{r}");
    assert_eq!(r.field, field, "{r}");
    for w in words {
        assert!(r.message.contains(w), "{w:?} not in: {r}");
    }
}

#[test]
fn the_fixtures_read_as_serde_json_reads_them() {
    for text in FIXTURES {
        let strict = read_spec(text.as_bytes()).unwrap();
        let plain: Value = serde_json::from_str(text).unwrap();
        assert_eq!(strict, plain);
        // Key order and the numbers' text, too.
        assert_eq!(
            serde_json::to_string(&strict).unwrap(),
            serde_json::to_string(&plain).unwrap()
        );
    }
}

#[test]
fn numbers_and_escapes_come_out_as_serde_json_reads_them() {
    let text = r#"{"a": [0, -0, 1.0, 1e5, 1E+05, -2.50e-3, 18446744073709551616, -9223372036854775809, 123456789012345678901234567890.5],
        "b": "\u00e9\ud83d\ude00\n\"\\\/", "c": {"x": null, "y": true, "z": false}, "d": [], "e": {}}"#;
    let strict = read_spec(text.as_bytes()).unwrap();
    let plain: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        serde_json::to_string(&strict).unwrap(),
        serde_json::to_string(&plain).unwrap()
    );
}

#[test]
fn one_strict_object_or_refused() {
    assert_refused("", TOP, &["not valid JSON", "EOF"]);
    assert_refused("{\"ociVersion\": ", "ociVersion", &["not valid JSON"]);
    assert_refused(
        "{} {}",
        TOP,
        &["follows the top-level object", "runc reads the first value"],
    );
    assert_refused("{}\0", TOP, &["follows the top-level object"]);
    assert_refused("{} garbage", TOP, &["follows"]);
    assert_refused("/* c */ {}", TOP, &["not valid JSON"]);
    assert_refused("{\"a\": 1 /* c */}", TOP, &["not valid JSON"]);
    assert_refused(b"\xef\xbb\xbf{}", TOP, &["not valid JSON"]);
    for (text, kind) in [
        ("[]", "an array"),
        ("\"config\"", "a string"),
        ("null", "null"),
        ("1e400", "a number"),
        ("true", "a boolean"),
    ] {
        assert_refused(text, TOP, &["not a runtime spec", kind, "not an object"]);
    }
    // Whitespace around the object is fine.
    assert!(read_spec(b" \n\t{}\r\n ").is_ok());
}

#[test]
fn invalid_utf8_is_refused_where_it_is() {
    assert_refused(
        b"{\"hostname\": \"a\xffb\"}".as_slice(),
        "hostname",
        &["invalid UTF-8", "U+FFFD", "crun refuses"],
    );
    assert_refused(
        b"{\"linux\": {\"namespaces\": [{\"type\": \"user\", \"path\": \"\xc3\"}]}}".as_slice(),
        "linux.namespaces[0].path",
        &["invalid UTF-8"],
    );
    // In a key: the object that holds it.
    assert_refused(
        b"{\"linux\": {\"\xfe\": 1}}".as_slice(),
        "linux",
        &["invalid UTF-8"],
    );
}

#[test]
fn lone_surrogates_are_refused() {
    for text in [
        r#"{"hostname": "a\ud800b"}"#,
        r#"{"hostname": "\udc00"}"#,
        r#"{"hostname": "\ud800\u0041"}"#,
    ] {
        assert_refused(
            text,
            "hostname",
            &["lone UTF-16 surrogate", "U+FFFD", "`?`"],
        );
    }
    // A pair is one character.
    assert!(read_spec(br#"{"hostname": "\ud83d\ude00"}"#).is_ok());
}

fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn depth_at_the_limit_is_read_and_over_it_refused() {
    // The top-level object is level 1, `"x": [...]` adds the arrays.
    let at = format!("{{\"x\": {}}}", nested(MAX_DEPTH - 1));
    assert!(read_spec(at.as_bytes()).is_ok());
    let over = format!("{{\"x\": {}}}", nested(MAX_DEPTH));
    let r = read_spec(over.as_bytes()).unwrap_err();
    assert!(r.message.contains("nested deeper than 127"), "{r}");
    assert!(r.field.starts_with("x[0][0]"), "{r}");
    // In an unknown key, in an annotation: the same.
    let deep = format!(
        "{{\"annotations\": {{\"a\": \"b\"}}, \"linux\": {{\"x-vendor\": {}}}}}",
        nested(200)
    );
    assert!(refused(deep).contains("nested deeper"));
    let r = read_spec(nested(100_000).as_bytes()).unwrap_err();
    assert!(r.message.contains("nested deeper"), "{r}");
}

#[test]
fn the_size_cap() {
    let mut big = b"{\"annotations\": {\"a\": \"".to_vec();
    big.resize(MAX_BYTES as usize - 3, b'x');
    big.extend_from_slice(b"\"}}");
    assert_eq!(big.len() as u64, MAX_BYTES);
    assert!(read_spec(&big).is_ok());
    big.insert(30, b'x');
    let r = read_spec(&big).unwrap_err();
    assert_eq!(r.field, TOP);
    assert!(r.message.starts_with("larger than 64 MiB"), "{r}");
}

#[test]
fn duplicate_keys_are_refused_anywhere() {
    assert_eq!(
        refused(r#"{"linux": {"namespaces": []}, "hostname": "h", "linux": {}}"#),
        "spec: linux: duplicate key \"linux\" in (top level): runc merges the two objects field by field, crun the first"
    );
    assert_eq!(
        refused(r#"{"hostname": "a", "hostname": "b"}"#),
        "spec: hostname: duplicate key \"hostname\" in (top level): runc keeps the last, crun the first"
    );
    assert_refused(
        r#"{"linux": {"namespaces": [{"type": "mount"}, {"type": "network"}, {"type": "user", "type": "network"}]}}"#,
        "linux.namespaces[2].type",
        &[
            "duplicate key \"type\" in linux.namespaces[2]",
            "runc keeps the last",
        ],
    );
    assert_refused(
        r#"{"linux": {"uidMappings": [{"containerID": 0, "hostID": 100000, "size": 1, "hostID": 0}]}}"#,
        "linux.uidMappings[0].hostID",
        &["duplicate key \"hostID\""],
    );
    // In a map, and in what no runtime reads: still two readings.
    assert_refused(
        r#"{"annotations": {"a": "1", "a": "2"}}"#,
        "annotations.a",
        &["runc keeps the last"],
    );
    assert_refused(
        r#"{"x-vendor": [{"k": 1, "k": 1}]}"#,
        "x-vendor[0].k",
        &["duplicate key"],
    );
    // An escape spells the same key.
    assert_refused(
        r#"{"linux": {}, "\u006cinux": {}}"#,
        "linux",
        &["duplicate"],
    );
}

#[test]
fn keys_equal_to_a_field_under_case_folding_are_refused() {
    assert_eq!(
        refused(r#"{"Linux": {}}"#),
        "spec: Linux: key \"Linux\" is the field \"linux\" only under case folding: runc (Go) reads it as \"linux\", crun ignores it; write \"linux\" exactly"
    );
    assert_refused(
        r#"{"linux": {"UIDMappings": []}}"#,
        "linux.UIDMappings",
        &["\"uidMappings\""],
    );
    assert_refused(
        r#"{"linux": {"namespaces": [{"type": "user"}, {"type": "network"}, {"type": "network", "Path": "/proc/1/ns/net"}]}}"#,
        "linux.namespaces[2].Path",
        &["\"path\""],
    );
    assert_refused(
        r#"{"mounts": [{}, {}, {}, {"destination": "/sys", "Options": ["rw"]}]}"#,
        "mounts[3].Options",
        &["\"options\""],
    );
    // U+212A KELVIN SIGN folds to k, U+017F LONG S to s: Go matches them.
    assert_refused(
        "{\"hoo\u{212A}s\": {}}",
        "[\"hoo\u{212A}s\"]",
        &["\"hooks\""],
    );
    assert_refused(
        r#"{"linux": {"name\u017fpaces": []}}"#,
        "linux[\"name\u{17F}paces\"]",
        &["\"namespaces\""],
    );
    assert_refused(
        r#"{"process": {"capabilities": {"BOUNDING": []}}}"#,
        "process.capabilities.BOUNDING",
        &["\"bounding\""],
    );
    assert_refused(
        r#"{"process": {"user": {"UID": 0}}}"#,
        "process.user.UID",
        &["\"uid\""],
    );
    assert_refused(
        r#"{"linux": {"uidMappings": [{"containerId": 0, "hostID": 1, "size": 1}]}}"#,
        "linux.uidMappings[0].containerId",
        &["\"containerID\""],
    );
    assert_refused(
        r#"{"mounts": [{"destination": "/", "uidMappings": [{"HostID": 0}]}]}"#,
        "mounts[0].uidMappings[0].HostID",
        &["\"hostID\""],
    );
    assert_refused(
        r#"{"linux": {"resources": {"blockIO": {"weightDevice": [{"Major": 8}]}}}}"#,
        "linux.resources.blockIO.weightDevice[0].Major",
        &["\"major\""],
    );
    assert_refused(
        r#"{"windows": {"network": {"dnsSearchList": []}}}"#,
        "windows.network.dnsSearchList",
        &["\"DNSSearchList\""],
    );
}

#[test]
fn map_keys_and_unknown_keys_are_exact_and_kept() {
    // Map keys are data in Go too: any case, kept as they are.
    let text = r#"{"annotations": {"Linux": "a", "LINUX": "b", "linux": "c"},
        "linux": {"sysctl": {"Net.Core.X": "1", "net.core.x": "2"},
                  "resources": {"unified": {"Memory.Max": "1"}, "rdma": {"mlx": {"hcaHandles": 1}}}},
        "x-Linux": {"Namespaces": 1, "namespaces": 2}, "linuxx": 1, "\u0130d": 1, "l\u0131nux": 1}"#;
    let strict = read_spec(text.as_bytes()).unwrap();
    assert_eq!(strict, serde_json::from_str::<Value>(text).unwrap());
    // A map's values are structs again where Go says so.
    assert_refused(
        r#"{"linux": {"resources": {"rdma": {"mlx": {"HcaHandles": 1}}}}}"#,
        "linux.resources.rdma.mlx.HcaHandles",
        &["\"hcaHandles\""],
    );
    // In the process file, the top level is a Process.
    assert!(read_process(br#"{"args": ["sh"], "Linux": 1}"#).is_ok());
    let r = read_process(br#"{"Args": ["sh"]}"#).unwrap_err();
    assert_eq!(r.field, "Args");
    let r = read_process(br#"{"capabilities": {"bounding": [], "Bounding": []}}"#).unwrap_err();
    assert_eq!(r.field, "capabilities.Bounding");
}

#[test]
fn nul_characters_are_refused() {
    assert_refused(
        r#"{"linux\u0000": {}, "linux": {}}"#,
        "[\"linux\\0\"]",
        &["NUL", "C strings"],
    );
    assert_refused(
        r#"{"process": {"capabilities": {"bounding": ["CAP_KILL", "CAP_NET_RAW\u0000"]}}}"#,
        "process.capabilities.bounding[1]",
        &["NUL"],
    );
}

#[test]
fn folding_matches_go() {
    for (key, field) in [
        ("Linux", "linux"),
        ("LINUX", "linux"),
        ("uidmappings", "uidMappings"),
        ("\u{212A}ernel", "kernel"),
        ("\u{17F}ize", "size"),
        ("\u{17F}Y\u{17F}CTL", "sysctl"),
    ] {
        assert!(folds_to(key, field), "{key:?} {field:?}");
    }
    for (key, field) in [
        ("linu", "linux"),
        ("linuxx", "linux"),
        ("l\u{131}nux", "linux"),
        ("\u{130}D", "id"),
        ("\u{212B}", "a"),
        ("lin ux", "linux"),
    ] {
        assert!(!folds_to(key, field), "{key:?} {field:?}");
    }
}

#[test]
fn every_struct_names_its_fields_once() {
    fn walk(s: &'static Struct, seen: &mut Vec<*const Struct>) {
        if seen.contains(&(s as *const _)) {
            return;
        }
        seen.push(s);
        for (i, (f, shape)) in s.fields.iter().enumerate() {
            for (g, _) in &s.fields[i + 1..] {
                assert!(!folds_to(f, g), "{f} and {g} fold alike");
            }
            let mut shape = shape;
            loop {
                match shape {
                    Shape::Struct(t) => break walk(t, seen),
                    Shape::Map(s) | Shape::Array(s) => shape = s,
                    Shape::Any => break,
                }
            }
        }
    }
    let mut seen = Vec::new();
    walk(&schema::SPEC, &mut seen);
    assert!(seen.len() > 50, "{}", seen.len());
    // The fields the decision and the rules read.
    let spec = read_spec(
        br#"{"linux": {"namespaces": [{"type": "user", "path": "/p"}],
        "uidMappings": [{"containerID": 0, "hostID": 1, "size": 1}],
        "gidMappings": [{"containerID": 0, "hostID": 1, "size": 1}],
        "sysctl": {"a": "b"}},
        "mounts": [{"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": [],
                    "uidMappings": [], "gidMappings": []}],
        "process": {"user": {"uid": 0, "gid": 0, "additionalGids": []},
                    "capabilities": {"bounding": [], "effective": [], "inheritable": [], "permitted": [], "ambient": []}},
        "root": {"path": "rootfs"}}"#,
    );
    assert!(spec.is_ok(), "{spec:?}");
}

/// `rec` without the spans of the objects read by members, which the one
/// pass finds only when the writer needs them.
fn unspanned(rec: Rec) -> Rec {
    match rec {
        Rec::Object { members, .. } => Rec::Object {
            span: None,
            members: members
                .into_iter()
                .map(|(k, r)| (k, unspanned(r)))
                .collect(),
        },
        other => other,
    }
}

/// What `locate` finds, in its one pass, is what the whole-document
/// search of `slices` finds, spans and all; `None` when it is not found
/// in the one pass.
fn located_alike(text: &str, elements_only: bool) -> Option<Rec> {
    let fast = recorded(text, Document::Spec, slices::SPEC, elements_only);
    let at = slices::top(text);
    let whole = match elements_only {
        false => slices::locate(text, at, slices::SPEC),
        true => slices::locate_written(text, at, slices::SPEC),
    };
    let found = locate(text.as_bytes(), Document::Spec, slices::SPEC, elements_only).unwrap();
    assert_eq!(unspanned(found.clone()), unspanned(whole.clone()), "{text}");
    let (fast, built) = fast?;
    // What the pass built is what serde_json reads where it starts.
    for (start, value) in &built {
        let (read, _) = slices::value_at(text, *start as usize).unwrap();
        assert!(slices::same(&read, value), "{text}: at {start}");
    }
    assert!(!elements_only || built.is_empty(), "{text}");
    assert_eq!(fast, found);
    assert_eq!(fast.span(), whole.span());
    Some(fast)
}

#[test]
fn the_members_the_rules_read_are_found_in_the_same_pass() {
    for text in FIXTURES {
        for elements_only in [false, true] {
            let rec = located_alike(text, elements_only).expect("one pass");
            assert!(rec.member("mounts").is_some() && rec.member("linux").is_some());
        }
    }
    let odd = r#" {"m\u006funts": [{"destination": "/a", "options": ["ro"], "x": {"y": []}}, 5, []],
        "annotations": {"io.kubernetes.cri-o.Name": "n", "k\"ey": 1},
        "linux": {"namespaces": [{"type": "user"}], "sysctl": null, "seccomp": {"a": [1.50, -0e3]}},
        "process": {"user": {"uid": 0}}, "root": "r"}
        "#;
    for text in [odd, "{}", r#"{"mounts": null, "root": 5}"#] {
        for elements_only in [false, true] {
            located_alike(text, elements_only).expect("one pass");
        }
    }
    // A member read by members that is not an object (which the rules
    // refuse) is found by the whole-document search, alike.
    for text in [
        r#"{"linux": 5, "root": {"path": "r"}}"#,
        r#"{"annotations": null, "mounts": {}}"#,
        r#"{"process": [], "mounts": null}"#,
    ] {
        assert!(located_alike(text, false).is_none(), "{text}");
    }
}

#[test]
fn the_one_pass_refuses_what_the_check_refuses_in_its_words() {
    let many: String = (0..40).map(|i| format!("\"k{i}\": {i}, ")).collect();
    let mut bad = vec![
        // Past the few keys compared at once: compared when read.
        format!(r#"{{"annotations": {{{many}"k7": 0}}}}"#).into_bytes(),
        format!(r#"{{"annotations": {{{many}"\u006b7": 0}}}}"#).into_bytes(),
        format!(r#"{{"annotations": {{{many}"\u006b7": 0, "k\u0037": 1}}}}"#).into_bytes(),
        format!(r#"{{"linux": {{"sysctl": {{{many}"k39": 0}}}}}}"#).into_bytes(),
        format!(r#"{{"x": {{{many}"k0": 0}}}}"#).into_bytes(),
        r#"{"linux": {"namespaces": [{"type": "user", "Type": "x"}]}}"#
            .to_owned()
            .into_bytes(),
        r#"{"mounts": [{"destination": "/a", "destination": "/b"}]}"#
            .to_owned()
            .into_bytes(),
        r#"{"mounts": [{"options": ["a\u0000"]}]}"#.to_owned().into_bytes(),
        r#"{"process": {"user": {"uid": 0}}, "process": {}}"#
            .to_owned()
            .into_bytes(),
        r#"{"root": {"path": "r"}} x"#.to_owned().into_bytes(),
        // Values no struct's field holds, taken whole when plain: an
        // escape or an object in them is read in full.
        r#"{"linux": {"seccomp": {"syscalls": [{"names": ["a", "b\u0000"]}]}}}"#
            .to_owned()
            .into_bytes(),
        r#"{"x": ["a", "\ud800"]}"#.to_owned().into_bytes(),
        r#"{"x": [["a"], [{"k": 1, "k": 2}]]}"#.to_owned().into_bytes(),
        r#"{"process": {"env": ["A=1", {"Linux": 1, "Linux": 2}]}}"#
            .to_owned()
            .into_bytes(),
        r#"[]"#.to_owned().into_bytes(),
    ];
    bad.push(b"{\"linux\": {\"sysctl\": {\"a\": \"\xff\"}}}".to_vec());
    for text in &bad {
        let check = check(text, Document::Spec).unwrap_err();
        let one = locate(text, Document::Spec, slices::SPEC, false).unwrap_err();
        assert_eq!(one, check, "{}", String::from_utf8_lossy(text));
        assert!(std::str::from_utf8(text).map_or(true, |t| recorded(
            t,
            Document::Spec,
            slices::SPEC,
            false
        )
        .is_none()));
    }
    let fine = format!(r#"{{"annotations": {{{many}"\u006b": 0, "k40": 1}}}}"#);
    assert!(located_alike(&fine, false).is_some());
}

#[test]
fn the_one_pass_counts_the_levels_of_the_whole_document() {
    // Top level 1, `linux` 2, `sysctl` 3: the arrays in it from 4 on.
    let deep = |n| format!(r#"{{"linux": {{"sysctl": {{"a": {}}}}}}}"#, nested(n));
    let at = deep(MAX_DEPTH - 3);
    assert!(check(at.as_bytes(), Document::Spec).is_ok());
    assert!(located_alike(&at, false).is_some());
    let over = deep(MAX_DEPTH - 2);
    let r = check(over.as_bytes(), Document::Spec).unwrap_err();
    assert!(r.message.contains("nested deeper"), "{r}");
    assert!(recorded(&over, Document::Spec, slices::SPEC, false).is_none());
    assert_eq!(
        locate(over.as_bytes(), Document::Spec, slices::SPEC, false).unwrap_err(),
        r
    );
    // In a value no struct's field holds, taken whole when plain.
    let unknown = |n| format!(r#"{{"linux": {{"x": {}}}}}"#, nested(n));
    assert!(located_alike(&unknown(MAX_DEPTH - 2), false).is_some());
    let over = unknown(MAX_DEPTH - 1);
    assert!(check(over.as_bytes(), Document::Spec).is_err());
    assert!(recorded(&over, Document::Spec, slices::SPEC, false).is_none());
    // In a mount's member, read on its own twice over.
    let mount = |n| format!(r#"{{"mounts": [{{"options": {}}}]}}"#, nested(n));
    assert!(located_alike(&mount(MAX_DEPTH - 3), false).is_some());
    assert!(recorded(&mount(MAX_DEPTH - 2), Document::Spec, slices::SPEC, false).is_none());
    assert!(check(mount(MAX_DEPTH - 2).as_bytes(), Document::Spec).is_err());
    // An empty object at the last level and past it.
    let empty = |n: usize| format!(r#"{{"root": {}{{}}{}}}"#, "[".repeat(n), "]".repeat(n));
    assert!(located_alike(&empty(MAX_DEPTH - 2), false).is_some());
    assert!(recorded(&empty(MAX_DEPTH - 1), Document::Spec, slices::SPEC, false).is_none());
    assert!(check(empty(MAX_DEPTH - 1).as_bytes(), Document::Spec).is_err());
}
