//! From notifications to subscribers: one queue per [`Subscription`], each
//! with its own waker, resync period and lag policy.
//!
//! The distributor lives on the informer's single writer task; each
//! [`Subscription`] is a `Stream` any task may consume. A subscription asked
//! for from another task is a request the writer registers between two
//! batches, so a late subscriber's replay of the cache and its registration
//! happen at one point, before any later notification (L1).
//!
//! The writer side (the `Distributor` and `SubscribeRequest`) stays with
//! the crate (the hidden `unstable::dispatch` reaches it for the crate's own
//! tests and benchmarks, outside semver).
//!
//! # Lagging
//!
//! There is no shared ring: the distributor pushes one `Arc` clone of each
//! notification into every subscriber's own queue (L4).
//!
//! - [`Lag::Unbounded`] (the default, client-go's behaviour): a subscriber
//!   that stalls grows its own queue; nobody else waits.
//! - [`Lag::Bounded`]: when its queue is full the distributor waits for room,
//!   which delays every other subscriber and the informer behind it. Use it
//!   only when back-pressure on the whole informer is what you want. A stop
//!   ends the wait: the rest of the batch is queued past the bound, so a
//!   subscriber that never reads cannot hold a stop up (L12).
//! - [`Lag::Coalesce`]: while it lags, only the newest state per key is kept,
//!   in the order keys first became pending; nobody else waits. Merges:
//!   `Added + Updated → Added(newest)`, `Updated(a→b) + Updated(b→c) →
//!   Updated(a→c)`, `Updated + Deleted → Deleted`, `Added + Deleted →`
//!   nothing (the subscriber never hears of that object), `Deleted + Added`
//!   stays two notifications (a recreate is news), and a resync update merged
//!   with a real one is a real one. At most two notifications per key are
//!   pending; folding what it yields always ends at the cache's state.
//!
//! A subscriber that panics or is dropped only ends its own queue.
//!
//! What a burst can hold in memory, beyond the cache: a queued notification
//! is a few words plus `Arc`s of its objects, and an `Updated` keeps the
//! replaced object alive until the subscriber takes it. So under
//! `Unbounded` a subscriber lagging by `n` notifications keeps up to `n`
//! replaced objects alive (unbounded, as in client-go); under `Bounded(cap)`
//! at most `cap` per subscriber, and the informer stops reading the source
//! meanwhile (the informer's FIFO holds about a thousand deltas at most
//! before the source is paused); under `Coalesce` at most two notifications
//! per key, each keeping at most one object the cache no longer holds,
//! however long the lag.
//!
//! # Resync
//!
//! Each subscriber asks for its own resync period (L3).
//! [`Distributor::should_resync`] computes the round's due set; resync
//! updates ([`Notification::is_resync`](crate::Notification::is_resync)) of
//! that round reach only the due subscribers (I3). A new subscriber is in
//! the due set until the next round, as client-go's new listeners are, so
//! before the first round every subscriber receives them.
//!
//! # Closing
//!
//! After [`Distributor::close`] (or its drop) each subscription yields what
//! was already queued for it, then ends;
//! [`Subscription::end_reason`] says why ([`EndReason`], given to
//! [`Distributor::close_with`]). Registering after that, or dropping
//! a [`SubscribeRequest`] unregistered, ends the subscription at once, its
//! end reason [`EndReason::Stopped`] (L6).

mod channel;
mod coalesce;
pub(crate) mod distributor;
mod end;
mod handler;
mod initial_list;
mod life;
mod options;
mod queue;
pub(crate) mod request;
pub(crate) mod resync;
mod stats;
mod subscription;
mod sync_status;

pub(crate) use life::{Ended, Life, Start};

pub(crate) use distributor::Distributor;
pub use end::EndReason;
pub use handler::ResourceEventHandler;
pub use options::{Lag, SubscribeOptions};
pub(crate) use request::SubscribeRequest;
pub use resync::MINIMUM_RESYNC_PERIOD;
pub use subscription::Subscription;
pub use sync_status::SyncStatus;
pub(crate) use sync_status::UpstreamSync;
