//! Add-then-pop throughput of the DeltaFifo: 10,000 keys × 100 updates each,
//! for `Coalesce::KeepAll` and `Coalesce::Latest`, next to the same events
//! through a `tokio::sync::mpsc::unbounded_channel` as the floor.
//!
//! Objects are built before the clock starts; the timed part hands each
//! owned object to the queue, pops everything and drops what was popped.
//! Criterion reports time per iteration of 1,000,000 events: divide by 10^6
//! (or read the element throughput) for ns per event.
//!
//! Run: `cargo bench --bench fifo -- --warm-up-time 1 --measurement-time 5`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube_informer::fifo::{Coalesce, DeltaFifo, FifoOptions};

const KEYS: usize = 10_000;
const UPDATES: usize = 100;
const EVENTS: usize = KEYS * UPDATES;

/// Every event, round by round: update 0 of every key, then update 1, ….
fn events() -> Vec<ConfigMap> {
    let templates: Vec<ConfigMap> = (0..KEYS)
        .map(|k| ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("default".into()),
                name: Some(format!("cm-{k}")),
                resource_version: Some("1".into()),
                ..Default::default()
            },
            data: Some([("k".to_owned(), "v".to_owned())].into()),
            ..Default::default()
        })
        .collect();
    let mut out = Vec::with_capacity(EVENTS);
    for _ in 0..UPDATES {
        out.extend(templates.iter().cloned());
    }
    out
}

fn fifo_round(coalesce: Coalesce, input: Vec<ConfigMap>) -> usize {
    let fifo = DeltaFifo::new(FifoOptions::default().coalesce(coalesce));
    for obj in input {
        fifo.update(obj).expect("named objects");
    }
    let mut popped = 0;
    while let Some(deltas) = fifo.try_pop() {
        popped += deltas.len();
        drop(black_box(deltas));
    }
    popped
}

fn channel_round(input: Vec<ConfigMap>) -> usize {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for obj in input {
        tx.send(obj).expect("receiver alive");
    }
    let mut popped = 0;
    while let Ok(obj) = rx.try_recv() {
        popped += 1;
        drop(black_box(obj));
    }
    popped
}

/// Times `round` only, building a fresh input outside the clock each time.
fn timed(iters: u64, round: impl Fn(Vec<ConfigMap>) -> usize) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let input = events();
        let start = Instant::now();
        black_box(round(input));
        total += start.elapsed();
    }
    total
}

fn add_then_pop(c: &mut Criterion) {
    let mut group = c.benchmark_group("fifo_add_then_pop_10k_keys_x100");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(10);
    group.bench_function(BenchmarkId::from_parameter("mpsc_unbounded_floor"), |b| {
        b.iter_custom(|iters| timed(iters, channel_round))
    });
    group.bench_function(BenchmarkId::from_parameter("keep_all"), |b| {
        b.iter_custom(|iters| timed(iters, |input| fifo_round(Coalesce::KeepAll, input)))
    });
    group.bench_function(BenchmarkId::from_parameter("latest"), |b| {
        b.iter_custom(|iters| timed(iters, |input| fifo_round(Coalesce::Latest, input)))
    });
    group.finish();
}

criterion_group!(benches, add_then_pop);
criterion_main!(benches);
