//! Debouncing a controller's triggers (C14): a key is queued once its
//! triggers have been quiet for the debounce period, so a burst of changes
//! to one object (or to the children of one owner) costs one reconcile.

use std::{
    collections::VecDeque,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use futures::{Stream, StreamExt, stream::Fuse};
use pin_project::pin_project;
use tokio::time::{Instant, Sleep};

use super::triggers::Feed;
use crate::{hash::KeyMap, key::ObjectKey, queue::Priority};

/// `feed` with each key held until it has had no trigger for `period`
/// (C14); `feed` itself when `period` is zero.
pub(super) fn debounced(feed: Feed, period: Duration) -> Feed {
    if period.is_zero() {
        return feed;
    }
    Debounced {
        feed: feed.fuse(),
        period,
        waiting: KeyMap::default(),
        due: VecDeque::new(),
        timer: None,
    }
    .boxed()
}

/// A key held back, with when it is due and the highest priority any of
/// its triggers asked for.
struct Held {
    due: Instant,
    priority: Priority,
}

#[pin_project]
struct Debounced {
    #[pin]
    feed: Fuse<Feed>,
    period: Duration,
    waiting: KeyMap<ObjectKey, Held>,
    /// Keys in the order they fall due; a key triggered again has a later
    /// entry, and its earlier ones are stale (their due time is not the
    /// key's any more) and skipped when reached. The period is one for
    /// all, so entries are pushed in order of their due times.
    due: VecDeque<(Instant, ObjectKey)>,
    /// Made at the first wait, inside the runtime (a controller's stream
    /// may be built outside one).
    timer: Option<Pin<Box<Sleep>>>,
}

impl Stream for Debounced {
    type Item = (ObjectKey, Priority);

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        // Take every trigger that is ready: each one moves its key's due
        // time to a full period from now, never earlier.
        let ended = loop {
            match this.feed.as_mut().poll_next(cx) {
                Poll::Ready(Some((key, priority))) => {
                    let due = Instant::now() + *this.period;
                    this.waiting
                        .entry(key.clone())
                        .and_modify(|held| {
                            held.due = due;
                            held.priority = higher(held.priority, priority);
                        })
                        .or_insert(Held { due, priority });
                    this.due.push_back((due, key));
                }
                Poll::Ready(None) => break true,
                Poll::Pending => break false,
            }
        };
        loop {
            let Some((due, key)) = this.due.front() else {
                // Nothing held: the stream ends with its triggers (C7).
                return if ended {
                    Poll::Ready(None)
                } else {
                    Poll::Pending
                };
            };
            let current = this.waiting.get(key).is_some_and(|held| held.due == *due);
            if !current {
                this.due.pop_front();
                continue;
            }
            if *due <= Instant::now() {
                let key = key.clone();
                this.due.pop_front();
                if let Some(held) = this.waiting.remove(&key) {
                    return Poll::Ready(Some((key, held.priority)));
                }
                continue;
            }
            let due = *due;
            let timer = this
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
            if timer.deadline() != due {
                timer.as_mut().reset(due);
            }
            return match timer.as_mut().poll(cx) {
                // Due now: read the front again.
                Poll::Ready(()) => continue,
                Poll::Pending => Poll::Pending,
            };
        }
    }
}

/// The higher of two priorities: a live change held with listed keys is
/// still a live change.
fn higher(a: Priority, b: Priority) -> Priority {
    match (a, b) {
        (Priority::Low, Priority::Low) => Priority::Low,
        _ => Priority::High,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::{StreamExt, channel::mpsc};
    use tokio::time::{Instant, advance};

    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Some("default"), name).unwrap()
    }

    /// C14: each trigger moves its key's turn to a period after it; keys
    /// come out when due, at the higher priority, and once the feed ends
    /// the held keys still come out before the stream ends.
    #[tokio::test(start_paused = true)]
    async fn c14_triggers_move_a_key_later_and_merge() {
        let (tx, rx) = mpsc::unbounded();
        let start = Instant::now();
        let mut out = debounced(rx.boxed(), Duration::from_secs(10));
        // Each trigger is read as it comes (the controller polls its feed
        // from a task of its own).
        tx.unbounded_send((key("a"), Priority::Low)).unwrap();
        assert!(futures::poll!(out.next()).is_pending());
        advance(Duration::from_secs(3)).await;
        tx.unbounded_send((key("b"), Priority::Low)).unwrap();
        assert!(futures::poll!(out.next()).is_pending());
        advance(Duration::from_secs(2)).await;
        tx.unbounded_send((key("a"), Priority::High)).unwrap();
        // Nothing is due yet: a moved from 10 s to 15 s, b is due at 13 s.
        assert!(futures::poll!(out.next()).is_pending());
        assert_eq!(out.next().await, Some((key("b"), Priority::Low)));
        assert_eq!(start.elapsed(), Duration::from_secs(13));
        drop(tx);
        assert_eq!(out.next().await, Some((key("a"), Priority::High)));
        assert_eq!(start.elapsed(), Duration::from_secs(15));
        assert_eq!(out.next().await, None);
    }

    /// C14: a zero period is no stage at all.
    #[tokio::test(start_paused = true)]
    async fn c14_a_zero_period_passes_each_trigger_at_once() {
        let (tx, rx) = mpsc::unbounded();
        let mut out = debounced(rx.boxed(), Duration::ZERO);
        tx.unbounded_send((key("a"), Priority::High)).unwrap();
        tx.unbounded_send((key("a"), Priority::High)).unwrap();
        let start = Instant::now();
        assert_eq!(out.next().await, Some((key("a"), Priority::High)));
        assert_eq!(out.next().await, Some((key("a"), Priority::High)));
        assert_eq!(start.elapsed(), Duration::ZERO);
    }
}
