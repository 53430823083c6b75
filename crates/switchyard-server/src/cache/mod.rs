//! The response cache: answers kept per route, served again for the same request, and
//! served stale when every provider of the route has failed (docs/cache.md).
//!
//! Owns what is cacheable and under which key ([`Cache::plan`]), what is stored
//! ([`storable`]: complete, successful, unrescued answers only), the stores (in process,
//! least recently used first out and bounded in bytes: [`memory`]; or the `[state]` store,
//! Redis for a fleet, each entry with its TTL and bounded in size), and the client's
//! `cache-control` ([`Directives`]). The shared flow (`crate::http::dialects::flow`) asks
//! it before and after the gateway call; a hit is answered there without calling the
//! gateway at all, so it costs nothing upstream and charges no budget.
//!
//! The key is a SHA-256 of the request as the gateway's providers would see it: the
//! dialect, the route, and the decoded request (messages, tools, sampling and format
//! fields, fields passed through, the client's native body) without what does not change
//! the answer (`user`, `metadata`, `stream`, `stream_options`, `store` and the vendors'
//! end-user and prompt-cache identifiers) — plus the client key's name unless the route's
//! scope is `route`. So key A never reads key B's entry.

pub(crate) mod memory;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use switchyard::chat::{CacheNote, CacheStatus, Choice, FinishReason, Thinking, ToolCall};
use switchyard::observe::Outcome;
use switchyard::state::SharedState;
use switchyard::{ChatRequest, ChatResponse, GatewayError, Money, Usage};

/// Default bound on the in-process store: 256 MiB.
pub const DEFAULT_MAX_BYTES: usize = 256 * 1024 * 1024;
/// Default bound on one entry (its answer, encoded): 1 MiB. A larger answer is served but
/// not kept.
pub const DEFAULT_MAX_ENTRY_BYTES: usize = 1024 * 1024;

/// Fields of a request that do not change its answer: left out of the key.
const NOT_IN_KEY: [&str; 8] = [
    "user",
    "metadata",
    "stream",
    "stream_options",
    "store",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
];

/// A route's `cache = { ... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// How long an entry is served as fresh.
    pub ttl: Duration,
    /// How long after that it may still answer when every provider fails (zero: off).
    pub stale_if_error: Duration,
    /// Whose entries a request may read.
    pub scope: Scope,
    /// Cache requests sampled with a temperature above zero and no `seed` too.
    pub any_temperature: bool,
    /// Store answers that call tools too.
    pub tool_calls: bool,
}

/// Whose entries a request may read: its own key's (`key`, the default) or any caller's of
/// the route (`route`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Entries are per client key.
    Key,
    /// Entries are shared by every caller of the route.
    Route,
}

/// Where entries are kept (`[cache] backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// In this process, least recently used first out (`[cache] max_bytes`).
    Memory,
    /// The `[state]` store: Redis for a fleet (each entry with its TTL).
    State,
}

/// The cache of a server: each cached route's policy and the store.
pub struct Cache {
    routes: HashMap<String, Policy>,
    backend: Backend,
    /// Shared with the cache a configuration reload replaces (`Cache::carried_from`).
    memory: Arc<memory::Memory>,
    max_bytes: usize,
    max_entry_bytes: usize,
}

/// What a request's `cache-control` asks of the cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Directives {
    /// `no-cache`: fetch a fresh answer (and store it).
    pub no_cache: bool,
    /// `no-store`: neither read nor write.
    pub no_store: bool,
    /// `max-age=N`: accept an entry at most N seconds old.
    pub max_age: Option<u64>,
}

impl Directives {
    /// The request's `cache-control` directives (unknown ones ignored; a `max-age` that is
    /// not a number of seconds reads as 0: fetch fresh).
    #[must_use]
    pub fn of(headers: &HeaderMap) -> Self {
        let mut d = Self::default();
        for value in headers.get_all(axum::http::header::CACHE_CONTROL) {
            let Ok(text) = value.to_str() else { continue };
            for part in text.split(',') {
                let part = part.trim();
                let (name, arg) = match part.split_once('=') {
                    Some((n, a)) => (n.trim(), Some(a.trim().trim_matches('"'))),
                    None => (part, None),
                };
                if name.eq_ignore_ascii_case("no-cache") {
                    d.no_cache = true;
                } else if name.eq_ignore_ascii_case("no-store") {
                    d.no_store = true;
                } else if name.eq_ignore_ascii_case("max-age") {
                    let secs = arg.and_then(|a| a.parse::<u64>().ok()).unwrap_or(0);
                    d.max_age = Some(d.max_age.map_or(secs, |m| m.min(secs)));
                }
            }
        }
        d
    }
}

