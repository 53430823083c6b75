//! The config reloads' series (`crate::reload`): how many were applied and refused, when
//! the last one was applied, and which file is in force (a hash of its text).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

/// The reload series.
#[derive(Default)]
pub(super) struct Reloads {
    total: Family<ResultLabels, Counter>,
    last_success: Gauge<f64, AtomicU64>,
    hash: Gauge,
}

impl Reloads {
    pub(super) fn register(&self, r: &mut Registry) {
        r.register(
            "switchyard_config_reloads",
            "Config reloads (SIGHUP, POST /admin/reload, the file watch) by result: ok (swapped in) or error (refused, nothing changed)",
            self.total.clone(),
        );
        r.register(
            "switchyard_config_last_reload_success_timestamp_seconds",
            "Unix time the config in force was loaded (at start, or by the last applied reload)",
            self.last_success.clone(),
        );
        r.register(
            "switchyard_config_hash",
            "The first 48 bits of the SHA-256 of the config text in force (0: the embedded default): tells replicas running different files apart",
            self.hash.clone(),
        );
    }

    pub(super) fn applied(&self, hash48: u64, at_unix_s: f64) {
        self.total
            .get_or_create(&ResultLabels { result: "ok" })
            .inc();
        self.loaded(hash48, at_unix_s);
    }

    pub(super) fn loaded(&self, hash48: u64, at_unix_s: f64) {
        self.last_success.set(at_unix_s);
        self.hash
            .set(i64::try_from(hash48 & 0xffff_ffff_ffff).unwrap_or(0));
    }

    pub(super) fn refused(&self) {
        self.total
            .get_or_create(&ResultLabels { result: "error" })
            .inc();
    }
}
