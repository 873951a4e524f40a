//! The resync check timer: how often the writer asks the distributor whether
//! any subscriber is due for a resync (L3).

use std::time::Duration;

use tokio::time::Instant;

/// Fires every resync check period; never when the period is zero.
///
/// The writer checks [`due`](Self::due) between batches (a clock read, no
/// timer registration) and sleeps on [`tick`](Self::tick) only when idle.
/// Uses tokio time, so tests drive it with a paused clock.
#[derive(Debug)]
pub(crate) struct ResyncTimer {
    period: Duration,
    next: Option<Instant>,
}

impl ResyncTimer {
    /// A timer that first fires one `period` from now.
    pub(crate) fn new(period: Duration) -> Self {
        Self {
            period,
            next: (!period.is_zero()).then(|| Instant::now() + period),
        }
    }

    /// If the timer is due at `now`, schedules the next check one period
    /// after `now` (a writer held up by a slow batch checks once, late,
    /// rather than several times in a burst) and returns true.
    pub(crate) fn due(&mut self, now: Instant) -> bool {
        match self.next {
            Some(next) if now >= next => {
                self.next = Some(now + self.period);
                true
            }
            _ => false,
        }
    }

    /// Starts the period over from `now`: client-go's reflector restarts its
    /// resync timer after every list, so the first check after a relist
    /// comes one full period after it (L3).
    pub(crate) fn restart(&mut self, now: Instant) {
        if self.next.is_some() {
            self.next = Some(now + self.period);
        }
    }

    /// Waits until the timer is due, then does what [`due`](Self::due) does
    /// and returns the time. Pending forever when the timer is off. Cancel
    /// safe: nothing changes until it completes.
    pub(crate) async fn tick(&mut self) -> Instant {
        let Some(next) = self.next else {
            return std::future::pending().await;
        };
        tokio::time::sleep_until(next).await;
        let now = Instant::now();
        self.due(now);
        now
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
}
