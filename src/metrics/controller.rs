//! A controller's reconcile metrics, with controller-runtime's names and
//! meanings: reconciles by result, errors, panics, reconcile time, active
//! workers and the concurrency limit; and the holds of the
//! read-your-own-writes gate, under names of this crate.
//!
//! Recording is relaxed atomic adds on a recorder the controller shares
//! with its reconciles; reading does the arithmetic.

use std::{
    sync::atomic::{AtomicU64, AtomicUsize, Ordering},
    time::Duration,
};

use super::histogram::{DurationHistogram, Histogram};

/// How a reconcile ended, as controller-runtime's `result` label names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReconcileResult {
    /// It succeeded and asked for nothing more.
    Success,
    /// It failed (an error or a panic).
    Error,
    /// It asked to be queued again through the rate limiter.
    Requeue,
    /// It asked to be queued again after a delay.
    RequeueAfter,
}

/// Counts kept by a controller and read by [`ControllerMetrics`] snapshots.
#[derive(Debug)]
pub(crate) struct ControllerRecorder {
    success: AtomicU64,
    error: AtomicU64,
    requeue: AtomicU64,
    requeue_after: AtomicU64,
    panics: AtomicU64,
    active: AtomicUsize,
    max_concurrent: AtomicUsize,
    time: Histogram,
    own_write_holds: AtomicU64,
    own_write_expiries: AtomicU64,
    own_write_hold_time: Histogram,
}

impl ControllerRecorder {
    /// A recorder for a controller running at most `max_concurrent`
    /// reconciles at once.
    pub(crate) fn new(max_concurrent: usize) -> Self {
        Self {
            success: AtomicU64::new(0),
            error: AtomicU64::new(0),
            requeue: AtomicU64::new(0),
            requeue_after: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            active: AtomicUsize::new(0),
            max_concurrent: AtomicUsize::new(max_concurrent),
            time: Histogram::default(),
            own_write_holds: AtomicU64::new(0),
            own_write_expiries: AtomicU64::new(0),
            own_write_hold_time: Histogram::default(),
        }
    }

    /// The controller now runs at most `n` reconciles at once.
    pub(crate) fn set_max_concurrent(&self, n: usize) {
        self.max_concurrent.store(n, Ordering::Relaxed);
    }

    /// A reconcile started; pair with [`ended`](Self::ended), whether it
    /// finished or was dropped.
    pub(crate) fn started(&self) {
        self.active.fetch_add(1, Ordering::Relaxed);
    }

    /// A reconcile that [started](Self::started) is no longer running.
    pub(crate) fn ended(&self) {
        self.active.fetch_sub(1, Ordering::Relaxed);
    }

