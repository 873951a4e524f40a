//! The wiring: three informers (sources, copies, target namespaces), one
//! work queue of source keys fed from all three, and the reconciler.
//!
//! ```text
//! sources    ──keys()──────────────────────────────┐
//! copies     ──source_of_copy (owner mapper)───────┼──▶ WorkQueue ──Runner──▶ Mirror::reconcile
//! namespaces ──every source key (target set moved)─┘
//! ```
//!
//! Sharded ([`Operator::start_in`] with a [`Shard`]), the sources' feed
//! goes through [`Shard::filter`]: only owned source keys enter the queue,
//! and the keys this replica acquires are replayed into it. The other two
//! feeds add only owned source keys too, and the runner's gate drops a key
//! lost while it waited (`sharding.rs`).
//!
//! # Deletions the operator did not see
//!
//! Copies are cleaned up by a relist-based sweep, not a finalizer: every
//! copy the copies' informer lists (at start, after each relist, and at each
//! resync of its subscription) maps back to its source's key, and the
//! reconcile of a source that is gone or unlabelled deletes its copies. So a
//! source deleted while the operator was down is cleaned up when it starts
//! again. A finalizer would also do it, but it makes every source wait for
//! the operator to be deleted at all (`kubectl delete` hangs while the
//! operator is down or uninstalled), and it needs write access to the
//! sources; the sweep needs neither.

use std::time::Duration;

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{Api, Client};
use kube_informer::{
    Informer, NotificationStreamExt, ObjectKey, Store,
    dispatch::SubscribeOptions,
    informer,
    queue::WorkQueue,
    shard::{Shard, ShardEvent},
    source,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::mirror::{BY_SOURCE, Labels, Mirror, source_of_copy};

/// How the operator is set up.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The labels it reads and writes.
    pub labels: Labels,
    /// How often every copy is mapped back to its source again (the sweep)
    /// and every source reconciled again (repairing hand-edited copies).
    pub resync: Duration,
    /// List/watch retry settings shared by the three informers.
    pub backoff: Option<source::BackoffConfig>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            labels: Labels::default(),
            resync: Duration::from_secs(300),
            backoff: None,
        }
    }
}

/// The running informers and the queue they feed; run a
/// [`Runner`](kube_informer::runner::Runner) over [`queue`](Self::queue) with
/// [`mirror`](Self::mirror) to act.
pub struct Operator {
    /// Keys of sources to reconcile.
    pub queue: WorkQueue,
    /// The reconciler.
    pub mirror: Mirror,
    /// The sources' store, handed to the runner.
    pub sources: Store<ConfigMap>,
    informers: (
        Informer<ConfigMap>,
        Informer<ConfigMap>,
        Informer<Namespace>,
    ),
    tasks: Vec<JoinHandle<()>>,
    runs: Vec<JoinHandle<informer::Result<()>>>,
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator")
            .field("queue", &self.queue)
            .field("mirror", &self.mirror)
            .finish_non_exhaustive()
    }
}

fn informer_for<K>(
    api: Api<K>,
    selector: String,
    settings: &Settings,
    stop: &CancellationToken,
) -> kube_informer::InformerBuilder<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let mut config = source::Config::default().label_selector(selector);
    if let Some(backoff) = settings.backoff {
        config = config.backoff(backoff);
    }
    Informer::builder(api)
        .source_config(config)
        .strip_managed_fields()
        .cancellation_token(stop.clone())
}

impl Operator {
    /// Builds and runs the three informers and the feeds of the queue, on
    /// `client`, until `stop` is cancelled. Wait for
    /// [`synced`](Self::synced) before reconciling: a reconcile against an
    /// empty copies' or namespaces' store would act on nothing it knows.
    #[allow(dead_code)] // the tests' entry; `main` picks the mode with `start_in`
    pub fn start(
        client: Client,
        settings: &Settings,
        stop: &CancellationToken,
    ) -> Result<Self, informer::Error> {
        Self::start_in(client, settings, stop, None)
    }

