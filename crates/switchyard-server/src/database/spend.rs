//! Spend: request-log lines become spend rows, and reports read the daily aggregates.
//!
//! The writer reads the request log (`crate::telemetry::log`: a line is in the file before
//! its request is answered) from a checkpoint kept in the database (`spend_checkpoint`, by
//! host and path), in batches of at most [`MAX_BATCH_LINES`] complete lines. One
//! transaction inserts a batch's rows (`ON CONFLICT DO NOTHING` on request id and arrival
//! time), adds only the rows it inserted to `spend_daily` and `spend_team_daily` (and a
//! trigger adds them to the narrower aggregates per key, per model, and per route and
//! provider: `migrations.rs` V2), and moves the checkpoint: a crash before the commit
//! leaves all of them as they were; a checkpoint lost or reset re-reads lines whose rows
//! are already there and counts nothing twice. Reports read the narrowest aggregate that
//! answers them ([`table_for`]). While the database is down lines wait in the log on disk
//! and flush when it is back. Rows are written for answered requests (a provider answered),
//! with cost NULL when it is unknown (never 0).

use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use switchyard::Money;
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};
use tokio_postgres::types::ToSql;
use tokio_util::sync::CancellationToken;

use super::{Database, StoreError};

/// Most lines one batch (one transaction) carries.
pub const MAX_BATCH_LINES: usize = 2000;
/// Most bytes read from the log for one batch.
const MAX_READ_BYTES: usize = 4 * 1024 * 1024;
/// How often the writer looks for new lines when it has caught up.
const POLL: Duration = Duration::from_millis(500);
/// The longest wait between attempts while the database is down.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Run until `stop`: ingest `path`'s new lines, waiting on disk while the database is away.
pub async fn run(db: Arc<Database>, path: PathBuf, stop: CancellationToken) {
    let source = source_name(&path);
    let mut backoff = POLL;
    loop {
        // cancelling a batch mid-way is safe: its transaction never commits
        let batch = tokio::select! {
            () = stop.cancelled() => return,
            r = ingest_once(&db, &path, &source, MAX_BATCH_LINES) => r,
        };
        let wait = match batch {
            Ok(n) if n.lines == MAX_BATCH_LINES => Duration::ZERO,
            Ok(_) => {
                backoff = POLL;
                POLL
            }
            Err(e) => {
                tracing::debug!(target: "switchyard::database", "spend writer: {e}");
                backoff = (backoff * 2).min(MAX_BACKOFF);
                backoff
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// The checkpoint's name for a log: this host's name and the log's path.
#[must_use]
pub fn source_name(path: &Path) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    format!("{host}:{}", path.display())
}

/// What one batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ingested {
    /// Complete lines read.
    pub lines: usize,
    /// Spend rows offered (answered requests among the lines).
    pub rows: usize,
    /// Rows inserted (the rest were there already).
    pub inserted: u64,
    /// Lines that were not request-log entries (skipped).
    pub unreadable: usize,
}

/// Ingest one batch of at most `max_lines` lines after `source`'s checkpoint.
///
/// # Errors
/// The database is unreachable or refused the batch (the checkpoint did not move).
pub async fn ingest_once(
    db: &Database,
    path: &Path,
    source: &str,
    max_lines: usize,
) -> Result<Ingested, StoreError> {
    let r = async {
        let mut client = db.client().await?;
        let row = client
            .query_opt(
                "SELECT offset_bytes FROM spend_checkpoint WHERE source = $1",
                &[&source],
            )
            .await?;
        let offset = row.map_or(0, |r| u64::try_from(r.get::<_, i64>(0)).unwrap_or(0));
        let Some((chunk, start)) = read_after(path, offset).await else {
            return Ok(Ingested::default());
        };
        let (lines, used) = complete_lines(&chunk, max_lines);
        if lines.is_empty() {
            return Ok(Ingested::default());
        }
        let mut batch = Batch::default();
        let mut unreadable = 0;
        for line in &lines {
            match serde_json::from_slice::<SpendLine<'_>>(line) {
                Ok(entry) => batch.push(&entry, db),
                Err(_) => unreadable += 1,
            }
        }
        let tx = client.transaction().await?;
        let inserted = batch.insert(&tx).await?;
        let next = i64::try_from(start + used as u64).unwrap_or(i64::MAX);
        tx.execute(
            "INSERT INTO spend_checkpoint (source, offset_bytes) VALUES ($1, $2) \
             ON CONFLICT (source) DO UPDATE SET offset_bytes = $2, updated_at = now()",
            &[&source, &next],
        )
        .await?;
        tx.commit().await?;
        Ok(Ingested {
            lines: lines.len(),
            rows: batch.ids.len(),
            inserted,
            unreadable,
        })
    }
    .await;
    db.observe(&r);
    r
}

/// Up to [`MAX_READ_BYTES`] of `path` after `offset`, and where they start (0 when the
/// file is shorter than the checkpoint: a new file, read from its start). `None` when the
/// file cannot be read.
async fn read_after(path: &Path, offset: u64) -> Option<(Vec<u8>, u64)> {
    let mut file = tokio::fs::File::open(path).await.ok()?;
    let len = file.metadata().await.ok()?.len();
    let start = if len < offset { 0 } else { offset };
    file.seek(SeekFrom::Start(start)).await.ok()?;
    let mut chunk = Vec::new();
    (&mut file)
        .take(MAX_READ_BYTES as u64)
        .read_to_end(&mut chunk)
        .await
        .ok()?;
    Some((chunk, start))
}

/// The first `max` complete (newline-ended) lines of `chunk`, and the bytes they take. A
/// line longer than the whole chunk is skipped as one unreadable line, so the writer never
/// sticks on it.
fn complete_lines(chunk: &[u8], max: usize) -> (Vec<&[u8]>, usize) {
    let mut lines = Vec::new();
    let mut used = 0;
    while lines.len() < max {
        let Some(end) = memchr::memchr(b'\n', &chunk[used..]) else {
            break;
        };
        let line = &chunk[used..used + end];
        if !line.iter().all(u8::is_ascii_whitespace) {
            lines.push(line);
        }
        used += end + 1;
    }
    if lines.is_empty() && used == 0 && chunk.len() >= MAX_READ_BYTES {
        return (vec![&chunk[..0]], chunk.len());
    }
    (lines, used)
}

/// What a spend row takes from a request-log line (`crate::telemetry::log::LogEntry`, whose
/// field names these are): read borrowed where the text has no escapes, the rest of the
/// line (attempts, errors, trace ids) skipped rather than built.
#[derive(Deserialize)]
struct SpendLine<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    time_ms: u64,
    #[serde(borrow)]
    route: Cow<'a, str>,
    #[serde(borrow, default)]
    key: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    provider: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<Tokens>,
    #[serde(default)]
    cost_usd: Option<f64>,
}

