//! The compact cache is lossless or refuses (CM1, CM9): objects of several
//! kinds, generated at random, are written through a default store and a
//! compact one, and through a default and a compact informer fed by
//! `builder_from_stream`, and read back read for read. Every read and
//! every notification of the compact side equals the default side's and
//! the object written; an object whose encoding would lose something
//! (here a `Time` with sub-second digits or a `MicroTime` with
//! sub-microsecond ones, which k8s-openapi serializes without them) is
//! kept whole and counted, and every other object is kept encoded.

use std::{collections::BTreeMap, fmt::Debug, sync::Arc};

use futures::StreamExt;
use k8s_openapi::{
    ByteString,
    api::core::v1::{
        ConfigMap, Container, ContainerPort, EnvVar, Event as CoreEvent, EventSeries,
        ObjectReference, Pod, PodCondition, PodSpec, PodStatus, ResourceRequirements, Service,
        ServicePort, ServiceSpec,
    },
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{MicroTime, Time},
        util::intstr::IntOrString,
    },
    jiff::Timestamp,
};
use kube::{
    Resource,
    api::{ApiResource, DynamicObject, GroupVersionKind, ObjectMeta},
};
use kube_informer::unstable::store::Writer;
use kube_informer::{
    Informer, Notification, ObjectKey, SubscribeOptions,
    source::Event,
    store::{CompactCache, CompactStats, Indexers, NAMESPACE_INDEX, Store},
};
use proptest::{prelude::*, test_runner::TestCaseError};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

/// An object kind the properties run over.
trait Sample:
    Resource + Serialize + DeserializeOwned + PartialEq + Clone + Debug + Send + Sync + 'static
{
    /// Whether serializing this object drops part of it: a `Time` with
    /// sub-second digits or a `MicroTime` with sub-microsecond ones. Such
    /// an object must be kept decoded; every other one encoded.
    fn loses_precision(&self) -> bool;
}

fn time_loses(time: Option<&Time>) -> bool {
    time.is_some_and(|t| t.0.subsec_nanosecond() != 0)
}

fn micro_time_loses(time: Option<&MicroTime>) -> bool {
    time.is_some_and(|t| t.0.subsec_nanosecond() % 1_000 != 0)
}

fn meta_loses(meta: &ObjectMeta) -> bool {
    time_loses(meta.creation_timestamp.as_ref()) || time_loses(meta.deletion_timestamp.as_ref())
}

impl Sample for ConfigMap {
    fn loses_precision(&self) -> bool {
        meta_loses(&self.metadata)
    }
}

impl Sample for Pod {
    fn loses_precision(&self) -> bool {
        let status = self.status.as_ref();
        meta_loses(&self.metadata)
            || time_loses(status.and_then(|s| s.start_time.as_ref()))
            || status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| time_loses(c.last_transition_time.as_ref()))
    }
}

impl Sample for CoreEvent {
    fn loses_precision(&self) -> bool {
        meta_loses(&self.metadata)
            || time_loses(self.first_timestamp.as_ref())
            || time_loses(self.last_timestamp.as_ref())
            || micro_time_loses(self.event_time.as_ref())
            || micro_time_loses(
                self.series
                    .as_ref()
                    .and_then(|s| s.last_observed_time.as_ref()),
            )
    }
}

impl Sample for Service {
    fn loses_precision(&self) -> bool {
        meta_loses(&self.metadata)
    }
}

impl Sample for DynamicObject {
    fn loses_precision(&self) -> bool {
        meta_loses(&self.metadata)
    }
}

// ---- generators -------------------------------------------------------

/// The keys written: few, so that objects are replaced and removed; with
/// non-ASCII names and namespaces.
const SLOTS: [(&str, &str); 4] = [
    ("default", "a"),
    ("default", "données-数据"),
    ("team-ü", "a"),
    ("team-ü", "b"),
];

/// Values of the `app` label, the custom index.
const APPS: [&str; 3] = ["web", "db", "ünïcode"];

