//! The keys' SQL: create, read, list, patch, revoke, rotate, and the live keys the sync
//! task loads into memory. Each change runs in one transaction with its audit row and its
//! NOTIFY; tokens are made here (`crate::access::keys::new_token`) and only their SHA-256
//! is stored.

use std::collections::HashSet;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use switchyard::Money;
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Row, Transaction};

use super::records::{audit, ms, ts, KeyFields, KeyRecord, StoreError, TeamRef};
use super::Database;
use crate::access::dynamic::KeySpec;
use crate::access::keys::new_token;
use crate::access::limits::{KeyLimits, Period, TeamLimits};

/// The longest grace period a rotated key's old token may get.
pub const MAX_GRACE_SECS: u64 = 30 * 86_400;

fn select_keys() -> String {
    format!(
        "SELECT k.id, k.name, k.team_id, t.name, k.routes, k.budget_usd, k.budget_period, \
         k.rpm, k.tpm, {}, k.metadata, {}, {}, {} \
         FROM keys k LEFT JOIN teams t ON t.id = k.team_id",
        ts("k.expires_at"),
        ts("k.created_at"),
        ts("k.revoked_at"),
        ts("k.grace_until"),
    )
}

fn record(r: &Row) -> KeyRecord {
    KeyRecord {
        id: r.get(0),
        name: r.get(1),
        team_id: r.get(2),
        team: r.get(3),
        routes: r.get(4),
        budget_usd: r.get(5),
        budget_period: r.get(6),
        rpm: r.get(7),
        tpm: r.get(8),
        expires_at: r.get(9),
        metadata: r.get(10),
        created_at: r.get(11),
        revoked_at: r.get(12),
        previous_valid_until: r.get(13),
    }
}

async fn get_in(c: &impl GenericClient, id: i64, lock: bool) -> Result<KeyRecord, StoreError> {
    let sql = format!(
        "{} WHERE k.id = $1{}",
        select_keys(),
        if lock { " FOR UPDATE OF k" } else { "" }
    );
    let row = c.query_opt(&sql, &[&id]).await?;
    row.as_ref()
        .map(record)
        .ok_or(StoreError::NotFound("key", id))
}

/// The team id a reference names (checked to exist).
async fn team_id(tx: &Transaction<'_>, team: Option<&TeamRef>) -> Result<Option<i64>, StoreError> {
    let row = match team {
        None => return Ok(None),
        Some(TeamRef::Id(id)) => {
            tx.query_opt("SELECT id FROM teams WHERE id = $1", &[id])
                .await?
        }
        Some(TeamRef::Name(n)) => {
            tx.query_opt("SELECT id FROM teams WHERE name = $1", &[n])
                .await?
        }
    };
    row.map(|r| Some(r.get(0)))
        .ok_or_else(|| StoreError::Invalid("team", format!("there is no team {}", team_text(team))))
}

fn team_text(team: Option<&TeamRef>) -> String {
    match team {
        Some(TeamRef::Id(id)) => format!("with id {id}"),
        Some(TeamRef::Name(n)) => format!("named {n:?}"),
        None => String::new(),
    }
}

/// A name taken by a configured (`[[keys]]`) key or another live key is refused.
fn name_taken(e: StoreError, name: &str) -> StoreError {
    match e {
        StoreError::Conflict(_) => {
            StoreError::Conflict(format!("a key named {name:?} exists already"))
        }
        other => other,
    }
}