/// What the cache does for one request of a cached route.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The entry's key.
    pub key: Arc<str>,
    /// The route's policy.
    pub policy: Policy,
    /// Read a fresh entry before calling the gateway (not with `no-cache`).
    pub read: bool,
    /// The oldest entry a fresh read accepts, in ms (`ttl`, or less with `max-age`).
    pub max_age_ms: u64,
}

/// A stored answer: what the client saw, without the trail of the request that made it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// When it was stored (Unix ms).
    pub stored_ms: u64,
    text: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    refusal: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    system_fingerprint: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    thinking: Vec<Thinking>,
    finish_reason: Option<FinishReason>,
    provider: String,
    model: String,
    usage: Option<Usage>,
    /// What the answer cost, in pico-dollars (`None`: unpriced).
    cost_picos: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    logprobs: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    alternatives: Vec<Choice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_tokens_applied: Option<u32>,
    /// The upstream's answer in the request's native API, when it came natively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    native: Option<Value>,
}

impl Entry {
    fn of(resp: &ChatResponse, now_ms: u64) -> Self {
        Self {
            stored_ms: now_ms,
            text: resp.text.clone(),
            refusal: resp.refusal.clone(),
            system_fingerprint: resp.system_fingerprint.clone(),
            tool_calls: resp.tool_calls.clone(),
            thinking: resp.thinking.clone(),
            finish_reason: resp.finish_reason.clone(),
            provider: resp.provider.clone(),
            model: resp.model.clone(),
            usage: resp.usage,
            cost_picos: resp.cost.map(Money::picos),
            logprobs: resp.logprobs.clone(),
            alternatives: resp.alternatives.clone(),
            max_tokens_applied: resp.max_tokens_applied,
            native: resp.native.as_deref().cloned(),
        }
    }

    /// Seconds since it was stored.
    #[must_use]
    pub fn age_s(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.stored_ms) / 1000
    }

    /// What the stored answer cost when it was made.
    #[must_use]
    pub fn cost(&self) -> Option<Money> {
        self.cost_picos.map(Money::from_picos)
    }

    /// The answer as the gateway's completion, served from the cache: no attempts of its
    /// own (a stale one carries the failed attempts of its request: `attempts`), nothing
    /// spent.
    #[must_use]
    pub fn response(
        &self,
        status: CacheStatus,
        now_ms: u64,
        attempts: Vec<switchyard::observe::Attempt>,
    ) -> ChatResponse {
        ChatResponse {
            text: self.text.clone(),
            refusal: self.refusal.clone(),
            system_fingerprint: self.system_fingerprint.clone(),
            tool_calls: self.tool_calls.clone(),
            thinking: self.thinking.clone(),
            finish_reason: self.finish_reason.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            failed_over: !attempts.is_empty(),
            usage: self.usage,
            cost: Some(Money::ZERO),
            attempts,
            max_tokens_applied: self.max_tokens_applied,
            logprobs: self.logprobs.clone(),
            alternatives: self.alternatives.clone(),
            native: self.native.clone().map(Arc::new),
            cache: Some(CacheNote {
                status,
                age_s: Some(self.age_s(now_ms)),
                saved_usd: self.cost(),
                reason: None,
            }),
            ..ChatResponse::default()
        }
    }

    #[cfg(test)]
    pub(crate) fn for_tests(text: &str, stored_ms: u64) -> Self {
        Self::of(
            &ChatResponse {
                text: text.to_owned(),
                ..ChatResponse::default()
            },
            stored_ms,
        )
    }
}

/// Whether `resp` may be stored: a complete, successful answer (it finished by itself,
/// not at `max_tokens` or a filter), not one a stream's rescue spliced together, not a
/// tool-call turn unless the route stores those, and not an empty one (a stream past its
/// rescue buffer keeps no text).
#[must_use]
pub fn storable(resp: &ChatResponse, policy: &Policy) -> bool {
    let finished = |f: &Option<FinishReason>, calls: bool| match f {
        Some(FinishReason::Stop) => true,
        Some(FinishReason::ToolCalls) => calls && policy.tool_calls,
        _ => false,
    };
    let calls = !resp.tool_calls.is_empty();
    if calls && !policy.tool_calls {
        return false;
    }
    let rescued = resp
        .attempts
        .iter()
        .any(|a| matches!(a.outcome, Outcome::Rescue { .. } | Outcome::Diverged { .. }));
    let empty = resp.text.is_empty() && !calls && resp.refusal.is_empty();
    finished(&resp.finish_reason, calls)
        && !rescued
        && !empty
        && resp.alternatives.iter().all(|c| {
            (c.tool_calls.is_empty() || policy.tool_calls)
                && finished(&c.finish_reason, !c.tool_calls.is_empty())
        })
}

