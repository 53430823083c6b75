//! A JSON object kept as the client wrote it: each top-level field's value as its own
//! bytes ([`RawValue`]), in the order sent, so that a body costs about its size in memory
//! (a `serde_json::Value` tree of tiny items costs many times that) and goes upstream byte
//! for byte, bar the few fields the gateway sets ([`Patch`]). The native body of a request
//! ([`crate::chat::Native`]) is one; a codec reads one field on demand ([`RawBody::get_as`])
//! and patches or splices by text ([`array_append`], [`array_prepend`]) without expanding
//! the rest.
//!
//! Does not validate what the client wrote beyond its being a JSON object: the dialect's
//! decoder has done that.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

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

/// Changes to a [`RawBody`] made when it is written, leaving the body itself as it is
/// (so that every attempt writes from the same shared body).
#[derive(Debug, Clone, Default)]
pub struct Patch {
    set: Vec<(String, Box<RawValue>)>,
    remove: Vec<String>,
}

/// Set `key` to `raw` in an ordered list of fields: in place when it is there, else last.
fn put(fields: &mut Vec<(String, Box<RawValue>)>, key: &str, raw: Box<RawValue>) {
    match fields.iter_mut().find(|(k, _)| k == key) {
        Some((_, v)) => *v = raw,
        None => fields.push((key.to_owned(), raw)),
    }
}

impl Patch {
    /// Set `key` to `raw` (replacing an earlier set or remove of it).
    pub fn set(&mut self, key: &str, raw: Box<RawValue>) {
        self.remove.retain(|k| k != key);
        put(&mut self.set, key, raw);
    }

    /// Set `key` to `value`, serialized.
    ///
    /// # Errors
    /// `value` cannot be written as JSON.
    pub fn set_value<T: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        self.set(key, serde_json::value::to_raw_value(value)?);
        Ok(())
    }

    /// Leave `key` out (replacing an earlier set of it).
    pub fn remove(&mut self, key: &str) {
        self.set.retain(|(k, _)| k != key);
        if !self.removes(key) {
            self.remove.push(key.to_owned());
        }
    }

    /// What the patch sets `key` to.
    #[must_use]
    pub fn value(&self, key: &str) -> Option<&RawValue> {
        (self.set.iter())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// Whether the patch leaves `key` out.
    #[must_use]
    pub fn removes(&self, key: &str) -> bool {
        self.remove.iter().any(|k| k == key)
    }

    /// `key` as the patched body has it: the patch's value, else `body`'s.
    #[must_use]
    pub fn get<'a>(&'a self, body: &'a RawBody, key: &str) -> Option<&'a RawValue> {
        if self.removes(key) {
            return None;
        }
        self.value(key).or_else(|| body.get(key))
    }
}

fn write_key(out: &mut Vec<u8>, key: &str) {
    // a key that needs no escaping (nearly all) is copied as is
    if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.push(b'"');
    } else if serde_json::to_writer(&mut *out, key).is_err() {
        out.extend_from_slice(b"\"\"");
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

impl From<Value> for RawBody {
    /// An object's fields, in its order (any other value: an empty body).
    fn from(value: Value) -> Self {
        let Value::Object(map) = value else {
            return Self::default();
        };
        let fields = (map.into_iter())
            .filter_map(|(k, v)| Some((k, serde_json::value::to_raw_value(&v).ok()?)))
            .collect();
        Self { fields }
    }
}

impl Serialize for RawBody {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.fields.len()))?;
        for (k, v) in &self.fields {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
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

/// A JSON array written from `items` (each as written).
#[must_use]
pub fn array_of<'a>(items: impl IntoIterator<Item = &'a RawValue>) -> Box<RawValue> {
    let mut text = String::from("[");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(item.get());
    }
    text.push(']');
    raw(text)
}

/// The items of a JSON array, each as written (borrowed from it).
///
/// # Errors
/// `array` is not an array.
pub fn array_items(array: &RawValue) -> Result<Vec<&RawValue>, serde_json::Error> {
    serde_json::from_str(array.get())
}

