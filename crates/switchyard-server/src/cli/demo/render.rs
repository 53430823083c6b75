//! What `switchyard demo` prints: the tutorial's sections as text, or one JSON object.
//!
//! Owns the layout of the output (headings, which log rows the text shows, the JSON
//! object's shape). Numbers come from `replay` and `summary`; their spelling from `pyfmt`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::pyfmt::{log_row_repr, response_repr, summary_table};
use super::replay::{LogRow, Replay, Response};
use super::summary::{summarize, SummaryRow};

/// The requests whose log rows the text shows (the tutorial's `18 <= request <= 27`).
const LOG_WINDOW: std::ops::RangeInclusive<u64> = 18..=27;

/// How many responses the text shows (the tutorial's `results[:5]`).
const SHOWN_RESPONSES: usize = 5;

/// The tutorial's preview section: one line per call.
#[must_use]
pub fn preview_text(calls: &[Result<Response, String>]) -> String {
    let mut out = String::from("== preview: a fresh aurora (seed 42), three calls ==\n");
    for call in calls {
        match call {
            Ok(r) => out.push_str(&response_repr(r)),
            Err(message) => {
                let _ = write!(out, "error: {message}");
            }
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// The run's sections as the tutorial prints them, under short headings.
#[must_use]
pub fn replay_text(replay: &Replay, requests: u64) -> String {
    let mut out = format!("== {requests} requests through the gateway ==\n");
    let _ = writeln!(
        out,
        "completed={} errors={}",
        replay.responses.len(),
        replay.errors
    );
    for r in replay.responses.iter().take(SHOWN_RESPONSES) {
        out.push_str(&response_repr(r));
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "\n== log, requests {}-{} ==",
        LOG_WINDOW.start(),
        LOG_WINDOW.end()
    );
    for row in replay
        .log
        .iter()
        .filter(|r| LOG_WINDOW.contains(&r.request))
    {
        out.push_str(&log_row_repr(row));
        out.push('\n');
    }
    out.push_str("\n== breakers ==\n");
    for (name, until) in &replay.breakers {
        let _ = writeln!(out, "{name} opened_until_request= {until}");
    }
    out.push_str("\n== per provider ==\n");
    out.push_str(&summary_table(&summarize(&replay.responses)));
    out
}

/// The `--json` object.
#[derive(Debug, Serialize)]
struct JsonReport<'a> {
    completed: usize,
    errors: u64,
    responses: &'a [Response],
    log: &'a [LogRow],
    breakers: BTreeMap<&'a str, JsonBreaker>,
    summary: Vec<SummaryRow>,
}

#[derive(Debug, Serialize)]
struct JsonBreaker {
    opened_until_request: u64,
}

/// The whole run as one JSON object (every response and every log row).
///
/// # Errors
/// Serialization failed.
pub fn replay_json(replay: &Replay) -> Result<String, serde_json::Error> {
    let report = JsonReport {
        completed: replay.responses.len(),
        errors: replay.errors,
        responses: &replay.responses,
        log: &replay.log,
        breakers: replay
            .breakers
            .iter()
            .map(|(name, until)| {
                let b = JsonBreaker {
                    opened_until_request: *until,
                };
                (name.as_str(), b)
            })
            .collect(),
        summary: summarize(&replay.responses),
    };
    let mut text = serde_json::to_string(&report)?;
    text.push('\n');
    Ok(text)
}
