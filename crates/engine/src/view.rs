//! The parts of a spec the rules read, and writing a converted spec back
//! as edits of the bytes it was read from. Pure.
//!
//! A spec is mostly what no rule reads: environment, annotations, hooks,
//! resources, seccomp. Building all of it as a `Value` and serializing it
//! again is most of the cost of a conversion, and it is where losslessness
//! can go wrong. So the strict reader checks the whole document but builds
//! only the [`VIEW`]: the members the rules read (the namespaces, the ID
//! mappings, the sysctls, the mounts, the process's user and capabilities,
//! the root path). The rules edit that view as they would the whole
//! document, and [`write`] walks the original bytes beside the edited view:
//! what is equal is copied as it was (formatting, escapes, numbers, key
//! order, unknown fields), only what differs is written anew, in the
//! layout the document around it uses.

use super::document::{Mount, Mounts, Spec};
use super::strict::spans::{self, Rec, Span};
use super::strict::{self, scan, Document};
use super::Refusal;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// What of a value the strict reader builds.
#[derive(Debug, Clone, Copy)]
pub enum Build {
    /// All of it.
    All,
    /// Nothing: it is checked, then dropped.
    Nothing,
    /// Of an object, the members named here (each built as said) and
    /// nothing of the others; a value that is not an object is built whole.
    Some(&'static [(&'static str, Build)]),
    /// The mount list, which a [`Spec`] holds as spans
    /// ([`Spec::mounts`]); built whole by the whole-document reader.
    Mounts,
}

impl Build {
    /// How the member `key` of an object read as `self` is built.
    pub(crate) fn member(self, key: &str) -> Build {
        match self {
            Build::All | Build::Mounts => Build::All,
            Build::Nothing => Build::Nothing,
            Build::Some(members) => members
                .iter()
                .find(|(k, _)| *k == key)
                .map_or(Build::Nothing, |(_, b)| *b),
        }
    }

    /// How the elements of an array read as `self` are built.
    pub(crate) fn element(self) -> Build {
        match self {
            Build::Nothing => Build::Nothing,
            Build::All | Build::Some(_) | Build::Mounts => Build::All,
        }
    }
}

/// What a [`Spec`] holds of a document, for the writer: the members
/// [`spans::SPEC`](super::strict::spans::SPEC) names (a rule that reads
/// another member must add it to both).
pub const VIEW: Build = Build::Some(&[
    ("annotations", Build::Some(ANNOTATIONS)),
    ("linux", Build::Some(LINUX)),
    ("mounts", Build::Mounts),
    ("process", Build::Some(PROCESS)),
    ("root", Build::All),
]);

const ANNOTATIONS: &[(&str, Build)] = &[
    (spans::POD_ANNOTATIONS[0], Build::All),
    (spans::POD_ANNOTATIONS[1], Build::All),
    (spans::POD_ANNOTATIONS[2], Build::All),
    (spans::POD_ANNOTATIONS[3], Build::All),
    (spans::POD_ANNOTATIONS[4], Build::All),
];

const LINUX: &[(&str, Build)] = &[
    ("namespaces", Build::All),
    ("uidMappings", Build::All),
    ("gidMappings", Build::All),
    ("sysctl", Build::All),
];

const PROCESS: &[(&str, Build)] = &[("user", Build::All), ("capabilities", Build::All)];

/// The bytes of `spec` after the rules' edits: the bytes it was read
/// from with only what differs written anew.
pub fn write(spec: &Spec) -> Vec<u8> {
    write_in(spec, slots(spec).as_deref())
}

