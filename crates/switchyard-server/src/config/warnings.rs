//! The warnings about a valid config beyond those its build gives (`Built::warnings`): what
//! `serve` says at start, one line each, and `switchyard check` lists. Unpriced models;
//! prices without a rate the vendor bills; a price table older than [`STALE_PRICES_DAYS`]
//! when some provider is priced from it; keys without an admin among them.
//!
//! Nothing here refuses: what `serve` refuses is `preflight.rs`.

use std::time::{Duration, SystemTime};

use switchyard::{Gateway, PriceTable};

use super::Config;

/// A price table whose `as_of` is older than this many days is warned about.
pub const STALE_PRICES_DAYS: u64 = 90;

/// The warnings about `cfg` (built into `gw`) as of `now`, beyond the build's own.
#[must_use]
pub fn warnings(cfg: &Config, gw: &Gateway, now: SystemTime) -> Vec<String> {
    let mut warnings = Vec::new();
    for p in gw.providers() {
        if gw.price_of(&p.name).is_none() {
            warnings.push(format!("provider {:?}: model {:?} has no known price: its cost will be reported as unknown", p.name, p.provider.model()));
        }
    }
    warnings.extend(price_warnings(cfg, gw, PriceTable::builtin(), now));
    if !cfg.keys.is_empty() && !cfg.keys.iter().any(|k| k.admin == Some(true)) {
        warnings.push("no [[keys]] entry has admin = true: /admin/* and the dashboard will refuse every caller".to_owned());
    }
    warnings
}

/// Prices that will bill some tokens at the wrong rate: a price (the table's or the
/// config's) without a rate the vendor bills, for providers on the vendor's own endpoint
/// (a custom `base_url` may bill differently); and the table's `as_of` older than
/// [`STALE_PRICES_DAYS`] when some provider is priced from it.
fn price_warnings(cfg: &Config, gw: &Gateway, table: &PriceTable, now: SystemTime) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut from_table = false;
    for prov in &cfg.providers {
        let Some(price) = gw.price_of(&prov.name) else {
            continue;
        };
        let model = prov.model.as_deref().unwrap_or_default();
        let entry = table.lookup(model);
        from_table |= prov.price.is_none() && entry.is_some();
        if prov.base_url.is_some() || entry.is_some_and(|e| e.embeddings) {
            continue;
        }
        let missing = price.missing_rates(&prov.kind);
        if !missing.is_empty() {
            let origin = if prov.price.is_some() {
                "the config's price"
            } else {
                "prices.json"
            };
            warnings.push(format!(
                "provider {:?}: {origin} for model {model:?} has no {} rate, though {} bills it: those tokens are priced at the plain input (or cache-write) rate instead; set it in the provider's price",
                prov.name,
                missing.join(", "),
                prov.kind
            ));
        }
    }
    if from_table {
        warnings.extend(stale_prices(&table.as_of, now));
    }
    warnings
}

/// A warning when `as_of` (`YYYY-MM-DD`) is more than [`STALE_PRICES_DAYS`] before `now`,
/// or is not a date.
fn stale_prices(as_of: &str, now: SystemTime) -> Option<String> {
    let Some(read) = switchyard::provider::anthropic::parse_rfc3339(&format!("{as_of}T00:00:00Z"))
    else {
        return Some(format!(
            "prices.json's as_of {as_of:?} is not a date: how old its prices are is unknown"
        ));
    };
    let age = now.duration_since(read).unwrap_or(Duration::ZERO);
    let days = age.as_secs() / 86_400;
    (days > STALE_PRICES_DAYS).then(|| {
        format!(
            "prices.json is dated {as_of}, {days} days ago (more than {STALE_PRICES_DAYS}): vendors may have changed their prices; upgrade switchyard or set prices in the config"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{build_gateway, parse, Wiring};

    /// What `check` lists beyond the build's warnings: an unpriced model, a missing admin
    /// key, a price table past its age.
    #[test]
    fn warns_of_unpriced_models_no_admin_key_and_old_prices() {
        let text = "[[providers]]\nname = \"house\"\nkind = \"openai\"\nmodel = \"in-house-7b\"\napi_key_env = \"SY_TEST_KEY\"\n\
                    [[providers]]\nname = \"gpt\"\nkind = \"openai\"\nmodel = \"gpt-4.1-mini\"\napi_key_env = \"SY_TEST_KEY\"\n\
                    [[routes]]\nname = \"main\"\nproviders = [\"house\", \"gpt\"]\n\
                    [[keys]]\nname = \"team\"\nsha256 = \"3b5d7c8e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c\"\nroutes = [\"*\"]\n";
        let cfg = parse(text, "test").unwrap();
        let env = |_: &str| Some("sk-test".to_owned());
        let built = build_gateway(&cfg, &env, false, Wiring::default()).unwrap();
        let as_of = parse_date(&PriceTable::builtin().as_of);
        let fresh = warnings(&cfg, &built.gateway, as_of);
        assert_eq!(fresh.len(), 2, "{fresh:?}");
        assert!(
            fresh[0].contains("\"house\": model \"in-house-7b\" has no known price"),
            "{fresh:?}"
        );
        assert!(
            fresh[1].starts_with("no [[keys]] entry has admin = true"),
            "{fresh:?}"
        );
        let later = as_of + Duration::from_secs(86_400 * (STALE_PRICES_DAYS + 1));
        let old = warnings(&cfg, &built.gateway, later);
        assert!(
            old.iter().any(|w| w.starts_with("prices.json is dated")),
            "{old:?}"
        );
    }

    #[test]
    fn a_price_table_date_that_is_not_a_date_is_warned_about() {
        assert_eq!(
            stale_prices("not-a-date", SystemTime::UNIX_EPOCH).unwrap(),
            "prices.json's as_of \"not-a-date\" is not a date: how old its prices are is unknown"
        );
    }

    fn parse_date(as_of: &str) -> SystemTime {
        switchyard::provider::anthropic::parse_rfc3339(&format!("{as_of}T00:00:00Z")).unwrap()
    }
}
