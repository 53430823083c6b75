//! JSON values valid against a JSON Schema: the simulated providers' tool-call arguments
//! and structured outputs.
//!
//! Modelled: `type` (one or a list), `enum`, `const`, objects (`properties`, `required`,
//! `additionalProperties`, `minProperties` / `maxProperties`), arrays (`items`,
//! `prefixItems` and the older tuple `items`, `minItems` / `maxItems`, `uniqueItems` as far
//! as retries go), strings (`minLength` / `maxLength`, the common `format`s:
//! `date-time`, `date`, `time`, `duration`, `email`, `uri`, `uuid`, `ipv4`, `ipv6`,
//! `hostname`...), numbers and integers (`minimum` / `maximum`, both spellings of the
//! exclusive bounds, `multipleOf`), `$ref` to `#` and JSON pointers into the schema
//! (`#/$defs/…`, `#/definitions/…`, as pydantic emits them), `allOf` (every member holds),
//! `anyOf` / `oneOf` (one branch, not `null` while there is room), OpenAPI's `nullable`
//! (ignored: a value is given) and the `true` / `false` schemas. Not modelled, so a value
//! may miss them: `pattern`, `not`, `if` / `then` / `else`, `contains`, `patternProperties`,
//! `propertyNames`, `dependent*`, references outside the schema.
//!
//! Bounded for a hostile schema: past [`SOFT_DEPTH`] nested values, [`SOFT_NODES`] values
//! or [`SOFT_BYTES`] of output a value is kept minimal (required properties only, the
//! fewest items, `null` where allowed); past [`MAX_DEPTH`], [`MAX_NODES`] or [`MAX_BYTES`]
//! nothing more is added and the value is marked cut ([`Generated::cut`]). Each schema
//! node is looked at through a bounded number of parts ([`MAX_PARTS`]: references, `allOf`
//! members, chosen branches), branches, required names and properties, so the work stays
//! proportional to the value produced, whatever the schema's size.

use std::collections::{HashSet, VecDeque};

use serde_json::{Map, Value};

use super::seeded::Seeded;

mod scalars;
#[cfg(test)]
mod tests;

/// Nesting past which values are kept minimal.
pub const SOFT_DEPTH: usize = 6;
/// Nesting past which nothing more is generated.
pub const MAX_DEPTH: usize = 24;
/// Values generated past which the rest are kept minimal.
pub const SOFT_NODES: usize = 400;
/// Values generated past which nothing more is.
pub const MAX_NODES: usize = 4000;
/// Output bytes (approximately) past which values are kept minimal.
pub const SOFT_BYTES: usize = 8 * 1024;
/// Output bytes (approximately) past which nothing more is generated.
pub const MAX_BYTES: usize = 64 * 1024;
/// Schemas one value is read through at most (itself, references, `allOf` members,
/// chosen branches).
pub const MAX_PARTS: usize = 32;
/// `anyOf` / `oneOf` branches considered, `required` names and `properties` read per part.
pub const MAX_LISTED: usize = 256;
/// Optional properties given per object.
pub const MAX_OPTIONAL: usize = 32;
/// Items per array (a larger `minItems` is cut).
pub const MAX_ITEMS: usize = 64;
/// Characters per string (a larger `minLength` is cut).
pub const MAX_STRING_CHARS: usize = 4096;
/// The longest `$ref` followed.
const MAX_REF_BYTES: usize = 1024;

/// The schema that accepts anything (`true`).
static ANY: Value = Value::Bool(true);

/// A generated value, and whether a bound cut it short (it may then not be valid).
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The value.
    pub value: Value,
    /// A bound stopped the generation, or the schema asked for more than the bounds allow.
    pub cut: bool,
}

/// A value valid against `schema` (within the bounds above), the same for the same
/// schema and seed.
#[must_use]
pub fn instance(schema: &Value, seed: u64) -> Generated {
    let mut g = Gen {
        root: schema,
        rng: Seeded::new(seed),
        nodes: 0,
        bytes: 0,
        cut: false,
    };
    let value = g.value(&[schema], 0);
    Generated { value, cut: g.cut }
}

/// The generation's state: the schema references resolve against, the stream, the
/// counts the bounds read.
struct Gen<'a> {
    root: &'a Value,
    rng: Seeded,
    nodes: usize,
    bytes: usize,
    cut: bool,
}

/// What a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Object,
    Array,
}

impl Kind {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "null" => Self::Null,
            "boolean" => Self::Boolean,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "string" => Self::String,
            "object" => Self::Object,
            "array" => Self::Array,
            _ => return None,
        })
    }
}

