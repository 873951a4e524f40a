//! The decode options of `InformerBuilder` (`decode_threads`,
//! `plain_decode`) change how objects are decoded, never what: an informer
//! with either lists and watches the same objects as a default one, with
//! the same errors, and `decode_threads(1)` keeps all decoding on the
//! thread that reads.

use std::{
    borrow::Cow,
    collections::HashMap,
    sync::Mutex,
    thread::{self, ThreadId},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{
    NamespaceResourceScope,
    api::core::v1::ConfigMap,
    apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta},
};
use kube::{Api, Resource};
use kube_informer::{Informer, InformerBuilder, Store, SubscribeOptions};
use kube_informer_testing::{FakeApiServer, RequestMatch, ResourceType, WatchFault};
use serde::{Deserialize, Deserializer};
use serde_json::json;

/// Enough data that a page of 500 is cut into several pieces.
fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            labels: Some([("app".to_string(), "web".to_string())].into()),
            managed_fields: Some(vec![ManagedFieldsEntry {
                manager: Some("kubectl".into()),
                operation: Some("Apply".into()),
                ..Default::default()
            }]),
            ..Default::default()
        },
        data: Some(
            (0..8)
                .map(|i| (format!("key-{i}"), format!("{name}-{}", "v".repeat(120))))
                .collect(),
        ),
        ..Default::default()
    }
}

/// A ConfigMap whose data is not strings: a decode error, listed or watched.
fn bad(server: &FakeApiServer, name: &str) {
    server
        .create_value(
            &ResourceType::of::<ConfigMap>(),
            json!({"metadata": {"namespace": "default", "name": name}, "data": {"k": 3}}),
        )
        .unwrap();
}

/// Options set on a builder.
type Configure<K> = fn(InformerBuilder<K>) -> InformerBuilder<K>;

/// Waits until `done` holds of the informer's store, checking after each
/// notification (the store is updated before subscribers hear of it);
/// fails with `what` after 30 s.
async fn until<K>(informer: &Informer<K>, what: &str, done: impl Fn(&Store<K>) -> bool)
where
    K: Resource + Send + Sync + 'static,
{
    let store = informer.store();
    let mut changes = informer
        .subscribe(SubscribeOptions::default())
        .expect("the informer runs");
    tokio::time::timeout(Duration::from_secs(30), async {
        while !done(&store) {
            changes.next().await.expect("the informer stopped");
        }
    })
    .await
    .expect(what);
}

/// What an informer configured by `configure` ends with, given the same
/// server history: its store (by name) and its errors, in order.
async fn observe(configure: Configure<ConfigMap>) -> (Vec<ConfigMap>, Vec<String>) {
    let server = FakeApiServer::start().await;
    server
        .bulk_create((0..600).map(|i| cm(&format!("listed-{i:03}"))))
        .unwrap();
    bad(&server, "bad-listed");
    // R7: the watch opens with an object of another kind.
    server.inject_watch_fault(RequestMatch::Watch, 0, WatchFault::WrongKind);

    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let informer = configure(Informer::builder(api)).build();
    let mut errors = informer.errors();
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();

    // A burst on the watch, then single events, one of them bad.
    server
        .bulk_create((0..600).map(|i| cm(&format!("watched-{i:03}"))))
        .unwrap();
    bad(&server, "bad-watched");
    let mut changed = cm("listed-007");
    changed.data = Some([("k".to_string(), "changed".to_string())].into());
    server.update(&changed).unwrap();
    server
        .delete::<ConfigMap>(Some("default"), "listed-008")
        .unwrap();
    server.create(&cm("last")).unwrap();

    until(
        &informer,
        "the informer did not see the last object",
        |store| store.get_by(Some("default"), "last").is_some(),
    )
    .await;

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let error = tokio::time::timeout(Duration::from_secs(60), errors.next())
            .await
            .unwrap_or_else(|_| panic!("3 errors expected, got {seen:?}"))
            .expect("errors ended");
        seen.push(match &error {
            kube_informer::informer::Error::Source(source) => format!("{source:?} / {source}"),
            other => format!("not a source error: {other:?}"),
        });
    }
    let mut objects: Vec<ConfigMap> = informer
        .store()
        .list()
        .iter()
        .map(|cm| (**cm).clone())
        .collect();
    objects.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    take_server_times(&server, &mut objects);
    informer.stop();
    run.await.unwrap().unwrap();
    (objects, seen)
}

