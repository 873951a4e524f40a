//! Seeded simulation runs: a scenario against the fake server with faults
//! drawn from a seed, repeatable from that seed.
//!
//! Rules (the tests in `tests/simulation.rs` name them):
//! - SI1: [`Simulation::run`] runs the scenario on a fresh `current_thread`
//!   runtime whose clock starts paused, against a fresh server with the
//!   seed's fault schedule installed, and returns its [`Trace`].
//! - SI2: the schedule and the scenario draw from two ChaCha8 streams of
//!   the seed: the same seed gives the same draws everywhere.
//! - SI3: the schedule decides, per request, a latency, an error status,
//!   and for a write with a resourceVersion precondition a 409 conflict;
//!   per watch, an early break and a lag ([`FaultMix`]).
//! - SI4: the trace holds the schedule's decisions, the scenario's own
//!   lines, every request with its simulated time, and every change in the
//!   event log.
//! - SI5: a scenario that panics, returns an error or outlives its
//!   simulated time limit fails the run; the failure names the seed and how
//!   to run that seed alone (`SIM_SEED=<seed>`).
//! - SI6: [`Simulation::seeds`] runs a range of seeds, or only the seed in
//!   the `SIM_SEED` environment variable when it is set; the seeds run on
//!   every core, the traces come back in seed order, and a failure is
//!   reported for the lowest failing seed.
//! - SI7: [`SimContext::stop_faults`] removes the schedule: later requests
//!   and watches are served without drawn faults.
//! - SI8: every request takes [`Simulation::request_time`] (1 ms unless
//!   set) of simulated time before its drawn latency, with faults or
//!   without. So code that loops on requests moves the paused clock: its
//!   lagging watches catch up, its timers fire, and a loop that never ends
//!   meets the time limit. (With requests that take no time, such a loop
//!   keeps every task busy, the clock never moves, and the run never ends.)
//!   [`FakeApiServer::clear_faults`] removes the request time with the
//!   schedule.
//!
//! # What is deterministic
//!
//! A run is a function of its seed when everything the scenario does goes
//! through the simulation's runtime and its in-process client:
//!
//! - the runtime is `current_thread` with a paused clock, so one task runs
//!   at a time, in an order decided by the program, and time moves only
//!   when every task waits (then straight to the next timer);
//! - [`SimContext::client`] calls the server's handler in process, so no
//!   socket or OS scheduler decides which request arrives first;
//! - the server iterates no hash map in an order that reaches an answer or
//!   an event, and stamps no wall-clock time the trace keeps;
//! - faults come from the seed (SI2) in the order requests arrive.
//!
//! It is not deterministic, and the trace may differ between two runs of
//! one seed, when the code under test:
//! - runs on other threads or runtimes (`spawn_blocking`, a thread pool
//!   such as rayon, a multi-thread runtime): their timing is the OS's;
//! - uses [`FakeApiServer::client`](crate::FakeApiServer::client) (TCP):
//!   the kernel decides when bytes arrive;
//! - reads the wall clock (`SystemTime`, `std::time::Instant`) or draws
//!   from an unseeded random source (backoff jitter, randomized timeouts:
//!   turn them off or seed them from [`SimContext::random_below`]);
//! - iterates a `HashMap`/`HashSet` with a random hasher where the order
//!   decides what it sends or when;
//!   (kube-informer's stores, FIFO and queue do unless its `deterministic`
//!   feature is on: enable it in your `[dev-dependencies]`);
//! - has `tokio::select!` (without `biased;`) choose between branches that
//!   are ready at once: tokio picks one at random, from a seed only
//!   `tokio_unstable` builds can fix.
//!
//! The same seed under another [`FaultMix`] is another run.

mod mix;
mod plan;
mod rng;
mod trace;

