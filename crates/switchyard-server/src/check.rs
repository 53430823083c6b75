//! `switchyard check --config FILE`: validate and print what the server would run.
//!
//! Prints every route with its providers in order, each provider's kind, model and price
//! (or "unpriced"), the keys, and warnings: unpriced models, keys missing from the
//! environment. Exits non-zero on an invalid config (every problem listed).

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::config;

/// `switchyard check` options.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Config file (TOML).
    #[arg(long)]
    pub config: PathBuf,
}

/// Validate and print.
///
/// # Errors
/// The config's problems.
pub fn run(args: &CheckArgs) -> Result<(), String> {
    let env = |name: &str| std::env::var(name).ok();
    print!("{}", report(&args.config, &env)?);
    Ok(())
}

/// The text `check` prints.
///
/// # Errors
/// The config's problems.
pub fn report(path: &std::path::Path, env: config::KeyLookup<'_>) -> Result<String, String> {
    let cfg = config::load(path).map_err(|e| e.to_string())?;
    let built = config::build_gateway(&cfg, env, false, config::Wiring::default())?;
    let gw = &built.gateway;
    let mut out = String::new();
    let _ = writeln!(out, "{}: ok", path.display());
    let _ = writeln!(out, "\nroutes:");
    for r in gw.routes() {
        let budget = r
            .budget
            .map_or_else(|| "no budget".to_owned(), |b| format!("budget {b}"));
        let _ = writeln!(
            out,
            "  {}  order={:?} deadline={:?} retries={} {budget}\n    -> {}",
            r.name,
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
        let _ = writeln!(
            out,
            "  {}  kind={} model={} timeout={:?} {price}",
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
    if !warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for w in warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    Ok(out)
}
