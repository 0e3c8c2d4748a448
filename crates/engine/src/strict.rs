//! The strict reader: the bytes of config.json (or of an exec's process
//! file) to the document the engine decides on, or a refusal. Pure.
//!
//! The real runtimes do not read JSON alike, and not like serde_json:
//!
//! - runc (Go encoding/json, `json.NewDecoder(f).Decode`) reads the first
//!   value and ignores what follows it, replaces invalid UTF-8 and lone
//!   surrogate escapes with U+FFFD, matches object keys to struct fields
//!   case-insensitively (Unicode simple folding: `Linux`, `UIDMappings`,
//!   `PATH`, and U+212A KELVIN SIGN for `k`, U+017F LONG S for `s`), and on
//!   a duplicate key keeps the last value, merging two objects field by
//!   field;
//! - crun (yajl, through libocispec) accepts comments and lone surrogates
//!   (as `?`), nests without limit, matches keys exactly but as C strings
//!   (`"linux\u0000"` is `linux` to it, and so is a string's text up to a
//!   NUL), and on a duplicate key keeps the first value;
//! - serde_json keeps the last duplicate and matches keys exactly.
//!
//! A wrapper that decides on one reading while the runtime acts on another
//! can be walked around: a second `linux` object appended to a spec reads
//! as "no user namespace" to one and as host root mapped to another. So a
//! document is read only when every reader sees the same thing: one strict
//! RFC 8259 object, no duplicate key, no key that is a runtime-spec field
//! under case folding without being it exactly, no NUL in a string, at
//! most [`MAX_DEPTH`] levels deep and [`MAX_BYTES`] long. Everything else
//! is refused, naming where and why.
//!
//! The document is built in the same pass that checks it, with serde_json's
//! own parser, so what is read is exactly what `serde_json::from_slice`
//! gives (key order kept, numbers exact).

mod schema;
mod visit;

use super::slices::{self, MountSpans, Rec, Record, Span};
use super::Refusal;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

/// The largest document read: 64 MiB. Real specs are tens of kilobytes
/// (a podman or containerd spec 10 to 30 KB), and containerd's largest,
/// with hundreds of mounts and environment entries, a few megabytes; the
/// cap keeps a hostile or corrupt file from exhausting memory.
pub const MAX_BYTES: u64 = 64 << 20;

/// The deepest nesting of arrays and objects read, the top-level object
/// being level 1: serde_json's own limit. Real specs nest 6 levels deep;
/// Go stops at 10000 and yajl has no limit.
pub const MAX_DEPTH: usize = 127;

/// The rule every refusal of this reader names.
pub const RULE: &str = "spec";

/// What the top-level object is, for the field names it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Document {
    /// config.json: the runtime-spec `Spec`.
    Spec,
    /// The process file of `exec --process`: a `Process`.
    Process,
}

/// Read config.json.
pub fn read_spec(bytes: &[u8]) -> Result<Value, Refusal> {
    read(bytes, Document::Spec)
}

/// Read the process file of an exec.
pub fn read_process(bytes: &[u8]) -> Result<Value, Refusal> {
    read(bytes, Document::Process)
}

/// Check `bytes` as a `doc`, building nothing: what [`read`] refuses,
/// this refuses in the same words.
pub fn check(bytes: &[u8], doc: Document) -> Result<(), Refusal> {
    read_built(bytes, doc, false).map(|_| ())
}

/// Read `bytes` as a `doc`, or say why the runtimes could read it otherwise.
pub fn read(bytes: &[u8], doc: Document) -> Result<Value, Refusal> {
    read_built(bytes, doc, true)
}

/// Check `bytes` as a `doc` as [`check`] does, and say where the members
/// `record` names are, found in the same pass by serde_json's tokenizer
/// (each a borrowed [`RawValue`], read again on its own for what is in
/// it): the mounts with their members' spans, or (`elements_only`) each
/// element's span only. Refused in [`check`]'s words.
pub fn locate(
    bytes: &[u8],
    doc: Document,
    record: Record,
    elements_only: bool,
) -> Result<Rec, Refusal> {
    match std::str::from_utf8(bytes) {
        Ok(text) => locate_built(text, doc, record, elements_only).map(|(rec, _)| rec),
        Err(e) => Err(not_utf8(bytes, doc, e)),
    }
}