use std::{
    fmt,
    future::Future,
    ops::Range,
    panic::{AssertUnwindSafe, catch_unwind},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use parking_lot::Mutex;

pub use mix::FaultMix;
pub use trace::Trace;

use crate::FakeApiServer;
use plan::{QuietPlan, SeededPlan};
use rng::SimRng;
use trace::Recorder;

/// The environment variable that picks the one seed [`Simulation::seeds`] runs.
pub const SEED_VAR: &str = "SIM_SEED";

/// The stream the scenario draws from (the schedule's is 1).
const SCENARIO_STREAM: u64 = 2;

/// What a request takes unless [`Simulation::request_time`] says otherwise.
const REQUEST_TIME: Duration = Duration::from_millis(1);

/// One seeded run of a scenario against a fresh [`FakeApiServer`].
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::{Api, PostParams};
/// use kube_informer_testing::{FaultMix, Simulation};
///
/// let trace = Simulation::new(42)
///     .faults(FaultMix::default().request_errors(0.3))
///     .run(|sim| async move {
///         let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
///         let mut cm = ConfigMap::default();
///         cm.metadata.name = Some("settings".into());
///         // Retry until the create gets through the injected errors.
///         while api.create(&PostParams::default(), &cm).await.is_err() {}
///         assert_eq!(sim.server().objects::<ConfigMap>().len(), 1);
///     });
/// // The same seed repeats the run exactly.
/// assert_eq!(trace, Simulation::new(42).faults(FaultMix::default().request_errors(0.3)).run(|sim| async move {
///     let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
///     let mut cm = ConfigMap::default();
///     cm.metadata.name = Some("settings".into());
///     while api.create(&PostParams::default(), &cm).await.is_err() {}
/// }));
/// ```
#[derive(Debug, Clone)]
pub struct Simulation {
    seed: u64,
    mix: FaultMix,
    time_limit: Duration,
    request_time: Duration,
}

impl Simulation {
    /// A run with this seed, [`FaultMix::default`], a time limit of one
    /// simulated hour and requests that take 1 ms.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            mix: FaultMix::default(),
            time_limit: Duration::from_secs(3600),
            request_time: REQUEST_TIME,
        }
    }

    /// Runs many seeds: see [`SeedRuns`].
    ///
    /// ```
    /// use kube_informer_testing::{FaultMix, Simulation};
    ///
    /// let traces = Simulation::seeds(0..3).faults(FaultMix::none()).run(|_sim| async {});
    /// # if std::env::var_os("SIM_SEED").is_none() {
    /// assert_eq!(traces.len(), 3);
    /// # }
    /// ```
    pub fn seeds(seeds: Range<u64>) -> SeedRuns {
        SeedRuns {
            seeds,
            mix: FaultMix::default(),
            time_limit: Duration::from_secs(3600),
            request_time: REQUEST_TIME,
        }
    }

    /// The faults to draw.
    #[must_use]
    pub fn faults(mut self, mix: FaultMix) -> Self {
        self.mix = mix;
        self
    }

    /// How much simulated time the scenario may take before the run fails.
    #[must_use]
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// How much simulated time every request takes before the latency the
    /// faults draw (SI8); 1 ms unless set. Zero lets a loop of requests
    /// hold the clock still.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::Api;
    /// use kube_informer_testing::{FaultMix, Simulation};
    ///
    /// Simulation::new(1)
    ///     .faults(FaultMix::none())
    ///     .request_time(Duration::from_millis(5))
    ///     .run(|sim| async move {
    ///         let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    ///         let start = tokio::time::Instant::now();
    ///         for _ in 0..10 {
    ///             api.get_opt("settings").await.unwrap();
    ///         }
    ///         assert_eq!(start.elapsed(), Duration::from_millis(50));
    ///     });
    /// ```
    #[must_use]
    pub fn request_time(mut self, took: Duration) -> Self {
        self.request_time = took;
        self
    }

    /// Runs `scenario` and returns the trace; panics on a failure, after
    /// printing the seed and how to run it again (SI5).
    ///
    /// # Panics
    ///
    /// When the scenario fails: see [`try_run`](Self::try_run).
    pub fn run<F, Fut>(self, scenario: F) -> Trace
    where
        F: FnOnce(SimContext) -> Fut,
        Fut: Future<Output: ScenarioOutcome>,
    {
        match self.try_run(scenario) {
            Ok(trace) => trace,
            Err(failure) => {
                eprintln!("{}", failure.report());
                panic!("{failure}");
            }
        }
    }

    /// Runs `scenario` (SI1) and returns the trace, or the failure when
    /// the scenario panicked, returned an error or did not finish within
    /// the time limit (SI5).
    ///
    /// ```
    /// use kube_informer_testing::Simulation;
    ///
    /// let failure = Simulation::new(5)
    ///     .try_run(|_sim| async { Err::<(), _>("the store did not converge") })
    ///     .unwrap_err();
    /// assert_eq!(failure.seed(), 5);
    /// assert!(failure.to_string().contains("SIM_SEED=5"));
    /// ```
    pub fn try_run<F, Fut>(self, scenario: F) -> Result<Trace, SimulationFailure>
    where
        F: FnOnce(SimContext) -> Fut,
        Fut: Future<Output: ScenarioOutcome>,
    {
        let seed = self.seed;
        let fail = |message: String, trace: Option<Trace>| SimulationFailure {
            seed,
            message,
            trace,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .map_err(|e| fail(format!("cannot build the runtime: {e}"), None))?;
        // Kept out here so a panicking scenario still leaves its trace.
        let finished: Arc<Mutex<Option<Trace>>> = Arc::default();
        let result = catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(self.drive(scenario, Arc::clone(&finished)))
        }));
        let trace = finished.lock().take();
        match result {
            Ok(Ok(())) => Ok(trace.expect("a finished run leaves its trace")),
            Ok(Err(message)) => Err(fail(message, trace)),
            Err(panic) => Err(fail(format!("panicked: {}", panic_message(&*panic)), trace)),
        }
    }

    async fn drive<F, Fut>(
        self,
        scenario: F,
        finished: Arc<Mutex<Option<Trace>>>,
    ) -> Result<(), String>
    where
        F: FnOnce(SimContext) -> Fut,
        Fut: Future<Output: ScenarioOutcome>,
    {
        let server = Arc::new(FakeApiServer::start().await);
        let recorder = Arc::new(Recorder::new());
        server.shared.faults.lock().plan = Some(Box::new(SeededPlan::new(
            self.seed,
            self.mix.clone(),
            Arc::clone(&recorder),
            self.request_time,
        )));
        let context = SimContext {
            server: Arc::clone(&server),
            seed: self.seed,
            request_time: self.request_time,
            rng: Arc::new(Mutex::new(SimRng::new(self.seed, SCENARIO_STREAM))),
            recorder: Arc::clone(&recorder),
        };
        // The trace is written even when the scenario panics.
        struct Finish<'a> {
            seed: u64,
            server: &'a FakeApiServer,
            recorder: &'a Recorder,
            finished: &'a Mutex<Option<Trace>>,
        }
        impl Drop for Finish<'_> {
            fn drop(&mut self) {
                let requests = self.server.requests();
                let state = self.server.shared.state.lock();
                *self.finished.lock() = Some(self.recorder.finish(self.seed, &requests, &state));
            }
        }
        let _finish = Finish {
            seed: self.seed,
            server: &server,
            recorder: &recorder,
            finished: &finished,
        };
        match tokio::time::timeout(self.time_limit, scenario(context)).await {
            Ok(outcome) => outcome.into_result(),
            Err(_) => Err(format!(
                "the scenario did not finish within {:?} of simulated time",
                self.time_limit
            )),
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// What a scenario returns: `()` (failing by panicking) or a `Result`
/// whose error fails the run.
pub trait ScenarioOutcome {
    /// `Err` with a message when the scenario failed.
    fn into_result(self) -> Result<(), String>;
}

impl ScenarioOutcome for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: fmt::Debug> ScenarioOutcome for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        self.map_err(|e| format!("returned an error: {e:?}"))
    }
}

