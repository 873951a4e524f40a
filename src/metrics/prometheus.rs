//! Collectors for a `prometheus_client` [`Registry`]: every scrape reads a
//! fresh snapshot, so nothing is copied between scrapes and an informer
//! that is gone simply stops being reported.
//!
//! Names follow Prometheus conventions (`_total` on counters, base unit
//! `_seconds`); the work queue's carry client-go's names (`workqueue_*`,
//! labelled `name`) so existing dashboards read them.

use std::{borrow::Cow, fmt};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder, NoLabelSet},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
    registry::{Registry, Unit},
};

#[cfg(feature = "controller")]
use super::ControllerMetrics;
#[cfg(feature = "shard")]
use super::ShardMetrics;
use super::{
    DurationHistogram, InformerMetrics, MetricsReader, SubscriptionStats, WorkQueueMetrics,
    histogram::BUCKETS,
    source::{ErrorClass, RelistCause, WatchEventType},
};

type Labels = Vec<(&'static str, Cow<'static, str>)>;

/// The metrics snapshots [`register`] exports, one collector each:
/// [`InformerMetrics`], [`WorkQueueMetrics`], [`ControllerMetrics`]
/// (feature `controller`) and [`ShardMetrics`] (feature `shard`). Sealed:
/// the crate implements it for its snapshots only.
pub trait Exported: sealed::Collect {}

mod sealed {
    use super::{Collector, MetricsReader};

    /// Makes the collector of one snapshot type.
    // Public in a private module: the seal of `Exported`, which users can
    // name but not implement.
    #[allow(unreachable_pub)]
    pub trait Collect: Sized {
        fn collector(name: String, reader: MetricsReader<Self>) -> Box<dyn Collector>;
    }
}

impl Exported for InformerMetrics {}
impl sealed::Collect for InformerMetrics {
    fn collector(name: String, reader: MetricsReader<Self>) -> Box<dyn Collector> {
        Box::new(InformerCollector { name, reader })
    }
}

impl Exported for WorkQueueMetrics {}
impl sealed::Collect for WorkQueueMetrics {
    fn collector(name: String, reader: MetricsReader<Self>) -> Box<dyn Collector> {
        Box::new(WorkQueueCollector { name, reader })
    }
}

#[cfg(feature = "shard")]
impl Exported for ShardMetrics {}
#[cfg(feature = "shard")]
impl sealed::Collect for ShardMetrics {
    fn collector(name: String, reader: MetricsReader<Self>) -> Box<dyn Collector> {
        Box::new(ShardCollector { name, reader })
    }
}

#[cfg(feature = "controller")]
impl Exported for ControllerMetrics {}
#[cfg(feature = "controller")]
impl sealed::Collect for ControllerMetrics {
    fn collector(name: String, reader: MetricsReader<Self>) -> Box<dyn Collector> {
        Box::new(ControllerCollector { name, reader })
    }
}