fn slot_key(slot: usize) -> ObjectKey {
    let (namespace, name) = SLOTS[slot];
    ObjectKey::new(Some(namespace), name).unwrap()
}

/// Any string, control characters and astral planes included.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "\\PC{1,12}",
        any::<String>(),
        "[a-z0-9.-]{1,16}",
    ]
}

/// A large, compressible value: a short text repeated.
fn large_text() -> impl Strategy<Value = String> {
    ("\\PC{1,8}", 0..400usize).prop_map(|(s, n)| s.repeat(n))
}

/// Absent, present and empty, or present with entries.
fn opt_map<V: Debug + Clone + 'static>(
    value: impl Strategy<Value = V> + 'static,
) -> impl Strategy<Value = Option<BTreeMap<String, V>>> {
    prop_oneof![
        Just(None),
        Just(Some(BTreeMap::new())),
        prop::collection::btree_map(text(), value, 1..5).prop_map(Some),
    ]
}

/// Absent, present and empty, or present with items.
fn opt_vec<V: Debug + Clone + 'static>(
    item: impl Strategy<Value = V> + 'static,
) -> impl Strategy<Value = Option<Vec<V>>> {
    prop_oneof![
        Just(None),
        Just(Some(Vec::new())),
        prop::collection::vec(item, 1..4).prop_map(Some),
    ]
}

fn timestamp(nanos: impl Strategy<Value = i32>) -> impl Strategy<Value = Timestamp> {
    // 1970 to 2200.
    (0i64..7_258_118_400, nanos).prop_map(|(s, n)| Timestamp::new(s, n).unwrap())
}

/// Whole seconds as the API server writes them, or sub-second digits as
/// a source fed by hand or a transform may have them.
fn time() -> impl Strategy<Value = Time> {
    timestamp(prop_oneof![Just(0), 0..1_000_000_000]).prop_map(Time)
}

/// Microseconds as the API server writes them, or nanoseconds.
fn micro_time() -> impl Strategy<Value = MicroTime> {
    timestamp(prop_oneof![
        Just(0),
        (0..1_000_000).prop_map(|micros| micros * 1_000),
        0..1_000_000_000,
    ])
    .prop_map(MicroTime)
}

fn meta() -> impl Strategy<Value = ObjectMeta> {
    (
        (
            prop::option::of(prop::sample::select(&APPS[..])),
            opt_map(text()),
        ),
        opt_map(large_text()),
        prop::option::of(time()),
        prop::option::of(time()),
        opt_vec(text()),
        (1u64..1_000_000, prop::option::of(any::<i64>()), text()),
    )
        .prop_map(
            |((app, labels), annotations, created, deleted, finalizers, (rv, generation, uid))| {
                let labels = match (app, labels) {
                    (Some(app), labels) => {
                        let mut labels = labels.unwrap_or_default();
                        labels.insert("app".into(), app.into());
                        Some(labels)
                    }
                    (None, labels) => labels,
                };
                ObjectMeta {
                    labels,
                    annotations,
                    creation_timestamp: created,
                    deletion_timestamp: deleted,
                    finalizers,
                    resource_version: Some(rv.to_string()),
                    generation,
                    uid: Some(uid),
                    ..Default::default()
                }
            },
        )
}

fn config_map() -> impl Strategy<Value = ConfigMap> {
    (
        meta(),
        opt_map(large_text()),
        opt_map(prop::collection::vec(any::<u8>(), 0..512).prop_map(ByteString)),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(metadata, data, binary_data, immutable)| ConfigMap {
            metadata,
            data,
            binary_data,
            immutable,
        })
}

fn quantity() -> impl Strategy<Value = Quantity> {
    prop_oneof![
        prop::sample::select(&["0", "100m", "1.5", "1.5Gi", "1e3", "+12.5", "-1", "0.1Ki"][..])
            .prop_map(str::to_owned),
        text(),
    ]
    .prop_map(Quantity)
}

