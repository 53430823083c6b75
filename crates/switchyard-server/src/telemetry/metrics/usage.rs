//! Series labelled by who asked and who answered: requests, tokens and cost by route,
//! client key, provider and the provider's configured model; requests in flight; the
//! upstreams' own rate-limit headroom.
//!
//! Owns [`UsageLabels`], which keeps the label sets bounded: a route, key or provider is
//! named only when the config names it (else `other`; `none` when there is none), the model
//! is the provider's configured model (never the upstream's word), and past
//! [`MAX_USAGE_SERIES`] combinations every new one is counted as `other`. Fed by the
//! request log's tap (`Metrics` is a [`crate::telemetry::log::LogTap`]): one lookup per
//! finished request. Memory stays bounded with the labels: map keys are configured names
//! (or `other` / `none`), so there are at most routes × keys × providers combinations.
//! Database keys (`crate::database`) are `other` on purpose: they are made at run time and
//! may number 100,000; their per-key spend is the database's `GET /admin/spend`
//! (docs/telemetry.md says why).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rustc_hash::{FxHashMap, FxHashSet};

use super::Handles;
use crate::telemetry::log::LogEntry;

/// Most (route, key, provider) combinations given their own series.
pub const MAX_USAGE_SERIES: usize = 2000;
/// The label value of anything not configured, or past the cap.
const OTHER: &str = "other";
/// The label value where there is nothing to name (no key, no provider answered).
const NONE: &str = "none";