/// [`write`], with the view's [`slots`] when there are.
fn write_in(spec: &Spec, slots: Option<&[Slot<'_>]>) -> Vec<u8> {
    let original = spec.source();
    let mut w = Writer {
        src: original,
        out: Vec::with_capacity(original.len() + 1024),
        copied: 0,
        unit: indent_unit(original),
        mounts: spec.mount_member(),
    };
    let start = skip_ws(original, 0);
    if start < original.len() {
        match slots {
            Some(slots) => {
                for slot in slots {
                    w.value(slot.span.start as usize, slot.value, slot.build);
                }
            }
            None => {
                w.value(start, spec.view(), VIEW);
            }
        }
    }
    w.out.extend_from_slice(&original[w.copied..]);
    w.out
}

/// [`write`], then the result read back as the runtime will read it and
/// compared with `spec`: the wrapper writes a converted spec only when the
/// bytes say exactly what the rules decided. A difference (a writer bug)
/// refuses the container rather than start it on other bytes.
pub fn write_checked(spec: &Spec) -> Result<Vec<u8>, Refusal> {
    let slots = slots(spec);
    let out = write_in(spec, slots.as_deref());
    match slots {
        Some(slots) if written_in_place(&out, spec, &slots) => Ok(out),
        _ => read_back(out, spec),
    }
}

/// A member of the view where it was read: the writer writes each where
/// it is, and the check reads back each where it lands.
struct Slot<'a> {
    /// Its field names from the top level: one or two.
    path: [&'static str; 2],
    len: usize,
    /// Where it was read.
    span: Span,
    value: &'a Value,
    build: Build,
}

impl Slot<'_> {
    fn path(&self) -> &[&'static str] {
        &self.path[..self.len]
    }
}

/// The members of the view in the order they were read, each where it
/// was read, when the view has the members read, in that order (rules
/// edit values, they do not add or remove these members): then nothing
/// else of the document changes. `None` when it does not.
fn slots(spec: &Spec) -> Option<Vec<Slot<'_>>> {
    let view = spec.view().as_object()?;
    let layout = spec.layout();
    if view.len() != layout.len() || !view.keys().zip(layout).all(|(k, p)| k == p.name) {
        return None;
    }
    let mut slots = Vec::with_capacity(8);
    for (p, v) in layout.iter().zip(view.values()) {
        let build = VIEW.member(p.name);
        match (&p.members, v) {
            (Some(members), Value::Object(map))
                if map.len() == members.len()
                    && map.keys().zip(members).all(|(k, (n, _))| k == n) =>
            {
                for ((name, span), v) in members.iter().zip(map.values()) {
                    slots.push(Slot {
                        path: [p.name, name],
                        len: 2,
                        span: *span,
                        value: v,
                        build: build.member(name),
                    });
                }
            }
            _ => slots.push(Slot {
                path: [p.name, ""],
                len: 1,
                span: p.span,
                value: v,
                build,
            }),
        }
    }
    Some(slots)
}

