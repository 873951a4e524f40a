//! Two wire floors, measured in the same harness as the informers: what a
//! minimal informer on kube's `Client` spends, and what the watch body alone
//! costs.
//!
//! - [`FloorWire`] (`floor`): an informer with none of an informer's
//!   logic. The list in pages of 500, then kube's own `Api::watch` stream
//!   (each line decoded into a `WatchEvent<Pod>` by kube), each object kept
//!   in a `HashMap` by namespace and name (as every informer keys its
//!   objects) and sent as an `Arc` down one unbounded channel
//!   per subscriber, each subscriber drained by its own task. No key queue,
//!   no resourceVersion checks, no indexes, no replay, no relist.
//! - [`TransportWire`] (`transport`): the HTTP body alone. The same list
//!   (decoded, to count the Pods), then the watch body read from
//!   `Client::request_stream` and its lines counted, nothing decoded: the
//!   part of every runner's watch CPU that the body's bytes cost on their
//!   way through the kernel, hyper and the runtime.
//!
//! Every subscriber is told about every event (N + U + D), as kube-informer's
//! are.

use super::{
    count::Counter,
    drive::{Started, WireRunner, strip_managed_fields},
};
use futures::{AsyncBufRead, AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    api::{ListParams, WatchEvent, WatchParams},
};
use std::{collections::HashMap, pin::pin, sync::Arc};
use tokio::sync::mpsc;

/// Page size of the floors' list (the informers' default).
const PAGE: u32 = 500;

/// See the module docs.
#[derive(Debug)]
pub struct FloorWire;

/// See the module docs.
#[derive(Debug)]
pub struct TransportWire;

/// Lists every Pod in pages of [`PAGE`]; the Pods and the list's
/// resourceVersion.
async fn list_all(api: &Api<Pod>) -> kube::Result<(Vec<Pod>, String)> {
    let mut pods = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await?;
        pods.extend(page.items);
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok((pods, page.metadata.resource_version.unwrap_or_default())),
        }
    }
}

impl WireRunner for FloorWire {
    const NAME: &'static str = "floor";
    const TOLD_OF_DELETES: bool = true;

    fn start(client: Client, strip: bool, subscribers: Vec<Counter>) -> Started {
        let senders: Vec<_> = subscribers
            .into_iter()
            .map(|mut counter| {
                let (sender, mut receiver) = mpsc::unbounded_channel::<Arc<Pod>>();
                tokio::spawn(async move {
                    while let Some(pod) = receiver.recv().await {
                        counter.observe(&pod);
                    }
                });
                sender
            })
            .collect();
        tokio::spawn(async move {
            let api: Api<Pod> = Api::all(client);
            if let Err(error) = run_floor(&api, strip, &senders).await {
                eprintln!("floor stopped: {error}");
            }
        });
        Started {
            deletes_applied: None,
        }
    }
}

/// A Pod's key in the floor's cache: its namespace and name.
fn key_of(pod: &Pod) -> (Option<String>, String) {
    (
        pod.metadata.namespace.clone(),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

/// The floor's list and watch, until the watch fails.
async fn run_floor(
    api: &Api<Pod>,
    strip: bool,
    senders: &[mpsc::UnboundedSender<Arc<Pod>>],
) -> kube::Result<()> {
    let publish = |pod: &Arc<Pod>| {
        for sender in senders {
            // A closed channel is a subscriber the driver stopped waiting for.
            let _ = sender.send(Arc::clone(pod));
        }
    };
    let (pods, mut version) = list_all(api).await?;
    let mut cache: HashMap<(Option<String>, String), Arc<Pod>> = HashMap::with_capacity(pods.len());
    for mut pod in pods {
        if strip {
            strip_managed_fields(&mut pod);
        }
        let pod = Arc::new(pod);
        publish(&pod);
        cache.insert(key_of(&pod), pod);
    }
    loop {
        let mut events = pin!(api.watch(&WatchParams::default(), &version).await?);
        while let Some(event) = events.try_next().await? {
            let (mut pod, deleted) = match event {
                WatchEvent::Added(pod) | WatchEvent::Modified(pod) => (pod, false),
                WatchEvent::Deleted(pod) => (pod, true),
                WatchEvent::Bookmark(bookmark) => {
                    version = bookmark.metadata.resource_version;
                    continue;
                }
                WatchEvent::Error(status) => {
                    eprintln!("floor: watch error {status:?}");
                    return Ok(());
                }
            };
            if let Some(seen) = &pod.metadata.resource_version {
                version.clone_from(seen);
            }
            if strip {
                strip_managed_fields(&mut pod);
            }
            let key = key_of(&pod);
            let pod = Arc::new(pod);
            publish(&pod);
            if deleted {
                cache.remove(&key);
            } else {
                cache.insert(key, pod);
            }
        }
    }
}

impl WireRunner for TransportWire {
    const NAME: &'static str = "transport";
    const TOLD_OF_DELETES: bool = true;

    fn start(client: Client, _strip: bool, mut subscribers: Vec<Counter>) -> Started {
        tokio::spawn(async move {
            if let Err(error) = run_transport(client, &mut subscribers).await {
                eprintln!("transport stopped: {error}");
            }
        });
        Started {
            deletes_applied: None,
        }
    }
}

/// The transport floor's list and watch, until the watch body ends or fails.
async fn run_transport(client: Client, counters: &mut [Counter]) -> Result<(), String> {
    let api: Api<Pod> = Api::all(client.clone());
    let (pods, version) = list_all(&api).await.map_err(|error| error.to_string())?;
    for pod in &pods {
        for counter in counters.iter_mut() {
            counter.observe(pod);
        }
    }
    drop(pods);
    let request = kube::core::Request::new(api.resource_url())
        .watch(&WatchParams::default(), &version)
        .map_err(|error| error.to_string())?;
    let body = client
        .request_stream(request)
        .await
        .map_err(|error| error.to_string())?;
    let mut body = pin!(body);
    loop {
        let read = body.fill_buf().await.map_err(|error| error.to_string())?;
        if read.is_empty() {
            return Ok(());
        }
        let lines = memchr::memchr_iter(b'\n', read).count();
        let length = read.len();
        body.as_mut().consume(length);
        for _ in 0..lines {
            for counter in counters.iter_mut() {
                counter.observe_parts("", length);
            }
        }
    }
}
