//! The Redis URL's credentials: masking, finding and checking them, by string surgery
//! only.
//!
//! Nothing here parses the URL first: a password holding `/`, `?` or `#` unescaped makes
//! a URL parser cut the authority short (and fail, or read part of the password as a port
//! or a path), so a mask applied after parsing would miss it. Instead the userinfo is
//! everything between `://` and the *last* `@` (over-masking a URL with an `@` in its
//! query is harmless), its password is what follows the first `:`, and the `pass` /
//! `password` query parameters (`redis+unix:///run/redis.sock?pass=…`) are values too.

use crate::provider::secret::Secret;

/// What a masked credential prints as.
const MASK: &str = "***";

/// Characters that end a URL's authority; a password holding one must be percent-encoded.
const DELIMITERS: [char; 3] = ['/', '?', '#'];

/// Query parameters whose values are passwords.
const PASSWORD_PARAMS: [&str; 2] = ["pass", "password"];

/// The URL split where its credentials are.
struct Parts<'a> {
    /// Up to and including `://` (empty when there is none).
    scheme: &'a str,
    /// Between `://` and the last `@` (when there is an `@`).
    userinfo: Option<&'a str>,
    /// After the userinfo's `@` (or after `://`).
    rest: &'a str,
}

fn split(url: &str) -> Parts<'_> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let (scheme, after) = url.split_at(start);
    match after.rfind('@') {
        Some(at) => Parts {
            scheme,
            userinfo: Some(&after[..at]),
            rest: &after[at + 1..],
        },
        None => Parts {
            scheme,
            userinfo: None,
            rest: after,
        },
    }
}

/// The URL with every password replaced by `***`: the userinfo's (the user name is kept
/// when it is plainly one) and the `pass` / `password` query parameters'.
pub(super) fn mask(url: &str) -> String {
    let parts = split(url);
    let userinfo = parts.userinfo.map(|info| match info.split_once(':') {
        Some((user, _)) if !user.contains(DELIMITERS) => format!("{user}:{MASK}@"),
        None if !info.contains(DELIMITERS) => format!("{info}@"),
        _ => format!("{MASK}@"),
    });
    let mut out = String::with_capacity(url.len());
    out.push_str(parts.scheme);
    out.push_str(userinfo.as_deref().unwrap_or_default());
    let mut done = 0;
    for (start, end) in password_params(parts.rest) {
        out.push_str(&parts.rest[done..start]);
        out.push_str(MASK);
        done = end;
    }
    out.push_str(&parts.rest[done..]);
    out
}

/// Where in `rest` (the URL after its userinfo) the non-empty values of `pass` /
/// `password` query parameters are, in order.
fn password_params(rest: &str) -> Vec<(usize, usize)> {
    let Some(query) = rest.find('?').map(|q| q + 1) else {
        return Vec::new();
    };
    let end = rest[query..].find('#').map_or(rest.len(), |i| query + i);
    let mut found = Vec::new();
    let mut start = query;
    for pair in rest[query..end].split('&') {
        if let Some((name, value)) = pair.split_once('=') {
            if PASSWORD_PARAMS.contains(&name) && !value.is_empty() {
                let at = start + name.len() + 1;
                found.push((at, at + value.len()));
            }
        }
        start += pair.len() + 1;
    }
    found
}

/// Every password the URL holds, as written and percent-decoded, for scrubbing messages.
pub(super) fn secrets(url: &str) -> Vec<Secret> {
    let parts = split(url);
    let mut found: Vec<String> = Vec::new();
    if let Some(info) = parts.userinfo {
        match info.split_once(':') {
            Some((_, password)) => found.push(password.to_owned()),
            // no `:`: a user name, unless delimiters show a mangled password
            None if info.contains(DELIMITERS) => found.push(info.to_owned()),
            None => {}
        }
    }
    for (start, end) in password_params(parts.rest) {
        let value = &parts.rest[start..end];
        found.push(value.to_owned());
        found.push(value.replace('+', " ")); // a query decodes `+` as a space
    }
    let decoded: Vec<String> = found.iter().map(|p| percent_decode(p)).collect();
    found.extend(decoded);
    found.sort();
    found.dedup();
    found
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(Secret::new)
        .collect()
}

