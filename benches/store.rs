//! Store locking candidates: a writer doing upserts while 0 or 2 reader
//! threads do `get` and `by_index`.
//!
//! (a) `Store`: one `parking_lot::RwLock` over objects and indexes.
//! (b) dashmap for objects plus a separately locked index; to keep the
//!     "no object without its index entries" invariant the writer holds the
//!     index write lock while it updates both, and `by_index` holds the index
//!     read lock while it reads objects.
//! A sharded-lock variant (c) would need that same global index lock, since
//! index values cross shards, so it is (b) with another map.
//!
//! `store_write_pod` is what one write costs in each mode on a realistic
//! Pod: an insert (index values, and in the compact mode the encoding and
//! its check, CM9) and an update through `apply_upsert` (that plus, in the
//! compact mode, decoding the replaced version). `compact_parts` splits the
//! compact mode's share into its steps.

use std::{
    collections::{HashMap, HashSet},
    hint::black_box,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dashmap::DashMap;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube_informer::unstable::store::Writer;
use kube_informer::{
    ObjectKey,
    store::{CompactCache, Indexers, Store},
};
use parking_lot::RwLock;

const OBJECTS: usize = 10_000;
const APPS: usize = 10;

fn app_of(cm: &ConfigMap) -> Vec<String> {
    cm.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app").cloned())
        .into_iter()
        .collect()
}

fn object(i: usize, app: usize) -> (ObjectKey, Arc<ConfigMap>) {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(format!("ns{}", i % 20));
    cm.metadata.name = Some(format!("cm-{i}"));
    cm.metadata.labels = Some([("app".to_string(), format!("app{app}"))].into());
    (ObjectKey::from_object(&cm).unwrap(), Arc::new(cm))
}

trait Candidate: Send + Sync + 'static {
    fn upsert(&self, key: ObjectKey, obj: Arc<ConfigMap>);
    fn get(&self, key: &ObjectKey) -> Option<Arc<ConfigMap>>;
    fn by_app(&self, app: &str) -> Vec<Arc<ConfigMap>>;
}

/// Candidate (a): the writer and a reader of one store.
struct OneLock {
    writer: Writer<ConfigMap>,
    reader: Store<ConfigMap>,
}

impl OneLock {
    fn new(indexers: Indexers<ConfigMap>) -> Self {
        let writer = Writer::new(indexers);
        let reader = writer.reader();
        Self { writer, reader }
    }
}

