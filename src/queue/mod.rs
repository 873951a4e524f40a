//! A work queue for controllers, with client-go's `workqueue` rules (W1–W12),
//! and an option for error backoffs that hold (W13).
//!
//! An informer says *what changed*; a controller must *act* on each changed
//! key, once at a time, retrying failures with backoff. [`WorkQueue`] is the
//! step between the two: notifications become keys
//! ([`feed`](WorkQueue::feed), [`feed_results`](WorkQueue::feed_results)),
//! workers take keys ([`next`](WorkQueue::next) or
//! [`stream`](WorkQueue::stream)) and hold each in a [`WorkItem`] guard while
//! they work on it. It queues any `Hash + Eq + Clone + Send` item, an
//! [`ObjectKey`](crate::ObjectKey) by default, and knows nothing of informers.
//!
//! # Rules
//!
//! The rules are those of client-go's `TypedRateLimitingQueue`
//! (`k8s.io/client-go/util/workqueue`); tests are named after them, and the
//! conformance suite replays random traces through both queues.
//!
//! - **W1 dedup while waiting.** Adding an item that is already queued does
//!   nothing: it keeps its place and is handed out once.
//! - **W2 order.** Items are handed out oldest first, in the order they joined
//!   the queue.
//! - **W3 one holder.** An item handed out is *processing* until its guard
//!   drops. Adding it meanwhile marks it dirty without queueing it; when the
//!   guard drops it joins the tail of the queue. No item is ever held by two
//!   workers at once.
//! - **W4 done by drop.** Dropping a [`WorkItem`] (or
//!   [`done`](WorkItem::done)) ends processing; an item not added again is
//!   then gone from the queue.
//! - **W5 delayed adds.** [`add_after`](WorkQueue::add_after) adds the item
//!   once the delay has passed on tokio's clock; a zero delay adds at once.
//!   An item waits for one deadline: a second `add_after` with an earlier
//!   deadline moves it earlier, a later one is ignored. A waiting deadline is
//!   independent of the queue: adding the item directly does not cancel it.
//! - **W6 due order.** Delayed items that come due join the queue in deadline
//!   order (equal deadlines: in the order of the `add_after` calls), before
//!   any item added after they came due.
//! - **W7 rate-limited adds.** [`add_rate_limited`](WorkQueue::add_rate_limited)
//!   is `add_after` with the delay of the [`RateLimiter`], which counts the
//!   item's failures; [`forget`](WorkQueue::forget) clears them and
//!   [`requeues`](WorkQueue::requeues) reads them.
//! - **W8 default limiter.** [`default_rate_limiter`]: the larger of a
//!   per-item 5 ms × 2ⁿ backoff capped at 1,000 s ([`ItemExponential`]) and a
//!   shared token bucket of 10 per second, burst 100 ([`TokenBucket`]).
//! - **W9 shutdown.** After [`shutdown`](WorkQueue::shutdown) adds and delayed
//!   adds are ignored and waiting deadlines are dropped; what is queued is
//!   still handed out (and an item marked dirty while processing is queued
//!   again when its guard drops), and [`next`](WorkQueue::next) returns `None`
//!   whenever nothing is queued.
//! - **W10 drain.** [`shutdown_with_drain`](WorkQueue::shutdown_with_drain)
//!   shuts down and then waits until no guard is alive; a later `shutdown`
//!   stops the wait.
//! - **W11 length.** [`len`](WorkQueue::len) counts queued items: neither
//!   processing nor delayed ones.
//! - **W12 bounded memory.** The queue holds each distinct item at most once
//!   in each of its sets (queued, dirty, processing, delayed), whatever the
//!   rate of adds; the per-item limiter holds one counter per item until it is
//!   forgotten.
//!
//! One rule differs from client-go, and only when asked for:
//!
//! - **W13 backoff that holds** (off by default, so the default queue is
//!   client-go's; [`WorkQueue::backoff_holds`]). While an item waits out
//!   the deadline of an [`add_rate_limited`](WorkQueue::add_rate_limited),
//!   it is not handed out before that deadline: adds and delayed adds of
//!   it join the deadline, and a rate-limited add of it asks the limiter
//!   nothing, so its failures count once per deadline. The backoff becomes
//!   the item's only deadline (earlier or later than one it had); an item
//!   queued, or processing and added again, when the backoff starts waits
//!   for it too. Once due, the item joins the queue as any delayed item
//!   (W6). Why it is off by default: it changes what a trace of the queue
//!   does (`conformance/DIFFERENCES.md`), and a program that relies on an
//!   add to cut a backoff short (a user's edit retried at once) would wait
//!   out the backoff instead.
//!
//! # Waiting
//!
//! A consumer waiting in [`next`](WorkQueue::next) is parked on a
//! [`tokio::sync::Notify`] and, while items are delayed, on a timer for the
//! earliest deadline. Each item that joins the queue wakes one consumer; a new
//! earliest deadline wakes all of them to re-arm their timers. There is no
//! background task: delayed items come due inside whichever queue call runs
//! first after their deadline (a waiting consumer's timer, an add, `len`).
//!
//! # Closing
//!
//! [`shutdown`](WorkQueue::shutdown) wakes every waiting consumer. Queued items
//! still come out; once the queue is empty `next` returns `None` and the
//! [`WorkStream`] ends. Items being processed stay processing until their
//! guards drop; [`shutdown_with_drain`](WorkQueue::shutdown_with_drain) waits
//! for that. Dropping every handle frees the queue; outstanding guards keep
//! the shared state alive until they drop.
//!
//! # Cancel safety
//!
//! An item leaves the queue only inside the poll that hands it out, already
//! wrapped in its guard, so dropping a pending `next()` future or a
//! [`WorkStream`] between polls loses nothing. A wakeup meant for a dropped
//! waiter is passed on to another. A guard dropped by a cancelled or
//! panicking worker ends processing like any other drop.
//!
//! # Bad input
//!
//! None reaches the queue: every item is accepted; rate limiters handle
//! counts that would overflow by saturating at their maximum. The lock is a
//! `parking_lot` mutex held for a few lines and never across a call into user
//! code (rate limiters are called without it).

mod delayed;
mod guard;
mod rate_limit;
mod state;
mod stream;
mod work_queue;

pub use guard::WorkItem;
pub use rate_limit::{ItemExponential, MaxOf, RateLimiter, TokenBucket, default_rate_limiter};
pub use stream::WorkStream;
pub use work_queue::WorkQueue;
