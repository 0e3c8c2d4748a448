//! The spec the engine decides on: the bytes it was read from, the members
//! the rules read ([`slices::SPEC`]) as values, and the mounts as spans of
//! those bytes.
//!
//! A large spec is mostly mounts, and building each as a `Value` costs
//! more than reading it (a kilobyte of heap for a 150-byte mount). So a
//! mount stays a set of spans ([`MountSpans`]) and the rules read its few
//! members from the bytes; only a mount a rule edits becomes a `Value`.
//! The writer (`super::write`) then writes the bytes read with only what
//! the rules changed written anew.

use super::fields;
use super::report::Refusal;
use super::slices::{self, MountSpans, Rec, Record, Span};
use super::strict::{self, Document};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::cell::OnceCell;

/// A spec read strictly, as the rules see and edit it.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The bytes read: text, since the strict reader accepts only UTF-8,
    /// so a string of the document is a slice of it, with no check.
    src: String,
    /// What the bytes are: config.json, or the process file of an exec.
    document: Document,
    /// The top-level object with only the members [`Spec::record`] names,
    /// in document order: `linux` and `process` with only their named
    /// members, `root` whole, and `mounts` as `null` in its place (the
    /// mounts are in [`Spec::mounts`]).
    view: Value,
    /// The members of the view as read that were handed out to edit
    /// ([`Spec::member_mut`]), before the edits: what is equal to it needs
    /// no writing, and reads back as it was where its bytes are. A member
    /// not here was never edited: it is as read.
    view_read: Map<String, Value>,
    mounts: Mounts,
    /// Where the view's members are in the bytes read, in order.
    layout: Vec<Placed>,
    /// Which mounts as read have a destination written clean and with no
    /// escape (most do), one bit each, so that the mount rules, which all
    /// read every destination, take it from the bytes at once: made on
    /// first use. A bit, not the span (which the mount's spans hold): a
    /// large spec has tens of thousands of mounts.
    clean_dests: OnceCell<Vec<u64>>,
}

/// A member of the view as read: its name, where its value is, and, for
/// an object read by members, where those are.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Placed {
    pub name: &'static str,
    /// `None` for an object read by members, found when needed.
    pub span: Option<Span>,
    pub members: Option<Vec<(&'static str, Span)>>,
}

/// The `mounts` member.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mounts {
    Absent,
    /// `null`, or not an array (which the rules refuse).
    Other(Value),
    List {
        /// The array in the bytes read.
        span: Span,
        /// Its elements as read.
        read: Vec<MountSpans>,
        /// The elements now, once a rule changed the list (`None`: as
        /// read): read ones by index into `read`, edited or added ones as
        /// values.
        list: Option<Vec<Mount>>,
    },
}

/// One element of the mount list.
#[derive(Debug, Clone, PartialEq)]
pub enum Mount {
    /// As read: the index of its spans.
    Read(u32),
    /// Edited from the element read at `from`, or added (`from` is
    /// `None`).
    Edited {
        from: Option<u32>,
        value: Box<Value>,
    },
}

impl Mount {
    /// A mount a rule adds.
    pub fn new(value: Value) -> Mount {
        Mount::Edited {
            from: None,
            value: Box::new(value),
        }
    }
}

impl Spec {
    /// Read config.json strictly (see [`strict`]): refused unless runc and
    /// crun would read the bytes alike.
    pub fn read(src: Vec<u8>) -> Result<Spec, Refusal> {
        Spec::read_as(src, Document::Spec)
    }

    /// Read the process file of `exec --process` strictly, as config.json.
    pub fn read_process(src: Vec<u8>) -> Result<Spec, Refusal> {
        Spec::read_as(src, Document::Process)
    }

    fn read_as(src: Vec<u8>, document: Document) -> Result<Spec, Refusal> {
        // UTF-8 checked once for the whole, not string by string.
        let src = String::from_utf8(src).map_err(|e| {
            let utf8 = e.utf8_error();
            strict::not_utf8(e.as_bytes(), document, utf8)
        })?;
        let (rec, built) = strict::locate_built(&src, document, record_of(document), false)?;
        Spec::from_rec(src, rec, built, document)
    }

    /// What the rules read of this document.
    pub fn record(&self) -> Record {
        record_of(self.document)
    }

    pub fn document(&self) -> Document {
        self.document
    }

    /// A spec from a document held as a value (tests, and callers that
    /// built one): its compact text, read as [`Spec::read`] reads bytes.
    pub fn from_value(doc: &Value) -> Result<Spec, Refusal> {
        let text = serde_json::to_vec(doc)
            .map_err(|e| Refusal::new(strict::RULE, "(top level)", e.to_string()))?;
        Spec::read(text)
    }

