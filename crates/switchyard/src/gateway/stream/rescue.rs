//! The rescue ladder of a broken committed stream: for each later candidate, a
//! continuation (when it takes a prefill and text was sent), then a restart spliced
//! against what was sent; or, past the rescue buffer limit, every candidate skipped.

use super::{Live, Mode, Rung, Segment, StreamEvent};
use crate::breaker::SkipReason;
use crate::chat::{ChatRequest, Message, ResponseFormat};
use crate::error::{AttemptError, ErrorKind, GatewayError, ProviderError};
use crate::gateway::run::Call;
use crate::observe::{Attempt, Outcome};

impl Live {
    /// Climb the rescue ladder from `self.next`; on success a new upstream is live, else
    /// the stream ends with the original failure.
    pub(super) async fn rescue(&mut self) {
        if self.kept.unrescuable {
            self.skip_rescuers(SkipReason::RescueBufferFull);
        } else if self.req.n.is_some_and(|n| n > 1) {
            self.skip_rescuers(SkipReason::MultiChoice);
        } else if !self.kept.sent_tools {
            while let Some((pos, rung)) = self.next_rung() {
                if self.try_rung(pos, rung).await {
                    return;
                }
            }
        }
        let err = self.unrescued_error();
        self.report(Err(&err));
        self.queue.push_back(StreamEvent::Failed(Box::new(err)));
    }

    /// The error a stream no rescue finished ends with: the failure that broke it, laid
    /// at the door of the provider that failed (never a rescuer's), with what each rescue
    /// came to added to its message.
    fn unrescued_error(&self) -> GatewayError {
        let AttemptError {
            provider,
            mut error,
        } = self.cause.clone().unwrap_or_else(|| AttemptError {
            provider: self.slot().spec.name.clone(),
            error: ProviderError::new(ErrorKind::Malformed, "stream broke"),
        });
        if !self.unrescued.is_empty() {
            error.message = format!(
                "{}; no honest rescue: {}",
                error.message,
                self.unrescued.join("; ")
            );
        }
        GatewayError::Provider {
            provider,
            error,
            attempts: self.run.attempts.clone(),
        }
    }

    /// The stream cannot be rescued (it passed the rescue buffer limit, or it answers
    /// several choices): record every candidate left as skipped for `reason` (the trail
    /// says why none was asked), and use them up.
    fn skip_rescuers(&mut self, reason: SkipReason) {
        let slots = self.run.slots();
        let plan = std::mem::take(&mut self.run.plan);
        for &i in plan.get(self.next.0..).unwrap_or_default() {
            let spec = &slots.get(i).spec;
            let skip = Attempt::skipped(&spec.name, spec.provider.model(), reason);
            self.run.record(skip);
        }
        self.next = (plan.len(), Rung::Continuation);
        self.run.plan = plan;
    }

    /// The next (candidate, rung) to try, advancing the cursor.
    fn next_rung(&mut self) -> Option<(usize, Rung)> {
        let (pos, rung) = self.next;
        let slot = self.run.slot_at(*self.run.plan.get(pos)?);
        if rung == Rung::Continuation {
            self.next = (pos, Rung::Restart);
            // a body only native providers may answer is not continued in the shared shape
            let required = self.req.native.as_ref().is_some_and(|n| n.required);
            // nor is half-written JSON: a format guaranteed by a forced tool or constrained
            // decoding starts the value afresh, it does not continue a prefill
            let json = !matches!(self.req.response_format, None | Some(ResponseFormat::Text));
            if slot.spec.supports_prefill && !self.kept.text.is_empty() && !required && !json {
                return Some((pos, Rung::Continuation));
            }
        }
        self.next = (pos + 1, Rung::Continuation);
        Some((pos, Rung::Restart))
    }

