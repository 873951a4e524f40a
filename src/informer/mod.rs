//! The [`Informer`]: list/watch source → [`DeltaFifo`](crate::fifo::DeltaFifo)
//! → [`Store`](crate::store::Store) → per-subscriber
//! [`Subscription`](crate::dispatch::Subscription)s, wired together.
//!
//! # How it runs
//!
//! [`Informer::run`] drives two parts on one task. The *pump* moves source
//! events into the FIFO (watch events become add/update/delete, relists
//! become `list_start` / `listed` / `list_done`, bookmarks nothing). The
//! *writer* is the only code that writes the store or notifies: it pops one
//! key's deltas at a time, applies them oldest first (I5) and turns each
//! into a [`Notification`](crate::Notification):
//!
//! - `Sync`, `Replaced`, `Added`, `Updated`: `Updated { old, new, resync }`
//!   if the store held the key, else `Added { in_initial_list }` (I1), where
//!   `resync` means both have the same resourceVersion (I3) and
//!   `in_initial_list` means the FIFO had not synced yet (I4);
//! - `Deleted`: `Deleted { object, final_state_unknown }` with exactly what
//!   was queued, `final_state_unknown` for a tombstone (I2).
//!
//! Between two batches the writer registers late subscribers (the store as
//! it is at that point is their replay, L1) and runs resync rounds: every
//! resync check period it asks the distributor whether any subscriber is
//! due, and only then resyncs the FIFO; the resulting resync updates go
//! only to the due subscribers (I3, L3).
//!
//! Two rules of the run loop's own, not client-go's:
//!
//! - **IR1 One poll per lone event.** An event that arrives on its own is
//!   written to the store and handed to every subscriber in the poll of the
//!   informer's task that read it: the pump signals the writer with a flag
//!   and the task never wakes itself for it.
//! - **IR2 The informer frees what only notifications hold.** An object
//!   that only notifications hold (the one an update replaced, a deleted
//!   one) is freed by the writer, between two rounds, once every subscriber
//!   has dropped it, on the thread that decodes the watch; a writer idle for
//!   a second lets go of what it still holds, so a quiet informer keeps none
//!   of them alive.
//!
//! # Errors
//!
//! The source retries by itself; every error it yields, and every object the
//! FIFO refuses (no name, failed transform), is counted
//! (`Informer::metrics().errors`), logged with `tracing`, passed to the
//! builder's [`on_error`](InformerBuilder::on_error) callback and sent to
//! every [`Informer::errors`] stream (R9). None of them stops the informer.
//!
//! - **ER1 The cause stays reachable.** A list/watch failure is
//!   [`Error::Source`] holding the concrete
//!   [`source::Error`](crate::source::Error), any other stream's error is
//!   [`Error::Stream`]; no message repeats its cause, so the chain printed
//!   through `source()` names each cause once.
//! - **ER2 Logged once, where it happened.** Each error is logged once, at
//!   WARN with its whole chain, inside the `informer` span, which names the
//!   resource (group, version, plural, namespace) rather than the Rust type.
//!
//! # Waiting for the first sync
//!
//! There is one wait, in one shape, on each type that has one:
//! `wait_until_synced(&self) -> Result<(), SyncError>` on
//! [`Informer`], [`Store`](crate::Store),
//! [`Subscription`](crate::Subscription),
//! [`SyncStatus`](crate::dispatch::SyncStatus) and
//! [`InformerFactory`](crate::InformerFactory). It fails fast with a
//! [`SyncError`] that names the resource, so a program whose RBAC rules or
//! CustomResourceDefinition are missing says so at start instead of
//! hanging:
//!
//! - I6: the wait returns `Ok` once the informer has synced, also when it
//!   synced before the call, whatever errors came before.
//! - I7: before the first sync, when the source's latest answer is 401 or
//!   403 ([`SyncError::Refused`]) or 404 ([`SyncError::NotFound`]) and no
//!   list was answered since, the wait returns it at once, with the
//!   server's message; also a wait that starts after that answer. The
//!   informer keeps running and retrying (R9); once a list is answered,
//!   a new wait waits again.
//! - I8: the wait has no deadline of its own; a caller gives it one with
//!   [`tokio::time::timeout`], and when that passes,
//!   [`Informer::last_error`] is the last error the source reported, if
//!   any. The waits that take a timeout themselves (a controller's
//!   [`sync_timeout`](crate::controller::Config::sync_timeout), the factory's)
//!   answer [`SyncError::TimedOut`], whose source is that error; a timeout
//!   the clock cannot hold (`Duration::MAX`) means no deadline.
//! - I9: an informer that ends before it synced (any way it can end,
//!   also before `run`, L7) gives [`SyncError::Stopped`].
//! - I10: the factory waits for every informer it holds at once; the
//!   first error any of them meets is its answer, and a deadline put
//!   around the wait holds for all of them.
//! - I11: the futures of the waits are `Send`, so a controller awaits
//!   them in spawned tasks and streams.
//! - I12: every wait for the first sync either takes a deadline or returns
//!   when its informer stops: `wait_until_synced` on each type, the
//!   factory's included, returns [`SyncError::Stopped`] once the informer
//!   stopped before syncing (the factory's waits for ever only for an
//!   informer never started). A
//!   [`Store`](crate::Store) made from a store writer of one's own
//!   has no informer: it waits for its writer.
//!
//! An informer built from a stream has no HTTP answers unless its stream
//! yields [`source::Error`](crate::source::Error)s: it gets `Stopped`
//! only. Waiters cost the informer nothing per event: only the source's
//! errors and the start of each relist are recorded for them.
//!
//! # Stopping
//!
//! The informer stops on [`Informer::stop`], on the builder's
//! [`cancellation_token`](InformerBuilder::cancellation_token), when its
//! source stream ends (then the writer first drains the FIFO), when user
//! code it cannot skip panics, or when nothing can observe it (see
//! [Lifetime](Informer#lifetime)). Then `run` resolves, subscriptions end after what was already
//! queued for them and say why ([`Subscription::end_reason`](crate::Subscription::end_reason)),
//! error streams end, sync waiters return (I9), and [`Informer::subscribe`]
//! returns [`Error::Stopped`] (L6).
//!
//! L7: all of this holds whether or not `run` was ever polled: a stop
//! before `run` ends subscriptions and error streams, makes
//! `wait_until_synced` return [`SyncError::Stopped`], and a later `run` resolves at once.
//!
//! L12: a stop takes effect between two batches of the writer, never
//! inside one. The source is not read after it; the batch being handed out
//! when it comes (a round of at most 64 FIFO pops, whose notifications
//! share one wake per subscriber) is finished for every subscriber, then
//! every subscription ends after what was queued for it. So every
//! subscriber has been handed the same notifications, and folding what
//! each one yields gives the store as the writer left it. A full
//! [`Lag::Bounded`](crate::dispatch::Lag::Bounded) subscriber does not
//! hold the stop up: a wait for room in its queue ends at the stop, the
//! notification then goes into it past its bound, and the batch ends after
//! the pop being handed out, so the queue exceeds its bound by at most that
//! pop's notifications. Only a stop does this: a `run` future dropped
//! while the writer waits for room ends where it was.
//!
//! # Lifetime
//!
//! L8: an informer lives while any [`Informer`] clone, [`Store`](crate::Store)
//! from [`Informer::store`], [`Subscription`](crate::Subscription) or
//! stream of [`Informer::errors`] is held; the rule, and what else stops it,
//! is stated once in the [`Informer` docs](Informer#lifetime).
//!
//! # Back-pressure
//!
//! L10: the pump reads the source only while the writer is not waiting for
//! a full [`Lag::Bounded`](crate::dispatch::Lag::Bounded) subscriber and the
//! FIFO holds fewer than about 1,024 deltas. A watch that is not read for a
//! while may be closed by the API server; when reading resumes the source
//! re-watches from its last resourceVersion, or relists if that is too old,
//! and the relist's tombstones and replaced objects bring every key to its
//! final state: nothing is lost, intermediate states may be skipped.
//!
//! # Panics in user code
//!
//! L9: see [`Callback`] for what each kind of user code's panic does. The
//! panic message always reaches [`Informer::errors`] and the `on_error`
//! callback, and `Informer::metrics().errors` counts it.

mod apply;
pub(crate) mod builder;
mod core;
mod defaults;
mod error;
mod event_stream;
mod handle;
mod known_objects;
mod metrics;
mod parts;
mod pump;
mod reclaim;
mod report;
mod resync;
mod run;
mod subscribe_route;
mod sync_progress;
mod sync_wait;

pub use crate::sync_error::SyncError;
pub(crate) use builder::Options;
pub use builder::{DEFAULT_RESYNC_CHECK_PERIOD, InformerBuilder};
pub use defaults::Defaults;
pub use error::{Callback, Error};
pub use handle::Informer;
pub(crate) use handle::WeakInformer;