    fn from_rec(
        src: String,
        rec: Rec,
        built: Vec<(u32, Value)>,
        document: Document,
    ) -> Result<Spec, Refusal> {
        let Rec::Object { members, .. } = rec else {
            return Err(not_an_object());
        };
        // The members built in the reader's pass, in document order; any
        // other is read from its span.
        let mut built = built.into_iter().peekable();
        let mut value_of = |rec: &Rec| {
            let span = known(rec)?;
            match built.next_if(|(start, _)| *start == span.start) {
                Some((_, value)) => Ok(value),
                None => parse(&src, span),
            }
        };
        let mut view = Map::new();
        let mut mounts = Mounts::Absent;
        let mut layout = Vec::with_capacity(members.len());
        for (name, rec) in members {
            layout.push(Placed {
                name,
                span: rec.span(),
                members: match &rec {
                    Rec::Object { members, .. } => {
                        members.iter().map(|(k, r)| Some((*k, r.span()?))).collect()
                    }
                    _ => None,
                },
            });
            let value = match (name, rec) {
                (_, Rec::Mounts { span, elements }) => {
                    mounts = Mounts::List {
                        span,
                        read: elements,
                        list: None,
                    };
                    Value::Null
                }
                ("mounts", other) => {
                    mounts = Mounts::Other(value_of(&other)?);
                    Value::Null
                }
                (_, Rec::Object { members, .. }) => {
                    let mut object = Map::new();
                    for (key, rec) in members {
                        object.insert(key.to_owned(), value_of(&rec)?);
                    }
                    Value::Object(object)
                }
                (_, rec) => value_of(&rec)?,
            };
            view.insert(name.to_owned(), value);
        }
        let view = Value::Object(view);
        Ok(Spec {
            src,
            document,
            view_read: Map::new(),
            view,
            mounts,
            layout,
            clean_dests: OnceCell::new(),
        })
    }

    /// The bytes read.
    pub fn source(&self) -> &[u8] {
        self.src.as_bytes()
    }

    /// The bytes read, as the text they are.
    pub fn text(&self) -> &str {
        &self.src
    }

    /// The members the rules read, but the mounts (see [`Spec`]).
    pub fn view(&self) -> &Value {
        &self.view
    }

    /// The member at `path` of the view as read, and where it was read.
    pub(crate) fn as_read(&self, path: &[&str]) -> Option<(&Value, Span)> {
        let (name, rest) = path.split_first()?;
        let placed = self.layout.iter().find(|p| p.name == *name)?;
        let value = self.view_read.get(*name).or_else(|| self.view.get(name))?;
        match rest {
            [] => Some((value, placed.span?)),
            [member] => {
                let members = placed.members.as_ref()?;
                let (_, span) = members.iter().find(|(k, _)| k == member)?;
                Some((value.get(member)?, *span))
            }
            _ => None,
        }
    }

    /// The view to edit as a whole: every member kept as read first.
    pub fn view_mut(&mut self) -> &mut Value {
        if let Value::Object(view) = &self.view {
            for (name, value) in view {
                if !self.view_read.contains_key(name) {
                    self.view_read.insert(name.clone(), value.clone());
                }
            }
        }
        &mut self.view
    }

    /// The member `name` of the view to edit, kept as read first: only
    /// what a rule edits is copied.
    pub fn member_mut(&mut self, name: &str) -> Option<&mut Value> {
        let value = self.view.get_mut(name)?;
        if !self.view_read.contains_key(name) {
            self.view_read.insert(name.to_owned(), value.clone());
        }
        Some(value)
    }

