//! The `switchyard` binary: parses the command line and hands off to a subcommand.
//!
//! Owns the CLI's shape ([`Cli`], [`Command`]) and the exit code; each subcommand lives in
//! its own module and returns a `Result` whose error `main` prints to stderr.

mod demo;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// switchyard: an LLM gateway that keeps answering when a model provider fails.
#[derive(Debug, Parser)]
#[command(name = "switchyard", version, about)]
struct Cli {
    /// What to do.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Replay the tutorial's gateway run (seeds/000) on switchyard's real gateway, or a
    /// scenario of your own.
    Demo(demo::DemoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Demo(args) => demo::run(args).map_err(|e| e.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchyard: error: {e}");
            ExitCode::FAILURE
        }
    }
}
