//! `switchyard demo`: the tutorial in docs/tutorial.md, run on the library's real gateway.
//!
//! Owns the subcommand: its arguments ([`DemoArgs`]), its errors ([`DemoError`]) and the
//! order of its steps (load the scenario, replay it on a current-thread runtime, print).
//! The pieces: `scenario` (the TOML file and its checks), `replay` (scenario → `Gateway`,
//! requests → log rows), `summary` (pandas' arithmetic), `pyfmt` (Python's printing),
//! `render` (text and JSON). Without `--scenario` it replays the tutorial's own run,
//! preview included, and every number it prints equals the tutorial's.

mod pyfmt;
mod render;
mod replay;
mod scenario;
mod summary;

use std::io::Write as _;
use std::path::PathBuf;

pub use scenario::Scenario;

/// Arguments of `switchyard demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// A scenario TOML (requests, max_tokens, prompt, retries_per_provider,
    /// breaker_threshold, breaker_cooldown_requests, [[providers]]); default: the tutorial's.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Print one JSON object (every response, every log row, breakers, summary).
    #[arg(long)]
    pub json: bool,
}

/// Why the demo could not run.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The scenario file could not be read.
    #[error("cannot read scenario {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The scenario is not valid TOML for the schema (unknown keys included).
    #[error("invalid scenario: {0}")]
    Parse(String),
    /// The scenario's values are wrong; one line per problem, each naming its field.
    #[error("invalid scenario:\n  {}", .0.join("\n  "))]
    Invalid(Vec<String>),
    /// A problem found in a named file.
    #[error("{}: {inner}", path.display())]
    InFile {
        /// The scenario file.
        path: PathBuf,
        /// The problem.
        inner: Box<DemoError>,
    },
    /// A provider's answer lacked what a simulated provider always reports.
    #[error("provider {provider:?} reported no {what}")]
    Unreported {
        /// The provider.
        provider: String,
        /// `latency` or `cost`.
        what: String,
    },
    /// The runtime could not start, or the output could not be written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The JSON report could not be written.
    #[error("cannot write JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl DemoError {
    /// This error, attributed to scenario file `path`.
    #[must_use]
    pub fn in_file(self, path: &std::path::Path) -> Self {
        Self::InFile {
            path: path.to_owned(),
            inner: Box::new(self),
        }
    }
}

/// Run `switchyard demo` and print its output to stdout.
///
/// # Errors
/// A bad scenario file, a failed run, or stdout closed.
pub fn run(args: &DemoArgs) -> Result<(), DemoError> {
    let scenario = match &args.scenario {
        Some(path) => Scenario::load(path)?,
        None => Scenario::tutorial(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let output = runtime.block_on(output(&scenario, args))?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(output.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Everything the demo prints, as one string.
async fn output(scenario: &Scenario, args: &DemoArgs) -> Result<String, DemoError> {
    let replay = replay::replay(scenario).await?;
    if args.json {
        return Ok(render::replay_json(&replay)?);
    }
    let mut out = String::new();
    if args.scenario.is_none() {
        out.push_str(&render::preview_text(&replay::preview().await?));
    }
    out.push_str(&render::replay_text(&replay, scenario.requests));
    Ok(out)
}
