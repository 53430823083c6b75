//! Scenario 17: the flapping primary of the recovery report, on the example config's
//! breaker and retry settings (`switchyard.example.toml`, route `smart`): the primary
//! answers 503 for 60 s while a request comes every 4 s, 20 requests in all.
//!
//! Real time, so the scenario is compressed: every duration — the outage, the request
//! interval, and the config's cooldowns, backoffs and Retry-After cap — is divided by
//! [`TIME_FACTOR`], which keeps every ratio between them (and so the breaker's
//! schedule). Counts (failure threshold, attempts) are the config's own.

use std::time::Duration;

use faultline::Fault;
use serde_json::Value;
use tokio::time::Instant;

use crate::support::{upstream, Conf, Gateway};

/// How much faster than the report's scenario this one runs (80 s become 8 s).
const TIME_FACTOR: u32 = 10;

/// The report's scenario, before compression.
const OUTAGE: Duration = Duration::from_secs(60);
const INTERVAL: Duration = Duration::from_secs(4);
const REQUESTS: u32 = 20;
/// A recovered primary must carry traffic again this soon after recovering.
const BACK_WITHIN: Duration = Duration::from_secs(30);

/// A `key = { ... }` inline table of the example's route `smart`, its durations divided
/// by [`TIME_FACTOR`].
fn example_line(key: &str) -> (String, toml::Table) {
    let text = include_str!("../../../../switchyard.example.toml");
    let doc: toml::Table = text.parse().unwrap();
    let routes = doc["routes"].as_array().unwrap();
    let smart = routes.iter().find(|r| r["name"].as_str() == Some("smart"));
    let table = smart.unwrap()[key].as_table().unwrap().clone();
    let fields: Vec<String> = table
        .iter()
        .map(|(k, v)| match v.as_str() {
            Some(d) => {
                let scaled = humantime::parse_duration(d).unwrap() / TIME_FACTOR;
                format!("{k} = \"{}ms\"", scaled.as_millis())
            }
            None => format!("{k} = {}", v.as_integer().unwrap()),
        })
        .collect();
    (format!("{key} = {{ {} }}", fields.join(", ")), table)
}

/// How many times each request's trail called the primary (skips not counted).
fn primary_tries(line: &Value) -> usize {
    let trail = line["attempts"].as_array().unwrap();
    trail
        .iter()
        .filter(|a| a["provider"] == "primary" && a["outcome"] != "skipped")
        .count()
}

/// 17. 60 s outage, 20 requests 4 s apart, example defaults → every request answered,
/// one attempt per probe, at most one probe per cooldown, and the primary carries
/// traffic again within 30 s of recovering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s17_the_example_defaults_bring_a_recovered_primary_back_within_30s() {
    let (retry, _) = example_line("retry");
    let (breaker, settings) = example_line("breaker");
    let threshold = settings["failure_threshold"].as_integer().unwrap() as usize;
    let cooldown = humantime::parse_duration(settings["cooldown"].as_str().unwrap()).unwrap();
    let up = upstream().await;
    let conf = Conf::new(&up).route(&retry).route(&breaker);
    let gw = Gateway::start(&conf).await;
    up.script("primary", Fault::down_for(OUTAGE / TIME_FACTOR));
    let t0 = Instant::now();
    let mut served = Vec::new();
    for i in 0..REQUESTS {
        tokio::time::sleep_until(t0 + INTERVAL * i / TIME_FACTOR).await;
        let r = gw.chat(&format!("s17-{i}")).await;
        r.assert_canonical();
        served.push(r.header("x-switchyard-provider").to_owned());
    }
    let mut tries = Vec::new();
    for i in 0..REQUESTS {
        tries.push(primary_tries(&gw.log_line(&format!("s17-{i}")).await));
    }
    // closed: full turns with retries; from the opening on, a probe is one attempt
    assert!(tries[..threshold].iter().all(|&n| n == 2), "{tries:?}");
    assert!(tries[threshold..].iter().all(|&n| n <= 1), "{tries:?}");
    // while down, at most one probe per cooldown
    let down = (OUTAGE.as_secs() / INTERVAL.as_secs()) as usize;
    let probes: usize = tries[threshold..down].iter().sum();
    let bound = (OUTAGE.as_secs() / cooldown.as_secs()) as usize;
    assert!(probes >= 1 && probes <= bound, "{probes} probes: {tries:?}");
    // back within 30 s (on the request schedule) of recovering, and serving from then on
    let first = served.iter().position(|p| p == "primary");
    let first = first.unwrap_or_else(|| panic!("never back: {served:?}"));
    assert!(first >= down, "{served:?}");
    assert!(
        INTERVAL * first as u32 - OUTAGE <= BACK_WITHIN,
        "{served:?}"
    );
    assert!(served[first..].iter().all(|p| p == "primary"), "{served:?}");
    assert_eq!(gw.provider_health("primary").await["state"], "closed");
}
