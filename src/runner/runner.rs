//! [`Runner`]: the builder of a reconcile loop over a [`WorkQueue`].

use std::{future::Future, hash::Hash, sync::Arc};

use futures::Stream;
use tokio_util::sync::CancellationToken;

use super::{
    Action, Error, OnCancel,
    reconciles::{Admit, Reconciles},
};
#[cfg(feature = "shard")]
use crate::shard::KeyGate;
use crate::{key::ObjectKey, queue::WorkQueue, store::Store};

/// Runs a reconcile function over the keys of a [`WorkQueue`], at most
/// `concurrency` at a time, each key by one reconcile at a time (the queue's
/// W3).
///
/// [`run`](Runner::run) (or [`run_with_store`](Runner::run_with_store), which
/// hands the reconciler the key's object from an informer's [`Store`]) gives a
/// stream of outcomes that drives the work: poll it to make progress.
/// Reconciles run concurrently inside that one stream (as kube-runtime's
/// controller runs them); spawn inside the reconciler for CPU-heavy work.
///
/// After a reconcile:
/// - `Ok(Action::AwaitChange)`: the key's failures are forgotten;
/// - `Ok(Action::RequeueAfter(d))`: forgotten, and the key is added after `d`;
/// - `Ok(Action::Backoff)`: the key is added again through the queue's rate
///   limiter ([`add_rate_limited`](WorkQueue::add_rate_limited)); whether
///   an add that comes during the backoff cuts it short is the queue's
///   choice ([`QueueConfig::backoff_holds`](crate::queue::QueueConfig::backoff_holds), W13; by default it does, as in
///   client-go);
/// - `Err(e)`: the stream yields [`Error::Reconcile`](super::Error::Reconcile)
///   with the key, and the key gets what the error policy returns, as for
///   an `Ok` above (usually [`Action::Backoff`]).
///
/// The stream ends when the queue is shut down and drained, or when the
/// cancellation token fires (see [`OnCancel`]). A panic in a reconciler
/// reaches the task polling the stream; the key's guard is dropped on the way,
/// so the key is not left stuck.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use futures::StreamExt;
/// use kube_informer::{queue::WorkQueue, runner::{Action, Runner}};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = WorkQueue::new();
/// queue.add("a");
/// queue.add("b");
/// queue.shutdown(); // hand out what is queued, then end
/// let outcomes: Vec<_> = Runner::new(queue)
///     .concurrency(4)
///     .run(
///         |key| async move { Ok::<_, Infallible>(Action::await_change()) },
///         |_key, _error| Action::backoff(),
///     )
///     .collect()
///     .await;
/// assert_eq!(outcomes.len(), 2);
/// # }
/// ```
#[must_use = "a runner does nothing until run and polled"]
pub struct Runner<T = ObjectKey> {
    queue: WorkQueue<T>,
    concurrency: usize,
    cancel: Option<(CancellationToken, OnCancel)>,
    admit: Option<Admit<T>>,
}

impl<T: Hash + Eq + Clone> std::fmt::Debug for Runner<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("queue", &self.queue)
            .field("concurrency", &self.concurrency)
            .field("cancel", &self.cancel)
            .field("gated", &self.admit.is_some())
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> Runner<T> {
    /// A runner over `queue` with one reconcile at a time and no
    /// cancellation token.
    pub fn new(queue: WorkQueue<T>) -> Self {
        Self {
            queue,
            concurrency: 1,
            cancel: None,
            admit: None,
        }
    }

    /// At most `n` reconciles at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Stops when `token` is cancelled, finishing or abandoning running
    /// reconciles as `on_cancel` says.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{convert::Infallible, time::Duration};
    /// use futures::StreamExt;
    /// use kube_informer::{queue::WorkQueue, runner::{Action, OnCancel, Runner}};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add("slow");
    /// let token = CancellationToken::new();
    /// let outcomes = Runner::new(queue.clone())
    ///     .cancel_on(token.clone(), OnCancel::Abandon)
    ///     .run(
    ///         |_key| async {
    ///             tokio::time::sleep(Duration::from_secs(3600)).await;
    ///             Ok::<_, Infallible>(Action::await_change())
    ///         },
    ///         |_key, _error| Action::backoff(),
    ///     );
    /// tokio::spawn(async move {
    ///     tokio::time::sleep(Duration::from_secs(1)).await;
    ///     token.cancel();
    /// });
    /// assert_eq!(outcomes.count().await, 0); // abandoned, nothing reported
    /// assert_eq!(queue.processing(), 0);
    /// # }
    /// ```
    pub fn cancel_on(mut self, token: CancellationToken, on_cancel: OnCancel) -> Self {
        self.cancel = Some((token, on_cancel));
        self
    }

    /// Runs `reconcile` on each key handed out; the returned stream yields
    /// `Ok((key, action))` per successful reconcile and
    /// `Err(Error::Reconcile { key, error })` per failed one. It is `Unpin`,
    /// and `Send` when the keys, `reconcile`, `error_policy` and the futures
    /// are.
    ///
    /// `error_policy(&key, &error)` decides what the key of a failed
    /// reconcile gets next, as [`Controller::run`](crate::Controller::run)'s
    /// does: [`Action::backoff()`] queues it through the rate limiter (the
    /// usual answer), `RequeueAfter(d)` adds it after `d`, `AwaitChange`
    /// drops it and forgets its failures.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use kube_informer::{queue::WorkQueue, runner::{Action, Runner}};
    ///
    /// #[derive(Debug)]
    /// enum Failure { Transient, Permanent }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add("bad-spec");
    /// let mut outcomes = Runner::new(queue.clone()).run(
    ///     |_key| async { Err::<Action, _>(Failure::Permanent) },
    ///     |_key, error| match error {
    ///         Failure::Transient => Action::backoff(),
    ///         Failure::Permanent => Action::await_change(), // retrying will not help
    ///     },
    /// );
    /// assert!(outcomes.next().await.unwrap().is_err());
    /// assert_eq!(queue.requeues(&"bad-spec"), 0);
    /// assert_eq!(queue.len(), 0);
    /// # }
    /// ```
    pub fn run<F, Fut, E, P>(
        self,
        reconcile: F,
        error_policy: P,
    ) -> impl Stream<Item = Result<(T, Action), Error<E, T>>> + Unpin
    where
        F: FnMut(T) -> Fut,
        Fut: Future<Output = Result<Action, E>>,
        P: FnMut(&T, &E) -> Action,
    {
        Reconciles::new(
            self.queue,
            self.concurrency,
            self.cancel,
            self.admit,
            reconcile,
            error_policy,
        )
    }
}