impl Candidate for OneLock {
    fn upsert(&self, key: ObjectKey, obj: Arc<ConfigMap>) {
        self.writer.apply_upsert(key, obj).unwrap();
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<ConfigMap>> {
        self.reader.get(key)
    }
    fn by_app(&self, app: &str) -> Vec<Arc<ConfigMap>> {
        self.reader.by_index("by-app", app).unwrap()
    }
}

/// Candidate (b).
#[derive(Default)]
struct DashStore {
    objects: DashMap<ObjectKey, Arc<ConfigMap>>,
    index: RwLock<HashMap<String, HashSet<ObjectKey>>>,
}

impl Candidate for DashStore {
    fn upsert(&self, key: ObjectKey, obj: Arc<ConfigMap>) {
        let new = app_of(&obj);
        let mut index = self.index.write();
        let old = self.objects.insert(key.clone(), obj);
        let old = old.map(|o| app_of(&o)).unwrap_or_default();
        if old != new {
            for v in old {
                if let Some(keys) = index.get_mut(&v) {
                    keys.remove(&key);
                }
            }
            for v in new {
                index.entry(v).or_default().insert(key.clone());
            }
        }
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<ConfigMap>> {
        self.objects.get(key).map(|o| Arc::clone(&o))
    }
    fn by_app(&self, app: &str) -> Vec<Arc<ConfigMap>> {
        let index = self.index.read();
        index
            .get(app)
            .into_iter()
            .flatten()
            .filter_map(|k| self.objects.get(k).map(|o| Arc::clone(&o)))
            .collect()
    }
}

/// Time for `iters` upserts while `readers` threads read.
fn run<C: Candidate>(store: Arc<C>, readers: usize, iters: u64) -> Duration {
    let writes: Vec<_> = (0..iters as usize)
        .map(|n| object(n % OBJECTS, (n / OBJECTS + 1) % APPS))
        .collect();
    let keys: Vec<_> = (0..OBJECTS).map(|i| object(i, 0).0).collect();
    let keys = Arc::new(keys);
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..readers)
        .map(|r| {
            let (store, stop, keys) = (store.clone(), stop.clone(), keys.clone());
            thread::spawn(move || {
                let mut i = r;
                while !stop.load(Ordering::Relaxed) {
                    black_box(store.get(&keys[i % OBJECTS]));
                    if i % 64 == 0 {
                        black_box(store.by_app(&format!("app{}", i % APPS)));
                    }
                    i += 1;
                }
            })
        })
        .collect();
    let start = Instant::now();
    for (k, o) in writes {
        store.upsert(k, o);
    }
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    elapsed
}

/// Time for `iters` reads (a `get`, and a `by_index` every 64th) while a
/// writer thread keeps upserting (or not).
fn read_while_writing<C: Candidate>(store: Arc<C>, writer: bool, iters: u64) -> Duration {
    let keys: Vec<_> = (0..OBJECTS).map(|i| object(i, 0).0).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let background = writer.then(|| {
        let (store, stop) = (store.clone(), stop.clone());
        let writes: Vec<_> = (0..OBJECTS)
            .map(|i| object(i, 1 + i % (APPS - 1)))
            .collect();
        thread::spawn(move || {
            let mut round = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let (k, o) = &writes[round % OBJECTS];
                store.upsert(k.clone(), Arc::clone(o));
                round += 1;
            }
        })
    });
    let start = Instant::now();
    for i in 0..iters as usize {
        black_box(store.get(&keys[i % OBJECTS]));
        if i % 64 == 0 {
            black_box(store.by_app(&format!("app{}", i % APPS)));
        }
    }
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = background {
        t.join().unwrap();
    }
    elapsed
}

