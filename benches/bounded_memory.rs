//! Memory under a `Lag::Bounded(1)` subscriber that never reads (L10).
//!
//! The source offers 1,000,000 watch updates over 1,000 keys after an
//! initial list of those keys, made one at a time as the informer pulls
//! them (nothing is materialised up front, so whatever the process holds is
//! the informer's doing). A `Lag::Bounded(1)` subscriber subscribes before
//! `run` and never reads.
//!
//! - *stalled*: the writer soon waits on the full subscriber; back-pressure
//!   then stops the pump pulling from the source. The run is held stalled
//!   for a while and sampled every millisecond: events pulled, the FIFO's
//!   length (`Informer::metrics().fifo.deltas`) and the process RSS must all stay
//!   flat, however many events the source still offers.
//! - *released*: the stalled subscriber is dropped and the remaining
//!   updates flow through; the FIFO stays under the pump's high-water mark
//!   and RSS stays flat while the million events go by.
//!
//! The figures are printed once per run (`bounded_memory: ...`); criterion
//! times the whole scenario.
//!
//! ```sh
//! cargo bench --bench bounded_memory
//! ```

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Informer,
    dispatch::{Lag, SubscribeOptions},
    source::Event,
};

mod support;
use support::config_map;

const KEYS: usize = 1_000;
const UPDATES: usize = 1_000_000;
/// How long the run is held stalled and sampled.
const STALL: Duration = Duration::from_millis(300);

/// Source events offered: the list's start, objects and end, then the
/// updates.
const OFFERED: usize = KEYS + 2 + UPDATES;

/// The initial list of `KEYS` objects, then `UPDATES` updates round-robin
/// over them, each built when pulled; `pulled` counts the events pulled.
fn source(
    pulled: Arc<AtomicUsize>,
) -> impl futures::Stream<Item = Result<Event<ConfigMap>, std::io::Error>> + Send + 'static {
    let list = std::iter::once(Event::ListStart)
        .chain((0..KEYS).map(|i| Event::Listed(config_map(i, 1))))
        .chain(std::iter::once(Event::ListDone {
            resource_version: "1".into(),
        }));
    let updates = (0..UPDATES).map(|i| Event::Modified(config_map(i % KEYS, i + 2)));
    futures::stream::iter(list.chain(updates).map(move |event| {
        pulled.fetch_add(1, Ordering::Relaxed);
        Ok(event)
    }))
}

/// Resident set size of this process, in bytes (Linux; `None` elsewhere).
fn rss() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Minimum and maximum of what was sampled.
#[derive(Debug, Clone, Copy)]
struct Range {
    min: usize,
    max: usize,
}

impl Range {
    fn new() -> Self {
        Self {
            min: usize::MAX,
            max: 0,
        }
    }

    fn add(&mut self, value: usize) {
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }
}

#[derive(Debug)]
struct Figures {
    /// Events pulled from the source while stalled.
    stalled_pulled: Range,
    stalled_fifo: Range,
    stalled_rss: Range,
    released_fifo: Range,
    released_rss: Range,
    pulled_total: usize,
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

async fn scenario() -> Figures {
    let pulled = Arc::new(AtomicUsize::new(0));
    let informer = Informer::builder_from_stream(source(Arc::clone(&pulled))).build();
    let stalled = informer
        .subscribe(SubscribeOptions::default().lag(Lag::Bounded(1)))
        .unwrap();
    let run = tokio::spawn(informer.run());

    // Wait until the pump stopped pulling: nothing new for 20 ms.
    let mut last = usize::MAX;
    let mut still = 0;
    while still < 20 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        let now = pulled.load(Ordering::Relaxed);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }

    // Held stalled: sample.
    let mut stalled_pulled = Range::new();
    let mut stalled_fifo = Range::new();
    let mut stalled_rss = Range::new();
    let start = Instant::now();
    while start.elapsed() < STALL {
        stalled_pulled.add(pulled.load(Ordering::Relaxed));
        stalled_fifo.add(informer.metrics().fifo.deltas);
        stalled_rss.add(rss().unwrap_or(0));
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    // Released: the million updates go by.
    drop(stalled);
    let mut released_fifo = Range::new();
    let mut released_rss = Range::new();
    while !run.is_finished() {
        released_fifo.add(informer.metrics().fifo.deltas);
        released_rss.add(rss().unwrap_or(0));
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    run.await.unwrap().unwrap();
    released_rss.add(rss().unwrap_or(0));
    assert_eq!(informer.store().len(), KEYS);
    Figures {
        stalled_pulled,
        stalled_fifo,
        stalled_rss,
        released_fifo,
        released_rss,
        pulled_total: pulled.load(Ordering::Relaxed),
    }
}

fn print(label: &str, figures: &Figures) {
    println!(
        "bounded_memory ({label}): stalled {STALL:?}: events pulled {}..{} of {OFFERED} offered, FIFO {}..{} deltas, RSS {:.1}..{:.1} MiB",
        figures.stalled_pulled.min,
        figures.stalled_pulled.max,
        figures.stalled_fifo.min,
        figures.stalled_fifo.max,
        mib(figures.stalled_rss.min),
        mib(figures.stalled_rss.max),
    );
    println!(
        "bounded_memory ({label}): released: {} events through, FIFO {}..{} deltas, RSS {:.1}..{:.1} MiB",
        figures.pulled_total,
        figures.released_fifo.min,
        figures.released_fifo.max,
        mib(figures.released_rss.min),
        mib(figures.released_rss.max),
    );
}

fn bounded_memory(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("bounded_memory");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    let mut runs: Vec<Figures> = Vec::new();
    group.bench_function("bounded_1_never_reads_1m_updates_1k_keys", |b| {
        b.iter_custom(|iterations| {
            let start = Instant::now();
            for _ in 0..iterations {
                runs.push(runtime.block_on(scenario()));
            }
            start.elapsed()
        });
    });
    group.finish();
    // The first run, the last, and every run folded together: RSS that
    // grew from run to run would show as a last run above the first.
    if let (Some(first), Some(last)) = (runs.first(), runs.last()) {
        print("first run", first);
        print("last run", last);
        let mut all = Figures {
            stalled_pulled: Range::new(),
            stalled_fifo: Range::new(),
            stalled_rss: Range::new(),
            released_fifo: Range::new(),
            released_rss: Range::new(),
            pulled_total: 0,
        };
        for run in &runs {
            for (into, from) in [
                (&mut all.stalled_pulled, run.stalled_pulled),
                (&mut all.stalled_fifo, run.stalled_fifo),
                (&mut all.stalled_rss, run.stalled_rss),
                (&mut all.released_fifo, run.released_fifo),
                (&mut all.released_rss, run.released_rss),
            ] {
                into.add(from.min);
                into.add(from.max);
            }
            all.pulled_total = all.pulled_total.max(run.pulled_total);
        }
        print(&format!("all {} runs", runs.len()), &all);
    }
}

criterion_group!(benches, bounded_memory);
criterion_main!(benches);
