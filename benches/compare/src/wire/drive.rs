//! The measurement every Rust wire runner shares (the Go runner in
//! `../go/wire.go` follows the same steps).
//!
//! 1. Reset the server, read the workload's shape from it.
//! 2. Release free heap, read the resident size ("before"), reset the peak,
//!    read the process's CPU time (user + system, `getrusage`).
//! 3. Clock on; start the informer (it lists N Pods, page by page); wait
//!    until every subscriber has been told about all N; clock off: the
//!    *initial sync*. Read the resident size, release free heap, read it
//!    again ("after sync").
//! 4. Normal run: clock on; release the watch events; wait until every
//!    subscriber has seen everything it will be told (*quiescence*); clock
//!    off. Time to quiescence = sync + this span; CPU per event = CPU time
//!    over both spans / (N + U + D).
//!
//!    Relist run instead: reset the peak; clock on; have the server expire
//!    the watch (410) so the informer lists all N again; wait until every
//!    subscriber has been told about the relisted N; clock off; read the
//!    peak: the *relist peak*.
//! 5. Throughout, a sampler reads the resident size and glibc's heap
//!    (in use, and free but kept) every 20 ms and keeps the sample with the
//!    largest resident size: what the peak was made of.

use super::count::{CounterWatch, counter};
use crate::memory;
use k8s_openapi::api::core::v1::Pod;
use kube::{Client, Config};
use serde::{Deserialize, Serialize};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};
use tokio::{sync::watch, time::Instant};

/// Strips `managedFields`: the transform every runner applies with `--strip`.
pub fn strip_managed_fields(pod: &mut Pod) {
    pod.metadata.managed_fields = None;
}

/// What the command line chose.
#[derive(Debug, Clone)]
pub struct WireOptions {
    /// Base URL of the loopback server, e.g. `http://127.0.0.1:8080`.
    pub server: String,
    /// S: subscribers.
    pub subscribers: usize,
    /// Whether the informer strips `managedFields` from every object.
    pub strip: bool,
    /// Relist run (410, then a full list) instead of a watch burst.
    pub relist: bool,
    /// Give up when a wait lasts longer than this.
    pub timeout: Duration,
}

/// What a runner hands back when started.
#[derive(Debug)]
pub struct Started {
    /// For runners whose subscribers are not told about deletes: how many
    /// deletes the store has applied.
    pub deletes_applied: Option<watch::Receiver<u64>>,
}

/// One informer implementation driven from the wire.
pub trait WireRunner {
    /// The name the report carries.
    const NAME: &'static str;
    /// Whether subscribers are told about deletes (else the runner reports
    /// applied deletes through [`Started::deletes_applied`], and the server
    /// holds the deletes back until every subscriber saw the updates).
    const TOLD_OF_DELETES: bool;

    /// Builds the informer on `client` with one subscriber task per counter
    /// and starts it. Runs inside the clock.
    fn start(client: Client, strip: bool, subscribers: Vec<super::count::Counter>) -> Started;
}

/// Why a run gave no figures.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The server URL or the client could not be set up.
    #[error("client: {0}")]
    Client(String),
    /// A control request to the server failed.
    #[error("control request {path}: {message}")]
    Control {
        /// Which endpoint.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A subscriber stopped or stalled.
    #[error("subscriber {subscriber} saw {seen} of {target} notifications ({why})")]
    Stalled {
        /// Which subscriber.
        subscriber: usize,
        /// What it had published.
        seen: u64,
        /// What the driver waited for.
        target: u64,
        /// Ended or timed out.
        why: &'static str,
    },
    /// The store did not apply every delete in time.
    #[error("the store applied {seen} of {target} deletes within the timeout")]
    DeletesStalled {
        /// Applied so far.
        seen: u64,
        /// D.
        target: u64,
    },
    /// The informer did not list as the measurement assumes.
    #[error("the informer made {lists} lists; expected {expected}")]
    UnexpectedLists {
        /// Lists the server saw.
        lists: u64,
        /// Lists expected.
        expected: u64,
    },
}

/// The workload's shape, as the server reports it.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerInfo {
    /// How the server writes watch events (`backlog`, `event`, `rate=N`).
    #[serde(default)]
    pub chunking: String,
    /// N.
    pub objects: u64,
    /// U.
    pub updates: u64,
    /// D.
    pub deletes: u64,
    /// Mean JSON size of a listed Pod.
    pub mean_item_bytes: f64,
}

/// What the server counted.
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
pub struct ServerStats {
    /// Lists started (first pages).
    pub lists: u64,
    /// Pages served.
    pub pages: u64,
    /// Watches opened.
    pub watches: u64,
    /// Watch events sent.
    pub events_sent: u64,
    /// Watches ended with a 410.
    pub expired_watches: u64,
}

