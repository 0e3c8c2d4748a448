//! What the daemons' configurations share, as pure code over `toml_edit`
//! documents (each daemon's own layout is in its module). Nothing here reads a file, looks in PATH or asks the clock:
//! what the host holds (which files exist, where a name resolves in PATH)
//! comes in as arguments, gathered by `install`, the thin shell around it.
//!
//! The interface every daemon shares is [`Layout`]: where a document keeps
//! its handlers, the key naming a handler's binary, and the key naming the
//! default handler; [`handler`], [`add`], [`remove`], [`wrapper_handlers`]
//! and [`set_default`] / [`restore_default`] work on any of them.
//!
//! Ownership markers: what install writes carries a fingerprint of its
//! keys and values ([`fingerprint`], the root crate's [`userns_hostnet::hash::fnv1a`]), so that uninstall removes
//! only what is still install's.

use toml_edit::{DocumentMut, Item, Table, Value};

/// A daemon config that the pure layer cannot edit.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditError {
    #[error("{key} is not a table")]
    NotATable { key: String },
    #[error("{key} is not a value")]
    NotAValue { key: String },
    #[error("{key}: cannot read what install replaced ({was}): {message}")]
    Replaced {
        key: String,
        was: String,
        message: String,
    },
    #[error("{key}: cannot read what install replaced")]
    ReplacedNotAValue { key: String },
}

/// Where one daemon's config document keeps its runtime handlers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The table of handlers, one sub-table (or podman: one list) per name.
    pub runtimes: Vec<&'static str>,
    /// Within a handler, the key that names its runtime binary.
    pub binary: &'static [&'static str],
    /// The table and key naming the default handler (podman has none that
    /// install sets).
    pub default: Option<(Vec<&'static str>, &'static str)>,
}

/// The item at a path of keys.
pub fn dig<'a>(item: &'a Item, path: &[&str]) -> Option<&'a Item> {
    path.iter()
        .try_fold(item, |it, key| it.as_table_like()?.get(key))
}

/// The table at `path` below `root`, created (implicit, so that it prints
/// no header of its own and vanishes again when emptied) where missing.
pub fn table_at<'a>(root: &'a mut Table, path: &[&str]) -> Result<&'a mut Table, EditError> {
    let mut t = root;
    for key in path {
        if !t.contains_key(key) {
            let mut new = Table::new();
            new.set_implicit(true);
            t.insert(key, Item::Table(new));
        }
        t = t
            .get_mut(key)
            .and_then(Item::as_table_mut)
            .ok_or_else(|| EditError::NotATable {
                key: (*key).to_owned(),
            })?;
    }
    Ok(t)
}

/// The table at `path`, when every part of it is a table.
pub fn dig_table_mut<'a>(doc: &'a mut DocumentMut, path: &[&str]) -> Option<&'a mut Table> {
    path.iter()
        .try_fold(doc.as_table_mut(), |t, key| t.get_mut(key)?.as_table_mut())
}

/// Is this runtime binary the wrapper (under any of its names)?
pub fn is_wrapper(binary: &str) -> bool {
    std::path::Path::new(binary)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(userns_hostnet::WRAPPER_NAME))
}

/// The handler `name` of `doc`.
pub fn handler<'a>(layout: &Layout, doc: &'a DocumentMut, name: &str) -> Option<&'a Item> {
    dig(doc.as_item(), &layout.runtimes).and_then(|all| dig(all, &[name]))
}

/// The binary a handler names.
pub fn binary_of<'a>(layout: &Layout, handler: &'a Item) -> Option<&'a str> {
    dig(handler, layout.binary).and_then(Item::as_str)
}