/// Whether a failed request may be answered stale: every provider failed, the deadline
/// passed, or every one was rate limited (not a client's error or its budget).
#[must_use]
pub fn is_outage(err: &GatewayError) -> bool {
    matches!(
        err,
        GatewayError::AllFailed { .. }
            | GatewayError::DeadlineExceeded { .. }
            | GatewayError::RateLimited { .. }
    )
}

impl Cache {
    /// A cache for `routes` (name → policy) kept in `backend`.
    #[must_use]
    pub fn new(
        routes: HashMap<String, Policy>,
        backend: Backend,
        max_bytes: usize,
        max_entry_bytes: usize,
    ) -> Self {
        Self {
            routes,
            backend,
            memory: Arc::new(memory::Memory::new(max_bytes)),
            max_bytes,
            max_entry_bytes,
        }
    }

    /// This cache holding `old`'s entries, when both keep them in memory under the same
    /// bound (a configuration reload: the routes' policies are this cache's, the entries
    /// stay).
    #[must_use]
    pub fn carried_from(mut self, old: &Cache) -> Self {
        if self.backend == Backend::Memory
            && old.backend == Backend::Memory
            && self.max_bytes == old.max_bytes
        {
            self.memory = Arc::clone(&old.memory);
        }
        self
    }

    /// No route cached.
    #[must_use]
    pub fn disabled() -> Self {
        Self::new(
            HashMap::new(),
            Backend::Memory,
            DEFAULT_MAX_BYTES,
            DEFAULT_MAX_ENTRY_BYTES,
        )
    }

    /// The route's policy, when it caches.
    #[must_use]
    pub fn policy(&self, route: &str) -> Option<&Policy> {
        self.routes.get(route)
    }

    /// Entries held in process and what they cost (the memory backend's).
    #[must_use]
    pub fn memory_usage(&self) -> (usize, usize) {
        self.memory.usage()
    }