/// The sample of the run with the largest resident size.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct PeakSample {
    /// Seconds since the clock first started.
    pub at_seconds: f64,
    /// VmRSS then.
    pub rss: u64,
    /// glibc heap in use then (`mallinfo2().uordblks` + mmapped blocks).
    pub heap_in_use: u64,
    /// glibc heap free but not returned to the kernel then (`fordblks`).
    pub heap_free_kept: u64,
}

/// The figures of one wire run: one JSON line.
#[derive(Debug, Clone, Serialize)]
pub struct WireReport {
    /// `"wire"`.
    pub mode: &'static str,
    /// Which runner.
    pub runner: String,
    /// `"burst"` or `"relist"`.
    pub variant: &'static str,
    /// Whether managedFields were stripped.
    pub strip: bool,
    /// N.
    pub objects: u64,
    /// U.
    pub updates: u64,
    /// D.
    pub deletes: u64,
    /// S.
    pub subscribers: usize,
    /// Events the server sent the runner: N + U + D (burst), 2N (relist).
    pub events: u64,
    /// Notifications each subscriber was waited for.
    pub deliveries_per_subscriber: u64,
    /// Mean JSON bytes of a listed Pod.
    pub mean_pod_bytes: f64,
    /// Initial sync: start until every subscriber was told about N.
    pub sync_seconds: f64,
    /// Burst: sync + release-to-quiescence. Relist: the relist alone.
    pub seconds: f64,
    /// Events per clocked second.
    pub events_per_second: f64,
    /// CPU seconds (user + system) of this process over the clocked spans,
    /// without the memory sampler's heap readings.
    pub cpu_seconds: f64,
    /// CPU microseconds per event.
    pub cpu_us_per_event: f64,
    /// CPU seconds of the initial sync alone.
    pub sync_cpu_seconds: f64,
    /// Burst: CPU seconds from the release of the watch events to
    /// quiescence (no list in it). Relist: the relist's.
    pub watch_cpu_seconds: f64,
    /// `watch_cpu_seconds` per watch event (U + D for a burst, 2N for a
    /// relist): what a steady stream of events costs.
    pub watch_cpu_us_per_event: f64,
    /// User and system CPU seconds of the process at quiescence (user
    /// without the memory sampler's heap readings, as every CPU figure
    /// of the report).
    pub user_seconds: f64,
    /// See `user_seconds`.
    pub system_seconds: f64,
    /// CPU seconds the harness's memory sampler spent reading glibc's
    /// heap statistics (`mallinfo2`), left out of every CPU figure above.
    pub sampler_cpu_seconds: f64,
    /// The global allocator the runner was built with.
    pub allocator: &'static str,
    /// How the server wrote the watch events (`backlog`, `event`, `rate=N`).
    pub chunking: String,
    /// VmRSS before the informer started.
    pub rss_before: u64,
    /// VmRSS right after sync, before free heap was released.
    pub rss_after_sync_untrimmed: u64,
    /// VmRSS after sync, free heap released: the cache.
    pub rss_after_sync: u64,
    /// (rss_after_sync − rss_before) / N.
    pub bytes_per_object: f64,
    /// VmHWM over the initial sync.
    pub sync_peak_rss: u64,
    /// VmHWM over the burst or the relist (reset after sync for the relist).
    pub peak_rss: u64,
    /// What the largest sampled resident size was made of.
    pub peak_sample: PeakSample,
    /// Largest subscriber queue seen, for runners that report it.
    pub most_pending: Option<u64>,
    /// What the server counted.
    pub server: ServerStats,
}

/// Control requests to the loopback server, over the runner's own client.
#[derive(Clone)]
struct Control(Client);

impl Control {
    async fn call(&self, method: http::Method, path: &str) -> Result<String, WireError> {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .body(Vec::new())
            .map_err(|error| WireError::Control {
                path: path.to_string(),
                message: error.to_string(),
            })?;
        self.0
            .request_text(request)
            .await
            .map_err(|error| WireError::Control {
                path: path.to_string(),
                message: error.to_string(),
            })
    }

    async fn json<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, WireError> {
        let text = self.call(http::Method::GET, path).await?;
        serde_json::from_str(&text).map_err(|error| WireError::Control {
            path: path.to_string(),
            message: error.to_string(),
        })
    }

    async fn post(&self, path: &str) -> Result<(), WireError> {
        self.call(http::Method::POST, path).await.map(|_| ())
    }
}