/// The configured names that may appear as label values.
#[derive(Debug, Clone, Default)]
pub struct UsageLabels {
    /// Route names.
    pub routes: HashSet<String>,
    /// Client key names.
    pub keys: HashSet<String>,
    /// Provider name → its configured model.
    pub models: HashMap<String, String>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Labels {
    route: String,
    key: String,
    provider: String,
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    route: String,
    key: String,
    provider: String,
    model: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    route: String,
    key: String,
    provider: String,
    model: String,
    direction: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HeadroomLabels {
    provider: String,
    limit: &'static str,
}

/// One (route, key, provider) combination's series.
#[derive(Clone)]
struct Series {
    answered: Counter,
    failed: Counter,
    input: Counter,
    output: Counter,
    cost: Counter<f64, AtomicU64>,
}

/// The labelled families, the in-flight gauge and the headroom gauges.
pub(super) struct Usage {
    /// Replaced whole when a reload changes the config's names.
    labels: RwLock<Names>,
    requests: Family<OutcomeLabels, Counter>,
    tokens: Family<TokenLabels, Counter>,
    cost: Family<Labels, Counter<f64, AtomicU64>>,
    series: Handles<String, Series>,
    /// Combinations seen (each made once, under `series`' lock).
    made: AtomicUsize,
    in_flight: Gauge,
    headroom: Family<HeadroomLabels, Gauge>,
}

impl Usage {
    pub(super) fn new(labels: UsageLabels) -> Self {
        Self {
            labels: RwLock::new(Names::of(labels)),
            requests: Family::default(),
            tokens: Family::default(),
            cost: Family::default(),
            series: Handles::new(),
            made: AtomicUsize::new(0),
            in_flight: Gauge::default(),
            headroom: Family::default(),
        }
    }

    pub(super) fn register(&self, r: &mut Registry) {
        r.register(
            "switchyard_key_requests",
            "Finished requests by route, client key, answering provider and its configured model, and outcome (answered or failed); names not in the config are counted as other",
            self.requests.clone(),
        );
        r.register(
            "switchyard_key_tokens",
            "Tokens by route, client key, provider, model and direction (input or output)",
            self.tokens.clone(),
        );
        r.register(
            "switchyard_key_cost_usd",
            "Spend in US dollars by route, client key, provider and model (priced calls)",
            self.cost.clone(),
        );
        r.register(
            "switchyard_in_flight_requests",
            "Requests the gateway has begun and not yet logged",
            self.in_flight.clone(),
        );
        r.register(
            "switchyard_upstream_ratelimit_remaining",
            "What the provider's last response said is left of its rate limit (x-ratelimit-remaining-*, anthropic-ratelimit-*-remaining), by limit",
            self.headroom.clone(),
        );
    }

    /// Name what `labels` names from now on (a reload); series already made stay.
    pub(super) fn set_labels(&self, labels: UsageLabels) {
        *self.labels.write().unwrap_or_else(PoisonError::into_inner) = Names::of(labels);
    }

    pub(super) fn started(&self) {
        self.in_flight.inc();
    }

    /// `provider` is a configured name (the gateway's), bounded by construction.
    pub(super) fn headroom(&self, provider: &str, limit: &'static str, left: u64) {
        let labels = HeadroomLabels {
            provider: provider.to_owned(),
            limit,
        };
        self.headroom
            .get_or_create(&labels)
            .set(i64::try_from(left).unwrap_or(i64::MAX));
    }

    /// A finished request: out of flight, and counted under its labels.
    pub(super) fn finished(&self, e: &LogEntry) {
        self.in_flight.dec();
        let names = self.labels.read().unwrap_or_else(PoisonError::into_inner);
        let l = labels_of(&names, e);
        // the series' key, built without the formatting machinery (every request)
        let mut key = String::with_capacity(l.route.len() + l.key.len() + l.provider.len() + 2);
        for (i, part) in [l.route, l.key, l.provider].into_iter().enumerate() {
            if i > 0 {
                key.push('\0');
            }
            key.push_str(part);
        }
        let s = self.series.get(key.as_str(), || {
            // (under the map's write lock: count, never read the map here)
            let over_cap = self.made.fetch_add(1, Ordering::Relaxed) >= MAX_USAGE_SERIES;
            let l = if over_cap {
                LabelRefs {
                    route: OTHER,
                    key: OTHER,
                    provider: OTHER,
                    model: OTHER,
                }
            } else {
                l
            };
            (key.clone(), self.series_for(&l.owned()))
        });
        if e.error.is_none() && e.status < 400 {
            s.answered.inc();
        } else {
            s.failed.inc();
        }
        if let Some(u) = &e.usage {
            s.input.inc_by(u.input_tokens);
            s.output.inc_by(u.output_tokens);
        }
        if let Some(cost) = e.cost_usd {
            s.cost.inc_by(cost.max(0.0));
        }
    }

    fn series_for(&self, l: &Labels) -> Series {
        let outcome = |outcome| OutcomeLabels {
            route: l.route.clone(),
            key: l.key.clone(),
            provider: l.provider.clone(),
            model: l.model.clone(),
            outcome,
        };
        let tokens = |direction| TokenLabels {
            route: l.route.clone(),
            key: l.key.clone(),
            provider: l.provider.clone(),
            model: l.model.clone(),
            direction,
        };
        Series {
            answered: self.requests.get_or_create_owned(&outcome("answered")),
            failed: self.requests.get_or_create_owned(&outcome("failed")),
            input: self.tokens.get_or_create_owned(&tokens("input")),
            output: self.tokens.get_or_create_owned(&tokens("output")),
            cost: self.cost.get_or_create_owned(l),
        }
    }
}

/// The entry's label values, each configured or `other` / `none` (borrowed: owned
/// copies are made once per series, not per request).
fn labels_of<'a>(names: &'a Names, e: &'a LogEntry) -> LabelRefs<'a> {
    let route = if names.routes.contains(&e.route) {
        e.route.as_str()
    } else {
        OTHER
    };
    let key = match &e.key {
        None => NONE,
        Some(k) if names.keys.contains(k) => k.as_str(),
        Some(_) => OTHER,
    };
    let (provider, model) = match &e.provider {
        None => (NONE, NONE),
        Some(p) => match names.models.get(p) {
            Some(m) => (p.as_str(), m.as_str()),
            None => (OTHER, OTHER),
        },
    };
    LabelRefs {
        route,
        key,
        provider,
        model,
    }
}

/// [`UsageLabels`] as looked up per request: hashed with FxHash, not SipHash (the sets hold
/// only configured names; a client-chosen name is looked up, never inserted, so it cannot
/// make a lookup slower than the configured names' own collisions).
struct Names {
    routes: FxHashSet<String>,
    keys: FxHashSet<String>,
    models: FxHashMap<String, String>,
}

impl Names {
    fn of(labels: UsageLabels) -> Self {
        Self {
            routes: labels.routes.into_iter().collect(),
            keys: labels.keys.into_iter().collect(),
            models: labels.models.into_iter().collect(),
        }
    }
}

/// [`Labels`] borrowed from a request's entry and the configured names.
#[derive(Clone, Copy)]
struct LabelRefs<'a> {
    route: &'a str,
    key: &'a str,
    provider: &'a str,
    model: &'a str,
}

impl LabelRefs<'_> {
    fn owned(self) -> Labels {
        Labels {
            route: self.route.to_owned(),
            key: self.key.to_owned(),
            provider: self.provider.to_owned(),
            model: self.model.to_owned(),
        }
    }
}
