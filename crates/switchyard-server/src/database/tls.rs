//! TLS to PostgreSQL, as libpq's `sslmode` and `sslrootcert` ask (docs/operations.md "TLS to
//! the database").
//!
//! tokio-postgres knows `sslmode` `disable`, `prefer` and `require` only, and rejects
//! `sslrootcert` as unknown; so both are taken out of the URL here ([`split`]), the rest is
//! handed to tokio-postgres, and the mode is kept as [`Mode`]: what tokio-postgres is told
//! (whether to ask for TLS, whether to insist) plus how the server's certificate is checked,
//! which is the rustls verifier of the connector ([`Tls::connector`]).
//!
//! | `sslmode` | TLS | certificate checked |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (default) | if the server offers it | only with `sslrootcert`: the chain |
//! | `require` | always | only with `sslrootcert`: the chain (libpq's `verify-ca`) |
//! | `verify-ca` | always | the chain (`sslrootcert` needed) |
//! | `verify-full` | always | the chain and the host name (`sslrootcert` needed) |
//!
//! `sslrootcert` names a PEM file of root certificates, or is `system` for the platform's
//! roots (webpki-roots), which makes the default mode `verify-full` and any other an error, as
//! in libpq 16. Over Unix sockets there is no TLS whatever `sslmode` says, as with libpq.
//! The rustls stack is the workspace's one (ring, as reqwest's).

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connector every connection to the database is made with (the pool's and the LISTEN
/// connection's): tokio-postgres-rustls's, but for a host without a name.
///
/// tokio-postgres asks for a TLS connector for every host, a Unix socket's too (named `""`),
/// which tokio-postgres-rustls refuses as an invalid DNS name, failing the connection before
/// it starts. Such a connector is never used: PostgreSQL answers a Unix socket's TLS request
/// with no, and tokio-postgres refuses TLS without a host name before any handshake (its
/// `connect_tls`). So a nameless host gets a connector for a placeholder name, and so does
/// every host with `sslmode=disable` (whose name need not be a valid DNS name then).
#[derive(Clone)]
pub struct Connector {
    rustls: MakeRustlsConnect,
    disabled: bool,
}

/// The TLS stream of a connection made with [`Connector`] (tokio-postgres wraps it when plain).
pub type Stream = <Connector as MakeTlsConnect<tokio_postgres::Socket>>::Stream;

impl<S> MakeTlsConnect<S> for Connector
where
    MakeRustlsConnect: MakeTlsConnect<S>,
{
    type Stream = <MakeRustlsConnect as MakeTlsConnect<S>>::Stream;
    type TlsConnect = <MakeRustlsConnect as MakeTlsConnect<S>>::TlsConnect;
    type Error = <MakeRustlsConnect as MakeTlsConnect<S>>::Error;

    fn make_tls_connect(&mut self, hostname: &str) -> Result<Self::TlsConnect, Self::Error> {
        let name = if hostname.is_empty() || self.disabled {
            "unix-socket.invalid"
        } else {
            hostname
        };
        self.rustls.make_tls_connect(name)
    }
}

/// `sslmode`, as libpq spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Never TLS.
    Disable,
    /// TLS if the server offers it (libpq's default).
    Prefer,
    /// Always TLS.
    Require,
    /// Always TLS, the certificate's chain checked.
    VerifyCa,
    /// Always TLS, the certificate's chain and name checked.
    VerifyFull,
}

impl Mode {
    fn parse(s: &str) -> Result<Self, String> {
        Ok(match s {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            "allow" => {
                return Err(
                    "sslmode=allow (plain first, TLS only if refused) is not supported: use prefer or disable"
                        .to_owned(),
                )
            }
            _ => {
                return Err(format!(
                    "sslmode={s} is not one of disable, prefer, require, verify-ca, verify-full"
                ))
            }
        })
    }

    /// What tokio-postgres is told: whether to ask for TLS and whether to insist.
    fn ssl_mode(self) -> SslMode {
        match self {
            Self::Disable => SslMode::Disable,
            Self::Prefer => SslMode::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => SslMode::Require,
        }
    }
}

