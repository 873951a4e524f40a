//! A work queue for controllers, with client-go's `workqueue` rules (W1–W12),
//! and options for error backoffs that hold (W13) and for priorities with
//! ageing (W14, W15).
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
//! - **W4 done by drop.** Dropping a [`WorkItem`] ends processing; an item not added again is
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
//!   per-item 5 ms × 2ⁿ backoff capped at 1,000 s ([`item_exponential`]) and a
//!   shared token bucket of 10 per second, burst 100 ([`token_bucket`]).
//! - **W9 shutdown.** After [`shutdown`](WorkQueue::shutdown) adds and delayed
//!   adds are ignored and waiting deadlines are dropped; what is queued is
//!   still handed out (and an item marked dirty while processing is queued
//!   again when its guard drops), and [`next`](WorkQueue::next) returns `None`
//!   whenever nothing is queued.
//! - **W10 drain.** [`shutdown_with_drain`](WorkQueue::shutdown_with_drain)
//!   shuts down and then waits until no guard is alive; a later `shutdown`
//!   stops the wait.
//! - **W11 length.** [`len`](WorkQueue::len) counts queued items: neither
//!   processing nor delayed ones (at both levels, W14).
//! - **W12 bounded memory.** The queue holds each distinct item at most once
//!   in each of its sets (queued, dirty, processing, delayed), whatever the
//!   rate of adds; the per-item limiter holds one counter per item until it is
//!   forgotten. (With W14, entries left in the low queue by items that moved
//!   up are dropped lazily: at most twice the low items queued, plus 32.)
//!
//! Three rules differ from client-go, and only when asked for:
//!
//! - **W13 backoff that holds** (off by default, so the default queue is
//!   client-go's; [`QueueConfig::backoff_holds`]). While an item waits out
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
//! - **W14 priorities** (off by default; [`QueueConfig::priorities`]). An add
//!   says its [`Priority`]: [`add`](WorkQueue::add), and delayed and
//!   rate-limited adds when they come due, are high;
//!   [`add_with_priority`](WorkQueue::add_with_priority) says either. Each
//!   level is first in, first out (W2), and a high item is handed out
//!   before every low one, except as W15 says. Dedup (W1) and one holder
//!   (W3) hold across levels: an item is queued once, at the highest level
//!   it was added at. A queued low item added high moves to the tail of the
//!   high items and is handed out once; a queued high item added low stays
//!   where it is; an item processing and added again joins, when its guard
//!   drops, the tail of the highest level it was added at meanwhile. Off,
//!   the priority of an add is ignored and the queue is client-go's. Why
//!   it exists: with one queue for everything, an initial list or a resync
//!   of 50,000 keys delays a live change by the whole backlog.
//! - **W15 ageing.** A low item that has been queued for the ageing bound
//!   ([`QueueConfig::priority_ageing`], [`DEFAULT_PRIORITY_AGEING`] = 10 s)
//!   has aged. While the oldest low item has aged, a hand-out that follows
//!   a high item's goes to the oldest low item. So, however many high items
//!   come, an item queued low with `p` low items ahead of it is handed out
//!   at the latest by the `2 × (p + 1)`-th hand-out after it has waited the
//!   ageing bound: with `n` workers that each take `d` per item, within
//!   `ageing + 2 × (p + 1) × d / n` (plus the rest of the reconciles under
//!   way). High items keep at least every second hand-out. The age counts
//!   from when the item joined the low queue (a queued item's add does not
//!   reset it).
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
//! [`stream`](WorkQueue::stream) ends. Items being processed stay processing until their
//! guards drop; [`shutdown_with_drain`](WorkQueue::shutdown_with_drain) waits
//! for that. Dropping every handle frees the queue; outstanding guards keep
//! the shared state alive until they drop.
//!
//! # Cancel safety
//!
//! An item leaves the queue only inside the poll that hands it out, already
//! wrapped in its guard, so dropping a pending `next()` future or a
//! [`stream`](WorkQueue::stream) between polls loses nothing. A wakeup meant for a dropped
//! waiter is passed on to another. A guard dropped by a cancelled or
//! panicking worker ends processing like any other drop.
//!
//! # Bad input
//!
//! None reaches the queue: every item is accepted; rate limiters handle
//! counts that would overflow by saturating at their maximum. The lock is a
//! `parking_lot` mutex held for a few lines and never across a call into user
//! code (rate limiters are called without it).

mod config;
mod delayed;
mod guard;
mod lazy_now;
mod priority;
mod rate_limit;
mod ready;
mod shared;
mod state;
mod stream;
mod work_queue;

pub use config::QueueConfig;
pub use guard::WorkItem;
pub use priority::{DEFAULT_PRIORITY_AGEING, Priority};
pub use rate_limit::{RateLimiter, default_rate_limiter, item_exponential, max_of, token_bucket};
pub use work_queue::WorkQueue;
