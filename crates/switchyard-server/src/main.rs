//! The `switchyard` binary: parses the command line and hands off to a subcommand.
//!
//! Owns the CLI's shape ([`Cli`], [`Command`]) and the exit code; each subcommand lives in
//! the `switchyard_server` library and returns a `Result` whose error `main` prints to stderr.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use switchyard_server::access::keys;
use switchyard_server::{check, demo, report, serve};

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
    /// Run the OpenAI-compatible proxy (without --config: simulated providers, no keys).
    Serve(serve::ServeArgs),
    /// Validate a config and print the routes, providers, prices and warnings.
    Check(check::CheckArgs),
    /// Summarise a request log per provider.
    Report(report::ReportArgs),
    /// Manage client keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Replay the tutorial's gateway run (seeds/000) on switchyard's real gateway, or a
    /// scenario of your own.
    Demo(demo::DemoArgs),
}

/// `switchyard keys ...`.
#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Print a fresh client token (once) and the `[[keys]]` lines to paste into config.
    New {
        /// Who the key is for (appears in logs).
        name: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Check(args) => check::run(args),
        Command::Report(args) => report::run(args),
        Command::Keys(KeysCommand::New { name }) => keys::new_key_text(name).map(|t| print!("{t}")),
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