/// The names and binaries of the handlers of `doc` that run the wrapper.
pub fn wrapper_handlers(layout: &Layout, doc: &DocumentMut) -> Vec<(String, String)> {
    dig(doc.as_item(), &layout.runtimes)
        .and_then(Item::as_table_like)
        .map(|t| {
            t.iter()
                .filter_map(|(name, h)| {
                    let b = binary_of(layout, h)?;
                    is_wrapper(b).then(|| (name.to_owned(), b.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Add handler `name` (replacing one of that name).
pub fn add(layout: &Layout, doc: &mut DocumentMut, name: &str, h: Table) -> Result<(), EditError> {
    table_at(doc.as_table_mut(), &layout.runtimes)?.insert(name, Item::Table(h));
    Ok(())
}

/// Remove handler `name`; whether it was there.
pub fn remove(layout: &Layout, doc: &mut DocumentMut, name: &str) -> bool {
    dig_table_mut(doc, &layout.runtimes).is_some_and(|t| t.remove(name).is_some())
}

/// Is this document, its `version` aside, empty of settings?
pub fn holds_nothing(doc: &DocumentMut) -> bool {
    fn empty(t: &dyn toml_edit::TableLike) -> bool {
        t.iter().all(|(_, v)| v.as_table_like().is_some_and(empty))
    }
    doc.iter()
        .all(|(k, v)| k == "version" || v.as_table_like().is_some_and(empty))
}

/// The start of the comment line above a handler install wrote.
pub const HANDLER_MARK: &str = "# Added by `userns-hostnet install` (fingerprint ";

/// The fingerprint of an item's keys and values, whatever their layout,
/// order or comments.
pub fn fingerprint(item: &Item) -> u64 {
    let mut d = DocumentMut::new();
    d.insert("h", item.clone());
    let canonical = ::toml::from_str::<::toml::Value>(&d.to_string())
        .ok()
        .and_then(|v| serde_json::to_string(&v).ok())
        .unwrap_or_default();
    userns_hostnet::hash::fnv1a(canonical.as_bytes())
}

/// The marker line for an item of fingerprint `fp`, naming the command
/// that removes it.
pub fn marker_line(fp: u64, uninstall: &str) -> String {
    format!("{HANDLER_MARK}{fp:016x}): `{uninstall}` removes it while unchanged\n")
}

/// `handler` with the install marker above its header.
pub fn marked(mut handler: Table) -> Table {
    let fp = fingerprint(&Item::Table(handler.clone()));
    handler
        .decor_mut()
        .set_prefix(format!("\n{}", marker_line(fp, "userns-hostnet uninstall")));
    handler
}

/// `handler`, derived from `source` (the handler beside which it goes),
/// laid out like it: the same indentation of headers and keys, and the
/// strings install writes quoted as the source quotes its own (`'...'` in
/// containerd 2.x's defaults). Values and comments are not touched: the
/// fingerprint, and what uninstall removes, stay the same.
pub fn styled_like(mut handler: Table, source: &Item) -> Table {
    if let Some(src) = source.as_table() {
        let literal = quotes_literal(src);
        style_table(&mut handler, src, literal);
    }
    handler
}

/// The whitespace a prefix ends with on its last line (the indentation of
/// what follows it).
fn indent_of(prefix: Option<&str>) -> &str {
    let last = prefix.map_or("", |p| p.rsplit('\n').next().unwrap_or(""));
    if last.chars().all(|c| c == ' ' || c == '\t') {
        last
    } else {
        ""
    }
}

/// Whether `t`'s strings are written as literal strings (`'...'`).
fn quotes_literal(t: &Table) -> bool {
    t.iter().any(|(_, v)| match v {
        Item::Value(Value::String(s)) => s
            .as_repr()
            .and_then(|r| r.as_raw().as_str())
            .is_some_and(|r| r.starts_with('\'')),
        Item::Table(sub) => quotes_literal(sub),
        _ => false,
    })
}

fn style_table(t: &mut Table, src: &Table, literal: bool) {
    let head = indent_of(src.decor().prefix().and_then(|p| p.as_str()));
    if !head.is_empty() {
        let p = t
            .decor()
            .prefix()
            .and_then(|p| p.as_str())
            .unwrap_or("\n")
            .to_owned();
        t.decor_mut().set_prefix(format!("{p}{head}"));
    }
    let key_indent = src
        .iter()
        .find(|(_, v)| v.is_value())
        .and_then(|(k, _)| src.key(k))
        .map(|k| indent_of(k.leaf_decor().prefix().and_then(|p| p.as_str())).to_owned())
        .unwrap_or_default();
    let keys: Vec<String> = t.iter().map(|(k, _)| k.to_owned()).collect();
    for k in keys {
        match (t.get_mut(&k), src.get(&k)) {
            (Some(Item::Value(v)), _) => {
                if literal {
                    literalize(v);
                }
                if let Some(mut key) = t.key_mut(&k) {
                    key.leaf_decor_mut().set_prefix(key_indent.clone());
                }
            }
            (Some(Item::Table(sub)), Some(Item::Table(src_sub))) => {
                style_table(sub, src_sub, literal)
            }
            _ => {}
        }
    }
}

/// A basic string written anew as a literal one, when it can be.
fn literalize(v: &mut Value) {
    let Value::String(s) = v else { return };
    let raw = s.as_repr().and_then(|r| r.as_raw().as_str());
    let text = s.value();
    if raw.is_some_and(|r| r.starts_with('\'')) || text.contains(['\'', '\n', '\r']) {
        return;
    }
    if let Ok(mut new) = format!("'{text}'").parse::<Value>() {
        new.decor_mut().set_prefix(" ");
        *v = new;
    }
}

/// Who a thing install may have written belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Marked by install and unchanged since.
    Install,
    /// Marked by install, changed since.
    Changed,
    /// No marker: the operator's.
    Operator,
}

/// Who a handler table belongs to.
pub fn owner(handler: &Item) -> Owner {
    let prefix = handler
        .as_table()
        .and_then(|t| t.decor().prefix())
        .and_then(|p| p.as_str());
    owner_by_marker(prefix.and_then(marker_in), || fingerprint(handler))
}

/// The fingerprint in the install marker somewhere in `comment`.
pub fn marker_in(comment: &str) -> Option<u64> {
    comment
        .find(HANDLER_MARK)
        .and_then(|at| marker_hex(&comment[at + HANDLER_MARK.len()..]))
}

/// The 16 hex digits of a fingerprint at the start of `rest`.
pub fn marker_hex(rest: &str) -> Option<u64> {
    rest.get(..16)
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
}

/// Who wrote a thing marked with fingerprint `marked` (`None`: no marker)
/// whose fingerprint is now `now`.
pub fn owner_by_marker(marked: Option<u64>, now: impl FnOnce() -> u64) -> Owner {
    match marked {
        None => Owner::Operator,
        Some(fp) if fp == now() => Owner::Install,
        Some(_) => Owner::Changed,
    }
}

/// The comment after a default handler install set: what was there, to
/// put back on uninstall (the value's own text and comment, or UNSET).
const DEFAULT_MARK: &str =
    " # set by `userns-hostnet install --set-as-default`; uninstall puts back: ";
const UNSET: &str = "(unset)";

/// The text between a value's `=` and the value itself.
fn value_prefix(v: &Value) -> &str {
    v.decor().prefix().and_then(|s| s.as_str()).unwrap_or(" ")
}

/// The text after a value on its line: spaces and a comment.
fn value_suffix(v: &Value) -> &str {
    v.decor().suffix().and_then(|s| s.as_str()).unwrap_or("")
}

/// `--set-as-default`: the layout's default key names handler `name`,
/// with what it was kept in the marker comment; whether `doc` changed.
pub fn set_default(layout: &Layout, doc: &mut DocumentMut, name: &str) -> Result<bool, EditError> {
    let Some((table, key)) = &layout.default else {
        return Ok(false);
    };
    let t = table_at(doc.as_table_mut(), table)?;
    let (was, prefix) = match t.get(key) {
        Some(Item::Value(v)) if v.as_str() == Some(name) => return Ok(false),
        Some(Item::Value(v)) => {
            let mut bare = v.clone();
            bare.decor_mut().set_prefix("");
            bare.decor_mut().set_suffix("");
            (
                format!("{bare}{}", value_suffix(v)),
                value_prefix(v).to_owned(),
            )
        }
        Some(_) => {
            return Err(EditError::NotAValue {
                key: (*key).to_owned(),
            })
        }
        None => (UNSET.to_owned(), " ".to_owned()),
    };
    let mut v = Value::from(name);
    v.decor_mut().set_prefix(prefix);
    v.decor_mut().set_suffix(format!("{DEFAULT_MARK}{was}"));
    match t.get_mut(key) {
        Some(item) => *item = Item::Value(v),
        None => {
            t.insert(key, Item::Value(v));
        }
    }
    Ok(true)
}

/// What [`restore_default`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    /// The default did not name the handler: nothing to do.
    NotDefault,
    /// Put back what install replaced.
    Restored,
    /// It names the handler, set by hand: left.
    SetByHand,
}

/// uninstall: put back the default install set, when the layout's key
/// still names handler `name` with install's marker.
pub fn restore_default(
    layout: &Layout,
    doc: &mut DocumentMut,
    name: &str,
) -> Result<Restored, EditError> {
    let Some((table, key)) = &layout.default else {
        return Ok(Restored::NotDefault);
    };
    let Some(t) = dig_table_mut(doc, table) else {
        return Ok(Restored::NotDefault);
    };
    let Some(v) = t.get(key).and_then(Item::as_value) else {
        return Ok(Restored::NotDefault);
    };
    if v.as_str() != Some(name) {
        return Ok(Restored::NotDefault);
    }
    let Some(was) = value_suffix(v)
        .strip_prefix(DEFAULT_MARK)
        .map(str::to_owned)
    else {
        return Ok(Restored::SetByHand);
    };
    let prefix = value_prefix(v).to_owned();
    if was == UNSET {
        t.remove(key);
        // A table install made for the key prints no header once empty.
        if t.is_empty() {
            t.set_implicit(true);
        }
        return Ok(Restored::Restored);
    }
    let parsed: DocumentMut =
        format!("x ={prefix}{was}\n")
            .parse()
            .map_err(|e: toml_edit::TomlError| EditError::Replaced {
                key: (*key).to_owned(),
                was: was.clone(),
                message: e.to_string().trim().to_owned(),
            })?;
    let old = parsed
        .get("x")
        .and_then(Item::as_value)
        .cloned()
        .ok_or_else(|| EditError::ReplacedNotAValue {
            key: (*key).to_owned(),
        })?;
    if let Some(item) = t.get_mut(key) {
        *item = Item::Value(old);
    }
    Ok(Restored::Restored)
}

/// A handler derived from another: the new table, and what became of the
/// source's settings (dotted keys), for the notes and the docs.
#[derive(Debug, Clone, Default)]
pub struct Derived {
    pub table: Table,
    /// Settings copied as they were.
    pub carried: Vec<String>,
    /// Settings given another value, with why.
    pub changed: Vec<String>,
    /// Settings left out because they cannot apply through the wrapper,
    /// with why: install reports each one.
    pub dropped: Vec<String>,
}

/// The dotted keys of every value under `item`.
pub fn leaf_keys(item: &Item, prefix: &str, out: &mut Vec<String>) {
    match item.as_table_like() {
        Some(t) => {
            for (k, v) in t.iter() {
                let key = if prefix.is_empty() {
                    k.to_owned()
                } else {
                    format!("{prefix}.{k}")
                };
                leaf_keys(v, &key, out);
            }
        }
        None => out.push(prefix.to_owned()),
    }
}

/// A copy of a handler table with its comments and layout dropped (a
/// table of sub-tables stays a table: `options` keeps its own header).
pub fn bare_copy(source: &dyn toml_edit::TableLike) -> Table {
    let mut out = Table::new();
    for (k, v) in source.iter() {
        let item = match v {
            Item::Value(Value::InlineTable(t)) => {
                Item::Table(bare_copy(t as &dyn toml_edit::TableLike))
            }
            Item::Value(v) => {
                let mut v = v.clone();
                v.decor_mut().clear();
                Item::Value(v)
            }
            Item::Table(t) => Item::Table(bare_copy(t)),
            other => other.clone(),
        };
        out.insert(k, item);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handler(text: &str) -> Item {
        let doc: DocumentMut = text.parse().unwrap();
        doc["h"].clone()
    }

    #[test]
    fn the_fingerprint_ignores_layout_and_sees_values() {
        let a = handler("[h]\nruntime_type = \"x\"\n[h.options]\nA = 1\nB = [\"p\", \"q\"]\n");
        let b = handler(
            "# c\n[h]\n  runtime_type   =   \"x\"  # why\n\n[h.options]\n  B = [ \"p\",\n    \"q\" ]\n  A = 1\n",
        );
        let c = handler("[h]\nruntime_type = \"x\"\n[h.options]\nA = 2\nB = [\"p\", \"q\"]\n");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }

    #[test]
    fn owner_reads_the_marker() {
        let mut doc = DocumentMut::new();
        let mut t = Table::new();
        t.insert(
            "runtime_path",
            toml_edit::value("/usr/bin/userns-hostnet-runtime"),
        );
        doc.insert("h", Item::Table(marked(t)));
        let text = doc.to_string();
        assert!(text.contains(HANDLER_MARK), "{text}");
        assert_eq!(owner(&handler(&text)), Owner::Install);
        let edited = text.replace("/usr/bin/", "/usr/local/bin/");
        assert_eq!(owner(&handler(&edited)), Owner::Changed);
        let unmarked: String = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(owner(&handler(&unmarked)), Owner::Operator);
        let garbled = text.replace("(fingerprint ", "(fingerprint zz");
        assert_eq!(owner(&handler(&garbled)), Owner::Operator);
        assert_eq!(owner(&handler("h = { a = 1 }\n")), Owner::Operator);
    }

    #[test]
    fn an_emptied_document_holds_nothing() {
        let mut doc: DocumentMut = "version = 2\n[plugins.x.runtimes.h]\na = 1\n"
            .parse()
            .unwrap();
        assert!(!holds_nothing(&doc));
        let l = Layout {
            runtimes: vec!["plugins", "x", "runtimes"],
            binary: &["a"],
            default: None,
        };
        assert!(remove(&l, &mut doc, "h"));
        assert!(holds_nothing(&doc));
        let doc: DocumentMut = "version = 2\n[plugins.x]\nsandbox_image = \"p\"\n"
            .parse()
            .unwrap();
        assert!(!holds_nothing(&doc));
    }

    #[test]
    fn a_default_set_is_put_back_byte_for_byte() {
        let l = Layout {
            runtimes: vec!["r"],
            binary: &["b"],
            default: Some((vec!["c"], "default_runtime")),
        };
        for text in [
            "[c]\ndefault_runtime = \"crun\" # the site's\n",
            "[c]\nx = 1\n",
            "x = 1\n",
        ] {
            let mut doc: DocumentMut = text.parse().unwrap();
            assert!(set_default(&l, &mut doc, "uhn").unwrap());
            assert!(!set_default(&l, &mut doc, "uhn").unwrap());
            let set = doc.to_string();
            assert!(set.contains("default_runtime = \"uhn\""), "{set}");
            let mut doc: DocumentMut = set.parse().unwrap();
            assert_eq!(
                restore_default(&l, &mut doc, "uhn").unwrap(),
                Restored::Restored
            );
            assert_eq!(doc.to_string(), text);
        }
        let mut doc: DocumentMut = "[c]\ndefault_runtime = \"uhn\"\n".parse().unwrap();
        assert_eq!(
            restore_default(&l, &mut doc, "uhn").unwrap(),
            Restored::SetByHand
        );
    }

    #[test]
    fn wrapper_names() {
        assert!(is_wrapper("/usr/bin/userns-hostnet-runtime"));
        assert!(is_wrapper("userns-hostnet-runtime-crun"));
        assert!(!is_wrapper("/usr/sbin/runc"));
    }
}
