//! Where the members the rules read are in the bytes of a document the
//! strict reader accepted: byte ranges, found with serde_json's own
//! tokenizer (borrowed [`RawValue`]s), so the document is never tokenized
//! by a second lexer that could read it otherwise. Pure.
//!
//! [`SPEC`] is the one list of what the rules read of a spec; the reader
//! builds those members as values, the writer writes them back in place
//! and the check of what was written reads them again from it.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// A value's bytes in the document: its first byte to just past its last.
/// Offsets fit in 32 bits: the reader refuses documents over 64 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    pub fn bytes(self, src: &[u8]) -> &[u8] {
        &src[self.range()]
    }
}

/// What the rules read of a value.
#[derive(Debug, Clone, Copy)]
pub enum Record {
    /// All of it.
    Whole,
    /// Of an object, the members named here (each read as said), in
    /// document order; a value that is not an object is read whole.
    Members(&'static [(&'static str, Record)]),
    /// The mount list: each element's [`MountSpans`], its members read
    /// from the bytes as a rule needs them.
    Mounts,
}

impl Record {
    /// What is read of the member `key` of an object read as `self`:
    /// `None` for a member no rule reads.
    pub fn member(self, key: &str) -> Option<Record> {
        match self {
            Record::Whole | Record::Mounts => Some(Record::Whole),
            Record::Members(members) => members.iter().find(|(k, _)| *k == key).map(|(_, r)| *r),
        }
    }
}

/// What the rules read of a spec: `decide` and `own_ns` the namespaces,
/// `idmap` the mappings, the process's user and every mount's mappings,
/// `sysctl` the sysctls, the mount rules the mounts, `caps` the
/// capabilities, the hook the root path, the decision log the pod's
/// annotations. A rule that reads another member adds it here.
pub const SPEC: Record = Record::Members(&[
    ("annotations", Record::Members(ANNOTATIONS)),
    ("linux", Record::Members(LINUX)),
    ("mounts", Record::Mounts),
    ("process", Record::Members(PROCESS)),
    ("root", Record::Whole),
]);

/// What the capability rule reads of the process file of an exec.
pub const PROCESS_FILE: Record = Record::Members(&[("capabilities", Record::Whole)]);

/// The annotations that name a container's pod and the container, which
/// the decision log shows (read, never edited): containerd's CRI plugin
/// writes the first three; CRI-O the last two, its names of the pod
/// (`k8s_POD_NAMESPACE_UID_ATTEMPT`) and of the container
/// (`k8s_CONTAINER_POD_NAMESPACE_UID_ATTEMPT`).
pub const POD_ANNOTATIONS: [&str; 5] = [
    "io.kubernetes.cri.sandbox-name",
    "io.kubernetes.cri.sandbox-namespace",
    "io.kubernetes.cri.container-name",
    "io.kubernetes.cri-o.SandboxName",
    "io.kubernetes.cri-o.Name",
];

const ANNOTATIONS: &[(&str, Record)] = &[
    (POD_ANNOTATIONS[0], Record::Whole),
    (POD_ANNOTATIONS[1], Record::Whole),
    (POD_ANNOTATIONS[2], Record::Whole),
    (POD_ANNOTATIONS[3], Record::Whole),
    (POD_ANNOTATIONS[4], Record::Whole),
];

const LINUX: &[(&str, Record)] = &[
    ("namespaces", Record::Whole),
    ("uidMappings", Record::Whole),
    ("gidMappings", Record::Whole),
    ("sysctl", Record::Whole),
];

const PROCESS: &[(&str, Record)] = &[("user", Record::Whole), ("capabilities", Record::Whole)];

/// Where the members a [`Record`] names are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rec {
    Value(Span),
    /// An object read by members: its own span is found only when the
    /// writer needs it ([`member_span`]) when read in the strict pass.
    Object {
        span: Option<Span>,
        members: Vec<(&'static str, Rec)>,
    },
    Mounts {
        span: Span,
        elements: Vec<MountSpans>,
    },
    /// The mount list of a document written, to check: each element's
    /// span only (8 bytes, not 56, a mount: the check holds two copies of
    /// a large spec already).
    Elements {
        span: Span,
        elements: Vec<Span>,
    },
}

