//! The strict reader in one pass over the bytes, recording spans instead of
//! building values: what the wrapper reads a spec with. It accepts exactly
//! what [`super::read`] accepts; for a document it does not accept, the
//! caller asks [`super::read`] why, for the refusal's words.
//!
//! One difference, on purpose: an object with the key
//! `"$serde_json::private::Number"` is refused here, where serde_json
//! (with `arbitrary_precision`) reads it as a number.
//!
//! Every check of [`super::read`] is made here on the bytes, in the order
//! they come: RFC 8259 as serde_json reads it (numbers of any size, only
//! space, tab, newline and carriage return between tokens, nothing after
//! the top-level object), UTF-8, paired surrogate escapes, no NUL, no
//! duplicate key (compared as the keys read, escapes decoded), no key that
//! is a runtime-spec field only under Go's case folding, at most
//! [`MAX_DEPTH`] levels and [`MAX_BYTES`] bytes. Strings and runs of
//! indentation are read eight bytes at a time.

use super::spans::{self, MountSpans, Rec, Record, Span, MOUNT_MEMBERS};
use super::{fields, folds_to, view, Document, Shape, Struct, MAX_BYTES, MAX_DEPTH, NUMBER_TOKEN};
use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

/// The spans `record` names, if the strict reader accepts `bytes` as a
/// `doc`; `None` otherwise.
pub fn scan(bytes: &[u8], doc: Document, record: Record) -> Option<Rec> {
    if bytes.len() as u64 > MAX_BYTES {
        return None;
    }
    let root = root_of(doc);
    let mut s = Scanner {
        src: bytes,
        keys: Vec::new(),
        hasher: RandomState::new(),
    };
    let i = ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    let (end, rec) = s.recorded(i, Shape::Struct(root), record, 1)?;
    (ws(bytes, end) == bytes.len()).then_some(rec)
}

/// The value at `at` of `bytes`, read as the member at `path` (field names
/// from the top level, or [`ELEMENT`]) of a `doc`: checked as [`scan`] checks it there
/// (the fields of its shape, its level) and recorded as `record`. Where it
/// ends and what was recorded, or `None` if the strict reader would refuse
/// it there. For the check of a written spec, which reads back only what
/// the writer wrote.
pub fn scan_member(
    bytes: &[u8],
    at: usize,
    doc: Document,
    path: &[&str],
    record: Record,
) -> Option<(usize, Rec)> {
    if bytes.len() as u64 > MAX_BYTES {
        return None;
    }
    let mut shape = Shape::Struct(root_of(doc));
    for key in path {
        if *key == ELEMENT {
            shape = element_shape(shape);
            continue;
        }
        shape = match shape {
            Shape::Struct(s) => field(s, key.as_bytes())?,
            Shape::Map(s) => *s,
            Shape::Any | Shape::Array(_) => Shape::Any,
        };
    }
    let mut s = Scanner {
        src: bytes,
        keys: Vec::new(),
        hasher: RandomState::new(),
    };
    s.recorded(at, shape, record, path.len() + 1)
}

/// A step of a [`scan_member`] path: an element of the array.
pub const ELEMENT: &str = "[]";

fn root_of(doc: Document) -> &'static Struct {
    match doc {
        Document::Spec => &fields::SPEC,
        Document::Process => &fields::PROCESS,
    }
}

/// The same, by the whole-document reader and [`spans::locate`]: slow, and
/// what [`scan`] must agree with.
pub fn reference(bytes: &[u8], doc: Document, record: Record) -> Option<Rec> {
    super::read_built(bytes, doc, view::Build::Nothing).ok()?;
    Some(spans::locate(bytes, view::skip_ws(bytes, 0), record))
}

/// Past this many keys, an object's keys are also kept as hashes.
const FEW: usize = 16;

/// The keyed hashes of an object's keys. They are random already: the
/// set's own hasher keeps them as they are.
type Hashes = HashSet<u64, BuildHasherDefault<Identity>>;

#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

struct Scanner<'a> {
    src: &'a [u8],
    /// The keys of the objects being read, outermost first.
    keys: Vec<Key>,
    hasher: RandomState,
}

/// A key as written: the bytes between its quotes.
#[derive(Clone, Copy)]
struct Key {
    start: u32,
    end: u32,
    escaped: bool,
}

// Each step takes the position of what it reads and gives the position
// just past it, or `None` for a document the strict reader refuses; the
// positions stay in registers.

