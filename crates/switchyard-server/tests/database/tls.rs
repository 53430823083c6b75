//! TLS to the database (src/database/tls.rs) against clusters of the test's own
//! (`cluster.rs`): one with `ssl = on` whose `pg_hba.conf` takes TLS connections only
//! (`hostssl`), its certificate made here by a CA made here (names `localhost` and
//! `127.0.0.1`), and one without TLS. Each `sslmode` connects, or fails, as libpq's would,
//! through both ways the server connects: the pool and the LISTEN connection
//! (`Database::connect`). A role with a password logs in with SCRAM over TLS.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use switchyard::clock::Clock;
use switchyard_server::access::dynamic::DynamicKeys;
use switchyard_server::config::database::DatabaseSettings;
use switchyard_server::database::Database;

use crate::cluster::Cluster;

/// The certificate (PEM) of a CA called `ca`, and a certificate for `names` it signed, with
/// its key.
struct Issued {
    ca: String,
    cert: String,
    key: String,
}

fn issue(ca_name: &str, names: &[&str]) -> Issued {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, ca_name);
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "switchyard test server");
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    Issued {
        ca: ca.pem(),
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

/// A database for `url`, or the error `Database::new` gives at start.
fn database(url: &str) -> Result<Arc<Database>, String> {
    let settings = DatabaseSettings {
        url: url.to_owned(),
        pool_size: 1,
        resync: Duration::from_secs(30),
    };
    let keys = Arc::new(DynamicKeys::new(Clock::system(), 16));
    Database::new(&settings, keys, Clock::system())
}

/// Is this session encrypted?
const SSL: &str = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()";

/// Connect to `url` through the pool and through a connection of its own (the LISTEN
/// connection's way): whether each is encrypted, or the first error.
async fn connect(url: &str) -> Result<bool, String> {
    let db = database(url)?;
    let pooled = {
        let client = db.client().await.map_err(|e| format!("pool: {e}"))?;
        let row = client.query_one(SSL, &[]).await.unwrap();
        row.get::<_, bool>(0)
    };
    let (client, connection) = db.connect().await.map_err(|e| format!("connect: {e}"))?;
    let driver = tokio::spawn(connection);
    let own: bool = client.query_one(SSL, &[]).await.unwrap().get(0);
    drop(client);
    let _ = driver.await;
    assert_eq!(
        pooled, own,
        "{url}: the pool and the LISTEN connection agree"
    );
    Ok(pooled)
}

#[tokio::test]
async fn each_sslmode_connects_or_fails_as_libpq_s_against_a_tls_only_server() {
    let Some(cluster) = Cluster::start("tls") else {
        return;
    };
    let server = issue("switchyard test CA", &["localhost", "127.0.0.1"]);
    let stranger = issue("another CA", &["localhost", "127.0.0.1"]);
    cluster.write_private("server.crt", &server.cert);
    cluster.write_private("server.key", &server.key);
    cluster.configure(
        "ssl = on\npassword_encryption = 'scram-sha-256'\n",
        "local all all trust\n\
         hostssl all alice 127.0.0.1/32 scram-sha-256\n\
         hostssl all postgres 127.0.0.1/32 trust\n",
    );
    cluster.restart();
    let root = cluster.path("root.pem");
    std::fs::write(&root, &server.ca).unwrap();
    let wrong = cluster.path("wrong.pem");
    std::fs::write(&wrong, &stranger.ca).unwrap();
    let (root, wrong) = (root.display(), wrong.display());
    let port = cluster.port;
    let at =
        |host: &str, params: &str| format!("postgres://postgres@{host}:{port}/postgres?{params}");
    // a name the certificate does not have, for the address that serves it
    let elsewhere = |params: &str| at("db.example", &format!("hostaddr=127.0.0.1&{params}"));

    // verify-full: the chain and the name, by address and by name
    for host in ["127.0.0.1", "localhost"] {
        let url = at(host, &format!("sslmode=verify-full&sslrootcert={root}"));
        assert_eq!(connect(&url).await, Ok(true), "verify-full to {host}");
    }
    let e = connect(&at(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={wrong}"),
    ))
    .await
    .unwrap_err();
    assert!(
        e.contains("TLS handshake") && e.contains("UnknownIssuer"),
        "verify-full with another CA's root: {e}"
    );
    let e = connect(&elsewhere(&format!(
        "sslmode=verify-full&sslrootcert={root}"
    )))
    .await
    .unwrap_err();
    assert!(
        e.contains("TLS handshake") && e.contains("not valid for name \"db.example\""),
        "verify-full to a name the certificate lacks: {e}"
    );

    // verify-ca: the chain only
    let url = elsewhere(&format!("sslmode=verify-ca&sslrootcert={root}"));
    assert_eq!(
        connect(&url).await,
        Ok(true),
        "verify-ca, the name not checked"
    );
    let e = connect(&at(
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={wrong}"),
    ))
    .await
    .unwrap_err();
    assert!(
        e.contains("UnknownIssuer"),
        "verify-ca with another CA's root: {e}"
    );

    // require: encrypted, unchecked without a root; with one it is verify-ca
    assert_eq!(connect(&elsewhere("sslmode=require")).await, Ok(true));
    let e = connect(&at(
        "127.0.0.1",
        &format!("sslmode=require&sslrootcert={wrong}"),
    ))
    .await
    .unwrap_err();
    assert!(
        e.contains("UnknownIssuer"),
        "require with a root checks the chain: {e}"
    );

    // prefer (the default): TLS when the server offers it
    assert_eq!(connect(&at("127.0.0.1", "sslmode=prefer")).await, Ok(true));
    assert_eq!(
        connect(&format!("postgres://postgres@127.0.0.1:{port}/postgres")).await,
        Ok(true),
        "no sslmode is prefer"
    );

    // a Unix socket has no TLS: plain there whatever sslmode says, as with libpq (the
    // `local` line); libpq's key=value form is read too
    let socket = cluster.path("socket");
    let url = format!(
        "host={} port={port} user=postgres dbname=postgres sslmode=prefer",
        socket.display()
    );
    assert_eq!(connect(&url).await, Ok(false), "prefer over a Unix socket");
    let url = format!(
        "host={} port={port} user=postgres dbname=postgres sslmode=require",
        socket.display()
    );
    assert_eq!(
        connect(&url).await,
        Ok(false),
        "sslmode is not for Unix sockets (libpq's rule)"
    );

    // disable: plain, which this server's pg_hba.conf refuses
    let e = connect(&at("127.0.0.1", "sslmode=disable"))
        .await
        .unwrap_err();
    assert!(
        e.contains("no encryption"),
        "disable against hostssl only: {e}"
    );

    // wrong settings are refused at start, naming what is wrong
    let missing = cluster.path("missing.pem");
    let e = database(&at(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={}", missing.display()),
    ))
    .unwrap_err();
    assert!(
        e.contains("sslrootcert") && e.contains(&missing.display().to_string()),
        "{e}"
    );
    let e = database(&at("127.0.0.1", "sslmode=verify-full")).unwrap_err();
    assert!(e.contains("needs sslrootcert"), "{e}");

    // a password (SCRAM, bound to the TLS channel) as managed databases have
    let url = at(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={root}"),
    );
    let db = database(&url).unwrap();
    db.client()
        .await
        .unwrap()
        .batch_execute("CREATE ROLE alice LOGIN PASSWORD 'correct horse'")
        .await
        .unwrap();
    let alice = |password: &str| {
        format!(
            "postgres://alice:{password}@127.0.0.1:{port}/postgres?sslmode=verify-full&sslrootcert={root}"
        )
    };
    assert_eq!(connect(&alice("correct%20horse")).await, Ok(true));
    // not bound to the TLS channel (plain SCRAM-SHA-256, not -PLUS): tokio-postgres-rustls
    // 0.13 offers no channel binding (docs/operations.md "TLS to the database")
    let bound = format!("{}&channel_binding=require", alice("correct%20horse"));
    let e = connect(&bound).await.unwrap_err();
    assert!(e.contains("channel binding"), "{e}");
    let e = connect(&alice("wrong")).await.unwrap_err();
    assert!(
        e.contains("password authentication failed"),
        "a wrong password: {e}"
    );
    assert!(
        !e.contains("wrong"),
        "the password is not in the error: {e}"
    );
}

#[tokio::test]
async fn prefer_is_plain_and_require_fails_when_the_server_has_no_tls() {
    let Some(cluster) = Cluster::start("notls") else {
        return;
    };
    let url = |params: &str| format!("{}?{params}", cluster.url());
    assert_eq!(
        connect(&cluster.url()).await,
        Ok(false),
        "prefer, the default"
    );
    assert_eq!(connect(&url("sslmode=disable")).await, Ok(false));
    let e = connect(&url("sslmode=require")).await.unwrap_err();
    assert!(e.contains("server does not support TLS"), "require: {e}");
}
