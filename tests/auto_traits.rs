//! Public types are Send + Sync (and Unpin where true) for a real resource.

use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::unstable::store::Writer;
use kube_informer::{
    Lag, Notification, SubscribeOptions, Subscription, WatchedResource,
    dispatch::{EventHandlerFuncs, SyncStatus},
    ext::{
        ChangeFilter, ChangedOnly, FilterChanges, Keys, Objects,
        changed::{GenerationChanged, Or},
    },
    own_writes::{RecordedApi, RecordedWrite, WriteLog},
    resource_version::Written,
    runner::OwnerKeys,
    store::{Indexers, NamespacedStore, Store},
    unstable::dispatch::{Distributor, SubscribeRequest},
};

fn send_sync_unpin<T: Send + Sync + Unpin>() {}
fn send<T: Send>() {}

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
    send_sync_unpin::<ChangedOnly<Subscription<ConfigMap>>>();
    send_sync_unpin::<Objects<Subscription<ConfigMap>>>();
    send_sync_unpin::<Keys<Subscription<ConfigMap>>>();
    send_sync_unpin::<GenerationChanged<ConfigMap>>();
    send_sync_unpin::<Or<GenerationChanged<ConfigMap>, GenerationChanged<ConfigMap>>>();
    send_sync_unpin::<FilterChanges<Subscription<ConfigMap>, GenerationChanged<ConfigMap>>>();
    send_sync_unpin::<
        FilterChanges<Subscription<ConfigMap>, Box<dyn ChangeFilter<ConfigMap> + Send + Sync>>,
    >();
    send_sync_unpin::<OwnerKeys<Subscription<ConfigMap>, kube::core::DynamicObject>>();
    send::<EventHandlerFuncs<ConfigMap>>();
}

#[test]
fn the_handle_and_distribute_futures_are_send() {
    fn is_send<T: Send>(_: &T) {}
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let mut d = Distributor::<ConfigMap>::new(std::time::Duration::ZERO, rx);
    let sub = d.subscribe(SubscribeOptions::default(), []);
    let handling = sub.handle(EventHandlerFuncs::new());
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
