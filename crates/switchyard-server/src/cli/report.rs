//! `switchyard report LOG.jsonl [--json]`: a per-provider summary of a request log.
//!
//! Owns the summary — requests served, average and p95 latency, exact total cost, unpriced
//! calls, failures by kind, failovers — and its two renderings (an aligned table like the
//! tutorial's in docs/tutorial.md, or one JSON object). Does not own the log's schema or how
//! it is read (`crate::telemetry::log`).
//!
//! Definitions, per provider:
//! - *served*: entries with status 200, answered by it, and no error recorded (a stream
//!   that broke after its commit point is not counted as served; see `broken_streams`);
//! - latency: the entry's `latency_ms` over served entries; p95 is nearest-rank;
//! - cost: every entry it answered (a cancelled or broken stream's partial spend
//!   included), summed exactly in pico-dollars, converted from each entry's dollars once;
//! - unpriced: entries it answered whose cost is unknown. An unknown cost is never printed
//!   as $0: with unpriced calls the cost is shown as at least the priced calls' sum
//!   (`≥0.250000`; the totals line: `cost ≥ $0.25 + 1 unpriced`), or as `unknown` when
//!   no call was priced; the JSON's `total_cost_usd` is then `null`, beside
//!   `known_cost_usd` (the priced calls' sum) and `unpriced`;
//! - failures: `failed` attempts in every entry's trail, by kind (a rescue that diverged
//!   or was declined is the rescue's, not a failure of the provider asked: docs/design.md,
//!   "Streaming");
//! - failovers: served entries with `failed_over`.
//!
//! Lines that are not log entries (a last line cut short by `kill -9`, garbage) are skipped,
//! counted and reported (`N unreadable line(s) skipped (first at line L)`), never silently.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;
use switchyard::observe::Outcome;
use switchyard::Money;

use crate::telemetry::log::{LogEntry, LogRead, Unreadable};

/// Arguments of `switchyard report`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// The request log to summarise (one JSON line per request, as `serve` writes it).
    pub log: PathBuf,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Read the log and print the summary.
///
/// # Errors
/// A log that cannot be opened or read.
pub fn run(args: &ReportArgs) -> Result<(), String> {
    println!(
        "{}",
        render(&crate::telemetry::log::read(&args.log)?, args.json)?
    );
    Ok(())
}

/// The summary of what was read, as a table or as JSON.
fn render(read: &LogRead, json: bool) -> Result<String, String> {
    let mut report = Report::from_entries(&read.entries);
    report.unreadable = read.unreadable;
    if json {
        serde_json::to_string_pretty(&report).map_err(|e| format!("cannot encode report: {e}"))
    } else {
        Ok(report.table())
    }
}

/// The whole summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
struct Report {
    /// Sorted by provider name.
    providers: Vec<ProviderRow>,
    totals: Totals,
    /// Lines of the log that were not entries (not in the numbers above).
    #[serde(rename = "unreadable_lines")]
    unreadable: Unreadable,
}

/// One provider's line.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
struct ProviderRow {
    provider: String,
    requests_served: u64,
    /// `None` when it served nothing.
    avg_latency_ms: Option<f64>,
    p95_latency_ms: Option<f64>,
    /// Its answers' cost (`total_cost_usd`, `known_cost_usd`, `unpriced`).
    #[serde(flatten)]
    cost: Spend,
    /// Failed attempts by error kind label.
    failures: BTreeMap<String, u64>,
    failovers: u64,
}

/// The totals line.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
struct Totals {
    requests: u64,
    served: u64,
    failed_over: u64,
    /// Entries whose status was not 200, by status.
    errors: BTreeMap<u16, u64>,
    /// Status 200 (the stream had committed) but the entry records an error.
    broken_streams: u64,
    /// Every entry's cost (`total_cost_usd`, `known_cost_usd`, `unpriced`).
    #[serde(flatten)]
    cost: Spend,
}

/// What answers cost: the exact sum of the priced ones, and how many were priced and
/// unpriced. An unknown cost is never counted as $0: with any unpriced answer the total is
/// unknown, and the known sum only a lower bound.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Spend {
    known: Money,
    priced: u64,
    unpriced: u64,
}

/// [`Spend`] as the JSON says it.
#[derive(Serialize)]
struct SpendJson {
    /// The exact total; `null` when some answer's cost is unknown.
    total_cost_usd: Option<Money>,
    /// The priced answers' sum (the whole total when `unpriced` is 0).
    known_cost_usd: Money,
    /// Answers whose cost is unknown.
    unpriced: u64,
}

