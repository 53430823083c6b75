//! `faultline`: the fault-injecting upstream as a standalone server.
//!
//! ```text
//! faultline [--listen ADDR] [--threads N] [--record-limit N] [--script JSON|@FILE]...
//! ```
//! Prints `faultline listening on http://ADDR` once bound, then serves until killed.
//! `--script` takes a control-API script (`{"model": "primary", "faults": [...],
//! "then": {...}}`, model `"*"` for the default) or `@FILE` holding one or a JSON array.

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;

use faultline::{ModelScript, Server, DEFAULT_RECORD_LIMIT};

const USAGE: &str =
    "usage: faultline [--listen ADDR] [--threads N] [--record-limit N] [--script JSON|@FILE]...
  --listen ADDR       address to bind (default 127.0.0.1:0: any free port)
  --threads N         runtime worker threads (default: one per core; 1 = single-threaded)
  --record-limit N    attempts kept per model for /control/attempts (default 100000)
  --script JSON|@FILE a model's script, e.g. '{\"model\":\"m\",\"faults\":[{\"kind\":\"reset\"}]}'
                      (model \"*\": every model without a script of its own); repeatable";

/// Parsed command line.
struct Args {
    listen: SocketAddr,
    threads: Option<usize>,
    record_limit: usize,
    scripts: Vec<ModelScript>,
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) if e == "help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("faultline: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match args.threads {
        Some(1) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("faultline: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(args))
}

async fn run(args: Args) -> ExitCode {
    let mut server = Server::new()
        .listen(args.listen)
        .record_limit(args.record_limit);
    for s in &args.scripts {
        server = server.script(s.model.clone(), s.script());
    }
    let handle = match server.start().await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("faultline: cannot listen on {}: {e}", args.listen);
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout();
    let _ = writeln!(out, "faultline listening on {}", handle.uri());
    let _ = out.flush();
    handle.serve_forever().await;
    ExitCode::SUCCESS
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        threads: None,
        record_limit: DEFAULT_RECORD_LIMIT,
        scripts: Vec::new(),
    };
    while let Some(flag) = argv.next() {
        let mut value = |name: &str| argv.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--listen" => {
                let v = value("--listen")?;
                args.listen = v.parse().map_err(|_| format!("{v:?} is not an address"))?;
            }
            "--threads" => {
                let v = value("--threads")?;
                let n: usize = v.parse().map_err(|_| format!("{v:?} is not a count"))?;
                args.threads = Some(n.max(1));
            }
            "--record-limit" => {
                let v = value("--record-limit")?;
                args.record_limit = v.parse().map_err(|_| format!("{v:?} is not a count"))?;
            }
            "--script" => args.scripts.extend(scripts(&value("--script")?)?),
            "-h" | "--help" => return Err("help".to_owned()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// One script, or `@FILE` with one or a list.
fn scripts(arg: &str) -> Result<Vec<ModelScript>, String> {
    let text = match arg.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?,
        None => arg.to_owned(),
    };
    if text.trim_start().starts_with('[') {
        serde_json::from_str(&text).map_err(|e| format!("--script: {e}"))
    } else {
        serde_json::from_str(&text)
            .map(|s| vec![s])
            .map_err(|e| format!("--script: {e}"))
    }
}
