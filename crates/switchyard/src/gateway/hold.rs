//! What a request still owes if it is dropped mid-flight: a probe lease to give back, a
//! budget reservation to release or settle. Guards run the owed [`Cleanup`] on drop unless
//! disarmed; stores run it without the caller waiting.

use std::sync::Arc;
use std::time::Duration;

use crate::cost::Money;
use crate::state::{Cleanup, SharedState};

/// Runs a [`Cleanup`] when dropped unless disarmed: what a cancelled request still owes.
pub(super) struct Guard {
    state: Arc<dyn SharedState>,
    cleanup: Option<Cleanup>,
}

impl Guard {
    pub(super) fn new(state: &Arc<dyn SharedState>, cleanup: Cleanup) -> Self {
        Self {
            state: Arc::clone(state),
            cleanup: Some(cleanup),
        }
    }

    pub(super) fn disarm(&mut self) {
        self.cleanup = None;
    }

    pub(super) fn fire(&mut self) {
        if let Some(c) = self.cleanup.take() {
            self.state.cleanup(c);
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.fire();
    }
}

/// Extra time a reservation outlives its request's deadline before a shared store may
/// reclaim it (its holder is presumed dead by then).
pub(super) const RESERVATION_SLACK: Duration = Duration::from_secs(60);

/// One scope's part of a reservation.
pub(super) struct Hold {
    pub(super) scope: String,
    pub(super) id: u64,
    pub(super) guard: Guard,
}

/// A budget reservation across every applicable scope, released on drop unless settled.
pub(super) struct Reservation {
    pub(super) amount: Money,
    /// The input-token bound `amount` was sized by.
    pub(super) input_tokens: u64,
    pub(super) holds: Vec<Hold>,
}

impl Reservation {
    /// Replace the reservation by the real cost; an unknown cost keeps the estimate.
    pub(super) async fn settle(mut self, state: &dyn SharedState, cost: Option<Money>) {
        let actual = cost.unwrap_or(self.amount);
        for h in &mut self.holds {
            h.guard.disarm();
            state.settle(&h.scope, h.id, self.amount, actual).await;
        }
    }

    /// Settle without waiting (from a stream's poll or `Drop`): the store applies it.
    pub(super) fn settle_detached(mut self, state: &dyn SharedState, cost: Option<Money>) {
        let actual = cost.unwrap_or(self.amount);
        for h in &mut self.holds {
            h.guard.disarm();
            state.cleanup(Cleanup::SettleBudget {
                scope: std::mem::take(&mut h.scope),
                id: h.id,
                reserved: self.amount,
                actual,
            });
        }
    }

    /// Give the reservation back now (the call failed: nothing is billed).
    pub(super) fn release_now(&mut self) {
        for h in &mut self.holds {
            h.guard.fire();
        }
    }
}
