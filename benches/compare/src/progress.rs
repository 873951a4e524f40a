//! What each subscriber has seen, published to the driver at a few milestones.
//!
//! A subscriber counts every notification in a plain field and touches the
//! object (the trivial work the benchmark asks for); only when the count
//! reaches one of the driver's milestones does it publish through a `watch`
//! channel, so counting costs the runners almost nothing and costs them all
//! the same.

use k8s_openapi::api::core::v1::ConfigMap;
use std::{
    hint::black_box,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};
use tokio::sync::watch;

/// How long the slow subscriber of the slow variant sleeps per notification.
pub const SLOW_SUBSCRIBER_PAUSE: Duration = Duration::from_millis(1);

/// What [`ProgressWatch::queued`] holds until a runner records a length.
const NOT_REPORTED: u64 = u64::MAX;

/// Deliveries one subscriber must have seen at the end of each phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Targets {
    /// After the initial list.
    pub list: u64,
    /// After the updates.
    pub updates: u64,
    /// After everything.
    pub last: u64,
}

/// The subscriber's half: count, touch, maybe sleep.
#[derive(Debug)]
pub struct Progress {
    seen: u64,
    milestones: [u64; 3],
    next_milestone: usize,
    slow: bool,
    touched: u64,
    published: watch::Sender<u64>,
    queued: Arc<AtomicU64>,
}

/// The driver's half: waits until a subscriber has seen enough.
#[derive(Debug, Clone)]
pub struct ProgressWatch {
    published: watch::Receiver<u64>,
    queued: Arc<AtomicU64>,
    /// Whether this subscriber sleeps per notification.
    pub slow: bool,
}

/// The subscriber stopped (its stream ended or its task died) before it saw
/// what the driver waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("subscriber ended after {seen} of {target} notifications")]
pub struct SubscriberEnded {
    /// What it saw.
    pub seen: u64,
    /// What it should have seen.
    pub target: u64,
}

/// A connected pair for one subscriber.
pub fn progress(targets: Targets, slow: bool) -> (Progress, ProgressWatch) {
    let (published, receiver) = watch::channel(0);
    let queued = Arc::new(AtomicU64::new(NOT_REPORTED));
    (
        Progress {
            seen: 0,
            milestones: [targets.list, targets.updates, targets.last],
            next_milestone: 0,
            slow,
            touched: 0,
            published,
            queued: Arc::clone(&queued),
        },
        ProgressWatch {
            published: receiver,
            queued,
            slow,
        },
    )
}

impl Progress {
    /// Counts one notification and touches its object.
    pub fn observe(&mut self, object: &ConfigMap) {
        let version = object.metadata.resource_version.as_deref().unwrap_or("");
        let entries = object.data.as_ref().map_or(0, |data| data.len());
        self.touched = self
            .touched
            .wrapping_add(black_box(version.len() + entries) as u64);
        self.seen += 1;
        if self.slow {
            // The driver reads the slow subscriber's exact backlog at the end;
            // publishing each count costs nothing next to its sleep.
            self.published.send_replace(self.seen);
        }
        while self.next_milestone < self.milestones.len()
            && self.seen >= self.milestones[self.next_milestone]
        {
            self.next_milestone += 1;
            self.published.send_replace(self.seen);
        }
    }

    /// Records how many notifications wait in this subscriber's queue, for
    /// runners whose subscription can tell (runner (a)).
    pub fn set_queued(&self, queued: usize) {
        self.queued.store(queued as u64, Ordering::Relaxed);
    }

    /// Whether this is the slow subscriber of the slow variant.
    pub fn is_slow(&self) -> bool {
        self.slow
    }

    /// The slow subscriber's pause after each notification; nothing for the others.
    pub async fn pace(&self) {
        if self.slow {
            tokio::time::sleep(SLOW_SUBSCRIBER_PAUSE).await;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // The driver reads the final count when the channel closes.
        self.published.send_replace(self.seen);
        black_box(self.touched);
    }
}

impl ProgressWatch {
    /// Waits until the subscriber has seen at least `target` notifications.
    pub async fn reached(&mut self, target: u64) -> Result<(), SubscriberEnded> {
        let outcome = self
            .published
            .wait_for(|seen| *seen >= target)
            .await
            .map(|_| ());
        outcome.map_err(|_| SubscriberEnded {
            seen: *self.published.borrow(),
            target,
        })
    }

    /// The queue length last recorded with [`Progress::set_queued`], if any.
    pub fn queued(&self) -> Option<u64> {
        Some(self.queued.load(Ordering::Relaxed)).filter(|queued| *queued != NOT_REPORTED)
    }

    /// The count last published (milestones only, or the final count).
    pub fn published(&self) -> u64 {
        *self.published.borrow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object() -> ConfigMap {
        ConfigMap::default()
    }

    #[tokio::test]
    async fn publishes_at_milestones_and_on_drop() {
        let targets = Targets {
            list: 2,
            updates: 3,
            last: 5,
        };
        let (mut progress, mut watch) = progress(targets, false);
        progress.observe(&object());
        assert_eq!(watch.published(), 0);
        progress.observe(&object());
        watch.reached(2).await.unwrap();
        progress.observe(&object());
        progress.observe(&object());
        assert_eq!(watch.published(), 3);
        drop(progress);
        assert_eq!(
            watch.reached(5).await,
            Err(SubscriberEnded { seen: 4, target: 5 })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn only_the_slow_subscriber_sleeps() {
        let targets = Targets {
            list: 1,
            updates: 1,
            last: 1,
        };
        let start = tokio::time::Instant::now();
        progress(targets, false).0.pace().await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        progress(targets, true).0.pace().await;
        assert!(start.elapsed() >= SLOW_SUBSCRIBER_PAUSE);
    }
}
