//! Generated values checked by a small validator written from the JSON Schema
//! specification (draft 2020-12, with draft 4-7 spellings), over the shapes pydantic and
//! the SDKs emit, and hostile schemas checked against the bounds.

use serde_json::{json, Value};

use super::*;

/// Whether `v` is valid against `schema`, references resolved in `root`; `depth` stops a
/// reference cycle in the validator itself.
fn valid(root: &Value, schema: &Value, v: &Value, depth: usize) -> Result<(), String> {
    if depth > 64 {
        return Err("validator depth".into());
    }
    let s = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err("false schema".into()),
        Value::Object(s) => s,
        _ => return Err(format!("not a schema: {schema}")),
    };
    let sub = |schema: &Value, v: &Value| valid(root, schema, v, depth + 1);
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        sub(resolve(root, r).ok_or(format!("unresolved {r}"))?, v)?;
    }
    for member in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        sub(member, v)?;
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        if !any.iter().any(|b| sub(b, v).is_ok()) {
            return Err(format!("no anyOf branch holds {v}"));
        }
    }
    if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
        let n = one.iter().filter(|b| sub(b, v).is_ok()).count();
        if n != 1 {
            return Err(format!("{n} oneOf branches hold {v}"));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Err(format!("{v} is not the const {c}"));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            return Err(format!("{v} is not in the enum"));
        }
    }
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !types.iter().any(|t| is_type(t, v)) {
            return Err(format!("{v} is not of type {t}"));
        }
    }
    match v {
        Value::Object(m) => object(root, s, m, depth),
        Value::Array(a) => array(root, s, a, depth),
        Value::String(text) => string(s, text),
        Value::Number(n) => number(s, n.as_f64().unwrap()),
        _ => Ok(()),
    }
}

fn is_type(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "string" => v.is_string(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        _ => false,
    }
}

fn object(
    root: &Value,
    s: &Map<String, Value>,
    m: &Map<String, Value>,
    depth: usize,
) -> Result<(), String> {
    for r in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !m.contains_key(r.as_str().unwrap()) {
            return Err(format!("missing required {r}"));
        }
    }
    let props = s.get("properties").and_then(Value::as_object);
    for (k, v) in m {
        match props.and_then(|p| p.get(k)) {
            Some(ps) => valid(root, ps, v, depth + 1)?,
            None => {
                if let Some(extra) = s.get("additionalProperties") {
                    valid(root, extra, v, depth + 1).map_err(|e| format!("{k}: {e}"))?;
                }
            }
        }
    }
    let n = m.len() as f64;
    if s.get("minProperties")
        .and_then(Value::as_f64)
        .is_some_and(|min| n < min)
    {
        return Err("minProperties".into());
    }
    if s.get("maxProperties")
        .and_then(Value::as_f64)
        .is_some_and(|max| n > max)
    {
        return Err("maxProperties".into());
    }
    Ok(())
}

fn array(root: &Value, s: &Map<String, Value>, a: &[Value], depth: usize) -> Result<(), String> {
    // draft 4-7 tuples: `items` a list, `additionalItems` the rest
    let (prefix, rest) = match s.get("items") {
        Some(Value::Array(tuple)) => (Some(tuple), s.get("additionalItems")),
        items => (s.get("prefixItems").and_then(Value::as_array), items),
    };
    for (i, v) in a.iter().enumerate() {
        let schema = match prefix.and_then(|p| p.get(i)) {
            Some(p) => Some(p),
            None => rest,
        };
        if let Some(schema) = schema {
            valid(root, schema, v, depth + 1).map_err(|e| format!("[{i}]: {e}"))?;
        }
    }
    let n = a.len() as f64;
    if s.get("minItems")
        .and_then(Value::as_f64)
        .is_some_and(|min| n < min)
    {
        return Err(format!("minItems: {}", a.len()));
    }
    if s.get("maxItems")
        .and_then(Value::as_f64)
        .is_some_and(|max| n > max)
    {
        return Err(format!("maxItems: {}", a.len()));
    }
    if s.get("uniqueItems") == Some(&json!(true)) {
        for (i, v) in a.iter().enumerate() {
            if a[..i].contains(v) {
                return Err(format!("duplicate {v}"));
            }
        }
    }
    Ok(())
}