fn container() -> impl Strategy<Value = Container> {
    (
        text(),
        prop::option::of(text()),
        (opt_map(quantity()), opt_map(quantity())),
        opt_vec((any::<i32>(), prop::option::of(text()))),
        opt_vec((text(), prop::option::of(text()))),
    )
        .prop_map(|(name, image, (limits, requests), ports, env)| Container {
            name,
            image,
            resources: Some(ResourceRequirements {
                limits,
                requests,
                ..Default::default()
            }),
            ports: ports.map(|ports| {
                ports
                    .into_iter()
                    .map(|(container_port, name)| ContainerPort {
                        container_port,
                        name,
                        ..Default::default()
                    })
                    .collect()
            }),
            env: env.map(|env| {
                env.into_iter()
                    .map(|(name, value)| EnvVar {
                        name,
                        value,
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        })
}

fn pod() -> impl Strategy<Value = Pod> {
    let spec = (
        prop::collection::vec(container(), 0..3),
        prop::option::of(text()),
    )
        .prop_map(|(containers, node_name)| PodSpec {
            containers,
            node_name,
            ..Default::default()
        });
    let condition = (
        text(),
        text(),
        prop::option::of(time()),
        prop::option::of(text()),
    )
        .prop_map(
            |(type_, status, last_transition_time, message)| PodCondition {
                type_,
                status,
                last_transition_time,
                message,
                ..Default::default()
            },
        );
    let status = (
        prop::option::of(text()),
        prop::option::of(time()),
        opt_vec(condition),
    )
        .prop_map(|(phase, start_time, conditions)| PodStatus {
            phase,
            start_time,
            conditions,
            ..Default::default()
        });
    (meta(), prop::option::of(spec), prop::option::of(status)).prop_map(
        |(metadata, spec, status)| Pod {
            metadata,
            spec,
            status,
        },
    )
}

fn core_event() -> impl Strategy<Value = CoreEvent> {
    let involved =
        (text(), text(), prop::option::of(text())).prop_map(|(kind, name, uid)| ObjectReference {
            kind: Some(kind),
            name: Some(name),
            uid,
            ..Default::default()
        });
    let series = (
        prop::option::of(any::<i32>()),
        prop::option::of(micro_time()),
    )
        .prop_map(|(count, last_observed_time)| EventSeries {
            count,
            last_observed_time,
        });
    (
        meta(),
        involved,
        (prop::option::of(text()), prop::option::of(any::<String>())),
        (prop::option::of(time()), prop::option::of(time())),
        prop::option::of(micro_time()),
        (prop::option::of(any::<i32>()), prop::option::of(series)),
    )
        .prop_map(
            |(
                metadata,
                involved_object,
                (reason, message),
                (first, last),
                event_time,
                (count, series),
            )| {
                CoreEvent {
                    metadata,
                    involved_object,
                    reason,
                    message,
                    first_timestamp: first,
                    last_timestamp: last,
                    event_time,
                    count,
                    series,
                    ..Default::default()
                }
            },
        )
}

fn service() -> impl Strategy<Value = Service> {
    let target = prop_oneof![
        any::<i32>().prop_map(IntOrString::Int),
        text().prop_map(IntOrString::String),
    ];
    let port = (
        any::<i32>(),
        prop::option::of(target),
        prop::option::of(text()),
        prop::option::of(any::<i32>()),
    )
        .prop_map(|(port, target_port, name, node_port)| ServicePort {
            port,
            target_port,
            name,
            node_port,
            ..Default::default()
        });
    let spec = (opt_vec(port), opt_map(text()), opt_vec(text())).prop_map(
        |(ports, selector, cluster_ips)| ServiceSpec {
            ports,
            selector,
            cluster_ips,
            ..Default::default()
        },
    );
    (meta(), prop::option::of(spec)).prop_map(|(metadata, spec)| Service {
        metadata,
        spec,
        status: None,
    })
}

/// Any JSON value: numbers of each kind (negative, above `i64::MAX`,
/// fractional), nulls, unicode strings, nesting.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn dynamic_object() -> impl Strategy<Value = DynamicObject> {
    // The fields a custom resource has beside its type and metadata (a key
    // named like those would be written twice: see the named test below).
    let data = prop::collection::btree_map(
        text().prop_filter("not a field of the object itself", |k| {
            !["apiVersion", "kind", "metadata"].contains(&k.as_str())
        }),
        json_value(),
        0..5,
    );
    (meta(), data).prop_map(|(metadata, data)| {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
        let mut object =
            DynamicObject::new("", &resource).data(Value::Object(data.into_iter().collect()));
        object.metadata = metadata;
        object
    })
}

/// One write of a script.
#[derive(Debug, Clone)]
enum Step<K> {
    /// Store this object under the slot's key.
    Put(usize, K),
    /// Remove the slot's key.
    Delete(usize),
}

fn steps<K: Sample>(
    object: impl Strategy<Value = K> + 'static,
) -> impl Strategy<Value = Vec<Step<K>>> {
    let step = prop_oneof![
        4 => (0..SLOTS.len(), object).prop_map(|(slot, mut object)| {
            let (namespace, name) = SLOTS[slot];
            object.meta_mut().namespace = Some(namespace.into());
            object.meta_mut().name = Some(name.into());
            Step::Put(slot, object)
        }),
        1 => (0..SLOTS.len()).prop_map(Step::Delete),
    ];
    prop::collection::vec(step, 1..12)
}

// ---- the checks -------------------------------------------------------

/// The custom index: an object's `app` label.
fn app_of<K: Resource>(object: &K) -> Vec<String> {
    object
        .meta()
        .labels
        .iter()
        .flatten()
        .filter(|(k, _)| *k == "app")
        .map(|(_, v)| v.clone())
        .collect()
}

fn indexers<K: Resource + 'static>() -> Indexers<K> {
    Indexers::new().with("app", app_of::<K>)
}

/// Objects by key, as a `list` or `by_index` answered them.
fn by_key<K: Resource>(objects: Vec<Arc<K>>) -> BTreeMap<ObjectKey, Arc<K>> {
    objects
        .into_iter()
        .map(|o| (ObjectKey::from_object(&*o).unwrap(), o))
        .collect()
}

/// Every read of `store` equals what `model` holds, key by key.
fn reads_match<K: Sample>(
    store: &Store<K>,
    model: &BTreeMap<ObjectKey, Arc<K>>,
) -> Result<(), TestCaseError> {
    for (slot, &(namespace, name)) in SLOTS.iter().enumerate() {
        let key = slot_key(slot);
        let expected = model.get(&key).cloned();
        // Twice: the second read of a key may be served by the hot set.
        for _ in 0..2 {
            prop_assert_eq!(store.get(&key), expected.clone(), "get {}", key);
        }
        prop_assert_eq!(
            store.get_by(Some(namespace), name),
            expected.clone(),
            "get_by"
        );
        prop_assert_eq!(
            store.namespace(namespace).get(name),
            expected,
            "namespace view"
        );
    }
    prop_assert_eq!(&by_key(store.list()), model, "list");
    prop_assert_eq!(store.len(), model.len());
    let snapshot: BTreeMap<ObjectKey, Arc<K>> = store.snapshot().into_iter().collect();
    prop_assert_eq!(&snapshot, model, "snapshot");
    for app in APPS {
        let expected: BTreeMap<_, _> = model
            .iter()
            .filter(|(_, o)| app_of(&***o) == [app])
            .map(|(k, o)| (k.clone(), Arc::clone(o)))
            .collect();
        prop_assert_eq!(
            by_key(store.by_index("app", app).unwrap()),
            expected,
            "by_index app {}",
            app
        );
    }
    for namespace in ["default", "team-ü"] {
        let expected: BTreeMap<_, _> = model
            .iter()
            .filter(|(k, _)| k.namespace() == Some(namespace))
            .map(|(k, o)| (k.clone(), Arc::clone(o)))
            .collect();
        prop_assert_eq!(
            by_key(store.by_index(NAMESPACE_INDEX, namespace).unwrap()),
            expected,
            "by_index namespace {}",
            namespace
        );
    }
    Ok(())
}

/// The compact store's counters after `steps`: every write of an object
/// that loses precision refused and counted, every other object encoded.
fn stats_match<K: Sample>(
    stats: CompactStats,
    steps: &[Step<K>],
    model: &BTreeMap<ObjectKey, Arc<K>>,
) -> Result<(), TestCaseError> {
    let lossy_writes = steps
        .iter()
        .filter(|s| matches!(s, Step::Put(_, o) if o.loses_precision()))
        .count();
    let whole = model.values().filter(|o| !o.loses_precision()).count();
    prop_assert_eq!(stats.lossy_encodings, lossy_writes as u64);
    prop_assert_eq!(stats.encoded_objects, whole as u64);
    prop_assert_eq!((stats.encode_failures, stats.decode_failures), (0, 0));
    Ok(())
}

/// CM1, CM5, CM9 on a store: the same writes through a default and a
/// compact store give equal replaced and removed versions and equal reads
/// after every write, all equal to what was written.
fn stores_agree<K: Sample>(steps: &[Step<K>]) -> Result<(), TestCaseError> {
    let plain = Writer::new(indexers::<K>());
    let compact = Writer::compact(indexers::<K>(), CompactCache::default().hot_objects(2));
    let mut model = BTreeMap::new();
    for step in steps {
        match step {
            Step::Put(slot, object) => {
                let object = Arc::new(object.clone());
                let expected = model.insert(slot_key(*slot), Arc::clone(&object));
                let a = plain
                    .apply_upsert(slot_key(*slot), Arc::clone(&object))
                    .unwrap();
                let b = compact.apply_upsert(slot_key(*slot), object).unwrap();
                prop_assert_eq!(&a, &expected, "default store's replaced version");
                prop_assert_eq!(&b, &expected, "compact store's replaced version");
            }
            Step::Delete(slot) => {
                let expected = model.remove(&slot_key(*slot));
                prop_assert_eq!(&plain.apply_delete(&slot_key(*slot)), &expected);
                prop_assert_eq!(&compact.apply_delete(&slot_key(*slot)), &expected);
            }
        }
        reads_match(&plain.reader(), &model)?;
        reads_match(&compact.reader(), &model)?;
    }
    stats_match(compact.reader().compact_stats().unwrap(), steps, &model)
}

/// A notification with its objects, comparable.
#[derive(Debug, PartialEq)]
enum Seen<K> {
    Added(Arc<K>),
    Updated(Arc<K>, Arc<K>),
    Deleted(Arc<K>),
}

/// The watch events that make `steps`, and the notifications, key by key,
/// a subscriber must see for them.
#[allow(clippy::type_complexity)]
fn events_of<K: Sample>(
    steps: &[Step<K>],
) -> (
    Vec<Event<K>>,
    BTreeMap<ObjectKey, Vec<Seen<K>>>,
    BTreeMap<ObjectKey, Arc<K>>,
) {
    let mut events = Vec::new();
    let mut expected: BTreeMap<ObjectKey, Vec<Seen<K>>> = BTreeMap::new();
    let mut model: BTreeMap<ObjectKey, Arc<K>> = BTreeMap::new();
    for step in steps {
        match step {
            Step::Put(slot, object) => {
                let key = slot_key(*slot);
                let object = Arc::new(object.clone());
                let seen = match model.insert(key.clone(), Arc::clone(&object)) {
                    Some(old) => {
                        events.push(Event::Modified((*object).clone()));
                        Seen::Updated(old, object)
                    }
                    None => {
                        events.push(Event::Added((*object).clone()));
                        Seen::Added(object)
                    }
                };
                expected.entry(key).or_default().push(seen);
            }
            Step::Delete(slot) => {
                let key = slot_key(*slot);
                if let Some(old) = model.remove(&key) {
                    events.push(Event::Deleted((*old).clone()));
                    expected.entry(key).or_default().push(Seen::Deleted(old));
                }
            }
        }
    }
    (events, expected, model)
}

/// Runs an informer over `events` with one subscriber; returns what the
/// subscriber saw, key by key, and the informer's store.
async fn observe<K: Sample>(
    events: Vec<Event<K>>,
    compact: bool,
) -> (BTreeMap<ObjectKey, Vec<Seen<K>>>, Store<K>) {
    let source = futures::stream::iter(events.into_iter().map(Ok::<_, std::io::Error>));
    let mut builder = Informer::builder_from_stream(source).indexers(indexers());
    if compact {
        builder = builder.compact_cache(CompactCache::default().hot_objects(2));
    }
    let informer = builder.build();
    let subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    informer.run().await.unwrap();
    let mut seen: BTreeMap<ObjectKey, Vec<Seen<K>>> = BTreeMap::new();
    let notifications: Vec<Notification<K>> = subscription.collect().await;
    for notification in notifications {
        let (key, item) = match notification {
            Notification::Added { object, .. } => (object.clone(), Seen::Added(object)),
            Notification::Updated { old, new, resync } => {
                assert!(!resync, "no resync was asked for");
                (new.clone(), Seen::Updated(old, new))
            }
            Notification::Deleted { object, .. } => (object.clone(), Seen::Deleted(object)),
        };
        seen.entry(ObjectKey::from_object(&*key).unwrap())
            .or_default()
            .push(item);
    }
    (seen, informer.store())
}

/// CM1, CM9 through an informer: a default and a compact informer fed the
/// same events tell their subscribers the same, key by key (each `Updated`
/// carrying as `old` the object the notification before it carried), and
/// their stores answer alike.
fn informers_agree<K: Sample>(steps: &[Step<K>]) -> Result<(), TestCaseError> {
    let (events, expected, model) = events_of(steps);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ((plain_seen, plain), (compact_seen, compact)) = runtime.block_on(async {
        (
            observe(events.clone(), false).await,
            observe(events, true).await,
        )
    });
    prop_assert_eq!(&plain_seen, &expected, "the default informer");
    prop_assert_eq!(&compact_seen, &expected, "the compact informer");
    reads_match(&plain, &model)?;
    reads_match(&compact, &model)?;
    stats_match(compact.compact_stats().unwrap(), steps, &model)
}

/// Both checks: through stores, then through informers.
fn round_trips<K: Sample>(steps: &[Step<K>]) -> Result<(), TestCaseError> {
    stores_agree(steps)?;
    informers_agree(steps)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn cm9_config_maps_with_large_and_binary_data_read_back_equal(steps in steps(config_map())) {
        round_trips(&steps)?;
    }

    #[test]
    fn cm9_pods_with_quantities_and_conditions_read_back_equal(steps in steps(pod())) {
        round_trips(&steps)?;
    }

    #[test]
    fn cm9_events_with_micro_times_and_sub_second_times_read_back_equal(steps in steps(core_event())) {
        round_trips(&steps)?;
    }

    #[test]
    fn cm9_services_with_int_or_string_ports_read_back_equal(steps in steps(service())) {
        round_trips(&steps)?;
    }

    #[test]
    fn cm9_dynamic_objects_with_any_json_read_back_equal(steps in steps(dynamic_object())) {
        round_trips(&steps)?;
    }
}

/// A ConfigMap as a source fed by hand carries it: the creation time with
/// nanoseconds.
fn stamped(rv: &str, created: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {
            "namespace": "default",
            "name": "stamped",
            "resourceVersion": rv,
            "creationTimestamp": created,
        },
        "data": {"rv": rv},
    }))
    .unwrap()
}