/// The check of [`write_checked`] for a spec written by [`slots`]: every
/// byte around the slots is the byte read, and each slot is read strictly
/// where it lands (the fields of its shape, at its level, as [`scan::scan`]
/// would read it there) and equal to the view. The bytes around are those
/// the strict reader accepted, with the same keys around each slot, so the
/// whole document reads as the strict reader would read it whole; only the
/// slots are read again. `false`: not confirmed this way, and the whole
/// document is read back instead ([`read_back`]).
fn written_in_place(out: &[u8], spec: &Spec, slots: &[Slot<'_>]) -> bool {
    let mut w = Beside {
        out,
        src: spec.source(),
        o: 0,
        p: 0,
    };
    for slot in slots {
        let Some(o) = w.up_to(slot.span.start as usize) else {
            return false;
        };
        if let Build::Mounts = slot.build {
            let mut each = w;
            if mounts_in_place(&mut each, spec) {
                w = each;
                continue;
            }
        }
        let record = match slot.build {
            Build::Mounts => spans::Record::Elements,
            _ => spans::Record::Whole,
        };
        let Some((after, rec)) = scan::scan_member(out, o, Document::Spec, slot.path(), record)
        else {
            return false;
        };
        let same = match slot.build {
            Build::Mounts => mounts_read_as(out, &rec, spec),
            _ => equal(out, o, slot.value) == Some(after),
        };
        if !same {
            return false;
        }
        w.past(after, slot.span.end as usize);
    }
    w.rest_same()
}

/// The mount list of [`written_in_place`], element by element when each
/// mount is where it was read: a mount as read must be its bytes read,
/// and only an edited one is read again, as an element of `mounts`.
/// `false`: not confirmed this way (and `w` is to be dropped).
fn mounts_in_place(w: &mut Beside<'_>, spec: &Spec) -> bool {
    let Mounts::List { span, read, list } = spec.mount_member() else {
        return false;
    };
    for (i, m) in list.iter().flatten().enumerate() {
        match m {
            Mount::Read(j) if *j as usize == i => {}
            Mount::Read(_) => return false,
            Mount::Edited { value, .. } => {
                let Some(e) = read.get(i).map(|r| r.element) else {
                    return false;
                };
                let Some(o) = w.up_to(e.start as usize) else {
                    return false;
                };
                let path = ["mounts", scan::ELEMENT];
                let record = spans::Record::Whole;
                match scan::scan_member(w.out, o, Document::Spec, &path, record) {
                    Some((after, _)) if equal(w.out, o, value) == Some(after) => {
                        w.past(after, e.end as usize)
                    }
                    _ => return false,
                }
            }
        }
    }
    list.as_ref().map_or(true, |l| l.len() == read.len()) && w.up_to(span.end as usize).is_some()
}

/// The bytes written walked beside the bytes read: what lies between the
/// values read again must be the bytes read.
#[derive(Clone, Copy)]
struct Beside<'a> {
    out: &'a [u8],
    src: &'a [u8],
    /// `out[..o]` is confirmed, and stands for `src[..p]`.
    o: usize,
    p: usize,
}

impl Beside<'_> {
    /// Past the bytes read up to `start`, if they are the bytes written:
    /// where the value read at `start` was written.
    fn up_to(&mut self, start: usize) -> Option<usize> {
        let gap = self.src.get(self.p..start)?;
        if self.out.get(self.o..self.o + gap.len())? != gap {
            return None;
        }
        self.o += gap.len();
        self.p = start;
        Some(self.o)
    }

    /// Past a value written up to `after`, which stands for the value read
    /// up to `end`.
    fn past(&mut self, after: usize, end: usize) {
        (self.o, self.p) = (after, end);
    }

    /// Are the bytes after those confirmed the bytes read?
    fn rest_same(&self) -> bool {
        self.out.get(self.o..) == self.src.get(self.p..)
    }
}

/// The check of [`write_checked`] in general: the bytes written read
/// strictly, whole, and each member the rules read compared with the plan
/// where it lies, with nothing built.
fn read_back(out: Vec<u8>, spec: &Spec) -> Result<Vec<u8>, Refusal> {
    let Some(rec) = scan::scan(&out, Document::Spec, spans::CHECK) else {
        let r = strict::refusal_of(&out, Document::Spec);
        return Err(Refusal::new(
            "write",
            r.field,
            format!("the converted spec does not read back: {}", r.message),
        ));
    };
    if !reads_as(&out, &rec, spec) {
        return Err(Refusal::new(
            "write",
            "(document)",
            "the converted spec reads back other than the rules decided; refusing rather than start the container on other bytes",
        ));
    }
    Ok(out)
}

/// Does `out`, recorded as `rec` ([`spans::CHECK`]), hold exactly what
/// `spec` holds: the same members the rules read, each equal?
fn reads_as(out: &[u8], rec: &Rec, spec: &Spec) -> bool {
    let (Rec::Object { members, .. }, Some(view)) = (rec, spec.view().as_object()) else {
        return false;
    };
    let at = |r: &Rec, v: &Value| {
        let span = r.span();
        equal(out, span.start as usize, v) == Some(span.end as usize)
    };
    members.len() == view.len()
        && members.iter().zip(view).all(|((name, r), (key, v))| {
            *name == key
                && match (*name, r, v) {
                    ("mounts", r, _) => mounts_read_as(out, r, spec),
                    (_, Rec::Object { members, .. }, Value::Object(map)) => {
                        members.len() == map.len()
                            && members
                                .iter()
                                .zip(map)
                                .all(|((n, r), (k, v))| *n == k && at(r, v))
                    }
                    (_, r, v) => at(r, v),
                }
        })
}