/// The first of `parts` that has `key`: a schema's own keywords win over what it
/// references, which win over its `allOf` members.
fn first<'a>(parts: &[&'a Map<String, Value>], key: &str) -> Option<&'a Value> {
    parts.iter().find_map(|p| p.get(key))
}

/// A JSON pointer fragment (`#`, `#/$defs/Name`) resolved in `root`; `None` for anything
/// else (another document, an anchor) or a pointer that leads nowhere.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    if reference.len() > MAX_REF_BYTES {
        return None;
    }
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let mut at = root;
    for token in pointer.strip_prefix('/')?.split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(m) => m.get(&token)?,
            Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

impl<'a> Gen<'a> {
    /// Past a hard bound: nothing more is generated.
    fn stopped(&self, depth: usize) -> bool {
        depth > MAX_DEPTH || self.nodes >= MAX_NODES || self.bytes >= MAX_BYTES
    }

    /// Past a soft bound: values are kept minimal.
    fn minimal(&self, depth: usize) -> bool {
        depth >= SOFT_DEPTH || self.nodes >= SOFT_NODES || self.bytes >= SOFT_BYTES
    }

    /// A value satisfying every schema of `roots` (and what they reference).
    fn value(&mut self, roots: &[&'a Value], depth: usize) -> Value {
        if self.stopped(depth) {
            self.cut = true;
            return Value::Null;
        }
        self.nodes += 1;
        let minimal = self.minimal(depth);
        let parts = self.parts(roots, minimal);
        if let Some(c) = first(&parts, "const") {
            return self.literal(c);
        }
        if let Some(choices) = first(&parts, "enum").and_then(Value::as_array) {
            if let Some(v) = self.rng.pick(choices) {
                return self.literal(v);
            }
        }
        match self.kind(&parts, minimal) {
            Kind::Null => self.scalar(Value::Null),
            Kind::Boolean => {
                let b = self.rng.below(2) == 1;
                self.scalar(Value::Bool(b))
            }
            Kind::Integer => {
                let v = scalars::integer(&parts, &mut self.rng);
                self.scalar(v)
            }
            Kind::Number => {
                let v = scalars::number(&parts, &mut self.rng);
                self.scalar(v)
            }
            Kind::String => {
                let (s, short) = scalars::string(&parts, &mut self.rng);
                self.cut |= short;
                self.scalar(Value::String(s))
            }
            Kind::Object => self.object(&parts, depth),
            Kind::Array => self.array(&parts, depth),
        }
    }

    /// A scalar, counted.
    fn scalar(&mut self, v: Value) -> Value {
        self.bytes += match &v {
            Value::String(s) => s.len() + 2,
            _ => 8,
        };
        v
    }

    /// A `const` or `enum` value as written, unless it alone would pass the byte bound.
    fn literal(&mut self, v: &Value) -> Value {
        let room = MAX_BYTES.saturating_sub(self.bytes);
        match size_within(v, room) {
            Some(n) => {
                self.bytes += n;
                v.clone()
            }
            None => {
                self.cut = true;
                self.bytes = MAX_BYTES;
                Value::Null
            }
        }
    }

    /// The schema objects one value must satisfy: each root, what its `$ref` points to,
    /// its `allOf` members and one branch of its `anyOf` / `oneOf`, followed breadth
    /// first up to [`MAX_PARTS`] (so a reference cycle ends).
    fn parts(&mut self, roots: &[&'a Value], minimal: bool) -> Vec<&'a Map<String, Value>> {
        let mut parts = Vec::new();
        let mut queue: VecDeque<&'a Value> = roots.iter().copied().collect();
        let mut looked = 0;
        while let Some(schema) = queue.pop_front() {
            looked += 1;
            if looked > MAX_PARTS {
                break;
            }
            let Some(obj) = schema.as_object() else {
                continue; // `true` adds nothing; `false` cannot be met, so it is not tried
            };
            parts.push(obj);
            if let Some(target) = obj
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| resolve(self.root, r))
            {
                queue.push_back(target);
            }
            if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
                queue.extend(all.iter().take(MAX_PARTS));
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(branches) = obj.get(key).and_then(Value::as_array) {
                    if let Some(b) = self.branch(branches, minimal) {
                        queue.push_back(b);
                    }
                }
            }
        }
        parts
    }

    /// One branch of an `anyOf` / `oneOf`: any but `null` while there is room; when the
    /// value must be minimal, `null` if it is a choice, else the first branch that is
    /// neither a reference nor a container.
    fn branch(&mut self, branches: &'a [Value], minimal: bool) -> Option<&'a Value> {
        let listed = &branches[..branches.len().min(MAX_LISTED)];
        let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
        if minimal {
            let leaf = |b: &&Value| {
                b.get("$ref").is_none()
                    && !matches!(
                        b.get("type").and_then(Value::as_str),
                        Some("object" | "array")
                    )
            };
            return (listed.iter().find(|b| is_null(b)))
                .or_else(|| listed.iter().find(leaf))
                .or(listed.first());
        }
        let live: Vec<&'a Value> = listed.iter().filter(|b| !is_null(b)).collect();
        match self.rng.pick(&live) {
            Some(b) => Some(*b),
            None => listed.first(),
        }
    }

    /// What the value is: a declared type (not `null` while there is room, when another is
    /// allowed), else what the keywords imply, else a string.
    fn kind(&mut self, parts: &[&'a Map<String, Value>], minimal: bool) -> Kind {
        let declared: Vec<Kind> = match first(parts, "type") {
            Some(Value::String(t)) => Kind::parse(t).into_iter().collect(),
            Some(Value::Array(ts)) => (ts.iter().take(8))
                .filter_map(|t| t.as_str().and_then(Kind::parse))
                .collect(),
            _ => Vec::new(),
        };
        if declared.is_empty() {
            return implied(parts);
        }
        let nullable = declared.contains(&Kind::Null);
        let live: Vec<Kind> = declared.into_iter().filter(|k| *k != Kind::Null).collect();
        if live.is_empty() || (minimal && nullable) {
            return Kind::Null;
        }
        self.rng.pick(&live).copied().unwrap_or(Kind::String)
    }

    /// An object: every required property, then (while there is room) the optional ones,
    /// then entries of `additionalProperties` up to `minProperties` (one for a map with no
    /// declared properties).
    fn object(&mut self, parts: &[&'a Map<String, Value>], depth: usize) -> Value {
        self.bytes += 2;
        let required = self.required(parts);
        let names = declared(parts);
        let max = count(parts, "maxProperties").unwrap_or(usize::MAX);
        let optional_room = if self.minimal(depth) {
            0
        } else {
            max.saturating_sub(required.len()).min(MAX_OPTIONAL)
        };
        let is_required: HashSet<&str> = required.iter().copied().collect();
        let optional = (names.iter())
            .filter(|n| !is_required.contains(*n))
            .take(optional_room)
            .copied();
        let chosen: Vec<&'a str> = required.iter().copied().chain(optional).collect();
        let extra = first(parts, "additionalProperties").filter(|e| e.is_object());
        let mut out = Map::new();
        for name in chosen {
            let mut schemas: Vec<&'a Value> = (parts.iter())
                .filter_map(|p| p.get("properties")?.get(name))
                .collect();
            if schemas.is_empty() {
                schemas.push(extra.unwrap_or(&ANY));
            }
            if !self.entry(&mut out, name.to_owned(), &schemas, depth) {
                return Value::Object(out);
            }
        }
        self.extra_entries(parts, &mut out, names.is_empty(), depth);
        Value::Object(out)
    }

    /// Every part's `required` names, once each, in order (at most [`MAX_LISTED`] read
    /// per part; more is cut).
    fn required(&mut self, parts: &[&'a Map<String, Value>]) -> Vec<&'a str> {
        let mut required: Vec<&'a str> = Vec::new();
        let mut seen: HashSet<&'a str> = HashSet::new();
        for p in parts {
            if let Some(list) = p.get("required").and_then(Value::as_array) {
                self.cut |= list.len() > MAX_LISTED;
                for name in list.iter().take(MAX_LISTED).filter_map(Value::as_str) {
                    if seen.insert(name) {
                        required.push(name);
                    }
                }
            }
        }
        required
    }

    /// Entries beyond the declared properties: up to `minProperties`, or one for a map
    /// (`additionalProperties` a schema, no properties), unless `additionalProperties` is
    /// `false`.
    fn extra_entries(
        &mut self,
        parts: &[&'a Map<String, Value>],
        out: &mut Map<String, Value>,
        map_only: bool,
        depth: usize,
    ) {
        let extra = first(parts, "additionalProperties");
        if extra == Some(&Value::Bool(false)) {
            return;
        }
        let wanted = count(parts, "minProperties").unwrap_or(0);
        let map = map_only && extra.is_some_and(Value::is_object) && !self.minimal(depth);
        let target = wanted.max(usize::from(map)).min(MAX_ITEMS);
        self.cut |= wanted > MAX_ITEMS;
        let schema = extra.filter(|e| e.is_object()).unwrap_or(&ANY);
        let mut n = 0;
        while out.len() < target {
            n += 1;
            let key = format!("{}_{n}", scalars::word(&mut self.rng));
            if out.contains_key(&key) {
                continue;
            }
            if !self.entry(out, key, &[schema], depth) {
                return;
            }
        }
    }

    /// Add `name: value` to `out`; false once a hard bound stops the object.
    fn entry(
        &mut self,
        out: &mut Map<String, Value>,
        name: String,
        schemas: &[&'a Value],
        depth: usize,
    ) -> bool {
        if self.stopped(depth + 1) {
            self.cut = true;
            return false;
        }
        self.bytes += name.len() + 4;
        let v = self.value(schemas, depth + 1);
        out.insert(name, v);
        true
    }

    /// An array: the tuple's items (`prefixItems`, or `items` as a list), then `items`,
    /// two in all near the top and one deeper where the bounds allow (the fewest when the
    /// value must be minimal).
    fn array(&mut self, parts: &[&'a Map<String, Value>], depth: usize) -> Value {
        self.bytes += 2;
        let (prefix, rest) = tuple(parts);
        let min = count(parts, "minItems").unwrap_or(0);
        let max = count(parts, "maxItems").unwrap_or(usize::MAX);
        self.cut |= min > MAX_ITEMS;
        // two items near the top, one deeper down (a recursive model stays small)
        let wanted = if depth < 3 { 2 } else { 1 };
        let mut n = if self.minimal(depth) {
            min
        } else {
            min.max(max.min(prefix.len().max(wanted)))
        };
        if rest == Some(&Value::Bool(false)) {
            n = n.min(prefix.len());
        }
        let n = n.min(MAX_ITEMS);
        let unique = first(parts, "uniqueItems") == Some(&Value::Bool(true));
        let mut out: Vec<Value> = Vec::with_capacity(n);
        for i in 0..n {
            if self.stopped(depth + 1) {
                self.cut = true;
                break;
            }
            let schema = prefix.get(i).or(rest).unwrap_or(&ANY);
            let mut v = self.value(&[schema], depth + 1);
            for _ in 0..3 {
                if !unique || !out.contains(&v) {
                    break;
                }
                v = self.value(&[schema], depth + 1);
            }
            self.bytes += 1;
            out.push(v);
        }
        Value::Array(out)
    }
}

/// The names of every part's `properties`, once each, in order (at most [`MAX_LISTED`]
/// read per part).
fn declared<'a>(parts: &[&'a Map<String, Value>]) -> Vec<&'a str> {
    let mut names: Vec<&'a str> = Vec::new();
    let mut seen: HashSet<&'a str> = HashSet::new();
    for p in parts {
        if let Some(props) = p.get("properties").and_then(Value::as_object) {
            for name in props.keys().take(MAX_LISTED) {
                if seen.insert(name.as_str()) {
                    names.push(name);
                }
            }
        }
    }
    names
}

/// The tuple part of an array schema and the schema of the items after it.
fn tuple<'a>(parts: &[&'a Map<String, Value>]) -> (&'a [Value], Option<&'a Value>) {
    if let Some(prefix) = first(parts, "prefixItems").and_then(Value::as_array) {
        return (prefix, first(parts, "items"));
    }
    match first(parts, "items") {
        // draft 4-7 tuples: `items` a list, `additionalItems` the rest
        Some(Value::Array(prefix)) => (prefix, first(parts, "additionalItems")),
        other => (&[], other),
    }
}

/// A non-negative count keyword (`minItems`, `maxProperties`, ...).
fn count(parts: &[&Map<String, Value>], key: &str) -> Option<usize> {
    let n = first(parts, key)?.as_f64()?;
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // non-negative, saturating
    Some(n.ceil() as usize)
}

/// The kind a schema without `type` implies by its keywords; a string when nothing does.
fn implied(parts: &[&Map<String, Value>]) -> Kind {
    let has = |keys: &[&str]| keys.iter().any(|k| first(parts, k).is_some());
    if has(&[
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
        "maxProperties",
    ]) {
        Kind::Object
    } else if has(&[
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
    ]) {
        Kind::Array
    } else if has(&[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ]) {
        Kind::Number
    } else {
        Kind::String
    }
}

/// The serialized size of `v` (roughly), or `None` past `limit`; stops reading as soon
/// as it is past.
fn size_within(v: &Value, limit: usize) -> Option<usize> {
    let mut total = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total += match v {
            Value::String(s) => s.len() + 2,
            Value::Array(a) => {
                stack.extend(a.iter());
                2 + a.len()
            }
            Value::Object(m) => {
                stack.extend(m.values());
                2 + m.keys().map(|k| k.len() + 4).sum::<usize>()
            }
            _ => 8,
        };
        if total > limit {
            return None;
        }
    }
    Some(total)
}
