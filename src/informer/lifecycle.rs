//! [`Lifecycle`]: where an informer is in its life, which decides what
//! `subscribe` and `run` do.

use tokio::sync::mpsc;

use super::builder::EventStream;
use crate::dispatch::{Distributor, SubscribeRequest};

/// Where the informer is in its life.
pub(crate) enum Lifecycle<K> {
    /// Built, not running: subscriptions register directly.
    Ready {
        events: EventStream<K>,
        distributor: Distributor<K>,
    },
    /// Running: subscriptions are requests the writer registers between two
    /// batches (L1).
    Running {
        requests: mpsc::UnboundedSender<SubscribeRequest<K>>,
    },
    /// Stopped: subscriptions are refused (L6). `ran` tells a `run` that
    /// comes after a stop-before-run (it resolves at once) from a second
    /// `run` (refused).
    Stopped { ran: bool },
}
