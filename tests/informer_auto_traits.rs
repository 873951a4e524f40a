//! The informer's public types can cross tasks and threads.

use crate::cache_mode_common::CacheModeExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{Informer, InformerBuilder, InformerFactory, informer};

fn send_sync<T: Send + Sync>() {}
fn send_static<T: Send + 'static>(_: &T) {}
fn unpin<T: Unpin>() {}

#[test]
fn informer_types_are_send_sync_unpin() {
    send_sync::<Informer<ConfigMap>>();
    unpin::<Informer<ConfigMap>>();
    send_sync::<InformerFactory>();
    send_sync::<informer::Error>();
    send_sync::<informer::SyncError>();
    fn send<T: Send>() {}
    send::<InformerBuilder<ConfigMap>>();
}

#[test]
fn run_future_is_send_and_static() {
    let informer = Informer::<ConfigMap>::builder_from_stream(futures::stream::empty::<
        Result<kube_informer::source::Event<ConfigMap>, std::io::Error>,
    >())
    .cache_from_env()
    .build();
    let run = informer.run();
    send_static(&run);
}

/// A controller awaits the sync waits inside spawned tasks and streams.
#[test]
fn i11_sync_wait_futures_are_send() {
    fn send<T: Send>(_: &T) {}
    let informer = Informer::<ConfigMap>::builder_from_stream(futures::stream::empty::<
        Result<kube_informer::source::Event<ConfigMap>, std::io::Error>,
    >())
    .cache_from_env()
    .build();
    send(&informer.wait_until_synced());
    send(&informer.store().wait_until_synced());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let factory = InformerFactory::new(
        kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap(),
    );
    send(&factory.wait_until_synced());
}
