//! Public types are Send + Sync (and Unpin where true) for a real resource.

use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::unstable::store::Writer;
use kube_informer::{
    Lag, Notification, SubscribeOptions, Subscription, WatchedResource,
    dispatch::{ResourceEventHandler, SyncStatus},
    ext::{ChangeFilter, NotificationStreamExt, changed},
    own_writes::{RecordedApi, RecordedWrite, WriteLog},
    resource_version::Written,
    runner::OwnerStreamExt,
    store::{Indexers, NamespacedStore, Store},
    unstable::dispatch::{Distributor, SubscribeRequest},
};

fn send_sync_unpin<T: Send + Sync + Unpin>() {}

#[test]
fn public_types_are_send_sync_and_unpin() {
    send_sync_unpin::<Store<ConfigMap>>();
    send_sync_unpin::<WriteLog>();
    send_sync_unpin::<RecordedApi<ConfigMap>>();
    send_sync_unpin::<RecordedWrite>();
    send_sync_unpin::<Written>();
    send_sync_unpin::<Writer<ConfigMap>>();
    send_sync_unpin::<NamespacedStore<ConfigMap>>();
    send_sync_unpin::<Indexers<ConfigMap>>();
    send_sync_unpin::<Subscription<ConfigMap>>();
    send_sync_unpin::<SubscribeRequest<ConfigMap>>();
    send_sync_unpin::<SyncStatus<ConfigMap>>();
    send_sync_unpin::<SubscribeOptions>();
    send_sync_unpin::<Lag>();
    send_sync_unpin::<Distributor<ConfigMap>>();
    send_sync_unpin::<Notification<ConfigMap>>();
    send_sync_unpin::<WatchedResource>();
}

/// The streams and filters the extension traits return are `impl Trait`s:
/// they are Send, Sync and Unpin (and fused) over a subscription.
#[test]
fn p7_the_ext_streams_and_filters_are_send_sync_unpin_and_fused() {
    fn is_send_sync_unpin<T: Send + Sync + Unpin>(_: &T) {}
    fn is_fused<T: futures::stream::FusedStream>(_: &T) {}
    fn is_filter<T: ChangeFilter<ConfigMap> + Send + Sync + Unpin + Clone>(_: &T) {}
    fn check(sub: &dyn Fn() -> Subscription<ConfigMap>) {
        let s = sub().changed_only();
        is_send_sync_unpin(&s);
        is_fused(&s);
        let s = sub().objects();
        is_send_sync_unpin(&s);
        is_fused(&s);
        let s = sub().keys();
        is_send_sync_unpin(&s);
        is_fused(&s);
        let s = sub().filter_changes(changed::generation());
        is_send_sync_unpin(&s);
        is_fused(&s);
        let boxed: Box<dyn ChangeFilter<ConfigMap> + Send + Sync> = Box::new(changed::labels());
        let s = sub().filter_changes(boxed);
        is_send_sync_unpin(&s);
        let s =
            sub().owner_keys_with::<kube::core::DynamicObject>(kube::core::ApiResource::erase::<
                ConfigMap,
            >(&()));
        is_send_sync_unpin(&s);
        is_fused(&s);
    }
    let _ = check;
    is_filter(&changed::generation());
    let either = changed::generation().or(changed::labels());
    let both = changed::annotations().and(changed::finalizers());
    fn is_send_sync_filter<T: ChangeFilter<ConfigMap> + Send + Sync + 'static>(_: &T) {}
    is_send_sync_filter(&either);
    is_send_sync_filter(&both);
}

/// P7: the streams the informer, the FIFO, the work queue, the runner, the
/// shard gate and the controller return are `impl Stream`s: Send and Unpin,
/// fused where they say so (the error and delta streams), and the delta
/// stream Sync too.
#[test]
fn p7_the_returned_streams_are_send_and_unpin() {
    use kube_informer::{
        Informer, ObjectKey,
        controller::Controller,
        fifo::DeltaFifo,
        queue::WorkQueue,
        runner::{Action, Runner},
        shard::KeyGate,
    };
    fn send_unpin<T: futures::Stream + Send + Unpin>(_: &T) {}
    fn is_fused<T: futures::stream::FusedStream>(_: &T) {}
    fn is_send_sync<T: Send + Sync>(_: &T) {}
    fn check(
        informer: &Informer<ConfigMap>,
        fifo: &DeltaFifo<ConfigMap>,
        queue: &WorkQueue<ObjectKey>,
        gate: &KeyGate,
        controller: Controller<ConfigMap>,
    ) {
        let errors = informer.errors();
        send_unpin(&errors);
        is_fused(&errors);
        let deltas = fifo.stream();
        send_unpin(&deltas);
        is_fused(&deltas);
        is_send_sync(&deltas);
        send_unpin(&queue.stream());
        let reconciles = Runner::new(queue.clone()).run(
            |_key| async { Ok::<_, std::convert::Infallible>(Action::await_change()) },
            |_, _| Action::backoff(),
        );
        send_unpin(&reconciles);
        let sharded = gate.filter(
            informer.subscribe(SubscribeOptions::default()).unwrap(),
            informer.store(),
        );
        send_unpin(&sharded);
        let outcomes = controller.run(
            |_cm, _ctx: std::sync::Arc<()>| async {
                Ok::<_, std::convert::Infallible>(Action::await_change())
            },
            |_cm, _error, _ctx| Action::backoff(),
            std::sync::Arc::new(()),
        );
        fn is_send<T: futures::Stream + Send>(_: &T) {}
        is_send(&outcomes);
    }
    let _ = check;
}

#[test]
fn the_handle_and_distribute_futures_are_send() {
    fn is_send<T: Send>(_: &T) {}
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let mut d = Distributor::<ConfigMap>::new(std::time::Duration::ZERO, rx);
    let sub = d.subscribe(SubscribeOptions::default(), []);
    let handling = sub.handle(Ignore);
    is_send(&handling);
    let k: kube_informer::ObjectKey = "a".parse().unwrap();
    let n = Notification::Deleted {
        object: std::sync::Arc::new(ConfigMap::default()),
        final_state_unknown: false,
    };
    let distributing = d.distribute(&k, n);
    is_send(&distributing);
}

/// A reconcile that calls the finalizer helper can run on a spawned task
/// (a runner's stream driven by `tokio::spawn`), and its types cross threads.
#[test]
fn z8_the_finalizer_future_is_send_and_its_types_send_sync() {
    use kube_informer::finalizer::{Error, Event, finalizer};
    use kube_informer::runner::Action;

    send_sync_unpin::<Event<ConfigMap>>();
    send_sync_unpin::<Error<std::io::Error>>();
    fn is_send<T: Send>(_: &T) {}
    fn check(api: &kube::Api<ConfigMap>) {
        let object = std::sync::Arc::new(ConfigMap::default());
        let running = finalizer(api, "example.com/cleanup", object, |_| async {
            Ok::<_, std::io::Error>(Action::AwaitChange)
        });
        is_send(&running);
    }
    let _ = check;
}

/// A handler that ignores every notification.
struct Ignore;
impl ResourceEventHandler<ConfigMap> for Ignore {}
