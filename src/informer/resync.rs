//! The resync check timer: how often the writer asks the distributor whether
//! any subscriber is due for a resync (L3). The "is it due" rule is the one
//! every subscriber's resync clock follows
//! ([`Deadline`](crate::deadline::Deadline)).

use std::time::Duration;

use tokio::time::Instant;

use crate::deadline::Deadline;

/// Fires every resync check period; never when the period is zero or too
/// long to add to the clock (L3).
///
/// The writer checks [`due`](Self::due) between batches (a clock read, no
/// timer registration) and sleeps on [`tick`](Self::tick) only when idle.
/// Uses tokio time, so tests drive it with a paused clock.
#[derive(Debug)]
pub(crate) struct ResyncTimer {
    deadline: Deadline,
}

impl ResyncTimer {
    /// A timer that first fires one `period` from now.
    pub(crate) fn new(period: Duration) -> Self {
        Self {
            deadline: Deadline::new(period, Instant::now()),
        }
    }

    /// If the timer is due at `now`, schedules the next check one period
    /// after `now` (a writer held up by a slow batch checks once, late,
    /// rather than several times in a burst) and returns true.
    pub(crate) fn due(&mut self, now: Instant) -> bool {
        self.deadline.check(now)
    }

    /// Starts the period over from `now`: client-go's reflector restarts its
    /// resync timer after every list, so the first check after a relist
    /// comes one full period after it (L3).
    pub(crate) fn restart(&mut self, now: Instant) {
        self.deadline.restart(now);
    }

    /// Waits until the timer is due, then does what [`due`](Self::due) does
    /// and returns the time. Pending forever when the timer is off. Cancel
    /// safe: nothing changes until it completes.
    pub(crate) async fn tick(&mut self) -> Instant {
        let Some(next) = self.deadline.next() else {
            return std::future::pending().await;
        };
        tokio::time::sleep_until(next).await;
        let now = Instant::now();
        self.due(now);
        now
    }

    /// The check period.
    #[cfg(test)]
    fn period(&self) -> Duration {
        self.deadline.period()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn l3_ticks_every_period_and_never_when_zero() {
        let start = Instant::now();
        let mut timer = ResyncTimer::new(Duration::from_secs(2));
        assert!(!timer.due(start + Duration::from_millis(1999)));
        assert_eq!(timer.tick().await, start + Duration::from_secs(2));
        assert!(!timer.due(Instant::now()));
        // Late by 3 s: one check, and the next one a period after it.
        assert!(timer.due(start + Duration::from_secs(7)));
        assert!(!timer.due(start + Duration::from_secs(8)));
        assert!(timer.due(start + Duration::from_secs(9)));

        let mut off = ResyncTimer::new(Duration::ZERO);
        assert!(!off.due(start + Duration::from_secs(3600)));
        let never = tokio::time::timeout(Duration::from_secs(3600), off.tick()).await;
        assert!(never.is_err());
    }

    // L3
    #[tokio::test(start_paused = true)]
    async fn l3_a_check_period_too_long_for_the_clock_never_fires_and_never_panics() {
        let mut timer = ResyncTimer::new(Duration::MAX);
        assert_eq!(timer.period(), Duration::MAX);
        timer.restart(Instant::now());
        assert!(!timer.due(Instant::now() + Duration::from_secs(3600)));
        let never = tokio::time::timeout(Duration::from_secs(3600), timer.tick()).await;
        assert!(never.is_err());
    }
}
