//! The wiring: three informers on one factory (sources, copies, target
//! namespaces) and one [`Controller`] of the sources, triggered by a
//! source's changes, by its copies' (a copy's label names its source) and
//! by every move of the target namespaces (every source).
//!
//! Copies are cleaned up by a relist-based sweep, not a finalizer: every
//! copy the copies' informer lists (at start, after each relist, at each
//! resync) maps back to its source's key, which the controller reconciles
//! even when it knows nothing of the source (`run_by_key`): a source deleted
//! while the operator was down loses its copies when it starts again. A
//! finalizer makes every source wait for the operator to be deleted at all
//! (`kubectl delete` hangs while it is down) and needs write access to the
//! sources; the sweep needs neither.

use std::time::Duration;

use futures::{StreamExt, future::ready};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{Api, Client, ResourceExt};
use kube_informer::{informer::Defaults, prelude::*};

use super::mirror::{BY_SOURCE, Labels, Mirror, source_of_copy};

/// The sources', the copies' and the target namespaces' informers.
pub type Informers = (
    Informer<ConfigMap>,
    Informer<ConfigMap>,
    Informer<Namespace>,
);

/// The informers, started and synced (sources, copies indexed
/// [`BY_SOURCE`], target namespaces), the controller and the reconciler.
pub struct Operator {
    pub factory: InformerFactory,
    pub informers: Informers,
    pub controller: Controller<ConfigMap>,
    pub mirror: Mirror,
}

impl Operator {
    /// Starts the informers (from `defaults`, managedFields stripped) and
    /// waits for them; builds the controller, which reconciles every source
    /// and every copy's source again every `resync`.
    pub async fn start(
        client: Client,
        labels: Labels,
        resync: Duration,
        defaults: Defaults,
    ) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let defaults = Defaults {
            strip_managed_fields: true,
            ..defaults
        };
        let factory = InformerFactory::with_defaults(client.clone(), defaults);
        let (copy_of, of_copy) = (labels.copy_of.clone(), labels.clone());
        let by_source =
            move |copy: &ConfigMap| copy.labels().get(&copy_of).cloned().into_iter().collect();
        let sources = factory.build(Api::all(client.clone()), |b| {
            b.label_selector(labels.sources())
        })?;
        let copies = factory.build(Api::all(client.clone()), |b| {
            b.label_selector(labels.copies())
                .indexer(BY_SOURCE, by_source)
        })?;
        let namespaces = factory.build(Api::all(client.clone()), |b| {
            b.label_selector(labels.targets())
        })?;
        let controller = Controller::for_informer(&sources)
            .resync(resync)
            // A copy changed, went or was listed again (the sweep): its source.
            .reconcile_on(
                copies
                    .subscribe(SubscribeOptions::default().resync(resync))?
                    .filter_map(move |n| ready(source_of_copy(n.object(), &of_copy))),
            )
            // The set of target namespaces moved: every source.
            .reconcile_all_on(
                namespaces
                    .subscribe(SubscribeOptions::default())?
                    .changed_only()
                    .map(drop),
            );
        factory.start();
        factory.wait_until_synced().await?;
        let mirror = Mirror::new(client, labels, copies.store(), namespaces.store());
        let informers = (sources, copies, namespaces);
        Ok(Self {
            factory,
            informers,
            controller,
            mirror,
        })
    }
}

/// What `/metrics` serves: the three informers, the controller's queue and
/// reconciles, and, when sharded (`gate`), the keys this replica owns among
/// the sources.
#[cfg(feature = "prometheus")]
pub fn metrics_registry(
    informers: &Informers,
    controller: &Controller<ConfigMap>,
    gate: Option<kube_informer::shard::KeyGate>,
) -> prometheus_client::registry::Registry {
    use kube_informer::metrics::{self, ControllerMetrics, MetricsReader, WorkQueueMetrics};

    let mut registry = prometheus_client::registry::Registry::default();
    let (sources, copies, namespaces) = informers;
    metrics::register(&mut registry, "sources", sources);
    metrics::register(&mut registry, "copies", copies);
    metrics::register(&mut registry, "target_namespaces", namespaces);
    metrics::register::<WorkQueueMetrics>(&mut registry, "mirror", controller);
    metrics::register::<ControllerMetrics>(&mut registry, "mirror", controller);
    if let Some(gate) = gate {
        metrics::register(
            &mut registry,
            "mirror",
            MetricsReader::from((&gate, sources.store())),
        );
    }
    registry
}
