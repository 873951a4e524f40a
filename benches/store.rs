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
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    ObjectKey,
    store::{Indexers, Store, Writer},
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

criterion_group!(benches, bench);
criterion_main!(benches);