/// Registers the metrics of one stage with `registry`, labelled with
/// `name`: pass the stage (`&informer`, `&queue`, `&controller`, or
/// `(&gate, store)` for a sharded replica) or a [`MetricsReader`] of its
/// snapshot. Each scrape reads the stage afresh; `METRICS.md` lists every
/// name, type and label.
///
/// - An informer ([`InformerMetrics`]): labelled `informer="{name}"` plus
///   its resource (`group`, `version`, `resource`, `namespace`, the last
///   `all` for all namespaces). The registry holds no share of the
///   informer's lifetime: once it is gone its metrics disappear.
/// - A work queue ([`WorkQueueMetrics`]): client-go's names
///   (`workqueue_*`), labelled `name="{name}"`; the registry keeps a
///   handle on the queue. A controller's queue is
///   `register::<WorkQueueMetrics>(registry, name, &controller)`.
/// - A controller ([`ControllerMetrics`]): controller-runtime's names and
///   meanings, labelled `controller="{name}"`
///   (`controller_runtime_reconcile_total{result}`,
///   `controller_runtime_reconcile_errors_total`,
///   `controller_runtime_reconcile_panics_total`,
///   `controller_runtime_reconcile_time_seconds`,
///   `controller_runtime_active_workers`,
///   `controller_runtime_max_concurrent_reconciles`), and the holds of the
///   read-your-own-writes gate under this crate's names
///   (`kube_informer_controller_own_write_holds_total`,
///   `kube_informer_controller_own_write_expiries_total`,
///   `kube_informer_controller_own_write_hold_seconds`). A controller
///   converts into two readers, its reconciles' and its queue's, so name
///   the one meant: `register::<ControllerMetrics>(registry, name,
///   &controller)`. The registry reads on after
///   [`run`](crate::controller::Controller::run) has taken the controller.
/// - A sharded replica ([`ShardMetrics`]): members, keys of the store owned
///   now, ownership changes, work in flight (see
///   [`KeyGate::metrics`](crate::shard::KeyGate::metrics)), labelled
///   `name="{name}"`, from `(&gate, store)`: the registry keeps the gate
///   and the store; a store from [`Informer::store`](crate::Informer::store)
///   keeps its informer running while the registry holds it.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, WorkQueue, metrics, source::Event};
/// use prometheus_client::{encoding::text::encode, registry::Registry};
///
/// let events = futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>();
/// let informer = Informer::builder_from_stream(events).build();
/// let queue = WorkQueue::<String>::new();
/// queue.add("a".to_string());
/// let mut registry = Registry::default();
/// metrics::register(&mut registry, "config", &informer);
/// metrics::register(&mut registry, "reconcile", &queue);
/// let mut text = String::new();
/// encode(&mut text, &registry).unwrap();
/// assert!(text.contains("kube_informer_store_objects{informer=\"config\""));
/// assert!(text.contains("workqueue_depth{name=\"reconcile\"} 1"));
/// ```
///
/// A controller's two sets, and a sharded replica's:
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use kube_informer::{controller::{Config, Controller}, metrics::{self, ControllerMetrics, WorkQueueMetrics}};
/// use kube_informer::shard::{KeyGate, Ownership};
/// use kube_informer_testing::FakeApiServer;
/// use prometheus_client::{encoding::text::encode, registry::Registry};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = FakeApiServer::start().await;
/// let controller = Controller::new(Api::<ConfigMap>::all(server.client()))
///     .with_config(Config { concurrency: 2, ..Config::default() });
/// let gate = KeyGate::new(Ownership::everything());
/// let mut registry = Registry::default();
/// metrics::register::<ControllerMetrics>(&mut registry, "configmaps", &controller);
/// metrics::register::<WorkQueueMetrics>(&mut registry, "configmaps", &controller);
/// metrics::register(&mut registry, "configmaps", (&gate, controller.store()));
/// let mut text = String::new();
/// encode(&mut text, &registry).unwrap();
/// assert!(text.contains("controller_runtime_max_concurrent_reconciles{controller=\"configmaps\"} 2"));
/// assert!(text.contains("kube_informer_shard_members{name=\"configmaps\"} 1"));
/// # }
/// ```
pub fn register<M: Exported>(
    registry: &mut Registry,
    name: &str,
    stage: impl Into<MetricsReader<M>>,
) {
    registry.register_collector(M::collector(name.to_owned(), stage.into()));
}

// `register` takes the registry, the name the samples are labelled with,
// and a reader, or the stage itself, which converts into one (each stage
// implements that `From` where it is defined). The exporter
// knows the snapshots and nothing of the stages, so `metrics` sits below
// all of them.

#[cfg(feature = "shard")]
struct ShardCollector {
    name: String,
    reader: MetricsReader<ShardMetrics>,
}

#[cfg(feature = "shard")]
impl fmt::Debug for ShardCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardCollector")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "shard")]
impl Collector for ShardCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        use Sample::{Counter, Gauge};
        let Some(metrics) = self.reader.read() else {
            return Ok(());
        };
        let one = |sample| [(vec![("name", Cow::Owned(self.name.clone()))], sample)];
        let e = &mut encoder;
        family(
            e,
            "kube_informer_shard_members",
            "Members of the newest member set this replica acts under; 0 while it owns nothing.",
            one(Gauge(metrics.members)),
        )?;
        family(
            e,
            "kube_informer_shard_owned_keys",
            "Keys in the store this replica owns now.",
            one(Gauge(metrics.owned_keys)),
        )?;
        family(
            e,
            "kube_informer_shard_ownership_changes",
            "Times the ownership changed: joins, leaves, takeovers, fencing.",
            one(Counter(metrics.ownership_changes)),
        )?;
        family(
            e,
            "kube_informer_shard_work_in_flight",
            "Work guards out now, on owned or released keys.",
            one(Gauge(metrics.work_in_flight)),
        )
    }
}