    /// A reconcile finished with `result` after `took`.
    pub(crate) fn finished(&self, result: ReconcileResult, took: Duration) {
        self.time.observe(took);
        let counter = match result {
            ReconcileResult::Success => &self.success,
            ReconcileResult::Error => &self.error,
            ReconcileResult::Requeue => &self.requeue,
            ReconcileResult::RequeueAfter => &self.requeue_after,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A reconcile panicked (it is also counted as an error).
    pub(crate) fn panicked(&self) {
        self.panics.fetch_add(1, Ordering::Relaxed);
    }

    /// The read-your-own-writes gate held a key's reconcile: its caches
    /// had not shown the key's last writes yet.
    pub(crate) fn own_writes_held(&self) {
        self.own_write_holds.fetch_add(1, Ordering::Relaxed);
    }

    /// A hold ended when the caches caught up, after `took`.
    pub(crate) fn own_writes_caught_up(&self, took: Duration) {
        self.own_write_hold_time.observe(took);
    }

    /// A hold ended at its deadline, after `took`.
    pub(crate) fn own_writes_expired(&self, took: Duration) {
        self.own_write_hold_time.observe(took);
        self.own_write_expiries.fetch_add(1, Ordering::Relaxed);
    }

    /// The metrics now.
    pub(crate) fn snapshot(&self) -> ControllerMetrics {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let reconciles = ReconcileCounts {
            success: load(&self.success),
            error: load(&self.error),
            requeue: load(&self.requeue),
            requeue_after: load(&self.requeue_after),
        };
        ControllerMetrics {
            reconciles,
            errors: reconciles.error,
            panics: load(&self.panics),
            reconcile_time: self.time.snapshot(),
            active_workers: self.active.load(Ordering::Relaxed),
            max_concurrent_reconciles: self.max_concurrent.load(Ordering::Relaxed),
            own_write_holds: load(&self.own_write_holds),
            own_write_expiries: load(&self.own_write_expiries),
            own_write_hold_time: self.own_write_hold_time.snapshot(),
        }
    }
}

/// Reconciles by how they ended (controller-runtime's
/// `controller_runtime_reconcile_total{result}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReconcileCounts {
    /// Succeeded and asked for nothing more (`result="success"`).
    pub success: u64,
    /// Failed with an error or a panic (`result="error"`).
    pub error: u64,
    /// Succeeded and asked to be queued again through the rate limiter
    /// (`result="requeue"`).
    pub requeue: u64,
    /// Succeeded and asked to be queued again after a delay
    /// (`result="requeue_after"`).
    pub requeue_after: u64,
}

impl ReconcileCounts {
    /// Every reconcile that ended.
    pub fn total(&self) -> u64 {
        self.success + self.error + self.requeue + self.requeue_after
    }
}

/// A [`Controller`](crate::controller::Controller)'s reconcile metrics:
/// see [`Controller::metrics`](crate::controller::Controller::metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControllerMetrics {
    /// Reconciles that ended, by result (`controller_runtime_reconcile_total`).
    pub reconciles: ReconcileCounts,
    /// Reconciles that failed, panics included
    /// (`controller_runtime_reconcile_errors_total`).
    pub errors: u64,
    /// Reconciles that panicked (`controller_runtime_reconcile_panics_total`).
    pub panics: u64,
    /// How long reconciles took (`controller_runtime_reconcile_time_seconds`).
    pub reconcile_time: DurationHistogram,
    /// Reconciles running now (`controller_runtime_active_workers`).
    pub active_workers: usize,
    /// The most reconciles that run at once
    /// (`controller_runtime_max_concurrent_reconciles`); 0 when there is no
    /// bound, a controller's default.
    pub max_concurrent_reconciles: usize,
    /// Reconciles the read-your-own-writes gate held because the caches
    /// had not shown the key's last writes yet
    /// ([`Controller::read_own_writes`](crate::controller::Controller::read_own_writes);
    /// `kube_informer_controller_own_write_holds_total`).
    pub own_write_holds: u64,
    /// Holds that ended at their deadline, the reconcile then running on
    /// caches that had not caught up
    /// (`kube_informer_controller_own_write_expiries_total`).
    pub own_write_expiries: u64,
    /// How long holds lasted, expired ones included
    /// (`kube_informer_controller_own_write_hold_seconds`).
    pub own_write_hold_time: DurationHistogram,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_count_apart_and_errors_include_panics() {
        let recorder = ControllerRecorder::new(3);
        for result in [
            ReconcileResult::Success,
            ReconcileResult::Error,
            ReconcileResult::Requeue,
            ReconcileResult::RequeueAfter,
            ReconcileResult::Error,
        ] {
            recorder.started();
            recorder.finished(result, Duration::from_millis(2));
            recorder.ended();
        }
        recorder.panicked();
        recorder.started();
        let metrics = recorder.snapshot();
        assert_eq!(metrics.reconciles.total(), 5);
        assert_eq!(metrics.errors, 2);
        assert_eq!(metrics.panics, 1);
        assert_eq!(metrics.active_workers, 1);
        assert_eq!(metrics.max_concurrent_reconciles, 3);
        assert_eq!(metrics.reconcile_time.count, 5);
    }

    #[test]
    fn rw8_holds_and_expiries_count_apart() {
        let recorder = ControllerRecorder::new(1);
        recorder.own_writes_held();
        recorder.own_writes_caught_up(Duration::from_millis(3));
        recorder.own_writes_held();
        recorder.own_writes_expired(Duration::from_secs(5));
        let metrics = recorder.snapshot();
        assert_eq!(
            (metrics.own_write_holds, metrics.own_write_expiries),
            (2, 1)
        );
        assert_eq!(metrics.own_write_hold_time.count, 2);
        assert_eq!(metrics.reconciles.total(), 0);
    }
}
