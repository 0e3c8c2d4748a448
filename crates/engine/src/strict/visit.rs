//! The one pass over a value: serde_json's tokens, as its parser hands
//! them to a [`Node`], checked against the shape the runtime-spec schema
//! gives that place, the value built (or not) and the members the rules
//! read recorded where they are.

use super::*;

impl<'de> DeserializeSeed<'de> for Node<'_, '_, '_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// serde_json hands a number it does not keep as an integer (with
/// `arbitrary_precision`) as a map with this one key.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

impl<'de> Visitor<'de> for Node<'_, '_, '_> {
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
            depth,
            recording,
        } = self;
        let depth = deeper::<A::Error>(depth)?;
        let element = match shape {
            Shape::Array(s) => *s,
            _ => Shape::Any,
        };
        match recording {
            Recording::Mounts(list) => return mounts(seq, state, at, element, depth, list),
            Recording::Elements(mut list, before) => {
                let mut index = 0;
                while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                    let here = Path::Index(at, index);
                    if let Some(list) = list.as_deref_mut() {
                        list.push(state.span(raw));
                    }
                    if !before(index, raw.get()) {
                        within(raw, Node::checking(state, &here, element, depth))?;
                    }
                    index += 1;
                }
                return Ok(Value::Null);
            }
            _ => {}
        }
        let keep = build;
        let mut out = Vec::with_capacity(if keep {
            seq.size_hint().unwrap_or(0)
        } else {
            0
        });
        let mut index = 0;
        if !build && state.skim && matches!(element, Shape::Any) {
            while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                let here = Path::Index(at, index);
                skimmed(raw, Node::checking(state, &here, element, depth))?;
                index += 1;
            }
            return Ok(Value::Null);
        }
        loop {
            let here = Path::Index(at, index);
            let node = Node {
                state: &mut *state,
                at: &here,
                shape: element,
                build,
                depth,
                recording: Recording::None,
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
            depth,
            mut recording,
        } = self;
        let mut out = Map::new();
        // The keys, when not every member is built into `out`.
        let mut seen = Seen::new(state.compact_keys);
        let mut first = true;
        // serde_json hands a number as a map too: the object's level is
        // counted once it is known not to be one.
        let mut level = depth;
        loop {
            let (key, escaped) = match map.next_key_seed(Key) {
                Ok(Some(k)) => k,
                // Not built, an object still reads as one (for the
                // message on a duplicate).
                Ok(None) if first => {
                    deeper::<A::Error>(depth)?;
                    return Ok(Value::Object(out));
                }
                Ok(None) if seen.repeats() => return Err(de::Error::custom("duplicate key")),
                Ok(None) => return Ok(Value::Object(out)),
                Err(e) => return Err(state.seen_error(|| at.to_string(), e)),
            };
            if first && key == NUMBER_TOKEN {
                // serde_json read the number already.
                if !build {
                    map.next_value::<de::IgnoredAny>()?;
                    return Ok(Value::Null);
                }
                let text: String = map.next_value()?;
                let n = text.parse::<Number>().map_err(de::Error::custom)?;
                return Ok(Value::Number(n));
            }
            if first {
                level = deeper::<A::Error>(depth)?;
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
            let recorded = match &mut recording {
                // An object read by members is read in this pass, not
                // taken whole and read again: its members are found as it
                // is read, its own span only if the writer needs it.
                Recording::Members(names, members) => match names.iter().find(|(n, _)| *n == key) {
                    Some(&(name, Record::Members(inner))) => {
                        let mut found = Vec::new();
                        let node = Node {
                            state: &mut *state,
                            at: &here,
                            shape: child,
                            build: false,
                            depth: level,
                            recording: Recording::Members(inner, &mut found),
                        };
                        // Not an object (which the rules refuse): found
                        // again by the caller, whole.
                        if !map.next_value_seed(node)?.is_object() {
                            return Err(de::Error::custom("not an object"));
                        }
                        members.push((
                            name,
                            Rec::Object {
                                span: None,
                                members: found,
                            },
                        ));
                        Some(true)
                    }
                    Some(&(name, record)) => {
                        let raw: &'de RawValue = map.next_value()?;
                        let node = Node::checking(state, &here, child, level);
                        members.push((name, record_value(raw, node, record)?));
                        Some(raw.get().starts_with('{'))
                    }
                    None => None,
                },
                Recording::Mount(spans) => match MountSpans::slot(&key) {
                    Some(slot) => {
                        let raw: &'de RawValue = map.next_value()?;
                        spans.set(slot, state.span(raw));
                        within(raw, Node::checking(state, &here, child, level))?;
                        Some(raw.get().starts_with('{'))
                    }
                    None => None,
                },
                _ => None,
            };
            let value = match recorded {
                Some(true) => Value::Object(Map::new()),
                Some(false) => Value::Null,
                None if !build && state.skim && matches!(child, Shape::Any) => {
                    let raw: &'de RawValue = map.next_value()?;
                    skimmed(raw, Node::checking(state, &here, child, level))?
                }
                None => {
                    let node = Node {
                        state: &mut *state,
                        at: &here,
                        shape: child,
                        build,
                        depth: level,
                        recording: Recording::None,
                    };
                    match map.next_value_seed(node) {
                        Ok(v) => v,
                        Err(e) => return Err(state.seen_error(|| here.to_string(), e)),
                    }
                }
            };
            let first_was_object = match build {
                true => match out.entry(key.to_string()) {
                    Entry::Vacant(v) => {
                        v.insert(value);
                        continue;
                    }
                    Entry::Occupied(first) => first.get().is_object(),
                },
                false => match seen.insert(key.clone(), value.is_object()) {
                    None => continue,
                    Some(was) => was,
                },
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