impl Rec {
    pub fn span(&self) -> Option<Span> {
        match self {
            Rec::Value(s) | Rec::Mounts { span: s, .. } | Rec::Elements { span: s, .. } => Some(*s),
            Rec::Object { span, .. } => *span,
        }
    }

    /// The recorded member `key` of an object.
    pub fn member(&self, key: &str) -> Option<&Rec> {
        match self {
            Rec::Object { members, .. } => members.iter().find(|(k, _)| *k == key).map(|(_, r)| r),
            _ => None,
        }
    }
}

/// One element of the mount list: its span and those of the members the
/// rules read. Members of an element that is not an object are all `None`.
/// Kept small (32 bytes): a large spec has tens of thousands of mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MountSpans {
    pub element: Span,
    /// Each member's start and end from the element's start, in
    /// [`MOUNT_MEMBERS`] order; an end of 0 (no value ends at the first
    /// byte) is a member not present, and [`FAR`] one present past what
    /// 16 bits hold (an element over 64 KiB), found again when read.
    members: [(u16, u16); 6],
}

/// A member present, too far into its element to be held in 16 bits.
const FAR: (u16, u16) = (u16::MAX, u16::MAX);

/// The members of a mount the rules read.
pub const MOUNT_MEMBERS: [&str; 6] = [
    "destination",
    "type",
    "source",
    "options",
    "uidMappings",
    "gidMappings",
];

impl MountSpans {
    /// An element at `element`, none of its members found yet.
    pub fn of(element: Span) -> MountSpans {
        MountSpans {
            element,
            ..MountSpans::default()
        }
    }

    /// The span of member number `slot` of [`MOUNT_MEMBERS`] in `src`
    /// (the document the element is in), if present.
    pub fn at(&self, src: &str, slot: usize) -> Option<Span> {
        let base = self.element.start;
        match *self.members.get(slot)? {
            (_, 0) => None,
            FAR => {
                let (members, _) = members(src, base as usize);
                let m = members.iter().find(|m| m.key == MOUNT_MEMBERS[slot])?;
                Some(Span::new(m.value, m.end))
            }
            (start, end) => Some(Span {
                start: base + u32::from(start),
                end: base + u32::from(end),
            }),
        }
    }

    /// The span of member number `slot`, if present and held here (not
    /// [`FAR`]): found without reading the element again.
    pub(crate) fn near(&self, slot: usize) -> Option<Span> {
        let base = self.element.start;
        match *self.members.get(slot)? {
            (_, 0) | FAR => None,
            (start, end) => Some(Span {
                start: base + u32::from(start),
                end: base + u32::from(end),
            }),
        }
    }

    pub(crate) fn set(&mut self, slot: usize, span: Span) {
        let base = self.element.start;
        let near = |at: u32| u16::try_from(at - base).ok().filter(|&n| n < u16::MAX);
        if let Some(m) = self.members.get_mut(slot) {
            *m = match (near(span.start), near(span.end)) {
                (Some(start), Some(end)) => (start, end),
                _ => FAR,
            };
        }
    }

    /// The number of the member `key`, if the rules read it.
    pub fn slot(key: &str) -> Option<usize> {
        MOUNT_MEMBERS.iter().position(|m| *m == key)
    }

    /// The span of the member `key` in `src`, if the rules read it and it
    /// is present.
    pub fn member(&self, src: &str, key: &str) -> Option<Span> {
        self.at(src, MountSpans::slot(key)?)
    }

    pub fn destination(&self, src: &str) -> Option<Span> {
        self.at(src, 0)
    }

    pub fn options(&self, src: &str) -> Option<Span> {
        self.at(src, 3)
    }
}

/// Where the top-level value of `src` starts.
pub fn top(src: &str) -> usize {
    src.len() - src.trim_ascii_start().len()
}

/// Where the members `record` names are in the value at `at` of `src`.
pub fn locate(src: &str, at: usize, record: Record) -> Rec {
    locate_as(src, at, record, true)
}

/// [`locate`] for the check of a document written: the mounts as
/// [`Rec::Elements`].
pub fn locate_written(src: &str, at: usize, record: Record) -> Rec {
    locate_as(src, at, record, false)
}