fn fill<C: Candidate>(store: &C) {
    for i in 0..OBJECTS {
        let (k, o) = object(i, 0);
        store.upsert(k, o);
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("store_upsert");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    for readers in [0usize, 2] {
        group.bench_with_input(
            BenchmarkId::new("rwlock_map_and_indexes", readers),
            &readers,
            |b, &readers| {
                let store = Arc::new(OneLock::new(
                    Indexers::<ConfigMap>::new().with("by-app", app_of),
                ));
                fill(&*store);
                b.iter_custom(|iters| run(store.clone(), readers, iters));
            },
        );
        group.bench_with_input(
            BenchmarkId::new("dashmap_plus_index_lock", readers),
            &readers,
            |b, &readers| {
                let store = Arc::new(DashStore::default());
                fill(&*store);
                b.iter_custom(|iters| run(store.clone(), readers, iters));
            },
        );
    }
    group.finish();

    let mut group = c.benchmark_group("store_read");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    for writer in [false, true] {
        let label = if writer { "1_writer" } else { "no_writer" };
        group.bench_function(BenchmarkId::new("rwlock_map_and_indexes", label), |b| {
            let store = Arc::new(OneLock::new(
                Indexers::<ConfigMap>::new().with("by-app", app_of),
            ));
            fill(&*store);
            b.iter_custom(|iters| read_while_writing(store.clone(), writer, iters));
        });
        group.bench_function(BenchmarkId::new("dashmap_plus_index_lock", label), |b| {
            let store = Arc::new(DashStore::default());
            fill(&*store);
            b.iter_custom(|iters| read_while_writing(store.clone(), writer, iters));
        });
    }
    group.finish();
}

/// A Pod as a ReplicaSet makes it and a kubelet reports on it (≈ 3 KB of
/// JSON): labels, an ownerReference, two containers with env, ports,
/// resources and mounts, and a status with conditions. `version` changes
/// its resourceVersion and a condition's time, as an update does.
fn pod(index: usize, version: usize) -> Pod {
    let app = format!("app{}", index % APPS);
    let name = format!("{app}-7d9f8c6b5-{index:05}");
    let time = |seconds: usize| {
        format!(
            "2026-11-01T{:02}:{:02}:{:02}Z",
            (seconds / 3_600) % 24,
            (seconds / 60) % 60,
            seconds % 60
        )
    };
    let container = |name: &str, port: u16| {
        serde_json::json!({
            "name": name,
            "image": format!("registry.example.com/{name}:1.{}.{}", index % 9, index % 31),
            "env": [{"name": "APP", "value": app}, {"name": "LOG_LEVEL", "value": "info"},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "ports": [{"containerPort": port, "name": "http", "protocol": "TCP"}],
            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"},
                          "requests": {"cpu": "100m", "memory": "128Mi"}},
            "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                              "name": "kube-api-access", "readOnly": true}],
            "terminationMessagePath": "/dev/termination-log",
            "imagePullPolicy": "IfNotPresent",
        })
    };
    let status = |name: &str| {
        serde_json::json!({
            "name": name, "ready": true, "restartCount": version % 3, "started": true,
            "image": format!("registry.example.com/{name}:1.{}.{}", index % 9, index % 31),
            "imageID": format!("registry.example.com/{name}@sha256:{index:064x}"),
            "containerID": format!("containerd://{index:064x}"),
            "state": {"running": {"startedAt": time(index + 30)}},
        })
    };
    let conditions: Vec<_> = ["Initialized", "Ready", "ContainersReady", "PodScheduled"]
        .iter()
        .map(|kind| {
            serde_json::json!({"type": kind, "status": "True",
                               "lastTransitionTime": time(index + 60 + version)})
        })
        .collect();
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": format!("ns{}", index % 20),
            "uid": format!("{index:08x}-0000-4000-8000-{version:012x}"),
            "resourceVersion": format!("{}", index * 1_000 + version),
            "creationTimestamp": time(index),
            "generateName": format!("{app}-7d9f8c6b5-"),
            "labels": {"app": app, "pod-template-hash": "7d9f8c6b5", "tier": "backend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": time(index)},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": format!("{app}-7d9f8c6b5"), "uid": format!("{index:08x}-1111-4000-8000-000000000000"),
                                 "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {
            "containers": [container("server", 8080), container("sidecar", 9090)],
            "nodeName": format!("node-{:03}", index % 400),
            "serviceAccountName": "default",
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
        },
        "status": {
            "phase": "Running",
            "hostIP": "192.0.2.10",
            "podIP": format!("10.{}.{}.{}", index % 64, (index / 64) % 256, 2 + index % 250),
            "startTime": time(index + 5),
            "qosClass": "Burstable",
            "conditions": conditions,
            "containerStatuses": [status("server"), status("sidecar")],
        },
    }))
    .expect("the fixture is a Pod")
}

/// How many Pods a write bench cycles through: distinct keys, so a
/// compact store decodes each replaced version (nothing is hot).
const POD_POOL: usize = 1_000;

fn pod_store(compact: bool) -> Writer<Pod> {
    let indexers = Indexers::<Pod>::new().with("by-app", |p: &Pod| {
        p.metadata
            .labels
            .iter()
            .flatten()
            .filter(|(k, _)| *k == "app")
            .map(|(_, v)| v.clone())
            .collect()
    });
    let writer = if compact {
        Writer::compact(indexers, CompactCache::default())
    } else {
        Writer::new(indexers)
    };
    // The first writes make the compact store's dictionary, which the
    // writes measured then compress against.
    for i in 0..16 {
        let p = pod(POD_POOL + i, 0);
        writer
            .apply_upsert(ObjectKey::from_object(&p).unwrap(), Arc::new(p))
            .unwrap();
    }
    writer
}

type Versions = Vec<(ObjectKey, Arc<Pod>)>;

