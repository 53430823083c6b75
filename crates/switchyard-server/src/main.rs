//! The `switchyard` binary: parses the command line, installs the diagnostics subscriber
//! (`RUST_LOG`, default `info`, on stderr) and hands off to the subcommand.
//!
//! Owns only the exit code; the CLI's shape and every subcommand live in the
//! `switchyard_server` library (`switchyard_server::cli`), whose errors `main` prints to stderr.

use std::process::ExitCode;

use clap::Parser;
use switchyard_server::cli::{self, Cli};
use switchyard_server::telemetry::trace;

fn main() -> ExitCode {
    let cli = Cli::parse();
    trace::install();
    match cli::run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchyard: error: {e}");
            ExitCode::FAILURE
        }
    }
}
