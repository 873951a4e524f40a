//! Runs an informer script through kube-informer's [`Informer`], fed by
//! [`Informer::builder_from_stream`] from the scripted list and watch, and
//! prints what each subscription received after every step, in the format
//! of the Go `informer-trace` harness (`conformance/TRACE_FORMAT.md`).
//!
//! Time is tokio's paused clock, moved only where the Go harness moves its
//! fake clock: a `relist` waits out the reflector's backoff (client-go
//! v0.34 on the fake clock: 60 s; v0.36 on the real clock: no fake time), and
//! a `resync` step jumps to the instant client-go's reflector fires its
//! resync timer, one check period after the later of the last list and the
//! last round. Our informer's check timer restarts at the same points (each
//! completed relist and each round), so it fires at that same instant and
//! never in between.
//!
//! No sentinel is needed: everything runs on one current-thread runtime, so
//! after a step the runner yields until the source has been read and no
//! subscription received anything for a while.

use crate::cache_mode_common::CacheModeExt;
use std::{
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::{FutureExt, StreamExt, channel::mpsc};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Informer, Subscription,
    dispatch::{MINIMUM_RESYNC_PERIOD, SubscribeOptions},
    source::Event,
};
use serde_json::{Value, json};
use tokio::{task::JoinHandle, time::Instant};

use crate::{
    informer_notes::{canonical, note},
    informer_steps::{Handler, Header, Script, Step, parse_go_duration},
};

/// How far the Go harness moves its fake clock to get past the reflector's
/// relist backoff, by client-go build.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer_conformance::informer_runner::relist_backoff;
///
/// assert_eq!(relist_backoff("v034"), Duration::from_secs(60));
/// assert_eq!(relist_backoff("v036"), Duration::ZERO);
/// ```
pub fn relist_backoff(client_go: &str) -> Duration {
    match client_go {
        // v0.36 backs off on the real clock; the fake clock stays put.
        "v036" => Duration::ZERO,
        _ => RELIST_BACKOFF_STEP,
    }
}

/// The Go harness's step past a relist backoff, and the floor of every
/// scripted resync period.
const RELIST_BACKOFF_STEP: Duration = Duration::from_secs(60);

/// Yields without any news after which a step counts as complete.
const QUIET_YIELDS: usize = 16;
/// Yields after which a step that keeps producing is a harness error.
const MAX_YIELDS: usize = 200_000;

/// Whether `script` can only run on client-go (it turns on the
/// `InOrderInformers` gate, RealFIFO, which kube-informer does not follow).
pub fn client_go_only(script: &str) -> bool {
    Script::parse(script).is_ok_and(|s| s.header.in_order_informers)
}

