//! Retry delays that grow, jitter, cap, and start over after a quiet spell (R5).
//!
//! This is a small own type rather than `backon`: the reset after a quiet
//! period and the jitter applied on top of the cap (so capped delays spread
//! over `[max, 2 max)`) are what client-go's reflector does, and backon's
//! builders express neither. Time is read from tokio's clock, so tests can
//! pause and advance it.
//!
//! Settings come from users and are never trusted to be sane: products
//! saturate at `Duration::MAX` instead of panicking as `Duration::mul_f64`
//! does, a growth factor below 1 (or NaN) means no growth, and a negative
//! or NaN jitter means none. A delay of `Duration::MAX` is a sleep that
//! never ends in practice, which is what such settings ask for.

use std::time::Duration;

use tokio::time::Instant;

use super::config::BackoffConfig;

/// The state of one retry sequence.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    config: BackoffConfig,
    /// The next delay before jitter.
    next: Duration,
    /// When the last delay was handed out.
    last: Option<Instant>,
}

impl Backoff {
    pub(crate) fn new(config: BackoffConfig) -> Self {
        Self {
            config,
            next: config.initial,
            last: None,
        }
    }

    /// The delay to wait now, advancing the sequence.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) >= self.config.reset_after)
        {
            self.next = self.config.initial;
        }
        self.last = Some(now);
        let base = self.next;
        self.next = saturating_mul(base, growth(self.config.factor)).min(self.config.max);
        let jitter = self.config.jitter;
        if jitter > 0.0 {
            saturating_mul(base, 1.0 + jitter * rand::random::<f64>())
        } else {
            base
        }
    }
}

/// The growth per failure: at least 1, NaN counts as 1.
fn growth(factor: f64) -> f64 {
    if factor >= 1.0 { factor } else { 1.0 }
}

/// `duration × factor` for a factor of at least 1 (NaN counts as 1),
/// saturating at `Duration::MAX`.
fn saturating_mul(duration: Duration, factor: f64) -> Duration {
    if factor.is_nan() || factor <= 1.0 {
        return duration;
    }
    Duration::try_from_secs_f64(duration.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain() -> BackoffConfig {
        BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn r5_doubles_to_the_cap() {
        let mut b = Backoff::new(plain());
        let delays: Vec<u64> = (0..9).map(|_| b.next_delay().as_millis() as u64).collect();
        assert_eq!(
            delays,
            [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn r5_jitter_stretches_up_to_double() {
        let mut b = Backoff::new(BackoffConfig::default());
        for _ in 0..50 {
            let d = b.next_delay();
            assert!(
                d >= Duration::from_millis(800) && d < Duration::from_secs(60),
                "{d:?}"
            );
        }
        for _ in 0..20 {
            let d = b.next_delay();
            assert!(
                d >= Duration::from_secs(30) && d < Duration::from_secs(60),
                "{d:?}"
            );
        }
    }

    /// R5: settings that would overflow or are not numbers give delays
    /// that saturate or stay put, and never panic.
    #[tokio::test(start_paused = true)]
    async fn r5_backoff_saturates_on_huge_or_non_finite_settings() {
        let huge = BackoffConfig {
            initial: Duration::MAX,
            max: Duration::MAX,
            factor: 1e300,
            jitter: 1e300,
            reset_after: Duration::MAX,
        };
        let mut b = Backoff::new(huge);
        for _ in 0..5 {
            assert_eq!(b.next_delay(), Duration::MAX);
        }

        let infinite = BackoffConfig {
            factor: f64::INFINITY,
            jitter: f64::INFINITY,
            ..BackoffConfig::default()
        };
        let mut b = Backoff::new(infinite);
        b.next_delay();
        // Infinite growth reaches the cap at once; infinite jitter saturates.
        assert_eq!(b.next, Duration::from_secs(30));
        assert_eq!(b.next_delay(), Duration::MAX);

        let nan = BackoffConfig {
            factor: f64::NAN,
            jitter: f64::NAN,
            ..BackoffConfig::default()
        };
        let mut b = Backoff::new(nan);
        for _ in 0..3 {
            assert_eq!(b.next_delay(), Duration::from_millis(800));
        }

        let negative = BackoffConfig {
            factor: -3.0,
            jitter: -1.0,
            ..BackoffConfig::default()
        };
        let mut b = Backoff::new(negative);
        for _ in 0..3 {
            assert_eq!(b.next_delay(), Duration::from_millis(800));
        }
    }

    /// R5: a delay of `Duration::MAX` sleeps without overflowing the clock.
    #[tokio::test(start_paused = true)]
    async fn r5_a_saturated_delay_is_a_sleep_that_does_not_end() {
        let sleep = tokio::time::sleep(Duration::MAX);
        let done = tokio::time::timeout(Duration::from_secs(3600 * 24 * 365), sleep).await;
        assert!(done.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn r5_resets_after_two_quiet_minutes() {
        let mut b = Backoff::new(plain());
        b.next_delay();
        b.next_delay();
        tokio::time::advance(Duration::from_secs(119)).await;
        assert_eq!(b.next_delay(), Duration::from_millis(3200));
        tokio::time::advance(Duration::from_secs(120)).await;
        assert_eq!(b.next_delay(), Duration::from_millis(800));
    }
}
