//! The `switchyard` binary: parses the command line, installs the diagnostics subscriber
//! (`RUST_LOG`, default `info`, on stderr; `serve` installs its own, after reading its
//! config) and hands off to the subcommand.
//!
//! Owns nothing: the CLI's shape, every subcommand and the exit code's rule live in the
//! `switchyard_server` library (`switchyard_server::cli::main`), which the Python package's
//! `switchyard` command calls too.

fn main() -> std::process::ExitCode {
    switchyard_server::cli::main(std::env::args_os())
}
