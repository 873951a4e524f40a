//! Collectors for a `prometheus_client` [`Registry`]: every scrape reads a
//! fresh snapshot, so nothing is copied between scrapes and an informer
//! that is gone simply stops being reported.
//!
//! Names follow Prometheus conventions (`_total` on counters, base unit
//! `_seconds`); the work queue's carry client-go's names (`workqueue_*`,
//! labelled `name`) so existing dashboards read them.

use std::{borrow::Cow, fmt, hash::Hash};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder, NoLabelSet},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
    registry::{Registry, Unit},
};

use super::{
    DurationHistogram, MetricsReader, SubscriptionStats, WorkQueueMetrics,
    histogram::BUCKETS,
    source::{ErrorClass, RelistCause, WatchEventType},
};
use crate::WorkQueue;

type Labels = Vec<(&'static str, Cow<'static, str>)>;

/// Registers the metrics of the informer `reader` reads, labelled
/// `informer="{name}"` plus its resource (`group`, `version`, `resource`,
/// `namespace`, the last `all` for all namespaces). Each scrape reads the
/// informer afresh; once it is gone its metrics disappear.
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, metrics, source::Event};
/// use prometheus_client::{encoding::text::encode, registry::Registry};
///
/// let events = futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>();
/// let informer = Informer::builder_from_stream(events).build();
/// let mut registry = Registry::default();
/// metrics::register_informer(&mut registry, "config", informer.metrics_reader());
/// let mut text = String::new();
/// encode(&mut text, &registry).unwrap();
/// assert!(text.contains("kube_informer_store_objects{informer=\"config\""));
/// ```
pub fn register_informer(registry: &mut Registry, name: &str, reader: MetricsReader) {
    registry.register_collector(Box::new(InformerCollector {
        name: name.to_owned(),
        reader,
    }));
}

/// Registers a work queue's metrics under client-go's names, labelled
/// `name="{name}"`. The registry keeps a handle on the queue.
///
/// # Examples
///
/// ```
/// use kube_informer::{WorkQueue, metrics};
/// use prometheus_client::{encoding::text::encode, registry::Registry};
///
/// let queue = WorkQueue::<String>::new();
/// queue.add("a".to_string());
/// let mut registry = Registry::default();
/// metrics::register_work_queue(&mut registry, "reconcile", &queue);
/// let mut text = String::new();
/// encode(&mut text, &registry).unwrap();
/// assert!(text.contains("workqueue_depth{name=\"reconcile\"} 1"));
/// ```
pub fn register_work_queue<T>(registry: &mut Registry, name: &str, queue: &WorkQueue<T>)
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    let queue = queue.clone();
    registry.register_collector(Box::new(WorkQueueCollector {
        name: name.to_owned(),
        read: Box::new(move || queue.metrics()),
    }));
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
        let seconds = Some(&Unit::Seconds);
        use MetricType::{Counter, Gauge, Histogram};

        let e = &mut encoder;
        Family::new(
            e,
            "kube_informer_list_requests",
            "LIST requests sent, one per page.",
            None,
            Counter,
        )?
        .counter(&base, source.list_requests)?;
        Family::new(
            e,
            "kube_informer_list_duration",
            "Time from a relist's first request to its last object.",
            seconds,
            Histogram,
        )?
        .histogram(&base, &source.list_duration)?;
        Family::new(
            e,
            "kube_informer_listed_objects",
            "Objects received by relists.",
            None,
            Counter,
        )?
        .counter(&base, source.listed_objects)?;
        Family::new(
            e,
            "kube_informer_watch_starts",
            "Watch requests opened, streaming lists' included.",
            None,
            Counter,
        )?
        .counter(&base, source.watch_starts)?;
        let mut events = Family::new(
            e,
            "kube_informer_watch_events",
            "Watch events received, by type.",
            None,
            Counter,
        )?;
        for kind in WatchEventType::ALL {
            events.counter(
                &with(&base, "type", kind.as_str()),
                source.watch_events_of(kind),
            )?;
        }
        drop(events);
        let mut relists = Family::new(
            e,
            "kube_informer_relists",
            "Relists started, by cause.",
            None,
            Counter,
        )?;
        for cause in RelistCause::ALL {
            relists.counter(
                &with(&base, "cause", cause.as_str()),
                source.relists_of(cause),
            )?;
        }
        drop(relists);
        let mut errors = Family::new(
            e,
            "kube_informer_source_errors",
            "Errors the list/watch met, by class.",
            None,
            Counter,
        )?;
        for class in ErrorClass::ALL {
            errors.counter(
                &with(&base, "class", class.as_str()),
                source.errors_of(class),
            )?;
        }
        drop(errors);
        if let Some(age) = source.resource_version_age {
            Family::new(
                e,
                "kube_informer_resource_version_age",
                "Time since a bookmark or a finished list last brought a resourceVersion.",
                seconds,
                Gauge,
            )?
            .seconds(&base, age)?;
        }
        Family::new(
            e,
            "kube_informer_errors",
            "Every error the informer met, source errors and panics in user code included.",
            None,
            Counter,
        )?
        .counter(&base, metrics.errors)?;
        Family::new(
            e,
            "kube_informer_fifo_keys",
            "Keys queued in the FIFO.",
            None,
            Gauge,
        )?
        .gauge(&base, count(metrics.fifo.keys))?;
        Family::new(
            e,
            "kube_informer_fifo_deltas",
            "Deltas queued in the FIFO, over all keys.",
            None,
            Gauge,
        )?
        .gauge(&base, count(metrics.fifo.deltas))?;
        Family::new(
            e,
            "kube_informer_store_objects",
            "Objects cached.",
            None,
            Gauge,
        )?
        .gauge(&base, count(metrics.store.objects))?;
        Family::new(
            e,
            "kube_informer_synced",
            "1 once the first full list has been applied.",
            None,
            Gauge,
        )?
        .gauge(&base, i64::from(metrics.store.synced))?;
        if let Some(took) = metrics.store.time_to_first_sync {
            Family::new(
                e,
                "kube_informer_time_to_first_sync",
                "From the start of run to the first sync.",
                seconds,
                Gauge,
            )?
            .seconds(&base, took)?;
        }
        encode_subscriptions(e, &base, &metrics.subscriptions)
    }
}

