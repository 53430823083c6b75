//! Keys a Messages body carries that the dialect does not model, and the beta rule for them
//! (`docs/dialects.md`, "Keys under a beta").
//!
//! Without an `anthropic-beta` header such a key is refused by its path, as Anthropic
//! refuses it. With one (any value), it is accepted: the client's own body, which an
//! Anthropic provider sends as written, still holds it (Anthropic validates it); another
//! vendor gets the request without it and the answer names it in `x-switchyard-ignored`,
//! unless the key is known to change the answer's contract ([`CONTRACT_FIELDS`]), when only
//! Anthropic providers may answer (`Native::required`); a block of a type the dialect does
//! not model is Anthropic's alone the same way ([`Ignored::unknown_block`]). So a new beta
//! needs no gateway release. Owns the record of one object's unknown keys ([`UnknownKeys`]) and the record of
//! what a request's answer names or only Anthropic serves ([`Ignored`]: names cut, and
//! counted, [`NAMED`]); not the decision for a modelled field, which is the decoder's
//! (`super`).

use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::extra_inputs;
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;

/// Top-level fields Anthropic defines (SDK 2.15's betas) that the dialect does not model and
/// that change what the answer is, so that no other vendor can stand in: `compaction` makes
/// the answer a compaction block (`stop_reason: "compaction"`), and `thread` makes the
/// conversation one Anthropic holds (only the new turn is sent). Every other unknown field
/// is taken to be a hint (`fallbacks`, `diagnostics`, `billing_policy`, ...): a client
/// that asked for it still gets a valid, useful answer without it.
pub(super) const CONTRACT_FIELDS: &[&str] = &["compaction", "thread"];

/// How many unknown keys one object's record keeps by name (the first found).
const KEPT: usize = 8;
/// How many distinct unknown keys a request names one by one in `x-switchyard-ignored`;
/// past it, a scope's keys are named `scope.*`.
pub(super) const NAMED: usize = 8;
/// The longest key named as itself (longer ones are `scope.*`).
const NAME_BYTES: usize = 64;

/// The keys of one JSON object the dialect does not model, in the order found: the first
/// [`KEPT`] by name, and whether there were more. Deserialized from the object's remaining
/// entries (`#[serde(flatten)]`); their values are skipped, never kept.
#[derive(Debug, Default)]
pub(super) struct UnknownKeys {
    names: Vec<String>,
    more: bool,
}

impl UnknownKeys {
    /// No unknown keys.
    pub(super) const fn none() -> Self {
        Self {
            names: Vec::new(),
            more: false,
        }
    }

    /// Record `key` (by name while fewer than [`KEPT`] are kept).
    pub(super) fn push(&mut self, key: &str) {
        if self.names.len() < KEPT {
            self.names.push(key.to_owned());
        } else {
            self.more = true;
        }
    }

    /// The first unknown key.
    pub(super) fn first(&self) -> Option<&str> {
        self.names.first().map(String::as_str)
    }

    /// The kept names, and whether there were more.
    pub(super) fn names(&self) -> (&[String], bool) {
        (&self.names, self.more)
    }
}

impl<'de> Deserialize<'de> for UnknownKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = UnknownKeys;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UnknownKeys, A::Error> {
                let mut keys = UnknownKeys::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    map.next_value::<IgnoredAny>()?;
                    keys.push(&key);
                }
                Ok(keys)
            }
        }
        d.deserialize_map(Keys)
    }
}

