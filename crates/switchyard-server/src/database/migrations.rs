//! The schema, as numbered migrations embedded in the binary and applied at start.
//!
//! Each migration runs once, in its own transaction, under an advisory lock (replicas
//! starting together apply it once); `switchyard_migrations` records which have run. A
//! migration is never edited once released: a change is a new one at the end.

use tokio_postgres::Client;

/// The advisory lock every replica takes while migrating.
const LOCK: i64 = 0x5357_5943_4844_4231; // "SWYCHDB1"

/// (version, SQL), in order.
pub const MIGRATIONS: &[(i32, &str)] = &[(1, V1), (2, V2)];

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

/// Reports that read millions of `spend_daily` rows get narrower aggregates: per team, day
/// and key (`group_by=key`, and a key's own reports by team or day), per team, day and
/// model, and per team, day, route and provider. A statement trigger on `spend` adds each
/// statement's inserted rows to them, so every writer keeps them, including a replica still
/// on the previous version during a rolling upgrade (whose writer keeps `spend_daily` and
/// `spend_team_daily` itself, as this version's does). They start from `spend_daily`, with
/// `spend` and `spend_daily` locked against writers until the trigger is in place: no row
/// is counted twice or missed. `spend_daily` is now read only for one key's spend by
/// route, provider or model, so its per-team index gives way to one per key.
const V2: &str = r"
LOCK TABLE spend, spend_daily IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE spend_key_daily (
    team          text NOT NULL,
    day           date NOT NULL,
    key           text NOT NULL,
    requests      bigint NOT NULL,
    input_tokens  bigint NOT NULL,
    output_tokens bigint NOT NULL,
    cost_picos    bigint NOT NULL,
    unpriced      bigint NOT NULL,
    PRIMARY KEY (team, day, key)
);
CREATE INDEX spend_key_daily_key ON spend_key_daily (key, day);
CREATE TABLE spend_model_daily (
    team          text NOT NULL,
    day           date NOT NULL,
    model         text NOT NULL,
    requests      bigint NOT NULL,
    input_tokens  bigint NOT NULL,
    output_tokens bigint NOT NULL,
    cost_picos    bigint NOT NULL,
    unpriced      bigint NOT NULL,
    PRIMARY KEY (team, day, model)
);
CREATE TABLE spend_route_daily (
    team          text NOT NULL,
    day           date NOT NULL,
    route         text NOT NULL,
    provider      text NOT NULL,
    requests      bigint NOT NULL,
    input_tokens  bigint NOT NULL,
    output_tokens bigint NOT NULL,
    cost_picos    bigint NOT NULL,
    unpriced      bigint NOT NULL,
    PRIMARY KEY (team, day, route, provider)
);
INSERT INTO spend_key_daily
SELECT team, day, key, sum(requests), sum(input_tokens), sum(output_tokens), sum(cost_picos),
       sum(unpriced)
FROM spend_daily GROUP BY 1, 2, 3;
INSERT INTO spend_model_daily
SELECT team, day, model, sum(requests), sum(input_tokens), sum(output_tokens), sum(cost_picos),
       sum(unpriced)
FROM spend_daily GROUP BY 1, 2, 3;
INSERT INTO spend_route_daily
SELECT team, day, route, provider, sum(requests), sum(input_tokens), sum(output_tokens),
       sum(cost_picos), sum(unpriced)
FROM spend_daily GROUP BY 1, 2, 3, 4;
CREATE FUNCTION spend_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO spend_key_daily AS d
    SELECT coalesce(team, ''), (at AT TIME ZONE 'UTC')::date, coalesce(key, ''), count(*),
           sum(input_tokens)::int8, sum(output_tokens)::int8, coalesce(sum(cost_picos), 0)::int8,
           count(*) FILTER (WHERE cost_picos IS NULL)
    FROM inserted_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (team, day, key) DO UPDATE SET
        requests = d.requests + excluded.requests,
        input_tokens = d.input_tokens + excluded.input_tokens,
        output_tokens = d.output_tokens + excluded.output_tokens,
        cost_picos = d.cost_picos + excluded.cost_picos,
        unpriced = d.unpriced + excluded.unpriced;
    INSERT INTO spend_model_daily AS d
    SELECT coalesce(team, ''), (at AT TIME ZONE 'UTC')::date, coalesce(model, ''), count(*),
           sum(input_tokens)::int8, sum(output_tokens)::int8, coalesce(sum(cost_picos), 0)::int8,
           count(*) FILTER (WHERE cost_picos IS NULL)
    FROM inserted_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (team, day, model) DO UPDATE SET
        requests = d.requests + excluded.requests,
        input_tokens = d.input_tokens + excluded.input_tokens,
        output_tokens = d.output_tokens + excluded.output_tokens,
        cost_picos = d.cost_picos + excluded.cost_picos,
        unpriced = d.unpriced + excluded.unpriced;
    INSERT INTO spend_route_daily AS d
    SELECT coalesce(team, ''), (at AT TIME ZONE 'UTC')::date, route, coalesce(provider, ''),
           count(*), sum(input_tokens)::int8, sum(output_tokens)::int8,
           coalesce(sum(cost_picos), 0)::int8, count(*) FILTER (WHERE cost_picos IS NULL)
    FROM inserted_rows GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (team, day, route, provider) DO UPDATE SET
        requests = d.requests + excluded.requests,
        input_tokens = d.input_tokens + excluded.input_tokens,
        output_tokens = d.output_tokens + excluded.output_tokens,
        cost_picos = d.cost_picos + excluded.cost_picos,
        unpriced = d.unpriced + excluded.unpriced;
    RETURN NULL;
END
$$;
CREATE TRIGGER spend_rollup AFTER INSERT ON spend REFERENCING NEW TABLE AS inserted_rows
    FOR EACH STATEMENT EXECUTE FUNCTION spend_rollup();
CREATE INDEX spend_daily_key ON spend_daily (key, day);
DROP INDEX spend_daily_team;
";

/// Apply every migration not yet applied, each in its own transaction; returns how many ran.
///
/// # Errors
/// The database's, as text. Migrations that committed before the failing one stay.
pub async fn apply(client: &mut Client) -> Result<usize, tokio_postgres::Error> {
    let mut ran = 0;
    for (version, sql) in MIGRATIONS {
        let tx = client.transaction().await?;
        // held to the commit: a replica starting beside this one waits, then sees it done
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
            .await?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS switchyard_migrations (
                 version integer PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await?;
        let done = tx
            .query_opt(
                "SELECT 1 FROM switchyard_migrations WHERE version = $1",
                &[version],
            )
            .await?
            .is_some();
        if done {
            continue; // the transaction rolls back: it changed nothing
        }
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO switchyard_migrations (version) VALUES ($1)",
            &[version],
        )
        .await?;
        tx.commit().await?;
        ran += 1;
    }
    Ok(ran)
}
