//! One reconcile of one key: find what to hand the reconciler, run it in
//! its span with its panic caught, count it, and decide the key's next turn.

use std::{fmt, future::Future, panic::AssertUnwindSafe, sync::Arc};

use futures::FutureExt;
use tokio::time::Instant;
use tracing::{Instrument, Level};

use super::{Error, Observed, observed::Tombstones, own_writes::OwnWritesGate};
use crate::{
    key::ObjectKey,
    metrics::{ControllerRecorder, ReconcileResult},
    panic::panic_message,
    runner::Action,
    store::Store,
};

/// One `tracing` event at a level chosen when the controller is built
/// (C13): tracing's macros take the level as a constant.
macro_rules! event_at {
    ($level:expr, $($fields:tt)+) => {
        match $level {
            Level::ERROR => tracing::event!(Level::ERROR, $($fields)+),
            Level::WARN => tracing::event!(Level::WARN, $($fields)+),
            Level::INFO => tracing::event!(Level::INFO, $($fields)+),
            Level::DEBUG => tracing::event!(Level::DEBUG, $($fields)+),
            Level::TRACE => tracing::event!(Level::TRACE, $($fields)+),
        }
    };
}

/// A failed reconcile as the runner carries it: what the stream reports,
/// and what the key gets next (the error policy's answer, computed where
/// the object and the context are at hand).
pub(super) struct Failed<E> {
    pub(super) error: Error<E>,
    pub(super) next: Action,
}

/// What every reconcile of one controller shares.
pub(super) struct Reconcile<K, C, R, P> {
    pub(super) store: Store<K>,
    pub(super) tombstones: Option<Arc<Tombstones<K>>>,
    pub(super) reconcile: R,
    pub(super) error_policy: P,
    pub(super) ctx: Arc<C>,
    pub(super) recorder: Arc<ControllerRecorder>,
    pub(super) name: Arc<str>,
    /// Whether a key in neither the cache nor the record of deletions is
    /// handed to the reconciler too (a keyed run), rather than skipped.
    pub(super) unknown_keys: bool,
    /// The read-your-own-writes gate, when it is on (RW7).
    pub(super) own_writes: Option<OwnWritesGate>,
    /// The level failures are logged at, if at all (C13).
    pub(super) error_log: Option<Level>,
}

impl<K, C, R, P, Fut, E> Reconcile<K, C, R, P>
where
    K: Send + Sync + 'static,
    C: Send + Sync + 'static,
    R: Fn(ObjectKey, Option<Observed<K>>, Arc<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Result<Action, E>>> + Send + 'static,
    P: Fn(ObjectKey, Option<Observed<K>>, &E, Arc<C>) -> Action + Send + Sync + 'static,
    E: fmt::Display + Send + 'static,
{
    /// The reconcile of `key` (C4, C5, C6, C8).
    pub(super) fn of(
        self: &Arc<Self>,
        key: ObjectKey,
    ) -> impl Future<Output = Result<Action, Failed<E>>> + Send + 'static + use<K, C, R, P, Fut, E>
    {
        let this = Arc::clone(self);
        // Read when the reconcile starts, not when the key was queued (C4);
        // with the gate on, once the caches show the key's last writes
        // (RW7), so a status the last reconcile wrote is in the object.
        let read_now = this.own_writes.is_none().then(|| this.observe(&key));
        async move {
            let observed = match read_now {
                Some(observed) => observed,
                None => {
                    if let Some(gate) = &this.own_writes {
                        gate.settle(&key).await;
                    }
                    this.observe(&key)
                }
            };
            if observed.is_none() && !this.unknown_keys {
                tracing::debug!(controller = %this.name, object.ref = %key, "queued key has no object; skipped");
                return Err(not_found(key));
            }
            let span = tracing::info_span!(
                "reconciling object",
                controller = %this.name,
                object.ref = %key,
                object.deleted = !matches!(observed, Some(Observed::Present(_))),
                reconcile.id = %format_args!("{:016x}", rand::random::<u64>()),
            );
            let _active = Active::new(&this.recorder);
            let started = Instant::now();
            // The reconciler is called inside the caught future, so a panic
            // while it builds its future is caught too.
            let run = {
                let (key, observed, ctx) = (key.clone(), observed.clone(), this.ctx.clone());
                let this = this.clone();
                async move { (this.reconcile)(key, observed, ctx).await }
            };
            let result = AssertUnwindSafe(run)
                .catch_unwind()
                .instrument(span.clone())
                .await;
            let took = started.elapsed();
            match result {
                // Only an entry that skips unknown keys answers `None`, and
                // those were skipped above.
                Ok(None) => Err(not_found(key)),
                Ok(Some(Ok(action))) => {
                    this.recorder.finished(result_of(action), took);
                    if let (Some(tombstones), Some(Observed::Deleted(last))) =
                        (&this.tombstones, &observed)
                    {
                        tombstones.reconciled(&key, last);
                    }
                    Ok(action)
                }
                Ok(Some(Err(error))) => {
                    this.recorder.finished(ReconcileResult::Error, took);
                    if let Some(level) = this.error_log {
                        span.in_scope(|| event_at!(level, %error, "reconcile failed"));
                    }
                    let next = (this.error_policy)(key.clone(), observed, &error, this.ctx.clone());
                    Err(Failed {
                        error: Error::Reconcile { key, error },
                        next,
                    })
                }
                Err(payload) => {
                    let message = panic_message(payload);
                    this.recorder.panicked();
                    this.recorder.finished(ReconcileResult::Error, took);
                    if let Some(level) = this.error_log {
                        span.in_scope(|| event_at!(level, panic = %message, "reconcile panicked"));
                    }
                    Err(Failed {
                        error: Error::Panicked { key, message },
                        next: Action::Backoff,
                    })
                }
            }
        }
    }
}

impl<K, C, R, P> Reconcile<K, C, R, P> {
    /// What the controller knows of `key`'s object now (C4).
    fn observe(&self, key: &ObjectKey) -> Option<Observed<K>> {
        match self.store.get(key) {
            Some(object) => Some(Observed::Present(object)),
            None => self
                .tombstones
                .as_ref()
                .and_then(|tombstones| tombstones.get(key))
                .map(Observed::Deleted),
        }
    }
}

/// A key with no object to hand: nothing reconciled (C4).
fn not_found<E>(key: ObjectKey) -> Failed<E> {
    Failed {
        error: Error::ObjectNotFound { key },
        next: Action::AwaitChange,
    }
}

/// The `result` label of a successful reconcile.
fn result_of(action: Action) -> ReconcileResult {
    match action {
        Action::AwaitChange => ReconcileResult::Success,
        Action::RequeueAfter(_) => ReconcileResult::RequeueAfter,
        Action::Backoff => ReconcileResult::Requeue,
    }
}

/// A reconcile counted as active until it ends or is dropped (an abandoned
/// reconcile is dropped at an await point).
struct Active(Arc<ControllerRecorder>);

impl Active {
    fn new(recorder: &Arc<ControllerRecorder>) -> Self {
        recorder.started();
        Self(recorder.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.ended();
    }
}