/// Is the mount list at `span` of `out` the list of `spec`, element for
/// element (those as read byte for byte)?
fn mounts_read_as(out: &[u8], rec: &Rec, spec: &Spec) -> bool {
    match (spec.mount_member(), rec) {
        (
            Mounts::List {
                read, list: None, ..
            },
            Rec::Elements { elements, .. },
        ) => {
            let src = spec.source();
            read.len() == elements.len()
                && read
                    .iter()
                    .zip(elements)
                    .all(|(r, at)| r.element.bytes(src) == at.bytes(out))
        }
        (
            Mounts::List {
                read,
                list: Some(list),
                ..
            },
            Rec::Elements { elements, .. },
        ) => {
            let src = spec.source();
            list.len() == elements.len()
                && list.iter().zip(elements).all(|(m, at)| match m {
                    Mount::Read(j) => read[*j as usize].element.bytes(src) == at.bytes(out),
                    Mount::Edited { value, .. } => {
                        equal(out, at.start as usize, value) == Some(at.end as usize)
                    }
                })
        }
        (Mounts::Other(v), Rec::Value(span)) => {
            equal(out, span.start as usize, v) == Some(span.end as usize)
        }
        _ => false,
    }
}

/// The indentation of one level: that of the first indented line, or
/// `None` for a document on one line (written compact).
fn indent_unit(src: &[u8]) -> Option<Vec<u8>> {
    let body = src.trim_ascii_end();
    let first = body.iter().position(|&b| b == b'\n')?;
    let mut lines = body[first + 1..].split(|&b| b == b'\n');
    let unit = lines
        .find_map(|l| {
            let n = l.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
            (n > 0 && n < l.len()).then(|| l[..n].to_vec())
        })
        .unwrap_or_else(|| b"  ".to_vec());
    Some(unit)
}

struct Writer<'a> {
    src: &'a [u8],
    out: Vec<u8>,
    /// `src[..copied]` is accounted for in `out`.
    copied: usize,
    unit: Option<Vec<u8>>,
    mounts: &'a Mounts,
}

/// An object member in the original: where its key starts, the key, and
/// where its value starts and ends.
pub(crate) struct Member<'a> {
    pub start: usize,
    pub key: Cow<'a, str>,
    pub value: usize,
    pub end: usize,
}

