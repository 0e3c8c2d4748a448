//! The scanner against the whole-document reader ([`reference`]): the same
//! documents accepted, the same spans recorded. The boundaries are spelt
//! out with what both must say; generated documents and mutated fixtures
//! are compared by the thousand.

use super::*;
use proptest::prelude::*;

use crate::specs::FIXTURES;

/// A record with spans in other places than [`spans::SPEC`]'s, for the
/// generated documents, whose keys are short.
const OTHER: Record = Record::Members(&[
    ("a", Record::Mounts),
    (
        "b",
        Record::Members(&[("a", Record::Whole), ("mounts", Record::Mounts)]),
    ),
    ("c", Record::Whole),
    ("d", Record::Elements),
    (
        "linux",
        Record::Members(&[("sysctl", Record::Members(&[]))]),
    ),
]);

const RECORDS: &[Record] = &[spans::SPEC, spans::CHECK, OTHER];

/// Whether `bytes` are accepted as a spec, after checking that the
/// scanner and the reference agree on every document kind and record.
fn agree(bytes: &[u8]) -> bool {
    for doc in [Document::Spec, Document::Process] {
        for record in RECORDS {
            let fast = scan(bytes, doc, *record);
            let slow = reference(bytes, doc, *record);
            assert_eq!(fast, slow, "{doc:?} {record:?}: {:?}", shown(bytes));
        }
    }
    reference(bytes, Document::Spec, spans::SPEC).is_some()
}

fn shown(bytes: &[u8]) -> String {
    if bytes.len() > 2000 {
        return format!("{} bytes", bytes.len());
    }
    String::from_utf8_lossy(bytes).into_owned()
}

fn accepted(text: impl AsRef<[u8]>) {
    let bytes = text.as_ref();
    assert!(agree(bytes), "refused: {:?}", shown(bytes));
}

fn refused(text: impl AsRef<[u8]>) {
    let bytes = text.as_ref();
    assert!(!agree(bytes), "accepted: {:?}", shown(bytes));
}

#[test]
fn the_fixtures_scan_as_the_reference_reads_them() {
    for text in FIXTURES {
        accepted(text);
        let rec = scan(text.as_bytes(), Document::Spec, spans::SPEC).unwrap();
        assert_eq!(rec.span(), Span::new(0, text.trim_end().len()));
        assert!(rec.member("mounts").is_some());
    }
}

#[test]
fn mount_spans_name_each_member() {
    let text = br#" {"mounts": [{"destination": "/d", "type" : "bind", "source":"/s",
        "options": ["ro"], "uidMappings": [], "gidMappings": null, "other": 1},
        {"typ\u0065": "tmpfs"}, 5, []], "linux": {"sysctl": {"a": "1"}}} "#;
    accepted(text);
    let rec = scan(text, Document::Spec, spans::SPEC).unwrap();
    let Some(Rec::Mounts { elements, .. }) = rec.member("mounts") else {
        panic!("{rec:?}")
    };
    let at = |s: Option<Span>| String::from_utf8_lossy(s.unwrap().bytes(text)).into_owned();
    assert_eq!(elements.len(), 4);
    assert_eq!(at(elements[0].destination()), "\"/d\"");
    assert_eq!(at(elements[0].kind()), "\"bind\"");
    assert_eq!(at(elements[0].options()), "[\"ro\"]");
    assert_eq!(at(elements[0].member("gidMappings")), "null");
    assert_eq!(at(elements[1].kind()), "\"tmpfs\"");
    assert_eq!(at(Some(elements[2].element)), "5");
    assert_eq!(elements[3].destination(), None);
    let sysctl = rec
        .member("linux")
        .and_then(|l| l.member("sysctl"))
        .unwrap();
    assert_eq!(sysctl.span().bytes(text), br#"{"a": "1"}"#);
}

/// `n` arrays, one in the other.
fn nested(n: usize) -> String {
    "[".repeat(n) + &"]".repeat(n)
}

