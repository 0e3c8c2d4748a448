//! The strict reader against models of how the runtimes read the same
//! bytes: the real fixtures with one key mutated (its case changed, a
//! KELVIN SIGN or LONG S in place of k or s, a NUL appended, or the entry
//! duplicated with the same or another value) either are refused, or read
//! to a document whose decision-relevant parts are what Go's
//! encoding/json (runc: keys folded, last duplicate wins, objects merged)
//! and yajl (crun: exact keys, first duplicate wins) make of those bytes.
//!
//! The models are written here, independently of the reader: the
//! structs the decision and the rules read (`linux`, its namespaces and
//! mappings, `mounts`, `process.user`, `process.capabilities`, `root`)
//! with their fields, as runtime-spec's Go structs name them.

use proptest::prelude::*;
use serde::de::{self, Deserialize, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use userns_hostnet_engine::strict::read_spec;
use userns_hostnet_engine::Spec;

use userns_hostnet_engine::fixtures::FIXTURES;

/// A JSON document with every key kept, duplicates included, in order.
#[derive(Debug, Clone)]
enum Raw {
    Scalar(Value),
    Array(Vec<Raw>),
    Object(Vec<(String, Raw)>),
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Raw, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Scalar(v.into()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Scalar(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw::Scalar(v.into()))
    }
    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Scalar(v.into()))
    }
    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw::Scalar(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = a.next_element()? {
            v.push(x);
        }
        Ok(Raw::Array(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
        let mut v = Vec::new();
        while let Some(k) = a.next_key::<String>()? {
            if v.is_empty() && k == "$serde_json::private::Number" {
                let n: String = a.next_value()?;
                return Ok(Raw::Scalar(Value::Number(
                    n.parse().map_err(de::Error::custom)?,
                )));
            }
            v.push((k, a.next_value()?));
        }
        Ok(Raw::Object(v))
    }
}

fn write(raw: &Raw, out: &mut String) {
    match raw {
        Raw::Scalar(v) => out.push_str(&v.to_string()),
        Raw::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(x, out);
            }
            out.push(']');
        }
        Raw::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(k.as_str()).to_string());
                out.push(':');
                write(x, out);
            }
            out.push('}');
        }
    }
}

/// The decision-relevant structs, as Go names their fields.
#[derive(Clone, Copy)]
enum Model {
    Struct(&'static [(&'static str, Model)]),
    Array(&'static Model),
    Leaf,
}

const ID_MAPPING: Model = Model::Struct(&[
    ("containerID", Model::Leaf),
    ("hostID", Model::Leaf),
    ("size", Model::Leaf),
]);
const MAPPINGS: Model = Model::Array(&ID_MAPPING);
const SPEC: Model = Model::Struct(&[
    (
        "linux",
        Model::Struct(&[
            (
                "namespaces",
                Model::Array(&Model::Struct(&[
                    ("type", Model::Leaf),
                    ("path", Model::Leaf),
                ])),
            ),
            ("uidMappings", MAPPINGS),
            ("gidMappings", MAPPINGS),
            ("sysctl", Model::Leaf),
        ]),
    ),
    (
        "mounts",
        Model::Array(&Model::Struct(&[
            ("destination", Model::Leaf),
            ("type", Model::Leaf),
            ("source", Model::Leaf),
            ("options", Model::Leaf),
            ("uidMappings", MAPPINGS),
            ("gidMappings", MAPPINGS),
        ])),
    ),
    (
        "process",
        Model::Struct(&[
            (
                "user",
                Model::Struct(&[
                    ("uid", Model::Leaf),
                    ("gid", Model::Leaf),
                    ("additionalGids", Model::Leaf),
                ]),
            ),
            (
                "capabilities",
                Model::Struct(&[
                    ("bounding", Model::Leaf),
                    ("effective", Model::Leaf),
                    ("inheritable", Model::Leaf),
                    ("permitted", Model::Leaf),
                    ("ambient", Model::Leaf),
                ]),
            ),
        ]),
    ),
    ("root", Model::Struct(&[("path", Model::Leaf)])),
]);

