//! What a Redis does when it runs out of memory, read before a fleet trusts it with money.
//!
//! Owns [`eviction_policy`]: the `maxmemory-policy` of the Redis at a URL (`CONFIG GET`,
//! else the `maxmemory_policy` line of `INFO memory`, which managed services that disable
//! `CONFIG` still answer), and what it means for budget state ([`Eviction`]). Opens its own
//! short-lived connection; never touches a store's.

use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::{AsyncConnectionConfig, Client};

use super::credentials;

/// A Redis's `maxmemory-policy`, as it bears on budget state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Eviction {
    /// `noeviction`: a full Redis refuses writes and deletes nothing.
    Never,
    /// A `volatile-*` policy (named): only keys with an expiry go — rate-limit windows,
    /// breakers, probe and health-check leases, stored conversations — never budget books,
    /// which have none.
    Volatile(String),
    /// An `allkeys-*` policy (named): any key may go, budget books included (a budget
    /// evicted is a budget reset).
    AllKeys(String),
    /// The policy could not be read: why (Redis not answering, `CONFIG` and `INFO` both
    /// refused). Never a password.
    Unknown(String),
}

impl Eviction {
    /// The words `serve` and `check` say about it for the Redis at `masked_url`: `Err`
    /// for a policy that can evict budget books (they refuse to start), `Ok(Some)` for a
    /// warning, `Ok(None)` when all is well.
    ///
    /// # Errors
    /// An `allkeys-*` policy.
    pub fn verdict(&self, masked_url: &str) -> Result<Option<String>, String> {
        match self {
            Self::Never => Ok(None),
            Self::AllKeys(p) => Err(format!(
                "refusing to keep budgets in the Redis at {masked_url}: its maxmemory-policy is {p}, which evicts any key when memory runs short, budget books included (a budget evicted is a budget reset); set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf), and give stored conversations a Redis of their own with [state] store_url"
            )),
            Self::Volatile(p) => Ok(Some(format!(
                "the Redis at {masked_url} has maxmemory-policy {p}: budgets are safe (their books never expire), but when memory runs short it evicts rate-limit windows, breakers and leases; noeviction keeps them"
            ))),
            Self::Unknown(why) => Ok(Some(format!(
                "could not check the maxmemory-policy of the Redis at {masked_url} ({why}): if it is an allkeys-* policy, budget books can be evicted (a budget reset); make sure it is noeviction"
            ))),
        }
    }
}

/// The eviction policy of the Redis at `url`, waiting at most `timeout` in all.
pub async fn eviction_policy(url: &str, timeout: Duration) -> Eviction {
    let secrets = credentials::secrets(url);
    let scrub = |m: String| secrets.iter().fold(m, |m, s| s.scrub(&m));
    if let Some(problem) = credentials::problem(url) {
        return Eviction::Unknown(problem);
    }
    let read = async {
        let client = Client::open(url).map_err(|e| format!("invalid Redis URL: {e}"))?;
        let config = AsyncConnectionConfig::new().set_connection_timeout(Some(timeout));
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| format!("Redis is not answering: {e}"))?;
        read_policy(&mut conn).await
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(policy)) => classify(&policy),
        Ok(Err(why)) => Eviction::Unknown(scrub(why)),
        Err(_) => Eviction::Unknown(format!(
            "Redis did not answer within {} ms",
            timeout.as_millis()
        )),
    }
}

/// `CONFIG GET maxmemory-policy`, else `INFO memory`'s line.
async fn read_policy(conn: &mut MultiplexedConnection) -> Result<String, String> {
    let config: Result<Vec<String>, _> = ::redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query_async(conn)
        .await;
    let config_error = match config {
        Ok(pair) if pair.len() == 2 => return Ok(pair[1].clone()),
        Ok(other) => format!("CONFIG GET answered {other:?}"),
        Err(e) => format!("CONFIG GET refused: {e}"),
    };
    let info: Result<String, _> = ::redis::cmd("INFO").arg("memory").query_async(conn).await;
    let line = info.as_deref().ok().and_then(|text| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix("maxmemory_policy:"))
            .map(str::to_owned)
    });
    line.ok_or_else(|| match info {
        Err(e) => format!("{config_error}; INFO refused: {e}"),
        Ok(_) => format!("{config_error}; INFO has no maxmemory_policy"),
    })
}

fn classify(policy: &str) -> Eviction {
    let policy = policy.trim().to_ascii_lowercase();
    if policy == "noeviction" {
        Eviction::Never
    } else if policy.starts_with("volatile-") {
        Eviction::Volatile(policy)
    } else if policy.starts_with("allkeys-") {
        Eviction::AllKeys(policy)
    } else {
        Eviction::Unknown(format!("unknown maxmemory-policy {policy:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_are_sorted_by_what_they_may_evict() {
        assert_eq!(classify("noeviction"), Eviction::Never);
        assert_eq!(
            classify("allkeys-lru"),
            Eviction::AllKeys("allkeys-lru".into())
        );
        assert_eq!(
            classify("ALLKEYS-LFU"),
            Eviction::AllKeys("allkeys-lfu".into())
        );
        assert_eq!(
            classify("volatile-ttl"),
            Eviction::Volatile("volatile-ttl".into())
        );
        assert!(matches!(classify("bogus"), Eviction::Unknown(_)));
        let url = "redis://:***@host:6379";
        assert!(Eviction::AllKeys("allkeys-lru".into())
            .verdict(url)
            .unwrap_err()
            .contains("maxmemory-policy is allkeys-lru"));
        assert!(Eviction::Never.verdict(url).unwrap().is_none());
        let unknown = Eviction::Unknown("CONFIG GET refused".into()).verdict(url);
        assert!(unknown.unwrap().unwrap().contains("could not check"));
    }

    #[tokio::test]
    async fn an_unreachable_redis_cannot_be_checked_and_no_password_is_shown() {
        let url = "redis://:hunter2-secret@127.0.0.1:1";
        let Eviction::Unknown(why) = eviction_policy(url, Duration::from_millis(500)).await else {
            panic!("nothing answers on port 1")
        };
        assert!(!why.contains("hunter2"), "{why}");
    }
}
