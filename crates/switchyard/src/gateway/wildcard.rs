//! Wildcard routes: the model a client names after a route's prefix (`openai/*` →
//! `openai/gpt-4.1-mini`), checked against the route's allow-list and resolved to its own
//! slot of the route's template provider.
//!
//! A model's first calls are a **trial**: a slot built for the request by the template's
//! [`super::ModelFactory`], reported as provider `{template}/*` (one name per template,
//! whatever the client names), with no breaker and nothing kept. Once a call answers, the
//! model is **kept**: a slot named `{template}/{model}` (at most the route's `max_models`),
//! and the answer is reported under that name. A kept slot is its own provider to the
//! breaker, the price table, budgets, the ledger and observers, so one failing model never
//! opens its siblings' circuit; one unused for [`MODEL_IDLE`] gives its place up when a new
//! model needs it. So models that never answer (a misspelt or made-up name, a dead
//! endpoint) take no place, and a place taken is given back. Prices, output limits and the
//! reasoning flag come from the price table's entry for the resolved model; the template's
//! own overrides are for its own model and do not carry over. Ordinary routes never come
//! here: their lookup is the exact-name map alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::{Gateway, Slot};
use crate::error::GatewayError;
use crate::route::{ModelRefusal, Route};

/// How long a kept wildcard model may go unused before its place may be given to another
/// (it is dropped only when a new model needs the room, and never while a request uses it).
pub const MODEL_IDLE: Duration = Duration::from_secs(15 * 60);

/// A kept model's slot and when a request last resolved it.
struct Kept {
    slot: Arc<Slot>,
    used: Instant,
}

/// The models a wildcard route keeps, by slot name.
#[derive(Default)]
pub(super) struct Resolved {
    slots: Mutex<HashMap<String, Kept>>,
}

impl Resolved {
    /// Every slot kept now.
    pub(super) fn all(&self) -> Vec<Arc<Slot>> {
        self.slots
            .lock()
            .map(|s| s.values().map(|k| Arc::clone(&k.slot)).collect())
            .unwrap_or_default()
    }

    /// The slot called `name`, if kept.
    pub(super) fn get(&self, name: &str) -> Option<Arc<Slot>> {
        Some(Arc::clone(&self.slots.lock().ok()?.get(name)?.slot))
    }

    /// The slot kept as `name`, marked used at `now`.
    fn touch(&self, name: &str, now: Instant) -> Option<Arc<Slot>> {
        let mut slots = self.slots.lock().ok()?;
        let kept = slots.get_mut(name)?;
        kept.used = now;
        Some(Arc::clone(&kept.slot))
    }

    /// Whether one more model fits under `max` at `now`, idle ones given up first.
    fn has_room(&self, max: usize, now: Instant) -> bool {
        self.slots
            .lock()
            .is_ok_and(|mut slots| make_room(&mut slots, max, now))
    }

    /// Keep `slot` as `name` (or the one another request kept meanwhile); `None` when the
    /// route keeps `max` models, none of them idle.
    fn keep(&self, name: &str, slot: Arc<Slot>, max: usize, now: Instant) -> Option<Arc<Slot>> {
        let mut slots = self.slots.lock().ok()?;
        if let Some(kept) = slots.get_mut(name) {
            kept.used = now;
            return Some(Arc::clone(&kept.slot));
        }
        if !make_room(&mut slots, max, now) {
            return None;
        }
        let kept = Kept {
            slot: Arc::clone(&slot),
            used: now,
        };
        slots.insert(name.to_owned(), kept);
        Some(slot)
    }
}

/// Give up idle models (unused for [`MODEL_IDLE`], no request holding them) while the
/// route keeps `max` or more: true when one more fits.
fn make_room(slots: &mut HashMap<String, Kept>, max: usize, now: Instant) -> bool {
    if slots.len() < max {
        return true;
    }
    slots.retain(|_, k| {
        now.saturating_duration_since(k.used) < MODEL_IDLE || Arc::strong_count(&k.slot) > 1
    });
    slots.len() < max
}

impl Gateway {
    /// The wildcard route whose prefix `requested` starts with, once its model is checked.
    pub(super) fn wildcard_route(&self, requested: &str) -> Result<&Arc<Route>, GatewayError> {
        for route in &self.inner.wildcards {
            let Some(w) = route.wildcard.as_ref() else {
                continue;
            };
            let Some(model) = w.model_of(requested) else {
                continue;
            };
            return match w.admit(model) {
                Ok(()) => Ok(route),
                Err(why) => Err(refused(route, model, why)),
            };
        }
        Err(GatewayError::UnknownRoute {
            name: requested.to_owned(),
            known: self.inner.route_order.clone(),
        })
    }

