//! The stream that drives a [`Runner`](super::Runner).

use std::{
    fmt,
    future::Future,
    hash::Hash,
    pin::Pin,
    task::{Context, Poll, ready},
};

use futures::{Stream, stream::FuturesUnordered};
use pin_project::pin_project;
use tokio_util::sync::{CancellationToken, ReusableBoxFuture, WaitForCancellationFutureOwned};

use super::{Action, Error, OnCancel};
use crate::queue::{WorkItem, WorkQueue};
#[cfg(feature = "shard")]
use crate::shard::WorkGuard;

/// Without the `shard` feature nothing gates a runner: no guard can be
/// made, and `Admit` is always `None`.
#[cfg(not(feature = "shard"))]
pub(super) enum WorkGuard {}

// Dropped where a shard's guard would be, ending the work on the key.
#[cfg(not(feature = "shard"))]
impl Drop for WorkGuard {
    fn drop(&mut self) {
        match *self {}
    }
}

type Outcome<T, E> = Result<(T, Action), Error<E, T>>;

/// Starts the work on a key taken from the queue, or refuses it.
pub(super) type Admit<T> = Box<dyn Fn(&T) -> Option<WorkGuard> + Send + Sync>;

/// Stream for the [`run`](super::Runner::run) and
/// [`run_with_store`](super::Runner::run_with_store) methods: one item per
/// finished reconcile.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub(crate) struct Reconciles<T: Hash + Eq + Clone + Send + 'static, F, Fut, P> {
    queue: WorkQueue<T>,
    /// The pending `next()` on the queue.
    next: ReusableBoxFuture<'static, Option<WorkItem<T>>>,
    taking: Taking,
    #[pin]
    running: FuturesUnordered<Running<T, Fut>>,
    reconcile: F,
    concurrency: usize,
    cancel: Option<(Pin<Box<WaitForCancellationFutureOwned>>, OnCancel)>,
    /// The gate a key must pass before its reconcile starts
    /// ([`Runner::gate`](super::Runner::gate)); `None`: every key passes.
    admit: Option<Admit<T>>,
    /// What a failed reconcile's key gets next.
    policy: P,
}

/// Whether the stream asks the queue for keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Taking {
    /// It does, whenever fewer than `concurrency` reconciles run.
    Keys,
    /// The queue said it is shut down and empty while reconciles ran: the
    /// key of one of them may be queued again when it ends (W9), so the
    /// queue is asked again after each reconcile ends.
    AfterReconcile,
    /// Never again: the queue ended with nothing running, or the runner
    /// was cancelled.
    Stopped,
}

/// A reconcile future with its key's work item, released when the
/// reconcile ends (or is dropped), and the shard's guard of the key when the
/// runner is gated: a handover of the key waits until it drops.
#[pin_project]
struct Running<T: Hash + Eq + Clone, Fut> {
    item: Option<(WorkItem<T>, Option<WorkGuard>)>,
    #[pin]
    reconcile: Fut,
}

impl<T: Hash + Eq + Clone, Fut: Future> Future for Running<T, Fut> {
    type Output = (WorkItem<T>, Option<WorkGuard>, Fut::Output);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let output = ready!(this.reconcile.poll(cx));
        let (item, shard_guard) = this
            .item
            .take()
            .expect("a Running future is polled to completion once");
        Poll::Ready((item, shard_guard, output))
    }
}

async fn next_owned<T: Hash + Eq + Clone + Send + 'static>(
    queue: WorkQueue<T>,
) -> Option<WorkItem<T>> {
    queue.next().await
}

impl<T: Hash + Eq + Clone + Send + 'static, F, Fut, P> Reconciles<T, F, Fut, P> {
    pub(super) fn new(
        queue: WorkQueue<T>,
        concurrency: usize,
        cancel: Option<(CancellationToken, OnCancel)>,
        admit: Option<Admit<T>>,
        reconcile: F,
        policy: P,
    ) -> Self {
        Self {
            next: ReusableBoxFuture::new(next_owned(queue.clone())),
            taking: Taking::Keys,
            queue,
            running: FuturesUnordered::new(),
            reconcile,
            concurrency,
            cancel: cancel.map(|(token, on)| (Box::pin(token.cancelled_owned()), on)),
            admit,
            policy,
        }
    }
}