/// Go's simple folding for these ASCII names: the KELVIN SIGN is k, the
/// LONG S is s (unicode.SimpleFold's orbits).
fn go_fold(key: &str) -> String {
    key.chars()
        .map(|c| match c {
            '\u{212A}' => 'k',
            '\u{17F}' => 's',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// A leaf as Go keeps it: the last duplicate (maps, lists and scalars
/// are replaced whole; the leaves here hold no structs).
fn leaf(raw: &Raw, go: bool) -> Value {
    match raw {
        Raw::Scalar(v) => v.clone(),
        Raw::Array(a) => Value::Array(a.iter().map(|x| leaf(x, go)).collect()),
        Raw::Object(o) => {
            let mut m = Map::new();
            for (k, x) in o {
                if go || !m.contains_key(k) {
                    m.insert(k.clone(), leaf(x, go));
                }
            }
            Value::Object(m)
        }
    }
}

/// What runc (`go`) or crun reads at a model position: only the model's
/// fields, by Go's rules or yajl's.
fn view(raw: &Raw, model: Model, go: bool, into: &mut Value) {
    match (model, raw) {
        (Model::Leaf, r) => *into = leaf(r, go),
        (Model::Array(m), Raw::Array(a)) => {
            // Go decodes a later array over a fresh slice: no merge.
            *into = Value::Array(
                a.iter()
                    .map(|x| {
                        let mut v = Value::Null;
                        view(x, *m, go, &mut v);
                        v
                    })
                    .collect(),
            );
        }
        (Model::Struct(fields), Raw::Object(o)) => {
            if !into.is_object() {
                *into = Value::Object(Map::new());
            }
            let mut seen = Vec::new();
            for (k, x) in o {
                let field = match go {
                    true => fields.iter().find(|(f, _)| f == k).or_else(|| {
                        fields
                            .iter()
                            .find(|(f, _)| go_fold(k) == f.to_ascii_lowercase())
                    }),
                    false => fields
                        .iter()
                        .find(|(f, _)| f.as_bytes() == k.split('\0').next().unwrap().as_bytes()),
                };
                let Some((name, m)) = field else { continue };
                if !go && seen.contains(name) {
                    continue; // yajl: the first wins
                }
                seen.push(*name);
                // Go: a later object decodes into the same struct.
                let slot = into
                    .as_object_mut()
                    .unwrap()
                    .entry(*name)
                    .or_insert(Value::Null);
                if go && !matches!(m, Model::Struct(_)) {
                    *slot = Value::Null;
                }
                view(x, *m, go, slot);
            }
        }
        (_, r) => *into = leaf(r, go),
    }
}

fn read_as(raw: &Raw, go: bool) -> Value {
    let mut v = Value::Null;
    view(raw, SPEC, go, &mut v);
    v
}

/// Every object key in preorder, as a path of child indices.
fn keys(raw: &Raw, at: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    match raw {
        Raw::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                at.push(i);
                keys(x, at, out);
                at.pop();
            }
        }
        Raw::Object(o) => {
            for (i, (_, x)) in o.iter().enumerate() {
                at.push(i);
                out.push(at.clone());
                keys(x, at, out);
                at.pop();
            }
        }
        Raw::Scalar(_) => {}
    }
}

/// The object holding the entry at `path` and the entry's index.
fn holder<'a>(raw: &'a mut Raw, path: &[usize]) -> (&'a mut Vec<(String, Raw)>, usize) {
    let (last, up) = path.split_last().unwrap();
    let mut node = raw;
    for &i in up {
        node = match node {
            Raw::Array(a) => &mut a[i],
            Raw::Object(o) => &mut o[i].1,
            Raw::Scalar(_) => unreachable!(),
        };
    }
    match node {
        Raw::Object(o) => (o, *last),
        _ => unreachable!(),
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Upper,
    UpperFirst,
    Kelvin,
    LongS,
    Nul,
    Duplicate {
        other: prop::sample::Index,
        before: bool,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        Just(Mutation::Upper),
        Just(Mutation::UpperFirst),
        Just(Mutation::Kelvin),
        Just(Mutation::LongS),
        Just(Mutation::Nul),
        (any::<prop::sample::Index>(), any::<bool>())
            .prop_map(|(other, before)| Mutation::Duplicate { other, before }),
    ]
}

/// The fixture with one key mutated, as bytes.
fn mutate(raw: &Raw, at: prop::sample::Index, m: &Mutation) -> String {
    let mut all = Vec::new();
    keys(raw, &mut Vec::new(), &mut all);
    let mut raw = raw.clone();
    let path = all[at.index(all.len())].clone();
    let others: Vec<Raw> = {
        let mut v = Vec::new();
        collect(&raw, &mut v);
        v
    };
    let (obj, i) = holder(&mut raw, &path);
    let key = &mut obj[i].0;
    match m {
        Mutation::Upper => *key = key.to_uppercase(),
        Mutation::UpperFirst => {
            let mut c = key.chars();
            if let Some(f) = c.next() {
                *key = f.to_uppercase().chain(c).collect();
            }
        }
        Mutation::Kelvin => *key = key.replacen('k', "\u{212A}", 1),
        Mutation::LongS => *key = key.replacen('s', "\u{17F}", 1),
        Mutation::Nul => key.push('\0'),
        Mutation::Duplicate { other, before } => {
            let value = others[other.index(others.len())].clone();
            let entry = (obj[i].0.clone(), value);
            obj.insert(if *before { i } else { i + 1 }, entry);
        }
    }
    let mut out = String::new();
    write(&raw, &mut out);
    out
}

fn collect(raw: &Raw, out: &mut Vec<Raw>) {
    out.push(raw.clone());
    match raw {
        Raw::Array(a) => a.iter().for_each(|x| collect(x, out)),
        Raw::Object(o) => o.iter().for_each(|(_, x)| collect(x, out)),
        Raw::Scalar(_) => {}
    }
}

/// `Ok(true)`: read, as the runtimes read it; `Ok(false)`: refused.
fn outcome(text: &str) -> Result<bool, String> {
    let raw: Raw = serde_json::from_str(text).unwrap();
    let Ok(strict) = read_spec(text.as_bytes()) else {
        return Ok(false);
    };
    let strict_raw: Raw = serde_json::from_value(strict).unwrap();
    let ours = read_as(&strict_raw, true);
    for (go, who) in [(true, "runc (Go)"), (false, "crun (yajl)")] {
        let theirs = read_as(&raw, go);
        if theirs != ours {
            return Err(format!("{who} reads {theirs}\nthe reader gave {ours}"));
        }
    }
    Ok(true)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_mutated_key_is_refused_or_read_as_the_runtimes_read_it(
        fixture in 0..FIXTURES.len(),
        at in any::<prop::sample::Index>(),
        m in mutation(),
    ) {
        let raw: Raw = serde_json::from_str(FIXTURES[fixture]).unwrap();
        let text = mutate(&raw, at, &m);
        if let Err(e) = outcome(&text) {
            prop_assert!(false, "{:?}: {}\n{}", m, e, text);
        }
        // The wrapper's reader (one pass, spans) refuses the same, in the
        // same words, and what it reads is the whole reading's.
        let whole = read_spec(text.as_bytes()).map_err(|r| r.to_string());
        let spec = Spec::read(text.clone().into_bytes()).map_err(|r| r.to_string());
        match (whole, spec) {
            (Ok(w), Ok(spec)) => {
                let v = spec.view();
                let mounts: Vec<Value> = spec.mounts().map_err(|r| TestCaseError::fail(r.to_string()))?.iter().map(|m| m.to_value()).collect();
                let read = match w.get("mounts") {
                    None | Some(Value::Null) => Value::Array(vec![]),
                    Some(m) => m.clone(),
                };
                prop_assert_eq!(read, Value::Array(mounts));
                prop_assert_eq!(w.get("root"), v.get("root"));
                for (k, sub) in [("linux", &["namespaces", "uidMappings", "gidMappings", "sysctl"][..]), ("process", &["user", "capabilities"][..])] {
                    for s in sub {
                        prop_assert_eq!(w.get(k).and_then(|x| x.get(s)), v.get(k).and_then(|x| x.get(s)));
                    }
                }
            }
            (w, v) => prop_assert_eq!(w.err(), v.err()),
        }
    }
}

/// Both outcomes occur: mutations of decision-relevant keys are refused,
/// mutations of map keys and unknown keys are read.
#[test]
fn mutations_reach_both_outcomes() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut refused, mut accepted) = (0, 0);
    let strategy = (0..FIXTURES.len(), any::<prop::sample::Index>(), mutation());
    for _ in 0..400 {
        let (f, at, m) = strategy.new_tree(&mut runner).unwrap().current();
        let raw: Raw = serde_json::from_str(FIXTURES[f]).unwrap();
        let text = mutate(&raw, at, &m);
        match outcome(&text) {
            Ok(true) => accepted += 1,
            Ok(false) => refused += 1,
            Err(e) => panic!("{m:?}: {e}"),
        }
    }
    assert!(
        refused > 100 && accepted > 40,
        "refused {refused}, accepted {accepted}"
    );
}

/// The models are not vacuous: on the bytes the reader refuses, runc and
/// crun really read something else.
#[test]
fn the_models_see_the_disagreement() {
    let text = r#"{"linux": {"namespaces": [{"type": "user"}]}, "Linux": {"namespaces": []}}"#;
    let raw: Raw = serde_json::from_str(text).unwrap();
    assert_eq!(
        read_as(&raw, true)["linux"]["namespaces"],
        serde_json::json!([])
    );
    assert_eq!(
        read_as(&raw, false)["linux"]["namespaces"],
        serde_json::json!([{"type": "user"}])
    );
    let text = r#"{"linux": {"namespaces": [{"type": "user"}], "uidMappings": []}, "linux": {"uidMappings": [{"hostID": 0}]}}"#;
    let raw: Raw = serde_json::from_str(text).unwrap();
    let go = read_as(&raw, true);
    assert_eq!(go["linux"]["namespaces"][0]["type"], "user", "merged: {go}");
    assert_eq!(go["linux"]["uidMappings"][0]["hostID"], 0);
    assert_eq!(
        read_as(&raw, false)["linux"]["uidMappings"],
        serde_json::json!([])
    );
    assert!(read_spec(text.as_bytes()).is_err());
}
