//! `switchyard check --config FILE [--listen ADDR]`: validate and print what the server
//! would run.
//!
//! Prints where it would listen, every route with its providers in order, each provider's
//! kind, model and price (or "unpriced") — and for Bedrock, which credentials it signs with
//! (`config::credentials_source`) — the keys, and warnings: unpriced models, prices
//! that lack a rate the vendor bills (cached input; Anthropic's 5-minute and 1-hour cache
//! writes), a price table older than [`config::STALE_PRICES_DAYS`], keys missing from the
//! environment, client keys anyone could guess, provider timeouts a route's deadline leaves
//! no room for (the build's warnings, which `serve` writes at start-up too). A misspelt or
//! misplaced field is an error naming the field meant, in the words `serve` refuses with
//! (`config::parse`). Exits non-zero on an
//! invalid config (every problem listed) and on everything `serve` would refuse before
//! listening (`config::preflight`, in `serve`'s words: a public address without keys, a
//! request log that cannot be read or appended to), and on a budget Redis whose
//! `maxmemory-policy` can evict budget books (`config::redis_policy`; a policy that evicts
//! other state, or one that cannot be read, is a warning).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::config;

/// `switchyard check` options.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Config file (TOML).
    #[arg(long)]
    pub config: PathBuf,
    /// Check as for `serve --listen ADDR` (overrides `[server] listen`).
    #[arg(long)]
    pub listen: Option<String>,
}

/// Validate and print.
///
/// # Errors
/// The config's problems.
pub fn run(args: &CheckArgs) -> Result<(), String> {
    let env = |name: &str| std::env::var(name).ok();
    let mut text = report(&args.config, args.listen.as_deref(), &env)?;
    if let Some(warning) = redis_policy(&args.config)? {
        if !text.contains("\nwarnings:\n") {
            text.push_str("\nwarnings:\n");
        }
        let _ = writeln!(text, "  - {warning}");
    }
    print!("{text}");
    Ok(())
}