fn string(s: &Map<String, Value>, text: &str) -> Result<(), String> {
    let n = text.chars().count() as f64;
    if s.get("minLength")
        .and_then(Value::as_f64)
        .is_some_and(|min| n < min)
    {
        return Err(format!("minLength: {text:?}"));
    }
    if s.get("maxLength")
        .and_then(Value::as_f64)
        .is_some_and(|max| n > max)
    {
        return Err(format!("maxLength: {text:?}"));
    }
    let digits = |t: &str| t.chars().all(|c| c.is_ascii_digit());
    let ok = match s.get("format").and_then(Value::as_str) {
        Some("date") => text.len() == 10 && digits(&text.replace('-', "")),
        Some("date-time") => text.len() == 20 && text.ends_with('Z') && text.as_bytes()[10] == b'T',
        Some("email") => text
            .split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && b.contains('.')),
        Some("uri") => text.starts_with("https://"),
        Some("uuid") => {
            let groups: Vec<usize> = text.split('-').map(str::len).collect();
            groups == [8, 4, 4, 4, 12] && text.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
        }
        Some("ipv4") => text.split('.').filter_map(|p| p.parse::<u8>().ok()).count() == 4,
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("format: {text:?}"))
    }
}

fn number(s: &Map<String, Value>, x: f64) -> Result<(), String> {
    let get = |k: &str| s.get(k).and_then(Value::as_f64);
    let draft4 = |k: &str| s.get(k) == Some(&json!(true));
    let fail = |what: &str| Err(format!("{what}: {x}"));
    if let Some(min) = get("minimum") {
        if x < min || (draft4("exclusiveMinimum") && x <= min) {
            return fail("minimum");
        }
    }
    if let Some(max) = get("maximum") {
        if x > max || (draft4("exclusiveMaximum") && x >= max) {
            return fail("maximum");
        }
    }
    if get("exclusiveMinimum").is_some_and(|b| x <= b) {
        return fail("exclusiveMinimum");
    }
    if get("exclusiveMaximum").is_some_and(|b| x >= b) {
        return fail("exclusiveMaximum");
    }
    if let Some(m) = get("multipleOf") {
        let q = x / m;
        if (q - q.round()).abs() > 1e-9 {
            return fail("multipleOf");
        }
    }
    Ok(())
}

/// Generates from `schema` under many seeds: every value valid, never cut.
fn always_valid(schema: &Value) -> Vec<Value> {
    (0..200)
        .map(|seed| {
            let g = instance(schema, seed);
            assert!(!g.cut, "cut for {schema}: {}", g.value);
            if let Err(e) = valid(schema, schema, &g.value, 0) {
                panic!("seed {seed}: {e}\nvalue: {}\nschema: {schema}", g.value);
            }
            g.value
        })
        .collect()
}

