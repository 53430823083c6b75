//! Active health checks, as metrics and as the last result per provider.
//!
//! Owns [`HealthChecks`]: `switchyard_health_checks_total{provider,result}` (`result` is
//! `ok` or an error kind: a fixed set), `switchyard_health_check_latency_seconds{provider}`
//! and `switchyard_health_spend_usd{provider}` (completion checks; never in a budget), and
//! the last check of each provider for `/admin/health` and the dashboard. Fed by
//! [`Metrics`](super::Metrics)' observer hook; the checks themselves run in
//! `crate::cli::serve::checks`.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use switchyard::health::CheckReport;

use super::{call_histogram, HistogramFamily, ProviderLabels, UsdCounter};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabels {
    provider: String,
    result: &'static str,
}

/// Health-check series and the last check per provider.
pub(super) struct HealthChecks {
    checks: Family<CheckLabels, Counter>,
    latency: HistogramFamily<ProviderLabels>,
    spend: Family<ProviderLabels, UsdCounter>,
    last: Mutex<BTreeMap<String, CheckReport>>,
}

impl HealthChecks {
    pub(super) fn new() -> Self {
        Self {
            checks: Family::default(),
            latency: Family::new_with_constructor(call_histogram),
            spend: Family::default(),
            last: Mutex::new(BTreeMap::new()),
        }
    }

    pub(super) fn register(&self, r: &mut Registry) {
        r.register(
            "switchyard_health_checks",
            "Active health checks by provider and result (ok or the error kind)",
            self.checks.clone(),
        );
        r.register(
            "switchyard_health_check_latency_seconds",
            "Duration of each active health check",
            self.latency.clone(),
        );
        r.register(
            "switchyard_health_spend_usd",
            "What completion health checks cost, in US dollars (not in any budget)",
            self.spend.clone(),
        );
    }

    /// A check finished (checks run every few seconds per provider: no handle cache).
    pub(super) fn record(&self, report: &CheckReport) {
        let provider = ProviderLabels {
            provider: report.provider.clone(),
        };
        self.checks
            .get_or_create(&CheckLabels {
                provider: report.provider.clone(),
                result: report.result_label(),
            })
            .inc();
        self.latency
            .get_or_create(&provider)
            .observe(report.latency.as_secs_f64());
        if let Some(cost) = report.cost {
            self.spend.get_or_create(&provider).add(cost);
        }
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(report.provider.clone(), report.clone());
    }

    pub(super) fn last(&self) -> BTreeMap<String, CheckReport> {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
