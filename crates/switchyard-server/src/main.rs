//! The `switchyard` binary: parses the command line, installs the diagnostics subscriber
//! (`RUST_LOG`, default `info`, on stderr; `serve` installs its own, after reading its
//! config) and hands off to the subcommand.
//!
//! Owns only the exit code; the CLI's shape and every subcommand live in the
//! `switchyard_server` library (`switchyard_server::cli`), whose errors `main` prints to
//! stderr (through the subscriber for `serve`, so a JSON log's last line is JSON too).

use std::process::ExitCode;

use clap::Parser;
use switchyard_server::cli::{self, Cli};
use switchyard_server::telemetry::trace;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `serve` installs it once its config (and `[server] log_format`) is read
    if !matches!(cli.command, cli::Command::Serve(_)) {
        trace::install(cli.log_format.unwrap_or_default());
    }
    match cli::run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        // `serve` has installed the subscriber in its format (JSON lines, say)
        Err(e) if matches!(cli.command, cli::Command::Serve(_)) => {
            tracing::error!(target: trace::SERVE, "{e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("switchyard: error: {e}");
            ExitCode::FAILURE
        }
    }
}