impl<'a> Scanner<'a> {
    /// The value at `i`, checked as a `shape` and recorded as `record`
    /// says; `depth` is its level if it is an array or an object.
    fn recorded(
        &mut self,
        i: usize,
        shape: Shape,
        record: Record,
        depth: usize,
    ) -> Option<(usize, Rec)> {
        let src = self.src;
        match (record, src.get(i)) {
            (Record::Members(names), Some(b'{')) => {
                let mut members = Vec::new();
                let end = self.object(i, shape, depth, |s, at, key, child, depth| {
                    match names.iter().find(|(n, _)| same(n.as_bytes(), key)) {
                        Some(&(name, r)) => {
                            let (end, rec) = s.recorded(at, child, r, depth)?;
                            members.push((name, rec));
                            Some(end)
                        }
                        None => s.skip(at, child, depth),
                    }
                })?;
                let span = Span::new(i, end);
                Some((end, Rec::Object { span, members }))
            }
            (Record::Mounts, Some(b'[')) => {
                let element = element_shape(shape);
                let mut elements = Vec::new();
                let end = self.array(i, depth, |s, at, depth| {
                    let mut spans = MountSpans::default();
                    let end = if src.get(at) == Some(&b'{') {
                        s.object(at, element, depth, |s, from, key, child, depth| {
                            let end = s.skip(from, child, depth)?;
                            if let Some(slot) = mount_slot(key) {
                                spans.set(slot, Span::new(from, end));
                            }
                            Some(end)
                        })?
                    } else {
                        s.skip(at, element, depth)?
                    };
                    spans.element = Span::new(at, end);
                    elements.push(spans);
                    Some(end)
                })?;
                let span = Span::new(i, end);
                Some((end, Rec::Mounts { span, elements }))
            }
            (Record::Elements, Some(b'[')) => {
                let element = element_shape(shape);
                let mut elements = Vec::new();
                let end = self.array(i, depth, |s, at, depth| {
                    let end = s.skip(at, element, depth)?;
                    elements.push(Span::new(at, end));
                    Some(end)
                })?;
                let span = Span::new(i, end);
                Some((end, Rec::Elements { span, elements }))
            }
            _ => {
                let end = self.skip(i, shape, depth)?;
                Some((end, Rec::Value(Span::new(i, end))))
            }
        }
    }

    /// Past the value at `i`, checked as a `shape`; `depth` is its level
    /// if it is an array or an object.
    #[inline(always)]
    fn skip(&mut self, i: usize, shape: Shape, depth: usize) -> Option<usize> {
        let src = self.src;
        match *src.get(i)? {
            b'"' => string(src, i).map(|(end, _)| end),
            b'{' | b'[' => self.container(i, shape, depth),
            b't' => literal(src, i, b"true"),
            b'f' => literal(src, i, b"false"),
            b'n' => literal(src, i, b"null"),
            _ => number(src, i),
        }
    }

    /// Past the array or object at `i`.
    #[inline(never)]
    fn container(&mut self, i: usize, shape: Shape, depth: usize) -> Option<usize> {
        if self.src.get(i) == Some(&b'{') {
            self.object(i, shape, depth, |s, at, _, child, depth| {
                s.skip(at, child, depth)
            })
        } else {
            let element = element_shape(shape);
            self.array(i, depth, |s, at, depth| s.skip(at, element, depth))
        }
    }

    /// The object at `i`, at level `depth`: each member's key read and
    /// checked (against the fields of `shape`, and the keys before it),
    /// then `member` called with the value's position, the key as read,
    /// the value's shape and level, to read the value.
    #[inline(always)]
    fn object<F>(&mut self, i: usize, shape: Shape, depth: usize, mut member: F) -> Option<usize>
    where
        F: FnMut(&mut Self, usize, &[u8], Shape, usize) -> Option<usize>,
    {
        if depth > MAX_DEPTH {
            return None;
        }
        let src = self.src;
        let mut i = ws(src, i + 1);
        if src.get(i) == Some(&b'}') {
            return Some(i + 1);
        }
        let first = self.keys.len();
        let mut hashes: Option<Hashes> = None;
        loop {
            if src.get(i) != Some(&b'"') {
                return None;
            }
            let (after, escaped) = string(src, i)?;
            let (start, end) = (i + 1, after - 1);
            let decoded;
            let key: &[u8] = if escaped {
                decoded = decode(src.get(start..end)?)?;
                &decoded
            } else {
                src.get(start..end)?
            };
            if key == NUMBER_TOKEN.as_bytes() {
                return None;
            }
            let child = match shape {
                Shape::Struct(s) => field(s, key)?,
                Shape::Map(s) => *s,
                Shape::Any | Shape::Array(_) => Shape::Any,
            };
            self.unique(first, key, escaped, &mut hashes)?;
            self.keys.push(Key {
                start: start as u32,
                end: end as u32,
                escaped,
            });
            i = ws(src, after);
            if src.get(i) != Some(&b':') {
                return None;
            }
            i = member(self, ws(src, i + 1), key, child, depth + 1)?;
            i = ws(src, i);
            match src.get(i) {
                Some(b',') => i = ws_line(src, i + 1),
                Some(b'}') => {
                    self.keys.truncate(first);
                    return Some(i + 1);
                }
                _ => return None,
            }
        }
    }

