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
//! # Rules
//!
//! - **E1 Finish the queue.** After the queue is shut down the stream keeps
//!   taking keys while any of its reconciles runs, and ends only when
//!   nothing is queued or running (see Closing).
//! - **E2 Cancel.** Once its token fires it takes no key; with
//!   [`OnCancel::Finish`] the reconciles running finish and are reported,
//!   with [`OnCancel::Abandon`] they are dropped.
//! - **E3 Yield.** Under work that is always ready the stream yields to the
//!   scheduler (see Cooperation).
//! - **E4 The stored object.** [`run_with_store`](Runner::run_with_store)
//!   hands each reconcile the object the store holds under its key when the
//!   reconcile starts, or `None` when it holds none.
//! - **E5 Owners.** [`owner_keys`](OwnerStreamExt::owner_keys) turns each
//!   notification into the key of its (newest) object's controller owner of
//!   the asked type: the owner reference with `controller: true`, that kind
//!   and that API group, in the object's namespace. The group is the part
//!   of the reference's apiVersion before the `/` (`""` for the core
//!   group's `v1`); the version is not compared, so a reference written
//!   under any served version of a custom resource matches. Objects without
//!   such an owner, and references whose apiVersion is neither `version`
//!   nor `group/version`, are skipped. [`controller_owner_key`] maps one
//!   object by the same rule; the `_with` forms
//!   ([`owner_keys_with`](OwnerStreamExt::owner_keys_with),
//!   [`controller_owner_key_with`]) take the owner's dynamic type, e.g. an
//!   [`ApiResource`](kube::core::ApiResource) for a
//!   [`DynamicObject`](kube::core::DynamicObject).
//!
//! # Waiting
//!
//! The stream [`Runner::run`] returns waits on the queue only while fewer than
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
//! running. After [`shutdown`](crate::queue::WorkQueue::shutdown) (or
//! [`shutdown_with_drain`](crate::queue::WorkQueue::shutdown_with_drain)) it
//! keeps taking keys for as long as its reconciles run: a key added while its
//! reconcile ran is queued again when that reconcile ends (W9) and is
//! reconciled once more, as client-go's workers do. When its cancellation
//! token fires it takes no key from then on, whatever is queued, and ends
//! once what runs has finished ([`OnCancel::Finish`]) or at once
//! ([`OnCancel::Abandon`]). It never shuts the queue down itself: several
//! runners may share one queue.
//!
//! # Cooperation
//!
//! The stream spends one unit of tokio's cooperative budget per item it
//! yields. When work is always ready (say, a reconciler that adds its own
//! key again on every run) it returns `Pending` once the polling task's
//! budget is spent and wakes that task at once, so other tasks on the same
//! worker thread run, and a runtime shutting down is not held up by it.
//! Outside a tokio runtime there is no budget and no such yield.
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
//! queue's rate limiter (or as the error policy says); notifications whose objects have no matching
//! controller owner are skipped by [`owner_keys`](OwnerStreamExt::owner_keys).

mod action;
mod error;
mod on_cancel;
mod owners;
mod reconciles;
#[allow(clippy::module_inception)] // the builder type is the module's namesake
mod runner;

pub use action::Action;
pub use error::Error;
pub use on_cancel::OnCancel;
pub use owners::{OwnerStreamExt, controller_owner_key, controller_owner_key_with};
pub use runner::Runner;