/// What pydantic 2 emits for a model with nested models, an enum, optional fields, a
/// list of models, a dict, a literal, a tuple, a date and constrained numbers (the openai
/// SDK makes it strict for `.parse`: every property required, no extra properties).
fn pydantic_schema() -> Value {
    json!({
        "$defs": {
            "Priority": {"enum": ["low", "medium", "high"], "title": "Priority", "type": "string"},
            "Person": {"properties": {"name": {"title": "Name", "type": "string"},
                "email": {"anyOf": [{"format": "email", "type": "string"}, {"type": "null"}],
                    "default": null}},
                "required": ["name", "email"], "title": "Person", "type": "object",
                "additionalProperties": false},
            "Step": {"properties": {"explanation": {"type": "string"},
                "output": {"type": "string"},
                "substeps": {"items": {"$ref": "#/$defs/Step"}, "type": "array"}},
                "required": ["explanation", "output", "substeps"], "type": "object",
                "additionalProperties": false}
        },
        "properties": {
            "title": {"maxLength": 40, "minLength": 3, "title": "Title", "type": "string"},
            "when": {"format": "date-time", "type": "string"},
            "day": {"format": "date", "type": "string"},
            "id": {"format": "uuid", "type": "string"},
            "link": {"format": "uri", "type": "string", "minLength": 1},
            "priority": {"$ref": "#/$defs/Priority"},
            "owner": {"$ref": "#/$defs/Person"},
            "attendees": {"items": {"$ref": "#/$defs/Person"}, "type": "array",
                "minItems": 1, "maxItems": 3},
            "backup": {"anyOf": [{"$ref": "#/$defs/Person"}, {"type": "null"}]},
            "steps": {"items": {"$ref": "#/$defs/Step"}, "type": "array"},
            "score": {"exclusiveMinimum": 0, "maximum": 1, "type": "number"},
            "count": {"minimum": 1, "maximum": 10, "type": "integer"},
            "even": {"multipleOf": 2, "exclusiveMaximum": 9, "type": "integer", "minimum": 3},
            "ratio": {"type": "number", "multipleOf": 0.25, "minimum": 1, "maximum": 2},
            "kind": {"const": "meeting", "type": "string"},
            "tags": {"additionalProperties": {"type": "integer"}, "type": "object"},
            "pair": {"maxItems": 2, "minItems": 2, "prefixItems": [{"type": "integer"},
                {"type": "string"}], "type": "array"},
            "unique": {"items": {"type": "integer", "minimum": 0, "maximum": 1000},
                "uniqueItems": true, "minItems": 3, "type": "array"},
            "legacy": {"type": "number", "minimum": 5, "exclusiveMinimum": true, "maximum": 6},
            "nullable": {"type": ["string", "null"]},
            "anything": {},
            "flag": {"type": "boolean"}
        },
        "required": ["title", "when", "day", "id", "link", "priority", "owner", "attendees",
            "backup", "steps", "score", "count", "even", "ratio", "kind", "tags", "pair",
            "unique", "legacy", "nullable", "anything", "flag"],
        "title": "Meeting", "type": "object", "additionalProperties": false
    })
}

#[test]
fn pydantic_models_get_valid_values() {
    let values = always_valid(&pydantic_schema());
    let v = &values[0];
    assert!(v["owner"]["name"].is_string(), "{v}");
    assert!(v["priority"].as_str().is_some(), "{v}");
    // a recursive model ends: deep enough, lists are empty
    let depth = |mut s: &Value| {
        let mut n = 0;
        while let Some(next) = s["steps"].get(0).or_else(|| s["substeps"].get(0)) {
            s = next;
            n += 1;
        }
        n
    };
    assert!(values.iter().all(|v| depth(v) <= SOFT_DEPTH), "{v}");
    // varied: not the same value for every seed
    assert!(values.iter().any(|x| x != v));
    // non-null is given where there is room
    assert!(
        values.iter().all(|v| v["owner"]["email"].is_string()),
        "{v}"
    );
}

#[test]
fn the_same_schema_and_seed_give_the_same_value() {
    let s = pydantic_schema();
    assert_eq!(instance(&s, 7), instance(&s, 7));
    assert_ne!(instance(&s, 7).value, instance(&s, 8).value);
}