impl Serialize for Spend {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SpendJson {
            total_cost_usd: (self.unpriced == 0).then_some(self.known),
            known_cost_usd: self.known,
            unpriced: self.unpriced,
        }
        .serialize(s)
    }
}

impl Spend {
    /// Count an entry: answered by a provider (`answered`), with its cost if known. An
    /// entry nothing answered bills nothing: no cost is not an unknown cost there.
    fn add(&mut self, answered: bool, cost_usd: Option<f64>) {
        match cost_usd {
            Some(usd) => {
                self.known += Money::from_usd(usd);
                self.priced += 1;
            }
            None if answered => self.unpriced += 1,
            None => {}
        }
    }

    /// The table's cell: the exact dollars, `≥` them when some answers are unpriced,
    /// `unknown` when none was priced.
    fn cell(&self) -> String {
        match (self.unpriced, self.priced) {
            (0, _) => usd(self.known),
            (_, 0) => "unknown".to_owned(),
            _ => format!("≥{}", usd(self.known)),
        }
    }

    /// The totals line's words: `cost $1.25`, `cost ≥ $1.25 + 2 unpriced`, `cost unknown
    /// (2 unpriced)`.
    fn words(&self) -> String {
        match (self.unpriced, self.priced) {
            (0, _) => format!("cost {}", self.known),
            (n, 0) => format!("cost unknown ({n} unpriced)"),
            (n, _) => format!("cost ≥ {} + {n} unpriced", self.known),
        }
    }
}

/// One provider's running sums while reading.
#[derive(Default)]
struct Acc {
    latencies: Vec<f64>,
    cost: Spend,
    failures: BTreeMap<String, u64>,
    failovers: u64,
}

fn is_served(e: &LogEntry) -> bool {
    e.status == 200 && e.provider.is_some() && e.error.is_none()
}

impl Report {
    fn from_entries(entries: &[LogEntry]) -> Self {
        let mut accs: BTreeMap<&str, Acc> = BTreeMap::new();
        let mut totals = Totals::default();
        for e in entries {
            totals.add(e);
            for a in &e.attempts {
                let acc = accs.entry(a.provider.as_str()).or_default();
                if let Outcome::Failed { kind, .. } = &a.outcome {
                    *acc.failures.entry(kind.label().to_owned()).or_default() += 1;
                }
            }
            let Some(provider) = e.provider.as_deref() else {
                continue;
            };
            let acc = accs.entry(provider).or_default();
            acc.cost.add(true, e.cost_usd);
            if is_served(e) {
                acc.latencies.push(e.latency_ms);
                acc.failovers += u64::from(e.failed_over);
            }
        }
        let providers = accs.into_iter().map(|(name, acc)| acc.row(name)).collect();
        Self {
            providers,
            totals,
            unreadable: Unreadable::default(),
        }
    }

