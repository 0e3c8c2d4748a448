//! The writer: a converted spec (or exec process file) written back as
//! edits of the bytes it was read from, and the result read back strictly
//! and checked against the plan. Pure.
//!
//! A spec is mostly what no rule reads: environment, annotations, hooks,
//! resources, seccomp. The rules edit only the members [`slices::SPEC`]
//! names, as values; [`write`] walks the original bytes beside them: what
//! is equal is copied as it was (formatting, escapes, numbers, key order,
//! unknown fields), only what differs is written anew, spliced in the
//! layout the document around it uses. Where each value is in the bytes,
//! serde_json says ([`slices`]).

use super::slices::{self, equal, value_end, Member, Rec, Record, Span};
use super::spec::{Mount, Mounts, Spec};
use super::strict;
use super::Refusal;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::cell::Cell;

/// The bytes of `spec` after the rules' edits: the bytes it was read
/// from with only what differs written anew.
pub fn write(spec: &Spec) -> Vec<u8> {
    let original = spec.text();
    let mut w = Writer {
        src: original,
        out: Vec::with_capacity(original.len() + 1024),
        copied: 0,
        unit: indent_unit(original.as_bytes()),
        mounts: spec.mount_member(),
    };
    let start = slices::top(original);
    if start < original.len() {
        match slots(spec) {
            Some(slots) => {
                for slot in slots {
                    // As read: copied as it was.
                    let as_read = spec.as_read(slot.path()).map(|(v, _)| v);
                    if !matches!(slot.record, Record::Mounts)
                        && as_read.is_some_and(|v| slices::same(v, slot.value))
                    {
                        continue;
                    }
                    w.value(slot.span.start as usize, slot.value, slot.record);
                }
            }
            None => {
                w.value(start, spec.view(), spec.record());
            }
        }
    }
    w.out.extend_from_slice(&original.as_bytes()[w.copied..]);
    w.out
}

/// [`write`], then the result read back strictly, as the runtime will
/// read it, with the same reader, and compared with `spec`: the wrapper
/// writes a converted spec only when the bytes say exactly what the rules
/// decided. A difference (a writer bug) refuses the container rather than
/// start it on other bytes.
pub fn write_checked(spec: &Spec) -> Result<Vec<u8>, Refusal> {
    read_back(write(spec), spec)
}

impl Spec {
    /// The whole document with the rules' edits, as a value: what the
    /// bytes [`write`] writes read as. For tests and `explain`.
    pub fn to_value(&self) -> Result<Value, Refusal> {
        let bytes = write(self);
        serde_json::from_slice(&bytes)
            .map_err(|e| Refusal::new("write", "(document)", e.to_string()))
    }
}

/// A member the rules read, where it was read: the writer writes each
/// where it is.
struct Slot<'a> {
    /// Its field names from the top level: one or two.
    path: [&'static str; 2],
    len: usize,
    /// Where it was read.
    span: Span,
    value: &'a Value,
    record: Record,
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
        let record = spec.record().member(p.name).unwrap_or(Record::Whole);
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
                        record: record.member(name).unwrap_or(Record::Whole),
                    });
                }
            }
            _ => slots.push(Slot {
                path: [p.name, ""],
                len: 1,
                span: p
                    .span
                    .or_else(|| slices::member_span(spec.text(), p.name))?,
                value: v,
                record,
            }),
        }
    }
    Some(slots)
}

impl Slot<'_> {
    fn path(&self) -> &[&'static str] {
        &self.path[..self.len]
    }
}

/// The check of [`write_checked`]: the bytes written read strictly, whole,
/// each member the rules read compared with the plan where it lies, and,
/// when the writer wrote each where it was read, every byte around them
/// compared with the bytes read.
fn read_back(out: Vec<u8>, spec: &Spec) -> Result<Vec<u8>, Refusal> {
    if slots(spec).is_some_and(|slots| spliced_reads_back(&out, spec, &slots)) {
        return Ok(out);
    }
    let rec = match strict::locate(&out, spec.document(), spec.record(), true) {
        Ok(rec) => rec,
        Err(r) => {
            return Err(Refusal::new(
                "write",
                r.field,
                format!("the converted spec does not read back: {}", r.message),
            ))
        }
    };
    let same = std::str::from_utf8(&out).is_ok_and(|text| {
        reads_as(text, &rec, spec) && around_the_same(text.as_bytes(), &rec, spec)
    });
    if !same {
        return Err(Refusal::new(
            "write",
            "(document)",
            "the converted spec reads back other than the rules decided; refusing rather than start the container on other bytes",
        ));
    }
    Ok(out)
}

