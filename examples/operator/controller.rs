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
use kube_informer::prelude::*;

use super::mirror::{BY_SOURCE, Labels, Mirror, source_of_copy};

/// How the operator is set up.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The labels it reads and writes.
    pub labels: Labels,
    /// How often every source and every copy's source is reconciled again.
    pub resync: Duration,
    /// List/watch retry settings of the three informers.
    pub backoff: Option<source::BackoffConfig>,
    /// How long each watch asks to last (the informers' default range when
    /// `None`); a seeded simulation fixes it, so that no watch timeout is
    /// drawn at random.
    pub watch_timeout: Option<(Duration, Duration)>,
    /// How many threads decode the informers' lists and watch events (the
    /// informers' default when `None`); a seeded simulation sets 1, so that
    /// decoding stays on the runtime's thread.
    pub decode_threads: Option<usize>,
}

impl Default for Settings {
    fn default() -> Self {
        let (labels, resync) = (Labels::default(), Duration::from_secs(300));
        Self {
            labels,
            resync,
            backoff: None,
            watch_timeout: None,
            decode_threads: None,
        }
    }
}

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
    /// Starts the informers and waits for them; builds the controller.
    pub async fn start(
        client: Client,
        settings: &Settings,
    ) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let factory = InformerFactory::new(client.clone());
        let labels = settings.labels.clone();
        let (copy_of, of_copy) = (labels.copy_of.clone(), labels.clone());
        let sources = factory.build(Api::all(client.clone()), |b| {
            setup(b, labels.sources(), settings)
        })?;
        let copies = factory.build(Api::all(client.clone()), |b| {
            let by_source =
                move |copy: &ConfigMap| copy.labels().get(&copy_of).cloned().into_iter().collect();
            setup(b, labels.copies(), settings).indexer(BY_SOURCE, by_source)
        })?;
        let namespaces = factory.build(Api::all(client.clone()), |b| {
            setup(b, labels.targets(), settings)
        })?;
        let resync = SubscribeOptions::new().resync(settings.resync);
        let controller = Controller::for_informer(&sources)
            // Every source again at each resync.
            .watches_stream(
                sources
                    .subscribe(resync)?
                    .filter(|n| ready(n.is_resync()))
                    .keys()
                    .filter_map(|key| ready(key.ok())),
            )
            // A copy changed, went or was listed again (the sweep): its source.
            .watches_stream(
                copies
                    .subscribe(resync)?
                    .filter_map(move |n| ready(source_of_copy(n.object(), &of_copy))),
            )
            // The set of target namespaces moved: every source.
            .reconcile_all_on(
                namespaces
                    .subscribe(SubscribeOptions::new())?
                    .changed_only()
                    .map(drop),
            );
        factory.start();
        if !factory.wait_for_cache_sync().await {
            return Err("an informer stopped before its first list".into());
        }
        let mirror = Mirror::new(client, labels, copies.store(), namespaces.store());
        Ok(Self {
            factory,
            informers: (sources, copies, namespaces),
            controller,
            mirror,
        })
    }
}

/// An informer of what `selector` selects, with the operator's settings.
fn setup<K: Watchable>(
    builder: InformerBuilder<K>,
    selector: String,
    settings: &Settings,
) -> InformerBuilder<K> {
    let mut config = source::Config::default().label_selector(selector);
    if let Some(backoff) = settings.backoff {
        config = config.backoff(backoff);
    }
    if let Some((min, max)) = settings.watch_timeout {
        config = config.watch_timeout(min, max);
    }
    let builder = match settings.decode_threads {
        Some(threads) => builder.decode_threads(threads),
        None => builder,
    };
    builder.source_config(config).strip_managed_fields()
}