/// The refusal of `bytes`, which are not UTF-8, in [`check`]'s words.
pub fn not_utf8(bytes: &[u8], doc: Document, e: std::str::Utf8Error) -> Refusal {
    check(bytes, doc).err().unwrap_or_else(|| {
        Refusal::new(
            RULE,
            "(document)",
            format!("read as valid yet not UTF-8: {e}"),
        )
    })
}

/// [`locate`], and (but for `elements_only`) the members it records as
/// values ([`Rec::Value`]) built in the same pass, each with where it
/// starts, in document order; a member missing there is to be read from
/// its span.
pub fn locate_built(
    text: &str,
    doc: Document,
    record: Record,
    elements_only: bool,
) -> Result<(Rec, Vec<(u32, Value)>), Refusal> {
    if let Some(found) = recorded(text, doc, record, elements_only) {
        return Ok(found);
    }
    check(text.as_bytes(), doc)?;
    // Accepted yet not recorded: never seen; found again, whole, rather
    // than refuse what the reader accepts.
    let at = slices::top(text);
    let rec = match elements_only {
        false => slices::locate(text, at, record),
        true => slices::locate_written(text, at, record),
    };
    Ok((rec, Vec::new()))
}

/// Check `raw`, the value of the member at `path` (one or two field names
/// from the top, as [`slices::SPEC`] names them) of a `doc` held in
/// `text`, strictly in its place: the shape its field has there and the
/// levels around it, as the whole document's reading would check it.
/// With `elements`, an array's elements (the mount list written) each
/// handed to it in turn, and nothing built; else the value, built in the
/// same pass. `None` where [`check`] would refuse the value.
pub fn check_member(
    text: &str,
    raw: &RawValue,
    doc: Document,
    path: &[&str],
    elements: Option<ReadBefore<'_>>,
) -> Option<Value> {
    let mut state = State {
        base: text.as_ptr() as usize,
        ..State::default()
    };
    let in_place = |shape: Shape, key: &str| match shape {
        Shape::Struct(s) => s.field(key).ok(),
        Shape::Map(s) => Some(*s),
        Shape::Any | Shape::Array(_) => Some(Shape::Any),
    };
    let (&first, rest) = path.split_first()?;
    let outer = Path::Key(&Path::Top, first);
    let mut shape = in_place(Shape::Struct(root_of(doc)), first)?;
    let inner;
    let at = match rest {
        [] => &outer,
        [second] => {
            shape = in_place(shape, second)?;
            inner = Path::Key(&outer, second);
            &inner
        }
        _ => return None,
    };
    let mut node = Node::checking(&mut state, at, shape, path.len());
    match elements {
        Some(before) if raw.get().starts_with('[') => {
            node.recording = Recording::Elements(None, before)
        }
        Some(_) => {}
        None => node.build = true,
    }
    within::<serde_json::Error>(raw, node).ok()
}

/// Of a list's elements, each in turn (by index and bytes): was it read
/// already in the same place, strictly (its bytes say the same there
/// again)? An element it says was not is read.
pub type ReadBefore<'a> = &'a dyn Fn(usize, &str) -> bool;

/// [`locate`]'s one pass; `None` for anything [`check`] would refuse.
fn recorded(
    text: &str,
    doc: Document,
    record: Record,
    elements_only: bool,
) -> Option<(Rec, Vec<(u32, Value)>)> {
    let Record::Members(names) = record else {
        return None;
    };
    let bytes = text.as_bytes();
    if bytes.len() as u64 > MAX_BYTES {
        return None;
    }
    let mut state = State {
        base: text.as_ptr() as usize,
        elements_only,
        compact_keys: true,
        skim: true,
        built: (!elements_only).then(Vec::new),
        ..State::default()
    };
    let mut members = Vec::new();
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = Node {
        state: &mut state,
        at: &Path::Top,
        shape: Shape::Struct(root_of(doc)),
        build: false,
        depth: 0,
        recording: Recording::Members(names, &mut members),
    };
    match seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v)) {
        Ok(Value::Object(_)) => {}
        _ => return None,
    }
    let start = bytes.len() - bytes.trim_ascii_start().len();
    let end = bytes.trim_ascii_end().len();
    let rec = Rec::Object {
        span: Some(Span::new(start, end)),
        members,
    };
    Some((rec, state.built.unwrap_or_default()))
}