    /// `None` if `key` (as read) equals one of the keys from `first` on:
    /// compared one by one while there are few, then by hash, with the
    /// keys compared only when the hashes are equal.
    #[inline(always)]
    fn unique(
        &self,
        first: usize,
        key: &[u8],
        escaped: bool,
        hashes: &mut Option<Hashes>,
    ) -> Option<()> {
        let before = self.keys.get(first..)?;
        if before.len() >= FEW || escaped {
            return self.unique_many(before, key, escaped, hashes);
        }
        let src = self.src;
        for k in before {
            if k.escaped {
                return self.absent(before, key, escaped);
            }
            let (start, end) = (k.start as usize, k.end as usize);
            if src.get(start..end).is_some_and(|k| same(k, key)) {
                return None;
            }
        }
        Some(())
    }

    /// [`Self::unique`] for an escaped key or past [`FEW`] keys.
    #[inline(never)]
    fn unique_many(
        &self,
        before: &[Key],
        key: &[u8],
        escaped: bool,
        hashes: &mut Option<Hashes>,
    ) -> Option<()> {
        if before.len() < FEW {
            return self.absent(before, key, escaped);
        }
        let set = match hashes {
            Some(set) => set,
            None => {
                let mut set =
                    Hashes::with_capacity_and_hasher(before.len() * 4, Default::default());
                for k in before {
                    set.insert(self.hash(&self.text(*k)?));
                }
                hashes.insert(set)
            }
        };
        if set.insert(self.hash(key)) {
            return Some(());
        }
        self.absent(before, key, escaped)
    }

    fn hash(&self, key: &[u8]) -> u64 {
        let mut h = self.hasher.build_hasher();
        h.write(key);
        h.finish()
    }

    /// `None` if `key` is one of `keys`.
    fn absent(&self, keys: &[Key], key: &[u8], escaped: bool) -> Option<()> {
        for k in keys {
            let raw = self.src.get(k.start as usize..k.end as usize)?;
            let same = match (k.escaped, escaped) {
                (false, false) => raw == key,
                _ => decode(raw)? == key,
            };
            if same {
                return None;
            }
        }
        Some(())
    }

    /// A key as read.
    fn text(&self, k: Key) -> Option<std::borrow::Cow<'a, [u8]>> {
        let raw = self.src.get(k.start as usize..k.end as usize)?;
        Some(match k.escaped {
            false => raw.into(),
            true => decode(raw)?.into(),
        })
    }

    /// The array at `i`, at level `depth`: `element` called to read each
    /// element, with its position and level.
    #[inline(always)]
    fn array<F>(&mut self, i: usize, depth: usize, mut element: F) -> Option<usize>
    where
        F: FnMut(&mut Self, usize, usize) -> Option<usize>,
    {
        if depth > MAX_DEPTH {
            return None;
        }
        let src = self.src;
        let mut i = ws(src, i + 1);
        if src.get(i) == Some(&b']') {
            return Some(i + 1);
        }
        loop {
            i = ws(src, element(self, i, depth + 1)?);
            match src.get(i) {
                Some(b',') => i = ws_line(src, i + 1),
                Some(b']') => return Some(i + 1),
                _ => return None,
            }
        }
    }
}

/// Past whitespace from `i`: most often none, or one space after a colon.
#[inline(always)]
fn ws(src: &[u8], i: usize) -> usize {
    match src.get(i) {
        Some(&b) if b > b' ' => i,
        Some(b' ') if src.get(i + 1).is_some_and(|&c| c > b' ') => i + 1,
        Some(_) => ws_run(src, i),
        None => i,
    }
}