/// Checks the times the server's clock wrote into `objects` (their
/// `creationTimestamp` and `managedFields` times) against the server's own
/// objects, then clears them. That clock is the server's start plus the
/// whole seconds since (GN2 of kube-informer-testing): on a real clock an
/// object written a second later on a slower run carries another time, so
/// runs with other options are compared on everything else.
fn take_server_times(server: &FakeApiServer, objects: &mut [ConfigMap]) {
    let times = |object: &serde_json::Value, managed_fields: bool| {
        let metadata = &object["metadata"];
        let entries = metadata["managedFields"].as_array().cloned();
        let managed = entries
            .filter(|_| managed_fields)
            .unwrap_or_default()
            .iter()
            .map(|entry| entry["time"].clone())
            .collect::<Vec<_>>();
        (metadata["creationTimestamp"].clone(), managed)
    };
    let on_server: HashMap<String, serde_json::Value> = server
        .objects_value(&ResourceType::of::<ConfigMap>())
        .into_iter()
        .map(|object| {
            (
                object["metadata"]["name"].as_str().unwrap().to_owned(),
                object,
            )
        })
        .collect();
    for object in objects {
        let name = object.metadata.name.clone().unwrap();
        let managed_fields = object.metadata.managed_fields.is_some();
        assert_eq!(
            times(&serde_json::to_value(&*object).unwrap(), managed_fields),
            times(&on_server[&name], managed_fields),
            "{name}: the server's times"
        );
        object.metadata.creation_timestamp = None;
        for entry in object.metadata.managed_fields.iter_mut().flatten() {
            entry.time = None;
        }
    }
}

#[tokio::test]
async fn r7_r11_decode_options_list_and_watch_what_the_default_does() {
    let (objects, errors) = observe(|b| b).await;
    assert_eq!(objects.len(), 600 - 1 + 600 + 1);
    let changed = objects
        .iter()
        .find(|object| object.metadata.name.as_deref() == Some("listed-007"))
        .unwrap();
    assert_eq!(changed.data.as_ref().unwrap()["k"], "changed");
    assert!(objects[0].metadata.managed_fields.is_some());
    assert!(errors[0].contains("list item"), "{errors:?}");
    assert!(errors[1].starts_with("WrongKind"), "{errors:?}");
    assert!(errors[2].contains("watch object"), "{errors:?}");

    let options: [(&str, Configure<ConfigMap>); 4] = [
        ("decode_threads(1)", |b| b.decode_threads(1)),
        ("decode_threads(0)", |b| b.decode_threads(0)),
        ("plain_decode()", |b| b.plain_decode()),
        ("plain_decode().decode_threads(1)", |b| {
            b.plain_decode().decode_threads(1)
        }),
    ];
    for (name, configure) in options {
        let (other_objects, other_errors) = observe(configure).await;
        assert!(other_objects == objects, "{name}: other objects");
        assert_eq!(other_errors, errors, "{name}");
    }
}

/// managedFields are left out with the plain decoder too (it decodes them;
/// the FIFO clears them).
#[tokio::test]
async fn f11_plain_decode_strips_managed_fields_when_asked() {
    let (tuned, tuned_errors) = observe(|b| b.strip_managed_fields()).await;
    assert!(
        tuned
            .iter()
            .all(|object| object.metadata.managed_fields.is_none())
    );
    let (plain, plain_errors) = observe(|b| b.plain_decode().strip_managed_fields()).await;
    assert!(plain == tuned, "other objects");
    assert_eq!(plain_errors, tuned_errors);
}

