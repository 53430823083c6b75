//! The teams' SQL: create, read, list, patch, delete. Each change runs in one transaction
//! with its audit row and its NOTIFY (a team's limits are part of its keys' in memory).

use serde_json::json;
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Row};

use super::records::{audit, ts, StoreError, TeamFields, TeamRecord};
use super::Database;

fn select_teams() -> String {
    format!(
        "SELECT t.id, t.name, t.budget_usd, t.budget_period, t.rpm, t.tpm, t.metadata, {}, \
         (SELECT count(*) FROM keys k WHERE k.team_id = t.id AND k.revoked_at IS NULL) \
         FROM teams t",
        ts("t.created_at")
    )
}

fn record(r: &Row) -> TeamRecord {
    TeamRecord {
        id: r.get(0),
        name: r.get(1),
        budget_usd: r.get(2),
        budget_period: r.get(3),
        rpm: r.get(4),
        tpm: r.get(5),
        metadata: r.get(6),
        created_at: r.get::<_, Option<String>>(7).unwrap_or_default(),
        keys: r.get(8),
    }
}

async fn get_in(c: &impl GenericClient, id: i64, lock: bool) -> Result<TeamRecord, StoreError> {
    let sql = format!(
        "{} WHERE t.id = $1{}",
        select_teams(),
        if lock { " FOR UPDATE OF t" } else { "" }
    );
    let row = c.query_opt(&sql, &[&id]).await?;
    row.as_ref()
        .map(record)
        .ok_or(StoreError::NotFound("team", id))
}

fn name_taken(e: tokio_postgres::Error, name: &str) -> StoreError {
    match StoreError::from(e) {
        StoreError::Conflict(_) => {
            StoreError::Conflict(format!("a team named {name:?} exists already"))
        }
        other => other,
    }
}

/// `POST /admin/teams`.
///
/// # Errors
/// Unreachable database, a name in use.
pub async fn create(db: &Database, actor: &str, f: &TeamFields) -> Result<TeamRecord, StoreError> {
    let r = async {
        let mut client = db.client().await?;
        let tx = client.transaction().await?;
        let params: [&(dyn ToSql + Sync); 6] = [
            &f.name,
            &f.budget_usd,
            &f.budget_period,
            &f.rpm,
            &f.tpm,
            &f.metadata,
        ];
        let row = tx
            .query_one(
                "INSERT INTO teams (name, budget_usd, budget_period, rpm, tpm, metadata) \
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                &params,
            )
            .await
            .map_err(|e| name_taken(e, &f.name))?;
        let team = get_in(&*tx, row.get(0), false).await?;
        let target = format!("team:{}", team.id);
        let change = audit(&tx, actor, "team.create", &target, None, Some(json!(team))).await?;
        tx.commit().await?;
        change.log();
        Ok(team)
    }
    .await;
    db.observe(&r);
    r
}

/// `GET /admin/teams/{id}`.
///
/// # Errors
/// Unreachable database, no such team.
pub async fn get(db: &Database, id: i64) -> Result<TeamRecord, StoreError> {
    let r = async {
        let client = db.client().await?;
        get_in(&**client, id, false).await
    }
    .await;
    db.observe(&r);
    r
}

/// `GET /admin/teams`: a page in id order after `after`, and whether more follow.
///
/// # Errors
/// Unreachable database.
pub async fn list(
    db: &Database,
    name: Option<&str>,
    after: i64,
    limit: i64,
) -> Result<(Vec<TeamRecord>, bool), StoreError> {
    let r = async {
        let client = db.client().await?;
        let sql = format!(
            "{} WHERE ($1::text IS NULL OR t.name = $1) AND t.id > $2 ORDER BY t.id LIMIT $3",
            select_teams()
        );
        let rows = client.query(&sql, &[&name, &after, &(limit + 1)]).await?;
        let mut teams: Vec<TeamRecord> = rows.iter().map(record).collect();
        let page = usize::try_from(limit).unwrap_or(usize::MAX);
        let more = teams.len() > page;
        teams.truncate(page);
        Ok((teams, more))
    }
    .await;
    db.observe(&r);
    r
}

/// `PATCH /admin/teams/{id}`: `patch` changes the team's current settings (under a row lock).
///
/// # Errors
/// Unreachable database, no such team, what `patch` refuses, a name in use.
pub async fn update(
    db: &Database,
    actor: &str,
    id: i64,
    patch: impl FnOnce(&mut TeamFields) -> Result<(), StoreError>,
) -> Result<TeamRecord, StoreError> {
    let r = async {
        let mut client = db.client().await?;
        let tx = client.transaction().await?;
        let before = get_in(&*tx, id, true).await?;
        let mut f = before.fields();
        patch(&mut f)?;
        let params: [&(dyn ToSql + Sync); 7] = [
            &id,
            &f.name,
            &f.budget_usd,
            &f.budget_period,
            &f.rpm,
            &f.tpm,
            &f.metadata,
        ];
        tx.execute(
            "UPDATE teams SET name = $2, budget_usd = $3, budget_period = $4, rpm = $5, \
             tpm = $6, metadata = $7 WHERE id = $1",
            &params,
        )
        .await
        .map_err(|e| name_taken(e, &f.name))?;
        let after = get_in(&*tx, id, false).await?;
        let target = format!("team:{id}");
        let change = audit(
            &tx,
            actor,
            "team.update",
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

/// `DELETE /admin/teams/{id}`: refused while keys that are not revoked belong to it;
/// revoked keys keep their spend but lose the team.
///
/// # Errors
/// Unreachable database, no such team, a team with live keys.
pub async fn delete(db: &Database, actor: &str, id: i64) -> Result<TeamRecord, StoreError> {
    let r = async {
        let mut client = db.client().await?;
        let tx = client.transaction().await?;
        let before = get_in(&*tx, id, true).await?;
        if before.keys > 0 {
            return Err(StoreError::Conflict(format!(
                "team {id} still has {} key(s) that are not revoked: revoke them or move them to another team first",
                before.keys
            )));
        }
        tx.execute("UPDATE keys SET team_id = NULL WHERE team_id = $1", &[&id])
            .await?;
        tx.execute("DELETE FROM teams WHERE id = $1", &[&id]).await?;
        let target = format!("team:{id}");
        let change = audit(&tx, actor, "team.delete", &target, Some(json!(before)), None)
            .await?;
        tx.commit().await?;
        change.log();
        Ok(before)
    }
    .await;
    db.observe(&r);
    r
}
