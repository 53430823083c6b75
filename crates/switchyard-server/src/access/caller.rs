//! Who a request was authenticated as ([`Caller`]): a configured key
//! (`crate::access::keys`) or a database key (`crate::access::dynamic`), with the routes it
//! may use, its limits and its place among its requests in flight.

use std::collections::HashSet;

use crate::access::error::AccessError;
use crate::access::in_flight::{InFlight, KeySlot};
use crate::access::limits::KeyLimits;

/// The caller a request was authenticated as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The key's configured name.
    pub name: String,
    pub(crate) routes: Option<HashSet<String>>,
    /// Its budget and rate limits.
    pub limits: KeyLimits,
    /// May read the admin endpoints and the dashboard's data.
    pub admin: bool,
    /// The key's requests in flight and its cap.
    pub in_flight: InFlight,
}

impl Caller {
    /// A caller from its parts (a database key's: `crate::access::dynamic`; never admin).
    #[must_use]
    pub(crate) fn from_parts(
        name: String,
        routes: Option<HashSet<String>>,
        limits: KeyLimits,
        in_flight: InFlight,
    ) -> Self {
        Self {
            name,
            routes,
            limits,
            admin: false,
            in_flight,
        }
    }

    /// May this caller use `route`?
    #[must_use]
    pub fn allows(&self, route: &str) -> bool {
        self.routes.as_ref().is_none_or(|r| r.contains(route))
    }

    /// May this caller use any of `routes` (the configured routes' names)?
    pub fn allows_any<'a>(&self, mut routes: impl Iterator<Item = &'a str>) -> bool {
        self.routes.is_none() || routes.any(|r| self.allows(r))
    }

    /// A place among the key's requests in flight, held until the request is over.
    ///
    /// # Errors
    /// 429 when the key has its `max_in_flight` requests in flight already.
    pub fn enter(&self) -> Result<KeySlot, AccessError> {
        self.in_flight.enter(&self.name)
    }
}
