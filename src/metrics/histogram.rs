//! Durations counted into fixed buckets with atomics: what a Prometheus
//! histogram needs, with no dependency and no lock.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

/// Upper bounds of the buckets, in seconds: one per decade from 10 µs to
/// 10 s, then a minute. Handler calls land in the low buckets, lists and
/// reconciles in the high ones; `+Inf` is implied.
pub const BUCKETS: [f64; 8] = [0.000_01, 0.000_1, 0.001, 0.01, 0.1, 1.0, 10.0, 60.0];

/// The same bounds in nanoseconds, for the recording side.
const BUCKET_NANOS: [u64; 8] = [
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
    10_000_000_000,
    60_000_000_000,
];

/// Records durations: three relaxed atomic adds per observation.
#[derive(Debug, Default)]
pub(crate) struct Histogram {
    /// Observations per bucket (not cumulative); the last is `+Inf`.
    buckets: [AtomicU64; 9],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    pub(crate) fn observe(&self, duration: Duration) {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let index = BUCKET_NANOS
            .iter()
            .position(|&bound| nanos <= bound)
            .unwrap_or(BUCKET_NANOS.len());
        self.buckets[index].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> DurationHistogram {
        let mut cumulative = 0;
        let mut buckets = [0; 8];
        for (slot, bucket) in buckets.iter_mut().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            *slot = cumulative;
        }
        DurationHistogram {
            count: self.count.load(Ordering::Relaxed),
            sum: Duration::from_nanos(self.sum_nanos.load(Ordering::Relaxed)),
            buckets,
        }
    }
}

/// A snapshot of durations: how many, their sum, and how many fell at or
/// under each bound of [`BUCKETS`] (cumulative, as Prometheus counts them).
///
/// # Examples
///
/// ```
/// use kube_informer::metrics::DurationHistogram;
///
/// let none = DurationHistogram::default();
/// assert_eq!(none.count, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DurationHistogram {
    /// Observations.
    pub count: u64,
    /// Their total duration.
    pub sum: Duration,
    /// Observations at or under each bound of [`BUCKETS`], cumulative;
    /// those above the last bound are `count` minus the last entry.
    pub buckets: [u64; 8],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_cumulative_buckets() {
        let histogram = Histogram::default();
        histogram.observe(Duration::from_micros(5));
        histogram.observe(Duration::from_millis(5));
        histogram.observe(Duration::from_secs(120));
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.count, 3);
        assert_eq!(snapshot.buckets, [1, 1, 1, 2, 2, 2, 2, 2]);
        assert_eq!(
            snapshot.sum,
            Duration::from_secs(120) + Duration::from_micros(5_005)
        );
    }
}
