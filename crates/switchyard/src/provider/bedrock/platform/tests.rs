#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::container::full_uri_allowed;
use super::web_identity::{is_role_arn, is_session_name, parse_credentials, refusal};
use super::*;

/// 2026-12-01T22:00:00Z.
const NOW_MS: u64 = 1_796_162_400_000;

#[test]
fn expirations_are_read_as_iso_8601_utc() {
    assert_eq!(parse_expiration("2026-12-01T22:00:00Z"), Some(NOW_MS));
    assert_eq!(
        parse_expiration(" 2026-12-01T22:00:00.500Z "),
        Some(NOW_MS + 500)
    );
    assert_eq!(parse_expiration("tomorrow"), None);
}

#[test]
fn sts_credentials_are_read_from_the_documented_xml() {
    let body = r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:ai:gateway</SubjectFromWebIdentityToken>
    <Audience>sts.amazonaws.com</Audience>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/bedrock/switchyard</Arn>
      <AssumedRoleId>AROACLKWSDQRAOEXAMPLE:switchyard</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <SessionToken>FwoG&amp;token+/=</SessionToken>
      <SecretAccessKey>wJalr/secret+key</SecretAccessKey>
      <Expiration>2026-12-01T22:00:00Z</Expiration>
      <AccessKeyId>ASIAEXAMPLE</AccessKeyId>
    </Credentials>
    <Provider>arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/X</Provider>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>"#;
    let issued = parse_credentials(body.as_bytes()).unwrap();
    assert_eq!(issued.credentials.access_key_id, "ASIAEXAMPLE");
    assert_eq!(
        issued.credentials.secret_access_key.expose(),
        "wJalr/secret+key"
    );
    assert_eq!(
        issued.credentials.session_token.unwrap().expose(),
        "FwoG&token+/="
    );
    assert_eq!(issued.expires_at, Some(NOW_MS));
    let err = parse_credentials(b"<AssumeRoleWithWebIdentityResponse/>").unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
}

#[test]
fn sts_errors_are_auth_with_their_code() {
    let body = br#"<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>No OpenIDConnect provider found in your account for https://oidc.example</Message></Error>
  <RequestId>c0ffee</RequestId>
</ErrorResponse>"#;
    let err = refusal(400, body);
    assert_eq!(err.kind, ErrorKind::Auth);
    assert_eq!(err.status, Some(400));
    assert_eq!(err.vendor_code.as_deref(), Some("InvalidIdentityToken"));
    assert!(err.message.contains("No OpenIDConnect provider"), "{err}");
    let err = refusal(503, b"<html>down</html>");
    assert_eq!(err.kind, ErrorKind::Auth);
    assert!(err.message.contains("HTTP 503"), "{err}");
}

#[test]
fn role_arns_and_session_names_are_checked_by_shape() {
    assert!(is_role_arn("arn:aws:iam::123456789012:role/bedrock"));
    assert!(is_role_arn(
        "arn:aws-us-gov:iam::123456789012:role/path/to/role"
    ));
    assert!(!is_role_arn("arn:aws:iam::123456789012:user/bob"));
    assert!(!is_role_arn("arn:aws:iam::1234:role/x"));
    assert!(!is_role_arn("bedrock"));
    assert!(is_session_name("switchyard-1796162400"));
    assert!(!is_session_name("a"));
    assert!(!is_session_name("has space"));
}

#[test]
fn full_uris_follow_the_sdk_host_rule() {
    for ok in [
        "http://127.0.0.1:8080/creds",
        "http://localhost/creds",
        "http://[::1]/creds",
        "http://169.254.170.2/v2/credentials/x",
        "http://169.254.170.23/v1/credentials",
        "http://[fd00:ec2::23]/v1/credentials",
        "https://creds.example.com/x",
    ] {
        assert_eq!(full_uri_allowed(ok), None, "{ok}");
    }
    for refused in [
        "http://10.0.0.5/creds",
        "http://169.254.169.254/creds",
        "http://creds.example.com/x",
        "ftp://127.0.0.1/x",
        "not a url",
    ] {
        assert!(full_uri_allowed(refused).is_some(), "{refused}");
    }
}

