//! The `RawBody` this module had before it held the body's text once: each field as an
//! owned key and an owned value. Kept as the oracle its replacement is tested against.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{put, write_key, Patch};

/// A JSON object as top-level fields in the order sent, each value as its own bytes.
#[derive(Debug, Clone, Default)]
pub struct RawBody {
    fields: Vec<(String, Box<RawValue>)>,
}

/// Two bodies are equal when they have the same fields, in the same order, written alike.
impl PartialEq for RawBody {
    fn eq(&self, other: &Self) -> bool {
        self.fields.len() == other.fields.len()
            && (self.fields.iter().zip(&other.fields))
                .all(|((ka, va), (kb, vb))| ka == kb && va.get() == vb.get())
    }
}

impl RawBody {
    /// Read a JSON object: each field's value is kept as written (a key sent twice keeps
    /// its last value, at its first place, as a JSON parser does).
    ///
    /// # Errors
    /// Not JSON, or not an object.
    pub fn parse(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        crate::json_text::from_bytes(bytes)
    }

    /// The value of `key`, as written.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        (self.fields.iter())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// Whether the body has `key`.
    #[must_use]
    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// `key`'s value read as a `T` (parsed now, on its own): `None` when absent or not a
    /// `T`. Borrows what it can from the body (`&str` without escapes, `&RawValue`).
    #[must_use]
    pub fn get_as<'a, T: Deserialize<'a>>(&'a self, key: &str) -> Option<T> {
        serde_json::from_str(self.get(key)?.get()).ok()
    }

    /// `key`'s value if it is a string.
    #[must_use]
    pub fn str(&self, key: &str) -> Option<Cow<'_, str>> {
        self.get_as::<Cow<'_, str>>(key)
    }

    /// Set `key` to `raw`: in place when the body has it, else last.
    pub fn set(&mut self, key: &str, raw: Box<RawValue>) {
        put(&mut self.fields, key, raw);
    }

    /// Set `key` to `value`, serialized.
    ///
    /// # Errors
    /// `value` cannot be written as JSON (a map with non-string keys, ...).
    pub fn set_value<T: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        self.set(key, serde_json::value::to_raw_value(value)?);
        Ok(())
    }

    /// Take `key` out.
    pub fn remove(&mut self, key: &str) -> Option<Box<RawValue>> {
        let at = self.fields.iter().position(|(k, _)| k == key)?;
        Some(self.fields.remove(at).1)
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(k, _)| k.as_str())
    }

    /// The fields, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v.as_ref()))
    }

    /// How many fields.
    #[must_use]
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether it has no field.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The bytes [`RawBody::to_bytes`] writes, counted without writing them.
    #[must_use]
    pub fn wire_len(&self) -> usize {
        self.wire_len_with(&Patch::default())
    }

    /// The bytes [`RawBody::to_bytes_with`] writes for `patch`.
    #[must_use]
    pub fn wire_len_with(&self, patch: &Patch) -> usize {
        let mut n = 2;
        let mut first = true;
        self.each_with(patch, |key, raw| {
            n += usize::from(!first) + key_len(key) + 1 + raw.get().len();
            first = false;
        });
        n
    }

    /// The body as JSON bytes: each field as it was written.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_bytes_with(&Patch::default())
    }

    /// The body with `patch` applied, as JSON bytes: a field it sets in place of the
    /// body's (new ones last), one it removes left out, every other one as written.
    #[must_use]
    pub fn to_bytes_with(&self, patch: &Patch) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.wire_len_with(patch));
        out.push(b'{');
        let mut first = true;
        self.each_with(patch, |key, raw| {
            if !first {
                out.push(b',');
            }
            first = false;
            write_key(&mut out, key);
            out.push(b':');
            out.extend_from_slice(raw.get().as_bytes());
        });
        out.push(b'}');
        out
    }

    /// The whole body as a `Value` (parses every field: for tests and small bodies).
    #[must_use]
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.to_bytes()).unwrap_or(Value::Null)
    }

    /// Calls `f` with each field of the body as `patch` leaves it, in order.
    fn each_with(&self, patch: &Patch, mut f: impl FnMut(&str, &RawValue)) {
        for (key, raw) in &self.fields {
            if patch.removes(key) {
                continue;
            }
            match patch.value(key) {
                Some(set) => f(key, set),
                None => f(key, raw),
            }
        }
        for (key, raw) in &patch.set {
            if !self.contains(key) {
                f(key, raw);
            }
        }
    }
}

fn key_len(key: &str) -> usize {
    let mut out = Vec::new();
    if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        return key.len() + 2;
    }
    write_key(&mut out, key);
    out.len()
}

impl<'de> Deserialize<'de> for RawBody {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = RawBody;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawBody, A::Error> {
                let mut body = RawBody::default();
                while let Some(key) = map.next_key::<String>()? {
                    let value: Box<RawValue> = map.next_value()?;
                    body.set(&key, value);
                }
                Ok(body)
            }
        }
        d.deserialize_map(Fields)
    }
}