/// Whether `key` can be named as itself in a header: short, letters, digits and `_`.
pub(super) fn nameable(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= NAME_BYTES
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Fields the request used that the shared shape does not carry (`x-switchyard-ignored`),
/// each named once; and, under a beta, what only an Anthropic provider can serve.
#[derive(Debug, Default)]
pub(in crate::http::dialects::messages) struct Ignored {
    names: Vec<String>,
    /// The request carries `anthropic-beta`: keys the dialect does not model are named
    /// (or kept for Anthropic), not refused (this module).
    beta: bool,
    /// Unknown keys named as themselves so far (at most [`NAMED`]).
    named: usize,
    /// Paths of what changes the answer's contract and only Anthropic serves.
    anthropic_only: Vec<String>,
}

impl Ignored {
    /// Whether the request carries a beta.
    pub(super) fn beta(&self) -> bool {
        self.beta
    }
}

impl Ignored {
    /// For a request with (`beta`) or without an `anthropic-beta` header.
    pub(in crate::http::dialects::messages) fn new(beta: bool) -> Self {
        Self {
            beta,
            ..Self::default()
        }
    }

    pub(super) fn add(&mut self, name: &str) {
        if !self.names.iter().any(|n| n == name) {
            self.names.push(name.to_owned());
        }
    }

    pub(super) fn add_if(&mut self, used: bool, name: &str) {
        if used {
            self.add(name);
        }
    }

    /// An unknown key of `scope` (`tools`, `text`, `messages`; `""` at the top level):
    /// `scope.key` while few are named and the key is plain, else `scope.*`.
    pub(super) fn add_key(&mut self, scope: &str, key: &str) {
        let single = nameable(key) && self.named < NAMED;
        let key = if single { key } else { "*" };
        let name = if scope.is_empty() {
            key.to_owned()
        } else {
            format!("{scope}.{key}")
        };
        if !self.names.contains(&name) {
            self.named += usize::from(single);
            self.names.push(name);
        }
    }

    /// The unknown keys of the object at path `at` (`messages.1.content.0`): without a
    /// beta, Anthropic's 400 naming the first by its path; with one, each named under
    /// `scope`.
    pub(super) fn unknown(
        &mut self,
        keys: &UnknownKeys,
        at: &str,
        scope: &str,
    ) -> Result<(), ApiError> {
        let Some(first) = keys.first() else {
            return Ok(());
        };
        if !self.beta {
            let path = format!("{at}.{}", clip(first, ECHO_BYTES));
            return Err(extra_inputs(&path, &path));
        }
        let (names, more) = keys.names();
        for key in names {
            self.add_key(scope, key);
        }
        if more {
            self.add_key(scope, "*");
        }
        Ok(())
    }

    /// A block at `at` of a type the dialect does not model: without a beta, `refusal`
    /// (today's 400 for it, which names its path); with one, only Anthropic can serve the
    /// request, by the block's `type` path (`messages.0.content.1.type`). No other vendor
    /// can be given a block the gateway does not understand without changing what the
    /// model sees, so it is neither dropped nor named.
    pub(super) fn unknown_block(
        &mut self,
        at: &str,
        refusal: impl FnOnce() -> ApiError,
    ) -> Result<(), ApiError> {
        if !self.beta {
            return Err(refusal());
        }
        self.anthropic_only(format!("{at}.type"));
        Ok(())
    }

    /// Something only an Anthropic provider can serve (under a beta), by its path (the
    /// first [`NAMED`] kept: they name the 400 of a route without one).
    pub(super) fn anthropic_only(&mut self, path: String) {
        if self.anthropic_only.len() < NAMED && !self.anthropic_only.contains(&path) {
            self.anthropic_only.push(path);
        }
    }

    /// The top-level fields the body had that the dialect does not define. Without a
    /// beta they are returned as they are (refused, or passed through by the route:
    /// `Messages::prepare`); with one, those known to change the answer's contract
    /// ([`CONTRACT_FIELDS`]) are kept for Anthropic alone and the others named.
    pub(in crate::http::dialects::messages) fn top_level(
        &mut self,
        unknown: Vec<String>,
    ) -> Vec<String> {
        if !self.beta {
            return unknown;
        }
        for field in unknown {
            if CONTRACT_FIELDS.contains(&field.as_str()) {
                self.anthropic_only(field);
            } else {
                self.add_key("", &field);
            }
        }
        Vec::new()
    }

    /// The names, in the order first seen, and the paths only Anthropic can serve.
    pub(in crate::http::dialects::messages) fn into_parts(self) -> (Vec<String>, Vec<String>) {
        (self.names, self.anthropic_only)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Block {
        #[allow(dead_code)]
        text: String,
        #[serde(flatten)]
        other: UnknownKeys,
    }

    #[test]
    fn unknown_keys_are_recorded_in_order_and_bounded() {
        let b: Block =
            serde_json::from_str(r#"{"zed": [1, {"a": 2}], "text": "x", "alpha": null}"#).unwrap();
        assert_eq!(
            b.other.names(),
            (&["zed".to_owned(), "alpha".to_owned()][..], false)
        );
        assert_eq!(b.other.first(), Some("zed"));
        let many: serde_json::Map<String, serde_json::Value> = (0..1000)
            .map(|i| (format!("k{i}"), serde_json::Value::Null))
            .chain([("text".to_owned(), "x".into())])
            .collect();
        let b: Block = serde_json::from_value(serde_json::Value::Object(many)).unwrap();
        let (names, more) = b.other.names();
        assert_eq!(names.len(), KEPT);
        assert!(more);
        let b: Block = serde_json::from_str(r#"{"text": "x"}"#).unwrap();
        assert_eq!(b.other.first(), None);
    }

    #[test]
    fn only_short_plain_keys_are_nameable() {
        assert!(nameable("task_budget"));
        assert!(!nameable(""));
        assert!(!nameable("a-b"));
        assert!(!nameable("x\r\nset-cookie: a"));
        assert!(!nameable(&"k".repeat(65)));
    }
}