fn root_of(doc: Document) -> &'static Struct {
    match doc {
        Document::Spec => &schema::SPEC,
        Document::Process => &schema::PROCESS,
    }
}

/// [`read`], building the document or (`build` false) nothing of it.
fn read_built(bytes: &[u8], doc: Document, build: bool) -> Result<Value, Refusal> {
    if bytes.len() as u64 > MAX_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    let root = root_of(doc);
    let mut state = State::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let seed = Node {
        state: &mut state,
        at: &Path::Top,
        shape: Shape::Struct(root),
        build,
        depth: 0,
        recording: Recording::None,
    };
    let parsed = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    match parsed {
        Ok(v @ Value::Object(_)) => Ok(v),
        // Not built, a value still says what it was by its first byte.
        Ok(_) => Err(Refusal::new(
            RULE,
            TOP,
            format!(
                "not a runtime spec: the top level is {}, not an object",
                match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
                    Some(b'[') => "an array",
                    Some(b'"') => "a string",
                    Some(b't' | b'f') => "a boolean",
                    Some(b'n') => "null",
                    _ => "a number",
                }
            ),
        )),
        Err(e) => Err(state
            .refusal
            .unwrap_or_else(|| syntax(&e, state.error_at.as_deref().unwrap_or(TOP)))),
    }
}

/// A refusal for a document over [`MAX_BYTES`], for the shell that reads
/// the file with that bound.
pub fn too_large(len: u64) -> Refusal {
    Refusal::new(
        RULE,
        TOP,
        format!(
            "larger than {} MiB ({len} bytes or more), the most this wrapper reads: real specs are tens of kilobytes",
            MAX_BYTES >> 20
        ),
    )
}

const TOP: &str = "(top level)";

/// Why serde_json stopped, in the terms of what the runtimes would do.
fn syntax(e: &serde_json::Error, at: &str) -> Refusal {
    let msg = e.to_string();
    let why = if msg.starts_with("trailing characters") {
        "something follows the top-level object: runc reads the first value and ignores the rest"
    } else if msg.starts_with("invalid unicode code point") {
        "invalid UTF-8: runc reads it as U+FFFD, crun refuses the file"
    } else if msg.starts_with("lone leading surrogate")
        || msg.starts_with("unexpected end of hex escape")
    {
        "a lone UTF-16 surrogate escape: runc reads it as U+FFFD, crun as `?`"
    } else if msg.starts_with("recursion limit exceeded") {
        return Refusal::new(
            RULE,
            at,
            format!(
                "nested deeper than {MAX_DEPTH} levels of arrays and objects ({msg}): runc and crun read deeper documents, this wrapper does not"
            ),
        );
    } else {
        "not valid JSON (RFC 8259)"
    };
    Refusal::new(RULE, at, format!("{why} ({msg})"))
}

/// What the runtimes' readers make of an object's keys there.
#[derive(Clone, Copy)]
enum Shape {
    /// Not a runtime-spec struct: keys are data (or ignored by runc), and
    /// only duplicates and NULs matter.
    Any,
    /// A Go struct: a key equal to a field under case folding is that field.
    Struct(&'static Struct),
    /// A Go map: keys are exact; the values have this shape.
    Map(&'static Shape),
    /// Each element has this shape.
    Array(&'static Shape),
}

/// A Go struct's fields: JSON name and the shape of the value.
struct Struct {
    fields: &'static [(&'static str, Shape)],
}

impl Struct {
    fn field(&self, key: &str) -> Result<Shape, &'static str> {
        if let Some((_, s)) = self.fields.iter().find(|(f, _)| *f == key) {
            return Ok(*s);
        }
        match self.fields.iter().find(|(f, _)| folds_to(key, f)) {
            Some((f, _)) => Err(f),
            None => Ok(Shape::Any),
        }
    }
}

/// Does Go's encoding/json match `key` to the field `field`? Field names
/// are ASCII; under Unicode simple case folding the only other characters
/// that fold to an ASCII letter are U+212A KELVIN SIGN (k) and U+017F LATIN
/// SMALL LETTER LONG S (s) (Go's `caseOrbit`; U+0130 and U+0131 fold only
/// to themselves).
pub fn folds_to(key: &str, field: &str) -> bool {
    let mut f = field.bytes();
    for c in key.chars() {
        let k = match c {
            '\u{212A}' => b'k',
            '\u{17F}' => b's',
            c if c.is_ascii() => (c as u8).to_ascii_lowercase(),
            _ => return false,
        };
        match f.next() {
            Some(b) if b.to_ascii_lowercase() == k => {}
            _ => return false,
        }
    }
    f.next().is_none()
}