/// A log line's `usage`, as far as spend counts it.
#[derive(Deserialize)]
struct Tokens {
    input_tokens: u64,
    output_tokens: u64,
}

/// A batch's rows, column by column (sent as arrays: one statement per batch).
#[derive(Default)]
struct Batch {
    ids: Vec<String>,
    at_ms: Vec<i64>,
    keys: Vec<Option<String>>,
    teams: Vec<Option<String>>,
    routes: Vec<String>,
    providers: Vec<Option<String>>,
    models: Vec<Option<String>>,
    input: Vec<i64>,
    output: Vec<i64>,
    cost: Vec<Option<i64>>,
}

impl Batch {
    /// An answered request's row; others are not spend.
    fn push(&mut self, e: &SpendLine<'_>, db: &Database) {
        if e.provider.is_none() {
            return;
        }
        let tokens = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let owned = |s: &Option<Cow<'_, str>>| s.as_deref().map(str::to_owned);
        self.ids.push(e.id.clone().into_owned());
        self.at_ms
            .push(i64::try_from(e.time_ms).unwrap_or(i64::MAX));
        self.teams
            .push(e.key.as_deref().and_then(|k| db.keys.team_of(k)));
        self.keys.push(owned(&e.key));
        self.routes.push(e.route.clone().into_owned());
        self.providers.push(owned(&e.provider));
        self.models.push(owned(&e.model));
        let (input, output) = e
            .usage
            .as_ref()
            .map_or((0, 0), |u| (u.input_tokens, u.output_tokens));
        self.input.push(tokens(input));
        self.output.push(tokens(output));
        self.cost
            .push(e.cost_usd.map(|c| Money::from_usd(c).picos()));
    }

    /// Insert the rows not there yet and add those to the aggregates; returns how many.
    async fn insert(&self, tx: &tokio_postgres::Transaction<'_>) -> Result<u64, StoreError> {
        if self.ids.is_empty() {
            return Ok(0);
        }
        let params: [&(dyn ToSql + Sync); 10] = [
            &self.ids,
            &self.at_ms,
            &self.keys,
            &self.teams,
            &self.routes,
            &self.providers,
            &self.models,
            &self.input,
            &self.output,
            &self.cost,
        ];
        let row = tx.query_one(INSERT, &params).await?;
        Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
    }
}