/// CM9: an object whose `creationTimestamp` has sub-second digits, fed
/// through `builder_from_stream`, is read back from a compact store with
/// them, and the subscriber's `Updated` carries as `old` the very object
/// its `Added` carried; the store counts it and keeps it whole.
#[tokio::test]
async fn cm9_a_sub_second_creation_timestamp_reads_back_equal() {
    let created = "2026-03-01T10:11:20.123456789Z";
    let (v1, v2) = (stamped("1", created), stamped("2", created));
    assert_eq!(
        v1.metadata
            .creation_timestamp
            .as_ref()
            .unwrap()
            .0
            .subsec_nanosecond(),
        123_456_789
    );
    let events = futures::stream::iter([
        Ok::<_, std::io::Error>(Event::Added(v1.clone())),
        Ok(Event::Modified(v2.clone())),
    ]);
    let informer = Informer::builder_from_stream(events)
        .compact_cache(CompactCache::default())
        .build();
    let subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    informer.run().await.unwrap();
    let notifications: Vec<_> = subscription.collect().await;
    let [
        Notification::Added { object: added, .. },
        Notification::Updated { old, new, .. },
    ] = &notifications[..]
    else {
        panic!("an add and an update: {notifications:?}");
    };
    assert_eq!(**added, v1);
    assert_eq!(old, added, "the update starts from what was added");
    assert_eq!(**new, v2);
    let store = informer.store();
    let read = store.get_by(Some("default"), "stamped").unwrap();
    assert_eq!(*read, v2);
    assert_eq!(
        read.metadata
            .creation_timestamp
            .as_ref()
            .unwrap()
            .0
            .to_string(),
        created
    );
    let stats = store.compact_stats().unwrap();
    assert_eq!((stats.lossy_encodings, stats.encoded_objects), (2, 0));

    // The same object with whole seconds, as the API server writes it, is
    // kept encoded.
    let whole = stamped("3", "2026-03-01T10:11:20Z");
    let writer = Writer::compact(Indexers::new(), CompactCache::default());
    let key = ObjectKey::from_object(&whole).unwrap();
    writer
        .apply_upsert(key.clone(), Arc::new(whole.clone()))
        .unwrap();
    assert_eq!(*writer.reader().get(&key).unwrap(), whole);
    let stats = writer.reader().compact_stats().unwrap();
    assert_eq!((stats.lossy_encodings, stats.encoded_objects), (0, 1));
}