struct InformerCollector {
    name: String,
    reader: MetricsReader,
}

impl fmt::Debug for InformerCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerCollector")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// One metric family being written: its descriptor is written once, then
/// one sample per label set.
struct Family<'a> {
    encoder: MetricEncoder<'a>,
}

impl<'a> Family<'a> {
    fn new(
        encoder: &'a mut DescriptorEncoder<'_>,
        name: &'a str,
        help: &str,
        unit: Option<&'a Unit>,
        metric_type: MetricType,
    ) -> Result<Self, fmt::Error> {
        Ok(Self {
            encoder: encoder.encode_descriptor(name, help, unit, metric_type)?,
        })
    }

    fn counter(&mut self, labels: &Labels, value: u64) -> fmt::Result {
        ConstCounter::new(value).encode(self.encoder.encode_family(labels)?)
    }

    fn gauge(&mut self, labels: &Labels, value: i64) -> fmt::Result {
        ConstGauge::new(value).encode(self.encoder.encode_family(labels)?)
    }

    fn seconds(&mut self, labels: &Labels, value: std::time::Duration) -> fmt::Result {
        ConstGauge::new(value.as_secs_f64()).encode(self.encoder.encode_family(labels)?)
    }

    fn histogram(&mut self, labels: &Labels, histogram: &DurationHistogram) -> fmt::Result {
        // The encoder wants each bucket's own count, `+Inf` last.
        let mut buckets = Vec::with_capacity(BUCKETS.len() + 1);
        let mut below = 0;
        for (bound, cumulative) in BUCKETS.iter().zip(histogram.buckets) {
            buckets.push((*bound, cumulative - below));
            below = cumulative;
        }
        buckets.push((f64::INFINITY, histogram.count - below));
        self.encoder
            .encode_family(labels)?
            .encode_histogram::<NoLabelSet>(
                histogram.sum.as_secs_f64(),
                histogram.count,
                &buckets,
                None,
            )
    }
}