/// `array` with `items` after its own, by text (nothing in it is read).
///
/// # Errors
/// `array` is not an array.
pub fn array_append(array: &RawValue, items: &[&RawValue]) -> Result<Box<RawValue>, String> {
    splice(array, items, false)
}

/// `array` with `items` before its own, by text (nothing in it is read).
///
/// # Errors
/// `array` is not an array.
pub fn array_prepend(array: &RawValue, items: &[&RawValue]) -> Result<Box<RawValue>, String> {
    splice(array, items, true)
}

fn splice(array: &RawValue, items: &[&RawValue], before: bool) -> Result<Box<RawValue>, String> {
    let text = array.get().trim();
    let inner = (text.strip_prefix('['))
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| "not a JSON array".to_owned())?
        .trim();
    if items.is_empty() {
        return Ok(raw(text.to_owned()));
    }
    let added: usize = items.iter().map(|i| i.get().len() + 1).sum();
    let mut out = String::with_capacity(inner.len() + added + 2);
    out.push('[');
    let push_items = |out: &mut String| {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(item.get());
        }
    };
    if before {
        push_items(&mut out);
        if !inner.is_empty() {
            out.push(',');
            out.push_str(inner);
        }
    } else {
        out.push_str(inner);
        if !inner.is_empty() {
            out.push(',');
        }
        push_items(&mut out);
    }
    out.push(']');
    Ok(raw(out))
}

/// `text` (valid JSON: built from raw values) as a raw value.
fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text).unwrap_or_else(|_| null())
}

/// `null`, as a raw value.
#[must_use]
pub fn null() -> Box<RawValue> {
    serde_json::value::to_raw_value(&Value::Null).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rv(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn a_body_goes_out_byte_for_byte_bar_what_is_patched() {
        let text = r#"{"zeta":1.0000000000000002,"model":"m","alpha":100000000000000000000000,"e":1e2,"s":"\u00e9"}"#;
        let body = RawBody::parse(text.as_bytes()).unwrap();
        assert_eq!(body.to_bytes(), text.as_bytes());
        assert_eq!(body.wire_len(), text.len());
        let mut patch = Patch::default();
        patch.set_value("model", "up").unwrap();
        patch.set_value("stream", &true).unwrap();
        patch.remove("e");
        let out = String::from_utf8(body.to_bytes_with(&patch)).unwrap();
        assert_eq!(
            out,
            r#"{"zeta":1.0000000000000002,"model":"up","alpha":100000000000000000000000,"s":"\u00e9","stream":true}"#
        );
        assert_eq!(body.wire_len_with(&patch), out.len());
        assert_eq!(body.str("s").as_deref(), Some("é"));
        assert_eq!(body.get_as::<f64>("e"), Some(100.0));
    }

    #[test]
    fn a_key_sent_twice_keeps_its_last_value_at_its_first_place() {
        let body = RawBody::parse(br#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(body.to_bytes(), br#"{"a":3,"b":2}"#);
        assert!(RawBody::parse(b"[1]").is_err());
    }

    #[test]
    fn arrays_are_spliced_by_text() {
        let one = rv(r#"{"a":1}"#);
        let two = rv("2");
        let items = [one.as_ref(), two.as_ref()];
        assert_eq!(
            array_append(&rv("[ ]"), &items).unwrap().get(),
            r#"[{"a":1},2]"#
        );
        assert_eq!(
            array_append(&rv("[0]"), &items).unwrap().get(),
            r#"[0,{"a":1},2]"#
        );
        assert_eq!(
            array_prepend(&rv("[0 ]"), &items).unwrap().get(),
            r#"[{"a":1},2,0]"#
        );
        assert!(array_append(&rv("{}"), &items).is_err());
        let array = rv(r#"[1, "x", {"b": [2]}]"#);
        let parts = array_items(&array).unwrap();
        assert_eq!(array_of(parts).get(), r#"[1,"x",{"b": [2]}]"#);
        let body = RawBody::from(json!({"b": 1, "a": [2]}));
        assert_eq!(body.to_value(), json!({"a": [2], "b": 1}));
    }
}