/// CM9: a custom resource whose data repeats a field of the object itself
/// (`kind`) is written twice over by serde, so its encoding cannot read
/// back equal: it is kept whole, and the objects around it stay encoded.
#[test]
fn cm9_a_dynamic_object_whose_data_repeats_its_kind_is_kept_whole() {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    let widget = |name: &str, data: Value| {
        Arc::new(
            DynamicObject::new(name, &resource)
                .within("default")
                .data(data),
        )
    };
    let writer = Writer::compact(Indexers::new(), CompactCache::default());
    let store = writer.reader();
    let objects = [
        widget("plain", json!({"spec": {"replicas": 1}})),
        widget("odd", json!({"kind": "Gadget", "spec": {"replicas": 2}})),
        widget("after", json!({"spec": {"replicas": 3}})),
    ];
    for object in &objects {
        let key = ObjectKey::from_object(&**object).unwrap();
        writer.apply_upsert(key, Arc::clone(object)).unwrap();
    }
    for object in &objects {
        let key = ObjectKey::from_object(&**object).unwrap();
        assert_eq!(store.get(&key).as_ref(), Some(object));
    }
    let stats = store.compact_stats().unwrap();
    assert_eq!(stats.encoded_objects, 2, "{stats:?}");
    assert_eq!(
        stats.lossy_encodings + stats.encode_failures,
        1,
        "{stats:?}"
    );
}
