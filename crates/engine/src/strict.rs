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

mod fields;
pub mod scan;
pub mod spans;

use super::view::{self, Build};
use super::Refusal;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
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

/// Why [`scan::scan`] did not accept `bytes` as a `doc`: the whole-document
/// reader's refusal, in its words. Should that reader accept them, the
/// scan's stricter reading stands (it refuses a key serde_json treats as a
/// number, `"$serde_json::private::Number"`): refused all the same.
pub fn refusal_of(bytes: &[u8], doc: Document) -> Refusal {
    match read_built(bytes, doc, Build::Nothing) {
        Err(r) => r,
        Ok(_) => Refusal::new(
            RULE,
            TOP,
            "not read: valid JSON this reader does not read in one strict pass (a key \"$serde_json::private::Number\" is one such case); refused rather than guessed at",
        ),
    }
}

/// Read `bytes` as a `doc`, or say why the runtimes could read it otherwise.
pub fn read(bytes: &[u8], doc: Document) -> Result<Value, Refusal> {
    read_built(bytes, doc, Build::All)
}

/// [`read`], building of the document what `build` says.
fn read_built(bytes: &[u8], doc: Document, build: Build) -> Result<Value, Refusal> {
    if bytes.len() as u64 > MAX_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    let root = match doc {
        Document::Spec => &fields::SPEC,
        Document::Process => &fields::PROCESS,
    };
    let mut state = State::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let seed = Node {
        state: &mut state,
        at: &Path::Top,
        shape: Shape::Struct(root),
        build,
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
fn folds_to(key: &str, field: &str) -> bool {
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
struct Node<'s, 'p> {
    state: &'s mut State,
    at: &'p Path<'p>,
    shape: Shape,
    build: Build,
}

impl Node<'_, '_> {
    /// `v`, or nothing when this value is not built.
    fn built(&self, v: impl FnOnce() -> Value) -> Value {
        match self.build {
            Build::Nothing => Value::Null,
            Build::All | Build::Some(_) | Build::Mounts => v(),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// serde_json hands a number it does not keep as an integer (with
/// `arbitrary_precision`) as a map with this one key.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(self.built(|| Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(self.built(|| Value::Number(v.into())))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(self.built(|| Value::Number(v.into())))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(self.built(|| Number::from_f64(v).map_or(Value::Null, Value::Number)))
    }

    /// Unescaped text: serde_json refuses a raw control character, so it
    /// holds no NUL.
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Value, E> {
        Ok(self.built(|| Value::String(v.to_owned())))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        if v.contains('\0') {
            return Err(self.state.refuse(self.at, nul_message("a string")));
        }
        Ok(self.built(|| Value::String(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        if v.contains('\0') {
            return Err(self.state.refuse(self.at, nul_message("a string")));
        }
        Ok(self.built(|| Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let Node {
            state,
            at,
            shape,
            build,
        } = self;
        let element = match shape {
            Shape::Array(s) => *s,
            _ => Shape::Any,
        };
        let keep = !matches!(build, Build::Nothing);
        let mut out = Vec::with_capacity(if keep {
            seq.size_hint().unwrap_or(0)
        } else {
            0
        });
        let mut index = 0;
        loop {
            let here = Path::Index(at, index);
            let node = Node {
                state: &mut *state,
                at: &here,
                shape: element,
                build: build.element(),
            };
            match seq.next_element_seed(node) {
                Ok(Some(v)) if keep => out.push(v),
                Ok(Some(_)) => {}
                Ok(None) if keep => return Ok(Value::Array(out)),
                Ok(None) => return Ok(Value::Null),
                Err(e) => return Err(state.seen_error(|| here.to_string(), e)),
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let Node {
            state,
            at,
            shape,
            build,
        } = self;
        let mut out = Map::new();
        // The keys, when not every member is built into `out`.
        let mut seen = Seen::default();
        let mut first = true;
        loop {
            let (key, escaped) = match map.next_key_seed(Key) {
                Ok(Some(k)) => k,
                // Not built, an object still reads as one (for the
                // message on a duplicate).
                Ok(None) => return Ok(Value::Object(out)),
                Err(e) => return Err(state.seen_error(|| at.to_string(), e)),
            };
            if first && key == NUMBER_TOKEN {
                let text: String = map.next_value()?;
                let n = text.parse::<Number>().map_err(de::Error::custom)?;
                return Ok(match build {
                    Build::Nothing => Value::Null,
                    Build::All | Build::Some(_) | Build::Mounts => Value::Number(n),
                });
            }
            first = false;
            let here = Path::Key(at, &key);
            if escaped && key.contains('\0') {
                return Err(state.refuse(&here, nul_message("a key")));
            }
            let child = match shape {
                Shape::Struct(s) => match s.field(&key) {
                    Ok(c) => c,
                    Err(field) => {
                        return Err(state.refuse(
                            &here,
                            format!(
                                "key {key:?} is the field {field:?} only under case folding: runc (Go) reads it as {field:?}, crun ignores it; write {field:?} exactly"
                            ),
                        ))
                    }
                },
                Shape::Map(s) => *s,
                Shape::Any | Shape::Array(_) => Shape::Any,
            };
            let member = build.member(&key);
            let node = Node {
                state: &mut *state,
                at: &here,
                shape: child,
                build: member,
            };
            let value = match map.next_value_seed(node) {
                Ok(v) => v,
                Err(e) => return Err(state.seen_error(|| here.to_string(), e)),
            };
            let first_was_object = match build {
                Build::All | Build::Mounts => match out.entry(key.to_string()) {
                    Entry::Vacant(v) => {
                        v.insert(value);
                        continue;
                    }
                    Entry::Occupied(first) => first.get().is_object(),
                },
                Build::Nothing | Build::Some(_) => {
                    let owned = match member {
                        Build::Nothing => None,
                        Build::All | Build::Some(_) | Build::Mounts => Some(key.to_string()),
                    };
                    match seen.insert(key.clone(), value.is_object()) {
                        None => {
                            if let Some(k) = owned {
                                out.insert(k, value);
                            }
                            continue;
                        }
                        Some(was) => was,
                    }
                }
            };
            let merged = matches!(child, Shape::Struct(_)) && value.is_object() && first_was_object;
            let runc = match merged {
                true => "runc merges the two objects field by field",
                false => "runc keeps the last",
            };
            let message = format!("duplicate key {key:?} in {at}: {runc}, crun the first");
            return Err(state.refuse(&Path::Key(at, &key), message));
        }
    }
}

/// The keys of an object read so far, each with whether its value was an
/// object; a list while there are few, a hash map past that.
#[derive(Default)]
struct Seen<'de> {
    few: Vec<(Cow<'de, str>, bool)>,
    many: HashMap<Cow<'de, str>, bool>,
}

/// Past this many keys, an object's keys go in a hash map.
const FEW: usize = 16;

impl<'de> Seen<'de> {
    /// Record `key`; for a key seen before, whether its first value was an
    /// object.
    fn insert(&mut self, key: Cow<'de, str>, object: bool) -> Option<bool> {
        if self.many.is_empty() {
            if let Some((_, o)) = self.few.iter().find(|(k, _)| *k == key) {
                return Some(*o);
            }
            if self.few.len() < FEW {
                self.few.push((key, object));
                return None;
            }
            self.many.extend(self.few.drain(..));
        }
        match self.many.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(object);
                None
            }
        }
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
