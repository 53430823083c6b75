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
use std::ops::Range;

use bytes::Bytes;
use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON object as top-level fields in the order sent, each value as its own bytes.
///
/// The body's text is held once ([`Bytes`], shared with the request when parsed with
/// [`RawBody::parse_shared`]) and each field is a key and a value as ranges into it, so
/// that parsing allocates once (the field list) and writing upstream copies each field's
/// key and value from the original. A key written with escapes, and a value set later
/// ([`RawBody::set`]), are owned copies.
#[derive(Debug, Clone, Default)]
pub struct RawBody {
    /// The text the parsed fields' ranges point into.
    text: Bytes,
    fields: Vec<Field>,
}

/// One top-level field: its key (unescaped) and its value (as written).
#[derive(Debug, Clone)]
struct Field {
    key: Part<Box<str>>,
    value: Part<Box<RawValue>>,
}

/// A key or a value: a range of the body's text, or its own copy.
#[derive(Debug, Clone)]
enum Part<T> {
    At(Range<usize>),
    Own(T),
}

/// Two bodies are equal when they have the same fields, in the same order, written alike.
impl PartialEq for RawBody {
    fn eq(&self, other: &Self) -> bool {
        self.fields.len() == other.fields.len()
            && (self.fields.iter().zip(&other.fields)).all(|(a, b)| {
                self.key_bytes(a) == other.key_bytes(b)
                    && self.value_bytes(a) == other.value_bytes(b)
            })
    }
}

impl RawBody {
    /// Read a JSON object: each field's value is kept as written (a key sent twice keeps
    /// its last value, at its first place, as a JSON parser does). Copies `bytes` once;
    /// [`RawBody::parse_shared`] shares them instead.
    ///
    /// # Errors
    /// Not JSON, or not an object.
    pub fn parse(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        let text = Bytes::copy_from_slice(bytes);
        let fields = fields_of(&text)?;
        Ok(Self { text, fields })
    }

    /// [`RawBody::parse`] holding `bytes` themselves (a reference count, no copy).
    ///
    /// # Errors
    /// Not JSON, or not an object.
    pub fn parse_shared(bytes: &Bytes) -> Result<Self, serde_json::Error> {
        let fields = fields_of(bytes)?;
        Ok(Self {
            text: bytes.clone(),
            fields,
        })
    }

