//! Wire runner (b): kube-runtime 5.0's `watcher` (default config: pages of
//! 500) into `reflect_shared` writing a `store_shared(256)` store, one
//! `ReflectHandle` per subscriber; with `--strip` a `.modify()` on the watcher
//! stream clears managedFields before the reflector sees the object.
//!
//! kube-runtime tells its handles about applied objects only (N + U per
//! subscriber), and a handle whose object was deleted before it was polled
//! stops for good (it returns `Pending` without a wake-up). So the driver
//! has the server hold the deletes back until every subscriber has seen the
//! updates, and this runner reports how many deletes the reflector applied.

use super::{
    count::Counter,
    drive::{Started, WireRunner, strip_managed_fields},
};
use futures::{StreamExt, future};
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use kube_runtime::{WatchStreamExt, reflector, watcher};
use tokio::sync::watch;

/// Capacity of the broadcast channel between the reflector and the handles
/// (kube-rs's shared-stream example uses 256).
pub const BROADCAST_BUFFER: usize = 256;

/// See the module docs.
#[derive(Debug)]
pub struct KubeRuntimeWire;

impl WireRunner for KubeRuntimeWire {
    const NAME: &'static str = "kube-runtime";
    const TOLD_OF_DELETES: bool = false;

    fn start(client: Client, strip: bool, subscribers: Vec<Counter>) -> Started {
        let api: Api<Pod> = Api::all(client);
        let (reader, writer) = reflector::store_shared::<Pod>(BROADCAST_BUFFER);
        for mut counter in subscribers {
            let mut handle = writer
                .subscribe()
                .expect("a writer made by store_shared can always be subscribed");
            tokio::spawn(async move {
                while let Some(pod) = handle.next().await {
                    counter.observe(&pod);
                }
            });
        }
        let (applied, deletes_applied) = watch::channel(0u64);
        let events = watcher(api, watcher::Config::default());
        let events = if strip {
            events.modify(strip_managed_fields).boxed()
        } else {
            events.boxed()
        };
        let mut deleted = 0u64;
        tokio::spawn(async move {
            events
                .reflect_shared(writer)
                .for_each(|event| {
                    // reflect_shared passes each event on after applying it.
                    if let Ok(watcher::Event::Delete(_)) = event {
                        deleted += 1;
                        applied.send_replace(deleted);
                    }
                    future::ready(())
                })
                .await;
            drop(reader);
        });
        Started {
            deletes_applied: Some(deletes_applied),
        }
    }
}