fn pod_versions(version: usize) -> Versions {
    (0..POD_POOL)
        .map(|i| {
            let p = pod(i, version);
            (ObjectKey::from_object(&p).unwrap(), Arc::new(p))
        })
        .collect()
}

/// Time for `iters` inserts of new keys: each batch of up to `POD_POOL`
/// goes into a store of its own, made and dropped outside the clock.
fn insert_pods(compact: bool, pods: &Versions, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters as usize;
    while left > 0 {
        let batch = left.min(POD_POOL);
        let writer = pod_store(compact);
        let start = Instant::now();
        for (k, p) in &pods[..batch] {
            black_box(writer.apply_upsert(k.clone(), Arc::clone(p)).unwrap());
        }
        total += start.elapsed();
        drop(writer);
        left -= batch;
    }
    total
}

/// Time for `iters` updates of held keys, each handing back the version
/// it replaced: the store holds `versions[0]`, and writes go from one
/// version to the other, batch by batch.
fn update_pods(writer: &Writer<Pod>, versions: &[Versions; 2], iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters as usize;
    let mut next = 1;
    while left > 0 {
        let batch = left.min(POD_POOL);
        let start = Instant::now();
        for (k, p) in &versions[next][..batch] {
            black_box(writer.apply_upsert(k.clone(), Arc::clone(p)).unwrap());
        }
        total += start.elapsed();
        // Bring the rest of the keys to the same version, off the clock.
        for (k, p) in &versions[next][batch..] {
            writer.apply_upsert(k.clone(), Arc::clone(p)).unwrap();
        }
        next = 1 - next;
        left -= batch;
    }
    total
}

fn bench_pod_writes(c: &mut Criterion) {
    let versions = [pod_versions(0), pod_versions(1)];
    let mut group = c.benchmark_group("store_write_pod");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    for compact in [false, true] {
        let mode = if compact { "compact" } else { "default" };
        group.bench_function(BenchmarkId::new("insert", mode), |b| {
            b.iter_custom(|iters| insert_pods(compact, &versions[0], iters));
        });
        let writer = pod_store(compact);
        for (k, p) in &versions[0] {
            writer.apply_upsert(k.clone(), Arc::clone(p)).unwrap();
        }
        group.bench_function(BenchmarkId::new("update", mode), |b| {
            b.iter_custom(|iters| update_pods(&writer, &versions, iters));
        });
    }
    group.finish();

    // The compact mode's steps on one Pod: encoding, decompressing (against
    // a dictionary of eight other Pods, as the store's), decoding, and the
    // comparison that checks a decode is equal to what was written.
    let p = pod(1, 0);
    let encoded = rmp_serde::to_vec_named(&p).unwrap();
    let decoded: Pod = rmp_serde::from_slice(&encoded).unwrap();
    let dictionary: Vec<u8> = (100..108)
        .flat_map(|i| rmp_serde::to_vec_named(&pod(i, 0)).unwrap())
        .collect();
    let block = lz4_flex::block::compress_with_dict(&encoded, &dictionary);
    let mut group = c.benchmark_group("compact_parts");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    let mut buffer = Vec::new();
    group.bench_function("encode", |b| {
        b.iter(|| {
            buffer.clear();
            rmp_serde::encode::write_named(&mut buffer, black_box(&p)).unwrap();
        })
    });
    let mut decompressed = vec![0; encoded.len()];
    group.bench_function("decompress", |b| {
        b.iter(|| {
            lz4_flex::block::decompress_into_with_dict(
                black_box(&block),
                &mut decompressed,
                &dictionary,
            )
            .unwrap()
        })
    });
    group.bench_function("decode", |b| {
        b.iter(|| black_box(rmp_serde::from_slice::<Pod>(black_box(&encoded)).unwrap()))
    });
    group.bench_function("compare", |b| {
        b.iter(|| black_box(black_box(&decoded) == black_box(&p)))
    });
    group.finish();
}

criterion_group!(benches, bench, bench_pod_writes);
criterion_main!(benches);
