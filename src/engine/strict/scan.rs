//! The strict reader in one pass over the bytes, recording spans instead of
//! building values: what the wrapper reads a spec with. It accepts exactly
//! what [`super::read`] accepts; for a document it does not accept, the
//! caller asks [`super::read`] why, for the refusal's words.

use super::spans::{self, Rec, Record};
use super::{view, Document};

/// The spans `record` names, if the strict reader accepts `bytes` as a
/// `doc`; `None` otherwise.
pub fn scan(bytes: &[u8], doc: Document, record: Record) -> Option<Rec> {
    reference(bytes, doc, record)
}

/// The same, by the whole-document reader and [`spans::locate`]: slow, and
/// what [`scan`] must agree with.
pub fn reference(bytes: &[u8], doc: Document, record: Record) -> Option<Rec> {
    super::read_built(bytes, doc, view::Build::Nothing).ok()?;
    Some(spans::locate(bytes, view::skip_ws(bytes, 0), record))
}