/// The check of [`write_checked`] when the writer wrote each member the
/// rules read where it was read ([`slots`]): every byte around them is the
/// bytes read (accepted already, in the same places), and each member
/// whose bytes differ is read strictly where it lies, as the whole
/// document's reading would read it there, and compared with the plan.
/// `false` sends the bytes to the whole reading, which words the refusal.
fn spliced_reads_back(out: &[u8], spec: &Spec, slots: &[Slot<'_>]) -> bool {
    let Ok(text) = std::str::from_utf8(out) else {
        return false;
    };
    if out.len() as u64 > strict::MAX_BYTES {
        return false;
    }
    let src = spec.source();
    let (mut p, mut o) = (0, 0);
    for slot in slots {
        let read = slot.span.range();
        let Some(gap) = read.start.checked_sub(p) else {
            return false;
        };
        if src.get(p..read.start) != out.get(o..o + gap) {
            return false;
        }
        o += gap;
        let Some(raw) = slices::raw_at(text, o) else {
            return false;
        };
        let written = Span::new(o, o + raw.get().len());
        if !slot_reads_back(text, raw, written, slot, spec) {
            return false;
        }
        (p, o) = (read.end, written.end as usize);
    }
    src.get(p..) == out.get(o..)
}

/// Does the member of `slot`, written as `raw` at `written` in `text`,
/// read strictly there as the plan has it?
fn slot_reads_back(
    text: &str,
    raw: &RawValue,
    written: Span,
    slot: &Slot<'_>,
    spec: &Spec,
) -> bool {
    let src = spec.source();
    let unchanged = written.bytes(text.as_bytes()) == slot.span.bytes(src);
    if let Record::Mounts = slot.record {
        if unchanged && matches!(spec.mount_member(), Mounts::List { list: None, .. }) {
            return true;
        }
        // Each element compared with the plan's as the strict reading
        // hands it over, rather than its span kept for a second walk (a
        // large spec has tens of thousands of mounts): one the plan has as
        // read is its bytes read, any other is read strictly there too.
        let (count, differs) = (Cell::new(0), Cell::new(false));
        let each = |i: usize, bytes: &str| {
            count.set(i + 1);
            let same = element_reads_as(spec, i, bytes);
            differs.set(differs.get() || same.is_none());
            same == Some(true)
        };
        if strict::check_member(text, raw, spec.document(), slot.path(), Some(&each)).is_none() {
            return false;
        }
        return match raw.get().starts_with('[') {
            true => !differs.get() && count.get() == plan_mounts(spec),
            false => mounts_read_as(text, &Rec::Value(written), spec),
        };
    }
    if unchanged
        && spec
            .as_read(slot.path())
            .is_some_and(|(read, _)| slices::same(read, slot.value))
    {
        return true;
    }
    strict::check_member(text, raw, spec.document(), slot.path(), None)
        .is_some_and(|read| slices::same(&read, slot.value))
}

/// Are the bytes of `out` around the members the rules read the bytes
/// read, when the writer wrote each member where it was read ([`slots`])?
fn around_the_same(out: &[u8], rec: &Rec, spec: &Spec) -> bool {
    let Some(slots) = slots(spec) else {
        // The layout changed: the members no rule reads, compared one by
        // one instead.
        return std::str::from_utf8(out).is_ok_and(|out| {
            let src = spec.text();
            unread_the_same(src, slices::top(src), out, slices::top(out), spec.record())
        });
    };
    let src = spec.source();
    let (mut p, mut o) = (0, 0);
    for slot in &slots {
        let mut r = Some(rec);
        for name in slot.path() {
            r = r.and_then(|r| r.member(name));
        }
        let found = || match slot.path() {
            [name] => slices::member_span(std::str::from_utf8(out).ok()?, name),
            _ => None,
        };
        let Some(at) = r.and_then(Rec::span).or_else(found) else {
            return false;
        };
        let (read, written) = (slot.span.range(), at.range());
        if src.get(p..read.start) != out.get(o..written.start) {
            return false;
        }
        (p, o) = (read.end, written.end);
    }
    src.get(p..) == out.get(o..)
}

/// Do the objects at `a` of `src` and at `b` of `out` hold the same
/// members no rule reads, in the same order, each value byte for byte,
/// down through the objects `record` reads by members?
fn unread_the_same(src: &str, a: usize, out: &str, b: usize, record: Record) -> bool {
    let Record::Members(_) = record else {
        return true;
    };
    let (was, _) = slices::members(src, a);
    let (now, _) = slices::members(out, b);
    if !unread(src, &was, record).eq(unread(out, &now, record)) {
        return false;
    }
    // The objects read by members: theirs too, where both are objects.
    was.iter().all(|w| match record.member(&w.key) {
        Some(inner @ Record::Members(_)) => match now.iter().find(|n| n.key == w.key) {
            Some(n) if src.as_bytes()[w.value] == b'{' && out.as_bytes()[n.value] == b'{' => {
                unread_the_same(src, w.value, out, n.value, inner)
            }
            _ => true,
        },
        _ => true,
    })
}

/// The members of `list` (an object of `text`) no rule reads: each key
/// and the bytes of its value.
fn unread<'t>(
    text: &'t str,
    list: &'t [Member<'t>],
    record: Record,
) -> impl Iterator<Item = (&'t str, &'t str)> {
    list.iter()
        .filter(move |m| record.member(&m.key).is_none())
        .map(move |m| (&*m.key, &text[m.value..m.end]))
}