    /// One of the annotations the view holds
    /// ([`slices::POD_ANNOTATIONS`]), when it is a string.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.view.get("annotations")?.get(key)?.as_str()
    }

    pub(crate) fn mount_member(&self) -> &Mounts {
        &self.mounts
    }

    pub(crate) fn layout(&self) -> &[Placed] {
        &self.layout
    }

    /// The mount list; absent or `null` is empty.
    pub fn mounts(&self) -> Result<MountList<'_>, Refusal> {
        match &self.mounts {
            Mounts::Absent | Mounts::Other(Value::Null) => Ok(MountList {
                src: &self.src,
                read: &[],
                list: None,
                clean_dests: &self.clean_dests,
            }),
            Mounts::Other(other) => Err(Refusal::malformed("mounts", "an array", other)),
            Mounts::List { read, list, .. } => Ok(MountList {
                src: &self.src,
                read,
                list: list.as_deref(),
                clean_dests: &self.clean_dests,
            }),
        }
    }

    /// The mount list, to move, add or remove mounts. A rule edits only a
    /// list it has read, so a spec with none is refused: an edit the rules
    /// decided on is never skipped.
    pub fn mounts_mut(&mut self) -> Result<&mut Vec<Mount>, Refusal> {
        match &mut self.mounts {
            Mounts::List { read, list, .. } => Ok(as_edited(read, list)),
            _ => Err(Refusal::new("spec", "mounts", "no mount list to edit")),
        }
    }

    /// Mount `i` as an object to edit (made a value if it was still as
    /// read). A rule edits only a mount it has read as an object, so
    /// anything else is refused: an edit the rules decided on is never
    /// skipped.
    pub fn mount_mut(&mut self, i: usize) -> Result<&mut Map<String, Value>, Refusal> {
        let missing = || Refusal::new("spec", format!("mounts[{i}]"), "no such mount to edit");
        let Mounts::List { read, list, .. } = &mut self.mounts else {
            return Err(missing());
        };
        let mount = as_edited(read, list).get_mut(i).ok_or_else(missing)?;
        if let Mount::Read(at) = *mount {
            let element = read.get(at as usize).ok_or_else(missing)?.element;
            *mount = Mount::Edited {
                from: Some(at),
                value: Box::new(parse(&self.src, element)?),
            };
        }
        match mount {
            Mount::Edited { value, .. } => match value.as_mut() {
                Value::Object(map) => Ok(map),
                other => Err(Refusal::malformed(
                    format!("mounts[{i}]"),
                    "an object",
                    other,
                )),
            },
            Mount::Read(_) => Err(missing()),
        }
    }
}

/// Specs are equal when the rules see the same: the views, and each mount
/// as a value.
impl PartialEq for Spec {
    fn eq(&self, other: &Spec) -> bool {
        if self.view != other.view {
            return false;
        }
        match (self.mounts(), other.mounts()) {
            (Ok(a), Ok(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.same_as(&y))
            }
            _ => self.mounts == other.mounts,
        }
    }
}

/// The list of mounts to edit: made, each as read, on the first edit.
fn as_edited<'l>(read: &[MountSpans], list: &'l mut Option<Vec<Mount>>) -> &'l mut Vec<Mount> {
    list.get_or_insert_with(|| (0..read.len() as u32).map(Mount::Read).collect())
}

fn record_of(document: Document) -> Record {
    match document {
        Document::Spec => slices::SPEC,
        Document::Process => slices::PROCESS_FILE,
    }
}

fn not_an_object() -> Refusal {
    Refusal::new(
        strict::RULE,
        "(top level)",
        "not a runtime spec: the top level is not an object",
    )
}

/// Where a member read whole is.
fn known(rec: &Rec) -> Result<Span, Refusal> {
    rec.span().ok_or_else(|| {
        Refusal::new(
            strict::RULE,
            "(document)",
            "a member read as valid was not found",
        )
    })
}

/// The value at `span` of a document the strict reader accepted.
fn parse(src: &str, span: Span) -> Result<Value, Refusal> {
    serde_json::from_str(&src[span.range()]).map_err(|e| {
        Refusal::new(
            strict::RULE,
            "(document)",
            format!("a member read as valid does not parse: {e}"),
        )
    })
}

/// The mount list as the rules read it.
#[derive(Clone, Copy)]
pub struct MountList<'a> {
    src: &'a str,
    read: &'a [MountSpans],
    list: Option<&'a [Mount]>,
    clean_dests: &'a OnceCell<Vec<u64>>,
}

impl<'a> MountList<'a> {
    pub fn len(&self) -> usize {
        self.list.map_or(self.read.len(), <[Mount]>::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> Option<MountRef<'a>> {
        let Some(list) = self.list else {
            return Some(MountRef::Read(self.src, self.read.get(i)?));
        };
        Some(match list.get(i)? {
            Mount::Read(at) => MountRef::Read(self.src, self.read.get(*at as usize)?),
            Mount::Edited { value, .. } => MountRef::Value(value),
        })
    }

    /// The cleaned destination of mount `i` ([`MountRef::destination`]).
    pub fn destination(&self, i: usize) -> Result<Cow<'a, str>, Refusal> {
        let read = match self.list {
            None => Some(i),
            Some(list) => match list.get(i) {
                Some(Mount::Read(j)) => Some(*j as usize),
                _ => None,
            },
        };
        if let Some(j) = read {
            let clean = self.clean_dests.get_or_init(|| self.clean_destinations());
            if clean.get(j / 64).is_some_and(|w| w & (1 << (j % 64)) != 0) {
                if let Some(s) = self.read[j].near(0) {
                    return Ok(Cow::Borrowed(
                        &self.src[s.start as usize + 1..s.end as usize - 1],
                    ));
                }
            }
        }
        match self.get(i) {
            Some(m) => m.destination(i),
            None => Err(Refusal::new(
                "spec",
                format!("mounts[{i}]"),
                "no such mount",
            )),
        }
    }