#[test]
fn container_json_and_its_errors_are_read() {
    let body = br#"{"AccessKeyId":"ASIAC","SecretAccessKey":"s3cr3t","Token":"tok","Expiration":"2026-12-01T22:00:00Z","RoleArn":"arn:aws:iam::123456789012:role/r"}"#;
    let issued = from_json(body, "container").unwrap();
    assert_eq!(issued.credentials.access_key_id, "ASIAC");
    assert_eq!(issued.expires_at, Some(NOW_MS));
    let err = from_json(
        br#"{"code":"InvalidToken","message":"bad token"}"#,
        "container",
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
    assert_eq!(err.message, "container: InvalidToken: bad token");
    let err = from_json(br#"{"AccessKeyId":"A"}"#, "container").unwrap_err();
    assert_eq!(err.message, "container: the answer has no SecretAccessKey");
}

/// An issuer that counts its fetches and answers from a script.
#[derive(Debug)]
struct Scripted {
    calls: Arc<AtomicUsize>,
    /// Lifetime of the credentials it issues; `None`: it fails.
    lifetime: Arc<Mutex<Option<Duration>>>,
    clock: Clock,
}

#[async_trait]
impl Issuer for Scripted {
    fn describe(&self) -> String {
        "scripted".into()
    }

    async fn issue(&self) -> Result<Issued, ProviderError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::task::yield_now().await;
        let lifetime = *self.lifetime.lock().unwrap();
        let Some(lifetime) = lifetime else {
            return Err(failed("scripted: refused, token secret-token-value"));
        };
        Ok(Issued {
            credentials: AwsCredentials {
                access_key_id: format!("ASIA{n}"),
                secret_access_key: Secret::new(format!("secret-{n}")),
                session_token: Some(Secret::new(format!("session-{n}"))),
            },
            expires_at: Some(self.clock.unix_ms() + duration_ms(lifetime)),
        })
    }

    fn secrets(&self) -> Vec<Secret> {
        vec![Secret::new("secret-token-value")]
    }
}

/// A cache over a [`Scripted`] issuer: the cache, its fetch count, its lifetime switch.
fn scripted(
    clock: Clock,
    lifetime: Option<Duration>,
) -> (
    PlatformCredentials,
    Arc<AtomicUsize>,
    Arc<Mutex<Option<Duration>>>,
) {
    let calls = Arc::new(AtomicUsize::new(0));
    let lifetime = Arc::new(Mutex::new(lifetime));
    let issuer = Scripted {
        calls: calls.clone(),
        lifetime: lifetime.clone(),
        clock,
    };
    (PlatformCredentials::new(issuer, clock), calls, lifetime)
}

#[tokio::test(start_paused = true)]
async fn credentials_are_refreshed_five_minutes_before_they_expire() {
    let clock = Clock::anchored_at(NOW_MS);
    let (creds, calls, _) = scripted(clock, Some(Duration::from_secs(3600)));
    assert_eq!(creds.get().await.unwrap().access_key_id, "ASIA1");
    tokio::time::advance(Duration::from_secs(3600 - 301)).await;
    assert_eq!(creds.get().await.unwrap().access_key_id, "ASIA1");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(creds.get().await.unwrap().access_key_id, "ASIA2");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // the credentials before are still scrubbed (a late error may echo them)
    let secrets: Vec<String> = creds
        .secrets()
        .iter()
        .map(|s| s.expose().to_owned())
        .collect();
    for s in [
        "secret-1",
        "session-1",
        "secret-2",
        "session-2",
        "secret-token-value",
    ] {
        assert!(secrets.contains(&s.to_owned()), "{s}");
    }
}

#[tokio::test(start_paused = true)]
async fn concurrent_calls_share_one_refresh() {
    let clock = Clock::anchored_at(NOW_MS);
    let (creds, calls, _) = scripted(clock, Some(Duration::from_secs(3600)));
    let creds = Arc::new(creds);
    let all = futures_util::future::join_all((0..16).map(|_| {
        let creds = creds.clone();
        async move { creds.get().await.unwrap().access_key_id }
    }))
    .await;
    assert!(all.iter().all(|id| id == "ASIA1"), "{all:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // due for a refresh: while one call refreshes, the others sign with what is still valid
    tokio::time::advance(Duration::from_secs(3600 - 60)).await;
    let all = futures_util::future::join_all((0..16).map(|_| {
        let creds = creds.clone();
        async move { creds.get().await.unwrap().access_key_id }
    }))
    .await;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(all.iter().any(|id| id == "ASIA2"), "{all:?}");
    assert!(
        all.iter().all(|id| id == "ASIA1" || id == "ASIA2"),
        "{all:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn short_lived_credentials_are_kept_a_minute_not_fetched_per_call() {
    let clock = Clock::anchored_at(NOW_MS);
    let (creds, calls, _) = scripted(clock, Some(Duration::from_secs(120)));
    creds.get().await.unwrap();
    tokio::time::advance(Duration::from_secs(59)).await;
    creds.get().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    tokio::time::advance(Duration::from_secs(1)).await;
    creds.get().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_failing_source_is_auth_without_secrets_and_held_briefly() {
    let clock = Clock::anchored_at(NOW_MS);
    let (creds, calls, _) = scripted(clock, None);
    let err = creds.get().await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
    assert!(!err.message.contains("secret-token-value"), "{err}");
    assert!(err.message.contains("[redacted]"), "{err}");
    // held: no second fetch within FAILURE_HOLD
    assert_eq!(creds.get().await.unwrap_err(), err);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    tokio::time::advance(FAILURE_HOLD).await;
    creds.get().await.unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn credentials_in_hand_carry_on_while_a_refresh_fails_until_they_expire() {
    let clock = Clock::anchored_at(NOW_MS);
    let (creds, calls, lifetime) = scripted(clock, Some(Duration::from_secs(3600)));
    assert_eq!(creds.get().await.unwrap().access_key_id, "ASIA1");
    *lifetime.lock().unwrap() = None;
    tokio::time::advance(Duration::from_secs(3600 - 200)).await;
    assert_eq!(creds.get().await.unwrap().access_key_id, "ASIA1");
    assert_eq!(calls.load(Ordering::SeqCst), 2, "a refresh was tried");
    tokio::time::advance(Duration::from_secs(200)).await;
    assert_eq!(creds.get().await.unwrap_err().kind, ErrorKind::Auth);
}
