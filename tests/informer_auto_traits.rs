//! The informer's public types can cross tasks and threads.

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
    unpin::<informer::ErrorStream>();
    fn send<T: Send>() {}
    send::<InformerBuilder<ConfigMap>>();
    send::<informer::ErrorStream>();
}

#[test]
fn run_future_is_send_and_static() {
    let informer = Informer::<ConfigMap>::builder_from_stream(futures::stream::empty::<
        Result<kube_informer::source::Event<ConfigMap>, std::io::Error>,
    >())
    .build();
    let run = informer.run();
    send_static(&run);
}