/// A kube client for the loopback server (plain HTTP, no credentials).
pub fn client(server: &str) -> Result<Client, WireError> {
    let url = server
        .parse()
        .map_err(|error: http::uri::InvalidUri| WireError::Client(error.to_string()))?;
    let mut config = Config::new(url);
    // The informers' own watch timeouts govern, not the client's read timeout.
    config.read_timeout = None;
    Client::try_from(config).map_err(|error| WireError::Client(error.to_string()))
}

/// CPU the memory sampler has spent reading glibc's heap statistics, in
/// nanoseconds (thread CPU time around each `mallinfo2`).
static SAMPLER_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// CPU seconds the memory sampler's heap readings have used so far.
fn sampler_cpu_seconds() -> f64 {
    SAMPLER_CPU_NS.load(Ordering::Relaxed) as f64 / 1e9
}

/// CPU seconds of this process without the memory sampler's heap readings:
/// what the runner itself used. `mallinfo2` walks every free chunk of the
/// heap, so its cost grows with how fragmented a runner's heap is (8% of
/// kube-informer's CPU samples at 2,000 events/s, under 0.6% of
/// kube-runtime's, measured before this subtraction); no user of either
/// runner pays it.
fn runner_cpu_seconds() -> f64 {
    cpu_seconds() - sampler_cpu_seconds()
}

/// CPU seconds of the calling thread.
fn thread_cpu_seconds() -> f64 {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) } != 0 {
        return 0.0;
    }
    time.tv_sec as f64 + time.tv_nsec as f64 / 1e9
}

/// CPU seconds (user + system) this process has used.
pub fn cpu_seconds() -> f64 {
    let (user, system) = cpu_times();
    user + system
}

/// User and system CPU seconds this process has used.
pub fn cpu_times() -> (f64, f64) {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given and keeps no pointer.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return (0.0, 0.0);
        }
        usage.assume_init()
    };
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    (seconds(usage.ru_utime), seconds(usage.ru_stime))
}

/// The global allocator of this build (`--cfg compare_allocator="mimalloc"`
/// or `"jemalloc"` in RUSTFLAGS; see Cargo.toml).
pub fn allocator() -> &'static str {
    if cfg!(compare_allocator = "mimalloc") {
        "mimalloc"
    } else if cfg!(compare_allocator = "jemalloc") {
        "jemalloc"
    } else {
        "system"
    }
}

/// glibc's heap: (in use, free but kept).
pub fn heap() -> (u64, u64) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's own statistics.
        let info = unsafe { libc::mallinfo2() };
        ((info.uordblks + info.hblkhd) as u64, info.fordblks as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        (0, 0)
    }
}

/// Growth of the resident size that triggers a new heap reading.
const PEAK_STEP: u64 = 16 << 20;

/// Samples memory every 20 ms and keeps the sample with the largest RSS
/// (to within [`PEAK_STEP`]).
struct Sampler {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<PeakSample>,
}

impl Sampler {
    fn start(clock: Instant) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let mut best = PeakSample::default();
            let mut interval = tokio::time::interval(Duration::from_millis(20));
            while !stopping.load(Ordering::Relaxed) {
                interval.tick().await;
                let rss = memory::resident().now;
                // mallinfo2 walks the heap's free lists under the arena lock:
                // on a fragmented heap of a GiB it costs milliseconds and
                // stalls every allocating thread, so it is read only when the
                // peak grows by 16 MiB or more.
                if rss >= best.rss + PEAK_STEP {
                    // A synchronous call: the thread runs nothing else
                    // meanwhile, so its CPU clock times the reading alone.
                    let before = thread_cpu_seconds();
                    let (heap_in_use, heap_free_kept) = heap();
                    let spent = (thread_cpu_seconds() - before).max(0.0);
                    SAMPLER_CPU_NS.fetch_add((spent * 1e9) as u64, Ordering::Relaxed);
                    best = PeakSample {
                        at_seconds: clock.elapsed().as_secs_f64(),
                        rss,
                        heap_in_use,
                        heap_free_kept,
                    };
                }
            }
            best
        });
        Self { stop, task }
    }

    async fn finish(self) -> PeakSample {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap_or_default()
    }
}

