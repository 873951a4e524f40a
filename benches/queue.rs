//! Work queue throughput: `add` + `next` + release (drop of the guard) per
//! key, next to the same keys through a `tokio::sync::mpsc::unbounded_channel`
//! (send + recv) as the floor: the channel does no dedup and no
//! one-holder bookkeeping, so the ratio is the price of those rules.
//!
//! Three shapes, each over 10,000 distinct `ObjectKey`s (`default/cm-N`,
//! built before the clock starts):
//! - `batch`: add all keys, then take and release them all (a backlog);
//! - `interleaved`: add one key, take it, release it (a consumer that keeps
//!   up: the per-item cost of the hot path);
//! - `dedup`: add every key 10 times before taking them (100,000 adds, 10,000
//!   hand-outs); the channel floor sends and receives all 100,000.
//!
//! Criterion reports time per iteration; the element throughput is per key
//! handed out (per message for the channel).
//!
//! Run: `cargo bench --bench queue -- --warm-up-time 1 --measurement-time 5`
//!
//! `benches/queue_vs_client_go.sh` runs this bench and client-go's work
//! queue on the same shapes (Go benchmarks in
//! `conformance/go/internal/workqueuebench`) alternately for three rounds;
//! `benches/compare/NOTES.md` ("Work queue") has the table. Medians of one such run
//! (2026-12-03, load 1.3–1.6 on the shared 2-core machine):
//!
//! | shape | work_queue | mpsc floor | ratio | client-go plain queue | client-go ÷ work_queue |
//! |---|---|---|---|---|---|
//! | batch (10,000 keys) | 3.22 ms (≈ 0.32 µs/key) | 0.42 ms | 7.8× | 4.97 ms | 1.54× |
//! | interleaved | 2.56 ms (≈ 0.26 µs/key) | 0.34 ms | 7.6× | 3.17 ms | 1.24× |
//! | dedup (100,000 adds) | 6.21 ms | 4.16 ms | 1.5× | 8.93 ms | 1.44× |
//!
//! The queue's extra cost over the channel is one hash-map update per add,
//! per hand-out and per release (one map holds the dirty and processing
//! marks and the metrics' times, hashed with foldhash) under a mutex, a
//! clock reading per hand-out and release for the metrics, and a `Notify`
//! permit per queued key; with repeated adds dedup makes it do less work
//! than the channel per add.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kube_informer::{ObjectKey, queue::WorkQueue};
use tokio::{runtime::Runtime, sync::mpsc};

const KEYS: usize = 10_000;
const REPEATS: usize = 10;

fn keys() -> Vec<ObjectKey> {
    (0..KEYS)
        .map(|i| ObjectKey::new(Some("default"), &format!("cm-{i}")).expect("valid key"))
        .collect()
}

async fn queue_batch(keys: &[ObjectKey], repeats: usize) -> usize {
    let queue = WorkQueue::new();
    for _ in 0..repeats {
        for key in keys {
            queue.add(key.clone());
        }
    }
    let mut taken = 0;
    while !queue.is_empty() {
        let item = queue.next().await.expect("queued");
        black_box(item.item());
        taken += 1;
    }
    taken
}

async fn channel_batch(keys: &[ObjectKey], repeats: usize) -> usize {
    let (tx, mut rx) = mpsc::unbounded_channel();
    for _ in 0..repeats {
        for key in keys {
            tx.send(key.clone()).expect("open");
        }
    }
    drop(tx);
    let mut taken = 0;
    while let Some(key) = rx.recv().await {
        black_box(&key);
        taken += 1;
    }
    taken
}

async fn queue_interleaved(keys: &[ObjectKey]) -> usize {
    let queue = WorkQueue::new();
    for key in keys {
        queue.add(key.clone());
        let item = queue.next().await.expect("queued");
        black_box(item.item());
    }
    keys.len()
}

async fn channel_interleaved(keys: &[ObjectKey]) -> usize {
    let (tx, mut rx) = mpsc::unbounded_channel();
    for key in keys {
        tx.send(key.clone()).expect("open");
        black_box(rx.recv().await.expect("sent"));
    }
    keys.len()
}

fn throughput(c: &mut Criterion) {
    let rt = Runtime::new().expect("runtime");
    let keys = keys();
    let mut group = c.benchmark_group("workqueue");
    group.sample_size(20);
    group.throughput(Throughput::Elements(KEYS as u64));

    group.bench_function(BenchmarkId::new("batch", "work_queue"), |b| {
        b.to_async(&rt).iter(|| queue_batch(&keys, 1))
    });
    group.bench_function(BenchmarkId::new("batch", "mpsc_floor"), |b| {
        b.to_async(&rt).iter(|| channel_batch(&keys, 1))
    });
    group.bench_function(BenchmarkId::new("interleaved", "work_queue"), |b| {
        b.to_async(&rt).iter(|| queue_interleaved(&keys))
    });
    group.bench_function(BenchmarkId::new("interleaved", "mpsc_floor"), |b| {
        b.to_async(&rt).iter(|| channel_interleaved(&keys))
    });
    group.bench_function(BenchmarkId::new("dedup", "work_queue"), |b| {
        b.to_async(&rt).iter(|| queue_batch(&keys, REPEATS))
    });
    group.bench_function(BenchmarkId::new("dedup", "mpsc_floor"), |b| {
        b.to_async(&rt).iter(|| channel_batch(&keys, REPEATS))
    });
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
