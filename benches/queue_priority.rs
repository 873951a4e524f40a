//! The latency of a live change while an initial list of 50,000 keys waits
//! in the work queue, with and without priorities (W14, W15), side by side.
//!
//! The queue holds 50,000 distinct `ObjectKey`s added at
//! `Priority::Low`, as a controller with priorities queues an initial list
//! (without priorities the level is ignored: one first-in first-out queue,
//! client-go's). Each iteration adds one live key with `add` (high) and
//! times until a worker that takes and releases keys as fast as the queue
//! hands them out (`try_next`, no reconcile work) takes the live key. The
//! keys taken before it are added back afterwards, outside the timing, so
//! every iteration starts with the full backlog.
//!
//! - `live_change/fifo`: the default queue. The live key waits for all
//!   50,000: its latency is the queue's cost of handing out the backlog.
//! - `live_change/priorities`: `priorities(true)`, default ageing (10 s).
//!   The live key is taken next (or second, after one aged listed key, once
//!   the bench has run 10 s: W15 gives the oldest listed key the hand-out
//!   after each high one).
//!
//! The bench also prints how many listed keys were handed out before the
//! live key in each queue; with a reconciler that takes 1 ms per key that
//! count is the live change's latency in milliseconds (50 s against 0 or
//! 1 ms), the figure a user of a controller sees.
//!
//! Run: `cargo bench --bench queue_priority -- --warm-up-time 1 --measurement-time 5`
//!
//! One run (2026-12-04, shared 2-core machine under load 5,
//! `--warm-up-time 1 --measurement-time 3`), per live change:
//!
//! | queue | listed keys handed out first | latency (criterion estimate) |
//! |---|---|---|
//! | `fifo` (default) | 50,000 | 22.0 ms (18.8–25.2) |
//! | `priorities` | 0 | 315 ns (285–354) |
//!
//! The `fifo` figure is the queue's own cost of 50,000 hand-outs (about
//! 0.44 µs each under that load); with a reconciler, each listed key
//! handed out first adds its reconcile time as well.

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kube_informer::{
    ObjectKey,
    queue::{Priority, WorkQueue},
};

const LISTED: usize = 50_000;

fn listed_keys() -> Vec<ObjectKey> {
    (0..LISTED)
        .map(|i| ObjectKey::new(Some("default"), &format!("cm-{i}")).expect("valid key"))
        .collect()
}

/// A queue holding the initial list at low priority.
fn backlog(priorities: bool, keys: &[ObjectKey]) -> WorkQueue {
    let queue = WorkQueue::with_config(
        kube_informer::queue::QueueConfig {
            priorities,
            ..Default::default()
        },
        kube_informer::queue::default_rate_limiter(),
    );
    for key in keys {
        queue.add_with_priority(key.clone(), Priority::Low);
    }
    queue
}

/// Adds `live` and takes keys until it comes out: how long that took and
/// which listed keys came out first (to add back).
fn live_change(queue: &WorkQueue, live: &ObjectKey) -> (Duration, Vec<ObjectKey>) {
    let mut before = Vec::new();
    let start = Instant::now();
    queue.add(live.clone());
    loop {
        let item = queue.try_next().expect("the live key is queued");
        if item.item() == live {
            break;
        }
        before.push(black_box(item.item().clone()));
    }
    (start.elapsed(), before)
}

fn latency(c: &mut Criterion) {
    let keys = listed_keys();
    let live = ObjectKey::new(Some("default"), "live").expect("valid key");
    for priorities in [false, true] {
        let queue = backlog(priorities, &keys);
        let (_, before) = live_change(&queue, &live);
        println!(
            "queue_priority: priorities {}: {} listed keys handed out before the live change \
             ({} ms at 1 ms per reconcile)",
            if priorities { "on" } else { "off" },
            before.len(),
            before.len(),
        );
    }

    let mut group = c.benchmark_group("live_change");
    group.sample_size(20);
    for (name, priorities) in [("fifo", false), ("priorities", true)] {
        let queue = backlog(priorities, &keys);
        group.bench_function(BenchmarkId::new(name, LISTED), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (took, before) = live_change(&queue, &live);
                    total += took;
                    for key in before {
                        queue.add_with_priority(key, Priority::Low);
                    }
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, latency);
criterion_main!(benches);