fn locate_as(src: &str, at: usize, record: Record, mount_members: bool) -> Rec {
    let (members, end) = match (record, src.as_bytes().get(at)) {
        (Record::Members(_), Some(b'{')) => members(src, at),
        (Record::Mounts, Some(b'[')) if !mount_members => {
            let (elements, end) = elements(src, at);
            return Rec::Elements {
                span: Span::new(at, end),
                elements: elements.into_iter().map(|(s, e)| Span::new(s, e)).collect(),
            };
        }
        (Record::Mounts, Some(b'[')) => {
            let (elements, end) = elements(src, at);
            let elements = elements
                .into_iter()
                .map(|(s, e)| mount_spans(src, s, e))
                .collect();
            return Rec::Mounts {
                span: Span::new(at, end),
                elements,
            };
        }
        _ => return Rec::Value(Span::new(at, value_end(src, at))),
    };
    Rec::Object {
        span: Some(Span::new(at, end)),
        members: members
            .into_iter()
            .filter_map(|m| {
                let Record::Members(names) = record else {
                    return None;
                };
                let (name, r) = names.iter().find(|(n, _)| *n == m.key)?;
                Some((*name, locate_as(src, m.value, *r, mount_members)))
            })
            .collect(),
    }
}

fn mount_spans(src: &str, start: usize, end: usize) -> MountSpans {
    let mut spans = MountSpans {
        element: Span::new(start, end),
        ..MountSpans::default()
    };
    if src.as_bytes()[start] == b'{' {
        for m in members(src, start).0 {
            if let Some(slot) = MountSpans::slot(&m.key) {
                spans.set(slot, Span::new(m.value, m.end));
            }
        }
    }
    spans
}

/// The value at `at` of `src`, read by serde_json as a `T`, and where it
/// ends.
fn read_at<'a, T: Deserialize<'a>>(src: &'a str, at: usize) -> Option<(T, usize)> {
    let mut stream = serde_json::Deserializer::from_str(src.get(at..)?).into_iter::<T>();
    let value = stream.next()?.ok()?;
    Some((value, at + stream.byte_offset()))
}

/// The value at `at`, as its bytes.
pub fn raw_at(src: &str, at: usize) -> Option<&RawValue> {
    read_at::<&RawValue>(src, at).map(|(raw, _)| raw)
}

/// Where the value at `at` ends.
pub fn value_end(src: &str, at: usize) -> usize {
    read_at::<&RawValue>(src, at).map_or(src.len(), |(_, end)| end)
}

/// Where the value of the top-level member `name` of `src` is.
pub fn member_span(src: &str, name: &str) -> Option<Span> {
    let (members, _) = members(src, top(src));
    let m = members.iter().find(|m| m.key == name)?;
    Some(Span::new(m.value, m.end))
}

/// The value at `at`, and where it ends.
pub fn value_at(src: &str, at: usize) -> Option<(Value, usize)> {
    read_at::<Value>(src, at)
}

/// Where `raw`, borrowed from `src`, starts in it.
fn offset(src: &str, raw: &RawValue) -> usize {
    raw.get().as_ptr() as usize - src.as_ptr() as usize
}

/// An object member: where its key starts, the key, and where its value
/// starts and ends.
#[derive(Debug)]
pub struct Member<'a> {
    pub start: usize,
    pub key: Cow<'a, str>,
    pub value: usize,
    pub end: usize,
}

/// The members of the object at `at`, in order, and where it ends.
pub fn members(src: &str, at: usize) -> (Vec<Member<'_>>, usize) {
    let Some((Pairs(pairs), end)) = read_at::<Pairs<'_>>(src, at) else {
        return (Vec::new(), value_end(src, at));
    };
    let members = pairs
        .into_iter()
        .map(|(k, v)| {
            let value = offset(src, v);
            Member {
                start: offset(src, k),
                key: string(k.get()).unwrap_or_default(),
                value,
                end: value + v.get().len(),
            }
        })
        .collect();
    (members, end)
}

/// The elements of the array at `at` as spans, in order, and where it
/// ends.
pub fn elements(src: &str, at: usize) -> (Vec<(usize, usize)>, usize) {
    let Some((list, end)) = read_at::<Vec<&RawValue>>(src, at) else {
        return (Vec::new(), value_end(src, at));
    };
    let spans = list
        .into_iter()
        .map(|v| {
            let start = offset(src, v);
            (start, start + v.get().len())
        })
        .collect();
    (spans, end)
}