/// `POST /admin/keys`: a new key and its token (returned once, never stored).
///
/// # Errors
/// Unreachable database, an unknown team, a name in use.
pub async fn create(
    db: &Database,
    actor: &str,
    f: &KeyFields,
) -> Result<(KeyRecord, String), StoreError> {
    let r = async {
        let mut client = db.client().await?;
        let tx = client.transaction().await?;
        let team = team_id(&tx, f.team.as_ref()).await?;
        let token = new_token().map_err(StoreError::Other)?;
        let hash: Vec<u8> = Sha256::digest(token.as_bytes()).to_vec();
        let params: [&(dyn ToSql + Sync); 10] = [
            &f.name,
            &hash,
            &team,
            &f.routes,
            &f.budget_usd,
            &f.budget_period,
            &f.rpm,
            &f.tpm,
            &f.expires_at,
            &f.metadata,
        ];
        let row = tx
            .query_one(
                "INSERT INTO keys (name, sha256, team_id, routes, budget_usd, budget_period, \
                 rpm, tpm, expires_at, metadata) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::timestamptz, $10) RETURNING id",
                &params,
            )
            .await
            .map_err(|e| name_taken(e.into(), &f.name))?;
        let key = get_in(&*tx, row.get(0), false).await?;
        let target = format!("key:{}", key.id);
        let change = audit(&tx, actor, "key.create", &target, None, Some(json!(key))).await?;
        tx.commit().await?;
        change.log();
        Ok((key, token))
    }
    .await;
    db.observe(&r);
    r
}

/// `GET /admin/keys/{id}`.
///
/// # Errors
/// Unreachable database, no such key.
pub async fn get(db: &Database, id: i64) -> Result<KeyRecord, StoreError> {
    let r = async { get_in(&**db.client().await?, id, false).await }.await;
    db.observe(&r);
    r
}

/// What `GET /admin/keys` filters on and where its page starts.
#[derive(Debug, Clone, Default)]
pub struct KeyFilter {
    /// Keys of this team (name).
    pub team: Option<String>,
    /// Keys with this name.
    pub name: Option<String>,
    /// Include revoked keys.
    pub revoked: bool,
    /// Ids after this one.
    pub after: Option<i64>,
    /// Page size.
    pub limit: i64,
}

/// `GET /admin/keys`: a page in id order, and whether more follow.
///
/// # Errors
/// Unreachable database.
pub async fn list(db: &Database, f: &KeyFilter) -> Result<(Vec<KeyRecord>, bool), StoreError> {
    let r = async {
        let client = db.client().await?;
        let sql = format!(
            "{} WHERE ($1::text IS NULL OR t.name = $1) AND ($2::text IS NULL OR k.name = $2) \
             AND ($3 OR k.revoked_at IS NULL) AND k.id > $4 ORDER BY k.id LIMIT $5",
            select_keys()
        );
        let after = f.after.unwrap_or(0);
        let rows = client
            .query(
                &sql,
                &[&f.team, &f.name, &f.revoked, &after, &(f.limit + 1)],
            )
            .await?;
        let mut keys: Vec<KeyRecord> = rows.iter().map(record).collect();
        let more = keys.len() > usize::try_from(f.limit).unwrap_or(usize::MAX);
        keys.truncate(usize::try_from(f.limit).unwrap_or(usize::MAX));
        Ok((keys, more))
    }
    .await;
    db.observe(&r);
    r
}