fn with(labels: &Labels, name: &'static str, value: impl Into<Cow<'static, str>>) -> Labels {
    let mut labels = labels.clone();
    labels.push((name, value.into()));
    labels
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A sample of each kind the collectors write.
enum Sample<'a> {
    Counter(u64),
    Gauge(usize),
    Seconds(std::time::Duration),
    Histogram(&'a DurationHistogram),
}

/// Writes one metric family: its descriptor, then one sample per label set.
fn family<'a>(
    e: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (Labels, Sample<'a>)>,
) -> fmt::Result {
    let mut samples = samples.into_iter().peekable();
    let Some((_, first)) = samples.peek() else {
        return Ok(());
    };
    let (metric_type, unit) = match first {
        Sample::Counter(_) => (MetricType::Counter, None),
        Sample::Gauge(_) => (MetricType::Gauge, None),
        Sample::Seconds(_) => (MetricType::Gauge, Some(&Unit::Seconds)),
        Sample::Histogram(_) => (MetricType::Histogram, Some(&Unit::Seconds)),
    };
    let mut family = Family::new(e, name, help, unit, metric_type)?;
    for (labels, sample) in samples {
        match sample {
            Sample::Counter(value) => family.counter(&labels, value)?,
            Sample::Gauge(value) => family.gauge(&labels, count(value))?,
            Sample::Seconds(value) => family.seconds(&labels, value)?,
            Sample::Histogram(value) => family.histogram(&labels, value)?,
        }
    }
    Ok(())
}

impl Collector for InformerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let Some(metrics) = self.reader.read() else {
            return Ok(());
        };
        let resource = &metrics.resource;
        let base: Labels = vec![
            ("informer", self.name.clone().into()),
            ("group", resource.group.clone().into()),
            ("version", resource.version.clone().into()),
            ("resource", resource.resource.clone().into()),
            (
                "namespace",
                resource
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "all".into())
                    .into(),
            ),
        ];
        let source = &metrics.source;
        let one = |sample| [(base.clone(), sample)];
        let e = &mut encoder;
        use Sample::{Counter, Gauge, Histogram, Seconds};
        family(
            e,
            "kube_informer_list_requests",
            "LIST requests sent, one per page.",
            one(Counter(source.list_requests)),
        )?;
        family(
            e,
            "kube_informer_list_duration",
            "Time from a relist's first request to its last object.",
            one(Histogram(&source.list_duration)),
        )?;
        family(
            e,
            "kube_informer_listed_objects",
            "Objects received by relists.",
            one(Counter(source.listed_objects)),
        )?;
        family(
            e,
            "kube_informer_watch_starts",
            "Watch requests opened, streaming lists' included.",
            one(Counter(source.watch_starts)),
        )?;
        family(
            e,
            "kube_informer_watch_events",
            "Watch events received, by type.",
            WatchEventType::ALL.map(|kind| {
                (
                    with(&base, "type", kind.as_str()),
                    Counter(source.watch_events[kind]),
                )
            }),
        )?;
        family(
            e,
            "kube_informer_relists",
            "Relists started, by cause.",
            RelistCause::ALL.map(|cause| {
                (
                    with(&base, "cause", cause.as_str()),
                    Counter(source.relists[cause]),
                )
            }),
        )?;
        family(
            e,
            "kube_informer_source_errors",
            "Errors the list/watch met, by class.",
            ErrorClass::ALL.map(|class| {
                (
                    with(&base, "class", class.as_str()),
                    Counter(source.errors[class]),
                )
            }),
        )?;
        family(
            e,
            "kube_informer_resource_version_age",
            "Time since a bookmark or a finished list last brought a resourceVersion.",
            source
                .resource_version_age
                .map(|age| (base.clone(), Seconds(age))),
        )?;
        family(
            e,
            "kube_informer_errors",
            "Every error the informer met, source errors and panics in user code included.",
            one(Counter(metrics.errors)),
        )?;
        family(
            e,
            "kube_informer_fifo_keys",
            "Keys queued in the FIFO.",
            one(Gauge(metrics.fifo.keys)),
        )?;
        family(
            e,
            "kube_informer_fifo_deltas",
            "Deltas queued in the FIFO, over all keys.",
            one(Gauge(metrics.fifo.deltas)),
        )?;
        family(
            e,
            "kube_informer_store_objects",
            "Objects cached.",
            one(Gauge(metrics.store.objects)),
        )?;
        family(
            e,
            "kube_informer_synced",
            "1 once the first full list has been applied.",
            one(Gauge(usize::from(metrics.store.synced))),
        )?;
        family(
            e,
            "kube_informer_time_to_first_sync",
            "From the start of run to the first sync.",
            metrics
                .store
                .time_to_first_sync
                .map(|took| (base.clone(), Seconds(took))),
        )?;

        let subscriptions: Vec<(Labels, &SubscriptionStats)> = metrics
            .subscriptions
            .iter()
            .map(|stats| (with(&base, "subscriber", stats.name.clone()), stats))
            .collect();
        let each = || {
            subscriptions
                .iter()
                .map(|(labels, stats)| (labels.clone(), *stats))
        };
        family(
            e,
            "kube_informer_subscription_delivered",
            "Notifications the subscriber took, by kind.",
            each().flat_map(|(labels, stats)| {
                stats
                    .delivered
                    .by_kind()
                    .map(|(kind, n)| (with(&labels, "kind", kind), Counter(n)))
            }),
        )?;
        family(
            e,
            "kube_informer_subscription_pending",
            "Notifications queued for the subscriber, not yet taken.",
            each().map(|(l, s)| (l, Gauge(s.pending))),
        )?;
        family(
            e,
            "kube_informer_subscription_pending_high_water",
            "The most notifications ever pending at once.",
            each().map(|(l, s)| (l, Gauge(s.pending_high_water))),
        )?;
        family(
            e,
            "kube_informer_subscription_lag",
            "How long the oldest pending notification has waited, at least.",
            each().map(|(l, s)| (l, Seconds(s.lag))),
        )?;
        family(
            e,
            "kube_informer_subscription_handler_duration",
            "Time in the handler per notification, under Subscription::handle.",
            each().map(|(l, s)| (l, Histogram(&s.handler_duration))),
        )
    }
}