    /// The aligned table and the totals line.
    fn table(&self) -> String {
        let header = [
            "provider",
            "requests_served",
            "avg_latency_ms",
            "p95_latency_ms",
            "total_cost_usd",
            "unpriced",
            "failovers",
            "failures",
        ];
        let mut rows = vec![header.map(str::to_owned)];
        rows.extend(self.providers.iter().map(ProviderRow::cells));
        let widths: Vec<usize> = (0..header.len())
            // characters, not bytes: a cost may read `≥0.25…`
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for row in &rows {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                let w = widths[i];
                // Names and failures read left to right; numbers line up on the right.
                let _ = match i {
                    0 => write!(line, "{cell:<w$}"),
                    7 => write!(line, "  {cell}"),
                    _ => write!(line, "  {cell:>w$}"),
                };
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.push_str(&self.totals.line());
        if self.unreadable.count > 0 {
            let _ = write!(out, "\n{}", self.unreadable);
        }
        out
    }
}

impl Acc {
    fn row(mut self, name: &str) -> ProviderRow {
        self.latencies.sort_by(f64::total_cmp);
        let n = self.latencies.len();
        #[allow(clippy::cast_precision_loss)] // a count of requests
        let avg = (n > 0).then(|| self.latencies.iter().sum::<f64>() / n as f64);
        ProviderRow {
            provider: name.to_owned(),
            requests_served: n as u64,
            avg_latency_ms: avg,
            p95_latency_ms: nearest_rank(&self.latencies, 95),
            cost: self.cost,
            failures: self.failures,
            failovers: self.failovers,
        }
    }
}

/// The nearest-rank `pct`th percentile of sorted values: the value at rank ⌈pct·n/100⌉.
fn nearest_rank(sorted: &[f64], pct: usize) -> Option<f64> {
    let rank = (pct * sorted.len()).div_ceil(100);
    sorted.get(rank.checked_sub(1)?).copied()
}

/// The exact amount without the currency sign, at least to the micro-dollar
/// (`$1` → `1.000000`, `$0.0000001` → `0.0000001`).
fn usd(m: Money) -> String {
    let s = m.to_string().replacen('$', "", 1);
    let (whole, frac) = s.split_once('.').unwrap_or((&s, ""));
    format!("{whole}.{frac:0<6}")
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"))
}

impl ProviderRow {
    fn cells(&self) -> [String; 8] {
        let mut failures: Vec<(&String, &u64)> = self.failures.iter().collect();
        // Most frequent first; ties by name.
        failures.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let failures: Vec<String> = failures.iter().map(|(k, n)| format!("{k}:{n}")).collect();
        [
            self.provider.clone(),
            self.requests_served.to_string(),
            ms(self.avg_latency_ms),
            ms(self.p95_latency_ms),
            self.cost.cell(),
            self.cost.unpriced.to_string(),
            self.failovers.to_string(),
            if failures.is_empty() {
                "-".to_owned()
            } else {
                failures.join(" ")
            },
        ]
    }
}

impl Totals {
    fn add(&mut self, e: &LogEntry) {
        self.requests += 1;
        self.cost.add(e.provider.is_some(), e.cost_usd);
        if is_served(e) {
            self.served += 1;
            self.failed_over += u64::from(e.failed_over);
        } else if e.status == 200 {
            self.broken_streams += 1;
        } else {
            *self.errors.entry(e.status).or_default() += 1;
        }
    }

