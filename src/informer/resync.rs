//! The resync check timer: how often the writer asks the distributor whether
//! any subscriber is due for a resync (L3).

use std::time::Duration;

use tokio::time::{Instant, Interval, MissedTickBehavior, interval_at};

/// Ticks every resync check period; never ticks when the period is zero.
///
/// Uses tokio time, so tests drive it with a paused clock.
#[derive(Debug)]
pub(crate) struct ResyncTimer {
    interval: Option<Interval>,
}

impl ResyncTimer {
    /// A timer whose first tick comes one `period` from now.
    pub(crate) fn new(period: Duration) -> Self {
        let interval = (!period.is_zero()).then(|| {
            let mut interval = interval_at(Instant::now() + period, period);
            // A writer held up by a slow batch checks once, late, rather than
            // several times in a burst.
            interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
            interval
        });
        Self { interval }
    }

    /// Waits for the next tick and returns its time. Pending forever when the
    /// timer is off. Cancel safe.
    pub(crate) async fn tick(&mut self) -> Instant {
        match &mut self.interval {
            Some(interval) => interval.tick().await,
            None => std::future::pending().await,
        }
    }
}