/// `PATCH /admin/keys/{id}`: `patch` changes the key's current settings (read under a row
/// lock, so concurrent patches do not lose each other's changes).
///
/// # Errors
/// Unreachable database, no such key, a revoked key, what `patch` refuses, a name in use.
pub async fn update(
    db: &Database,
    actor: &str,
    id: i64,
    patch: impl FnOnce(&mut KeyFields) -> Result<(), StoreError>,
) -> Result<KeyRecord, StoreError> {
    let r = async {
        let mut client = db.client().await?;
        let tx = client.transaction().await?;
        let before = get_in(&*tx, id, true).await?;
        if before.revoked_at.is_some() {
            return Err(StoreError::Conflict(format!("key {id} is revoked")));
        }
        let mut f = before.fields();
        patch(&mut f)?;
        let team = team_id(&tx, f.team.as_ref()).await?;
        let params: [&(dyn ToSql + Sync); 10] = [
            &id,
            &f.name,
            &team,
            &f.routes,
            &f.budget_usd,
            &f.budget_period,
            &f.rpm,
            &f.tpm,
            &f.expires_at,
            &f.metadata,
        ];
        tx.execute(
            "UPDATE keys SET name = $2, team_id = $3, routes = $4, budget_usd = $5, \
             budget_period = $6, rpm = $7, tpm = $8, expires_at = $9::text::timestamptz, \
             metadata = $10 WHERE id = $1",
            &params,
        )
        .await
        .map_err(|e| name_taken(e.into(), &f.name))?;
        let after = get_in(&*tx, id, false).await?;
        let target = format!("key:{id}");
        let change = audit(
            &tx,
            actor,
            "key.update",
            &target,
            Some(json!(before)),
            Some(json!(after)),
        )
        .await?;
        tx.commit().await?;
        change.log();
        Ok(after)
    }
    .await;
    db.observe(&r);
    r
}

/// `DELETE /admin/keys/{id}`: revoke (the row stays, for spend and audit). Revoking a
/// revoked key changes nothing and answers it as it is.
///
/// # Errors
/// Unreachable database, no such key.
pub async fn revoke(db: &Database, actor: &str, id: i64) -> Result<KeyRecord, StoreError> {
    let r = async {
        let mut client = db.client().await?;
        let tx = client.transaction().await?;
        let before = get_in(&*tx, id, true).await?;
        if before.revoked_at.is_some() {
            return Ok(before);
        }
        tx.execute(
            "UPDATE keys SET revoked_at = now(), previous_sha256 = NULL, grace_until = NULL \
             WHERE id = $1",
            &[&id],
        )
        .await?;
        let after = get_in(&*tx, id, false).await?;
        let target = format!("key:{id}");
        let change = audit(
            &tx,
            actor,
            "key.revoke",
            &target,
            Some(json!(before)),
            Some(json!(after)),
        )
        .await?;
        tx.commit().await?;
        change.log();
        Ok(after)
    }
    .await;
    db.observe(&r);
    r
}

/// `POST /admin/keys/{id}/rotate`: a new token; the old one keeps working for
/// `grace_secs` (0: it stops at once).
///
/// # Errors
/// Unreachable database, no such key, a revoked key.
pub async fn rotate(
    db: &Database,
    actor: &str,
    id: i64,
    grace_secs: u64,
) -> Result<(KeyRecord, String), StoreError> {
    let r = async {
        let mut client = db.client().await?;
        let tx = client.transaction().await?;
        let before = get_in(&*tx, id, true).await?;
        if before.revoked_at.is_some() {
            return Err(StoreError::Conflict(format!("key {id} is revoked")));
        }
        let token = new_token().map_err(StoreError::Other)?;
        let hash: Vec<u8> = Sha256::digest(token.as_bytes()).to_vec();
        let grace = f64::from(u32::try_from(grace_secs.min(MAX_GRACE_SECS)).unwrap_or(0));
        tx.execute(
            "UPDATE keys SET previous_sha256 = CASE WHEN $3::float8 > 0 THEN sha256 END, \
             grace_until = CASE WHEN $3::float8 > 0 THEN now() + make_interval(secs => $3::float8) END, \
             sha256 = $2 WHERE id = $1",
            &[&id, &hash, &grace],
        )
        .await?;
        let after = get_in(&*tx, id, false).await?;
        let target = format!("key:{id}");
        let detail = json!({ "grace_secs": grace_secs });
        let change = audit(&tx, actor, "key.rotate", &target, Some(json!(before)), Some(json!({ "key": after, "rotation": detail })))
            .await?;
        tx.commit().await?;
        change.log();
        Ok((after, token))
    }
    .await;
    db.observe(&r);
    r
}

fn period(text: Option<&str>) -> Period {
    text.and_then(Period::parse).unwrap_or_default()
}

