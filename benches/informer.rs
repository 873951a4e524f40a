//! End-to-end in-memory throughput: a stream of source events through the
//! FIFO, the store and the distributor to 0 (the pipeline alone), 1, 4 and 16 `Unbounded`
//! subscribers, each counting its notifications until the informer stops.
//!
//! 10,000 ConfigMaps are listed, then each is updated 20 times: 210,000
//! source events. Criterion's "elements/s" is source events per second.
//!
//! Each subscriber count runs twice: as is (the counters are always
//! recorded), and with a task reading `Informer::metrics()` (every
//! subscription's stats included) every millisecond meanwhile, as a
//! scraper would, only far more often. The ratio of the two is the cost of
//! reading metrics. Recording cannot be switched off; its cost is this
//! bench against a build of the commit before the counters existed (see
//! `METRICS.md`, "Cost").
//!
//! The `compact_` cases run 0 and 1 subscribers with the compact cache
//! (`store::CompactCache`, no hot set): each update encodes the new version,
//! and decodes the replaced one only when a subscriber will read it (CM8).
//!
//! ```sh
//! cargo bench --bench informer
//! ```

use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
#[cfg(feature = "compact")]
use kube_informer::store::CompactCache;
use kube_informer::{Informer, dispatch::SubscribeOptions, metrics::MetricsReader, source::Event};

mod support;
use support::config_map;

const OBJECTS: usize = 10_000;
const UPDATES: usize = 20;

/// The initial list, then `UPDATES` rounds of one update per object.
fn events() -> Vec<Event<ConfigMap>> {
    let mut events = Vec::with_capacity(OBJECTS * (UPDATES + 1) + 2);
    events.push(Event::ListStart);
    events.extend((0..OBJECTS).map(|i| Event::Listed(config_map(i, 1))));
    events.push(Event::ListDone {
        resource_version: "1".into(),
    });
    let mut rv = 1;
    for _ in 0..UPDATES {
        for i in 0..OBJECTS {
            rv += 1;
            events.push(Event::Modified(config_map(i, rv)));
        }
    }
    events
}

async fn run_once(
    events: Vec<Event<ConfigMap>>,
    subscribers: usize,
    read_metrics: bool,
    compact: bool,
) {
    let mut builder = Informer::builder_from_stream(futures::stream::iter(
        events.into_iter().map(Ok::<_, std::io::Error>),
    ));
    #[cfg(feature = "compact")]
    if compact {
        builder = builder.compact_cache(CompactCache::default().hot_objects(0));
    }
    #[cfg(not(feature = "compact"))]
    assert!(!compact, "the compact cache needs `--features compact`");
    let informer = builder.build();
    let counters: Vec<_> = (0..subscribers)
        .map(|_| {
            let subscription = informer
                .subscribe(SubscribeOptions::default())
                .expect("subscribe before run");
            tokio::spawn(subscription.fold(0usize, |n, _| async move { n + 1 }))
        })
        .collect();
    let reader = read_metrics.then(|| {
        let metrics = MetricsReader::from(&informer);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(1));
            while let Some(metrics) = metrics.read() {
                std::hint::black_box(metrics);
                tick.tick().await;
            }
        })
    });
    informer.run().await.expect("informer runs");
    drop(informer);
    if let Some(reader) = reader {
        reader.await.expect("metrics reader");
    }
    for counter in counters {
        let seen = counter.await.expect("counter task");
        assert_eq!(
            seen,
            OBJECTS * (UPDATES + 1),
            "a subscriber missed notifications"
        );
    }
}

/// The runtime every case runs on: two workers, as the machine has two
/// cores.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn informer_throughput(c: &mut Criterion) {
    let runtime = runtime();
    let template = events();
    let mut group = c.benchmark_group("informer_end_to_end");
    group.throughput(Throughput::Elements(template.len() as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(15));
    for subscribers in [0, 1, 4, 16] {
        for (read, suffix) in [(false, ""), (true, "_metrics_read")] {
            group.bench_function(format!("{subscribers}_subscribers{suffix}"), |b| {
                b.to_async(&runtime).iter_batched(
                    || template.clone(),
                    |events| run_once(events, subscribers, read, false),
                    BatchSize::LargeInput,
                );
            });
        }
    }
    // The compact cases need the feature; without it the group has the rest.
    let compact_cases: &[usize] = if cfg!(feature = "compact") {
        &[0, 1]
    } else {
        &[]
    };
    for &subscribers in compact_cases {
        group.bench_function(format!("compact_{subscribers}_subscribers"), |b| {
            b.to_async(&runtime).iter_batched(
                || template.clone(),
                |events| run_once(events, subscribers, false, true),
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, informer_throughput);

/// `INFORMER_BENCH_ITERATIONS=n` runs one case `n` times outside Criterion
/// (`INFORMER_BENCH_SUBSCRIBERS` of them, default 4; the compact cache with
/// `INFORMER_BENCH_COMPACT=1`), to count instructions with `perf stat -e
/// instructions:u` or callgrind: a figure the machine's load does not move
/// the way it moves time.
fn main() {
    if let Ok(iterations) = std::env::var("INFORMER_BENCH_ITERATIONS") {
        let subscribers = std::env::var("INFORMER_BENCH_SUBSCRIBERS")
            .map_or(4, |n| n.parse().expect("a subscriber count"));
        let compact = std::env::var_os("INFORMER_BENCH_COMPACT").is_some_and(|v| v == "1");
        let runtime = runtime();
        let template = events();
        for _ in 0..iterations.parse::<usize>().expect("an iteration count") {
            runtime.block_on(run_once(template.clone(), subscribers, false, compact));
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
