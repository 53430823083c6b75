//! Where the gateway keeps message threads: the state backend's key-value part
//! (`crate::http::dialects::kept`, like stored Responses API answers), so that a thread
//! continues on any replica of a fleet sharing Redis, and its leases.
//!
//! A thread is one record under `threads:<thread id>`: the client key that made it, the
//! `system` and `tools` it was created with, every message and every answer as the client
//! sent and got them, and the ids of its answers (the last is the one it can be continued
//! from). An answer's id names its thread (`msg_` and 48 hex digits: the thread's 32, then
//! the turn's 16, all from the OS's random source), so a `continue` reads one record. The
//! record is written whole after each answered turn and lives `[threads] ttl` from then;
//! one larger than `max_thread_bytes` is not kept. One request at a time may continue from
//! an answer: it holds the lease `threads:<answer id>` (`SharedState::try_lease`, Redis
//! `SET` if absent, with expiry) until its answer is kept or it fails.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchyard::state::{Cleanup, SharedState};

use crate::http::dialects::kept;
use crate::http::state::AppState;

/// How long a `continue` may hold its lease: past it (a replica that died mid-answer) the
/// answer it continues from can be continued again.
pub(super) const CONTINUE_LEASE: Duration = Duration::from_secs(600);

/// Hex digits of a thread's id, and of a turn's.
const THREAD_HEX: usize = 32;
const TURN_HEX: usize = 16;

/// One thread: its conversation so far.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Record {
    /// The client key's name that made it (`None` without keys): another key finds nothing.
    pub key: Option<String>,
    /// `system` as the creating request sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Value>,
    /// `tools` as the creating request sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
    /// Every message and every answer, oldest first, as Messages API turns.
    pub messages: Vec<Value>,
    /// The ids of the answers, oldest first: the last is the only one a `continue` may
    /// name; an earlier one has been continued already.
    pub answers: Vec<String>,
}

impl kept::Owned for Record {
    fn owner(&self) -> Option<&str> {
        self.key.as_deref()
    }
}

impl Record {
    /// The id of the last answer.
    pub(super) fn head(&self) -> Option<&str> {
        self.answers.last().map(String::as_str)
    }
}

fn kv_key(thread: &str) -> String {
    format!("threads:{thread}")
}

/// `n` random lower-case hex digits (from the OS; the process's generator if it fails).
fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n.div_ceil(2)];
    if getrandom::fill(&mut bytes).is_err() {
        bytes.iter_mut().for_each(|b| *b = fastrand::u8(..));
    }
    let mut out = hex::encode(bytes);
    out.truncate(n);
    out
}

/// A new thread's id.
pub(super) fn new_thread() -> String {
    random_hex(THREAD_HEX)
}

/// A new answer's id in `thread`.
pub(super) fn answer_id(thread: &str) -> String {
    format!("msg_{thread}{}", random_hex(TURN_HEX))
}

/// The thread an answer's id names, if it is one of ours.
pub(super) fn thread_of(id: &str) -> Option<&str> {
    let digits = id.strip_prefix("msg_")?;
    let ours = digits.len() == THREAD_HEX + TURN_HEX
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    ours.then(|| &digits[..THREAD_HEX])
}

/// The thread `thread` and its size as stored, if it is there and `key` may see it.
pub(super) async fn load(
    state: &AppState,
    thread: &str,
    key: Option<&str>,
) -> Option<(Record, usize)> {
    kept::load(state, &kv_key(thread), key).await
}

/// [`load`], for a request that continues the thread: its JSON held to the request's
/// memory bounds before it is parsed (`what` names the field that brings it in).
///
/// # Errors
/// 413 naming the bound it would pass (`crate::http::dialects::expansion`).
pub(super) async fn load_within(
    state: &AppState,
    thread: &str,
    ctx: &crate::http::dialects::Ctx,
    what: &str,
) -> Result<Option<(Record, usize)>, crate::http::error::ApiError> {
    kept::load_within(state, &kv_key(thread), ctx, what).await
}

/// Keep `record` as `thread` for `[threads] ttl`: false when it is larger than
/// `max_thread_bytes` or the store refused it.
pub(super) async fn save(state: &AppState, thread: &str, record: &Record) -> bool {
    let limits = state.threads;
    kept::save(state, &kv_key(thread), record, limits.ttl, limits.max_bytes).await
}