    /// The template slot for the model `requested` names on a wildcard `route` (built on
    /// first use); `None` on an ordinary route.
    pub(super) fn resolve(
        &self,
        route: &Route,
        requested: &str,
    ) -> Result<Option<Arc<Slot>>, GatewayError> {
        let Some(w) = route.wildcard.as_ref() else {
            return Ok(None);
        };
        let model = w.model_of(requested).unwrap_or_default();
        if let Err(why) = w.admit(model) {
            return Err(refused(route, model, why));
        }
        let (Some(template), Some(resolved)) = (
            route.providers.first().and_then(|p| self.slot(p)),
            self.inner.resolved.get(&route.name),
        ) else {
            return Err(GatewayError::InvalidRequest(format!(
                "route {:?} has no template provider",
                route.name
            )));
        };
        let name = format!("{}/{model}", template.spec.name);
        let now = self.inner.clock.now();
        if let Some(slot) = resolved.touch(&name, now) {
            return Ok(Some(slot));
        }
        if !resolved.has_room(w.max_models, now) {
            return Err(GatewayError::ModelRefused {
                route: route.name.clone(),
                model: model.to_owned(),
                reason: format!(
                    "the route already calls its most distinct models ({}, its max_models; one unused for {} minutes gives its place up)",
                    w.max_models,
                    MODEL_IDLE.as_secs() / 60
                ),
                malformed: false,
            });
        }
        // a trial: built for this request (outside any lock: a template may read a
        // credential file as it is built), kept only once it answers
        let trial_name = format!("{}/*", template.spec.name);
        let mut trial = self.build_for(template, &trial_name, model)?;
        trial.keep_as = Some(name);
        Ok(Some(Arc::new(trial)))
    }

    /// A trial on wildcard `route` answered: its slot under its own name, kept while the
    /// route has room (else made for this request alone). Any other slot as it is.
    pub(super) fn keep_answered(&self, route: &Route, trial: Arc<Slot>) -> Arc<Slot> {
        let Some(name) = trial.keep_as.clone() else {
            return trial;
        };
        let mut spec = trial.spec.clone();
        spec.name.clone_from(&name);
        let named = Arc::new(Slot::new(spec, &self.inner.prices));
        let (Some(w), Some(resolved)) = (
            route.wildcard.as_ref(),
            self.inner.resolved.get(&route.name),
        ) else {
            return named;
        };
        let now = self.inner.clock.now();
        resolved
            .keep(&name, Arc::clone(&named), w.max_models, now)
            .unwrap_or(named)
    }

    /// A slot like `template` calling `model`, priced by the table.
    fn build_for(&self, template: &Slot, name: &str, model: &str) -> Result<Slot, GatewayError> {
        let factory = template.spec.models.as_ref().ok_or_else(|| {
            GatewayError::InvalidRequest(format!(
                "provider {:?} cannot call other models",
                template.spec.name
            ))
        })?;
        let provider = factory(model).map_err(|e| {
            GatewayError::InvalidRequest(format!("model {model:?} cannot be called: {e}"))
        })?;
        let mut spec = template.spec.clone();
        name.clone_into(&mut spec.name);
        spec.provider = provider;
        spec.price = None;
        spec.max_output_tokens = None;
        spec.reasoning = None;
        spec.models = None;
        Ok(Slot::new(spec, &self.inner.prices))
    }
}

/// The client's error for a model `route` does not call.
fn refused(route: &Route, model: &str, why: ModelRefusal) -> GatewayError {
    let allowed = route
        .wildcard
        .as_ref()
        .map(|w| w.models.join(", "))
        .unwrap_or_default();
    let slashes = route.wildcard.as_ref().is_some_and(|w| w.slashes);
    let reason = match why {
        ModelRefusal::Malformed if slashes => format!(
            "a model must be 1 to {} characters of letters, digits and . _ : @ + -, in segments joined by single / (none starting with . or -, no ..)",
            crate::route::MAX_WILDCARD_MODEL_BYTES
        ),
        ModelRefusal::Malformed => format!(
            "a model must be 1 to {} characters of letters, digits and . _ : @ + - (not starting with . or -, no ..; this route's provider takes no /)",
            crate::route::MAX_WILDCARD_MODEL_BYTES
        ),
        ModelRefusal::NotAllowed => format!("the route allows: {allowed}"),
    };
    GatewayError::ModelRefused {
        route: route.name.clone(),
        model: model.to_owned(),
        reason,
        malformed: why == ModelRefusal::Malformed,
    }
}
