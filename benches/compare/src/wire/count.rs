//! What each wire-mode subscriber has seen, published at milestones only, so
//! counting costs every runner the same near-nothing.

use k8s_openapi::api::core::v1::Pod;
use std::{
    hint::black_box,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};
use tokio::sync::watch;

/// One subscriber's counter: counts notifications, touches each Pod.
#[derive(Debug)]
pub struct Counter {
    seen: u64,
    milestones: Vec<u64>,
    next: usize,
    touched: u64,
    published: watch::Sender<u64>,
    most_pending: Arc<AtomicU64>,
}

/// The driver's half of a [`Counter`].
#[derive(Debug, Clone)]
pub struct CounterWatch {
    published: watch::Receiver<u64>,
    most_pending: Arc<AtomicU64>,
}

/// A connected pair publishing when the count reaches each of `milestones`.
pub fn counter(mut milestones: Vec<u64>) -> (Counter, CounterWatch) {
    milestones.sort_unstable();
    let (published, receiver) = watch::channel(0);
    let most_pending = Arc::new(AtomicU64::new(0));
    (
        Counter {
            seen: 0,
            milestones,
            next: 0,
            touched: 0,
            published,
            most_pending: Arc::clone(&most_pending),
        },
        CounterWatch {
            published: receiver,
            most_pending,
        },
    )
}

impl Counter {
    /// Counts one notification and touches its Pod (resourceVersion and
    /// container count), the trivial work every runner's subscribers do.
    pub fn observe(&mut self, pod: &Pod) {
        let version = pod.metadata.resource_version.as_deref().unwrap_or("");
        let containers = pod.spec.as_ref().map_or(0, |spec| spec.containers.len());
        self.observe_parts(version, containers);
    }

    /// [`observe`](Self::observe) for an object that is not a `Pod` (a
    /// projection of one): its resourceVersion and one number read from it.
    pub fn observe_parts(&mut self, version: &str, read: usize) {
        self.touched = self
            .touched
            .wrapping_add(black_box(version.len() + read) as u64);
        self.seen += 1;
        while self.next < self.milestones.len() && self.seen >= self.milestones[self.next] {
            self.next += 1;
            self.published.send_replace(self.seen);
        }
    }

    /// How many notifications this subscriber has seen.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Records a queue length, keeping the largest (for runners whose
    /// subscription can tell how much waits for it).
    pub fn record_pending(&self, pending: usize) {
        self.most_pending
            .fetch_max(pending as u64, Ordering::Relaxed);
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        self.published.send_replace(self.seen);
        black_box(self.touched);
    }
}

impl CounterWatch {
    /// Waits until the count reached `target`; false if the subscriber ended first.
    pub async fn reached(&mut self, target: u64) -> bool {
        self.published
            .wait_for(|seen| *seen >= target)
            .await
            .is_ok()
    }

    /// The count last published.
    pub fn published(&self) -> u64 {
        *self.published.borrow()
    }

    /// The largest queue length recorded with [`Counter::record_pending`].
    pub fn most_pending(&self) -> u64 {
        self.most_pending.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn publishes_at_milestones_and_when_dropped() {
        let (mut counter, mut watch) = counter(vec![3, 2]);
        let pod = Pod::default();
        counter.observe(&pod);
        assert_eq!(watch.published(), 0);
        counter.observe(&pod);
        assert!(watch.reached(2).await);
        counter.observe(&pod);
        counter.observe(&pod);
        assert_eq!(watch.published(), 3);
        counter.record_pending(7);
        counter.record_pending(5);
        assert_eq!(watch.most_pending(), 7);
        drop(counter);
        assert!(!watch.reached(5).await);
        assert_eq!(watch.published(), 4);
    }
}