    /// The value of `key`, as written.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.raw(self.field(key.as_bytes())?)
    }

    /// Whether the body has `key`.
    #[must_use]
    pub fn contains(&self, key: &str) -> bool {
        self.field(key.as_bytes()).is_some()
    }

    /// `key`'s value read as a `T` (parsed now, on its own): `None` when absent or not a
    /// `T`. Borrows what it can from the body (`&str` without escapes, `&RawValue`).
    #[must_use]
    pub fn get_as<'a, T: Deserialize<'a>>(&'a self, key: &str) -> Option<T> {
        let text = self.value_str(self.field(key.as_bytes())?)?;
        serde_json::from_str(text).ok()
    }

    /// `key`'s value if it is a string.
    #[must_use]
    pub fn str(&self, key: &str) -> Option<Cow<'_, str>> {
        self.get_as::<Cow<'_, str>>(key)
    }

    /// Set `key` to `raw`: in place when the body has it, else last.
    pub fn set(&mut self, key: &str, raw: Box<RawValue>) {
        match self.position(key.as_bytes()) {
            Some(at) => self.fields[at].value = Part::Own(raw),
            None => self.fields.push(Field {
                key: Part::Own(key.into()),
                value: Part::Own(raw),
            }),
        }
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
        let at = self.position(key.as_bytes())?;
        let field = self.fields.remove(at);
        match field.value {
            Part::Own(raw) => Some(raw),
            Part::At(range) => {
                let text = std::str::from_utf8(self.text.get(range)?).ok()?;
                RawValue::from_string(text.to_owned()).ok()
            }
        }
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|f| self.key_str(f))
    }

    /// The fields, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        (self.fields.iter()).filter_map(|f| Some((self.key_str(f), self.raw(f)?)))
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
        self.each_with(patch, |key, value| {
            n += usize::from(!first) + key.len() + 1 + value.len();
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
        self.each_with(patch, |key, value| {
            if !first {
                out.push(b',');
            }
            first = false;
            key.write(&mut out);
            out.push(b':');
            out.extend_from_slice(value);
        });
        out.push(b'}');
        out
    }

    /// The whole body as a `Value` (parses every field: for tests and small bodies).
    #[must_use]
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.to_bytes()).unwrap_or(Value::Null)
    }

    /// Calls `f` with each field of the body as `patch` leaves it, in order: its key as
    /// written out and its value's bytes.
    fn each_with(&self, patch: &Patch, mut f: impl FnMut(KeyOut<'_>, &[u8])) {
        // which of the patch's first 64 sets replaced a field of the body (the rest go
        // last), so that they are not looked for in the body again
        let mut placed = 0u64;
        for field in &self.fields {
            let key = self.key_bytes(field);
            if patch.removes_bytes(key) {
                continue;
            }
            let out = match &field.key {
                // a key read without escapes (it had none) goes out as it came
                Part::At(_) => KeyOut::Plain(key),
                Part::Own(key) => KeyOut::of(key),
            };
            match (patch.set.iter()).position(|(k, _)| k.as_bytes() == key) {
                Some(at) => {
                    placed |= 1u64
                        .checked_shl(u32::try_from(at).unwrap_or(64))
                        .unwrap_or(0);
                    f(out, patch.set[at].1.get().as_bytes());
                }
                None => f(out, self.value_bytes(field)),
            }
        }
        for (at, (key, raw)) in patch.set.iter().enumerate() {
            let bit = 1u64.checked_shl(u32::try_from(at).unwrap_or(64));
            let in_body = match bit {
                Some(bit) => placed & bit != 0,
                None => self.position(key.as_bytes()).is_some(),
            };
            if !in_body {
                f(KeyOut::of(key), raw.get().as_bytes());
            }
        }
    }

    /// Where the field named `key` is.
    fn position(&self, key: &[u8]) -> Option<usize> {
        (self.fields.iter()).position(|f| self.key_bytes(f) == key)
    }

    /// The field named `key`.
    fn field(&self, key: &[u8]) -> Option<&Field> {
        self.fields.iter().find(|f| self.key_bytes(f) == key)
    }

    fn key_bytes<'a>(&'a self, field: &'a Field) -> &'a [u8] {
        match &field.key {
            Part::At(range) => self.text.get(range.clone()).unwrap_or_default(),
            Part::Own(key) => key.as_bytes(),
        }
    }

    fn key_str<'a>(&'a self, field: &'a Field) -> &'a str {
        match &field.key {
            Part::At(range) => (self.text.get(range.clone()))
                .and_then(|b| std::str::from_utf8(b).ok())
                .unwrap_or_default(),
            Part::Own(key) => key,
        }
    }

    fn value_bytes<'a>(&'a self, field: &'a Field) -> &'a [u8] {
        match &field.value {
            Part::At(range) => self.text.get(range.clone()).unwrap_or_default(),
            Part::Own(raw) => raw.get().as_bytes(),
        }
    }

    fn value_str<'a>(&'a self, field: &'a Field) -> Option<&'a str> {
        match &field.value {
            Part::At(range) => std::str::from_utf8(self.text.get(range.clone())?).ok(),
            Part::Own(raw) => Some(raw.get()),
        }
    }

    /// A field's value as a [`RawValue`] borrowed from the body (read again to make one:
    /// the range is known to hold one JSON value, which is all the reading checks).
    fn raw<'a>(&'a self, field: &'a Field) -> Option<&'a RawValue> {
        match &field.value {
            Part::At(_) => serde_json::from_str(self.value_str(field)?).ok(),
            Part::Own(raw) => Some(raw),
        }
    }
}

/// A key as [`RawBody::to_bytes_with`] writes it.
enum KeyOut<'a> {
    /// Needs no escaping: written between quotes as it is.
    Plain(&'a [u8]),
    /// Needs escaping: written as JSON writes a string.
    Escaped(&'a str),
}

impl<'a> KeyOut<'a> {
    fn of(key: &'a str) -> Self {
        if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
            KeyOut::Plain(key.as_bytes())
        } else {
            KeyOut::Escaped(key)
        }
    }

    fn len(&self) -> usize {
        match self {
            KeyOut::Plain(key) => key.len() + 2,
            KeyOut::Escaped(key) => {
                let mut out = Vec::new();
                write_key(&mut out, key);
                out.len()
            }
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            KeyOut::Plain(key) => {
                out.push(b'"');
                out.extend_from_slice(key);
                out.push(b'"');
            }
            KeyOut::Escaped(key) => write_key(out, key),
        }
    }
}

