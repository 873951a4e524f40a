//! Counters and gauges that answer "is my cache fresh, and which handler is
//! slow?", read as plain snapshots or, with the `prometheus` feature,
//! scraped through a `prometheus-client` registry.
//!
//! Each stage owns its counts: the source counts requests, events, relists
//! and errors; the FIFO and the store are read as they are (their sizes
//! cost nothing to keep); each subscription counts what it was handed
//! under the lock its queue takes anyway. Recording a count is a relaxed
//! atomic add, on the hot path often not even that; recording a duration
//! (list requests, the work queue's waits and work, a handler's time under
//! `Subscription::handle`) is a clock read and three relaxed atomic adds.
//! Reading does the arithmetic.
//!
//! - [`Informer::metrics`](crate::Informer::metrics) gives an
//!   [`InformerMetrics`]: [`SourceMetrics`], [`FifoMetrics`],
//!   [`StoreMetrics`] and each subscription's [`SubscriptionStats`];
//! - [`Subscription::stats`](crate::Subscription::stats) gives one
//!   subscription's [`SubscriptionStats`];
//! - [`WorkQueue::metrics`](crate::WorkQueue::metrics) gives a
//!   [`WorkQueueMetrics`] with client-go's work-queue meanings;
//! - [`KeyGate::metrics`](crate::shard::KeyGate::metrics) gives a sharded
//!   replica's [`ShardMetrics`];
//! - [`Controller::metrics`](crate::controller::Controller::metrics)
//!   gives a controller's [`ControllerMetrics`], with controller-runtime's
//!   reconcile metrics;
//! - each stage also converts into a [`MetricsReader`] of its snapshot
//!   (`MetricsReader::from(&informer)`; a [`KeyGate`](crate::shard::KeyGate),
//!   which counts the keys of a store, with `MetricsReader::from((&gate,
//!   store))`), to read from anywhere;
//! - with the `prometheus` feature, [`register`] adds a stage's collector
//!   to a `prometheus_client` `Registry`; it takes the registry, a name and
//!   a reader or the stage itself (`&informer`, `&queue`, `&controller`,
//!   `(&gate, store)`).
//!   `METRICS.md` lists every metric name, type and label.
//!
//! This module sits below every stage (see "Layers" in the crate docs):
//! the stages import its recorders and snapshot types, and it imports
//! none of them.
//!
//! No label carries an unbounded value: resources, namespaces, informer
//! and subscriber names are the program's own few, and object names or
//! keys never appear.
//!
//! # Examples
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::ObjectMeta;
//! use kube_informer::{Informer, source::Event};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let cm = ConfigMap {
//!     metadata: ObjectMeta { name: Some("a".into()), ..Default::default() },
//!     ..Default::default()
//! };
//! let events = futures::stream::iter([
//!     Ok::<_, std::io::Error>(Event::ListStart),
//!     Ok(Event::Listed(cm)),
//!     Ok(Event::ListDone { resource_version: "1".into() }),
//! ]);
//! let informer = Informer::builder_from_stream(events).build();
//! informer.run().await.unwrap();
//! let metrics = informer.metrics();
//! assert_eq!((metrics.store.objects, metrics.store.synced), (1, true));
//! assert_eq!(metrics.fifo.deltas, 0);
//! # }
//! ```

#[cfg(feature = "controller")]
mod controller;
mod counts;
mod histogram;
mod informer;
#[cfg(feature = "prometheus")]
mod prometheus;
mod reader;
#[cfg(feature = "shard")]
mod shard;
mod source;
mod subscription;
mod work_queue;

#[cfg(feature = "controller")]
#[cfg_attr(docsrs, doc(cfg(feature = "controller")))]
pub use controller::{ControllerMetrics, ReconcileCounts};
#[cfg(feature = "controller")]
pub(crate) use controller::{ControllerRecorder, ReconcileResult};
pub use counts::Counts;
pub use histogram::{BUCKETS, DurationHistogram};
pub use informer::{FifoMetrics, InformerMetrics, StoreMetrics};
pub(crate) use informer::{InformerRecorder, StatsProbe};
#[cfg(feature = "prometheus")]
#[cfg_attr(docsrs, doc(cfg(feature = "prometheus")))]
pub use prometheus::{Exported, register};
pub use reader::MetricsReader;
#[cfg(feature = "shard")]
#[cfg_attr(docsrs, doc(cfg(feature = "shard")))]
pub use shard::ShardMetrics;
pub(crate) use source::SourceRecorder;
pub use source::{ErrorClass, RelistCause, SourceMetrics, WatchEventType};
pub use subscription::{Delivered, SubscriptionStats};
pub(crate) use subscription::{SubscriptionCounts, SubscriptionRecorder};
pub use work_queue::WorkQueueMetrics;
pub(crate) use work_queue::WorkQueueRecorder;
