//! The `switchyard` binary: parses the command line and hands off to the subcommand.
//!
//! Owns only the exit code; the CLI's shape and every subcommand live in the
//! `switchyard_server` library (`switchyard_server::cli`), whose errors `main` prints to stderr.

use std::process::ExitCode;

use clap::Parser;
use switchyard_server::cli::{self, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli::run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchyard: error: {e}");
            ExitCode::FAILURE
        }
    }
}
