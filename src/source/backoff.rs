//! Retry delays that grow, jitter, cap, and start over after a quiet spell (R5).
//!
//! This is a small own type rather than `backon`: the reset after a quiet
//! period and the jitter applied on top of the cap (so capped delays spread
//! over `[max, 2 max)`) are what client-go's reflector does, and backon's
//! builders express neither. Time is read from tokio's clock, so tests can
//! pause and advance it.

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
        self.next = base
            .mul_f64(self.config.factor.max(1.0))
            .min(self.config.max);
        if self.config.jitter > 0.0 {
            base.mul_f64(1.0 + self.config.jitter * rand::random::<f64>())
        } else {
            base
        }
    }
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
