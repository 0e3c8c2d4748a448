//! The engine's one writer against the whole document serialized again: a spec
//! converted and written as edits of the bytes read (`engine::write::write`)
//! comes out as the whole document serialized again in the input's layout
//! (`tests/support/whole_writer.rs`, the oracle) does.

use serde_json::Value;
use userns_hostnet_engine::strict::read_spec;
use userns_hostnet_engine::write::write;
use userns_hostnet_engine::{evaluate, evaluate_value, HostFacts, Policy, Spec};

#[path = "support/whole_writer.rs"]
mod whole_writer;
use userns_hostnet_engine::fixtures::{userns_spec, with_userns_hostnet, FIXTURES};
use whole_writer::serialize_like;

/// What the whole-document path writes: every member read, the whole
/// document serialized again.
fn whole(bytes: &[u8]) -> Option<Vec<u8>> {
    let plan = evaluate_value(
        &read_spec(bytes).ok()?,
        &HostFacts::default(),
        &Policy::default(),
    )
    .ok()?;
    plan.changed()
        .then(|| serialize_like(&plan.spec.to_value().unwrap(), bytes))
}

/// What the view path writes.
fn edited(bytes: &[u8]) -> Option<Vec<u8>> {
    let spec = Spec::read(bytes.to_vec()).unwrap();
    let plan = evaluate(spec, &HostFacts::default(), &Policy::default()).ok()?;
    plan.changed().then(|| write(&plan.spec))
}

fn parsed(bytes: &[u8]) -> String {
    serde_json::to_string(&serde_json::from_slice::<Value>(bytes).unwrap()).unwrap()
}

#[test]
fn every_fixture_comes_out_as_the_whole_document_path_writes_it() {
    let mut converted = 0;
    let made: Vec<String> = FIXTURES.iter().map(|t| with_userns_hostnet(t)).collect();
    for text in FIXTURES
        .iter()
        .copied()
        .chain(made.iter().map(String::as_str))
    {
        let bytes = text.as_bytes();
        let old = whole(bytes);
        let new = edited(bytes);
        assert_eq!(
            old.as_deref().map(String::from_utf8_lossy),
            new.as_deref().map(String::from_utf8_lossy)
        );
        converted += usize::from(new.is_some());
    }
    assert!(
        converted >= FIXTURES.len(),
        "{converted} fixtures converted"
    );
}

#[test]
fn edits_keep_the_layout_and_bytes_around_them() {
    let spec = userns_spec();
    let tab = {
        let mut out = Vec::new();
        let f = serde_json::ser::PrettyFormatter::with_indent(b"\t");
        let mut ser = serde_json::Serializer::with_formatter(&mut out, f);
        serde::Serialize::serialize(&spec, &mut ser).unwrap();
        // Go's escapes and a number's own spelling, which serde_json
        // would not write.
        String::from_utf8(out)
            .unwrap()
            .replace("<>&", "\\u003c\\u003e\\u0026")
            .replace("1500.0", "1.50e3")
            .replace("1000000000.0", "1.0e9")
    };
    for text in [
        tab.clone(),
        serde_json::to_string(&spec).unwrap(),
        serde_json::to_string_pretty(&spec).unwrap() + "\n",
    ] {
        let old = whole(text.as_bytes()).unwrap();
        let new = edited(text.as_bytes()).unwrap();
        assert_eq!(
            parsed(&old),
            parsed(&new),
            "{}",
            String::from_utf8_lossy(&new)
        );
        if !text.contains('\t') {
            assert_eq!(String::from_utf8_lossy(&old), String::from_utf8_lossy(&new));
        }
    }
    let new = String::from_utf8(edited(tab.as_bytes()).unwrap()).unwrap();
    for kept in [
        "\\u003c\\u003e\\u0026",
        "1.50e3",
        "1.0e9",
        "\n\t\"linux\": {\n\t\t\"namespaces\"",
    ] {
        assert!(new.contains(kept), "{kept} lost:\n{new}");
    }
    assert!(!new.contains("  "), "{new}");
    assert!(
        new.contains("\t\t\t\"destination\": \"/sys\",\n\t\t\t\"type\": \"bind\""),
        "{new}"
    );
}

#[test]
fn serialize_follows_the_original_style() {
    let v: Value = serde_json::from_str("{\"a\":[1,2]}").unwrap();
    assert_eq!(serialize_like(&v, b"{\"a\":[1]}"), b"{\"a\":[1,2]}");
    assert_eq!(
        serialize_like(&v, b"{\n  \"a\": [1]\n}\n"),
        b"{\n  \"a\": [\n    1,\n    2\n  ]\n}\n"
    );
}
