//! The one "is it due" rule of everything that recurs on a period: each
//! subscriber's resync clock (in `dispatch`) and the informer's resync
//! check timer. It sits below both (see "Layers" in the crate docs).

use std::time::Duration;

use tokio::time::Instant;

/// When something recurring every `period` is next due: a zero period, or
/// one too long to add to the clock, is never due (L3). Saturating here is
/// what keeps `Duration::MAX` from panicking in `Instant + Duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadline {
    period: Duration,
    next: Option<Instant>,
}

impl Deadline {
    /// First due one `period` after `now`.
    pub(crate) fn new(period: Duration, now: Instant) -> Self {
        let mut deadline = Self { period, next: None };
        deadline.restart(now);
        deadline
    }

    /// The rule: due when `now` has reached the deadline. When due, the
    /// next deadline is one period after `now` (a late check fires once,
    /// not once per missed period).
    pub(crate) fn check(&mut self, now: Instant) -> bool {
        let due = self.next.is_some_and(|next| now >= next);
        if due {
            self.restart(now);
        }
        due
    }

    /// Starts the period over from `now`.
    pub(crate) fn restart(&mut self, now: Instant) {
        self.next = if self.period.is_zero() {
            None
        } else {
            now.checked_add(self.period)
        };
    }

    /// A new period from the next time it is due on; the deadline already
    /// set stays (client-go changes a listener's period the same way).
    pub(crate) fn set_period(&mut self, period: Duration) {
        self.period = period;
    }

    /// The next deadline; `None` when it is never due.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.next
    }

    #[cfg(test)]
    pub(crate) fn period(&self) -> Duration {
        self.period
    }
}