/// Past whitespace from `i`, where a pretty-printed spec starts a line: a
/// newline and up to seven spaces are skipped with no call.
#[inline(always)]
fn ws_line(src: &[u8], i: usize) -> usize {
    if src.get(i) == Some(&b'\n') {
        if let Some(chunk) = src.get(i + 1..i + 9) {
            let spaces = word(chunk) ^ (ONES * u64::from(b' '));
            let at = i + 1 + (spaces.trailing_zeros() / 8) as usize;
            if src.get(at).is_some_and(|&c| c > b' ') {
                return at;
            }
        }
    }
    ws(src, i)
}

/// Past a run of whitespace. Pretty-printed specs indent every line:
/// spaces after a newline are skipped eight at a time.
#[inline(never)]
fn ws_run(src: &[u8], mut i: usize) -> usize {
    loop {
        match src.get(i) {
            Some(b'\n') => {
                i += 1;
                while let Some(chunk) = src.get(i..i + 8) {
                    let spaces = word(chunk) ^ (ONES * u64::from(b' '));
                    if spaces != 0 {
                        i += (spaces.trailing_zeros() / 8) as usize;
                        break;
                    }
                    i += 8;
                }
                if src.get(i).is_some_and(|&c| c > b' ') {
                    return i;
                }
            }
            Some(b' ' | b'\t' | b'\r') => i += 1,
            _ => return i,
        }
    }
}

fn literal(src: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    let end = i + word.len();
    (src.get(i..end)? == word).then_some(end)
}

/// Past the number at `i`: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`,
/// serde_json with `arbitrary_precision` keeps any such number, however
/// long.
#[inline(never)]
fn number(src: &[u8], mut i: usize) -> Option<usize> {
    if src.get(i) == Some(&b'-') {
        i += 1;
    }
    match *src.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(src, i + 1),
        _ => return None,
    }
    if src.get(i) == Some(&b'.') {
        i = some_digits(src, i + 1)?;
    }
    if matches!(src.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(src.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = some_digits(src, i)?;
    }
    // A digit after a leading zero is refused by what follows the number:
    // a comma, a bracket or whitespace must.
    Some(i)
}

/// Past the string whose opening quote is at `i`, and whether it has
/// escapes: no control character, valid UTF-8, escapes as RFC 8259 has
/// them with surrogates paired, and no NUL (crun reads strings as C
/// strings).
#[inline(always)]
fn string(src: &[u8], i: usize) -> Option<(usize, bool)> {
    let mut j = i + 1;
    // Eight bytes at a time to the first quote, backslash, control
    // character or byte of a multi-byte character: most strings have only
    // a quote.
    while let Some(chunk) = src.get(j..j + 8) {
        let x = word(chunk);
        let q = x ^ (ONES * u64::from(b'"'));
        let b = x ^ (ONES * u64::from(b'\\'));
        // A byte below 0x80 is flagged when it is 0 (q, b) or below 0x20
        // (x), or by a borrow from a flagged byte below it: the lowest
        // flagged byte is exact.
        let special =
            (q.wrapping_sub(ONES) | b.wrapping_sub(ONES) | x.wrapping_sub(ONES * 0x20) | x) & HIGH;
        if special != 0 {
            j += (special.trailing_zeros() / 8) as usize;
            if src.get(j) == Some(&b'"') {
                return Some((j + 1, false));
            }
            break;
        }
        j += 8;
    }
    string_rest(src, i, j)
}

/// The rest of the string whose opening quote is at `i`, from `j`, byte
/// by byte: escapes, multi-byte characters, the last bytes of the input.
#[inline(never)]
fn string_rest(src: &[u8], i: usize, mut j: usize) -> Option<(usize, bool)> {
    let mut escaped = false;
    let mut high = false;
    loop {
        let c = *src.get(j)?;
        match c {
            b'"' => break,
            b'\\' => {
                escaped = true;
                j = escape(src, j + 1)?;
            }
            0..=0x1f => return None,
            0x80.. => {
                high = true;
                j += 1;
            }
            _ => j += 1,
        }
    }
    if high {
        // Escapes are ASCII and decode to whole characters: the text is
        // valid UTF-8 exactly when the bytes as written are.
        std::str::from_utf8(src.get(i + 1..j)?).ok()?;
    }
    Some((j + 1, escaped))
}

