//! [`Core`], what the handles and the run loop share, and [`Share`], one
//! holder's part of the informer's lifetime (L8).

use std::{
    any::Any,
    mem,
    sync::{Arc, Weak},
};

use kube::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::{labels::ResourceLabels, lifecycle::Lifecycle, report::ErrorReporter};
use crate::{
    dispatch::{EndReason, StopSignal},
    fifo::DeltaFifo,
    store::{Store, Writer},
};

/// What the handles and the run loop share.
pub(crate) struct Core<K> {
    /// The only writer of the store; readers are handed out from it.
    pub(crate) writer: Writer<K>,
    pub(crate) store: Store<K>,
    pub(crate) fifo: DeltaFifo<K>,
    /// Cancelled to stop: by `stop`, by the builder's token, by the last
    /// share's drop (L8).
    pub(crate) stop: CancellationToken,
    /// Cancelled once the informer has ended: `run` finished, or it was
    /// stopped before `run`.
    pub(crate) done: CancellationToken,
    pub(crate) reporter: ErrorReporter,
    pub(crate) lifecycle: Mutex<Lifecycle<K>>,
    pub(crate) labels: ResourceLabels,
    pub(crate) metrics: crate::metrics::InformerRecorder,
}

impl<K> Core<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// L7: ends an informer that was asked to stop and has no `run` to end
    /// it: subscriptions end (after what was queued for them, which before
    /// `run` is nothing), error streams end, sync waiters see `done`, later
    /// subscriptions and `run` find it stopped. A running informer is left to
    /// its run loop, which ends the same way. Idempotent.
    pub(crate) fn settle(&self) {
        if !self.stop.is_cancelled() {
            return;
        }
        let ready = {
            let mut lifecycle = self.lifecycle.lock();
            match &*lifecycle {
                Lifecycle::Ready { .. } => {
                    mem::replace(&mut *lifecycle, Lifecycle::Stopped { ran: false })
                }
                Lifecycle::Running { .. } | Lifecycle::Stopped { .. } => return,
            }
        };
        // Outside the lifecycle lock: closing takes each subscription's lock,
        // and the source is user code.
        if let Lifecycle::Ready {
            events,
            mut distributor,
        } = ready
        {
            distributor.close_with(EndReason::Stopped);
            drop(events);
        }
        self.fifo.close();
        self.reporter.close();
        self.done.cancel();
        tracing::debug!(resource = %self.labels, "informer stopped before it ran");
    }

    /// The signal that lets a waiting subscription or error stream settle
    /// this informer once it is asked to stop. Holds the core weakly: the
    /// core holds every subscription's channel.
    pub(crate) fn stop_signal(self: &Arc<Self>) -> StopSignal {
        let core: Weak<Self> = Arc::downgrade(self);
        StopSignal {
            token: self.stop.clone(),
            on_stop: Arc::new(move || {
                if let Some(core) = core.upgrade() {
                    core.settle();
                }
            }),
        }
    }
}

/// One holder's share of the informer's lifetime (L8). Every [`Informer`]
/// clone, [`Store`] it handed out, [`Subscription`] and [`ErrorStream`]
/// holds one; when the last goes, nothing can observe the informer any more
/// and it stops. The core's own readers hold none: they would keep it alive
/// for ever.
///
/// [`Informer`]: super::Informer
/// [`Subscription`]: crate::dispatch::Subscription
/// [`ErrorStream`]: super::ErrorStream
pub(crate) struct Share<K> {
    pub(crate) core: Arc<Core<K>>,
}

impl<K> Drop for Share<K> {
    fn drop(&mut self) {
        self.core.stop.cancel();
    }
}

impl<K: Send + Sync + 'static> Share<K> {
    /// The share, type-erased for holders that do not know `K`.
    pub(crate) fn erased(self: &Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        Arc::clone(self) as Arc<dyn Any + Send + Sync>
    }
}
