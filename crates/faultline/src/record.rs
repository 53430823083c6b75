//! The books: each model's script, and every attempt it received.
//!
//! Owns [`Attempt`] (what one request looked like and how it ended), the per-model state
//! behind one short-held lock ([`Books`]), and [`Recorder`], the guard a request carries so
//! that its end is recorded however it ends (finished, or dropped because the client went
//! away). Times are monotonic (tokio's clock), relative to the server's start or last reset.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::fault::{millis, Fault, Script};
use crate::wire::Api;

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Still being answered (or hanging / stalled, by design).
    InFlight,
    /// faultline did everything the fault called for (a full answer, an error status, a
    /// cut, a reset).
    Finished,
    /// The client went away first: the connection closed while faultline was still
    /// waiting, stalling or streaming.
    ClientGone,
}

/// One request faultline received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// The request's `model`.
    pub model: String,
    /// The API it came in on (absent from older JSON: chat).
    #[serde(default)]
    pub api: Api,
    /// Arrival (request fully read), since the server's start or last reset.
    #[serde(rename = "at_ms", with = "as_ms")]
    pub at: Duration,
    /// The fault applied, resolved: a `down` script shows as the status it returned (or
    /// `ok`), a `reject_prefill` model as `ok` when there was no prefill.
    pub fault: Fault,
    /// `stream: true`.
    pub stream: bool,
    /// The assistant prefill (the last message, when its role is `assistant`).
    pub prefill: Option<String>,
    /// How it ended.
    pub outcome: Outcome,
    /// When it ended (absent while in flight).
    #[serde(rename = "ended_ms", with = "opt_ms")]
    pub ended: Option<Duration>,
}

impl Attempt {
    /// The client hung up before faultline was done with the request.
    #[must_use]
    pub fn client_gone(&self) -> bool {
        self.outcome == Outcome::ClientGone
    }
}

/// A model's script as installed.
#[derive(Debug, Clone)]
struct Active {
    script: Script,
    /// When it was installed (`down` outages count from here).
    installed: Instant,
}

/// One model's state.
#[derive(Debug)]
struct Model {
    active: Active,
    attempts: Vec<Attempt>,
}

/// Everything under the lock.
#[derive(Debug)]
struct State {
    start: Instant,
    /// Bumped on reset, so guards of earlier requests do not write into the new books.
    epoch: u64,
    /// For models without a script of their own.
    default: Active,
    models: HashMap<String, Model>,
}

/// The shared books (cheap to clone).
#[derive(Debug, Clone)]
pub(crate) struct Books {
    state: Arc<Mutex<State>>,
    /// Attempts kept per model; later ones are served but not recorded.
    record_limit: usize,
    /// Scripts to restore on reset.
    initial: Arc<(Script, Vec<(String, Script)>)>,
}

/// What a request needs to know when it arrives.
pub(crate) struct Arrival {
    pub fault: Fault,
    pub recorder: Recorder,
}

impl Books {
    pub(crate) fn new(default: Script, scripts: Vec<(String, Script)>, limit: usize) -> Self {
        let now = Instant::now();
        let books = Self {
            state: Arc::new(Mutex::new(State {
                start: now,
                epoch: 0,
                default: Active {
                    script: default.clone(),
                    installed: now,
                },
                models: HashMap::new(),
            })),
            record_limit: limit,
            initial: Arc::new((default, scripts)),
        };
        books.reset();
        books
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // a panic while holding the lock cannot leave the books half-written in a way
        // that matters to a test double; keep serving
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forget every attempt, restore the startup scripts, restart the clock.
    pub(crate) fn reset(&self) {
        let now = Instant::now();
        let mut s = self.lock();
        s.start = now;
        s.epoch += 1;
        s.default = Active {
            script: self.initial.0.clone(),
            installed: now,
        };
        s.models.clear();
        for (model, script) in &self.initial.1 {
            install(&mut s, model, script.clone(), now);
        }
    }

    /// Install `script` for `model` (`"*"`: the default for models without their own).
    pub(crate) fn script(&self, model: &str, script: Script) {
        let now = Instant::now();
        let mut s = self.lock();
        if model == "*" {
            s.default = Active {
                script,
                installed: now,
            };
        } else {
            install(&mut s, model, script, now);
        }
    }

    /// Record a request's arrival and take its fault.
    pub(crate) fn arrive(
        &self,
        model: &str,
        api: Api,
        stream: bool,
        prefill: Option<&str>,
    ) -> Arrival {
        let now = Instant::now();
        let mut s = self.lock();
        let at = now - s.start;
        let epoch = s.epoch;
        if !s.models.contains_key(model) {
            let active = s.default.clone();
            s.models.insert(
                model.to_owned(),
                Model {
                    active,
                    attempts: Vec::new(),
                },
            );
        }
        let Some(entry) = s.models.get_mut(model) else {
            unreachable!("inserted above")
        };
        let fault = resolve(
            entry.active.script.next_fault(),
            &entry.active,
            now,
            prefill,
        );
        let index = (entry.attempts.len() < self.record_limit).then(|| {
            entry.attempts.push(Attempt {
                model: model.to_owned(),
                api,
                at,
                fault: fault.clone(),
                stream,
                prefill: prefill.map(str::to_owned),
                outcome: Outcome::InFlight,
                ended: None,
            });
            entry.attempts.len() - 1
        });
        Arrival {
            fault,
            recorder: Recorder {
                books: self.clone(),
                slot: index.map(|i| (model.to_owned(), i, epoch)),
            },
        }
    }

    /// `model`'s attempts, in arrival order.
    pub(crate) fn attempts(&self, model: &str) -> Vec<Attempt> {
        self.lock()
            .models
            .get(model)
            .map(|m| m.attempts.clone())
            .unwrap_or_default()
    }

    /// Every model's attempts, in arrival order.
    pub(crate) fn all_attempts(&self) -> Vec<Attempt> {
        let s = self.lock();
        let mut all: Vec<Attempt> = s
            .models
            .values()
            .flat_map(|m| m.attempts.iter().cloned())
            .collect();
        all.sort_by_key(|a| a.at);
        all
    }

    /// Models that have a script or were asked for, sorted.
    pub(crate) fn models(&self) -> Vec<String> {
        let mut names: Vec<String> = self.lock().models.keys().cloned().collect();
        names.sort();
        names
    }

    /// Time since the start or last reset (the clock attempts are stamped with).
    pub(crate) fn elapsed(&self) -> Duration {
        self.lock().start.elapsed()
    }

    fn end(&self, model: &str, index: usize, epoch: u64, outcome: Outcome) {
        let mut s = self.lock();
        if s.epoch != epoch {
            return;
        }
        let ended = s.start.elapsed();
        if let Some(a) = s
            .models
            .get_mut(model)
            .and_then(|m| m.attempts.get_mut(index))
        {
            a.outcome = outcome;
            a.ended = Some(ended);
        }
    }
}

fn install(s: &mut State, model: &str, script: Script, now: Instant) {
    let active = Active {
        script,
        installed: now,
    };
    match s.models.get_mut(model) {
        Some(m) => m.active = active,
        None => {
            s.models.insert(
                model.to_owned(),
                Model {
                    active,
                    attempts: Vec::new(),
                },
            );
        }
    }
}

/// The fault actually applied: outages and prefill rejections depend on the moment and
/// the request.
fn resolve(fault: Fault, active: &Active, now: Instant, prefill: Option<&str>) -> Fault {
    match fault {
        Fault::Down { for_ms, status } => {
            if millis(now - active.installed) < for_ms {
                Fault::status(status)
            } else {
                Fault::Ok
            }
        }
        Fault::RejectPrefill if prefill.is_none() => Fault::Ok,
        other => other,
    }
}

/// Carried by a request until it ends: [`Recorder::finish`] marks it finished; dropping it
/// unfinished (the connection went away under it) marks the client gone.
#[derive(Debug)]
pub(crate) struct Recorder {
    books: Books,
    /// Model, index in its attempts, epoch; `None` when not recorded (over the limit).
    slot: Option<(String, usize, u64)>,
}

impl Recorder {
    /// faultline did all the fault asked for.
    pub(crate) fn finish(mut self) {
        self.end(Outcome::Finished);
    }

