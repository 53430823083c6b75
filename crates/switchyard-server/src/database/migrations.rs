//! The schema, as numbered migrations embedded in the binary and applied at start.
//!
//! Each migration runs once, in its own transaction, under an advisory lock (replicas
//! starting together apply it once); `switchyard_migrations` records which have run. A
//! migration is never edited once released: a change is a new one at the end.

use tokio_postgres::Client;

/// The advisory lock every replica takes while migrating.
const LOCK: i64 = 0x5357_5943_4844_4231; // "SWYCHDB1"

/// (version, SQL), in order.
pub const MIGRATIONS: &[(i32, &str)] = &[(1, V1)];

/// Teams, keys (hashes only), spend rows, their daily aggregates (per key, team, route,
/// provider and model; and per team alone), the ingestion checkpoint
/// and the audit trail. Money is integer pico-dollars (`switchyard::Money`); an unknown
/// cost is NULL (counted in `unpriced`), never 0.
const V1: &str = r"
CREATE TABLE teams (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    budget_usd    double precision,
    budget_period text NOT NULL DEFAULT 'total' CHECK (budget_period IN ('total', 'day', 'month')),
    rpm           bigint,
    tpm           bigint,
    metadata      jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE keys (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL,
    sha256          bytea NOT NULL UNIQUE,
    team_id         bigint REFERENCES teams (id),
    routes          text[] NOT NULL DEFAULT '{*}',
    budget_usd      double precision,
    budget_period   text NOT NULL DEFAULT 'total' CHECK (budget_period IN ('total', 'day', 'month')),
    rpm             bigint,
    tpm             bigint,
    expires_at      timestamptz,
    metadata        jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    revoked_at      timestamptz,
    previous_sha256 bytea,
    grace_until     timestamptz
);
CREATE UNIQUE INDEX keys_live_name ON keys (name) WHERE revoked_at IS NULL;
CREATE INDEX keys_team ON keys (team_id);
CREATE TABLE spend (
    request_id    text NOT NULL,
    at            timestamptz NOT NULL,
    key           text,
    team          text,
    route         text NOT NULL,
    provider      text,
    model         text,
    input_tokens  bigint NOT NULL,
    output_tokens bigint NOT NULL,
    cost_picos    bigint,
    -- a client may reuse an x-request-id: its arrival time tells two requests apart,
    -- and re-reading the same log line gives the same pair
    PRIMARY KEY (request_id, at)
);
CREATE INDEX spend_at ON spend (at);
CREATE TABLE spend_daily (
    day           date NOT NULL,
    key           text NOT NULL,
    team          text NOT NULL,
    route         text NOT NULL,
    provider      text NOT NULL,
    model         text NOT NULL,
    requests      bigint NOT NULL,
    input_tokens  bigint NOT NULL,
    output_tokens bigint NOT NULL,
    cost_picos    bigint NOT NULL,
    unpriced      bigint NOT NULL,
    PRIMARY KEY (day, key, team, route, provider, model)
);
CREATE INDEX spend_daily_team ON spend_daily (team, day);
-- the same per team and day only: reports over every team or every day read a few rows a day
CREATE TABLE spend_team_daily (
    day           date NOT NULL,
    team          text NOT NULL,
    requests      bigint NOT NULL,
    input_tokens  bigint NOT NULL,
    output_tokens bigint NOT NULL,
    cost_picos    bigint NOT NULL,
    unpriced      bigint NOT NULL,
    PRIMARY KEY (day, team)
);
CREATE TABLE spend_checkpoint (
    source       text PRIMARY KEY,
    offset_bytes bigint NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE audit (
    id     bigserial PRIMARY KEY,
    at     timestamptz NOT NULL DEFAULT now(),
    actor  text NOT NULL,
    action text NOT NULL,
    target text NOT NULL,
    before jsonb,
    after  jsonb
);
";

/// Apply every migration not yet applied; returns how many ran.
///
/// # Errors
/// The database's, as text.
pub async fn apply(client: &mut Client) -> Result<usize, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS switchyard_migrations (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .await?;
    let done: Vec<i32> = (tx
        .query("SELECT version FROM switchyard_migrations", &[])
        .await?)
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut ran = 0;
    for (version, sql) in MIGRATIONS {
        if done.contains(version) {
            continue;
        }
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO switchyard_migrations (version) VALUES ($1)",
            &[version],
        )
        .await?;
        ran += 1;
    }
    tx.commit().await?;
    Ok(ran)
}