/// Where the trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Roots {
    /// None given: the certificate is not checked (`prefer`, `require`).
    None,
    /// `sslrootcert=system`: webpki-roots.
    System,
    /// `sslrootcert=<file>`: a PEM bundle.
    File(String),
}

/// The TLS settings of a database URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// `sslmode` (given or defaulted).
    pub mode: Mode,
    roots: Roots,
}

/// `url` without its `sslmode` and `sslrootcert` parameters (for tokio-postgres), and the
/// TLS settings they make. Both forms are read: a URL (`postgres://…?sslmode=verify-full`)
/// and libpq's `key=value` pairs (`host=… sslmode=verify-full`).
///
/// # Errors
/// A setting is wrong; the message names it and never holds the URL.
pub fn split(url: &str) -> Result<(Cow<'_, str>, Tls), String> {
    let (rest, mode, rootcert) = if is_url(url) {
        split_url(url)?
    } else {
        split_pairs(url)
    };
    let roots = match rootcert.as_deref() {
        None | Some("") => Roots::None,
        Some("system") => Roots::System,
        Some(file) => Roots::File(file.to_owned()),
    };
    let mode = match mode.as_deref() {
        Some(m) => Mode::parse(m)?,
        // libpq 16: the platform's roots make verify-full the default
        None if roots == Roots::System => Mode::VerifyFull,
        None => Mode::Prefer,
    };
    if roots == Roots::System && mode != Mode::VerifyFull {
        return Err(format!(
            "sslrootcert=system (the platform's roots) needs sslmode=verify-full, not {}: anyone can get a certificate from a public authority for a name they own",
            mode_name(mode)
        ));
    }
    if matches!(mode, Mode::VerifyCa | Mode::VerifyFull) && roots == Roots::None {
        return Err(format!(
            "sslmode={} checks the server's certificate and needs sslrootcert=<PEM file of the root certificates> (or sslrootcert=system for the platform's roots)",
            mode_name(mode)
        ));
    }
    if mode == Mode::Disable && roots != Roots::None {
        return Err("sslrootcert is given but sslmode=disable makes no TLS connection".to_owned());
    }
    Ok((rest, Tls { mode, roots }))
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Disable => "disable",
        Mode::Prefer => "prefer",
        Mode::Require => "require",
        Mode::VerifyCa => "verify-ca",
        Mode::VerifyFull => "verify-full",
    }
}

impl Tls {
    /// Tell tokio-postgres whether to ask for TLS and whether to insist. Over Unix sockets
    /// only, never: PostgreSQL has no TLS there and libpq ignores `sslmode` for them.
    pub fn apply(&self, pg: &mut tokio_postgres::Config) {
        let unix_only = pg.get_hostaddrs().is_empty()
            && !pg.get_hosts().is_empty()
            && pg.get_hosts().iter().all(is_unix);
        pg.ssl_mode(if unix_only {
            SslMode::Disable
        } else {
            self.mode.ssl_mode()
        });
    }

    /// The connector: rustls with ring, checking the server's certificate as the mode asks.
    /// The root certificates are read here, once, at start.
    ///
    /// # Errors
    /// `sslrootcert`'s file cannot be read or holds no certificate (the message names it).
    pub fn connector(&self) -> Result<Connector, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("database TLS: {e}"))?;
        let roots = match &self.roots {
            Roots::None => None,
            Roots::System => Some(RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            }),
            Roots::File(file) => Some(read_roots(file)?),
        };
        let config = match (roots, self.mode) {
            (Some(roots), Mode::VerifyFull) => builder.with_root_certificates(roots),
            // prefer/require with sslrootcert behave as verify-ca, as libpq's do
            (Some(roots), _) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly {
                    roots: Arc::new(roots),
                    provider,
                })),
            (None, _) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked { provider })),
        }
        .with_no_client_auth();
        Ok(Connector {
            rustls: MakeRustlsConnect::new(config),
            disabled: self.mode == Mode::Disable,
        })
    }
}

/// Is `host` a Unix socket's directory?
fn is_unix(host: &tokio_postgres::config::Host) -> bool {
    match host {
        tokio_postgres::config::Host::Tcp(_) => false,
        #[cfg(unix)]
        tokio_postgres::config::Host::Unix(_) => true,
    }
}

