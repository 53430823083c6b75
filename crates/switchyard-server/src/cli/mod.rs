//! The command line: its shape ([`Cli`], [`Command`]) and one module per subcommand.
//!
//! Each subcommand returns a `Result` whose error the binary prints to stderr; `serve` is
//! the long-running one (the server's startup and shutdown sequence lives there).

pub mod check;
pub mod demo;
pub mod keys;
pub mod report;
pub mod serve;

use clap::{Parser, Subcommand};

/// switchyard: an LLM gateway that keeps answering when a model provider fails.
#[derive(Debug, Parser)]
#[command(name = "switchyard", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Diagnostics on stderr as text lines or JSON objects (default: `[server]
    /// log_format`, else text).
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<crate::telemetry::trace::LogFormat>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the OpenAI-compatible proxy (without --config: simulated providers, no keys).
    Serve(serve::ServeArgs),
    /// Validate a config and print the routes, providers, prices and warnings.
    Check(check::CheckArgs),
    /// Summarise a request log per provider.
    Report(report::ReportArgs),
    /// Manage client keys.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// Replay the tutorial's gateway run (docs/tutorial.md) on switchyard's real gateway, or a
    /// scenario of your own.
    Demo(demo::DemoArgs),
}

/// The `switchyard` binary's whole life for a command line (`args`, the program name
/// first): parse it (help, version and usage errors print and exit the process as clap
/// does), install the diagnostics subscriber (`serve` installs its own after reading its
/// config), run the subcommand and print its error. `src/main.rs` and the Python package's
/// `switchyard` command (`python/src/lib.rs`) both come here.
pub fn main<I, T>(args: I) -> std::process::ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use crate::telemetry::trace;
    let cli = Cli::parse_from(args);
    // `serve` installs it once its config (and `[server] log_format`) is read
    if !matches!(cli.command, Command::Serve(_)) {
        trace::install(cli.log_format.unwrap_or_default());
    }
    match run(&cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // `serve` has installed the subscriber in its format (JSON lines, say)
        Err(e) if matches!(cli.command, Command::Serve(_)) => {
            tracing::error!(target: trace::SERVE, "{e}");
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("switchyard: error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Run the subcommand `cli` names.
pub fn run(cli: &Cli) -> Result<(), String> {
    match &cli.command {
        Command::Serve(args) => serve::run(args, cli.log_format),
        Command::Check(args) => check::run(args),
        Command::Report(args) => report::run(args),
        Command::Keys(cmd) => keys::run(cmd),
        Command::Demo(args) => demo::run(args).map_err(|e| e.to_string()),
    }
}