/// Does `out`, recorded as `rec`, hold exactly what `spec` holds: the
/// same members the rules read, each equal?
fn reads_as(out: &str, rec: &Rec, spec: &Spec) -> bool {
    let (Rec::Object { members, .. }, Some(view)) = (rec, spec.view().as_object()) else {
        return false;
    };
    // A member as read, its bytes as read: it reads as it was read.
    let at = |r: &Rec, v: &Value, path: &[&str]| {
        let Some(span) = r.span() else {
            return false;
        };
        if let Some((read, was)) = spec.as_read(path) {
            if span.bytes(out.as_bytes()) == was.bytes(spec.source()) && slices::same(read, v) {
                return true;
            }
        }
        equal(out, span.start as usize, v) == Some(span.end as usize)
    };
    members.len() == view.len()
        && members.iter().zip(view).all(|((name, r), (key, v))| {
            *name == key
                && match (r, v) {
                    (Rec::Elements { .. }, _) => mounts_read_as(out, r, spec),
                    (_, Value::Null) if *name == "mounts" => mounts_read_as(out, r, spec),
                    (Rec::Object { members, .. }, Value::Object(map)) => {
                        members.len() == map.len()
                            && members
                                .iter()
                                .zip(map)
                                .all(|((n, r), (k, v))| *n == k && at(r, v, &[name, n]))
                    }
                    (r, v) => at(r, v, &[name]),
                }
        })
}

/// Is the mount list recorded as `rec` in `out` the list of `spec`,
/// element for element (those as read byte for byte)?
fn mounts_read_as(out: &str, rec: &Rec, spec: &Spec) -> bool {
    let src = spec.source();
    let out_bytes = out.as_bytes();
    match (spec.mount_member(), rec) {
        (Mounts::List { read, list, .. }, Rec::Elements { elements, .. }) => match list {
            None => {
                read.len() == elements.len()
                    && read
                        .iter()
                        .zip(elements)
                        .all(|(r, at)| r.element.bytes(src) == at.bytes(out_bytes))
            }
            Some(list) => {
                list.len() == elements.len()
                    && list.iter().zip(elements).all(|(m, at)| match m {
                        Mount::Read(j) => read
                            .get(*j as usize)
                            .is_some_and(|r| r.element.bytes(src) == at.bytes(out_bytes)),
                        Mount::Edited { value, .. } => {
                            equal(out, at.start as usize, value) == Some(at.end as usize)
                        }
                    })
            }
        },
        (Mounts::Other(v), Rec::Value(span)) => {
            equal(out, span.start as usize, v) == Some(span.end as usize)
        }
        _ => false,
    }
}

/// Does `bytes`, written as the element `i` of the mount list, read as
/// the plan's element there: `Some(true)` for the bytes of an element
/// the plan has as read (read strictly in the same place already, they
/// say the same again), `Some(false)` for one the plan has edited that
/// reads as its value, `None` for anything else.
fn element_reads_as(spec: &Spec, i: usize, bytes: &str) -> Option<bool> {
    let Mounts::List { read, list, .. } = spec.mount_member() else {
        return None;
    };
    let j = match list {
        None => i,
        Some(list) => match list.get(i)? {
            Mount::Read(j) => *j as usize,
            Mount::Edited { value, .. } => {
                return (equal(bytes, 0, value) == Some(bytes.len())).then_some(false)
            }
        },
    };
    (read.get(j)?.element.bytes(spec.source()) == bytes.as_bytes()).then_some(true)
}

