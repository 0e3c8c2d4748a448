//! What the engine says: the changes it made and the refusals it gives, as
//! data, so the wrapper's error line, the decision log and `explain` all
//! print the same words.

use serde::Serialize;
use serde_json::Value;
use std::fmt;

/// One deliberate edit of the spec, with the reason an operator reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The rule that made it (`sysfs`, `mount-order`, `cgroup-view`, `capabilities`, ...).
    pub rule: &'static str,
    /// JSON path of the edited field, e.g. `mounts[3]` or `process.capabilities.bounding`.
    pub field: String,
    /// One sentence: what changed and why.
    pub summary: String,
    /// The field before the edit (`null` when it was added).
    pub before: Value,
    /// The field after the edit (`null` when it was removed).
    pub after: Value,
}

/// Why a container must not start. Rendered on one line:
/// `<rule>: <field>: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{rule}: {field}: {message}")]
pub struct Refusal {
    pub rule: &'static str,
    pub field: String,
    pub message: String,
}

impl Refusal {
    /// Control characters in `field` and `message` (which can quote the
    /// spec: a namespace type, a key) are escaped: a refusal is one line.
    pub fn new(rule: &'static str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Refusal {
            rule,
            field: one_line(field.into()),
            message: one_line(message.into()),
        }
    }

    /// A field the engine reads has the wrong shape. The runtime would reject
    /// it too, but later and in its own words; this names the field.
    pub fn malformed(field: impl Into<String>, expected: &str, found: &Value) -> Self {
        Refusal::new(
            "spec",
            field,
            format!("expected {expected}, found {}", kind_of(found)),
        )
    }
}

/// `s` with its control characters escaped as Rust writes them (`\n`,
/// `\u{1b}`).
fn one_line(s: String) -> String {
    if !s.chars().any(char::is_control) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// A short description of a JSON value's kind, for error messages.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A list of names for a message: `a, b, c`.
pub struct Names<'a, T>(pub &'a [T]);

impl<T: fmt::Display> fmt::Display for Names<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_one_line_whatever_the_spec_holds() {
        let r = Refusal::new(
            "spec",
            "linux.sysctl[\"a\rb\"]",
            "unknown variant `\n\u{1b}[2J`",
        );
        assert_eq!(
            r.to_string(),
            "spec: linux.sysctl[\"a\\rb\"]: unknown variant `\\n\\u{1b}[2J`"
        );
        let plain = Refusal::new("spec", "mounts[0]", "tabs\tand é stay");
        assert_eq!(plain.message, "tabs\\tand é stay");
    }
}