#[test]
fn depth_127_is_read_and_128_is_not() {
    accepted(format!("{{\"x\": {}}}", nested(MAX_DEPTH - 1)));
    refused(format!("{{\"x\": {}}}", nested(MAX_DEPTH)));
    let objects = |n: usize| "{\"a\":".repeat(n) + "1" + &"}".repeat(n);
    accepted(objects(MAX_DEPTH));
    refused(objects(MAX_DEPTH + 1));
    // Mixed, and in a recorded member.
    let mixed = |n: usize| "{\"mounts\":[{\"destination\":".to_string() + &nested(n) + "}]}";
    accepted(mixed(MAX_DEPTH - 3));
    refused(mixed(MAX_DEPTH - 2));
    refused(nested(100_000));
}

#[test]
fn surrogates_only_paired() {
    accepted(r#"{"x": "\ud800\udc00", "y": "\uDBFF\uDFFF"}"#);
    accepted(r#"{"\ud83d\ude00": "\uD7FF\uE000\uFFFF"}"#);
    refused(r#"{"x": "\ud800"}"#);
    refused(r#"{"x": "\udc00"}"#);
    refused(r#"{"x": "\ud800\u0041"}"#);
    refused(r#"{"x": "\ud800\ud800"}"#);
    refused(r#"{"x": "\udc00\ud800"}"#);
    refused(r#"{"x": "\ud800x"}"#);
    refused(r#"{"x": "\ud800\n"}"#);
    refused(r#"{"x": "\ud800\"#);
    refused(r#"{"x": "\ud800\u"}"#);
    refused(r#"{"\ud800": 1}"#);
}

#[test]
fn nul_nowhere_other_controls_only_escaped() {
    refused(r#"{"x": "\u0000"}"#);
    refused(r#"{"x\u0000": 1}"#);
    refused(r#"{"linux\u0000": {}}"#);
    accepted(r#"{"x": "\u0001\u001f\b\f\n\r\t\/\\\""}"#);
    refused(b"{\"x\": \"\x00\"}");
    refused(b"{\"x\": \"\x1f\"}");
    refused(b"{\"x\x0a\": 1}");
    accepted(b"{\"x\": \"\x7f\"}");
    refused(b"{\"x\": 1\x1f}");
    refused(r#"{"x": "\x41"}"#);
    refused(r#"{"x": "\U0041"}"#);
    refused(r#"{"x": "\u00G0"}"#);
    refused(r#"{"x": "\u12"}"#);
    accepted(r#"{"x": "\u00e9\u00E9"}"#);
}

#[test]
fn utf8_checked_in_strings() {
    accepted("{\"x\": \"é ſ K 😀\", \"é\": \"\u{10FFFF}\"}");
    refused(b"{\"x\": \"\xff\"}");
    refused(b"{\"x\": \"\xc0\x80\"}");
    refused(b"{\"x\": \"\xe2\x82\"}");
    refused(b"{\"x\": \"\xed\xa0\x80\"}");
    refused(b"{\"x\": \"\xc3\\u00a9\"}");
    refused(b"{\"x\xa9\": 1}");
    // A multi-byte character across the eight-byte words.
    for pad in 0..10 {
        let text = format!("{{\"x\": \"{}é{}\"}}", "a".repeat(pad), "b".repeat(pad));
        accepted(&text);
        let mut bytes = text.into_bytes();
        let at = bytes.iter().position(|&b| b == 0xc3).unwrap();
        bytes.remove(at);
        refused(bytes);
    }
    refused(b"\xef\xbb\xbf{}");
}

#[test]
fn the_top_level_is_one_object_and_nothing_else() {
    refused("");
    refused(" \n\t");
    accepted("{}");
    accepted(" \r\n\t{}  \n\t\r ");
    refused("{} x");
    refused("{}x");
    refused("{}{}");
    refused("{},");
    refused("{}\u{c}");
    refused("\u{c}{}");
    refused("\u{a0}{}");
    refused("[]");
    refused("\"x\"");
    refused("1");
    refused("null");
    refused("{");
    refused("}");
    refused("{\"a\"");
    refused("{\"a\":");
    refused("{\"a\":1");
    refused("{\"a\":1,");
}

#[test]
fn objects_and_arrays_as_rfc_8259_has_them() {
    accepted(r#"{"a": [], "b": {}, "c": [1, [2, {}], "x"], "d": {"e": null}}"#);
    refused(r#"{"a":1,}"#);
    refused(r#"{"a":[1,]}"#);
    refused(r#"{"a":[,1]}"#);
    refused(r#"{,"a":1}"#);
    refused(r#"{"a" 1}"#);
    refused(r#"{"a":1 "b":2}"#);
    refused(r#"{"a":[1 2]}"#);
    refused(r#"{"a"::1}"#);
    refused(r#"{a:1}"#);
    refused(r#"{'a':1}"#);
    refused(r#"{1:1}"#);
    refused(r#"{"a":[}"#);
    refused(r#"{"a":{]}"#);
    refused(r#"{"a":1}}"#);
    refused(r#"{"a": /* c */ 1}"#);
}

#[test]
fn numbers_as_serde_json_reads_them() {
    for n in [
        "0",
        "-0",
        "7",
        "-12",
        "0.5",
        "-0.0e0",
        "1e5",
        "1E+5",
        "1.5e-3",
        "18446744073709551616",
        "-9223372036854775809",
        "1e999999",
        &"9".repeat(1000),
    ] {
        accepted(format!(
            "{{\"n\": {n}, \"m\": [{n}], \"o\": {{\"p\":{n}}}}}"
        ));
    }
    for n in [
        "01", "-01", "00", "1.", ".5", "-", "+1", "1e", "1e+", "1.e5", "0x10", "1_0", "--1",
        "Infinity", "NaN", "1.5.5", "1e5e5", "- 1",
    ] {
        refused(format!("{{\"n\": {n}}}"));
        refused(format!("{{\"n\": [{n}]}}"));
    }
    for w in ["true", "false", "null"] {
        accepted(format!("{{\"n\": {w}}}"));
        refused(format!("{{\"n\": {}}}", &w[..w.len() - 1]));
        refused(format!("{{\"n\": {w}x}}"));
        refused(format!("{{\"n\": {}}}", w.to_uppercase()));
    }
}

#[test]
fn fields_only_exactly() {
    accepted(r#"{"linux": {"uidMappings": []}, "mounts": [{"type": "bind"}]}"#);
    refused(r#"{"Linux": {}}"#);
    refused(r#"{"linux": {"UIDMappings": []}}"#);
    refused(r#"{"mounts": [{"Type": "bind"}]}"#);
    refused(r#"{"\u004cinux": {}}"#);
    refused(r#"{"mount\u017F": []}"#);
    refused("{\"mountſ\": []}");
    refused(r#"{"process": {"user": {"uid": 0, "uma\u017Fk": 1}}}"#);
    refused("{\"process\": {\"user\": {\"umas\u{212A}\": 1}}}");
    refused(r#"{"linux": {"resources": {"memory": {"\u212Aernel": 1}}}}"#);
    refused("{\"linux\": {\"namespaces\": [{\"TYPE\": \"user\"}]}}");
    // Exactly a field, though written with escapes: recorded as it.
    let text = r#"{"linu\u0078": {"sysctl": {"k": "v"}}}"#;
    accepted(text);
    let rec = scan(text.as_bytes(), Document::Spec, spans::SPEC).unwrap();
    assert!(rec
        .member("linux")
        .and_then(|l| l.member("sysctl"))
        .is_some());
    // Map keys and unknown members' keys are data.
    accepted(r#"{"annotations": {"Linux": 1, "MOUNTS": 2}, "x": {"Linux": 3}}"#);
    accepted(r#"{"linux": {"sysctl": {"Net.Core": "1"}}}"#);
    // A process file has the process's fields at the top.
    let text = r#"{"User": {}}"#;
    agree(text.as_bytes());
    assert!(scan(text.as_bytes(), Document::Process, spans::SPEC).is_none());
    assert!(scan(text.as_bytes(), Document::Spec, spans::SPEC).is_some());
}

#[test]
fn duplicates_nowhere() {
    refused(r#"{"a": 1, "a": 2}"#);
    refused(r#"{"a": 1, "\u0061": 2}"#);
    refused(r#"{"\u0061": 1, "a": 2}"#);
    refused(r#"{"\u0061": 1, "\u0061": 2}"#);
    refused(r#"{"x": [{"b": {"c": 1, "c": 1}}]}"#);
    accepted(r#"{"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]}"#);
    accepted(r#"{"a": 1, "A": 2, "\u00e9": 3, "e": 4}"#);
    refused(r#"{"\u00e9": 3, "é": 4}"#);
    // Past the few kept in a list: by hash.
    for n in [15, 16, 17, 40, 300] {
        let keys: Vec<String> = (0..n).map(|i| format!("\"k{i}\": {i}")).collect();
        let text = format!("{{{}}}", keys.join(","));
        accepted(&text);
        for dup in [
            "\"k0\": 1",
            "\"k\\u0030\": 1",
            &format!("\"k{}\": 1", n - 1),
        ] {
            refused(format!("{{{}, {dup}}}", keys.join(",")));
        }
        // The same keys in the next object are no duplicates.
        accepted(format!("{{\"a\": {text}, \"b\": {text}}}"));
    }
}

#[test]
fn the_number_token_is_refused_where_the_reference_reads_a_number() {
    let text = r#"{"a": {"$serde_json::private::Number": "1"}}"#;
    assert!(reference(text.as_bytes(), Document::Spec, spans::SPEC).is_some());
    assert!(scan(text.as_bytes(), Document::Spec, spans::SPEC).is_none());
    let escaped = r#"{"a": {"$serde_json::private::Numbe\u0072": "1"}}"#;
    assert!(scan(escaped.as_bytes(), Document::Spec, spans::SPEC).is_none());
}

#[test]
fn at_most_64_mib() {
    let mut big = b"{\"x\": \"".to_vec();
    big.resize(MAX_BYTES as usize - 2, b'x');
    big.extend_from_slice(b"\"}");
    assert_eq!(big.len() as u64, MAX_BYTES);
    let rec = scan(&big, Document::Spec, spans::SPEC);
    assert_eq!(rec, reference(&big, Document::Spec, spans::SPEC));
    assert!(rec.is_some());
    big.insert(1, b' ');
    assert!(scan(&big, Document::Spec, spans::SPEC).is_none());
    assert!(reference(&big, Document::Spec, spans::SPEC).is_none());
}

// Generated documents: a tree of values, written out with whitespace,
// escapes and, for some seeds, defects chosen by a seed.

#[derive(Debug, Clone)]
enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

const KEYS: &[&str] = &[
    "a",
    "b",
    "c",
    "d",
    "linux",
    "mounts",
    "process",
    "root",
    "annotations",
    "sysctl",
    "namespaces",
    "uidMappings",
    "gidMappings",
    "destination",
    "type",
    "source",
    "options",
    "user",
    "capabilities",
    "path",
    "hooks",
    "prestart",
    "args",
    "env",
    "rlimits",
    "bounding",
    "hostID",
    "size",
    "",
    "x y",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => prop::sample::select(KEYS).prop_map(String::from),
        // A field's name with a letter's case changed, or k and s as
        // KELVIN SIGN and LONG S.
        1 => (prop::sample::select(KEYS), any::<prop::sample::Index>(), 0..3u8).prop_map(
            |(k, at, how)| {
                let mut chars: Vec<char> = k.chars().collect();
                if !chars.is_empty() {
                    let i = at.index(chars.len());
                    chars[i] = match (how, chars[i]) {
                        (0, 'k') => '\u{212A}',
                        (0, 's') => '\u{17F}',
                        (_, c) if c.is_ascii_lowercase() => c.to_ascii_uppercase(),
                        (_, c) => c.to_ascii_lowercase(),
                    };
                }
                chars.into_iter().collect()
            }
        ),
        2 => text(),
    ]
}

fn text() -> impl Strategy<Value = String> {
    let c = prop_oneof![
        20 => prop::char::range('a', 'z'),
        4 => prop::sample::select(&[
            '"', '\\', '/', '\n', '\t', '\u{1}', '\u{1f}', '\u{7f}', 'é', 'K', '\u{212A}',
            '\u{17F}', '😀', '\u{FFFF}', '\u{10FFFF}', ' ', '\u{2028}', '\u{0}',
        ][..]),
        1 => any::<char>(),
    ];
    prop::collection::vec(c, 0..12).prop_map(|c| c.into_iter().collect())
}

fn number() -> impl Strategy<Value = String> {
    let digits = |n| prop::collection::vec(prop::char::range('0', '9'), n);
    let exp = prop::sample::select(&["e", "E", "e+", "E-", "e-"][..]);
    prop_oneof![
        8 => (
            any::<bool>(),
            prop::char::range('1', '9'),
            digits(0..25),
            prop::option::of(digits(1..4)),
            prop::option::of((exp, digits(1..4))),
        )
            .prop_map(|(neg, first, rest, frac, exp)| {
                let mut n = String::new();
                if neg {
                    n.push('-');
                }
                n.push(first);
                n.extend(rest);
                if let Some(f) = frac {
                    n.push('.');
                    n.extend(f);
                }
                if let Some((e, d)) = exp {
                    n.push_str(e);
                    n.extend(d);
                }
                n
            }),
        2 => prop::sample::select(&["0", "-0", "0.0", "0e0", "-0.5E+2"][..]).prop_map(String::from),
    ]
}

/// The members of an object: most often without a duplicate key.
fn members(
    value: impl Strategy<Value = Json>,
    n: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<(String, Json)>> {
    let dups = prop::bool::weighted(0.15);
    (prop::collection::vec((key(), value), n), dups).prop_map(|(mut m, dups)| {
        if !dups {
            let mut seen = std::collections::HashSet::new();
            m.retain(|(k, _)| seen.insert(k.clone()));
        }
        m
    })
}

fn json() -> impl Strategy<Value = Json> {
    tree(5, 40, 6)
}

/// A value of at most `depth` levels, about `size` values in all, `width`
/// in each.
fn tree(depth: u32, size: u32, width: u32) -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        number().prop_map(Json::Number),
        text().prop_map(Json::String),
    ];
    leaf.prop_recursive(depth, size, width, move |inner| {
        let n = 0..width as usize;
        prop_oneof![
            4 => prop::collection::vec(inner.clone(), n.clone()).prop_map(Json::Array),
            6 => members(inner.clone(), n).prop_map(Json::Object),
            // Many keys, for the hashed duplicate check.
            1 => members(inner, 14..40).prop_map(Json::Object),
        ]
    })
}

/// A document shaped like a spec: the members the records name, with
/// mounts, and other members.
fn document() -> impl Strategy<Value = Json> {
    let small = || tree(2, 6, 3);
    let mount = members(small(), 0..7).prop_map(Json::Object);
    let mounts = prop::collection::vec(prop_oneof![4 => mount, 1 => small()], 0..5);
    let linux = members(small(), 0..3);
    (
        members(tree(3, 12, 4), 0..5),
        prop::option::of(mounts),
        prop::option::weighted(0.5, (linux, small())),
    )
        .prop_map(|(mut top, mounts, linux)| {
            if let Some(m) = mounts {
                top.retain(|(k, _)| k != "mounts" && k != "a");
                top.push(("mounts".into(), Json::Array(m.clone())));
                top.push(("a".into(), Json::Array(m)));
            }
            if let Some((mut l, sysctl)) = linux {
                top.retain(|(k, _)| k != "linux");
                l.retain(|(k, _)| k != "sysctl");
                l.push(("sysctl".into(), sysctl));
                top.push(("linux".into(), Json::Object(l)));
            }
            Json::Object(top)
        })
}

/// The choices made while writing a document, from a seed: whitespace,
/// escapes, and for one seed in three a defect now and then.
struct Writer {
    state: u64,
    /// One token in this many is written with a defect; none if 0.
    flaw: u64,
    out: Vec<u8>,
}

impl Writer {
    fn new(seed: u64) -> Writer {
        Writer {
            state: seed | 1,
            flaw: [0, 0, 0, 0, 40, 400][(seed % 6) as usize],
            out: Vec::new(),
        }
    }

    fn next(&mut self, n: u64) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % n
    }

    /// Whether to write a defect here, and which of `n`.
    fn flaw(&mut self, n: usize) -> Option<usize> {
        (self.flaw != 0 && self.next(self.flaw) == 0).then(|| self.next(n as u64) as usize)
    }

    fn put(&mut self, s: impl AsRef<[u8]>) {
        self.out.extend_from_slice(s.as_ref());
    }

    fn ws(&mut self) {
        const WS: &[&str] = &[
            "",
            "",
            "",
            " ",
            "\n  ",
            "\n            ",
            "\t",
            "\r\n",
            "\n\n \t ",
        ];
        const BAD: &[&str] = &["\u{c}", "\u{b}", "\u{a0}", "\u{feff}", "\0", "/**/", ","];
        if let Some(i) = self.flaw(BAD.len()) {
            return self.put(BAD[i]);
        }
        let i = self.next(WS.len() as u64) as usize;
        self.put(WS[i]);
    }

    fn text(&mut self, text: &str) {
        const BAD: &[&[u8]] = &[
            b"\\ud800",
            b"\\udc00",
            b"\\ud800\\u0041",
            b"\\ud800\\ud800",
            b"\\u0000",
            b"\\x",
            b"\\u12G4",
            b"\\U1234",
            b"\\'",
            b"\\",
            b"\0",
            b"\x1f",
            b"\x80",
            b"\xbf",
            b"\xc0\x80",
            b"\xc3",
            b"\xe2\x82",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xf5",
            b"\xff",
            b"\n",
        ];
        self.put("\"");
        for ch in text.chars() {
            if let Some(i) = self.flaw(BAD.len()) {
                self.put(BAD[i]);
            }
            let escape = match ch {
                '"' | '\\' | '\0'..='\u{1f}' => true,
                _ => self.next(4) == 0,
            };
            if !escape {
                self.put(ch.encode_utf8(&mut [0; 4]));
                continue;
            }
            let short = match ch {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '/' => Some("\\/"),
                '\n' => Some("\\n"),
                '\t' => Some("\\t"),
                '\u{8}' => Some("\\b"),
                _ => None,
            };
            match short {
                Some(s) if self.next(2) == 0 => self.put(s),
                _ => {
                    for unit in ch.encode_utf16(&mut [0; 2]) {
                        let hex = match self.next(2) {
                            0 => format!("\\u{unit:04x}"),
                            _ => format!("\\u{unit:04X}"),
                        };
                        self.put(hex);
                    }
                }
            }
        }
        self.put("\"");
    }

    fn value(&mut self, v: &Json) {
        const BAD: &[&str] = &[
            "01", "-01", "1.", ".5", "-", "+1", "1e", "1e+", "0x1", "-a", "tru", "nul", "True",
            "1 2", "\"", "]", "}", "NaN",
        ];
        if let Some(i) = self.flaw(BAD.len()) {
            return self.put(BAD[i]);
        }
        match v {
            Json::Null => self.put("null"),
            Json::Bool(b) => self.put(if *b { "true" } else { "false" }),
            Json::Number(n) => self.put(n),
            Json::String(t) => self.text(t),
            Json::Array(items) => {
                self.put("[");
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        self.ws();
                        self.put(",");
                    }
                    self.ws();
                    self.value(x);
                }
                self.ws();
                self.put("]");
            }
            Json::Object(members) => {
                self.put("{");
                for (i, (k, x)) in members.iter().enumerate() {
                    if i > 0 {
                        self.ws();
                        self.put(",");
                    }
                    self.ws();
                    self.text(k);
                    self.ws();
                    self.put(":");
                    self.ws();
                    self.value(x);
                }
                self.ws();
                self.put("}");
            }
        }
    }
}

/// A generated document's bytes, as the writer seeded with `seed` writes
/// them.
fn bytes_of(v: &Json, seed: u64) -> Vec<u8> {
    let mut w = Writer::new(seed);
    w.ws();
    w.value(v);
    w.ws();
    w.out
}

/// Nesting near the limit, of arrays and objects mixed, under a mount.
fn deep() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(any::<bool>(), 118..132),
        any::<bool>(),
    )
        .prop_map(|(levels, mount)| {
            let mut out = Vec::new();
            out.extend_from_slice(if mount {
                b"{\"mounts\": [{\"options\": "
            } else {
                b"{\"a\": [ "
            });
            for &object in &levels {
                out.extend_from_slice(if object { b"{\"k\": " } else { b"[1, " });
            }
            out.extend_from_slice(b"null");
            for &object in levels.iter().rev() {
                out.push(if object { b'}' } else { b']' });
            }
            out.extend_from_slice(if mount { b"}]}" } else { b"]}" });
            out
        })
}

#[derive(Debug, Clone)]
enum Mutation {
    Insert(prop::sample::Index, u8),
    Delete(prop::sample::Index),
    Replace(prop::sample::Index, u8),
    Truncate(prop::sample::Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![
        3 => prop::sample::select(&[
            b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b' ', b'\n', b'\t', 0, 0x1f, 0x7f,
            0x80, 0xc3, 0xff, b'a', b'A', b'e', b'0', b'-', b'.', b'u', b'/',
        ][..]),
        1 => any::<u8>(),
    ];
    prop_oneof![
        3 => (any::<prop::sample::Index>(), byte.clone()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        3 => any::<prop::sample::Index>().prop_map(Mutation::Delete),
        3 => (any::<prop::sample::Index>(), byte).prop_map(|(i, b)| Mutation::Replace(i, b)),
        1 => any::<prop::sample::Index>().prop_map(Mutation::Truncate),
    ]
}

fn mutated(text: &str, mutations: &[Mutation]) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    for m in mutations {
        if b.is_empty() {
            break;
        }
        match m {
            Mutation::Insert(i, x) => b.insert(i.index(b.len() + 1), *x),
            Mutation::Delete(i) => {
                b.remove(i.index(b.len()));
            }
            Mutation::Replace(i, x) => {
                let at = i.index(b.len());
                b[at] = *x;
            }
            Mutation::Truncate(i) => b.truncate(i.index(b.len())),
        }
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn generated_documents_scan_as_the_reference_reads_them(doc in document(), seed in any::<u64>()) {
        agree(&bytes_of(&doc, seed));
    }

    #[test]
    fn generated_values_scan_as_the_reference_reads_them(v in json(), seed in any::<u64>()) {
        agree(&bytes_of(&Json::Object(vec![("x".into(), v)]), seed));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn deep_documents_scan_as_the_reference_reads_them(doc in deep()) {
        agree(&doc);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn mutated_fixtures_scan_as_the_reference_reads_them(
        fixture in prop::sample::select(FIXTURES),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        agree(&mutated(fixture, &mutations));
    }
}