struct WorkQueueCollector {
    name: String,
    reader: MetricsReader<WorkQueueMetrics>,
}

impl fmt::Debug for WorkQueueCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueueCollector")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Collector for WorkQueueCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        use Sample::{Counter, Gauge, Histogram, Seconds};
        let Some(metrics) = self.reader.read() else {
            return Ok(());
        };
        let one = |sample| [(vec![("name", Cow::Owned(self.name.clone()))], sample)];
        let e = &mut encoder;
        family(
            e,
            "workqueue_depth",
            "Items waiting to be handed out.",
            one(Gauge(metrics.depth)),
        )?;
        family(
            e,
            "workqueue_adds",
            "Adds that made an item need processing.",
            one(Counter(metrics.adds)),
        )?;
        family(
            e,
            "workqueue_queue_duration",
            "Time from an item's add to its hand-out.",
            one(Histogram(&metrics.queue_duration)),
        )?;
        family(
            e,
            "workqueue_work_duration",
            "Time a worker held an item.",
            one(Histogram(&metrics.work_duration)),
        )?;
        family(
            e,
            "workqueue_unfinished_work",
            "Time the items held now have been held, summed; growing means a stuck worker.",
            one(Seconds(metrics.unfinished_work)),
        )?;
        family(
            e,
            "workqueue_longest_running_processor",
            "Time the item held longest now has been held.",
            one(Seconds(metrics.longest_running_processor)),
        )?;
        family(
            e,
            "workqueue_retries",
            "Rate-limited re-adds.",
            one(Counter(metrics.retries)),
        )
    }
}

#[cfg(feature = "controller")]
struct ControllerCollector {
    name: String,
    reader: MetricsReader<ControllerMetrics>,
}

#[cfg(feature = "controller")]
impl fmt::Debug for ControllerCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerCollector")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "controller")]
impl Collector for ControllerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        use Sample::{Counter, Gauge, Histogram};
        let Some(metrics) = self.reader.read() else {
            return Ok(());
        };
        let labels: Labels = vec![("controller", Cow::Owned(self.name.clone()))];
        let one = |sample| [(labels.clone(), sample)];
        let counts = metrics.reconciles;
        let e = &mut encoder;
        family(
            e,
            "controller_runtime_reconcile",
            "Reconciles that ended, by result.",
            [
                ("success", counts.success),
                ("error", counts.error),
                ("requeue", counts.requeue),
                ("requeue_after", counts.requeue_after),
            ]
            .map(|(result, n)| (with(&labels, "result", result), Counter(n))),
        )?;
        family(
            e,
            "controller_runtime_reconcile_errors",
            "Reconciles that failed, panics included.",
            one(Counter(metrics.errors)),
        )?;
        family(
            e,
            "controller_runtime_reconcile_panics",
            "Reconciles that panicked.",
            one(Counter(metrics.panics)),
        )?;
        family(
            e,
            "controller_runtime_reconcile_time",
            "Time a reconcile took.",
            one(Histogram(&metrics.reconcile_time)),
        )?;
        family(
            e,
            "controller_runtime_active_workers",
            "Reconciles running now.",
            one(Gauge(metrics.active_workers)),
        )?;
        family(
            e,
            "controller_runtime_max_concurrent_reconciles",
            "The most reconciles that run at once.",
            one(Gauge(metrics.max_concurrent_reconciles)),
        )?;
        family(
            e,
            "kube_informer_controller_own_write_holds",
            "Reconciles held until the caches showed the key's last writes.",
            one(Counter(metrics.own_write_holds)),
        )?;
        family(
            e,
            "kube_informer_controller_own_write_expiries",
            "Holds that ended at their deadline before the caches caught up.",
            one(Counter(metrics.own_write_expiries)),
        )?;
        family(
            e,
            "kube_informer_controller_own_write_hold",
            "How long a reconcile was held for its key's last writes.",
            one(Histogram(&metrics.own_write_hold_time)),
        )
    }
}
