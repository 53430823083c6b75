//! The rows the admin API reads and writes, what can go wrong with them, and the audit
//! trail every change leaves (`audit`), in the same transaction as the change and its
//! NOTIFY.

use serde::Serialize;
use serde_json::Value;
use tokio_postgres::error::SqlState;
use tokio_postgres::Transaction;

/// A timestamp column as RFC 3339 text (UTC, seconds).
pub(crate) fn ts(column: &str) -> String {
    format!("to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
}

/// A timestamp column as Unix milliseconds.
pub(crate) fn ms(column: &str) -> String {
    format!("(extract(epoch FROM {column}) * 1000)::int8")
}

/// What a database operation can fail with, as the admin API answers it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached (503).
    #[error("the database is unreachable: {0}")]
    Unavailable(String),
    /// No such row (404).
    #[error("no {0} with id {1}")]
    NotFound(&'static str, i64),
    /// The change conflicts with what is there (409).
    #[error("{0}")]
    Conflict(String),
    /// A field's value is refused (400 naming it).
    #[error("{1}")]
    Invalid(&'static str, String),
    /// Anything else the database said (500).
    #[error("database error: {0}")]
    Other(String),
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        if let Some(db) = e.as_db_error() {
            let code = db.code();
            if *code == SqlState::UNIQUE_VIOLATION {
                return Self::Conflict(db.message().to_owned());
            }
            if *code == SqlState::INVALID_DATETIME_FORMAT
                || *code == SqlState::DATETIME_FIELD_OVERFLOW
            {
                return Self::Invalid("time", db.message().to_owned());
            }
            return Self::Other(db.message().to_owned());
        }
        let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
        let text = e.to_string();
        if e.is_closed() || io || text.starts_with("error connecting") || text.contains("timed out")
        {
            return Self::Unavailable(text);
        }
        Self::Other(text)
    }
}

/// A key's settings, as created or patched.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KeyFields {
    /// Its name.
    pub name: String,
    /// Its team, by id or name.
    pub team: Option<TeamRef>,
    /// Routes it may use (`"*"`: all).
    pub routes: Vec<String>,
    /// Spend limit per period, dollars.
    pub budget_usd: Option<f64>,
    /// `total`, `day` or `month`.
    pub budget_period: String,
    /// Requests per minute.
    pub rpm: Option<i64>,
    /// Tokens per minute.
    pub tpm: Option<i64>,
    /// When it stops working (RFC 3339).
    pub expires_at: Option<String>,
    /// Free-form JSON object.
    pub metadata: Value,
}

/// A team named by id or by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeamRef {
    /// By id.
    Id(i64),
    /// By name.
    Name(String),
}

/// A key as the admin API shows it (never its token or hash).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyRecord {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its team's id.
    pub team_id: Option<i64>,
    /// Its team's name.
    pub team: Option<String>,
    /// Routes it may use.
    pub routes: Vec<String>,
    /// Spend limit per period, dollars.
    pub budget_usd: Option<f64>,
    /// `total`, `day` or `month`.
    pub budget_period: String,
    /// Requests per minute.
    pub rpm: Option<i64>,
    /// Tokens per minute.
    pub tpm: Option<i64>,
    /// When it stops working.
    pub expires_at: Option<String>,
    /// Free-form JSON.
    pub metadata: Value,
    /// When it was made.
    pub created_at: String,
    /// When it was revoked (it no longer works).
    pub revoked_at: Option<String>,
    /// Until when the token it had before its last rotation still works.
    pub previous_valid_until: Option<String>,
}

impl KeyRecord {
    /// The settings it was made with (to patch).
    #[must_use]
    pub fn fields(&self) -> KeyFields {
        KeyFields {
            name: self.name.clone(),
            team: self.team_id.map(TeamRef::Id),
            routes: self.routes.clone(),
            budget_usd: self.budget_usd,
            budget_period: self.budget_period.clone(),
            rpm: self.rpm,
            tpm: self.tpm,
            expires_at: self.expires_at.clone(),
            metadata: self.metadata.clone(),
        }
    }
}

/// A team's settings, as created or patched.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TeamFields {
    /// Its name.
    pub name: String,
    /// Spend limit per period across its keys, dollars.
    pub budget_usd: Option<f64>,
    /// `total`, `day` or `month`.
    pub budget_period: String,
    /// Requests per minute across its keys.
    pub rpm: Option<i64>,
    /// Tokens per minute across its keys.
    pub tpm: Option<i64>,
    /// Free-form JSON object.
    pub metadata: Value,
}

/// A team as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeamRecord {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Spend limit per period across its keys, dollars.
    pub budget_usd: Option<f64>,
    /// `total`, `day` or `month`.
    pub budget_period: String,
    /// Requests per minute across its keys.
    pub rpm: Option<i64>,
    /// Tokens per minute across its keys.
    pub tpm: Option<i64>,
    /// Free-form JSON.
    pub metadata: Value,
    /// When it was made.
    pub created_at: String,
    /// Its keys not revoked.
    pub keys: i64,
}

impl TeamRecord {
    /// The settings it was made with (to patch).
    #[must_use]
    pub fn fields(&self) -> TeamFields {
        TeamFields {
            name: self.name.clone(),
            budget_usd: self.budget_usd,
            budget_period: self.budget_period.clone(),
            rpm: self.rpm,
            tpm: self.tpm,
            metadata: self.metadata.clone(),
        }
    }
}

/// A change made: logged once its transaction has committed ([`Change::log`]).
#[must_use = "log the change after its transaction commits"]
pub(crate) struct Change {
    actor: String,
    action: &'static str,
    target: String,
}

impl Change {
    /// The change's log line (without secrets: records never carry tokens or hashes).
    pub(crate) fn log(&self) {
        let (actor, action, target) = (&self.actor, self.action, &self.target);
        tracing::info!(target: "switchyard::admin", actor, action, target, "admin change");
    }
}

/// Who changed what: an audit row and the change's NOTIFY, in the change's transaction.
pub(crate) async fn audit(
    tx: &Transaction<'_>,
    actor: &str,
    action: &'static str,
    target: &str,
    before: Option<Value>,
    after: Option<Value>,
) -> Result<Change, StoreError> {
    tx.execute(
        "INSERT INTO audit (actor, action, target, before, after) VALUES ($1, $2, $3, $4, $5)",
        &[&actor, &action, &target, &before, &after],
    )
    .await?;
    tx.execute("SELECT pg_notify($1, $2)", &[&super::CHANNEL, &target])
        .await?;
    Ok(Change {
        actor: actor.to_owned(),
        action,
        target: target.to_owned(),
    })
}