/// The budget Redis's eviction policy, read as `serve` reads it at start (`serve`'s words).
///
/// # Errors
/// A policy that can evict budget books.
fn redis_policy(path: &std::path::Path) -> Result<Option<String>, String> {
    let cfg = config::load(path).map_err(|e| e.to_string())?;
    if config::redis_config(&cfg)?.is_none() {
        return Ok(None);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot check Redis: {e}"))?;
    rt.block_on(config::redis_policy(&cfg))
}

/// The text `check` prints, as for `serve --listen listen`, today.
///
/// # Errors
/// The config's problems, or what `serve` would refuse before listening (one per line).
pub fn report(
    path: &std::path::Path,
    listen: Option<&str>,
    env: config::KeyLookup<'_>,
) -> Result<String, String> {
    report_at(
        path,
        listen,
        env,
        switchyard::clock::Clock::system().system_time(),
    )
}

/// [`report`] as of `now` (the price table's age is measured from it).
///
/// # Errors
/// As [`report`].
pub fn report_at(
    path: &std::path::Path,
    listen: Option<&str>,
    env: config::KeyLookup<'_>,
    now: SystemTime,
) -> Result<String, String> {
    let cfg = config::load(path).map_err(|e| e.to_string())?;
    let refused = config::preflight(&cfg, listen);
    if !refused.is_empty() {
        return Err(refused.join("\n"));
    }
    let built = config::build_gateway(&cfg, env, false, config::Wiring::default())?;
    let gw = &built.gateway;
    let mut out = String::new();
    let _ = writeln!(out, "{}: ok", path.display());
    if let Ok(addr) = config::listen_address(&cfg, listen) {
        let _ = writeln!(out, "listen: {addr}");
    }
    let _ = writeln!(out, "\nroutes:");
    for r in gw.routes() {
        let budget = r
            .budget
            .map_or_else(|| "no budget".to_owned(), |b| format!("budget {b}"));
        let _ = writeln!(
            out,
            "  {}  api={} order={:?} deadline={:?} retries={} {budget}\n    -> {}",
            r.name,
            r.api.label(),
            r.order,
            r.deadline,
            r.retry.max_attempts,
            r.providers.join(" -> ")
        );
        if let Some(w) = &r.wildcard {
            let _ = writeln!(
                out,
                "    wildcard: {}<model> -> {} with the model, models = [{}], max_models = {}",
                w.prefix,
                r.providers.first().map_or("", String::as_str),
                w.models.join(", "),
                w.max_models
            );
        }
    }
    let _ = writeln!(out, "\nproviders:");
    for p in gw.providers() {
        let price = gw.price_of(&p.name).map_or_else(
            || "unpriced".to_owned(),
            |pr| {
                format!(
                    "${}/${} per MTok in/out",
                    pr.input_micros_per_mtok as f64 / 1e6,
                    pr.output_micros_per_mtok as f64 / 1e6
                )
            },
        );
        let api = match p.provider.native_kind() {
            Some("openai-responses") => " api=responses",
            _ => "",
        };
        let _ = writeln!(
            out,
            "  {}  kind={}{api} model={} timeout={:?} {price}",
            p.name,
            p.provider.kind(),
            p.provider.model(),
            p.timeout
        );
        let bedrock = cfg
            .providers
            .iter()
            .find(|e| e.name == p.name && e.kind == "bedrock");
        if let Some(entry) = bedrock {
            let source = config::credentials_source(entry, env).unwrap_or_else(|e| e);
            let _ = writeln!(out, "    credentials: {source}");
        }
    }
    let _ = writeln!(
        out,
        "\nkeys: {}",
        if cfg.keys.is_empty() {
            "none (loopback only)".to_owned()
        } else {
            cfg.keys
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    // the build's, then the rest `serve` says at start too (`config/warnings.rs`)
    let mut warnings = built.warnings;
    warnings.extend(config::warnings(&cfg, gw, now));
    if !warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for w in warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use switchyard::PriceTable;

    /// `text` written as `c.toml` in a fresh directory named by `tag`: (directory, file).
    fn write_config(tag: &str, text: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("sy-check-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn warns_of_unpriced_models_missing_keys_and_no_admin_key() {
        let (dir, path) = write_config(
            "keys",
            r#"
            [[providers]]
            name = "gpt"
            kind = "openai"
            model = "my-finetune"
            api_key_env = "SY_CHECK_TEST_KEY"
            [[routes]]
            name = "r"
            providers = ["gpt"]
            [[keys]]
            name = "team"
            sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
            routes = ["*"]
            "#,
        );
        let text = report(&path, None, &|_| None).unwrap();
        assert!(text.contains("r  api=chat order=Ordered"), "{text}");
        assert!(text.contains("SY_CHECK_TEST_KEY is not set"), "{text}");
        assert!(text.contains("has no known price"), "{text}");
        assert!(
            text.contains("no [[keys]] entry has admin = true"),
            "{text}"
        );
        assert!(
            text.contains("keys[0] (\"team\"): its sha256 is the hash of a well-known"),
            "the hash of \"test\": {text}"
        );
        assert!(text.contains("listen: 127.0.0.1:4000"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The deadline warning is in the list `serve` writes at start-up too (the build's).
    #[test]
    fn warns_of_a_timeout_the_routes_deadline_leaves_no_room_for() {
        let text = "[[providers]]\nname = \"s\"\nkind = \"simulated\"\ntimeout = \"8s\"\n\
                    [[routes]]\nname = \"r\"\nproviders = [\"s\"]\ndeadline = \"5s\"\n";
        let (dir, path) = write_config("deadline", text);
        let out = report(&path, None, &|_| None).unwrap();
        assert!(out.contains("route \"r\": its deadline (5s) is not longer than provider \"s\"'s timeout (8s), first_token_timeout (10s, the default), stall_timeout (15s, the default): those timeouts can never fire"), "{out}");
        let cfg = config::load(&path).unwrap();
        let built = config::build_gateway(&cfg, &|_| None, true, config::Wiring::default());
        assert!(
            built
                .unwrap()
                .warnings
                .iter()
                .any(|w| out.contains(w.as_str()) && w.contains("deadline (5s)")),
            "serve's start-up warnings hold the same words"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shows_a_wildcard_routes_template_and_allow_list() {
        let (dir, path) = write_config(
            "wild",
            r#"
            [[providers]]
            name = "gpt"
            kind = "openai"
            model = "gpt-4o-mini"
            [[routes]]
            name = "openai/*"
            providers = ["gpt"]
            models = ["gpt-4.1*", "o4-mini"]
            max_models = 8
            "#,
        );
        let text = report(&path, None, &|_| None).unwrap();
        assert!(
            text.contains(
                "wildcard: openai/<model> -> gpt with the model, models = [gpt-4.1*, o4-mini], max_models = 8"
            ),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `check` refuses what `serve` refuses before listening, in the same words.
    #[test]
    fn refuses_a_public_address_without_keys_and_an_unwritable_request_log() {
        let routes = "[[providers]]\nname = \"s\"\nkind = \"simulated\"\n[[routes]]\nname = \"r\"\nproviders = [\"s\"]\n";
        let (dir, path) = write_config(
            "serve",
            &format!("[server]\nlisten = \"0.0.0.0:4000\"\n{routes}"),
        );
        let log = dir.join("missing/requests.jsonl");
        let e = report(&path, None, &|_| None).unwrap_err();
        assert_eq!(
            e,
            config::listen_address(&config::load(&path).unwrap(), None).unwrap_err()
        );
        assert!(
            e.starts_with("refusing to listen on 0.0.0.0:4000 without client keys"),
            "{e}"
        );
        assert!(
            report(&path, Some("127.0.0.1:4000"), &|_| None).is_ok(),
            "as `serve --listen`"
        );

        let server = format!("[server]\nrequest_log = {:?}\n", log.to_str().unwrap());
        std::fs::write(&path, format!("{server}{routes}")).unwrap();
        let e = report(&path, Some("0.0.0.0:1"), &|_| None).unwrap_err();
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 2, "every refusal at once: {e}");
        assert!(
            lines[0].starts_with("refusing to listen on 0.0.0.0:1"),
            "{e}"
        );
        assert!(
            lines[1].starts_with(&format!("request log {}: ", log.display())),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_redis_password_that_needs_escaping_is_an_error_shown_masked() {
        let dir = std::env::temp_dir().join(format!("sy-check-redis-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        for (url, masked) in [
            (
                "redis://app:hunter/2x@10.0.0.1:6379/0",
                "redis://app:***@10.0.0.1:6379/0",
            ),
            (
                "redis://:hunter#2x@10.0.0.1:6379",
                "redis://:***@10.0.0.1:6379",
            ),
            (
                "rediss://app:hunter?2x@10.0.0.1",
                "rediss://app:***@10.0.0.1",
            ),
        ] {
            let config = format!(
                "[[providers]]\nname = \"s\"\nkind = \"simulated\"\n\
                 [[routes]]\nname = \"r\"\nproviders = [\"s\"]\n\
                 [state]\nbackend = \"redis\"\nurl = \"{url}\"\n"
            );
            std::fs::write(&path, config).unwrap();
            let err = report(&path, None, &|_| None).unwrap_err();
            assert!(err.contains("state.url"), "{err}");
            assert!(err.contains(masked), "{err}");
            assert!(err.contains("percent-encode"), "{err}");
            assert!(!err.contains("hunter"), "{err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The shipped table's `as_of` plus `days`.
    fn days_after_as_of(days: u64) -> SystemTime {
        let as_of = &PriceTable::builtin().as_of;
        switchyard::provider::anthropic::parse_rfc3339(&format!("{as_of}T00:00:00Z")).unwrap()
            + Duration::from_secs(days * 86_400)
    }

    #[test]
    fn warns_of_prices_without_a_rate_the_vendor_bills() {
        let (dir, path) = write_config(
            "rates",
            r#"
            [[providers]]
            name = "claude"
            kind = "anthropic"
            model = "claude-haiku-5-5"
            price = { input_per_mtok = 0.1, output_per_mtok = 0.5, cache_write_per_mtok = 0.125 }
            [[providers]]
            name = "gem"
            kind = "gemini"
            model = "my-tuned-gemini"
            price = { input_per_mtok = 0.3, output_per_mtok = 2.5 }
            [[providers]]
            name = "shipped"
            kind = "gemini"
            model = "gemini-2.5-pro"
            [[providers]]
            name = "local"
            kind = "openai"
            model = "llama"
            base_url = "http://127.0.0.1:8000/v1"
            price = { input_per_mtok = 0.0, output_per_mtok = 0.0 }
            [[routes]]
            name = "r"
            providers = ["claude", "gem", "shipped", "local"]
            "#,
        );
        let text = report_at(&path, None, &|_| Some("k".into()), days_after_as_of(1)).unwrap();
        assert!(
            text.contains(r#"provider "claude": the config's price for model "claude-haiku-5-5" has no cached input, 1-hour cache write rate, though anthropic bills it"#),
            "{text}"
        );
        assert!(
            text.contains(r#"provider "gem": the config's price for model "my-tuned-gemini" has no cached input rate"#),
            "{text}"
        );
        // the shipped Gemini 2.5 Pro price is complete; a custom endpoint bills its own way
        assert!(!text.contains(r#"provider "shipped""#), "{text}");
        assert!(!text.contains(r#"provider "local""#), "{text}");
        assert!(!text.contains("prices.json is dated"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn warns_when_the_price_table_is_older_than_ninety_days() {
        let (dir, path) = write_config(
            "stale",
            "[[providers]]\nname = \"g\"\nkind = \"gemini\"\nmodel = \"gemini-2.5-flash\"\n\
             [[routes]]\nname = \"r\"\nproviders = [\"g\"]\n",
        );
        let env = |_: &str| Some("k".to_owned());
        let at_90 = report_at(&path, None, &env, days_after_as_of(90)).unwrap();
        assert!(!at_90.contains("prices.json is dated"), "{at_90}");
        let at_91 = report_at(&path, None, &env, days_after_as_of(91)).unwrap();
        let as_of = &PriceTable::builtin().as_of;
        assert!(
            at_91.contains(&format!(
                "prices.json is dated {as_of}, 91 days ago (more than 90)"
            )),
            "{at_91}"
        );
        // a provider priced by the config does not use the table: no warning about its age
        std::fs::write(
            &path,
            "[[providers]]\nname = \"g\"\nkind = \"gemini\"\nmodel = \"gemini-2.5-flash\"\n\
             price = { input_per_mtok = 0.3, output_per_mtok = 2.5, cached_input_per_mtok = 0.03 }\n\
             [[routes]]\nname = \"r\"\nproviders = [\"g\"]\n",
        )
        .unwrap();
        let own = report_at(&path, None, &env, days_after_as_of(400)).unwrap();
        assert!(!own.contains("prices.json is dated"), "{own}");
        assert!(!own.contains("warnings:"), "{own}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