    /// Try one rung; true when a rescue stream is live and its head passed the splice.
    async fn try_rung(&mut self, pos: usize, rung: Rung) -> bool {
        if self.run.time_left().is_zero() {
            return false;
        }
        let req = match rung {
            Rung::Continuation => continuation_of(&self.req, &self.kept.text),
            Rung::Restart => ChatRequest::clone(&self.req),
        };
        let before = self.run.attempts.len();
        // a refusal of the prefill is the continuation's failure, not the provider's
        self.run.continuing = rung == Rung::Continuation;
        let turn = self.run.candidate(self.run.plan[pos], Call::Stream(&req));
        let turn = turn.await;
        self.run.continuing = false;
        let Ok(Some(won)) = turn else {
            self.note_unrescued(before, rung);
            return false;
        };
        let (latency, attempt) = (won.latency, won.attempt);
        let (segment, head) = Segment::opened(won, self.run.gw.inner.clock.now());
        self.pos = pos;
        self.segment = segment;
        let method = rung_name(rung);
        let attempt = Attempt {
            provider: self.slot().spec.name.clone(),
            model: self.slot().spec.provider.model().to_owned(),
            attempt,
            outcome: Outcome::Rescue {
                method: method.to_owned(),
            },
            status: None,
            latency,
            start: None,
            probe: false, // set by `record`
            reported: None,
        };
        self.run.record(attempt);
        self.mode = match rung {
            Rung::Continuation => Mode::Pass,
            Rung::Restart => Mode::Splice {
                expect: self.kept.text.clone(),
                got: String::new(),
            },
        };
        for chunk in head {
            if let Err(d) = self.take(chunk) {
                self.diverged(&d);
                return false;
            }
        }
        true
    }

    /// Say what a rung that did not open came to, from the trail entries its turn made
    /// (from `before` on): the last of them is how the turn ended.
    fn note_unrescued(&mut self, before: usize, rung: Rung) {
        let Some(last) = self.run.attempts.get(before..).and_then(<[Attempt]>::last) else {
            return; // no time was left to ask anyone
        };
        let method = rung_name(rung);
        let what = match &last.outcome {
            Outcome::Failed { kind, .. } => format!("'s {method} failed ({kind})"),
            Outcome::Declined { kind, .. } => format!("'s {method} was declined ({kind})"),
            Outcome::Skipped { reason, .. } => format!(" was skipped ({})", reason.label()),
            _ => return,
        };
        self.unrescued.push(format!("{}{what}", last.provider));
    }
}

fn rung_name(rung: Rung) -> &'static str {
    match rung {
        Rung::Continuation => "continuation",
        Rung::Restart => "restart",
    }
}

/// The original request plus the text already sent, as an assistant prefill: the last
/// shared message, and the native body's [`Native::prefill`](crate::chat::Native) (a
/// codec that appends it, Anthropic's, keeps sending the client's body with its
/// vendor-only fields, `cache_control` and betas among them; any other sends the shared
/// shape).
fn continuation_of(req: &ChatRequest, sent: &str) -> ChatRequest {
    let mut next = req.clone();
    if let Some(native) = &mut next.native {
        native.prefill = Some(sent.to_owned());
    }
    next.messages.push(Message::assistant(sent));
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::Native;

    /// The native body stays, carrying the prefill; the shared shape has it too.
    #[test]
    fn a_continuation_keeps_the_native_body_with_the_prefill() {
        let req = ChatRequest {
            native: Some(Native::new(
                "anthropic",
                serde_json::json!({"messages": []}),
            )),
            ..ChatRequest::from_prompt("hi")
        };
        let next = continuation_of(&req, "Hel");
        let native = next.native.as_ref().unwrap();
        assert_eq!(native.prefill.as_deref(), Some("Hel"));
        assert_eq!(native.body, req.native.as_ref().unwrap().body);
        assert!(
            next.native_for("anthropic").is_none(),
            "not for a plain codec"
        );
        assert_eq!(next.messages.last(), Some(&Message::assistant("Hel")));
        assert_eq!(next.messages.len(), 2);
    }
}
