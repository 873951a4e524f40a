//! Per-subscriber resync periods and the due set of a resync round (L3, I3).
//! Each subscriber's clock follows the "is it due" rule of
//! [`Deadline`](crate::deadline::Deadline), as the informer's resync check
//! timer does.

use std::time::Duration;

use tokio::time::Instant;

use crate::deadline::Deadline;

/// Resync periods below this are raised to it.
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// The period a subscriber actually gets, given what it asked for and the
/// informer's resync check period: zero stays zero (never), a check period of
/// zero means the informer does not resync at all, and a period shorter than
/// the check period is raised to it.
pub(crate) fn effective_period(requested: Duration, check: Duration) -> Duration {
    if requested.is_zero() || check.is_zero() {
        Duration::ZERO
    } else {
        requested.max(check)
    }
}

/// One subscriber's resync clock.
#[derive(Debug)]
pub(crate) struct ResyncSchedule {
    /// The period asked for, after the one-second floor.
    pub(crate) requested: Duration,
    /// The period in force and when it is next due.
    pub(crate) deadline: Deadline,
    /// Whether this subscriber is in the current round's due set. A new
    /// subscriber starts in it and stays until the next round decides (I3):
    /// client-go adds every new listener to its syncing set, so resync-type
    /// updates (an unchanged object in a relist) reach it until then.
    pub(crate) due: bool,
}

impl ResyncSchedule {
    pub(crate) fn new(requested: Duration, check: Duration, now: Instant) -> Self {
        Self {
            requested,
            deadline: Deadline::new(effective_period(requested, check), now),
            due: true,
        }
    }

    /// Decides whether this subscriber is due at `now`; if so its next
    /// resync moves to `now + period`.
    pub(crate) fn check(&mut self, now: Instant) -> bool {
        self.due = self.deadline.check(now);
        self.due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // L3
    #[test]
    fn l3_a_period_too_long_for_the_clock_is_never_due() {
        let now = Instant::now();
        let mut never = Deadline::new(Duration::MAX, now);
        assert_eq!(never.next(), None);
        assert!(!never.check(now));
        never.restart(now);
        assert!(!never.check(now));
        let mut schedule = ResyncSchedule::new(Duration::MAX, Duration::from_secs(1), now);
        assert!(!schedule.check(now));
        let mut off = Deadline::new(Duration::ZERO, now);
        assert!(!off.check(now));
    }
}