    /// Of each mount as read, one bit: is its destination a string written
    /// clean and with no escape, where its spans hold it ([`MountSpans::near`])?
    fn clean_destinations(&self) -> Vec<u64> {
        let mut bits = vec![0u64; self.read.len().div_ceil(64)];
        for (j, spans) in self.read.iter().enumerate() {
            let clean = spans.near(0).is_some_and(|s| {
                matches!(string(self.src, s), Some(Cow::Borrowed(d))
                    if matches!(fields::clean_dest(d), Cow::Borrowed(_)))
            });
            if clean {
                bits[j / 64] |= 1 << (j % 64);
            }
        }
        bits
    }

    /// Every mount, in order: the `i`-th is mount `i`. One that names no
    /// mount read (no code builds one) reads as `null`, which every rule
    /// refuses, rather than be skipped and shift the others' numbers.
    pub fn iter(&self) -> impl Iterator<Item = MountRef<'a>> + 'a {
        let me = *self;
        (0..me.len()).map(move |i| me.get(i).unwrap_or(MountRef::Value(&NO_MOUNT)))
    }
}

static NO_MOUNT: Value = Value::Null;

/// One mount, as read (its members read from the bytes) or as a value.
/// Each reader gives what the same reader of `spec` gives on the mount as
/// a value, refusals included (a mount of an unexpected shape is made a
/// value to say why).
#[derive(Clone, Copy)]
pub enum MountRef<'a> {
    Read(&'a str, &'a MountSpans),
    Value(&'a Value),
}

impl<'a> MountRef<'a> {
    /// The mount as a value.
    pub fn to_value(&self) -> Value {
        match self {
            MountRef::Read(src, spans) => parse(src, spans.element).unwrap_or(Value::Null),
            MountRef::Value(v) => (*v).clone(),
        }
    }

