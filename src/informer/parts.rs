//! [`Parts`]: everything the builder decided, handed to the informer.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{event_stream::EventStream, report::ErrorCallback};
use crate::{key::KeyFn, resource::WatchedResource, store::Indexers};

/// Everything the builder decided.
pub(crate) struct Parts<K> {
    pub(crate) events: EventStream<K>,
    pub(crate) transform: Option<crate::fifo::TransformFn<K>>,
    pub(crate) indexers: Indexers<K>,
    pub(crate) resync_check_period: Duration,
    pub(crate) key_fn: KeyFn<K>,
    pub(crate) on_error: Option<ErrorCallback>,
    pub(crate) cancel: Option<CancellationToken>,
    /// What the informer lists and watches; named after the Rust type
    /// when `None` (an informer fed by a stream).
    pub(crate) resource: Option<WatchedResource>,
    /// Where the list/watch counts what it does (unused by a stream).
    pub(crate) source_metrics: std::sync::Arc<crate::metrics::SourceRecorder>,
    /// The compact cache's codec and settings; `None`: the default store.
    pub(crate) cache: Option<(crate::store::Codec<K>, crate::store::CompactCache)>,
}