    /// As [`start`](Self::start); with a `shard`, the queue is fed only the
    /// source keys the shard owns, and every source key it acquires.
    pub fn start_in(
        client: Client,
        settings: &Settings,
        stop: &CancellationToken,
        shard: Option<&Shard>,
    ) -> Result<Self, informer::Error> {
        let gate = shard.map(Shard::gate);
        let owned = move |key: &ObjectKey| gate.as_ref().is_none_or(|gate| gate.owns(key));
        let labels = settings.labels.clone();
        let sources = informer_for(
            Api::<ConfigMap>::all(client.clone()),
            labels.sources(),
            settings,
            stop,
        )
        .build();
        let copy_label = labels.copy_of.clone();
        let copies = informer_for(
            Api::<ConfigMap>::all(client.clone()),
            labels.copies(),
            settings,
            stop,
        )
        .indexer(BY_SOURCE, move |copy: &ConfigMap| {
            copy.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(&copy_label))
                .cloned()
                .into_iter()
                .collect()
        })
        .build();
        let namespaces = informer_for(
            Api::<Namespace>::all(client.clone()),
            labels.targets(),
            settings,
            stop,
        )
        .build();

        let queue = WorkQueue::new();
        let resync = SubscribeOptions::new().resync(settings.resync);
        let mut tasks = Vec::new();
        // A source changed (or left the selection: its label went, or it
        // was deleted): its own key.
        let changed = sources.subscribe(resync)?;
        tasks.push(match shard {
            None => tokio::spawn(queue.feed_results(changed.keys(), |error| {
                eprintln!("a source without a key: {error}")
            })),
            // Only owned keys, and every key acquired; the queue holds the
            // key from here, so the filter's guard goes at once.
            Some(shard) => tokio::spawn(queue.feed(
                shard.filter(changed, sources.store()).filter_map(|event| {
                    std::future::ready(match event {
                        ShardEvent::Change { guard, .. } => Some(guard.key().clone()),
                        ShardEvent::Lost { .. } => None,
                    })
                }),
            )),
        });
        // A copy changed, appeared or went (someone edited or deleted it,
        // or it was listed again): the key of the source it mirrors. This
        // is also the sweep: orphans are found through their source.
        let (copy_labels, copy_owned) = (labels.clone(), owned.clone());
        tasks.push(tokio::spawn(queue.feed(
            copies.subscribe(resync)?.filter_map(move |n| {
                std::future::ready(
                    source_of_copy(n.object(), &copy_labels).filter(|key| copy_owned(key)),
                )
            }),
        )));
        // The set of target namespaces moved: every source.
        let source_store = sources.store();
        tasks.push(tokio::spawn(
            queue.feed(
                namespaces
                    .subscribe(SubscribeOptions::new())?
                    .changed_only()
                    .flat_map(move |_| {
                        let mut keys = source_store.list_keys();
                        keys.retain(|key| owned(key));
                        stream::iter(keys)
                    }),
            ),
        ));

        let runs = vec![
            tokio::spawn(sources.run()),
            tokio::spawn(copies.run()),
            tokio::spawn(namespaces.run()),
        ];
        let mirror = Mirror::new(client, labels, copies.store(), namespaces.store());
        Ok(Self {
            queue,
            mirror,
            sources: sources.store(),
            informers: (sources, copies, namespaces),
            tasks,
            runs,
        })
    }

    /// Waits until the three informers have listed once; false if one
    /// stopped first.
    pub async fn synced(&self) -> bool {
        let (s, c, n) = &self.informers;
        s.wait_until_synced().await && c.wait_until_synced().await && n.wait_until_synced().await
    }

    /// Readers of the three informers' metrics, named for a metrics
    /// endpoint; they do not keep the informers alive.
    #[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
    pub fn metrics_readers(&self) -> [(&'static str, kube_informer::metrics::MetricsReader); 3] {
        let (s, c, n) = &self.informers;
        [
            ("sources", s.metrics_reader()),
            ("copies", c.metrics_reader()),
            ("target_namespaces", n.metrics_reader()),
        ]
    }

    /// List/watch errors of the three informers so far (they retry on
    /// their own).
    pub fn informer_errors(&self) -> u64 {
        let (s, c, n) = &self.informers;
        s.metrics().errors + c.metrics().errors + n.metrics().errors
    }

    /// Stops the informers and the feeds and waits for them; the queue is
    /// shut down so a runner over it ends once drained.
    pub async fn stop(self) -> informer::Result<()> {
        let (s, c, n) = &self.informers;
        s.stop();
        c.stop();
        n.stop();
        self.queue.shutdown();
        for task in self.tasks {
            task.abort();
        }
        for run in self.runs {
            run.await.expect("an informer's run task does not panic")?;
        }
        Ok(())
    }
}
