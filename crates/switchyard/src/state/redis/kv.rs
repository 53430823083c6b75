//! Stored values in Redis (`P:kv:{key}`, `SET PX`) on a connection of their own (to
//! `store_url` when set), falling back to the local mirror while that Redis is away or
//! refuses a write (see the module docs of `super` for what a fleet sees then).

use std::time::Duration;

use ::redis::AsyncCommands as _;

use super::Inner;
use crate::clock::{duration_ms, UnixMillis};

/// How long a stored value's write or read may take before the store degrades: values are
/// larger than breaker state (up to megabytes), so they get more than `op_timeout`.
const KV_OP_TIMEOUT: Duration = Duration::from_secs(2);

impl Inner {
    /// Reconnect the stored values' connection if it is down (from the background task).
    pub(super) async fn kv_reconnect(&self) {
        if self.kv_link.is_connected() {
            return;
        }
        if let Some(conn) = self.kv_link.open().await {
            self.kv_link.up(conn);
        }
    }

    pub(super) async fn kv_put(
        &self,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
        now: UnixMillis,
    ) -> bool {
        if self.kv_link.is_connected() {
            let k = self.keys.kv(key);
            let ms = duration_ms(ttl).max(1);
            let v = value.clone();
            let done: Option<()> = self
                .kv_link
                .call_answered("kv put", KV_OP_TIMEOUT, |mut c| async move {
                    c.pset_ex(k, v, ms).await
                })
                .await;
            if done.is_some() {
                // a value written here while degraded is now stale
                self.mirror.kv_delete_local(key, now);
                return true;
            }
        }
        self.mirror.kv_put_local(key, value, ttl, now)
    }

    pub(super) async fn kv_get(&self, key: &str, now: UnixMillis) -> Option<Vec<u8>> {
        if self.kv_link.is_connected() {
            let k = self.keys.kv(key);
            let got: Option<Option<Vec<u8>>> = self
                .kv_link
                .call_answered(
                    "kv get",
                    KV_OP_TIMEOUT,
                    |mut c| async move { c.get(k).await },
                )
                .await;
            if let Some(Some(v)) = got {
                return Some(v);
            }
        }
        self.mirror.kv_get_local(key, now)
    }

    pub(super) async fn kv_delete(&self, key: &str, now: UnixMillis) -> bool {
        let local = self.mirror.kv_delete_local(key, now);
        if !self.kv_link.is_connected() {
            return local;
        }
        let k = self.keys.kv(key);
        let n: Option<u64> = self
            .kv_link
            .call_answered(
                "kv delete",
                KV_OP_TIMEOUT,
                |mut c| async move { c.del(k).await },
            )
            .await;
        local || n.is_some_and(|n| n > 0)
    }
}