#[test]
fn unions_allof_and_legacy_spellings_hold() {
    for schema in [
        json!({"anyOf": [{"type": "integer"}, {"type": "string", "format": "ipv4"}]}),
        json!({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}},
            "required": ["kind"]}, {"type": "boolean"}]}),
        json!({"allOf": [{"$ref": "#/definitions/Base"}, {"properties": {"extra": {"type": "integer"}},
            "required": ["extra"]}], "definitions": {"Base": {"type": "object",
            "properties": {"id": {"type": "string"}}, "required": ["id"]}}}),
        json!({"type": "array", "items": [{"type": "string"}, {"type": "null"}],
            "additionalItems": false, "minItems": 2}),
        json!({"type": "object", "minProperties": 3, "properties": {"a": {"type": "string"}},
            "maxProperties": 5}),
        json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": -500}},
            "required": ["n"]}),
        json!({"type": "string", "minLength": 30, "maxLength": 30}),
        json!({"type": "number", "exclusiveMaximum": 0.001, "exclusiveMinimum": 0}),
        json!(true),
        json!({}),
        json!({"type": "integer", "enum": [3, 5]}),
        json!({"$ref": "#/$defs/a~1b", "$defs": {"a/b": {"type": "boolean"}}}),
    ] {
        always_valid(&schema);
    }
}

#[test]
fn a_property_only_required_is_still_given() {
    let s = json!({"type": "object", "required": ["ghost"], "additionalProperties":
        {"type": "integer"}});
    for v in always_valid(&s) {
        assert!(v["ghost"].is_i64(), "{v}");
    }
}

#[test]
fn unmodelled_references_fall_back_without_failing() {
    let g = instance(&json!({"$ref": "https://example.com/schema.json"}), 1);
    assert!(g.value.is_string(), "{}", g.value);
    let g = instance(&json!({"$ref": "#/nowhere"}), 1);
    assert!(!g.cut);
}

#[test]
fn reference_cycles_end() {
    // a reference to itself with no value in between, and a two-step cycle
    for s in [
        json!({"$ref": "#"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
            "$ref": "#/$defs/a"}),
        json!({"anyOf": [{"$ref": "#"}]}),
        json!({"type": "object", "properties": {"next": {"$ref": "#"}}, "required": ["next"]}),
        json!({"type": "array", "items": {"$ref": "#"}, "minItems": 1}),
    ] {
        let g = instance(&s, 3);
        assert!(g.value.to_string().len() <= MAX_BYTES * 2, "{s}");
    }
    // required recursion cannot be met: cut at the bound, not forever
    let g = instance(
        &json!({"type": "object", "properties": {"next": {"$ref": "#"}}, "required": ["next"]}),
        3,
    );
    assert!(g.cut);
}

#[test]
fn hostile_schemas_are_bounded() {
    let wide: Map<String, Value> = (0..5000)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"type": "string", "minLength": 4096}),
            )
        })
        .collect();
    let names: Vec<String> = (0..5000).map(|i| format!("p{i}")).collect();
    let deep = (0..100).fold(
        json!({"type": "string"}),
        |inner, _| json!({"type": "object", "properties": {"a": inner}, "required": ["a"]}),
    );
    let huge_enum = json!({"enum": ["x".repeat(MAX_BYTES * 4)]});
    let many_items = json!({"type": "array", "minItems": 1_000_000_000u64,
        "items": {"type": "array", "minItems": 1000, "items": {"type": "string", "minLength": 1000}}});
    let long_string = json!({"type": "string", "minLength": 1e12});
    let dup_required = json!({"type": "object", "required": vec!["a"; 100_000]});
    let branches = json!({"anyOf": vec![json!({"type": "integer"}); 100_000]});
    for (what, schema) in [
        (
            "wide",
            json!({"type": "object", "properties": wide, "required": names}),
        ),
        ("deep", deep),
        ("huge enum", huge_enum),
        ("many items", many_items),
        ("long string", long_string),
        ("duplicate required", dup_required),
        ("branches", branches),
    ] {
        let g = instance(&schema, 1);
        let out = g.value.to_string();
        assert!(out.len() <= MAX_BYTES + 8192, "{what}: {} bytes", out.len());
        assert!(
            g.cut || what == "duplicate required" || what == "branches",
            "{what}"
        );
    }
}