/// Where a value is, as a chain up to the top, built on the stack and
/// rendered only for a refusal.
enum Path<'a> {
    Top,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

/// A path deeper than this shows its first and last segments only.
const SHOWN: usize = 12;

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut segments = Vec::new();
        let mut p = self;
        loop {
            match p {
                Path::Top => break,
                Path::Key(up, _) | Path::Index(up, _) => {
                    segments.push(p);
                    p = up;
                }
            }
        }
        if segments.is_empty() {
            return f.write_str(TOP);
        }
        segments.reverse();
        let n = segments.len();
        for (i, s) in segments.iter().enumerate() {
            if n > SHOWN && (SHOWN / 2..n - SHOWN / 2).contains(&i) {
                if i == SHOWN / 2 {
                    write!(f, "...({} more)...", n - SHOWN)?;
                }
                continue;
            }
            match s {
                Path::Key(_, k) => write_key(f, k, i > 0)?,
                Path::Index(_, i) => write!(f, "[{i}]")?,
                Path::Top => {}
            }
        }
        Ok(())
    }
}

/// `.key`, or `["k.e y"]` for a key that is not a plain name.
fn write_key(f: &mut fmt::Formatter<'_>, k: &str, dot: bool) -> fmt::Result {
    let plain = !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    match (plain, dot) {
        (true, true) => write!(f, ".{k}"),
        (true, false) => f.write_str(k),
        (false, _) => write!(f, "[{k:?}]"),
    }
}

#[derive(Default)]
struct State {
    /// Why the reader stopped, when it was this reader's rule and not
    /// serde_json's syntax.
    refusal: Option<Refusal>,
    /// The innermost place a syntax error was seen.
    error_at: Option<String>,
    /// Where the document starts in memory, for the spans recorded.
    base: usize,
    /// Are mounts recorded as their element spans only ([`Rec::Elements`])?
    elements_only: bool,
    /// Are the keys of a large object compared once it is read ([`Seen`]),
    /// where no refusal is worded?
    compact_keys: bool,
    /// Is a value no struct's field holds, and that is not built, taken
    /// as serde_json's tokenizer found it when it is [`plain`], rather
    /// than read value by value? Where no refusal is worded, as above.
    skim: bool,
    /// The members recorded as values, built as they are checked, with
    /// where each starts ([`locate_built`]); `None`: not built.
    built: Option<Vec<(u32, Value)>>,
}

impl State {
    fn refuse<E: de::Error>(&mut self, at: &Path<'_>, message: String) -> E {
        self.refusal = Some(Refusal::new(RULE, at.to_string(), message));
        E::custom("refused")
    }

    fn seen_error<E>(&mut self, at: impl FnOnce() -> String, e: E) -> E {
        if self.error_at.is_none() {
            self.error_at = Some(at());
        }
        e
    }
}

/// One value to read, with where it is and what shape it must have.
struct Node<'s, 'p, 'r> {
    state: &'s mut State,
    at: &'p Path<'p>,
    shape: Shape,
    /// Is the value built, or only checked?
    build: bool,
    /// The arrays and objects around the value.
    depth: usize,
    /// Where what the rules read of the value goes.
    recording: Recording<'r>,
}

/// What a value's reading records of where the members the rules read
/// are ([`Record`]). Recording builds nothing.
enum Recording<'r> {
    None,
    /// Of an object, the members named, each where it is.
    Members(
        &'static [(&'static str, Record)],
        &'r mut Vec<(&'static str, Rec)>,
    ),
    /// The mount list: each element's spans.
    Mounts(&'r mut Vec<MountSpans>),
    /// The mount list: each element's span only (kept when given a list),
    /// an element its [`ReadBefore`] says was read already not read again.
    Elements(Option<&'r mut Vec<Span>>, ReadBefore<'r>),
    /// One mount: its members the rules read.
    Mount(&'r mut MountSpans),
}

impl Node<'_, '_, '_> {
    /// `v`, or nothing when this value is not built.
    fn built(&self, v: impl FnOnce() -> Value) -> Value {
        match self.build {
            false => Value::Null,
            true => v(),
        }
    }
}