/// What a scenario gets: the server, an in-process client, the seed's own
/// random draws, and a way to add lines to the trace. Cheap to clone into
/// the tasks of a scenario.
#[derive(Debug, Clone)]
pub struct SimContext {
    server: Arc<FakeApiServer>,
    seed: u64,
    request_time: Duration,
    rng: Arc<Mutex<SimRng>>,
    recorder: Arc<Recorder>,
}

impl SimContext {
    /// The server (to fill it, read its objects, add faults by hand).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer_testing::Simulation;
    ///
    /// Simulation::new(1).run(|sim| async move {
    ///     assert!(sim.server().objects::<ConfigMap>().is_empty());
    /// });
    /// ```
    pub fn server(&self) -> &FakeApiServer {
        &self.server
    }

    /// A client that calls the server in process
    /// ([`FakeApiServer::in_process_client`]): give this to the code under test.
    pub fn client(&self) -> kube::Client {
        self.server.in_process_client()
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// A number in `0..n` from the scenario's stream of the seed (0 when
    /// `n` is 0): use it for the scenario's own choices.
    ///
    /// ```
    /// use kube_informer_testing::Simulation;
    ///
    /// Simulation::new(3).run(|sim| async move {
    ///     let writers = 1 + sim.random_below(4);
    ///     assert!((1..=4).contains(&writers));
    /// });
    /// ```
    pub fn random_below(&self, n: u64) -> u64 {
        self.rng.lock().below(n)
    }

    /// True with probability `p`, from the scenario's stream.
    pub fn chance(&self, p: f64) -> bool {
        self.rng.lock().chance(p)
    }

    /// Adds a line to the trace at the current simulated time, e.g. what
    /// the code under test observed.
    ///
    /// ```
    /// use kube_informer_testing::Simulation;
    ///
    /// let trace = Simulation::new(1).run(|sim| async move { sim.record("hello") });
    /// assert!(trace.lines().iter().any(|l| l.ends_with("note hello")));
    /// ```
    pub fn record(&self, line: impl fmt::Display) {
        self.recorder.line(format_args!("note {line}"));
    }

    /// Removes the seed's fault schedule (SI7): from now on requests and
    /// new watches are served without drawn faults (faults added by hand
    /// stay; requests still take their request time, SI8), e.g. before
    /// checking that the code under test converged.
    pub fn stop_faults(&self) {
        self.server.shared.faults.lock().plan = Some(Box::new(QuietPlan {
            request_time: self.request_time,
        }));
        self.recorder.line(format_args!("faults stopped"));
    }
}

/// Many seeded runs of one scenario, for CI loops (SI6).
///
/// When the environment variable `SIM_SEED` is set, only that seed runs,
/// whatever the range: the way to repeat a failure.
///
/// ```
/// use kube_informer_testing::Simulation;
///
/// let traces = Simulation::seeds(10..14).run(|sim| async move {
///     sim.record(sim.seed());
/// });
/// assert!(traces.iter().all(|t| t.lines().iter().any(|l| l.ends_with(&format!("note {}", t.seed())))));
/// ```
#[derive(Debug, Clone)]
pub struct SeedRuns {
    seeds: Range<u64>,
    mix: FaultMix,
    time_limit: Duration,
    request_time: Duration,
}

impl SeedRuns {
    /// The faults to draw in every run.
    #[must_use]
    pub fn faults(mut self, mix: FaultMix) -> Self {
        self.mix = mix;
        self
    }