    fn end(&mut self, outcome: Outcome) {
        if let Some((model, index, epoch)) = self.slot.take() {
            self.books.end(&model, index, epoch, outcome);
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.end(Outcome::ClientGone);
    }
}

/// `Duration` as fractional milliseconds in JSON.
mod as_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Duration::try_from_secs_f64(ms / 1000.0).map_err(serde::de::Error::custom)
    }
}

/// `Option<Duration>` as fractional milliseconds (or `null`) in JSON.
mod opt_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_secs_f64() * 1000.0)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(|ms| Duration::try_from_secs_f64(ms / 1000.0).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn attempts_are_stamped_resolved_and_closed() {
        let books = Books::new(Script::default(), Vec::new(), 10);
        books.script(
            "p",
            Script::queue([Fault::Reset], Fault::down_for(Duration::from_secs(2))),
        );
        tokio::time::advance(Duration::from_millis(500)).await;
        let a = books.arrive("p", Api::Chat, false, None);
        assert_eq!(a.fault, Fault::Reset);
        a.recorder.finish();
        let b = books.arrive("p", Api::Messages, true, Some("A gateway"));
        assert_eq!(b.fault, Fault::status(503), "still down");
        drop(b.recorder);
        tokio::time::advance(Duration::from_secs(2)).await;
        let c = books.arrive("p", Api::Chat, false, None);
        assert_eq!(c.fault, Fault::Ok, "recovered");
        let got = books.attempts("p");
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].at, Duration::from_millis(500));
        assert_eq!(got[0].outcome, Outcome::Finished);
        assert!(got[1].client_gone());
        assert_eq!(got[1].prefill.as_deref(), Some("A gateway"));
        assert_eq!((got[0].api, got[1].api), (Api::Chat, Api::Messages));
        assert_eq!(got[2].outcome, Outcome::InFlight);
        assert_eq!(got[2].at, Duration::from_millis(2500));
        // a guard from before a reset does not write into the new books
        books.reset();
        drop(c.recorder);
        assert!(books.attempts("p").is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn defaults_limits_and_prefill_rejection() {
        let books = Books::new(Script::always(Fault::RejectPrefill), Vec::new(), 1);
        assert_eq!(books.arrive("m", Api::Chat, false, None).fault, Fault::Ok);
        assert_eq!(
            books.arrive("m", Api::Responses, false, Some("x")).fault,
            Fault::RejectPrefill
        );
        assert_eq!(books.attempts("m").len(), 1, "limit");
        assert_eq!(books.models(), ["m"]);
        let json = serde_json::to_value(&books.attempts("m")[0]).unwrap();
        assert_eq!(json["at_ms"], 0.0);
        assert_eq!(json["fault"]["kind"], "ok");
        assert_eq!(json["outcome"], "client_gone");
        assert_eq!(json["api"], "chat");
        let back: Attempt = serde_json::from_value(json).unwrap();
        assert_eq!(back, books.attempts("m")[0]);
    }
}
