//! Wire runner (a): kube-informer's `Informer::builder(Api)` on a kube
//! `Client` pointed at the loopback server, default source settings (pages
//! of 500), one `subscribe` per subscriber drained by its own task. Every
//! subscriber is told about every event: N + U + D notifications.
//! [`OursProtobufWire`] is the same informer asking for protobuf
//! (`Encoding::Protobuf`), against a server started with the protobuf
//! encoder.

use super::{
    count::Counter,
    drive::{Started, WireRunner},
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use kube_informer::{Informer, SubscribeOptions, source::Encoding};

/// How often (in notifications) a subscriber records its queue length.
const PENDING_EVERY: u64 = 256;

/// See the module docs.
#[derive(Debug)]
pub struct OursWire;

impl WireRunner for OursWire {
    const NAME: &'static str = "ours";
    const TOLD_OF_DELETES: bool = true;

    fn start(client: Client, strip: bool, subscribers: Vec<Counter>) -> Started {
        start(client, strip, subscribers, Encoding::Json)
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct OursProtobufWire;

impl WireRunner for OursProtobufWire {
    const NAME: &'static str = "ours-protobuf";
    const TOLD_OF_DELETES: bool = true;

    fn start(client: Client, strip: bool, subscribers: Vec<Counter>) -> Started {
        start(client, strip, subscribers, Encoding::Protobuf)
    }
}

/// Builds and runs the informer of [`OursWire`], asking for `encoding`.
fn start(client: Client, strip: bool, subscribers: Vec<Counter>, encoding: Encoding) -> Started {
    let api: Api<Pod> = Api::all(client);
    let mut builder = Informer::builder(api).encoding(encoding);
    if strip {
        // What users set: the builder's option, which leaves
        // managedFields out while decoding.
        builder = builder.strip_managed_fields();
    }
    // `COMPARE_DECODE_THREADS=n`: the builder's `decode_threads(n)`, for
    // the runs that compare where objects are decoded (NOTES.md,
    // "Peak RSS and glibc's heaps").
    if let Some(threads) = std::env::var("COMPARE_DECODE_THREADS")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        builder = builder.decode_threads(threads);
    }
    // `COMPARE_PLAIN_DECODE=1`: the builder's `plain_decode()`, for the
    // runs that measure what the tuned decoder costs and saves
    // (NOTES.md, "The tuned decoder against plain serde").
    if std::env::var_os("COMPARE_PLAIN_DECODE").is_some() {
        builder = builder.plain_decode();
    }
    spawn(builder.build(), subscribers, Counter::observe);
    Started {
        deletes_applied: None,
    }
}

/// Subscribes each of `subscribers` to `informer` (each drained by its own
/// task, `observe` counting every notification's object) and runs the
/// informer until the process exits. Shared by the runners of full Pods
/// and of a projection.
pub(super) fn spawn<K>(
    informer: Informer<K>,
    subscribers: Vec<Counter>,
    observe: fn(&mut Counter, &K),
) where
    K: kube::Resource
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    for mut counter in subscribers {
        let mut subscription = informer
            .subscribe(SubscribeOptions::default())
            .expect("an informer that has not run yet accepts subscribers");
        tokio::spawn(async move {
            while let Some(notification) = subscription.next().await {
                observe(&mut counter, notification.object());
                if counter.seen().is_multiple_of(PENDING_EVERY) {
                    // What waits for this subscriber: the backlog the
                    // burst leaves in its queue.
                    counter.record_pending(subscription.pending());
                }
            }
        });
    }
    // The informer runs until the process exits; its handle lives in the task.
    tokio::spawn(async move {
        if let Err(error) = informer.run().await {
            eprintln!("informer stopped with an error: {error}");
        }
        drop(informer);
    });
}