/// The text of a string token: borrowed unless it has escapes. `None`
/// for a token that is not a string.
pub fn string(token: &str) -> Option<Cow<'_, str>> {
    let inner = token.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(token).ok().map(Cow::Owned)
}

/// An object's members as serde_json reads them: key and value, each as
/// its bytes.
struct Pairs<'a>(Vec<(&'a RawValue, &'a RawValue)>);

impl<'de> Deserialize<'de> for Pairs<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PairsVisitor)
    }
}

struct PairsVisitor;

impl<'de> Visitor<'de> for PairsVisitor {
    type Value = Pairs<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs<'de>, A::Error> {
        let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(pair) = map.next_entry::<&'de RawValue, &'de RawValue>()? {
            pairs.push(pair);
        }
        Ok(Pairs(pairs))
    }
}

/// Are `a` and `b` the same value, objects with their members in the same
/// order (serde_json's maps compare equal in any order)?
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k, v), (l, w))| k == l && same(v, w))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        _ => a == b,
    }
}

/// Where the value at `at` ends, if it reads as `v`.
pub fn equal(src: &str, at: usize, v: &Value) -> Option<usize> {
    // A string with no quote, backslash or control character in it reads
    // as `v` where its bytes, quoted, are there: no escape can be in them.
    if let Value::String(s) = v {
        let b = src.as_bytes();
        let end = at + 1 + s.len();
        if !s.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20)
            && b.get(at) == Some(&b'"')
            && b.get(at + 1..end) == Some(s.as_bytes())
            && b.get(end) == Some(&b'"')
        {
            return Some(end + 1);
        }
    }
    let (read, end) = value_at(src, at)?;
    same(&read, v).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_reads_equal_with_or_without_escapes() {
        let src = r#"["ab", "a\u0062", "a\"b", "abc"]"#;
        let at = |n: usize| src.match_indices('"').nth(n).unwrap().0;
        assert_eq!(equal(src, at(0), &Value::from("ab")), Some(at(1) + 1));
        assert_eq!(equal(src, at(2), &Value::from("ab")), Some(at(3) + 1));
        assert_eq!(equal(src, at(4), &Value::from("a\"b")), Some(src.len() - 8));
        assert_eq!(equal(src, at(0), &Value::from("a")), None);
        assert_eq!(equal(src, src.len() - 6, &Value::from("ab")), None);
    }

    #[test]
    fn members_and_elements_are_where_serde_json_reads_them() {
        let src = r#" { "a" : [1, "x\"]", {"b":2}] , "k\u0065y":null }"#;
        let (members, end) = members(src, 1);
        assert_eq!(end, src.len());
        assert_eq!(members.len(), 2);
        assert_eq!(&src[members[0].start..members[0].start + 3], "\"a\"");
        assert_eq!(members[1].key, "key");
        assert_eq!(&src[members[1].value..members[1].end], "null");
        let (list, end) = elements(src, members[0].value);
        assert_eq!(end, members[0].end);
        let texts: Vec<&str> = list.iter().map(|&(s, e)| &src[s..e]).collect();
        assert_eq!(texts, ["1", r#""x\"]""#, r#"{"b":2}"#]);
        assert_eq!(value_end("12,", 0), 2);
    }

    #[test]
    fn a_member_far_into_a_large_mount_is_found_again() {
        let pad = "a".repeat(70_000);
        let src = format!(r#"{{"mounts": [{{"pad": "{pad}", "destination": "/d"}}]}}"#);
        let spec = crate::Spec::read(src.clone().into_bytes()).unwrap();
        let mounts = spec.mounts().unwrap();
        assert_eq!(mounts.destination(0).unwrap(), "/d");
        let at = src.find(r#""/d""#).unwrap();
        let mut spans = MountSpans::of(Span::new(12, src.len() - 2));
        spans.set(0, Span::new(at, at + 4));
        spans.set(3, Span::new(13, 18));
        assert_eq!(spans.members[0], FAR);
        assert_eq!(spans.destination(&src), Some(Span::new(at, at + 4)));
        assert_eq!(spans.options(&src), Some(Span::new(13, 18)));
        assert_eq!(spans.at(&src, 1), None);
    }

    #[test]
    fn same_compares_the_order_of_members() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
        assert_eq!(a, b);
        assert!(!same(&a, &b));
        assert!(same(&a, &a.clone()));
    }
}