/// Where a [`Recorded`] was decoded: on which thread, and by which
/// deserializer (its type's name).
#[derive(Debug)]
struct Decoding {
    thread: ThreadId,
    thread_name: Option<String>,
    deserializer: &'static str,
}

/// The decodings of [`Recorded`] objects since the last `take`.
static DECODINGS: Mutex<Vec<Decoding>> = Mutex::new(Vec::new());

/// A ConfigMap that notes where it was decoded.
#[derive(Clone, Debug)]
struct Recorded(ConfigMap);

impl<'de> Deserialize<'de> for Recorded {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let current = thread::current();
        DECODINGS.lock().unwrap().push(Decoding {
            thread: current.id(),
            thread_name: current.name().map(str::to_owned),
            deserializer: std::any::type_name::<D>(),
        });
        ConfigMap::deserialize(deserializer).map(Recorded)
    }
}

impl Resource for Recorded {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "ConfigMap".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "configmaps".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.0.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

/// Lists 600 objects and watches a burst of 600 with an informer
/// configured by `configure`, on this test's single runtime thread; where
/// they were decoded. (The tests that call it must not run at once.)
async fn decodings(configure: Configure<Recorded>) -> Vec<Decoding> {
    let server = FakeApiServer::start().await;
    server
        .bulk_create((0..600).map(|i| cm(&format!("listed-{i:03}"))))
        .unwrap();
    DECODINGS.lock().unwrap().clear();
    let api: Api<Recorded> = Api::default_namespaced(server.client());
    let informer = configure(Informer::builder(api)).build();
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    server
        .bulk_create((0..600).map(|i| cm(&format!("watched-{i:03}"))))
        .unwrap();
    until(&informer, "the informer did not see the burst", |store| {
        store.len() >= 1200
    })
    .await;
    informer.stop();
    run.await.unwrap().unwrap();
    std::mem::take(&mut *DECODINGS.lock().unwrap())
}

// A current-thread runtime: the thread that reads is this test's thread.
// One test, so that nothing else decodes `Recorded`s meanwhile.
#[tokio::test]
async fn r11_decode_threads_1_stays_on_the_reading_thread_and_plain_decode_goes_plain() {
    let here = thread::current().id();
    let tuned = |decoding: &Decoding| decoding.deserializer.contains("Hinted");

    // With several workers, big pages and bursts are decoded by the
    // runtime's workers (in pieces, as tasks), on no thread of the crate's.
    let default = thread::spawn(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-worker")
            .enable_all()
            .build()
            .unwrap()
            .block_on(decodings(|b| b))
    })
    .join()
    .unwrap();
    assert_eq!(default.len(), 1200);
    let off_workers: Vec<_> = default
        .iter()
        .filter(|d| d.thread_name.as_deref() != Some("test-worker"))
        .collect();
    assert!(off_workers.is_empty(), "not on a worker: {off_workers:?}");
    assert!(default.iter().all(tuned), "{:?}", default[0]);

    // On a current-thread runtime, everything where it is read.
    let current = decodings(|b| b).await;
    assert_eq!(current.len(), 1200);
    assert!(current.iter().all(|d| d.thread == here));

    let limited = decodings(|b| b.decode_threads(1)).await;
    assert_eq!(limited.len(), 1200);
    let elsewhere: Vec<_> = limited.iter().filter(|d| d.thread != here).collect();
    assert!(elsewhere.is_empty(), "decoded elsewhere: {elsewhere:?}");

    // serde_json's own deserializer, straight.
    let plain = decodings(|b| b.plain_decode()).await;
    assert_eq!(plain.len(), 1200);
    let wrapped: Vec<_> = plain.iter().filter(|d| tuned(d)).collect();
    assert!(wrapped.is_empty(), "not plain: {:?}", wrapped.first());
    assert!(
        plain[0]
            .deserializer
            .starts_with("&mut serde_json::de::Deserializer"),
        "{:?}",
        plain[0]
    );
}
