//! Read and write costs of the store in the default and the compact mode,
//! on the wire table's realistic Pods with managedFields stripped: `get`
//! p50/p99 for hot keys (a few keys read over and over) and cold keys
//! (random keys over all of them), `list` of every Pod, `by_index` of one
//! app's Pods (1/150 of them), an update's write (what the informer pays
//! per event, the replaced version decoded), and the store's bytes.
//!
//! ```sh
//! cargo run --release -p kube-informer-compare --example compact_reads -- [PODS]
//! ```
//!
//! Built with `RUSTFLAGS='--cfg compare_allocator="mimalloc"'` the process
//! allocates with mimalloc, as the wire runners built that way do (glibc's
//! malloc otherwise).
//!
//! One thread, no writer running during the reads. The hot keys are 64
//! keys, read in turn, within the default hot set of 256; cold keys are
//! drawn at random from all PODS (default 50,000), so almost every read
//! decodes.
use std::{hint::black_box, sync::Arc, time::Instant};

use k8s_openapi::api::core::v1::Pod;
use kube_informer::unstable::store::Writer;
use kube_informer::{
    ObjectKey,
    store::{CompactCache, Indexers},
};
use kube_informer_compare::wire::pods::pod;
use rand::{Rng, SeedableRng, rngs::StdRng};

#[cfg(compare_allocator = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Pod `i` at `version`, decoded one at a time so that the process holds
/// no more Pods than the store does (a heap full of decoded Pods would
/// slow the allocator down for the compact store's decodes).
fn one_pod(i: usize, version: u64) -> (ObjectKey, Arc<Pod>) {
    let mut p: Pod = serde_json::from_value(pod(i, version, i as u64 + 1)).unwrap();
    p.metadata.managed_fields = None;
    (ObjectKey::from_object(&p).unwrap(), Arc::new(p))
}

fn by_app() -> Indexers<Pod> {
    Indexers::new().with("app", |p: &Pod| {
        p.metadata
            .labels
            .iter()
            .flatten()
            .filter(|(k, _)| *k == "app.kubernetes.io/name")
            .map(|(_, v)| v.clone())
            .collect()
    })
}

fn percentiles(mut times: Vec<f64>) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], times[times.len() * 99 / 100])
}

fn measure(mode: &str, writer: Writer<Pod>, n: usize) {
    let mut fill = 0.0;
    let mut pods = Vec::with_capacity(n);
    for i in 0..n {
        let (key, pod) = one_pod(i, 1);
        let started = Instant::now();
        writer.apply_upsert(key.clone(), pod).unwrap();
        fill += started.elapsed().as_secs_f64();
        pods.push((key, ()));
    }
    let fill = fill * 1e6 / n as f64;
    let store = writer.reader();
    let mut rng = StdRng::seed_from_u64(7);

    let hot: Vec<&ObjectKey> = (0..64).map(|i| &pods[i * 13 % pods.len()].0).collect();
    for key in &hot {
        store.get(key);
    }
    let mut times = Vec::new();
    for round in 0..20_000 {
        let key = hot[round % hot.len()];
        let t = Instant::now();
        let got = black_box(store.get(key));
        times.push(t.elapsed().as_secs_f64() * 1e6);
        drop(got);
    }
    let (hot50, hot99) = percentiles(times);

    // The caller's drop of what `get` returned is timed apart: with the
    // hot set full, a cold read also drops the object it evicts.
    let (mut times, mut drops) = (Vec::new(), Vec::new());
    for _ in 0..20_000 {
        let key = &pods[rng.random_range(0..pods.len())].0;
        let t = Instant::now();
        let got = black_box(store.get(key));
        times.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        drop(got);
        drops.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let (cold50, cold99) = percentiles(times);
    let (drop50, _) = percentiles(drops);

    let mut lists = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let all = store.list();
        lists.push(t.elapsed().as_secs_f64());
        assert_eq!(all.len(), pods.len());
    }
    lists.sort_by(f64::total_cmp);

    let mut times = Vec::new();
    for i in 0..150 {
        let t = Instant::now();
        let found = store.by_index("app", &format!("svc-{i:03}")).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        black_box(found);
    }
    let (index50, _) = percentiles(times);

    let updates = n.min(10_000);
    let mut update = 0.0;
    for i in 0..updates {
        let (key, pod) = one_pod(i, 2);
        let started = Instant::now();
        black_box(writer.apply_upsert(key, pod).unwrap());
        update += started.elapsed().as_secs_f64();
    }
    let update = update * 1e6 / updates as f64;

    let bytes = store.compact_stats().map_or(String::from("-"), |s| {
        format!("{:.0}", s.encoded_bytes as f64 / s.encoded_objects as f64)
    });
    println!(
        "{mode:<8} get hot p50 {hot50:>6.2} µs p99 {hot99:>6.2} µs | get cold p50 {cold50:>6.2} µs p99 {cold99:>6.2} µs (caller's drop p50 {drop50:>5.2} µs) | list {} {:>6.3} s | by_index ({} Pods) p50 {index50:>6.2} ms | fill {fill:>5.1} µs/Pod | update {update:>5.1} µs | encoded {bytes} B/Pod",
        pods.len(),
        lists[1],
        pods.len() / 150,
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(50_000, |a| a.parse().expect("PODS"));
    // Which modes, in order (a mode measured after another runs on the
    // heap the other left behind).
    let modes = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "compact,default".into());
    for mode in modes.split(',') {
        match mode {
            "default" => measure(mode, Writer::new(by_app()), n),
            "compact" => measure(mode, Writer::compact(by_app(), CompactCache::default()), n),
            "compact-nohot" => measure(
                mode,
                Writer::compact(by_app(), CompactCache::default().hot_objects(0)),
                n,
            ),
            other => panic!("unknown mode {other}"),
        }
    }
}
