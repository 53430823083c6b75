//! `loadgen`: the benchmark's load generator (driven by `bench/run`).
//!
//! ```text
//! loadgen --url http://HOST:PORT/PATH --body JSON|@FILE [--connections N]
//!         [--duration SECS] [--warmup SECS] [--rate R] [--stream] [--timeout SECS]
//! ```
//! With `--rate`, traffic is paced (open loop, as wrk2 does it): request `i` is due at
//! `start + i/R` and goes to connection `i mod N`. Latency counts from the due time: a
//! request whose connection is still busy then counts the wait (coordinated omission
//! corrected). The generator's own timer lateness is not counted: each connection keeps
//! the timeline it would have had if every request had been sent exactly when due.
//! Without `--rate` each connection sends back to back (closed loop). `--stream` reads server-sent events and records the time to the
//! first token: the first event whose `content` is not empty. Prints one JSON object
//! ([`stats::Report`]) on stdout.
//!
//! Owns the command line and the workers; `conn` owns one keep-alive connection and one
//! request's exchange; `stats` owns the samples and their summary.

mod conn;
mod stats;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::task::JoinSet;
use tokio::time::Instant;

use conn::{Exchange, Target};
use stats::{Report, Samples};

const USAGE: &str = "usage: loadgen --url http://HOST:PORT/PATH --body JSON|@FILE [--connections N]
               [--duration SECS] [--warmup SECS] [--rate R] [--stream] [--timeout SECS]";

/// What every worker shares.
struct Plan {
    target: Target,
    body: Bytes,
    connections: usize,
    /// Requests per second across all connections; `None`: closed loop.
    rate: Option<f64>,
    stream: bool,
    /// Longest wait for one whole response.
    timeout: Duration,
    /// When the first request is due (the warm-up starts here).
    start: Instant,
    /// Samples before this are the warm-up's and are not recorded.
    measure_from: Instant,
    /// No request is started at or after this.
    end: Instant,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loadgen: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(report) => match serde_json::to_string(&report) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("loadgen: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("loadgen: {e}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Parse, run every worker to the end, and summarise.
async fn run(args: &[String]) -> Result<Report, String> {
    let plan = Arc::new(parse(args)?);
    let mut workers = JoinSet::new();
    for k in 0..plan.connections {
        workers.spawn(worker(k, Arc::clone(&plan)));
    }
    let mut all = Samples::default();
    while let Some(done) = workers.join_next().await {
        all.merge(done.map_err(|e| format!("a worker failed: {e}"))?);
    }
    let measured = plan.end.saturating_duration_since(plan.measure_from);
    Ok(all.report(
        &plan.target.url,
        plan.connections,
        plan.rate,
        plan.stream,
        measured,
    ))
}

/// One connection's requests until the end of the run.
async fn worker(k: usize, plan: Arc<Plan>) -> Samples {
    let mut samples = Samples::default();
    let mut exchange = Exchange::new(plan.target.clone(), plan.body.clone(), plan.stream);
    // When the connection would be free had every request been sent exactly when due.
    let mut free_at = plan.start;
    for j in 0.. {
        let due = plan.rate.map(|r| {
            let i = (k + j * plan.connections) as f64;
            plan.start + Duration::from_secs_f64(i / r)
        });
        if let Some(d) = due {
            if d >= plan.end {
                break;
            }
            tokio::time::sleep_until(d).await;
        }
        let sent = Instant::now();
        if sent >= plan.end {
            break;
        }
        let outcome = tokio::time::timeout(plan.timeout, exchange.send()).await;
        let done = Instant::now();
        // Waiting on a busy connection is the server's doing and counts; a late timer is not.
        let wait = match due {
            Some(d) => {
                let start = free_at.max(d);
                free_at = start + (done - sent);
                start - d
            }
            None => Duration::ZERO,
        };
        if due.unwrap_or(sent) >= plan.measure_from {
            samples.record(outcome, wait, sent, done);
        }
    }
    samples
}

fn parse(args: &[String]) -> Result<Plan, String> {
    let mut url = None;
    let mut body = None;
    let mut connections = 1usize;
    let mut duration = 10.0f64;
    let mut warmup = 0.0f64;
    let mut rate = None;
    let mut stream = false;
    let mut timeout = 30.0f64;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => url = Some(value()?.clone()),
            "--body" => body = Some(read_body(value()?)?),
            "--connections" => connections = number::<usize>(value()?)?.max(1),
            "--duration" => duration = number(value()?)?,
            "--warmup" => warmup = number(value()?)?,
            "--rate" => rate = Some(number::<f64>(value()?)?).filter(|r: &f64| *r > 0.0),
            "--timeout" => timeout = number(value()?)?,
            "--stream" => stream = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let target = Target::parse(&url.ok_or("--url is required")?)?;
    let body = body.ok_or("--body is required")?;
    let start = Instant::now() + Duration::from_millis(20);
    let measure_from = start + secs(warmup)?;
    Ok(Plan {
        target,
        body,
        connections,
        rate,
        stream,
        timeout: secs(timeout)?,
        start,
        measure_from,
        end: measure_from + secs(duration)?,
    })
}

fn read_body(arg: &str) -> Result<Bytes, String> {
    match arg.strip_prefix('@') {
        Some(path) => std::fs::read(path)
            .map(Bytes::from)
            .map_err(|e| format!("{path}: {e}")),
        None => Ok(Bytes::copy_from_slice(arg.as_bytes())),
    }
}

fn number<T: std::str::FromStr>(v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("{v:?} is not a number"))
}

fn secs(s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|_| format!("{s} is not a duration in seconds"))
}