impl Runner<ObjectKey> {
    /// Reconciles only the keys `gate` owns: the key of each item taken from
    /// the queue must pass [`KeyGate::begin`] first. A key it refuses (never
    /// owned, or lost while it waited in the queue) is dropped without a
    /// reconcile: its processing ends and its failures are
    /// [forgotten](WorkQueue::forget), because the replica that owns it now
    /// reconciles it. A key admitted keeps its [`WorkGuard`](crate::shard::WorkGuard) for the whole
    /// reconcile, so a handover of the key waits until the reconcile ends.
    ///
    /// Feed the queue from [`KeyGate::filter`] over the same gate
    /// so that only owned keys enter it and acquired keys are replayed; the
    /// gate drops the ones lost meanwhile. See the
    /// [shard module](crate::shard#a-work-queue-over-a-shard).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use futures::StreamExt;
    /// use kube_informer::{ObjectKey, queue::WorkQueue, runner::{Action, Runner}};
    /// use kube_informer::shard::{KeyGate, Ownership};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube_informer::store::Error> {
    /// // A gate that owns every key; a `Shard`'s gate owns this replica's share.
    /// let gate = KeyGate::new(Ownership::everything());
    /// let keys: Vec<ObjectKey> = (0..20).map(|i| format!("default/cm-{i}").parse()).collect::<Result<_, _>>()?;
    /// let queue = WorkQueue::new();
    /// for key in &keys {
    ///     queue.add(key.clone());
    /// }
    /// queue.shutdown();
    /// let check = gate.clone();
    /// let reconciled: Vec<ObjectKey> = Runner::new(queue)
    ///     .gate(gate.clone())
    ///     .run(
    ///         move |key| {
    ///             // Only owned keys are reconciled.
    ///             assert!(check.owns(&key));
    ///             async { Ok::<_, Infallible>(Action::await_change()) }
    ///         },
    ///         |_key, _error| Action::backoff(),
    ///     )
    ///     .map(|outcome| outcome.unwrap().0)
    ///     .collect()
    ///     .await;
    /// assert_eq!(reconciled.len(), keys.len());
    /// assert!(reconciled.iter().all(|key| gate.owns(key)));
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "shard")]
    #[cfg_attr(docsrs, doc(cfg(feature = "shard")))]
    pub fn gate(mut self, gate: KeyGate) -> Self {
        self.admit = Some(Box::new(move |key: &ObjectKey| gate.begin(key)));
        self
    }

    /// As [`run`](Self::run), handing the reconciler the key's object as the
    /// store holds it when the reconcile starts (`None`: deleted, or not
    /// seen yet) (E4). The store is the informer's own cache: no second copy.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{convert::Infallible, sync::Arc};
    /// use futures::StreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{ObjectKey, queue::WorkQueue, runner::{Action, Runner}, store::Indexers};
    /// use kube_informer::unstable::store::Writer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let writer = Writer::new(Indexers::<ConfigMap>::new());
    /// let store = writer.reader();
    /// let key: ObjectKey = "default/app".parse().unwrap();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("default".into());
    /// cm.metadata.name = Some("app".into());
    /// writer.apply_upsert(key.clone(), Arc::new(cm)).unwrap();
    ///
    /// let queue = WorkQueue::new();
    /// queue.add(key);
    /// queue.add("default/gone".parse().unwrap());
    /// queue.shutdown();
    /// let seen: Vec<bool> = Runner::new(queue)
    ///     .run_with_store(store, |_key, object: Option<Arc<ConfigMap>>| async move {
    ///         Ok::<_, Infallible>(if object.is_some() { Action::await_change() } else { Action::requeue(std::time::Duration::from_secs(1)) })
    ///     }, |_key, _error| Action::backoff())
    ///     .map(|outcome| outcome.unwrap().1 == Action::AwaitChange)
    ///     .collect()
    ///     .await;
    /// assert_eq!(seen, [true, false]);
    /// # }
    /// ```
    pub fn run_with_store<K, F, Fut, E, P>(
        self,
        store: Store<K>,
        mut reconcile: F,
        error_policy: P,
    ) -> impl Stream<Item = Result<(ObjectKey, Action), Error<E, ObjectKey>>> + Unpin
    where
        F: FnMut(ObjectKey, Option<Arc<K>>) -> Fut,
        Fut: Future<Output = Result<Action, E>>,
        P: FnMut(&ObjectKey, &E) -> Action,
    {
        self.run(
            move |key: ObjectKey| {
                let object = store.get(&key);
                reconcile(key, object)
            },
            error_policy,
        )
    }
}
