//! [`SubscribeRoute`]: what `run` needs to start, then how subscribers
//! reach the running writer. Whether the informer has ended, and why, is
//! its [`Life`](crate::dispatch::Life), not this.

use tokio::sync::mpsc;

use super::event_stream::EventStream;
use crate::dispatch::{Distributor, SubscribeRequest};

/// How a subscription reaches the informer.
pub(crate) enum SubscribeRoute<K> {
    /// Built, not running: subscriptions register directly; `run` takes
    /// both.
    Unstarted {
        events: EventStream<K>,
        distributor: Distributor<K>,
    },
    /// Running: subscriptions are requests the writer registers between two
    /// batches (L1).
    Running {
        requests: mpsc::UnboundedSender<SubscribeRequest<K>>,
    },
    /// Ended, or ended before it ran: subscriptions are refused (L6, L7).
    Released,
}