impl Writer<'_> {
    /// Copy the original up to `pos`.
    fn flush_to(&mut self, pos: usize) {
        self.out.extend_from_slice(&self.src[self.copied..pos]);
        self.copied = pos;
    }

    /// Replace `src[start..end]` with what `f` writes.
    fn replace(&mut self, start: usize, end: usize, f: impl FnOnce(&mut Self)) {
        self.flush_to(start);
        f(self);
        self.copied = end;
    }

    /// The value at `at` (which the view read as `build`) becomes `new`.
    /// Returns where the original value ends.
    fn value(&mut self, at: usize, new: &Value, build: Build) -> usize {
        let src = self.src;
        if let Build::Mounts = build {
            return self.mounts(at);
        }
        // An object or array is compared as it is walked: what is equal
        // in it is not written, and a first comparison of the whole would
        // only walk again what changed.
        match (src[at], new) {
            (b'{', Value::Object(map)) => self.object(at, map, build),
            (b'[', Value::Array(list)) => self.array(at, list),
            _ => {
                if let Some(end) = equal(src, at, new) {
                    return end;
                }
                let end = skip_value(src, at);
                let indent = line_indent(src, at);
                self.replace(at, end, |w| w.fresh(new, &indent));
                end
            }
        }
    }

    fn object(&mut self, at: usize, new: &Map<String, Value>, build: Build) -> usize {
        let src = self.src;
        // In place when the members the view holds are the same keys, in
        // the same order: only their values can differ. Tried as the
        // members are read, undone if they are not.
        let mark = (self.out.len(), self.copied);
        let mut expected = new.iter();
        let mut in_place = true;
        let mut i = skip_ws(src, at + 1);
        let end = loop {
            if src.get(i) != Some(&b'"') {
                break (i + 1).min(src.len());
            }
            let key_end = skip_string(src, i);
            let value = skip_ws(src, skip_ws(src, key_end) + 1);
            let member = match build {
                Build::Some(_) => build.member(&string_at(src, i, key_end)),
                b => b,
            };
            let value_end = match member {
                Build::Nothing => skip_value(src, value),
                _ if !in_place => skip_value(src, value),
                _ => match expected.next() {
                    Some((k, v)) if string_is(src, i, key_end, k) => self.value(value, v, member),
                    _ => {
                        in_place = false;
                        skip_value(src, value)
                    }
                },
            };
            let next = skip_ws(src, value_end);
            if src.get(next) != Some(&b',') {
                break (next + 1).min(src.len());
            }
            i = skip_ws(src, next + 1);
        };
        if in_place && expected.next().is_none() {
            return end;
        }
        self.out.truncate(mark.0);
        self.copied = mark.1;
        let all: Vec<Member<'_>> = members(src, at).collect();
        let built = |m: &Member<'_>| !matches!(build.member(&m.key), Build::Nothing);
        // Members added, removed or moved: lay the object out again, the
        // members edited in place. Built whole, in the view's order; else
        // the members no rule reads as they were, in their places, and the
        // new ones after them (where the whole document would have them).
        let mut items: Vec<Item<'_, '_>> = Vec::new();
        let original = |k: &str| all.iter().find(|m| built(m) && *m.key == *k);
        if all.iter().all(built) {
            for (k, v) in new {
                items.push(match original(k) {
                    Some(m) => Item::Member(m, v),
                    None => Item::New(k, v),
                });
            }
        } else {
            for m in &all {
                if !built(m) {
                    items.push(Item::Copy(m.start, m.end));
                } else if let Some(v) = new.get(&*m.key) {
                    items.push(Item::Member(m, v));
                }
            }
            for (k, v) in new {
                if original(k).is_none() {
                    items.push(Item::New(k, v));
                }
            }
        }
        let indent = line_indent(src, at);
        self.replace(at, end, |w| {
            w.layout(
                b'{',
                b'}',
                &indent,
                items.len(),
                |w, i, inner| match items[i] {
                    Item::Copy(s, e) => w.out.extend_from_slice(&src[s..e]),
                    Item::Member(m, v) => {
                        w.out.extend_from_slice(&src[m.start..m.value]);
                        w.copied = m.value;
                        let e = w.value(m.value, v, build.member(&m.key));
                        w.flush_to(e);
                    }
                    Item::New(k, v) => {
                        w.key(k);
                        w.fresh(v, inner);
                    }
                },
            );
        });
        end
    }

    /// The mount list at `at`: as read where it is, each element copied
    /// or edited; laid out again when mounts were added or removed.
    fn mounts(&mut self, at: usize) -> usize {
        let src = self.src;
        let (span, read, list) = match self.mounts {
            Mounts::List {
                span,
                read,
                list: Some(list),
            } if span.start as usize == at => (*span, read, list),
            Mounts::List { span, .. } if span.start as usize == at => return span.end as usize,
            // Never edited: as read.
            _ => return skip_value(src, at),
        };
        let end = span.end as usize;
        let from = |j: &u32| read[*j as usize].element;
        if list.len() == read.len() {
            for (i, m) in list.iter().enumerate() {
                let here = read[i].element;
                match m {
                    Mount::Read(j) if *j as usize == i => {}
                    Mount::Read(j) => {
                        self.replace(here.start as usize, here.end as usize, |w| {
                            w.out.extend_from_slice(from(j).bytes(src))
                        });
                    }
                    Mount::Edited { from: f, value } => {
                        let indent = line_indent(src, here.start as usize);
                        self.flush_to(here.start as usize);
                        self.element(f.as_ref().map(from), value, &indent);
                        self.copied = here.end as usize;
                    }
                }
            }
            return end;
        }
        let indent = line_indent(src, at);
        self.replace(at, end, |w| {
            w.layout(b'[', b']', &indent, list.len(), |w, i, inner| {
                match &list[i] {
                    Mount::Read(j) => w.out.extend_from_slice(from(j).bytes(src)),
                    Mount::Edited { from: f, value } => {
                        w.element(f.as_ref().map(from), value, inner)
                    }
                }
            })
        });
        end
    }

    /// `value` written as edits of the element read at `from`, or anew at
    /// `indent`. Leaves `copied` to the caller.
    fn element(&mut self, from: Option<Span>, value: &Value, indent: &[u8]) {
        match from {
            Some(s) => {
                self.copied = s.start as usize;
                let e = self.value(s.start as usize, value, Build::All);
                self.flush_to(e);
            }
            None => self.fresh(value, indent),
        }
    }

    fn array(&mut self, at: usize, new: &[Value]) -> usize {
        let src = self.src;
        let mut elements = elements(src, at);
        let spans: Vec<(usize, usize)> = elements.by_ref().collect();
        let end = elements.end.unwrap_or(src.len());
        if spans.len() == new.len() {
            // In place: each element edited where it is.
            for (&(start, _), v) in spans.iter().zip(new) {
                self.value(start, v, Build::All);
            }
            return end;
        }
        // Elements added or removed: each new element is an original one
        // that is equal, taken in order where it can be, or written anew.
        let mut used = vec![false; spans.len()];
        let mut next = 0;
        let mut from: Vec<Option<usize>> = Vec::with_capacity(new.len());
        for v in new {
            let found = (next..spans.len())
                .chain(0..next)
                .find(|&i| !used[i] && equal(src, spans[i].0, v).is_some());
            if let Some(i) = found {
                used[i] = true;
                next = i + 1;
            }
            from.push(found);
        }
        let indent = line_indent(src, at);
        self.replace(at, end, |w| {
            w.layout(b'[', b']', &indent, new.len(), |w, i, inner| {
                match from[i] {
                    Some(e) => w.out.extend_from_slice(&src[spans[e].0..spans[e].1]),
                    None => w.fresh(&new[i], inner),
                }
            });
        });
        end
    }

    /// `open`, `n` items each written by `item` (given the items' own
    /// indentation), `close`, laid out like serde_json's writers.
    fn layout(
        &mut self,
        open: u8,
        close: u8,
        indent: &[u8],
        n: usize,
        mut item: impl FnMut(&mut Self, usize, &[u8]),
    ) {
        self.out.push(open);
        if n == 0 {
            self.out.push(close);
            return;
        }
        let inner = self.inner(indent);
        for i in 0..n {
            if i > 0 {
                self.out.push(b',');
            }
            if self.unit.is_some() {
                self.out.push(b'\n');
                self.out.extend_from_slice(&inner);
            }
            item(self, i, &inner);
        }
        if self.unit.is_some() {
            self.out.push(b'\n');
            self.out.extend_from_slice(indent);
        }
        self.out.push(close);
    }

    fn inner(&self, indent: &[u8]) -> Vec<u8> {
        let mut inner = indent.to_vec();
        if let Some(u) = &self.unit {
            inner.extend_from_slice(u);
        }
        inner
    }

    fn key(&mut self, k: &str) {
        scalar(&mut self.out, &Value::String(k.to_owned()));
        match self.unit {
            Some(_) => self.out.extend_from_slice(b": "),
            None => self.out.push(b':'),
        }
    }

    /// `v` written anew, on a line indented by `indent`.
    fn fresh(&mut self, v: &Value, indent: &[u8]) {
        match v {
            Value::Array(list) => self.layout(b'[', b']', indent, list.len(), |w, i, inner| {
                w.fresh(&list[i], inner)
            }),
            Value::Object(map) => {
                let items: Vec<(&String, &Value)> = map.iter().collect();
                self.layout(b'{', b'}', indent, items.len(), |w, i, inner| {
                    w.key(items[i].0);
                    w.fresh(items[i].1, inner);
                })
            }
            _ => scalar(&mut self.out, v),
        }
    }
}