/// The certificates of the PEM file `file`.
fn read_roots(file: &str) -> Result<RootCertStore, String> {
    let bytes = std::fs::read(Path::new(file))
        .map_err(|e| format!("sslrootcert: cannot read {file}: {e}"))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert =
            cert.map_err(|e| format!("sslrootcert: {file} is not a PEM certificate bundle ({e})"))?;
        roots
            .add(cert)
            .map_err(|e| format!("sslrootcert: a certificate in {file} is unusable ({e})"))?;
    }
    if roots.is_empty() {
        return Err(format!(
            "sslrootcert: {file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        ));
    }
    Ok(roots)
}

/// Does `s` start as a URL (`postgres://` or `postgresql://`), as tokio-postgres decides?
fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// What [`split`] returns before the TLS settings are checked.
type Parts<'a> = (Cow<'a, str>, Option<String>, Option<String>);

/// The URL form: the query's `sslmode` and `sslrootcert` taken out (percent-decoded, as
/// tokio-postgres decodes parameters); every other parameter is left as written.
fn split_url(url: &str) -> Result<Parts<'_>, String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((Cow::Borrowed(url), None, None));
    };
    let (mut mode, mut rootcert) = (None, None);
    let mut kept: Vec<&str> = Vec::new();
    for param in query.split('&') {
        let (key, value) = param.split_once('=').unwrap_or((param, ""));
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(Cow::into_owned)
                .map_err(|_| "a URL parameter is not UTF-8".to_owned())
        };
        match decode(key)?.as_str() {
            "sslmode" => mode = Some(decode(value)?),
            "sslrootcert" => rootcert = Some(decode(value)?),
            _ => kept.push(param),
        }
    }
    if mode.is_none() && rootcert.is_none() {
        return Ok((Cow::Borrowed(url), None, None));
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((Cow::Owned(rest), mode, rootcert))
}

/// The `key=value` form, read as tokio-postgres reads it (values quoted with `'`, `\`
/// escaping): `sslmode` and `sslrootcert` taken out, the rest left as written. Text it
/// cannot read is passed on whole, for tokio-postgres to say what is wrong.
fn split_pairs(s: &str) -> Parts<'_> {
    let (mut mode, mut rootcert) = (None, None);
    let mut rest = String::new();
    let mut it = s.char_indices().peekable();
    let skip_ws = |it: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_ws(&mut it);
        let Some(&(start, _)) = it.peek() else { break };
        let mut key = String::new();
        while let Some((_, c)) = it.next_if(|&(_, c)| !c.is_whitespace() && c != '=') {
            key.push(c);
        }
        skip_ws(&mut it);
        if it.next_if(|&(_, c)| c == '=').is_none() {
            return (Cow::Borrowed(s), None, None);
        }
        skip_ws(&mut it);
        let mut value = String::new();
        let quoted = it.next_if(|&(_, c)| c == '\'').is_some();
        loop {
            match it.next() {
                Some((_, '\\')) => {
                    if let Some((_, c)) = it.next() {
                        value.push(c);
                    }
                }
                Some((_, '\'')) if quoted => break,
                Some((_, c)) if !quoted && c.is_whitespace() => break,
                Some((_, c)) => value.push(c),
                None if quoted => return (Cow::Borrowed(s), None, None),
                None => break,
            }
        }
        let end = it.peek().map_or(s.len(), |&(i, _)| i);
        match key.as_str() {
            "sslmode" => mode = Some(value),
            "sslrootcert" => rootcert = Some(value),
            _ => {
                rest.push_str(s[start..end].trim_end());
                rest.push(' ');
            }
        }
    }
    if mode.is_none() && rootcert.is_none() {
        return (Cow::Borrowed(s), None, None);
    }
    (Cow::Owned(rest.trim_end().to_owned()), mode, rootcert)
}