    /// The member `key` as a value, if present.
    pub fn get(&self, key: &str) -> Option<Cow<'a, Value>> {
        match self {
            // A member the spans do not record: from the mount as a value.
            MountRef::Read(..) if MountSpans::slot(key).is_none() => {
                self.to_value().get(key).cloned().map(Cow::Owned)
            }
            MountRef::Read(src, spans) => {
                let span = spans.member(src, key)?;
                Some(Cow::Owned(parse(src, span).ok()?))
            }
            MountRef::Value(v) => v.get(key).map(Cow::Borrowed),
        }
    }

    /// The destination, cleaned ([`fields::destination`]).
    pub fn destination(&self, index: usize) -> Result<Cow<'a, str>, Refusal> {
        if let MountRef::Read(src, spans) = self {
            if let Some(d) = spans.destination(src).and_then(|s| string(src, s)) {
                return Ok(match d {
                    Cow::Borrowed(d) => fields::clean_dest(d),
                    Cow::Owned(d) => Cow::Owned(fields::clean_dest(&d).into_owned()),
                });
            }
        }
        self.slow(|v| fields::destination(index, v).map(|d| Cow::Owned(d.into_owned())))
    }

    /// An optional string member (`type`, `source`) ([`fields::mount_str`]).
    pub fn str_member(&self, index: usize, key: &str) -> Result<Option<Cow<'a, str>>, Refusal> {
        if let (MountRef::Read(src, spans), Some(_)) = (self, MountSpans::slot(key)) {
            match spans.member(src, key) {
                None => {
                    if src.as_bytes()[spans.element.start as usize] == b'{' {
                        return Ok(None);
                    }
                }
                Some(s) if src.as_bytes()[s.start as usize] == b'n' => return Ok(None),
                Some(s) => {
                    if let Some(text) = string(src, s) {
                        return Ok(Some(text));
                    }
                }
            }
        }
        self.slow(|v| Ok(fields::mount_str(index, v, key)?.map(|s| Cow::Owned(s.to_owned()))))
    }

    /// The options, all strings ([`fields::mount_options`]).
    pub fn options(&self, index: usize) -> Result<Vec<Cow<'a, str>>, Refusal> {
        if let MountRef::Read(src, spans) = self {
            if let Some(list) = read_options(src, spans) {
                return Ok(list);
            }
        }
        self.slow(|v| {
            Ok(fields::mount_options(index, v)?
                .into_iter()
                .map(|s| Cow::Owned(s.to_owned()))
                .collect())
        })
    }

    /// Does this mount bind a path ([`fields::is_bind`])?
    pub fn is_bind(&self, index: usize) -> Result<bool, Refusal> {
        let kind = self.str_member(index, "type")?;
        if matches!(kind.as_deref(), None | Some("" | "bind" | "rbind" | "none")) {
            return Ok(true);
        }
        let bind = |o: &str| o == "bind" || o == "rbind";
        // Most mounts are checked here: their options are read in place.
        if let MountRef::Read(src, spans) = self {
            let bytes = src.as_bytes();
            match spans.options(src).map(|s| (s, bytes[s.start as usize])) {
                None if bytes[spans.element.start as usize] == b'{' => return Ok(false),
                Some((_, b'n')) => return Ok(false),
                Some((s, b'[')) => {
                    let mut found = Some(false);
                    for (a, b) in slices::elements(src, s.start as usize).0 {
                        match string(src, Span::new(a, b)) {
                            Some(o) if bind(&o) => found = found.map(|_| true),
                            Some(_) => {}
                            None => found = None,
                        }
                    }
                    if let Some(found) = found {
                        return Ok(found);
                    }
                }
                _ => {}
            }
        }
        Ok(self.options(index)?.iter().any(|o| bind(o)))
    }

    /// Do the two mounts read as the same value?
    fn same_as(&self, other: &MountRef<'_>) -> bool {
        if let (MountRef::Read(a, x), MountRef::Read(b, y)) = (self, other) {
            if x.element.bytes(a.as_bytes()) == y.element.bytes(b.as_bytes()) {
                return true;
            }
        }
        self.to_value() == other.to_value()
    }

    /// `f` on the mount as a value, its borrowed results made owned.
    fn slow<T>(&self, f: impl FnOnce(&Value) -> Result<T, Refusal>) -> Result<T, Refusal> {
        match self {
            MountRef::Value(v) => f(v),
            MountRef::Read(..) => f(&self.to_value()),
        }
    }
}

/// The text of the string at `span`, if it is a string: borrowed from the
/// bytes unless it has escapes.
fn string(src: &str, span: Span) -> Option<Cow<'_, str>> {
    slices::string(src.get(span.range())?)
}

/// A mount's options when they are absent, `null`, or an array of strings;
/// `None` for anything else (the slow reader says why).
fn read_options<'a>(src: &'a str, spans: &MountSpans) -> Option<Vec<Cow<'a, str>>> {
    let bytes = src.as_bytes();
    if bytes[spans.element.start as usize] != b'{' {
        return None;
    }
    let Some(span) = spans.options(src) else {
        return Some(Vec::new());
    };
    match bytes[span.start as usize] {
        b'n' => Some(Vec::new()),
        b'[' => slices::elements(src, span.start as usize)
            .0
            .into_iter()
            .map(|(s, e)| string(src, Span::new(s, e)))
            .collect(),
        _ => None,
    }
}

/// `doc` read as a spec, for tests.
#[cfg(test)]
pub(crate) fn doc(doc: Value) -> Spec {
    Spec::from_value(&doc).expect("a test spec reads")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_mount_that_names_nothing_read_is_refused_in_its_place() {
        let mut spec = doc(json!({"mounts": [{"destination": "/a"}]}));
        if let Mounts::List { list, .. } = &mut spec.mounts {
            *list = Some(vec![Mount::Read(7), Mount::Read(0)]);
        }
        let mounts = spec.mounts().unwrap();
        let all: Vec<MountRef<'_>> = mounts.iter().collect();
        assert_eq!(all.len(), 2);
        assert_eq!(
            all[0].destination(0).unwrap_err().to_string(),
            "spec: mounts[0]: expected an object, found null"
        );
        assert_eq!(all[1].destination(1).unwrap(), "/a");
        assert!(mounts.destination(0).is_err());
    }

    #[test]
    fn a_spec_without_a_mount_list_has_none_to_edit() {
        for v in [json!({}), json!({"mounts": null}), json!({"mounts": 7})] {
            let mut spec = doc(v);
            assert_eq!(spec.mounts_mut().unwrap_err().field, "mounts");
        }
        assert!(doc(json!({"mounts": []})).mounts_mut().is_ok());
    }
}
