use super::*;
use crate::spec::Mount;
use crate::{evaluate, HostFacts, Policy};
use serde_json::json;

use crate::fixtures::{userns_spec, with_userns_hostnet, FIXTURES};

#[test]
fn an_unchanged_view_writes_the_input_back() {
    for text in FIXTURES {
        let spec = Spec::read(text.as_bytes().to_vec()).unwrap();
        assert_eq!(write(&spec), text.as_bytes());
    }
    let odd = b" {\"b\" :1.0e2 , \"linux\":{\"x\":\"\\u003c\",\"sysctl\":{}} }\n\n";
    let spec = Spec::read(odd.to_vec()).unwrap();
    assert_eq!(write(&spec), odd);
}

#[test]
fn the_view_holds_only_what_the_rules_read() {
    let text = serde_json::to_vec(&userns_spec()).unwrap();
    let spec = Spec::read(text).unwrap();
    let view = spec.view();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(view),
        ["process", "root", "mounts", "annotations", "linux"]
    );
    // Of the annotations, only those naming the pod (none here).
    assert_eq!(view["annotations"], json!({}));
    assert_eq!(keys(&view["process"]), ["user", "capabilities"]);
    assert_eq!(
        keys(&view["linux"]),
        ["namespaces", "uidMappings", "gidMappings"]
    );
    assert_eq!(view["mounts"], Value::Null, "the mounts are spans");
    let mounts: Vec<Value> = spec
        .mounts()
        .unwrap()
        .iter()
        .map(|m| m.to_value())
        .collect();
    assert_eq!(json!(mounts), userns_spec()["mounts"]);
}

#[test]
fn members_and_elements_added_and_removed() {
    let text = b"{\"a\": 1, \"linux\": {\"sysctl\": {\"x\": \"1\", \"y\": \"2\"}, \"z\": [1 ,2]}, \"mounts\": [ {\"destination\":\"/a\"} , {\"destination\":\"/b\"} ]}";
    let (a, b, c) = (Mount::Read(0), Mount::Read(1), || {
        Mount::new(json!({"destination": "/c"}))
    });
    let cases = [
        (
            json!({"linux": {"sysctl": {"y": "2"}}, "mounts": null}),
            vec![b.clone()],
            json!([{"destination": "/b"}]),
        ),
        (
            json!({"linux": {}, "mounts": null}),
            vec![b.clone(), a.clone(), c()],
            json!([{"destination": "/b"}, {"destination": "/a"}, {"destination": "/c"}]),
        ),
        (
            json!({"linux": {"sysctl": {"x": "1", "y": "2"}, "namespaces": []}, "mounts": null, "root": {"path": "r"}}),
            vec![],
            json!([]),
        ),
        (
            json!({"linux": 7, "mounts": null}),
            vec![a.clone(), b.clone()],
            json!([{"destination": "/a"}, {"destination": "/b"}]),
        ),
    ];
    for (view, mounts, want) in cases {
        let mut spec = Spec::read(text.to_vec()).unwrap();
        *spec.view_mut() = view.clone();
        *spec.mounts_mut().unwrap() = mounts;
        let out = write(&spec);
        let back: Value = serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out)));
        assert_eq!(back["a"], 1);
        assert_eq!(back["mounts"], want, "{}", String::from_utf8_lossy(&out));
        assert_eq!(back.get("root"), view.get("root"));
        match &view["linux"] {
            Value::Object(l) => {
                assert_eq!(back["linux"]["z"], json!([1, 2]));
                assert_eq!(back["linux"].as_object().unwrap().len(), l.len() + 1);
                for (k, v) in l {
                    assert_eq!(&back["linux"][k], v);
                }
            }
            other => assert_eq!(&back["linux"], other),
        }
        assert_eq!(write_checked(&spec).unwrap(), out);
    }
}

