//! Which faults a simulation draws, and how often.

use std::time::Duration;

/// The fault mix of a [`Simulation`](crate::Simulation): per request or per
/// watch, the chance of each fault and its largest size. Draws come from
/// the simulation's seed (SI3).
///
/// Rates are probabilities, clamped to `[0, 1]` (NaN counts as 0).
///
/// ```
/// use std::time::Duration;
/// use kube_informer_testing::FaultMix;
///
/// let mix = FaultMix::none()
///     .request_errors(0.1)
///     .write_conflicts(0.3)
///     .watch_breaks(0.25)
///     .watch_lag(0.5, Duration::from_secs(2))
///     .latency(Duration::from_millis(50));
/// assert_ne!(mix, FaultMix::none());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FaultMix {
    pub(crate) request_errors: f64,
    pub(crate) write_conflicts: f64,
    pub(crate) watch_breaks: f64,
    pub(crate) watch_lag: f64,
    pub(crate) max_watch_lag: Duration,
    pub(crate) max_latency: Duration,
}

fn rate(p: f64) -> f64 {
    if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) }
}

impl Default for FaultMix {
    /// Some of everything: 5 % of requests fail, 10 % of writes with a
    /// resourceVersion precondition conflict, 20 % of watches break early,
    /// 20 % lag up to 2 s, and every request takes up to 50 ms.
    fn default() -> Self {
        Self {
            request_errors: 0.05,
            write_conflicts: 0.1,
            watch_breaks: 0.2,
            watch_lag: 0.2,
            max_watch_lag: Duration::from_secs(2),
            max_latency: Duration::from_millis(50),
        }
    }
}

impl FaultMix {
    /// No faults at all: the seed then decides nothing but the scenario's
    /// own draws.
    pub fn none() -> Self {
        Self {
            request_errors: 0.0,
            write_conflicts: 0.0,
            watch_breaks: 0.0,
            watch_lag: 0.0,
            max_watch_lag: Duration::ZERO,
            max_latency: Duration::ZERO,
        }
    }

    /// The chance that a request is answered with an error status instead:
    /// 500, 429 or 503, or 410 `Expired` for a list continuation and a
    /// watch from a resourceVersion.
    #[must_use]
    pub fn request_errors(mut self, rate: f64) -> Self {
        self.request_errors = self::rate(rate);
        self
    }

    /// The chance that a write carrying a resourceVersion precondition
    /// (`PUT` or `PATCH` with `metadata.resourceVersion`, a JSON patch
    /// testing it, a `DELETE` with `preconditions.resourceVersion`) is
    /// answered 409 `Conflict`, as when another client wrote first. Writes
    /// without one never conflict on a real API server, so they are spared.
    #[must_use]
    pub fn write_conflicts(mut self, rate: f64) -> Self {
        self.write_conflicts = self::rate(rate);
        self
    }

    /// The chance that a watch breaks after 0 to 7 events: the connection
    /// drops, the stream ends, or it sends a 410 `Expired` `ERROR` event.
    #[must_use]
    pub fn watch_breaks(mut self, rate: f64) -> Self {
        self.watch_breaks = self::rate(rate);
        self
    }

    /// The chance that a watch delivers its events late, and the largest lag.
    #[must_use]
    pub fn watch_lag(mut self, rate: f64, max: Duration) -> Self {
        self.watch_lag = self::rate(rate);
        self.max_watch_lag = max;
        self
    }

    /// The largest latency: every request is answered after a delay drawn
    /// in `[0, max]`.
    #[must_use]
    pub fn latency(mut self, max: Duration) -> Self {
        self.max_latency = max;
        self
    }
}
