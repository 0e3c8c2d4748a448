use super::*;

use crate::specs::FIXTURES;

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
    walk(&fields::SPEC, &mut seen);
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
