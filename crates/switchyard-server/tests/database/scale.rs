//! A measurement, not a check: what a full key-table read costs at 100,000 keys (every
//! change and every resync re-reads it), and what a lookup costs. Run with
//! `cargo test -p switchyard-server --test database -- --ignored --nocapture key_table_at_scale`.

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest as _, Sha256};
use switchyard::clock::Clock;
use switchyard_server::access::dynamic::DynamicKeys;
use switchyard_server::config::database::DatabaseSettings;
use switchyard_server::database::{keys, Database};

use crate::support::TestDb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run by hand"]
async fn key_table_at_scale() {
    let Some(test_db) = TestDb::create("scale").await else {
        return;
    };
    let settings = DatabaseSettings {
        url: test_db.url.clone(),
        pool_size: 2,
        resync: Duration::from_secs(30),
    };
    let table = Arc::new(DynamicKeys::new(Clock::system(), 1024));
    let db = Database::new(&settings, Arc::clone(&table), Clock::system()).unwrap();
    db.migrate().await.unwrap();
    let c = test_db.client().await;
    c.batch_execute(
        "INSERT INTO teams (name, rpm) SELECT 'team-' || g, 1000 FROM generate_series(1, 100) g;
         INSERT INTO keys (name, sha256, team_id, rpm)
         SELECT 'key-' || g, sha256(('sy-token-' || g)::bytea), 1 + g % 100, 600
         FROM generate_series(1, 100000) g;",
    )
    .await
    .unwrap();
    let start = std::time::Instant::now();
    let live = keys::load_live(&c).await.unwrap();
    let read = start.elapsed();
    let start = std::time::Instant::now();
    table.replace(live);
    let swap = start.elapsed();
    let digests: Vec<[u8; 32]> = (1..=1000)
        .map(|g| Sha256::digest(format!("sy-token-{g}").as_bytes()).into())
        .collect();
    let start = std::time::Instant::now();
    let mut found = 0;
    for _ in 0..100 {
        for d in &digests {
            found += usize::from(table.authenticate(d).is_some());
        }
    }
    let per_lookup = start.elapsed() / 100_000;
    assert_eq!(found, 100_000);
    // one key's change: what a notification costs
    let start = std::time::Instant::now();
    let one = keys::load_ids(&c, &[77]).await.unwrap();
    table.patch(&[77], one);
    let patch = start.elapsed();
    assert_eq!(table.len(), 100_000);
    println!(
        "100000 keys: read {read:?}, table built and swapped {swap:?}, lookup {per_lookup:?} each, one key's change applied in {patch:?}"
    );
}

// Spend reports at scale (10 million rows, 100,000 keys): `bench/db`.