enum Item<'m, 'a> {
    /// Original bytes, a member no rule reads.
    Copy(usize, usize),
    /// An original member, its value as the view has it.
    Member(&'m Member<'a>, &'m Value),
    /// A member the original does not have.
    New(&'m String, &'m Value),
}

/// A scalar as serde_json writes it.
fn scalar(out: &mut Vec<u8>, v: &Value) {
    // Writing a scalar into a Vec cannot fail.
    let _ = serde_json::to_writer(out, v);
}

/// The whitespace that starts the line `at` is on.
fn line_indent(src: &[u8], at: usize) -> Vec<u8> {
    let line = src[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    src[line..at]
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .copied()
        .collect()
}

// The scanner below reads only documents the strict reader accepted:
// valid JSON, so it need not check anything.

pub(crate) fn skip_ws(src: &[u8], mut at: usize) -> usize {
    while at < src.len() && matches!(src[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// The end of the string that starts at `at` (its opening quote).
fn skip_string(src: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    while let Some(n) = memchr::memchr2(b'"', b'\\', &src[i.min(src.len())..]) {
        match src[i + n] {
            b'"' => return i + n + 1,
            _ => i += n + 2,
        }
    }
    src.len()
}

/// Does the string token `src[start..end]` read as `s`?
fn string_is(src: &[u8], start: usize, end: usize, s: &str) -> bool {
    let inner = &src[start + 1..end - 1];
    if memchr::memchr(b'\\', inner).is_none() {
        return inner == s.as_bytes();
    }
    string_at(src, start, end) == s
}

/// The end of the value that starts at `at`.
pub(crate) fn skip_value(src: &[u8], at: usize) -> usize {
    match src[at] {
        b'"' => skip_string(src, at),
        open @ (b'{' | b'[') => {
            // Valid JSON nests its brackets of each kind in balance: the
            // ones of the other kind need not be counted.
            let close = if open == b'{' { b'}' } else { b']' };
            let mut depth = 0usize;
            let mut i = at;
            while let Some(n) = memchr::memchr3(b'"', open, close, &src[i..]) {
                i += n;
                match src[i] {
                    b'"' => {
                        i = skip_string(src, i);
                        continue;
                    }
                    b if b == open => depth += 1,
                    _ => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                }
                i += 1;
            }
            src.len()
        }
        _ => {
            let mut i = at;
            while i < src.len()
                && !matches!(src[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                i += 1;
            }
            i
        }
    }
}

/// The text of the string token `src[start..end]`.
fn string_at(src: &[u8], start: usize, end: usize) -> Cow<'_, str> {
    let inner = &src[start + 1..end - 1];
    if !inner.contains(&b'\\') {
        if let Ok(s) = std::str::from_utf8(inner) {
            return Cow::Borrowed(s);
        }
    }
    Cow::Owned(serde_json::from_slice::<String>(&src[start..end]).unwrap_or_default())
}

/// The members of the object at `at`, in order.
pub(crate) struct Members<'a> {
    src: &'a [u8],
    /// Where the next member's key starts, or the closing brace.
    at: usize,
    /// Set once the closing brace is read: just after it.
    end: Option<usize>,
}

pub(crate) fn members(src: &[u8], at: usize) -> Members<'_> {
    Members {
        src,
        at: skip_ws(src, at + 1),
        end: None,
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = Member<'a>;

    fn next(&mut self) -> Option<Member<'a>> {
        let src = self.src;
        let i = self.at;
        if self.end.is_some() {
            return None;
        }
        if i >= src.len() || src[i] != b'"' {
            self.end = Some((i + 1).min(src.len()));
            return None;
        }
        let key_end = skip_string(src, i);
        let key = string_at(src, i, key_end);
        let value = skip_ws(src, skip_ws(src, key_end) + 1);
        let end = skip_value(src, value);
        let next = skip_ws(src, end);
        if src.get(next) == Some(&b',') {
            self.at = skip_ws(src, next + 1);
        } else {
            self.end = Some((next + 1).min(src.len()));
        }
        Some(Member {
            start: i,
            key,
            value,
            end,
        })
    }
}

/// The elements of the array at `at` as spans, in order.
pub(crate) struct Elements<'a> {
    src: &'a [u8],
    at: usize,
    end: Option<usize>,
}

pub(crate) fn elements(src: &[u8], at: usize) -> Elements<'_> {
    Elements {
        src,
        at: skip_ws(src, at + 1),
        end: None,
    }
}

impl Iterator for Elements<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let src = self.src;
        let i = self.at;
        if self.end.is_some() {
            return None;
        }
        if i >= src.len() || src[i] == b']' {
            self.end = Some((i + 1).min(src.len()));
            return None;
        }
        let end = skip_value(src, i);
        let next = skip_ws(src, end);
        if src.get(next) == Some(&b',') {
            self.at = skip_ws(src, next + 1);
        } else {
            self.end = Some((next + 1).min(src.len()));
        }
        Some((i, end))
    }
}