#[test]
fn checked_write_reads_back_as_decided_or_refuses() {
    let src = br#"{"ociVersion": "1.0.2", "hostname": "a", "linux": {"sysctl": {"a": "1"}}}"#;
    let mut spec = Spec::read(src.to_vec()).unwrap();
    spec.view_mut()["linux"]["sysctl"] = json!({});
    let out = write_checked(&spec).unwrap();
    assert_eq!(out, write(&spec));
    assert_eq!(Spec::read(out).unwrap(), spec);
    // A member the reader never builds cannot read back as decided: a
    // write the check cannot confirm is refused, never written.
    spec.view_mut()["hostname"] = json!("b");
    let r = write_checked(&spec).unwrap_err();
    assert_eq!(r.rule, "write", "{r}");
}

#[test]
fn a_member_no_rule_reads_is_checked_when_the_layout_changed() {
    let src = br#"{"ociVersion": "1.0.2", "hooks": {}, "linux": {"sysctl": {"a": "1"}, "x": 1}}"#;
    let mut spec = Spec::read(src.to_vec()).unwrap();
    // A member the rules read, added: the writer lays the object out
    // again, and the check compares what no rule reads one by one.
    spec.view_mut()["process"] = json!({"user": {"uid": 0}});
    let out = write(&spec);
    assert!(read_back(out.clone(), &spec).is_ok());
    let text = String::from_utf8(out).unwrap();
    for (from, to) in [
        ("1.0.2", "1.0.3"),
        ("\"x\": 1", "\"x\": 2"),
        ("{}", "{\"a\": 1}"),
    ] {
        let changed = text.replacen(from, to, 1).into_bytes();
        let r = read_back(changed, &spec).unwrap_err();
        assert_eq!(r.rule, "write", "{from}: {r}");
    }
}