fn encode_subscriptions(
    e: &mut DescriptorEncoder<'_>,
    base: &Labels,
    subscriptions: &[SubscriptionStats],
) -> fmt::Result {
    use MetricType::{Counter, Gauge, Histogram};
    let seconds = Some(&Unit::Seconds);
    let labels: Vec<Labels> = subscriptions
        .iter()
        .map(|s| with(base, "subscriber", s.name.clone()))
        .collect();
    let each = subscriptions.iter().zip(&labels);
    let mut delivered = Family::new(
        e,
        "kube_informer_subscription_delivered",
        "Notifications the subscriber took, by kind.",
        None,
        Counter,
    )?;
    for (stats, labels) in each.clone() {
        for (kind, n) in stats.delivered.by_kind() {
            delivered.counter(&with(labels, "kind", kind), n)?;
        }
    }
    drop(delivered);
    let mut pending = Family::new(
        e,
        "kube_informer_subscription_pending",
        "Notifications queued for the subscriber, not yet taken.",
        None,
        Gauge,
    )?;
    for (stats, labels) in each.clone() {
        pending.gauge(labels, count(stats.pending))?;
    }
    drop(pending);
    let mut high = Family::new(
        e,
        "kube_informer_subscription_pending_high_water",
        "The most notifications ever pending at once.",
        None,
        Gauge,
    )?;
    for (stats, labels) in each.clone() {
        high.gauge(labels, count(stats.pending_high_water))?;
    }
    drop(high);
    let mut lag = Family::new(
        e,
        "kube_informer_subscription_lag",
        "How long the oldest pending notification has waited, at least.",
        seconds,
        Gauge,
    )?;
    for (stats, labels) in each.clone() {
        lag.seconds(labels, stats.lag)?;
    }
    drop(lag);
    let mut handler = Family::new(
        e,
        "kube_informer_subscription_handler_duration",
        "Time in the handler per notification, under Subscription::handle.",
        seconds,
        Histogram,
    )?;
    for (stats, labels) in each {
        handler.histogram(labels, &stats.handler_duration)?;
    }
    Ok(())
}

struct WorkQueueCollector {
    name: String,
    read: Box<dyn Fn() -> WorkQueueMetrics + Send + Sync>,
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
        use MetricType::{Counter, Gauge, Histogram};
        let metrics = (self.read)();
        let labels: Labels = vec![("name", self.name.clone().into())];
        let seconds = Some(&Unit::Seconds);
        let e = &mut encoder;
        Family::new(
            e,
            "workqueue_depth",
            "Items waiting to be handed out.",
            None,
            Gauge,
        )?
        .gauge(&labels, count(metrics.depth))?;
        Family::new(
            e,
            "workqueue_adds",
            "Adds that made an item need processing.",
            None,
            Counter,
        )?
        .counter(&labels, metrics.adds)?;
        Family::new(
            e,
            "workqueue_queue_duration",
            "Time from an item's add to its hand-out.",
            seconds,
            Histogram,
        )?
        .histogram(&labels, &metrics.queue_duration)?;
        Family::new(
            e,
            "workqueue_work_duration",
            "Time a worker held an item.",
            seconds,
            Histogram,
        )?
        .histogram(&labels, &metrics.work_duration)?;
        Family::new(
            e,
            "workqueue_unfinished_work",
            "Time the items held now have been held, summed; growing means a stuck worker.",
            seconds,
            Gauge,
        )?
        .seconds(&labels, metrics.unfinished_work)?;
        Family::new(
            e,
            "workqueue_longest_running_processor",
            "Time the item held longest now has been held.",
            seconds,
            Gauge,
        )?
        .seconds(&labels, metrics.longest_running_processor)?;
        Family::new(
            e,
            "workqueue_retries",
            "Rate-limited re-adds.",
            None,
            Counter,
        )?
        .counter(&labels, metrics.retries)
    }
}