    fn line(&self) -> String {
        let errors: Vec<String> = self
            .errors
            .iter()
            .map(|(s, n)| format!("{s}:{n}"))
            .collect();
        let errors = if errors.is_empty() {
            "none".to_owned()
        } else {
            errors.join(" ")
        };
        format!(
            "total: {} requests, {} served, {} failed over, errors by status: {errors}, broken streams: {}, {}",
            self.requests,
            self.served,
            self.failed_over,
            self.broken_streams,
            self.cost.words()
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use serde_json::json;
    use switchyard::breaker::SkipReason;
    use switchyard::observe::Attempt;
    use switchyard::ErrorKind;

    use super::*;

    fn attempt(provider: &str, outcome: Outcome) -> Attempt {
        Attempt {
            provider: provider.to_owned(),
            model: "m".to_owned(),
            attempt: 1,
            outcome,
            status: None,
            latency: Duration::from_millis(10),
            start: None,
            probe: false,
            reported: None,
        }
    }

    fn failed(provider: &str, kind: ErrorKind) -> Attempt {
        let message = "upstream said no".to_owned();
        attempt(provider, Outcome::Failed { kind, message })
    }

    fn entry(
        status: u16,
        provider: Option<&str>,
        latency_ms: f64,
        cost_usd: Option<f64>,
    ) -> LogEntry {
        LogEntry {
            id: "req".to_owned(),
            time_ms: 1_700_000_000_000,
            api: "chat".into(),
            route: "smart".to_owned(),
            key: None,
            stream: false,
            status,
            provider: provider.map(str::to_owned),
            model: provider.map(|_| "m".to_owned()),
            failed_over: false,
            attempts: provider
                .map(|p| vec![attempt(p, Outcome::Success)])
                .unwrap_or_default(),
            usage: None,
            cost_usd,
            latency_ms,
            ttft_ms: None,
            error: (status != 200).then(|| "all_failed".to_owned()),
            dropped: Vec::new(),
            cache: None,
            trace_id: None,
            span_id: None,
            parent_span_id: None,
            sampled: false,
            content: None,
        }
    }

    /// 12 entries: aurora serves 10 (latency 10..=100 ms, $0.1 each), borealis serves 1
    /// after two aurora failures (unpriced), one request fails everywhere (502), one stream
    /// breaks after commit.
    fn fixture() -> Vec<LogEntry> {
        let mut v: Vec<LogEntry> = (1..=10)
            .map(|i| entry(200, Some("aurora"), f64::from(i) * 10.0, Some(0.1)))
            .collect();
        let mut over = entry(200, Some("borealis"), 500.0, None);
        over.failed_over = true;
        over.attempts = vec![
            failed("aurora", ErrorKind::Timeout),
            failed("aurora", ErrorKind::Timeout),
            attempt("borealis", Outcome::Success),
        ];
        v.push(over);
        let mut all_failed = entry(502, None, 900.0, None);
        all_failed.attempts = vec![
            failed("aurora", ErrorKind::Server),
            attempt(
                "borealis",
                Outcome::Skipped {
                    reason: SkipReason::CircuitOpen,
                    fields: Vec::new(),
                },
            ),
        ];
        v.push(all_failed);
        let mut broken = entry(200, Some("borealis"), 700.0, Some(0.25));
        broken.error = Some("malformed".to_owned());
        v.push(broken);
        v
    }

    #[test]
    fn table_has_exact_numbers() {
        let table = Report::from_entries(&fixture()).table();
        let expect = "\
provider  requests_served  avg_latency_ms  p95_latency_ms  total_cost_usd  unpriced  failovers  failures
aurora                 10          55.000         100.000        1.000000         0          0  timeout:2 server:1
borealis                1         500.000         500.000       ≥0.250000         1          1  -
total: 13 requests, 11 served, 1 failed over, errors by status: 502:1, broken streams: 1, cost ≥ $1.25 + 1 unpriced";
        assert_eq!(table, expect);
    }

    #[test]
    fn json_has_the_same_data() {
        let v = serde_json::to_value(Report::from_entries(&fixture())).unwrap();
        assert_eq!(
            v["providers"][0],
            json!({
                "provider": "aurora", "requests_served": 10, "avg_latency_ms": 55.0,
                "p95_latency_ms": 100.0, "total_cost_usd": 1.0, "known_cost_usd": 1.0,
                "unpriced": 0, "failures": {"server": 1, "timeout": 2}, "failovers": 0,
            })
        );
        assert_eq!(v["providers"][1]["provider"], "borealis");
        // one of its answers is unpriced: the total is unknown, never its priced part
        assert_eq!(v["providers"][1]["total_cost_usd"], json!(null));
        assert_eq!(v["providers"][1]["known_cost_usd"], 0.25);
        assert_eq!(v["providers"][1]["unpriced"], 1);
        assert_eq!(
            v["totals"],
            json!({
                "requests": 13, "served": 11, "failed_over": 1, "errors": {"502": 1},
                "broken_streams": 1, "total_cost_usd": null, "known_cost_usd": 1.25,
                "unpriced": 1,
            })
        );
    }

    #[test]
    fn costs_are_summed_exactly() {
        // Ten times 0.1 as f64 sums to 0.9999999999999999; the report says 1.
        let naive: f64 = std::iter::repeat_n(0.1, 10).sum();
        assert_ne!(naive.to_bits(), 1.0_f64.to_bits());
        let r = Report::from_entries(&fixture());
        assert_eq!(r.providers[0].cost.known, Money::from_usd(1.0));
    }

    /// No unknown cost is printed as $0: an unpriced model's row says `unknown`, a
    /// broken stream of unknown cost makes its provider's total a lower bound, and the
    /// totals line and the JSON say how many calls are unpriced.
    #[test]
    fn an_unknown_cost_is_never_printed_as_zero() {
        let mut broken = entry(200, Some("aurora"), 30.0, None);
        broken.error = Some("malformed".to_owned());
        let entries = [
            entry(200, Some("local"), 10.0, None),
            entry(200, Some("local"), 20.0, None),
            entry(200, Some("aurora"), 10.0, Some(0.5)),
            broken,
            entry(502, None, 5.0, None),
        ];
        let report = Report::from_entries(&entries);
        let table = report.table();
        let row = |name: &str| -> Vec<String> {
            let line = table.lines().find(|l| l.starts_with(name)).unwrap();
            line.split_whitespace().map(str::to_owned).collect()
        };
        assert_eq!(row("local")[4..6], ["unknown", "2"], "{table}");
        assert_eq!(row("aurora")[4..6], ["≥0.500000", "1"], "{table}");
        assert!(!table.contains("0.000000"), "{table}");
        assert!(
            table.ends_with("broken streams: 1, cost ≥ $0.5 + 3 unpriced"),
            "{table}"
        );
        let v = serde_json::to_value(&report).unwrap();
        let local = &v["providers"][1];
        assert_eq!(
            (
                &local["total_cost_usd"],
                &local["known_cost_usd"],
                &local["unpriced"]
            ),
            (&json!(null), &json!(0.0), &json!(2))
        );
        assert_eq!(v["totals"]["total_cost_usd"], json!(null));
        assert_eq!(
            v["totals"]["unpriced"], 3,
            "the 502 billed nothing: not unpriced"
        );

        let only_unpriced = Report::from_entries(&entries[..2]);
        assert!(
            only_unpriced.table().ends_with("cost unknown (2 unpriced)"),
            "{}",
            only_unpriced.table()
        );
        let all_priced = Report::from_entries(&entries[2..3]);
        assert!(
            all_priced.table().ends_with(", cost $0.5"),
            "{}",
            all_priced.table()
        );
        let v = serde_json::to_value(&all_priced).unwrap();
        assert_eq!(v["totals"]["total_cost_usd"], 0.5);
    }

    #[test]
    fn dollars_are_exact_and_at_least_to_the_micro_dollar() {
        assert_eq!(usd(Money::from_usd(1.0)), "1.000000");
        assert_eq!(usd(Money::from_picos(100)), "0.0000000001");
        assert_eq!(usd(Money::from_usd(12.5)), "12.500000");
    }

    #[test]
    fn p95_is_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 95), Some(19.0));
        assert_eq!(nearest_rank(&v[..1], 95), Some(1.0));
        let v: Vec<f64> = (1..=21).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 95), Some(20.0));
        assert_eq!(nearest_rank(&[], 95), None);
    }

    #[test]
    fn a_provider_that_only_failed_still_gets_a_row() {
        let mut e = entry(502, None, 5.0, None);
        e.attempts = vec![failed("gpt", ErrorKind::Auth)];
        let r = Report::from_entries(&[e]);
        assert_eq!(r.providers.len(), 1);
        assert_eq!(r.providers[0].requests_served, 0);
        assert_eq!(r.providers[0].avg_latency_ms, None);
        assert!(r
            .table()
            .contains("gpt                     0               -               -"));
    }

    fn write_log(name: &str, lines: &[String]) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "switchyard-report-{}-{name}.jsonl",
            std::process::id()
        ));
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    #[test]
    fn run_reads_a_log_file_in_both_formats() {
        let lines: Vec<String> = fixture()
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        let path = write_log("ok", &lines);
        for json in [false, true] {
            run(&ReportArgs {
                log: path.clone(),
                json,
            })
            .unwrap();
        }
        let back = crate::telemetry::log::read(&path).unwrap();
        assert_eq!(back.unreadable, Unreadable::default());
        assert_eq!(
            Report::from_entries(&back.entries),
            Report::from_entries(&fixture())
        );
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn unreadable_lines_are_skipped_counted_and_reported() {
        let lines: Vec<String> = fixture()
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        // garbage in the middle (line 4), a blank line (not counted), and the last line cut
        // short, as `kill -9` leaves it
        let mut text = lines[..3].join("\n");
        text.push_str("\nnot json at all\n\n");
        text.push_str(&lines[3..].join("\n"));
        text.push('\n');
        text.push_str(&lines[0][..lines[0].len() / 2]);
        let path = write_log("bad", &[]);
        std::fs::write(&path, text).unwrap();
        let read = crate::telemetry::log::read(&path).unwrap();
        assert_eq!(read.entries, fixture(), "every whole line is read");
        assert_eq!(
            read.unreadable,
            Unreadable {
                count: 2,
                first_line: Some(4)
            }
        );
        let table = render(&read, false).unwrap();
        assert!(
            table.ends_with("\n2 unreadable line(s) skipped (first at line 4)"),
            "{table}"
        );
        assert!(table.contains("total: 13 requests"), "{table}");
        let json: serde_json::Value = serde_json::from_str(&render(&read, true).unwrap()).unwrap();
        assert_eq!(
            json["unreadable_lines"],
            json!({"count": 2, "first_line": 4})
        );
        assert_eq!(json["totals"]["requests"], 13);
        run(&ReportArgs {
            log: path.clone(),
            json: false,
        })
        .unwrap();
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_clean_log_says_nothing_about_unreadable_lines() {
        let read = LogRead {
            entries: fixture(),
            unreadable: Unreadable::default(),
        };
        assert!(!render(&read, false).unwrap().contains("unreadable"));
        let json: serde_json::Value = serde_json::from_str(&render(&read, true).unwrap()).unwrap();
        assert_eq!(json["unreadable_lines"]["count"], 0);
        let missing =
            crate::telemetry::log::read(Path::new("/nonexistent/switchyard.jsonl")).unwrap_err();
        assert!(
            missing.starts_with("/nonexistent/switchyard.jsonl: "),
            "{missing}"
        );
    }
}