#[test]
fn a_mount_that_cannot_be_edited_is_refused_not_skipped() {
    let mut spec = Spec::read(br#"{"mounts": [5, {"destination": "/a"}]}"#.to_vec()).unwrap();
    assert_eq!(
        spec.mount_mut(0).unwrap_err().to_string(),
        "spec: mounts[0]: expected an object, found a number"
    );
    assert_eq!(spec.mount_mut(2).unwrap_err().field, "mounts[2]");
    spec.mount_mut(1)
        .unwrap()
        .insert("type".into(), json!("bind"));
    let out: Value = serde_json::from_slice(&write(&spec)).unwrap();
    assert_eq!(
        out["mounts"][1],
        json!({"destination": "/a", "type": "bind"})
    );
}

/// The plan's spec for `text`, and what the writer writes for it.
fn converted(text: &[u8]) -> (Spec, Vec<u8>) {
    let spec = Spec::read(text.to_vec()).unwrap();
    let plan = evaluate(spec, &HostFacts::default(), &Policy::default()).unwrap();
    assert!(plan.changed());
    let out = write(&plan.spec);
    (plan.spec, out)
}

/// Does the check of a write confirm `out` for `spec`?
fn confirmed(spec: &Spec, out: &[u8]) -> bool {
    read_back(out.to_vec(), spec).is_ok()
}

#[test]
fn a_conversion_is_checked_where_it_was_written() {
    let made: Vec<String> = FIXTURES.iter().map(|t| with_userns_hostnet(t)).collect();
    let mut checked = 0;
    for text in &made {
        let spec = Spec::read(text.as_bytes().to_vec()).unwrap();
        let Ok(plan) = evaluate(spec, &HostFacts::default(), &Policy::default()) else {
            continue;
        };
        let out = write(&plan.spec);
        assert!(confirmed(&plan.spec, &out), "{text}");
        assert_eq!(write_checked(&plan.spec).unwrap(), out);
        checked += 1;
    }
    assert!(checked >= FIXTURES.len() / 2, "{checked} converted");
}

#[test]
fn the_check_in_place_confirms_only_what_reads_back_as_decided() {
    let text = serde_json::to_vec_pretty(&userns_spec()).unwrap();
    let (spec, out) = converted(&text);
    let out = String::from_utf8(out).unwrap();
    let caps = "\"capabilities\": {\n      \"bounding\": [\n        \"CAP_CHOWN\"\n      ]";
    assert!(out.contains(caps), "{out}");
    let refused = [
        // A byte outside what the writer wrote.
        out.replacen("\"A=", "\"B=", 1),
        out.replacen("\"rootfs\"", "\"rootfs2\"", 1),
        // What it wrote: not strictly readable where it lies, or other
        // than decided.
        out.replacen(caps, &format!("{caps}, \"bounding\": []"), 1),
        out.replacen(caps, &caps.replace("bounding", "Bounding"), 1),
        out.replacen(caps, &caps.replace("CAP_CHOWN", "CAP_CHOWN\\u0000"), 1),
        out.replacen(caps, &caps.replace("CAP_CHOWN", "CAP_KILL"), 1),
        out.replacen(caps, &caps.replace("]", "],"), 1),
        out.replacen("\"rro\"", "\"ro\"", 1),
        out.replacen("\"rro\"", "\"rro\", \"x\": 1", 1),
        // A mount more in the list written: first (every mount after it
        // in another place), or last (every other one in its place).
        out.replacen(
            "\"mounts\": [",
            "\"mounts\": [{\"destination\": \"/x\"},",
            1,
        ),
        out.replacen(
            "\n  ],\n  \"annotations\"",
            ",\n    {\"destination\": \"/x\"}\n  ],\n  \"annotations\"",
            1,
        ),
    ];
    let in_place = |bytes: &[u8]| spliced_reads_back(bytes, &spec, &slots(&spec).unwrap());
    assert!(
        in_place(out.as_bytes()),
        "the members written checked in place"
    );
    // A mount fewer, the last: every other one in its place.
    let list = slices::member_span(&out, "mounts").unwrap();
    let (elements, _) = slices::elements(&out, list.start as usize);
    let [.., (_, before_last), (_, last)] = elements[..] else {
        panic!("{out}")
    };
    let fewer = format!("{}{}", &out[..before_last], &out[last..]);
    assert!(!in_place(fewer.as_bytes()), "{fewer}");
    assert!(!confirmed(&spec, fewer.as_bytes()), "{fewer}");
    for bad in refused {
        assert_ne!(bad, out);
        assert!(!in_place(bad.as_bytes()), "{bad}");
        assert!(!confirmed(&spec, bad.as_bytes()), "{bad}");
    }
    // Other whitespace or escapes inside what it wrote read the same.
    for same in [
        out.replacen(caps, &caps.replace("\n", " "), 1),
        out.replacen(caps, &caps.replace("CHOWN", "\\u0043HOWN"), 1),
    ] {
        assert!(in_place(same.as_bytes()), "{same}");
        assert!(confirmed(&spec, same.as_bytes()), "{same}");
        assert!(read_back(same.into_bytes(), &spec).is_ok());
    }
}

/// [`equal`] compares numbers as serde_json does, by the text it keeps,
/// whether or not that is the text as written.
#[test]
fn numbers_compare_as_serde_json_keeps_them() {
    for text in [
        "0",
        "-0",
        "7",
        "1.50E3",
        "1.5e+3",
        "2E-7",
        "-0.0",
        "18446744073709551616",
        "1e400",
        "-12345678901234567890.0000000001",
    ] {
        let n: serde_json::Number = serde_json::from_str(text).unwrap();
        assert_eq!(equal(text, 0, &Value::Number(n)), Some(text.len()));
        let other: serde_json::Number = serde_json::from_str("3").unwrap();
        assert_eq!(equal(text, 0, &Value::Number(other)), None);
    }
}

#[test]
fn mounts_edited_in_place_are_read_again_one_by_one() {
    let (spec, out) = converted(FIXTURES[6].as_bytes());
    assert!(confirmed(&spec, &out));
    // A byte of a mount no rule edited is not the byte read; a byte of
    // the edited one reads otherwise than decided.
    let text = String::from_utf8(out).unwrap();
    for bad in [
        text.replacen("\"/proc\"", "\"/proc2\"", 1),
        text.replacen("\"rro\"", "\"rro \"", 1),
    ] {
        assert!(!confirmed(&spec, bad.as_bytes()), "{bad}");
    }
}
