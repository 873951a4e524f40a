//! Reconcile runner: workers that take keys from a
//! [`WorkQueue`](crate::queue::WorkQueue), read the object from an informer's
//! [`Store`](crate::Store) and call the user's reconcile function, plus
//! [`OwnerStreamExt`], which maps notifications about children to keys of
//! their controller owner.
//!
//! ```text
//! Subscription ──keys() / owner_keys()──▶ WorkQueue ──Runner::run──▶ reconcile(key, object)
//!                                            ▲                          │
//!                                            └── add_after / add_rate_limited ◀─┘
//! ```
//!
//! # Waiting
//!
//! The [`Reconciles`] stream waits on the queue only while fewer than
//! `concurrency` reconciles run; otherwise it waits for a reconcile to end.
//! Nothing runs unless the stream is polled, and no task is spawned.
//!
//! # Sharding
//!
//! [`Runner::gate`] makes a runner reconcile only the keys a
//! [`KeyGate`](crate::shard::KeyGate) owns: a key taken from the queue that
//! the gate refuses is dropped unreconciled, and an admitted key's
//! [`WorkGuard`](crate::shard::WorkGuard) lives as long as its reconcile, so
//! a handover waits for it.
//!
//! # Closing
//!
//! The stream ends when the queue is shut down and nothing is queued or
//! running, or when its cancellation token fires ([`OnCancel`]). It never
//! shuts the queue down itself: several runners may share one queue.
//!
//! # Cancel safety
//!
//! Dropping the stream drops the running reconciles (at their current await
//! point); each key's guard drops with it, so the keys are handed out again if
//! they were added meanwhile. A key taken from the queue is always either
//! running or released; none is lost between the queue and the reconciler.
//!
//! # Bad input
//!
//! Errors of the reconciler are reported with their key and retried with the
//! queue's rate limiter; notifications whose objects have no matching
//! controller owner are skipped by [`owner_keys`](OwnerStreamExt::owner_keys).

mod action;
mod error;
mod owners;
mod reconciles;
#[allow(clippy::module_inception)] // the builder type is the module's namesake
mod runner;

pub use action::Action;
pub use error::ReconcileError;
pub use owners::{OwnerKeys, OwnerStreamExt, controller_owner_key};
pub use reconciles::Reconciles;
pub use runner::{OnCancel, Runner};