impl<T, F, Fut, E, P> Stream for Reconciles<T, F, Fut, P>
where
    T: Hash + Eq + Clone + Send + 'static,
    F: FnMut(T) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    P: FnMut(&T, &E) -> Action,
{
    type Item = Outcome<T, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // One unit of tokio's budget per item: under work that is always
        // ready the stream returns `Pending` once the task's budget is spent
        // (and is woken at once), so other tasks on the worker get to run.
        let coop = ready!(tokio::task::coop::poll_proceed(cx));
        let mut this = self.project();
        if let Some((cancelled, on_cancel)) = this.cancel
            && cancelled.as_mut().poll(cx).is_ready()
        {
            // No new keys from now on; what runs finishes or is dropped.
            *this.taking = Taking::Stopped;
            if *on_cancel == OnCancel::Abandon {
                this.running.set(FuturesUnordered::new());
            }
            *this.cancel = None;
        }
        loop {
            if let Poll::Ready(Some((item, shard_guard, result))) =
                this.running.as_mut().poll_next(cx)
            {
                let outcome = record_outcome(this.queue, this.policy, item, result);
                drop(shard_guard);
                if *this.taking == Taking::AfterReconcile {
                    *this.taking = Taking::Keys;
                }
                coop.made_progress();
                return Poll::Ready(Some(outcome));
            }
            if *this.taking != Taking::Keys || this.running.len() >= *this.concurrency {
                break;
            }
            match this.next.poll(cx) {
                Poll::Ready(next) => {
                    this.next.set(next_owned(this.queue.clone()));
                    let Some(item) = next else {
                        *this.taking = if this.running.is_empty() {
                            Taking::Stopped
                        } else {
                            Taking::AfterReconcile
                        };
                        break;
                    };
                    let shard_guard = match this.admit {
                        None => None,
                        Some(admit) => match admit(item.item()) {
                            Some(shard_guard) => Some(shard_guard),
                            None => {
                                // Not this replica's key (any more): drop it
                                // and its failure count; its owner has it.
                                this.queue.forget(item.item());
                                continue;
                            }
                        },
                    };
                    let reconcile = (this.reconcile)(item.item().clone());
                    this.running.as_mut().push(Running {
                        item: Some((item, shard_guard)),
                        reconcile,
                    });
                }
                Poll::Pending => break,
            }
        }
        if *this.taking != Taking::Keys && this.running.is_empty() {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }
}

/// Records the outcome of one reconcile on the queue, then ends the key's
/// processing (the item drops last, so a requeue made here while the key is
/// still held waits for the item's `done`, never giving the key to two
/// workers).
// The error is the controller's too, whose sync and setup variants make it
// large; it is handed out once per failed reconcile, never kept.
#[allow(clippy::result_large_err)]
fn record_outcome<T: Hash + Eq + Clone + Send + 'static, E>(
    queue: &WorkQueue<T>,
    policy: &mut impl FnMut(&T, &E) -> Action,
    item: WorkItem<T>,
    result: Result<Action, E>,
) -> Outcome<T, E> {
    let key = item.item().clone();
    let outcome = match result {
        Ok(action) => {
            act(queue, &key, action);
            Ok((key, action))
        }
        Err(error) => {
            act(queue, &key, policy(&key, &error));
            Err(Error::Reconcile { key, error })
        }
    };
    drop(item);
    outcome
}

/// Does what `action` asks of `key`'s next turn.
fn act<T: Hash + Eq + Clone + Send + 'static>(queue: &WorkQueue<T>, key: &T, action: Action) {
    match action {
        Action::AwaitChange => queue.forget(key),
        Action::RequeueAfter(delay) => {
            queue.forget(key);
            queue.add_after(key.clone(), delay);
        }
        Action::Backoff => queue.add_rate_limited(key.clone()),
    }
}

impl<T: Hash + Eq + Clone + Send + 'static, F, Fut, P> fmt::Debug for Reconciles<T, F, Fut, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reconciles")
            .field("queue", &self.queue)
            .field("running", &self.running.len())
            .field("concurrency", &self.concurrency)
            .field("taking", &self.taking)
            .field("gated", &self.admit.is_some())
            .finish_non_exhaustive()
    }
}