/// Where the string token at `at` ends, if it reads as `s`.
fn string_end(src: &[u8], at: usize, s: &str) -> Option<usize> {
    // Most strings are written without escapes: then the token is the
    // text itself, quoted.
    let text = s.as_bytes();
    let end = at + text.len() + 2;
    if src.get(at + 1..end - 1) == Some(text)
        && src.get(end - 1) == Some(&b'"')
        && !text.iter().any(|&b| b == b'"' || b == b'\\')
    {
        return Some(end);
    }
    let end = skip_string(src, at);
    string_is(src, at, end, s).then_some(end)
}

/// Where the value at `at` ends, if it reads as `v`: compared as
/// serde_json reads both, in one pass, with no copy of either.
fn equal(src: &[u8], at: usize, v: &Value) -> Option<usize> {
    match (src[at], v) {
        (b'"', Value::String(s)) => string_end(src, at, s),
        (b'{', Value::Object(map)) => {
            let mut expected = map.iter();
            let mut i = skip_ws(src, at + 1);
            if src.get(i) == Some(&b'}') {
                return expected.next().is_none().then_some(i + 1);
            }
            loop {
                let (k, v) = expected.next()?;
                let key_end = string_end(src, i, k)?;
                let value = skip_ws(src, skip_ws(src, key_end) + 1);
                let next = skip_ws(src, equal(src, value, v)?);
                match src.get(next) {
                    Some(b',') => i = skip_ws(src, next + 1),
                    _ => return expected.next().is_none().then_some(next + 1),
                }
            }
        }
        (b'[', Value::Array(list)) => {
            let mut expected = list.iter();
            let mut i = skip_ws(src, at + 1);
            if src.get(i) == Some(&b']') {
                return expected.next().is_none().then_some(i + 1);
            }
            loop {
                let next = skip_ws(src, equal(src, i, expected.next()?)?);
                match src.get(next) {
                    Some(b',') => i = skip_ws(src, next + 1),
                    _ => return expected.next().is_none().then_some(next + 1),
                }
            }
        }
        (b't', Value::Bool(true)) | (b'f', Value::Bool(false)) | (b'n', Value::Null) => {
            Some(skip_value(src, at))
        }
        (b'-' | b'0'..=b'9', Value::Number(n)) => {
            // serde_json (with `arbitrary_precision`) keeps a number as
            // text and compares numbers by it: most often the text as
            // written (only exponents are spelled again), so compared
            // first as it is, with no parse.
            let end = skip_value(src, at);
            let text = &src[at..end];
            (text == n.as_str().as_bytes()
                || serde_json::from_slice::<serde_json::Number>(text).is_ok_and(|m| m == *n))
            .then_some(end)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
