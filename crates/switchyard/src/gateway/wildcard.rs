//! Wildcard routes: the model a client names after a route's prefix (`openai/*` →
//! `openai/gpt-4.1-mini`), checked against the route's allow-list and resolved to its own
//! slot of the route's template provider.
//!
//! Each resolved model is a slot named `{template}/{model}` built once by the template's
//! [`super::ModelFactory`] and kept (at most the route's `max_models`): the breaker, the
//! price table, budgets, the ledger and observers all see it as a provider of its own, so
//! one failing model never opens its siblings' circuit. Its price, output limit and
//! reasoning flag come from the price table's entry for the resolved model; the template's
//! own overrides are for its own model and do not carry over. Ordinary routes never come
//! here: their lookup is the exact-name map alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{Gateway, Slot};
use crate::error::GatewayError;
use crate::route::{ModelRefusal, Route};

/// The slots a wildcard route has resolved so far, by slot name.
#[derive(Default)]
pub(super) struct Resolved {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

impl Resolved {
    /// Every slot resolved so far.
    pub(super) fn all(&self) -> Vec<Arc<Slot>> {
        self.slots
            .lock()
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The slot called `name`, if resolved.
    pub(super) fn get(&self, name: &str) -> Option<Arc<Slot>> {
        self.slots.lock().ok()?.get(name).cloned()
    }

    /// Whether slot `name` is resolved, or there is room for it under `max`.
    fn room_for(&self, name: &str, max: usize) -> Room {
        let Ok(slots) = self.slots.lock() else {
            return Room::Full;
        };
        match slots.get(name) {
            Some(slot) => Room::Resolved(Arc::clone(slot)),
            None if slots.len() >= max => Room::Full,
            None => Room::Free,
        }
    }
}

/// What [`Resolved::room_for`] found.
enum Room {
    Resolved(Arc<Slot>),
    Full,
    Free,
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
        let full = || GatewayError::ModelRefused {
            route: route.name.clone(),
            model: model.to_owned(),
            reason: format!(
                "the route already calls its most distinct models ({}, its max_models)",
                w.max_models
            ),
            malformed: false,
        };
        match resolved.room_for(&name, w.max_models) {
            Room::Resolved(slot) => return Ok(Some(slot)),
            Room::Full => return Err(full()),
            Room::Free => {}
        }
        // built outside the lock: a template may read a credential file as it is built
        let built = Arc::new(self.build_for(template, &name, model)?);
        let Ok(mut slots) = resolved.slots.lock() else {
            return Err(GatewayError::InvalidRequest(
                "wildcard state poisoned".into(),
            ));
        };
        if let Some(slot) = slots.get(&name) {
            return Ok(Some(Arc::clone(slot))); // another request built it meanwhile
        }
        if slots.len() >= w.max_models {
            return Err(full());
        }
        slots.insert(name, Arc::clone(&built));
        Ok(Some(built))
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