/// Insert a batch (arrays), aggregate the inserted rows by day, key, team, route, provider
/// and model, upsert those; answers the number inserted.
const INSERT: &str = "
WITH batch AS (
    SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[], $5::text[],
                         $6::text[], $7::text[], $8::int8[], $9::int8[], $10::int8[])
        AS b(request_id, at_ms, key, team, route, provider, model, input_tokens, output_tokens, cost_picos)
), inserted AS (
    INSERT INTO spend (request_id, at, key, team, route, provider, model, input_tokens,
                       output_tokens, cost_picos)
    SELECT request_id, to_timestamp(at_ms / 1000.0), key, team, route, provider, model,
           input_tokens, output_tokens, cost_picos FROM batch
    ON CONFLICT DO NOTHING
    RETURNING at, key, team, route, provider, model, input_tokens, output_tokens, cost_picos
), daily AS (
    INSERT INTO spend_daily AS d (day, key, team, route, provider, model, requests,
                                  input_tokens, output_tokens, cost_picos, unpriced)
    SELECT (at AT TIME ZONE 'UTC')::date, coalesce(key, ''), coalesce(team, ''), route,
           coalesce(provider, ''), coalesce(model, ''), count(*), sum(input_tokens)::int8,
           sum(output_tokens)::int8, coalesce(sum(cost_picos), 0)::int8,
           count(*) FILTER (WHERE cost_picos IS NULL)
    FROM inserted GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (day, key, team, route, provider, model) DO UPDATE SET
        requests = d.requests + excluded.requests,
        input_tokens = d.input_tokens + excluded.input_tokens,
        output_tokens = d.output_tokens + excluded.output_tokens,
        cost_picos = d.cost_picos + excluded.cost_picos,
        unpriced = d.unpriced + excluded.unpriced
), team_daily AS (
    INSERT INTO spend_team_daily AS t (day, team, requests, input_tokens, output_tokens,
                                       cost_picos, unpriced)
    SELECT (at AT TIME ZONE 'UTC')::date, coalesce(team, ''), count(*), sum(input_tokens)::int8,
           sum(output_tokens)::int8, coalesce(sum(cost_picos), 0)::int8,
           count(*) FILTER (WHERE cost_picos IS NULL)
    FROM inserted GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (day, team) DO UPDATE SET
        requests = t.requests + excluded.requests,
        input_tokens = t.input_tokens + excluded.input_tokens,
        output_tokens = t.output_tokens + excluded.output_tokens,
        cost_picos = t.cost_picos + excluded.cost_picos,
        unpriced = t.unpriced + excluded.unpriced
)
SELECT count(*)::int8 FROM inserted";

/// What a spend report groups by (a column of `spend_daily`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    /// Per client key.
    Key,
    /// Per team.
    Team,
    /// Per route.
    Route,
    /// Per provider.
    Provider,
    /// Per model.
    Model,
    /// Per UTC day.
    Day,
}

impl GroupBy {
    /// The choices, as the query string names them.
    pub const NAMES: &'static str = "key, team, route, provider, model or day";

    /// From the query string.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "key" => Self::Key,
            "team" => Self::Team,
            "route" => Self::Route,
            "provider" => Self::Provider,
            "model" => Self::Model,
            "day" => Self::Day,
            _ => return None,
        })
    }

    fn column(self) -> &'static str {
        match self {
            Self::Key => "key",
            Self::Team => "team",
            Self::Route => "route",
            Self::Provider => "provider",
            Self::Model => "model",
            Self::Day => "to_char(day, 'YYYY-MM-DD')",
        }
    }
}

/// The narrowest aggregate that answers a report, and whether it has a `key` column: every
/// one has `day` and `team`. Without a key filter, each grouping has its own table (a few
/// rows per team and day, or one per key and day for `key`); narrowed to one key, the
/// per-key table answers by key, team or day, and `spend_daily`'s index by key the rest.
/// The tables and the trigger that keeps the narrow ones are in `migrations.rs` (V1, V2).
#[must_use]
pub fn table_for(group_by: GroupBy, one_key: bool) -> (&'static str, bool) {
    match (group_by, one_key) {
        (GroupBy::Key, _) | (GroupBy::Team | GroupBy::Day, true) => ("spend_key_daily", true),
        (GroupBy::Team | GroupBy::Day, false) => ("spend_team_daily", false),
        (GroupBy::Model, false) => ("spend_model_daily", false),
        (GroupBy::Route | GroupBy::Provider, false) => ("spend_route_daily", false),
        (GroupBy::Model | GroupBy::Route | GroupBy::Provider, true) => ("spend_daily", true),
    }
}

/// A spend report's question: UTC days `from` to `to` (inclusive, `YYYY-MM-DD`).
#[derive(Debug, Clone)]
pub struct SpendQuery {
    /// The grouping.
    pub group_by: GroupBy,
    /// First day.
    pub from: String,
    /// Last day.
    pub to: String,
    /// Only this key's spend.
    pub key: Option<String>,
    /// Only this team's spend.
    pub team: Option<String>,
    /// Most groups returned (largest cost first).
    pub limit: i64,
}