/// The fields of the JSON object `text`, as ranges of it where they were read without
/// copying (a key without escapes, every value), parsed as [`crate::json_text::from_bytes`]
/// parses (UTF-8 checked once; a body that is not UTF-8 gets `from_slice`'s error).
fn fields_of(text: &[u8]) -> Result<Vec<Field>, serde_json::Error> {
    let seed = Fields { base: text };
    let fields = if let Ok(s) = std::str::from_utf8(text) {
        let mut de = serde_json::Deserializer::from_str(s);
        let fields = seed.deserialize(&mut de)?;
        de.end()?;
        fields
    } else {
        let mut de = serde_json::Deserializer::from_slice(text);
        let fields = seed.deserialize(&mut de)?;
        de.end()?;
        fields
    };
    Ok(fields)
}

/// Reads an object's fields as ranges of `base`, the text being read.
struct Fields<'b> {
    base: &'b [u8],
}

impl Fields<'_> {
    /// Where `part` (borrowed from the text being read) lies in it.
    fn range(&self, part: &str) -> Option<Range<usize>> {
        let start = (part.as_ptr().addr()).checked_sub(self.base.as_ptr().addr())?;
        let end = start.checked_add(part.len())?;
        (end <= self.base.len()).then_some(start..end)
    }
}

impl<'de> DeserializeSeed<'de> for Fields<'_> {
    type Value = Vec<Field>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Field>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Fields<'_> {
    type Value = Vec<Field>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Field>, A::Error> {
        let mut fields: Vec<Field> = Vec::with_capacity(8);
        while let Some(KeyText(key)) = map.next_key::<KeyText<'de>>()? {
            let value: &'de RawValue = map.next_value()?;
            let value = match self.range(value.get()) {
                Some(range) => Part::At(range),
                None => Part::Own(value.to_owned()),
            };
            // a key sent twice keeps its last value, at its first place
            let base = self.base;
            let key_of = |f: &Field| -> bool {
                let bytes = match &f.key {
                    Part::At(range) => base.get(range.clone()).unwrap_or_default(),
                    Part::Own(k) => k.as_bytes(),
                };
                bytes == key.as_bytes()
            };
            if let Some(field) = fields.iter_mut().find(|f| key_of(f)) {
                field.value = value;
                continue;
            }
            let key = match key {
                Cow::Borrowed(k) => self.range(k).map_or_else(|| Part::Own(k.into()), Part::At),
                Cow::Owned(k) => Part::Own(k.into()),
            };
            fields.push(Field { key, value });
        }
        Ok(fields)
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct KeyText<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for KeyText<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Key;
        impl<'de> Visitor<'de> for Key {
            type Value = KeyText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(v)))
            }
        }
        d.deserialize_str(Key)
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
        self.removes_bytes(key.as_bytes())
    }

    fn removes_bytes(&self, key: &[u8]) -> bool {
        self.remove.iter().any(|k| k.as_bytes() == key)
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

impl From<Value> for RawBody {
    /// An object's fields, in its order (any other value: an empty body).
    fn from(value: Value) -> Self {
        let Value::Object(map) = value else {
            return Self::default();
        };
        let fields = (map.into_iter())
            .filter_map(|(k, v)| {
                Some(Field {
                    key: Part::Own(k.into()),
                    value: Part::Own(serde_json::value::to_raw_value(&v).ok()?),
                })
            })
            .collect();
        Self {
            text: Bytes::new(),
            fields,
        }
    }
}

impl Serialize for RawBody {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.fields.len()))?;
        for field in &self.fields {
            let value = self.raw(field).ok_or_else(|| {
                serde::ser::Error::custom("a body field that is not one JSON value")
            })?;
            map.serialize_entry(self.key_str(field), value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for RawBody {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Owned;
        impl<'de> Visitor<'de> for Owned {
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
        d.deserialize_map(Owned)
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
mod old;

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

    /// Bodies for comparing with the old `RawBody` ([`old`]): duplicate keys, keys with
    /// escapes (one naming the same key as a plain one), unicode, nesting, whitespace,
    /// and what is not a JSON object.
    const BODIES: [&[u8]; 24] = [
        br#"{"model":"bench-model","system":"You are terse.","messages":[{"role":"user","content":"Say something about gateways."}],"max_tokens":100}"#,
        br#"{"a":1,"b":2,"a":3}"#,
        br#"{"a":1,"b":2,"a":{"x":[1,2]},"b":null,"a":"last"}"#,
        br#"{"\u0061":1,"a":2,"b":3}"#,
        br#"{"a":1,"\u0061":2}"#,
        br#"{"k\"q":"v","k\\b":[1],"tab\t":true,"nl\n":false}"#,
        "{\"é\":\"ü😀\",\"😀\":{\"ü\":[\"é\"]},\"plain\":\"\\u00e9\"}".as_bytes(),
        b"  {  \"a\"  :  [ 1 , 2 ]  ,\n\t\"b\" : { \"c\" : \"d\" }  }  ",
        br#"{}"#,
        b" { } ",
        br#"{"zeta":1.0000000000000002,"model":"m","alpha":100000000000000000000000,"e":1e2,"s":"\u00e9"}"#,
        br#"{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"tool_use","id":"x","name":"f","input":{}}]}],"thinking":{"type":"enabled","budget_tokens":2048},"context_management":{"edits":[{"type":"clear_thinking_20251015"},{"type":"clear_tool_uses"}]}}"#,
        br#"{"stream":true,"model":"x","stream":false}"#,
        br#"{"":1,"a":""}"#,
        br#"[1]"#,
        br#""text""#,
        br#"{"a":1"#,
        br#"{"a":1} x"#,
        br#"{"a":1,}"#,
        b"",
        b"{\"a\":\"\xff\"}",
        b"{\"\xc3\":1}",
        b"\xfe{}",
        br#"{"a":"\ud800"}"#,
    ];

    /// What a body says through every reading method, as text.
    fn readings(
        keys: Vec<&str>,
        fields: Vec<(&str, &RawValue)>,
        get: impl Fn(&str) -> Option<String>,
        value: impl Fn(&str) -> Option<Value>,
        text: impl Fn(&str) -> Option<String>,
        contains: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let mut out = vec![format!("{keys:?}")];
        out.extend(fields.iter().map(|(k, v)| format!("{k:?}={}", v.get())));
        for key in keys
            .iter()
            .copied()
            .chain(["a", "b", "model", "absent", "\"a\""])
        {
            out.push(format!(
                "{key:?}: {:?} {:?} {:?} {}",
                get(key),
                value(key),
                text(key),
                contains(key)
            ));
        }
        out
    }

    fn new_readings(body: &RawBody) -> Vec<String> {
        readings(
            body.keys().collect(),
            body.iter().collect(),
            |k| body.get(k).map(|v| v.get().to_owned()),
            |k| body.get_as::<Value>(k),
            |k| body.str(k).map(Cow::into_owned),
            |k| body.contains(k),
        )
    }

    fn old_readings(body: &old::RawBody) -> Vec<String> {
        readings(
            body.keys().collect(),
            body.iter().collect(),
            |k| body.get(k).map(|v| v.get().to_owned()),
            |k| body.get_as::<Value>(k),
            |k| body.str(k).map(Cow::into_owned),
            |k| body.contains(k),
        )
    }

    /// Patches to write each body with: setting a field it has, one it lacks, one whose
    /// key needs escaping, removing one, and combinations.
    fn patches() -> Vec<Patch> {
        let mut all = vec![Patch::default()];
        let mut p = Patch::default();
        p.set_value("model", "up").unwrap();
        p.set_value("stream", &true).unwrap();
        all.push(p);
        let mut p = Patch::default();
        p.remove("a");
        p.set_value("k\"q", &[1, 2]).unwrap();
        p.set_value("b", &json!({"n": "é"})).unwrap();
        all.push(p);
        let mut p = Patch::default();
        p.set_value("a", &0).unwrap();
        p.remove("a");
        p.remove("messages");
        p.set_value("", &"empty").unwrap();
        all.push(p);
        let mut p = Patch::default();
        p.remove("é");
        p.set_value("tab\t", &false).unwrap();
        all.push(p);
        // more sets than the write's 64-bit record of those placed in the body
        let mut p = Patch::default();
        for i in 0..70 {
            p.set_value(&format!("k{i}"), &i).unwrap();
        }
        for key in ["b", "model", "a", "messages"] {
            p.set_value(key, "late").unwrap();
        }
        all.push(p);
        all
    }

    /// The body holds its text once now: every reading, every write with every patch,
    /// and every change reads and writes as the old body of owned fields did.
    #[test]
    fn the_body_reads_and_writes_as_the_old_one_did() {
        for text in BODIES {
            let ours = RawBody::parse(text);
            let shared = RawBody::parse_shared(&Bytes::copy_from_slice(text));
            let theirs = old::RawBody::parse(text);
            let (mut ours, shared, mut theirs) = match (ours, shared, theirs) {
                (Ok(a), Ok(s), Ok(b)) => (a, s, b),
                (Err(a), Err(s), Err(b)) => {
                    assert_eq!(a.to_string(), b.to_string(), "{text:?}");
                    assert_eq!(s.to_string(), b.to_string(), "{text:?}");
                    continue;
                }
                (a, s, b) => panic!("{text:?}: new {a:?}, shared {s:?}, old {b:?}"),
            };
            assert_eq!(ours, shared, "{text:?}");
            assert_eq!(new_readings(&ours), old_readings(&theirs), "{text:?}");
            assert_eq!(ours.len(), theirs.len());
            assert_eq!(ours.is_empty(), theirs.is_empty());
            assert_eq!(ours.to_value(), theirs.to_value());
            assert_eq!(
                serde_json::to_string(&ours).unwrap(),
                String::from_utf8(theirs.to_bytes()).unwrap()
            );
            for patch in patches() {
                let bytes = ours.to_bytes_with(&patch);
                assert_eq!(bytes, theirs.to_bytes_with(&patch), "{text:?} {patch:?}");
                assert_eq!(ours.wire_len_with(&patch), bytes.len(), "{text:?}");
                assert_eq!(ours.wire_len_with(&patch), theirs.wire_len_with(&patch));
                for key in ["a", "model", "k\"q", "messages", "absent"] {
                    let before = if patch.removes(key) {
                        None
                    } else {
                        patch.value(key).or_else(|| theirs.get(key))
                    };
                    assert_eq!(
                        patch.get(&ours, key).map(RawValue::get),
                        before.map(RawValue::get)
                    );
                }
            }
            assert_eq!(ours.to_bytes(), theirs.to_bytes(), "{text:?}");
            assert_eq!(ours.wire_len(), theirs.wire_len());
            // changes: to a field it has, one it lacks, one taken out
            let unchanged = ours.clone();
            for key in ["a", "b", "é", "k\"q", "new", "\u{1F600}"] {
                let (a, b) = (ours.remove(key), theirs.remove(key));
                assert_eq!(
                    a.as_deref().map(RawValue::get),
                    b.as_deref().map(RawValue::get)
                );
                ours.set_value("model", &[key]).unwrap();
                theirs.set_value("model", &[key]).unwrap();
                ours.set(key, rv(r#"{"set": 1}"#));
                theirs.set(key, rv(r#"{"set": 1}"#));
                assert_eq!(ours.to_bytes(), theirs.to_bytes(), "{text:?} {key}");
                assert_eq!(new_readings(&ours), old_readings(&theirs), "{text:?} {key}");
            }
            assert_eq!(ours == unchanged, theirs.to_bytes() == unchanged.to_bytes());
            assert_ne!(ours, unchanged);
        }
    }

    /// Splicing a value read from the new body gives what it gave from the old one.
    #[test]
    fn arrays_of_the_body_splice_as_before() {
        let text = br#"{"messages": [ {"role":"user","content":"hi"} ] ,"input":[]}"#;
        let ours = RawBody::parse(text).unwrap();
        let theirs = old::RawBody::parse(text).unwrap();
        let two = rv("2");
        for key in ["messages", "input"] {
            let (a, b) = (ours.get(key).unwrap(), theirs.get(key).unwrap());
            assert_eq!(
                array_append(a, &[&two]).unwrap().get(),
                array_append(b, &[&two]).unwrap().get()
            );
            assert_eq!(
                array_prepend(a, &[&two]).unwrap().get(),
                array_prepend(b, &[&two]).unwrap().get()
            );
            assert_eq!(
                array_items(a)
                    .unwrap()
                    .iter()
                    .map(|v| v.get())
                    .collect::<Vec<_>>(),
                array_items(b)
                    .unwrap()
                    .iter()
                    .map(|v| v.get())
                    .collect::<Vec<_>>(),
            );
        }
    }
}