    /// What the cache does for `req` on `route` (the client's `model` names it: a wildcard
    /// route's model is part of the key) (`None`: the route does not cache), or
    /// why it stands aside (`Err`: the `bypass` reason).
    ///
    /// # Errors
    /// The reason the request bypasses the cache: `no-store`, or `temperature` (sampled
    /// above zero without a `seed` on a route without `any_temperature`).
    pub fn plan(
        &self,
        route: &str,
        model: &str,
        api: &str,
        caller: Option<&str>,
        req: &mut ChatRequest,
        directives: Directives,
    ) -> Option<Result<Plan, &'static str>> {
        let policy = self.routes.get(route)?;
        if directives.no_store {
            return Some(Err("no-store"));
        }
        // unset: the vendor's default, which is above zero for every vendor served
        let sampled = req.temperature.is_none_or(|t| t > 0.0);
        if sampled && req.seed.is_none() && !policy.any_temperature {
            return Some(Err("temperature"));
        }
        let scope = match policy.scope {
            Scope::Key => Some(caller.unwrap_or("")),
            Scope::Route => None,
        };
        let ttl = u64::try_from(policy.ttl.as_millis()).unwrap_or(u64::MAX);
        Some(Ok(Plan {
            key: key(api, model, scope, req).into(),
            policy: policy.clone(),
            read: !directives.no_cache,
            max_age_ms: (directives.max_age).map_or(ttl, |m| m.saturating_mul(1000).min(ttl)),
        }))
    }

    /// A fresh entry for `plan` (no older than its `max_age`).
    pub async fn fresh(
        &self,
        store: &dyn SharedState,
        plan: &Plan,
        now_ms: u64,
    ) -> Option<Arc<Entry>> {
        if !plan.read {
            return None;
        }
        let entry = self.get(store, &plan.key, now_ms).await?;
        let age_ms = now_ms.saturating_sub(entry.stored_ms);
        // `max-age=0` takes only an entry stored this very millisecond
        (age_ms <= plan.max_age_ms).then_some(entry)
    }

    /// An entry for `plan` within `ttl` + `stale_if_error` (when stale answers are on).
    pub async fn stale(
        &self,
        store: &dyn SharedState,
        plan: &Plan,
        now_ms: u64,
    ) -> Option<Arc<Entry>> {
        if plan.policy.stale_if_error.is_zero() {
            return None;
        }
        let entry = self.get(store, &plan.key, now_ms).await?;
        let limit = plan.policy.ttl + plan.policy.stale_if_error;
        (u128::from(now_ms.saturating_sub(entry.stored_ms)) < limit.as_millis()).then_some(entry)
    }

    /// Keep `resp` for `plan` when it may be stored: true when it was.
    pub async fn put(
        &self,
        store: &dyn SharedState,
        plan: &Plan,
        resp: &ChatResponse,
        now_ms: u64,
    ) -> bool {
        if !storable(resp, &plan.policy) {
            return false;
        }
        let entry = Entry::of(resp, now_ms);
        let Ok(bytes) = serde_json::to_vec(&entry) else {
            return false;
        };
        if bytes.len() > self.max_entry_bytes {
            return false;
        }
        let keep = plan.policy.ttl + plan.policy.stale_if_error;
        match self.backend {
            Backend::Memory => {
                let until =
                    now_ms.saturating_add(u64::try_from(keep.as_millis()).unwrap_or(u64::MAX));
                self.memory
                    .put(Arc::clone(&plan.key), Arc::new(entry), bytes.len(), until);
                true
            }
            Backend::State => store.kv_put(&plan.key, bytes, keep, now_ms).await,
        }
    }

    async fn get(&self, store: &dyn SharedState, key: &str, now_ms: u64) -> Option<Arc<Entry>> {
        match self.backend {
            Backend::Memory => self.memory.get(key, now_ms),
            Backend::State => {
                let bytes = store.kv_get(key, now_ms).await?;
                // an entry another version wrote, or damaged: a miss
                serde_json::from_slice(&bytes).ok().map(Arc::new)
            }
        }
    }
}

/// The entry key: `cache:` and the hex SHA-256 of the dialect, the route, the caller (per
/// key scope) and the request without [`NOT_IN_KEY`].
///
/// The request is written straight into the hash (no JSON tree is built): the fields left
/// out are taken out of it for the write and put back after, so a field the shared shape
/// gains is in the key unless it is named here.
fn key(api: &str, route: &str, caller: Option<&str>, req: &mut ChatRequest) -> String {
    fn part(h: &mut Sha256, bytes: &[u8]) {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    let mut h = Sha256::new();
    part(&mut h, b"switchyard-cache-v2");
    part(&mut h, api.as_bytes());
    part(&mut h, route.as_bytes());
    match caller {
        Some(c) => {
            part(&mut h, b"key");
            part(&mut h, c.as_bytes());
        }
        None => part(&mut h, b"route"),
    }
    if let Some(extra) = &req.passthrough {
        for (name, value) in extra.iter() {
            if !NOT_IN_KEY.contains(&name.as_str()) {
                part(&mut h, name.as_bytes());
                part(&mut h, value.to_string().as_bytes());
            }
        }
    }
    if let Some(native) = &req.native {
        part(&mut h, native.kind.as_bytes());
        for (name, raw) in native.body.iter() {
            if !NOT_IN_KEY.contains(&name) {
                part(&mut h, name.as_bytes());
                part(&mut h, raw.get().as_bytes());
            }
        }
    }
    let kept = (
        req.user.take(),
        req.metadata.take(),
        req.store.take(),
        req.safety_identifier.take(),
        req.prompt_cache_key.take(),
        req.prompt_cache_retention.take(),
    );
    // last, and self-delimiting (JSON): written straight into the hash
    part(&mut h, b"request");
    // writing into a hash cannot fail; a request serde could not write hashes as far as it got
    let _ = serde_json::to_writer(Hashing(&mut h), &*req);
    (
        req.user,
        req.metadata,
        req.store,
        req.safety_identifier,
        req.prompt_cache_key,
        req.prompt_cache_retention,
    ) = kept;
    format!("cache:{}", hex::encode(h.finalize()))
}

/// An `io::Write` into a hash.
struct Hashing<'a>(&'a mut Sha256);

impl std::io::Write for Hashing<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