/// The level of an array or object inside `depth` others, or an error
/// past [`MAX_DEPTH`]: serde_json counts the levels of one parse, and a
/// value read again on its own ([`within`]) is counted from where it is.
fn deeper<E: de::Error>(depth: usize) -> Result<usize, E> {
    match depth + 1 {
        level if level > MAX_DEPTH => Err(E::custom("recursion limit exceeded")),
        level => Ok(level),
    }
}

/// The mount list, each element read on its own (its bytes from
/// serde_json, borrowed) and recorded with the members the rules read.
fn mounts<'de, A: SeqAccess<'de>>(
    mut seq: A,
    state: &mut State,
    at: &Path<'_>,
    element: Shape,
    depth: usize,
    list: &mut Vec<MountSpans>,
) -> Result<Value, A::Error> {
    let mut index = 0;
    while let Some(raw) = seq.next_element::<&'de RawValue>()? {
        let here = Path::Index(at, index);
        let mut spans = MountSpans::of(state.span(raw));
        let mut node = Node::checking(state, &here, element, depth);
        if raw.get().starts_with('{') {
            node.recording = Recording::Mount(&mut spans);
        }
        within(raw, node)?;
        list.push(spans);
        index += 1;
    }
    Ok(Value::Null)
}

/// `raw`, a value of the document, read strictly on its own as `node`
/// says, recording where the members `record` names are in it.
fn record_value<E: de::Error>(
    raw: &RawValue,
    node: Node<'_, '_, '_>,
    record: Record,
) -> Result<Rec, E> {
    let span = node.state.span(raw);
    let first = raw.get().as_bytes().first();
    let elements_only = node.state.elements_only;
    Ok(match (record, first) {
        (Record::Members(names), Some(b'{')) => {
            let mut members = Vec::new();
            within(raw, node.with(Recording::Members(names, &mut members)))?;
            Rec::Object {
                span: Some(span),
                members,
            }
        }
        (Record::Mounts, Some(b'[')) if elements_only => {
            let mut elements = Vec::new();
            within(
                raw,
                node.with(Recording::Elements(Some(&mut elements), &|_, _| false)),
            )?;
            Rec::Elements { span, elements }
        }
        (Record::Mounts, Some(b'[')) => {
            let mut elements = Vec::new();
            within(raw, node.with(Recording::Mounts(&mut elements)))?;
            Rec::Mounts { span, elements }
        }
        _ => {
            let Node {
                state,
                at,
                shape,
                depth,
                ..
            } = node;
            let build = state.built.is_some();
            let node = Node {
                state: &mut *state,
                at,
                shape,
                build,
                depth,
                recording: Recording::None,
            };
            let value = within(raw, node)?;
            if let Some(built) = &mut state.built {
                built.push((span.start, value));
            }
            Rec::Value(span)
        }
    })
}

/// `raw` read strictly on its own as `node` says: its bytes were read
/// by serde_json already, as a value; this reads what is in it.
fn within<E: de::Error>(raw: &RawValue, node: Node<'_, '_, '_>) -> Result<Value, E> {
    if !node.build && matches!(node.recording, Recording::None) && plain(raw.get(), node.depth) {
        return Ok(Value::Null);
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    node.deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(E::custom)
}

/// `raw`, read as `node` says unless it is [`plain`]: nothing built, but
/// an object still reads as one (for the message on a duplicate key).
fn skimmed<E: de::Error>(raw: &RawValue, node: Node<'_, '_, '_>) -> Result<Value, E> {
    within(raw, node)?;
    Ok(match raw.get().starts_with('{') {
        true => Value::Object(Map::new()),
        false => Value::Null,
    })
}

/// Is `text`, a value serde_json's tokenizer accepted in the document
/// (its syntax, UTF-8 and control characters checked), one this reader
/// accepts too, with no need to read it again: no object in it (no key
/// to check), no escape (no NUL, no lone surrogate), and not nested past
/// [`MAX_DEPTH`] below `depth` even if every `[` opened a level. Text
/// with a `{` or a `\` anywhere, even in a string, is read again in full.
/// A plain loop over the bytes: these values are short, and `memchr`'s
/// first call probes the CPU's features (`cpuid`, which traps to a
/// hypervisor) in every wrapper process.
fn plain(text: &str, depth: usize) -> bool {
    let (mut brackets, mut other) = (0, false);
    for &c in text.as_bytes() {
        brackets += usize::from(c == b'[');
        other |= c == b'{' || c == b'\\';
    }
    !other && depth + brackets <= MAX_DEPTH
}

impl<'s, 'p> Node<'s, 'p, '_> {
    /// The same value, recording as said.
    fn with<'r>(self, recording: Recording<'r>) -> Node<'s, 'p, 'r> {
        Node {
            state: self.state,
            at: self.at,
            shape: self.shape,
            build: self.build,
            depth: self.depth,
            recording,
        }
    }

    /// A value to check, building and recording nothing.
    fn checking(state: &'s mut State, at: &'p Path<'p>, shape: Shape, depth: usize) -> Self {
        Node {
            state,
            at,
            shape,
            build: false,
            depth,
            recording: Recording::None,
        }
    }
}

