//! `switchyard check --config FILE [--listen ADDR]`: validate and print what the server
//! would run.
//!
//! Prints where it would listen, every route with its providers in order, each provider's
//! kind, model and price (or "unpriced"), the keys, and warnings: unpriced models, keys
//! missing from the environment, client keys anyone could guess. Exits non-zero on an
//! invalid config (every problem listed) and on everything `serve` would refuse before
//! listening (`config::preflight`, in `serve`'s words: a public address without keys, a
//! request log that cannot be read or appended to).

use std::fmt::Write as _;
use std::path::PathBuf;

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
    print!("{}", report(&args.config, args.listen.as_deref(), &env)?);
    Ok(())
}

/// The text `check` prints, as for `serve --listen listen`.
///
/// # Errors
/// The config's problems, or what `serve` would refuse before listening (one per line).
pub fn report(
    path: &std::path::Path,
    listen: Option<&str>,
    env: config::KeyLookup<'_>,
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
    let mut warnings = built.warnings;
    for p in gw.providers() {
        if gw.price_of(&p.name).is_none() {
            warnings.push(format!("provider {:?}: model {:?} has no known price: its cost will be reported as unknown", p.name, p.provider.model()));
        }
    }
    if !cfg.keys.is_empty() && !cfg.keys.iter().any(|k| k.admin == Some(true)) {
        warnings.push("no [[keys]] entry has admin = true: /admin/* and the dashboard will refuse every caller".to_owned());
    }
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

    #[test]
    fn warns_of_unpriced_models_missing_keys_and_no_admin_key() {
        let dir = std::env::temp_dir().join(format!("sy-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(
            &path,
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
        )
        .unwrap();
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

    /// `check` refuses what `serve` refuses before listening, in the same words.
    #[test]
    fn refuses_a_public_address_without_keys_and_an_unwritable_request_log() {
        let dir = std::env::temp_dir().join(format!("sy-check-serve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        let log = dir.join("missing/requests.jsonl");
        let routes = "[[providers]]\nname = \"s\"\nkind = \"simulated\"\n[[routes]]\nname = \"r\"\nproviders = [\"s\"]\n";
        std::fs::write(
            &path,
            format!("[server]\nlisten = \"0.0.0.0:4000\"\n{routes}"),
        )
        .unwrap();
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
}