/// Why the URL cannot be used as written, with the URL masked: a userinfo holding `/`,
/// `?` or `#` (a URL parser would end the host there and read the rest as a port, path,
/// query or fragment).
pub(super) fn problem(url: &str) -> Option<String> {
    let info = split(url).userinfo?;
    info.contains(DELIMITERS).then(|| {
        format!(
            "Redis URL {} cannot be read: its password (or user name) contains `/`, `?` or `#`; \
             percent-encode them (`/` as %2F, `?` as %3F, `#` as %23, and `@` as %40)",
            mask(url)
        )
    })
}

/// `%XX` escapes decoded (what a password looks like once parsed from a URL).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = s
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_urls_are_masked_as_before() {
        assert_eq!(
            mask("redis://:s3cr%21t@10.0.0.1:6379/2"),
            "redis://:***@10.0.0.1:6379/2"
        );
        assert_eq!(mask("redis://app:pw@host"), "redis://app:***@host");
        assert_eq!(mask("redis://host:6379"), "redis://host:6379");
        assert_eq!(mask("redis://user@host"), "redis://user@host");
        assert_eq!(problem("redis://app:s3cr%2Ft@host:6379/0"), None);
        assert_eq!(problem("redis://host:6379/0?protocol=resp3"), None);
    }

    #[test]
    fn passwords_with_delimiters_are_masked_whole() {
        for (url, masked) in [
            ("redis://:ab/cd@host:6379", "redis://:***@host:6379"),
            (
                "redis://app:ab#cd@host:6379/1",
                "redis://app:***@host:6379/1",
            ),
            ("redis://app:ab?cd@host", "redis://app:***@host"),
            (
                "rediss://app:a/b?c#d@host:6380",
                "rediss://app:***@host:6380",
            ),
            ("redis://app:p@ss/w@host", "redis://app:***@host"),
            ("redis://pa/ss@host", "redis://***@host"),
            ("redis://a/b:cd@host", "redis://***@host"),
        ] {
            assert_eq!(mask(url), masked, "{url}");
            let problem = problem(url).unwrap();
            assert!(problem.contains(masked), "{problem}");
            assert!(problem.contains("percent-encode"), "{problem}");
        }
    }

    #[test]
    fn password_query_parameters_are_masked() {
        let url = "redis+unix:///run/redis.sock?db=1&pass=hunter%2F2&user=app#x";
        assert_eq!(
            mask(url),
            "redis+unix:///run/redis.sock?db=1&pass=***&user=app#x"
        );
        assert_eq!(mask("unix:///s?password=pw"), "unix:///s?password=***");
        assert_eq!(mask("unix:///s?pass="), "unix:///s?pass=");
        assert_eq!(
            mask("unix:///s?pass=a1&pass=b2&db=0"),
            "unix:///s?pass=***&pass=***&db=0"
        );
        let scrubbed: Vec<_> = secrets(url)
            .iter()
            .map(|s| s.scrub("auth hunter/2 failed"))
            .collect();
        assert!(
            scrubbed.iter().any(|s| s == "auth [redacted] failed"),
            "{scrubbed:?}"
        );
    }

    #[test]
    fn the_config_never_shows_the_password() {
        let cfg = super::super::RedisConfig::new("redis://app:pa/ss-word@10.0.0.1:6379");
        assert!(!format!("{cfg:?}").contains("ss-word"));
        assert_eq!(cfg.redacted_url(), "redis://app:***@10.0.0.1:6379");
        let err = cfg.check_url().unwrap_err();
        assert!(err.contains("redis://app:***@10.0.0.1:6379"), "{err}");
        assert!(!err.contains("ss-word"), "{err}");
        let fine = super::super::RedisConfig::new("redis://app:pa%2Fss@10.0.0.1:6379");
        assert_eq!(fine.check_url(), Ok(()));
    }

    #[test]
    fn secrets_are_the_password_as_written_and_decoded() {
        let found = secrets("redis://:s3cr%21t-long@10.0.0.1:6379/2");
        let exposed: Vec<_> = found.iter().map(Secret::expose).collect();
        assert_eq!(exposed, ["s3cr!t-long", "s3cr%21t-long"]);
        assert!(secrets("redis://user@host").is_empty());
        assert_eq!(secrets("redis://:a/b@host")[0].expose(), "a/b");
    }
}