impl State {
    /// Where `raw`, borrowed from the document, is in it.
    fn span(&self, raw: &RawValue) -> Span {
        let start = raw.get().as_ptr() as usize - self.base;
        Span::new(start, start + raw.get().len())
    }
}

/// The keys of an object read so far, each with whether its value was an
/// object; a list while there are few, a hash map past that, or (when
/// `compact`) their hashes, compared once the object is read: a fifth of
/// the memory, for an object of tens of thousands of annotations, and no
/// message, which [`check`] words.
struct Seen<'de> {
    /// The first keys, in place: most objects have a few, and one
    /// allocation each would cost more than comparing them.
    few: [Option<(Cow<'de, str>, bool)>; FEW],
    count: usize,
    many: Option<HashMap<Cow<'de, str>, bool>>,
    compact: bool,
    /// When `compact`: a hash of each key past the few. Two equal (a
    /// duplicate, or, all but never, two keys that hash alike) leave the
    /// wording to [`check`], which compares the keys themselves.
    hashes: Vec<u64>,
}

/// Past this many keys, an object's keys go in a hash map.
const FEW: usize = 16;

impl<'de> Seen<'de> {
    fn new(compact: bool) -> Seen<'de> {
        Seen {
            few: [const { None }; FEW],
            count: 0,
            many: None,
            compact,
            hashes: Vec::new(),
        }
    }

    /// Of the keys listed to compare once the object is read
    /// (`compact`), do two hash alike?
    fn repeats(&mut self) -> bool {
        self.hashes.sort_unstable();
        self.hashes.windows(2).any(|w| w[0] == w[1])
    }

    /// Record `key`; for a key seen before, whether its first value was an
    /// object.
    fn insert(&mut self, key: Cow<'de, str>, object: bool) -> Option<bool> {
        if self.compact && (!self.hashes.is_empty() || self.count == FEW) {
            let n = std::mem::take(&mut self.count);
            for i in 0..n {
                if let Some((k, _)) = self.few[i].take() {
                    self.list(k);
                }
            }
            self.list(key);
            return None;
        }
        if self.many.is_none() {
            let few = self.few[..self.count].iter().flatten();
            if let Some((_, o)) = few.into_iter().find(|(k, _)| *k == key) {
                return Some(*o);
            }
            if self.count < FEW {
                self.few[self.count] = Some((key, object));
                self.count += 1;
                return None;
            }
            let many = self.drain_few().collect();
            self.many = Some(many);
        }
        match self.many.get_or_insert_with(HashMap::default).entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(object);
                None
            }
        }
    }

    fn drain_few(&mut self) -> impl Iterator<Item = (Cow<'de, str>, bool)> + '_ {
        let n = std::mem::take(&mut self.count);
        self.few[..n].iter_mut().filter_map(Option::take)
    }

    fn list(&mut self, key: Cow<'de, str>) {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.as_ref().hash(&mut h);
        self.hashes.push(h.finish());
    }
}

fn nul_message(what: &str) -> String {
    format!(
        "a NUL character (\\u0000) in {what}: crun reads strings as C strings and would see only what precedes it"
    )
}

/// An object key, borrowed from the input where it can be, and whether it
/// was written with escapes (only then can it hold a NUL).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = (Cow<'de, str>, bool);

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = (Cow<'de, str>, bool);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok((Cow::Borrowed(v), false))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok((Cow::Owned(v.to_owned()), true))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok((Cow::Owned(v), true))
    }
}

#[cfg(test)]
mod tests;