/// The right to continue from one answer, held by one request until it is given back
/// (explicitly once its answer is kept, or by `Drop` when the request failed or its
/// client went away) or it lapses after [`CONTINUE_LEASE`].
pub(super) struct Lease {
    state: Arc<dyn SharedState>,
    name: String,
    /// Random per request: never a client-chosen id, so no two requests share it.
    holder: String,
    held: bool,
}

impl Lease {
    /// Take the lease on continuing from `answer`, unless another request holds it.
    pub(super) async fn take(state: &AppState, answer: &str) -> Option<Lease> {
        let store = Arc::clone(state.gateway.state());
        let name = format!("threads:{answer}");
        let holder = random_hex(TURN_HEX);
        let now = state.gateway.clock().unix_ms();
        store
            .try_lease(&name, &holder, CONTINUE_LEASE, now)
            .await
            .then(|| Lease {
                state: store,
                name,
                holder,
                held: true,
            })
    }

    /// Give it back now.
    pub(super) async fn release(mut self) {
        self.held = false;
        self.state.release_lease(&self.name, &self.holder).await;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.held {
            self.state.cleanup(Cleanup::ReleaseLease {
                name: std::mem::take(&mut self.name),
                holder: std::mem::take(&mut self.holder),
            });
        }
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("name", &self.name)
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use switchyard::provider::scripted::ScriptedProvider;
    use switchyard::{Gateway, ProviderSpec, Route};

    use super::*;
    use crate::access::keys::KeyStore;
    use crate::http::state::Shared;
    use crate::telemetry::metrics::Metrics;

    fn state(max_bytes: usize) -> AppState {
        let gateway = Gateway::builder()
            .provider(ProviderSpec::new("p", Arc::new(ScriptedProvider::new("m"))))
            .route(Route::new("r", &["p"]))
            .build()
            .unwrap();
        let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), Arc::new(Metrics::new()));
        shared.threads.max_bytes = max_bytes;
        AppState(Arc::new(shared))
    }

    fn record(key: Option<&str>, text: &str) -> Record {
        Record {
            key: key.map(str::to_owned),
            messages: vec![serde_json::json!({"role": "user", "content": text})],
            answers: vec!["msg_x".into()],
            ..Record::default()
        }
    }

    #[test]
    fn an_answer_id_names_its_thread_and_nothing_else_does() {
        let thread = new_thread();
        assert_eq!(thread.len(), 32);
        let a = answer_id(&thread);
        let b = answer_id(&thread);
        assert_ne!(a, b, "each turn its own id");
        assert_eq!(thread_of(&a), Some(thread.as_str()));
        assert_ne!(new_thread(), thread);
        for other in [
            "msg_req_0123",
            "msg_",
            "",
            &a[..a.len() - 1],
            &format!("{a}0"),
            &a.to_uppercase().replacen("MSG_", "msg_", 1),
            &a.replacen("msg_", "msg-", 1),
            &format!("msg_{}", "é".repeat(24)),
        ] {
            assert_eq!(thread_of(other), None, "{other}");
        }
    }

    #[tokio::test]
    async fn a_thread_is_only_its_keys_and_one_over_the_bound_is_not_kept() {
        let state = state(200);
        assert!(save(&state, "t1", &record(Some("alice"), "hi")).await);
        let (found, size) = load(&state, "t1", Some("alice")).await.unwrap();
        assert_eq!(found.messages, record(None, "hi").messages);
        assert_eq!(size, serde_json::to_vec(&found).unwrap().len());
        assert!(load(&state, "t1", Some("bob")).await.is_none());
        assert!(load(&state, "t1", None).await.is_none());
        assert!(load(&state, "t2", Some("alice")).await.is_none());
        assert!(!save(&state, "t3", &record(None, &"x".repeat(200))).await);
        assert!(load(&state, "t3", None).await.is_none());
    }

    #[tokio::test]
    async fn a_lease_holds_others_off_until_released_or_dropped() {
        let state = state(1000);
        let first = Lease::take(&state, "msg_a").await.expect("free");
        assert!(Lease::take(&state, "msg_a").await.is_none(), "held");
        assert!(
            Lease::take(&state, "msg_b").await.is_some(),
            "one per answer"
        );
        first.release().await;
        let second = Lease::take(&state, "msg_a").await.expect("given back");
        drop(second);
        assert!(
            Lease::take(&state, "msg_a").await.is_some(),
            "dropped: given back"
        );
    }
}
