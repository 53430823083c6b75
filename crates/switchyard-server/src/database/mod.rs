//! PostgreSQL as the system of record for virtual keys, teams and spend — never on the
//! request path (docs/operations.md "Database").
//!
//! Owns the connection pool ([`Database`]: small and bounded, shared by the admin API and the
//! spend writer), the schema (`migrations`, embedded, applied at start), all SQL (`keys`,
//! `teams`, `spend`), the sync task that keeps the in-memory key table
//! (`crate::access::dynamic`) current (`sync`: LISTEN/NOTIFY plus a periodic full resync)
//! and the spend writer that turns request-log lines into spend rows (`spend`). Requests
//! authenticate against memory only; while the database is down they go on being served,
//! [`Database::is_up`] says so (`/readyz`, `switchyard_database_up`) and changes wait.
//!
//! Connections use TLS as the URL's `sslmode` and `sslrootcert` ask, with libpq's meanings
//! and its default `prefer` (`tls`; docs/operations.md "TLS to the database").

pub mod keys;
pub mod migrations;
pub mod records;
pub mod spend;
pub mod sync;
pub mod teams;
pub mod tls;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use switchyard::clock::Clock;

use crate::access::dynamic::DynamicKeys;
use crate::config::database::DatabaseSettings;
use crate::shutdown::Tasks;

pub use records::StoreError;

/// The channel every key or team change is announced on.
pub const CHANNEL: &str = "switchyard_keys";
/// The longest a connection attempt or a wait for a pooled connection takes.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The pool, the database's reachability and the key table it keeps current.
pub struct Database {
    pool: Pool,
    /// For the sync task's own connection (LISTEN needs one that is not pooled).
    pg: tokio_postgres::Config,
    /// TLS as the URL's `sslmode` and `sslrootcert` ask (the pool's connector too).
    tls: tls::Connector,
    /// The last operation reached the database.
    up: AtomicBool,
    /// The keys the request path reads.
    keys: Arc<DynamicKeys>,
    /// The full-resync period.
    resync: Duration,
    clock: Clock,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("up", &self.is_up())
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

impl Database {
    /// A pool for `settings` (no connection is made yet) keeping `keys` current.
    ///
    /// # Errors
    /// An unreadable URL, a wrong TLS setting, an unreadable `sslrootcert` file (the URL
    /// itself is never in the message).
    pub fn new(
        settings: &DatabaseSettings,
        keys: Arc<DynamicKeys>,
        clock: Clock,
    ) -> Result<Arc<Self>, String> {
        let (url, tls) = tls::split(&settings.url).map_err(|e| format!("database.url_env: {e}"))?;
        let mut pg: tokio_postgres::Config = url
            .parse()
            .map_err(|e| format!("database.url_env: the URL is not a PostgreSQL URL ({e})"))?;
        tls.apply(&mut pg);
        pg.connect_timeout(CONNECT_TIMEOUT);
        pg.application_name("switchyard");
        let connector = tls
            .connector()
            .map_err(|e| format!("database.url_env: {e}"))?;
        let manager = Manager::from_config(
            pg.clone(),
            connector.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(settings.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| format!("database pool: {e}"))?;
        Ok(Arc::new(Self {
            pool,
            pg,
            tls: connector,
            up: AtomicBool::new(false),
            keys,
            resync: settings.resync,
            clock,
        }))
    }

    /// Did the last operation reach the database?
    #[must_use]
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    fn set_up(&self, up: bool) {
        let was = self.up.swap(up, Ordering::Relaxed);
        if was != up {
            if up {
                tracing::info!(target: "switchyard::database", "the database is reachable");
            } else {
                tracing::warn!(
                    target: "switchyard::database",
                    "the database is unreachable: keys are served from memory, changes and spend rows wait"
                );
            }
        }
    }

    /// The key table the request path reads.
    #[must_use]
    pub fn keys(&self) -> &Arc<DynamicKeys> {
        &self.keys
    }

    /// The clock (key expiry, grace periods).
    #[must_use]
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// A pooled connection.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when none can be had within the connect timeout.
    pub async fn client(&self) -> Result<Object, StoreError> {
        match self.pool.get().await {
            Ok(c) => {
                self.set_up(true);
                Ok(c)
            }
            Err(e) => {
                self.set_up(false);
                Err(StoreError::Unavailable(e.to_string()))
            }
        }
    }

    /// A connection of its own, outside the pool (the sync task's LISTEN connection), made
    /// as the pool's are: same settings, same TLS. Its `Connection` must be polled.
    ///
    /// # Errors
    /// The database cannot be reached, refuses the TLS or the login.
    pub async fn connect(
        &self,
    ) -> Result<
        (
            tokio_postgres::Client,
            tokio_postgres::Connection<tokio_postgres::Socket, tls::Stream>,
        ),
        tokio_postgres::Error,
    > {
        self.pg.connect(self.tls.clone()).await
    }

    /// Note an operation's outcome: a connection-level error marks the database down.
    pub(crate) fn observe<T>(&self, r: &Result<T, StoreError>) {
        match r {
            Err(StoreError::Unavailable(_)) => self.set_up(false),
            _ => self.set_up(true),
        }
    }

    /// Apply the embedded migrations; returns how many ran.
    ///
    /// # Errors
    /// The database is unreachable or a migration failed.
    pub async fn migrate(&self) -> Result<usize, StoreError> {
        let mut client = self.client().await?;
        let r = migrations::apply(&mut client)
            .await
            .map_err(StoreError::from);
        self.observe(&r);
        r
    }

    /// Start the background work: the sync task (migrations until they succeed, then the
    /// key table kept current) and, with a request log, the spend writer.
    pub fn start(self: &Arc<Self>, tasks: &Tasks, request_log: Option<PathBuf>) {
        tasks.spawn(sync::run(Arc::clone(self), tasks.stopping()));
        if let Some(path) = request_log {
            tasks.spawn(spend::run(Arc::clone(self), path, tasks.stopping()));
        }
    }
}