/// `verify-ca` (and `prefer`/`require` given roots): the chain must lead to one of `roots`;
/// the name in the certificate is not compared with the host's.
#[derive(Debug)]
struct ChainOnly {
    roots: Arc<RootCertStore>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.provider.signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `prefer` and `require` without roots: encrypted, the certificate not checked (libpq's
/// meaning of these modes). The handshake's signatures are still verified, so the peer holds
/// the key of the certificate it shows.
#[derive(Debug)]
struct Unchecked {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str) -> (String, Tls) {
        let (rest, tls) = split(url).unwrap();
        (rest.into_owned(), tls)
    }

    #[test]
    fn the_url_loses_its_tls_parameters_and_keeps_the_rest_as_written() {
        let (rest, tls) = ok("postgres://u:p%40ss@db.example:5432/sy?application_name=a%20b&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=3");
        assert_eq!(
            rest,
            "postgres://u:p%40ss@db.example:5432/sy?application_name=a%20b&connect_timeout=3"
        );
        assert_eq!(tls.mode, Mode::VerifyFull);
        assert_eq!(tls.roots, Roots::File("/etc/ca.pem".to_owned()));
        let (rest, tls) = ok("postgresql://u@h/db?sslmode=require");
        assert_eq!(rest, "postgresql://u@h/db");
        assert_eq!((tls.mode, tls.roots), (Mode::Require, Roots::None));
        let (rest, tls) = ok("postgres://u@h/db");
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!(tls.mode, Mode::Prefer, "libpq's default");
        let (rest, tls) = ok("postgres://u@h/db?sslrootcert=system");
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!((tls.mode, tls.roots), (Mode::VerifyFull, Roots::System));
    }

    #[test]
    fn key_value_pairs_lose_their_tls_parameters_too() {
        let (rest, tls) = ok(
            "host=db.example  sslmode = verify-ca password='a b\\' c' sslrootcert='/my ca.pem' dbname=sy",
        );
        assert_eq!(rest, "host=db.example password='a b\\' c' dbname=sy");
        assert_eq!(tls.mode, Mode::VerifyCa);
        assert_eq!(tls.roots, Roots::File("/my ca.pem".to_owned()));
        let (rest, tls) = ok("host=h user=u");
        assert_eq!((rest.as_str(), tls.mode), ("host=h user=u", Mode::Prefer));
        // what tokio-postgres reads the same way
        let pg: tokio_postgres::Config = ok("host=h password='x y' sslmode=require")
            .0
            .parse()
            .unwrap();
        assert_eq!(pg.get_password(), Some(&b"x y"[..]));
    }

    #[test]
    fn wrong_settings_say_which_and_never_show_the_url() {
        let err = |url: &str| split(url).unwrap_err();
        let e = err("postgres://u:secret@h/db?sslmode=verify-full");
        assert!(e.contains("sslrootcert"), "{e}");
        assert!(!e.contains("secret"), "{e}");
        assert!(err("postgres://u@h/db?sslmode=verify-ca").contains("sslmode=verify-ca"));
        let e = err("postgres://u:secret@h/db?sslmode=sure");
        assert!(e.contains("sslmode=sure is not one of"), "{e}");
        assert!(!e.contains("secret"), "{e}");
        assert!(err("postgres://u@h/db?sslmode=allow").contains("allow"));
        let e = err("postgres://u@h/db?sslmode=require&sslrootcert=system");
        assert!(e.contains("needs sslmode=verify-full, not require"), "{e}");
        assert!(err("postgres://u@h/db?sslmode=disable&sslrootcert=/ca.pem").contains("disable"));
        let missing = Tls {
            mode: Mode::VerifyFull,
            roots: Roots::File("/nonexistent/root.pem".to_owned()),
        };
        let e = missing.connector().err().unwrap();
        assert!(
            e.contains("sslrootcert") && e.contains("/nonexistent/root.pem"),
            "{e}"
        );
    }

    #[test]
    fn a_file_without_certificates_is_refused() {
        let dir = std::env::temp_dir().join(format!("switchyard-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("empty.pem");
        std::fs::write(&file, "not a certificate\n").unwrap();
        let e = read_roots(file.to_str().unwrap()).err().unwrap();
        assert!(e.contains("holds no PEM certificate"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn every_mode_makes_a_connector() {
        for url in [
            "postgres://h/db?sslmode=disable",
            "postgres://h/db",
            "postgres://h/db?sslmode=require",
            "postgres://h/db?sslrootcert=system",
        ] {
            let (_, tls) = ok(url);
            assert!(tls.connector().is_ok(), "{url}");
        }
    }
}
