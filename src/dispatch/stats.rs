//! A subscription's [`SubscriptionStats`] as its channel counts them, read
//! through the subscription or, type erased, by the informer that feeds it.

use super::channel::Channel;
use crate::metrics::{StatsProbe, SubscriptionStats};

impl<K> Channel<K> {
    pub(super) fn stats(&self) -> SubscriptionStats {
        let (counts, pending, pending_keys) = {
            let state = self.state.lock();
            (state.counts, state.queue.len(), state.queue.pending_keys())
        };
        self.recorder.snapshot(counts, pending, pending_keys)
    }
}

impl<K: Send + Sync> StatsProbe for Channel<K> {
    fn stats(&self) -> Option<SubscriptionStats> {
        (!self.is_receiver_dropped()).then(|| Channel::stats(self))
    }

    fn name_once(&self, name: &mut dyn FnMut() -> String) {
        self.recorder.name_once(name);
    }
}