/// Runs `script` (JSON lines, header first) and returns one output line per
/// step. `relist_backoff` is how far the clock moves before each relist
/// (see [`relist_backoff()`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kube_informer_conformance::informer_runner::run;
///
/// let script = r#"{"script":"s","resyncCheck":"1h","handlers":[{"name":"h","resync":"1h"}]}
/// {"step":"list","items":[{"ns":"default","name":"a","rv":"1"}],"rv":"1"}
/// {"step":"resync"}"#;
/// let out = run(script, Duration::from_secs(60));
/// assert_eq!(out.len(), 2);
/// assert_eq!(out[1]["handlers"][0]["n"][0]["resync"], true);
/// ```
pub fn run(script: &str, relist_backoff: Duration) -> Vec<Value> {
    let script = match Script::parse(script) {
        Ok(script) => script,
        Err(e) => return vec![json!({"step": 0, "harness_error": e.to_string()})],
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    runtime.block_on(async {
        let mut run = ScriptRun::new(&script.header, relist_backoff);
        let mut out = Vec::with_capacity(script.steps.len());
        for (index, line) in script.steps.iter().enumerate() {
            out.push(run.apply(index, line).await);
        }
        run.finish().await;
        out
    })
}

type SourceItem = Result<Event<ConfigMap>, Infallible>;

/// One subscription and what it received during the current step.
struct Recorder {
    name: String,
    subscription: Subscription<ConfigMap>,
    notes: Vec<Value>,
}

struct ScriptRun {
    informer: Informer<ConfigMap>,
    source: mpsc::UnboundedSender<SourceItem>,
    /// Events sent but not yet read by the informer.
    unread: Arc<AtomicUsize>,
    recorders: Vec<Recorder>,
    run: Option<JoinHandle<()>>,
    /// The resync check period in force (0: none), lowered by handlers
    /// registered before start (L3).
    check_period: Duration,
    /// When client-go's reflector last (re)started its resync timer: the
    /// last list or the last round.
    timer_started: Instant,
    relist_backoff: Duration,
    failed: Option<String>,
}

impl ScriptRun {
    fn new(header: &Header, relist_backoff: Duration) -> Self {
        let (source, events) = mpsc::unbounded::<SourceItem>();
        let unread = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&unread);
        let events = events.inspect(move |_| {
            counter.fetch_sub(1, Ordering::SeqCst);
        });
        let mut failed = None;
        if header.in_order_informers {
            failed = Some(
                "inOrderInformers (client-go's RealFIFO) is not what kube-informer follows"
                    .to_owned(),
            );
        }
        let check_period = period(&header.resync_check, "resyncCheck").unwrap_or_else(|e| {
            failed.get_or_insert(e);
            Duration::ZERO
        });
        // `KUBE_INFORMER_CACHE=compact` runs the scripts against the
        // compact cache (scripts/suites/conformance.sh does both).
        let informer = Informer::builder_from_stream(events)
            .resync_check_period(check_period)
            .cache_from_env()
            .build();
        let mut run = Self {
            informer,
            source,
            unread,
            recorders: Vec::new(),
            run: None,
            check_period,
            timer_started: Instant::now(),
            relist_backoff,
            failed,
        };
        for handler in &header.handlers {
            run.subscribe(handler);
        }
        run
    }

    fn fail(&mut self, message: impl Into<String>) {
        self.failed.get_or_insert_with(|| message.into());
    }

    fn subscribe(&mut self, handler: &Handler) {
        let resync = match period(&handler.resync, &format!("handler {}", handler.name)) {
            Ok(resync) => resync,
            Err(e) => return self.fail(e),
        };
        if self.run.is_none() && !resync.is_zero() {
            // Before start a shorter period lowers the check period (L3);
            // the reflector's resync timer then runs at that period.
            let resync = resync.max(MINIMUM_RESYNC_PERIOD);
            if resync < self.check_period {
                self.check_period = resync;
            }
        }
        match self
            .informer
            .subscribe(SubscribeOptions::default().resync(resync))
        {
            Ok(subscription) => self.recorders.push(Recorder {
                name: handler.name.clone(),
                subscription,
                notes: Vec::new(),
            }),
            Err(e) => self.fail(format!("handler {}: {e}", handler.name)),
        }
    }

    fn send(&mut self, event: Event<ConfigMap>) {
        self.unread.fetch_add(1, Ordering::SeqCst);
        if self.source.unbounded_send(Ok(event)).is_err() {
            self.unread.fetch_sub(1, Ordering::SeqCst);
            self.fail("the informer stopped reading its source");
        }
    }

    fn send_list(&mut self, step: &Step) {
        self.send(Event::ListStart);
        for item in &step.items {
            self.send(Event::Listed(item.config_map()));
        }
        self.send(Event::ListDone {
            resource_version: step.rv.clone(),
        });
        self.timer_started = Instant::now();
    }

    async fn apply(&mut self, index: usize, line: &str) -> Value {
        let mut out = json!({"step": index});
        match serde_json::from_str::<Step>(line) {
            Ok(step) => {
                out["op"] = json!(step.op);
                if self.failed.is_none() {
                    self.step(&step).await;
                }
                if self.failed.is_none() {
                    self.settle().await;
                }
                if self.failed.is_none() {
                    out["synced"] = json!(self.informer.has_synced());
                    out["handlers"] = self.take_notes(&step.op);
                }
            }
            Err(e) => self.fail(format!("malformed step {line:?}: {e}")),
        }
        if let Some(error) = &self.failed {
            out["harness_error"] = json!(error);
        }
        out
    }

    async fn step(&mut self, step: &Step) {
        if self.run.is_none() && step.op != "list" {
            return self.fail("the first step must be list");
        }
        match step.op.as_str() {
            "list" => {
                if self.run.is_some() {
                    return self.fail("list is only the first step; use relist");
                }
                self.send_list(step);
                let run = self.informer.run();
                self.run = Some(tokio::spawn(async move {
                    // A second `run` is the only error, and this is the first.
                    let _ = run.await;
                }));
            }
            "watch" => {
                let Some(obj) = &step.obj else {
                    return self.fail("watch step without obj");
                };
                let cm = obj.config_map();
                let event = match step.event.as_deref() {
                    Some("ADDED") => Event::Added(cm),
                    Some("MODIFIED") => Event::Modified(cm),
                    Some("DELETED") => Event::Deleted(cm),
                    Some("BOOKMARK") => Event::Bookmark {
                        resource_version: obj.rv.clone(),
                    },
                    other => return self.fail(format!("unknown watch event {other:?}")),
                };
                self.send(event);
            }
            "relist" => {
                // The watch ended with 410 Gone; the reflector backs off, then
                // lists again.
                tokio::time::advance(self.relist_backoff).await;
                self.send_list(step);
            }
            "resync" => {
                if self.check_period.is_zero() {
                    return self.fail("resync step, but the informer has no resync timer");
                }
                let due = self.timer_started + self.check_period;
                tokio::time::advance(due.saturating_duration_since(Instant::now())).await;
                self.timer_started = due;
            }
            "subscribe" => match &step.handler {
                Some(handler) => self.subscribe(handler),
                None => self.fail("subscribe step without handler"),
            },
            other => self.fail(format!("unknown step {other:?}")),
        }
    }

    /// Yields to the informer until it has read every event sent and no
    /// subscription received anything for [`QUIET_YIELDS`] yields in a row.
    /// The clock is paused and this task never sleeps, so tokio does not
    /// move time on its own meanwhile.
    async fn settle(&mut self) {
        let mut quiet = 0;
        for _ in 0..MAX_YIELDS {
            tokio::task::yield_now().await;
            let news = self.collect();
            if news || self.unread.load(Ordering::SeqCst) > 0 {
                quiet = 0;
            } else {
                quiet += 1;
                if quiet == QUIET_YIELDS {
                    return;
                }
            }
        }
        self.fail("the informer did not settle");
    }

    /// Takes what each subscription has ready; true if anything was.
    fn collect(&mut self) -> bool {
        let mut news = false;
        for recorder in &mut self.recorders {
            while let Some(Some(notification)) = recorder.subscription.next().now_or_never() {
                recorder.notes.push(note(&notification));
                news = true;
            }
        }
        news
    }

    fn take_notes(&mut self, op: &str) -> Value {
        let handlers: Vec<Value> = self
            .recorders
            .iter_mut()
            .map(|recorder| {
                let mut notes = std::mem::take(&mut recorder.notes);
                canonical(op, &mut notes);
                json!({
                    "name": recorder.name,
                    "synced": recorder.subscription.sync_status().has_synced(),
                    "n": notes,
                })
            })
            .collect();
        Value::Array(handlers)
    }

    async fn finish(self) {
        self.informer.stop();
        if let Some(run) = self.run {
            let _ = run.await;
        }
    }
}

/// A scripted period: Go syntax, zero or above the Go harness's 60 s floor
/// (it tells the reflector's resync timer from its backoff timers by length).
fn period(text: &str, what: &str) -> Result<Duration, String> {
    let period = parse_go_duration(text).map_err(|e| format!("{what}: {e}"))?;
    if !period.is_zero() && period <= RELIST_BACKOFF_STEP {
        return Err(format!(
            "{what}: resync must be 0 or above {}s",
            RELIST_BACKOFF_STEP.as_secs()
        ));
    }
    Ok(period)
}
