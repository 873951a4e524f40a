//! Controller: an operator's wiring in a dozen lines. A [`Controller`]
//! turns changes of its objects, of the objects they own and of anything
//! else mapped to their keys into keys on one [`WorkQueue`](crate::WorkQueue),
//! and reconciles them on the informers' shared caches.
//!
//! ```text
//! Informer<K> ──change filters──▶ keys ┐
//! owns(Api<C>) ──controller owner──▶ ┼──▶ WorkQueue ──Runner (gate)──▶ reconcile(object, ctx)
//! watches(Api<W>, mapper)  ────────▶ ┤        ▲                           │
//! reconcile_on / reconcile_all_on ───┘        └──── Action / error_policy ◀┘
//! ```
//!
//! ```no_run
//! use std::sync::Arc;
//! use futures::StreamExt;
//! use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
//! use kube::{Api, Client};
//! use kube_informer::prelude::*;
//!
//! async fn reconcile(deployment: Arc<Deployment>, ctx: Arc<Client>) -> Result<Action, kube::Error> {
//!     // ... read the cache, write through `ctx` ...
//!     Ok(Action::await_change())
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::try_default().await?;
//! let outcomes = Controller::new(Api::<Deployment>::all(client.clone()))
//!     .owns(Api::<ConfigMap>::all(client.clone()))
//!     .shutdown_on_signal()
//!     .run(reconcile, |_object, _error, _ctx| Action::backoff(), Arc::new(client));
//! let mut outcomes = std::pin::pin!(outcomes);
//! while let Some(outcome) = outcomes.next().await {
//!     match outcome {
//!         Ok((key, action)) => println!("reconciled {key}: {action:?}"),
//!         // The controller cannot start (C3): the message says why (C12),
//!         // e.g. a CustomResourceDefinition that is not installed. The
//!         // stream ends after it; so does the program, with a failure.
//!         Err(error) if error.key().is_none() => {
//!             eprintln!("{error}");
//!             std::process::exit(1);
//!         }
//!         // One reconcile failed; its key is retried (C5). The controller
//!         // logs nothing itself unless asked to (C13).
//!         Err(error) => eprintln!("{error}"),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # Rules
//!
//! - **C1 One cache.** Informers come from an
//!   [`InformerFactory`](crate::InformerFactory): the controller's own, or
//!   the program's ([`Controller::with_factory`]), so two controllers (or a
//!   controller and the rest of the program) that watch one resource with
//!   the same options share one informer.
//! - **C2 Triggers.** A key is queued for each change of the controller's
//!   objects that its change filters pass (additions and deletions always
//!   pass); for each change of an owned object, the key of its controller
//!   owner of the controller's type (the owner reference with
//!   `controller: true`, matched by group and kind across served
//!   versions), for the old and the new state of an update; for each key a
//!   `watches` mapper returns for either state of a change; for each key of
//!   a [`reconcile_on`](Controller::reconcile_on) stream; for every cached key at each tick of
//!   `reconcile_all_on`. The queue merges keys that wait (W1). A resync
//!   notification is no change and queues nothing: the controller's
//!   subscriptions ask for no resync period, so they get one only when a
//!   relist finds an object as the cache holds it (after an expired watch
//!   or an apiserver restart), and reconciling every object then would
//!   only repeat work; periodic reconciles come from
//!   [`resync`](Controller::resync) (C11) or `reconcile_all_on`.
//! - **C3 Sync first.** No reconcile starts before every informer of the
//!   controller has synced. The wait fails, and the stream yields
//!   [`Error::Sync`] and ends, when an initial list is refused (401/403) or
//!   the resource is not served (404), when an informer stops, or after the
//!   [sync timeout](Config::sync_timeout). A shutdown during the wait
//!   ends the stream without an item.
//! - **C4 The object.** A reconcile gets its key's object as the cache
//!   holds it when the reconcile starts. A key whose object is gone:
//!   [`run`](Controller::run) reconciles nothing and yields
//!   [`Error::ObjectNotFound`];
//!   [`run_with_deletions`](Controller::run_with_deletions) hands the
//!   object's last known state as [`Observed::Deleted`], kept from the
//!   deletion until a reconcile of it succeeds or the key is added again,
//!   for as long as the process runs;
//!   [`run_by_key`](Controller::run_by_key) hands every key, with
//!   `Some(Observed)` as `run_with_deletions` does, or `None` when the key
//!   is in neither (an object deleted before the process started, or never
//!   there), so a reconciler can clean up by key.
//! - **C5 What comes next.** A reconcile's [`Action`](crate::runner::Action)
//!   decides its key's next turn; a failed reconcile's key gets what the
//!   error policy returns ([`Action::Backoff`](crate::runner::Action::Backoff):
//!   the queue's per-key exponential backoff). A trigger of a key that
//!   backs off reconciles it at once (client-go's W5) unless
//!   [`backoff_holds`](crate::queue::QueueConfig::backoff_holds) is on, when it joins the
//!   backoff (W13). The stream yields one item per reconcile.
//! - **C6 Panics and concurrency.** At most
//!   [`concurrency`](Config::concurrency) reconciles run at once, any
//!   number with `0`, the default (kube-runtime's default too); never two
//!   of one key (W3). A panicking reconcile is caught,
//!   yielded as [`Error::Panicked`] with its key, counted, and its key
//!   queued again through the rate limiter; the other keys go on.
//! - **C7 Shutdown.** After a graceful shutdown
//!   ([`graceful_shutdown_on`](Controller::graceful_shutdown_on), the first
//!   signal of [`shutdown_on_signal`](Controller::shutdown_on_signal)) no new
//!   key is taken; the reconciles that run finish and are yielded, then the
//!   stream ends. A second signal drops them at once. When every trigger
//!   has ended, what is queued is reconciled, then the stream ends. A
//!   factory the controller made is shut down when its stream ends.
//! - **C8 Observability.** Each reconcile runs in a `reconciling object`
//!   span carrying the controller's name, the object's key
//!   (`object.ref`), whether it was deleted, and a random `reconcile.id`;
//!   a failed or panicking reconcile is logged there only as C13 says. The
//!   reconcile metrics ([`ControllerMetrics`](crate::metrics::ControllerMetrics))
//!   carry controller-runtime's names and meanings.
//! - **C9 Sharding.** With [`shard`](Controller::shard) only keys the gate
//!   owns enter the queue, every key the replica acquires is queued, and a
//!   key lost while it waited is dropped unreconciled (the runner's gate,
//!   E-rules of [`runner`](crate::runner)).
//! - **C10 Priorities.** With [`priorities`](crate::queue::QueueConfig::priorities) on
//!   (off by default), the queue keeps priorities with ageing (W14, W15 of
//!   [`queue`](crate::queue)): a key from a notification that is part of
//!   an initial list (also the replay of an informer already running, and
//!   the keys a sharded replica acquires) and every key of a
//!   [`reconcile_all_on`](Controller::reconcile_all_on) tick or
//!   [`resync`](Controller::resync) round is queued low, by [`Priority::of`](crate::queue::Priority::of) for notifications
//!   of owned and watched objects too; every other trigger, and every
//!   requeue and backoff, is high. A live change made while listed keys
//!   wait is reconciled before them, and a listed key that has waited the
//!   [ageing bound](crate::queue::QueueConfig::priority_ageing) gets at least every
//!   second turn.
//! - **C11 Resync.** With [`resync(period)`](Controller::resync) every
//!   object the controller's cache holds is reconciled again every
//!   `period` (within the informer's resync check period), from a
//!   subscription of its own, so a resync round queues every cached key
//!   once and changes still queue theirs as C2 says.
//! - **C12 A controller that cannot start says why.** The error that ends
//!   the stream at start, [`Error::Sync`] or [`Error::Setup`], names its
//!   cause in its plain `Display`, on one line: the resource and what the
//!   API server answered (not served (404), with the CustomResourceDefinition
//!   to install; refused (401/403), with the RBAC rule to add), that it did
//!   not sync in time, or why the factory or informer refused. A program
//!   that prints `{error}` says why it stops;
//!   [`source`](std::error::Error::source) goes on with what the line does
//!   not repeat (a timeout's last list/watch error).
//! - **C13 Failures are the stream's to report.** Every failed and
//!   panicking reconcile is an item of the stream ([`Error::Reconcile`],
//!   [`Error::Panicked`]). The controller logs none of them unless
//!   [`reconcile_error_log`](Config::reconcile_error_log) is
//!   set, and then exactly one line for each, at `level`, in its
//!   `reconciling object` span (C8). kube-runtime's `Controller` does the
//!   same (it yields reconcile errors and logs none), so a program that
//!   logs its stream's errors logs each one once.
//! - **C14 Debounce.** With [`debounce`](Config::debounce), a
//!   trigger of a key (C2) reaches the queue only once the key has had no
//!   trigger for `period`: each trigger of a key that waits moves its turn
//!   to `period` after that trigger, never earlier, and the key is queued
//!   once, at the higher of its triggers' priorities (C10). Requeues and
//!   backoffs a reconcile asks for (C5) are not delayed. When every
//!   trigger has ended, the keys still held are queued when their period
//!   ends (C7). A zero period, the default, queues each trigger at once.
//! - **RW7 Reading its own writes.** With
//!   [`read_own_writes(log, deadline)`](Controller::read_own_writes), a
//!   key's reconcile first takes the writes `log` recorded under that key
//!   ([`own_writes`](crate::own_writes), RW5, RW6: those of its previous
//!   reconcile) and waits until every cache of the controller (its own,
//!   `owns`, `watches`) that holds a written object's resource, matched by
//!   API group and plural, has caught up with that write (RW1–RW3), or
//!   until `deadline` has passed; then it reads the object (C4) and
//!   reconciles. A write to a resource none of the caches holds is not
//!   waited for. While it waits the key counts as being reconciled (no
//!   second reconcile of it starts, W3, and its triggers wait) and takes
//!   one of the `concurrency` places, but it is not an active reconcile
//!   and its wait is not reconcile time. Without the option nothing is
//!   recorded or waited for.
//! - **RW8 Hold metrics.** A reconcile that had to wait (some write not
//!   yet shown) counts one hold
//!   ([`own_write_holds`](crate::metrics::ControllerMetrics::own_write_holds))
//!   and observes its wait in
//!   [`own_write_hold_time`](crate::metrics::ControllerMetrics::own_write_hold_time);
//!   one whose wait reached the deadline counts an expiry too, and logs
//!   one line at `WARN`. A reconcile whose writes were all shown already
//!   counts nothing.
//!
//! # Bad input
//!
//! An object without a name never reaches the controller (the informer
//! reports it); a notification whose key cannot be made is skipped with a
//! warning. A factory that refuses an informer (other options) or an
//! informer that stopped before the controller subscribed makes the stream
//! yield [`Error::Setup`] and end.

mod builder;
mod debounce;
mod observed;
mod own_writes;
mod reconcile;
mod run;
mod settings;
mod shutdown;
mod triggers;

pub use crate::runner::Error;
pub use builder::Controller;
pub use observed::Observed;
pub use settings::{Config, DEFAULT_SYNC_TIMEOUT};