fn budget(usd: Option<f64>, p: Option<&str>) -> Option<(Money, Period)> {
    usd.map(|b| (Money::from_usd(b), period(p)))
}

fn positive(n: Option<i64>) -> Option<u64> {
    n.and_then(|n| u64::try_from(n).ok())
}

fn hash32(bytes: Option<Vec<u8>>) -> Option<[u8; 32]> {
    bytes?.try_into().ok()
}

/// Every live (not revoked) key, as the request path holds it, its team's limits included.
///
/// # Errors
/// Unreachable database.
pub async fn load_live(c: &impl GenericClient) -> Result<Vec<KeySpec>, StoreError> {
    load(c, None).await
}

/// The live versions of the keys with these ids (a revoked or deleted one has none).
///
/// # Errors
/// Unreachable database.
pub async fn load_ids(c: &impl GenericClient, ids: &[i64]) -> Result<Vec<KeySpec>, StoreError> {
    load(c, Some(ids)).await
}

async fn load(c: &impl GenericClient, ids: Option<&[i64]>) -> Result<Vec<KeySpec>, StoreError> {
    let ids: Option<Vec<i64>> = ids.map(<[i64]>::to_vec);
    let sql = format!(
        "SELECT k.id, k.name, k.sha256, k.previous_sha256, {}, t.name, k.routes, \
         k.budget_usd, k.budget_period, k.rpm, k.tpm, {}, \
         t.id, t.budget_usd, t.budget_period, t.rpm, t.tpm \
         FROM keys k LEFT JOIN teams t ON t.id = k.team_id WHERE k.revoked_at IS NULL \
         AND ($1::int8[] IS NULL OR k.id = ANY($1))",
        ms("k.grace_until"),
        ms("k.expires_at"),
    );
    let rows = c.query(&sql, &[&ids]).await?;
    Ok(rows.iter().filter_map(spec).collect())
}

fn spec(r: &Row) -> Option<KeySpec> {
    let routes: Vec<String> = r.get(6);
    let routes =
        (!routes.iter().any(|x| x == "*")).then(|| routes.into_iter().collect::<HashSet<_>>());
    let grace: Option<i64> = r.get(4);
    let previous = hash32(r.get(3)).zip(grace.and_then(|g| u64::try_from(g).ok()));
    let team = r.get::<_, Option<i64>>(12).map(|id| TeamLimits {
        id,
        budget: budget(r.get(13), r.get(14)),
        rpm: positive(r.get(15)),
        tpm: positive(r.get(16)),
    });
    let expires: Option<i64> = r.get(11);
    Some(KeySpec {
        id: r.get(0),
        name: r.get(1),
        hash: hash32(r.get(2))?,
        previous,
        team: r.get(5),
        routes,
        limits: KeyLimits {
            budget: budget(r.get(7), r.get(8)),
            rpm: positive(r.get(9)),
            tpm: positive(r.get(10)),
            team,
        },
        expires_at_ms: expires.map(|e| u64::try_from(e).unwrap_or(0)),
    })
}

/// The audit trail's newest rows (tests and the operator's eye).
///
/// # Errors
/// Unreachable database.
pub async fn recent_audit(db: &Database, limit: i64) -> Result<Vec<Value>, StoreError> {
    let client = db.client().await?;
    let sql = format!(
        "SELECT actor, action, target, {}, before, after FROM audit ORDER BY id DESC LIMIT $1",
        ts("at")
    );
    let rows = client.query(&sql, &[&limit]).await?;
    Ok(rows
        .iter()
        .map(|r| {
            json!({
                "actor": r.get::<_, String>(0),
                "action": r.get::<_, String>(1),
                "target": r.get::<_, String>(2),
                "at": r.get::<_, Option<String>>(3),
                "before": r.get::<_, Option<Value>>(4),
                "after": r.get::<_, Option<Value>>(5),
            })
        })
        .collect())
}