/// The number of the member `key` of a mount, as [`MountSpans::slot`]
/// has it: found by the bytes, the key need not be made a `str`.
#[inline]
fn mount_slot(key: &[u8]) -> Option<usize> {
    MOUNT_MEMBERS
        .iter()
        .position(|name| same(name.as_bytes(), key))
}

/// `a == b`, for the short names and keys of a spec without a call to
/// `memcmp`: two words, overlapping, for 4 to 16 bytes.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        8..=16 => word(&a[..8]) == word(&b[..8]) && word(&a[n - 8..]) == word(&b[n - 8..]),
        4..=7 => half(&a[..4]) == half(&b[..4]) && half(&a[n - 4..]) == half(&b[n - 4..]),
        _ => a == b,
    }
}

/// Four bytes as one word.
#[inline]
fn half(chunk: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(chunk);
    u32::from_le_bytes(w)
}

/// Eight bytes as one little-endian word: the first byte lowest.
#[inline]
fn word(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(chunk);
    u64::from_le_bytes(w)
}

/// Past the digits from `i`.
fn digits(src: &[u8], mut i: usize) -> usize {
    while matches!(src.get(i), Some(b'0'..=b'9')) {
        i += 1;
    }
    i
}

/// Past the digits from `i`, if there is at least one.
fn some_digits(src: &[u8], i: usize) -> Option<usize> {
    let end = digits(src, i);
    (end > i).then_some(end)
}

/// The shape of the elements of an array read as `shape`.
fn element_shape(shape: Shape) -> Shape {
    match shape {
        Shape::Array(s) => *s,
        _ => Shape::Any,
    }
}

/// The shape of the member `key` of a `s`, or `None` if the key is one
/// of its fields only under Go's case folding.
#[inline(always)]
fn field(s: &Struct, key: &[u8]) -> Option<Shape> {
    for (f, shape) in s.fields {
        if same(f.as_bytes(), key) {
            return Some(*shape);
        }
    }
    folded(s, key)
}

/// The shape of the member `key` of a `s` that is none of its fields
/// exactly: `None` if it is one under Go's case folding.
#[inline(never)]
fn folded(s: &Struct, key: &[u8]) -> Option<Shape> {
    let folded = if key.is_ascii() {
        s.fields
            .iter()
            .any(|(f, _)| f.as_bytes().eq_ignore_ascii_case(key))
    } else {
        let key = std::str::from_utf8(key).ok()?;
        s.fields.iter().any(|(f, _)| folds_to(key, f))
    };
    (!folded).then_some(Shape::Any)
}

/// Past the escape whose backslash is just before `i`; `None` for one
/// serde_json refuses (an unknown letter, a lone or reversed surrogate)
/// and for `\u0000`.
fn escape(src: &[u8], i: usize) -> Option<usize> {
    match *src.get(i)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(i + 1),
        b'u' => {
            let n = hex4(src, i + 1)?;
            match n {
                0 | 0xDC00..=0xDFFF => None,
                0xD800..=0xDBFF => {
                    if src.get(i + 5..i + 7)? != b"\\u" {
                        return None;
                    }
                    let low = hex4(src, i + 7)?;
                    (0xDC00..=0xDFFF).contains(&low).then_some(i + 11)
                }
                _ => Some(i + 5),
            }
        }
        _ => None,
    }
}

/// The four hex digits at `i`.
fn hex4(src: &[u8], i: usize) -> Option<u32> {
    let mut n = 0;
    for &c in src.get(i..i + 4)? {
        n = n << 4 | char::from(c).to_digit(16)?;
    }
    Some(n)
}

/// The text of a string's bytes as written, escapes decoded; only for a
/// string [`Scanner::string`] accepted (`None` otherwise).
fn decode(raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while let Some(n) = memchr::memchr(b'\\', &raw[i..]) {
        out.extend_from_slice(&raw[i..i + n]);
        i += n + 1;
        let c = *raw.get(i)?;
        i += 1;
        let b = match c {
            b'b' => b'\x08',
            b'f' => b'\x0c',
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let mut n = hex4(raw, i)?;
                i += 4;
                if (0xD800..=0xDBFF).contains(&n) {
                    let low = hex4(raw, i + 2)?;
                    i += 6;
                    n = 0x10000 + ((n - 0xD800) << 10) + low.checked_sub(0xDC00)?;
                }
                let c = char::from_u32(n)?;
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                continue;
            }
            c => c,
        };
        out.push(b);
    }
    out.extend_from_slice(&raw[i..]);
    Some(out)
}

#[cfg(test)]
mod tests;
