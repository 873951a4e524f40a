//! [`Core`], what the handles and the run loop share, and [`Share`], one
//! holder's part of the informer's lifetime (L8).

use std::{any::Any, mem, sync::Arc};

use kube::Resource;
use parking_lot::Mutex;

use super::{report::ErrorReporter, subscribe_route::SubscribeRoute, sync_progress::SyncProgress};
use crate::{
    dispatch::{EndReason, Life},
    fifo::DeltaFifo,
    resource::WatchedResource,
    store::{Store, Writer},
};

/// What the handles and the run loop share.
pub(crate) struct Core<K> {
    /// The only writer of the store; readers are handed out from it.
    pub(crate) writer: Writer<K>,
    pub(crate) store: Store<K>,
    pub(crate) fifo: DeltaFifo<K>,
    /// Asked to stop (by `stop`, the builder's token, the last share's drop,
    /// L8), running, ended and why: the one value every subscription, error
    /// stream and sync waiter observes.
    pub(crate) life: Arc<Life>,
    pub(crate) reporter: ErrorReporter,
    /// What the source said last before the first sync, for sync waiters
    /// (I7, I8).
    pub(crate) sync_progress: SyncProgress,
    pub(crate) route: Mutex<SubscribeRoute<K>>,
    /// What it lists and watches, for its span, logs and metrics.
    pub(crate) resource: WatchedResource,
    pub(crate) metrics: crate::metrics::InformerRecorder,
}

impl<K> Core<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// Lets go of the source and the distributor of an informer that ended
    /// without running (L7): the source is user code, which should not be
    /// kept past a stop. Subscriptions it registered end with
    /// [`EndReason::Stopped`], here or when they observe the life's end,
    /// whichever comes first.
    pub(crate) fn release_unrun(&self) {
        if self.life.end_reason().is_none() {
            return;
        }
        let unrun = {
            let mut route = self.route.lock();
            match &*route {
                SubscribeRoute::Unstarted { .. } => {
                    mem::replace(&mut *route, SubscribeRoute::Released)
                }
                SubscribeRoute::Running { .. } | SubscribeRoute::Released => return,
            }
        };
        // Outside the lock: closing takes each subscription's lock, and the
        // source's drop is user code.
        if let SubscribeRoute::Unstarted {
            events,
            mut distributor,
        } = unrun
        {
            distributor.close_with(EndReason::Stopped);
            drop(events);
        }
        self.fifo.close();
        self.reporter.close();
        tracing::debug!(resource = %self.resource, "informer stopped before it ran");
    }
}

/// One holder's share of the informer's lifetime (L8). Every [`Informer`]
/// clone, [`Store`] it handed out, [`Subscription`] and error stream
/// holds one; when the last goes, nothing can observe the informer any more
/// and it stops. The core's own readers hold none: they would keep it alive
/// for ever.
///
/// [`Informer`]: super::Informer
/// [`Subscription`]: crate::dispatch::Subscription
pub(crate) struct Share<K> {
    pub(crate) core: Arc<Core<K>>,
}

impl<K> Drop for Share<K> {
    fn drop(&mut self) {
        self.core.life.stop();
    }
}

impl<K: Send + Sync + 'static> Share<K> {
    /// The share, type-erased for holders that do not know `K`.
    pub(crate) fn erased(self: &Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        Arc::clone(self) as Arc<dyn Any + Send + Sync>
    }
}