    /// How much simulated time each run may take.
    #[must_use]
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// How much simulated time every request takes (SI8): see
    /// [`Simulation::request_time`].
    #[must_use]
    pub fn request_time(mut self, took: Duration) -> Self {
        self.request_time = took;
        self
    }

    /// The seeds that will run: `SIM_SEED` alone when set, else the range.
    ///
    /// # Panics
    ///
    /// When `SIM_SEED` is set to something that is not a `u64`.
    pub fn seed_list(&self) -> Vec<u64> {
        match std::env::var(SEED_VAR) {
            Ok(value) => vec![value.trim().parse().unwrap_or_else(|_| {
                panic!("{SEED_VAR}={value:?} is not a seed: give a number such as {SEED_VAR}=17")
            })],
            Err(_) => self.seeds.clone().collect(),
        }
    }

    /// Runs the scenario once per seed and returns the traces in seed order;
    /// on a failure, panics with the lowest failing seed and how to run it
    /// alone.
    ///
    /// The seeds run on as many threads as the machine has cores, each run
    /// on its own single-threaded, paused-clock runtime, so a run's trace is
    /// the same whichever thread ran it. Seeds are taken in increasing
    /// order, and once one fails no higher seed starts; every lower seed
    /// still finishes, so the failure reported is the one a run in order
    /// would have stopped at.
    ///
    /// # Panics
    ///
    /// When a run fails, or `SIM_SEED` is not a number.
    pub fn run<F, Fut>(self, scenario: F) -> Vec<Trace>
    where
        F: Fn(SimContext) -> Fut + Sync,
        Fut: Future<Output: ScenarioOutcome>,
    {
        let seeds = self.seed_list();
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(seeds.len())
            .max(1);
        let next = AtomicUsize::new(0);
        // The index of the lowest failing seed so far (usize::MAX: none).
        let lowest_failure = AtomicUsize::new(usize::MAX);
        let results: Mutex<Vec<Option<Result<Trace, SimulationFailure>>>> =
            Mutex::new((0..seeds.len()).map(|_| None).collect());
        let worker = || loop {
            let index = next.fetch_add(1, Ordering::SeqCst);
            if index >= seeds.len() || index > lowest_failure.load(Ordering::SeqCst) {
                return;
            }
            let result = Simulation {
                seed: seeds[index],
                mix: self.mix.clone(),
                time_limit: self.time_limit,
                request_time: self.request_time,
            }
            .try_run(&scenario);
            if result.is_err() {
                lowest_failure.fetch_min(index, Ordering::SeqCst);
            }
            results.lock()[index] = Some(result);
        };
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(worker);
            }
            worker();
        });
        let mut traces = Vec::with_capacity(seeds.len());
        for result in results.into_inner() {
            match result {
                Some(Ok(trace)) => traces.push(trace),
                Some(Err(failure)) => {
                    eprintln!("{}", failure.report());
                    panic!("{failure}");
                }
                // Not started: a lower seed failed, and is reported above.
                None => break,
            }
        }
        traces
    }
}

/// A failed simulation run: its seed, what went wrong and the trace up to
/// the failure.
#[derive(Debug, Clone)]
pub struct SimulationFailure {
    seed: u64,
    message: String,
    trace: Option<Trace>,
}

impl SimulationFailure {
    /// The seed that failed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The trace up to the failure (none when the run could not start).
    pub fn trace(&self) -> Option<&Trace> {
        self.trace.as_ref()
    }

    /// The failure, then the last lines of its trace.
    fn report(&self) -> String {
        let mut report = self.to_string();
        if let Some(trace) = &self.trace {
            let lines = trace.lines();
            let tail = &lines[lines.len().saturating_sub(40)..];
            report.push_str("\nlast lines of the trace:\n");
            for line in tail {
                report.push_str(line);
                report.push('\n');
            }
        }
        report
    }
}

impl fmt::Display for SimulationFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "simulation failed with seed {seed}: {message}\n\
             run this seed alone with {SEED_VAR}={seed} (Simulation::seeds reads it) \
             or Simulation::new({seed})",
            seed = self.seed,
            message = self.message,
        )
    }
}

impl std::error::Error for SimulationFailure {}