/// One group's spend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpendGroup {
    /// The group's value (empty: none, e.g. a key without team).
    pub group: String,
    /// Answered requests.
    pub requests: i64,
    /// Input tokens.
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Known cost, dollars.
    pub cost_usd: f64,
    /// Requests whose cost is unknown (not in `cost_usd`).
    pub unpriced: i64,
}

/// `GET /admin/spend`: the aggregates grouped, largest cost first.
///
/// # Errors
/// Unreachable database; a day the database cannot read (400 naming `from` or `to`).
pub async fn report(db: &Database, q: &SpendQuery) -> Result<Vec<SpendGroup>, StoreError> {
    let r = async {
        let client = db.client().await?;
        for (field, day) in [("from", &q.from), ("to", &q.to)] {
            if let Err(e) = client.query_one("SELECT $1::text::date", &[day]).await {
                return Err(match StoreError::from(e) {
                    StoreError::Invalid(_, m) => StoreError::Invalid(field, m),
                    other => other,
                });
            }
        }
        let (table, has_key) = table_for(q.group_by, q.key.is_some());
        let key_filter = if has_key {
            "($3::text IS NULL OR key = $3)"
        } else {
            "$3::text IS NULL"
        };
        let sql = format!(
            "SELECT {} AS g, sum(requests)::int8, sum(input_tokens)::int8, \
             sum(output_tokens)::int8, (sum(cost_picos) / 1e12)::float8, sum(unpriced)::int8 \
             FROM {table} WHERE day BETWEEN $1::text::date AND $2::text::date \
             AND {key_filter} AND ($4::text IS NULL OR team = $4) \
             GROUP BY 1 ORDER BY 5 DESC, 1 LIMIT $5",
            q.group_by.column()
        );
        let rows = client
            .query(&sql, &[&q.from, &q.to, &q.key, &q.team, &q.limit])
            .await?;
        Ok(rows
            .iter()
            .map(|r| SpendGroup {
                group: r.get(0),
                requests: r.get(1),
                input_tokens: r.get(2),
                output_tokens: r.get(3),
                cost_usd: r.get(4),
                unpriced: r.get(5),
            })
            .collect())
    }
    .await;
    db.observe(&r);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_complete_lines_are_taken_and_blank_ones_skipped() {
        let (lines, used) = complete_lines(b"a\n\nb\nc", 10);
        assert_eq!(lines, [&b"a"[..], &b"b"[..]]);
        assert_eq!(used, 5, "the partial line waits for its newline");
        let (lines, used) = complete_lines(b"a\nb\nc\n", 2);
        assert_eq!((lines.len(), used), (2, 4));
    }

    #[test]
    fn a_spend_line_reads_what_the_request_log_writes() {
        use crate::telemetry::log::LogEntry;
        let mut entry: LogEntry = serde_json::from_str(
            r#"{"id":"r-1","time_ms":1795969375000,"api":"chat","route":"smart","key":null,
                "stream":true,"status":200,"provider":"aurora","model":"gpt-4o-mini",
                "failed_over":true,"attempts":[],"usage":{"input_tokens":12,"output_tokens":34,
                "cached_input_tokens":5},"cost_usd":0.25,"latency_ms":1.5,"ttft_ms":0.5,
                "error":null}"#,
        )
        .unwrap();
        // escaped text is read owned, plain text borrowed: the same either way
        entry.key = Some("team \"blue\" \\ é\n".into());
        entry.route = "a/b\tc".into();
        let text = serde_json::to_string(&entry).unwrap();
        let line: SpendLine<'_> = serde_json::from_str(&text).unwrap();
        assert_eq!(line.id, "r-1");
        assert_eq!(line.time_ms, 1_795_969_375_000);
        assert_eq!(line.route, "a/b\tc");
        assert_eq!(line.key.as_deref(), Some("team \"blue\" \\ é\n"));
        assert_eq!(line.provider.as_deref(), Some("aurora"));
        assert_eq!(line.model.as_deref(), Some("gpt-4o-mini"));
        let usage = line.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (12, 34));
        assert_eq!(line.cost_usd, Some(0.25));
        // a refused request: no provider, model, usage or cost
        entry.provider = None;
        entry.model = None;
        entry.usage = None;
        entry.cost_usd = None;
        let text = serde_json::to_string(&entry).unwrap();
        let line: SpendLine<'_> = serde_json::from_str(&text).unwrap();
        assert!(line.provider.is_none() && line.usage.is_none() && line.cost_usd.is_none());
    }
}