/// Runs one measurement with runner `R` against the server in `options`.
pub async fn drive<R: WireRunner>(options: &WireOptions) -> Result<WireReport, WireError> {
    let client = client(&options.server)?;
    let control = Control(client.clone());
    control.post("/bench/reset").await?;
    let info: ServerInfo = control.json("/bench/info").await?;
    let (n, u, d) = (info.objects, info.updates, info.deletes);
    let last = if options.relist {
        2 * n
    } else if R::TOLD_OF_DELETES {
        n + u + d
    } else {
        n + u
    };
    let (counters, mut watches): (Vec<_>, Vec<_>) = (0..options.subscribers)
        .map(|_| counter(vec![n, n + u, last]))
        .unzip();

    memory::release_free_memory();
    let before = memory::resident().now;
    memory::reset_peak();
    let cpu_start = runner_cpu_seconds();
    let clock = Instant::now();
    let sampler = Sampler::start(clock);

    let started = R::start(client, options.strip, counters);
    wait_all(&mut watches, n, options.timeout).await?;
    let sync_time = clock.elapsed();
    let sync_cpu = runner_cpu_seconds() - cpu_start;

    let synced = memory::resident();
    memory::release_free_memory();
    let after_sync = memory::resident().now;

    let (seconds, cpu, events, watch_cpu, watch_events) = if options.relist {
        memory::reset_peak();
        let cpu_relist = runner_cpu_seconds();
        let restarted = Instant::now();
        control.post("/bench/expire").await?;
        wait_all(&mut watches, last, options.timeout).await?;
        let relist_time = restarted.elapsed();
        let relist_cpu = runner_cpu_seconds() - cpu_relist;
        (relist_time.as_secs_f64(), relist_cpu, n, relist_cpu, 2 * n)
    } else {
        let cpu_burst = runner_cpu_seconds();
        let restarted = Instant::now();
        if R::TOLD_OF_DELETES {
            control.post("/bench/release?phase=all").await?;
        } else {
            control.post("/bench/release?phase=updates").await?;
            wait_all(&mut watches, n + u, options.timeout).await?;
            control.post("/bench/release?phase=all").await?;
            let mut applied = started
                .deletes_applied
                .expect("a runner not telling of deletes reports applied deletes");
            let done = tokio::time::timeout(options.timeout, applied.wait_for(|seen| *seen >= d));
            if !matches!(done.await, Ok(Ok(_))) {
                return Err(WireError::DeletesStalled {
                    seen: *applied.borrow(),
                    target: d,
                });
            }
        }
        wait_all(&mut watches, last, options.timeout).await?;
        let burst_time = restarted.elapsed();
        let burst_cpu = runner_cpu_seconds() - cpu_burst;
        (
            (sync_time + burst_time).as_secs_f64(),
            sync_cpu + burst_cpu,
            n + u + d,
            burst_cpu,
            u + d,
        )
    };
    let peak = memory::resident().peak;
    let peak_sample = sampler.finish().await;
    let server: ServerStats = control.json("/bench/stats").await?;
    let expected_lists = if options.relist { 2 } else { 1 };
    if server.lists != expected_lists {
        return Err(WireError::UnexpectedLists {
            lists: server.lists,
            expected: expected_lists,
        });
    }
    let most_pending = watches.iter().map(CounterWatch::most_pending).max();
    Ok(WireReport {
        mode: "wire",
        runner: R::NAME.to_string(),
        variant: if options.relist { "relist" } else { "burst" },
        strip: options.strip,
        objects: n,
        updates: u,
        deletes: d,
        subscribers: options.subscribers,
        events,
        deliveries_per_subscriber: last,
        mean_pod_bytes: info.mean_item_bytes,
        sync_seconds: sync_time.as_secs_f64(),
        seconds,
        events_per_second: events as f64 / seconds,
        cpu_seconds: cpu,
        cpu_us_per_event: cpu / events as f64 * 1e6,
        sync_cpu_seconds: sync_cpu,
        watch_cpu_seconds: watch_cpu,
        watch_cpu_us_per_event: watch_cpu / watch_events.max(1) as f64 * 1e6,
        user_seconds: (cpu_times().0 - sampler_cpu_seconds()).max(0.0),
        system_seconds: cpu_times().1,
        sampler_cpu_seconds: sampler_cpu_seconds(),
        allocator: allocator(),
        chunking: info.chunking.clone(),
        rss_before: before,
        rss_after_sync_untrimmed: synced.now,
        rss_after_sync: after_sync,
        bytes_per_object: (after_sync as f64 - before as f64) / n.max(1) as f64,
        sync_peak_rss: synced.peak,
        peak_rss: peak,
        peak_sample,
        most_pending: most_pending.filter(|pending| *pending > 0),
        server,
    })
}

async fn wait_all(
    watches: &mut [CounterWatch],
    target: u64,
    timeout: Duration,
) -> Result<(), WireError> {
    for (subscriber, watch) in watches.iter_mut().enumerate() {
        let why = match tokio::time::timeout(timeout, watch.reached(target)).await {
            Ok(true) => continue,
            Ok(false) => "its stream ended",
            Err(_) => "timed out",
        };
        return Err(WireError::Stalled {
            subscriber,
            seen: watch.published(),
            target,
            why,
        });
    }
    Ok(())
}