/// How many mounts the plan's list has; for no list, `usize::MAX`, which
/// no count of elements written reaches.
fn plan_mounts(spec: &Spec) -> usize {
    match spec.mount_member() {
        Mounts::List { read, list, .. } => list.as_ref().map_or(read.len(), Vec::len),
        _ => usize::MAX,
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
    src: &'a str,
    out: Vec<u8>,
    /// `src[..copied]` is accounted for in `out`.
    copied: usize,
    unit: Option<Vec<u8>>,
    mounts: &'a Mounts,
}

impl Writer<'_> {
    /// Copy the original up to `pos`.
    fn flush_to(&mut self, pos: usize) {
        self.out
            .extend_from_slice(&self.src.as_bytes()[self.copied..pos]);
        self.copied = pos;
    }

    /// Replace `src[start..end]` with what `f` writes.
    fn replace(&mut self, start: usize, end: usize, f: impl FnOnce(&mut Self)) {
        self.flush_to(start);
        f(self);
        self.copied = end;
    }

    /// The value at `at` (which the rules read as `record`) becomes
    /// `new`. Returns where the original value ends.
    fn value(&mut self, at: usize, new: &Value, record: Record) -> usize {
        let src = self.src;
        if let Record::Mounts = record {
            return self.mounts(at);
        }
        // An object or array is compared as it is walked: what is equal
        // in it is not written, and a first comparison of the whole would
        // only walk again what changed.
        match (src.as_bytes()[at], new) {
            (b'{', Value::Object(map)) => self.object(at, map, record),
            (b'[', Value::Array(list)) => self.array(at, list),
            _ => {
                if let Some(end) = equal(src, at, new) {
                    return end;
                }
                let end = value_end(src, at);
                let indent = line_indent(src, at);
                self.replace(at, end, |w| w.fresh(new, &indent));
                end
            }
        }
    }

    fn object(&mut self, at: usize, new: &Map<String, Value>, record: Record) -> usize {
        let src = self.src;
        let (all, end) = slices::members(src, at);
        // In place when the members the rules read are the same keys, in
        // the same order: only their values can differ. Tried as the
        // members are read, undone if they are not.
        let mark = (self.out.len(), self.copied);
        let mut expected = new.iter();
        let mut in_place = true;
        for m in &all {
            let Some(member) = record.member(&m.key) else {
                continue;
            };
            match expected.next() {
                Some((k, v)) if *k == *m.key => {
                    self.value(m.value, v, member);
                }
                _ => {
                    in_place = false;
                    break;
                }
            }
        }
        if in_place && expected.next().is_none() {
            return end;
        }
        self.out.truncate(mark.0);
        self.copied = mark.1;
        let built = |m: &Member<'_>| record.member(&m.key).is_some();
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
                    Item::Copy(s, e) => w.out.extend_from_slice(&src.as_bytes()[s..e]),
                    Item::Member(m, v) => {
                        w.out.extend_from_slice(&src.as_bytes()[m.start..m.value]);
                        w.copied = m.value;
                        let e = w.value(m.value, v, record.member(&m.key).unwrap_or(Record::Whole));
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
            _ => return value_end(src, at),
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
                            w.out.extend_from_slice(from(j).bytes(src.as_bytes()))
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
                    Mount::Read(j) => w.out.extend_from_slice(from(j).bytes(src.as_bytes())),
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
                let e = self.value(s.start as usize, value, Record::Whole);
                self.flush_to(e);
            }
            None => self.fresh(value, indent),
        }
    }

    fn array(&mut self, at: usize, new: &[Value]) -> usize {
        let src = self.src;
        let (spans, end) = slices::elements(src, at);
        if spans.len() == new.len() {
            // In place: each element edited where it is.
            for (&(start, _), v) in spans.iter().zip(new) {
                self.value(start, v, Record::Whole);
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
                    Some(e) => w
                        .out
                        .extend_from_slice(&src.as_bytes()[spans[e].0..spans[e].1]),
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
fn line_indent(src: &str, at: usize) -> Vec<u8> {
    let src = src.as_bytes();
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

#[cfg(test)]
mod tests;
