//! The measurement every Rust runner shares.
//!
//! 1. Load and decode the workload; the runner builds its pipeline and its
//!    subscribers, which wait for the feed to open.
//! 2. Release free heap pages, read the resident size ("before") and reset
//!    the peak.
//! 3. Clock on; feed the initial list; wait until every fast subscriber has
//!    seen it; clock off. Read the resident size again ("after list"), so
//!    bytes per cached object = (after list − before) / N.
//! 4. Clock on; feed the updates, then the deletes; wait until every fast
//!    subscriber has seen everything (quiescence); clock off.
//! 5. Report events/s over both clocked spans, the peak resident size and,
//!    in the slow variant, how far behind the slow subscriber still was.
//!
//! In the slow variant subscriber 0 sleeps after each notification; the
//! waits above cover only the other subscribers, and the run ends when they
//! are done (the slow one's backlog is then at its largest).

use crate::{
    memory,
    progress::{ProgressWatch, SubscriberEnded, Targets, progress},
    report::Report,
    workload::{Counts, Phases, Workload, WorkloadError},
};
use std::{path::PathBuf, time::Duration};
use tokio::{sync::watch, time::Instant};

/// The phases of a workload, fed in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// The initial list.
    List = 1,
    /// The watch events before the first delete.
    Updates = 2,
    /// The deletes.
    Deletes = 3,
}

/// The runner's side of the feed: waits until the driver opens a phase.
#[derive(Debug, Clone)]
pub struct Feed(watch::Receiver<u8>);

impl Feed {
    /// Waits until `phase` may be fed. Returns at once if the driver is gone,
    /// so a runner never hangs on a dead driver.
    pub async fn opened(&mut self, phase: Phase) {
        let _ = self.0.wait_for(|opened| *opened >= phase as u8).await;
    }
}

/// One way of turning the workload into notifications for S subscribers.
pub trait Runner {
    /// The name the report carries.
    const NAME: &'static str;

    /// Whether every subscriber, slow ones included, must have seen all
    /// updates before the deletes are fed.
    const DRAIN_BEFORE_DELETES: bool = false;

    /// How many notifications each subscriber gets by the end of each phase.
    fn targets(counts: Counts) -> Targets;

    /// Builds the pipeline and spawns the subscriber tasks. Nothing may be fed
    /// before `feed` opens the phase.
    fn start(phases: Phases, subscribers: Vec<crate::progress::Progress>, feed: Feed);
}

/// What the command line chose.
#[derive(Debug, Clone)]
pub struct Options {
    /// The workload file.
    pub workload: PathBuf,
    /// How many subscribers.
    pub subscribers: usize,
    /// Whether subscriber 0 sleeps per notification.
    pub slow: bool,
    /// Give up when a wait lasts longer than this.
    pub timeout: Duration,
}

/// Why a run gave no figures.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// The workload could not be loaded.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The slow variant needs at least one subscriber besides the slow one.
    #[error("the slow variant needs at least 2 subscribers, got {0}")]
    SlowNeedsCompany(usize),
    /// A subscriber stopped early.
    #[error("subscriber {subscriber}: {source}")]
    SubscriberEnded {
        /// Which subscriber.
        subscriber: usize,
        /// What it saw.
        source: SubscriberEnded,
    },
    /// A wait lasted longer than the timeout.
    #[error("subscriber {subscriber} saw {seen} of {target} notifications within {timeout:?}")]
    Stalled {
        /// Which subscriber.
        subscriber: usize,
        /// What it had published when the time ran out.
        seen: u64,
        /// What the driver waited for.
        target: u64,
        /// The timeout.
        timeout: Duration,
    },
}

/// Runs one measurement with runner `R`.
pub async fn drive<R: Runner>(options: &Options) -> Result<Report, DriveError> {
    if options.slow && options.subscribers < 2 {
        return Err(DriveError::SlowNeedsCompany(options.subscribers));
    }
    let workload = Workload::load(&options.workload)?;
    let counts = workload.counts();
    let targets = R::targets(counts);
    let (subscribers, mut watches): (Vec<_>, Vec<_>) = (0..options.subscribers)
        .map(|index| progress(targets, options.slow && index == 0))
        .unzip();
    let (open, feed) = watch::channel(0u8);
    R::start(workload.into_phases(), subscribers, Feed(feed));
    // Let the subscriber tasks reach their first await before measuring.
    tokio::task::yield_now().await;

    memory::release_free_memory();
    let before = memory::resident().now;
    memory::reset_peak();

    let started = Instant::now();
    open.send_replace(Phase::List as u8);
    wait_fast(&mut watches, targets.list, options.timeout).await?;
    let list_time = started.elapsed();

    let after_list = if options.slow {
        None
    } else {
        memory::release_free_memory();
        Some(memory::resident().now)
    };

    let restarted = Instant::now();
    open.send_replace(Phase::Updates as u8);
    if R::DRAIN_BEFORE_DELETES {
        wait_all(&mut watches, targets.updates, options.timeout).await?;
    }
    open.send_replace(Phase::Deletes as u8);
    wait_fast(&mut watches, targets.last, options.timeout).await?;
    let elapsed = list_time + restarted.elapsed();

    let peak = memory::resident().peak;
    let slow_seen = options.slow.then(|| watches[0].published());
    Ok(Report {
        runner: R::NAME.to_string(),
        objects: counts.listed,
        updates: counts.applied,
        deletes: counts.deleted,
        subscribers: options.subscribers,
        slow: options.slow,
        events: counts.total(),
        deliveries_per_subscriber: targets.last,
        seconds: elapsed.as_secs_f64(),
        list_seconds: list_time.as_secs_f64(),
        rss_before: before,
        rss_after_list: after_list,
        peak_rss: peak,
        slow_backlog: slow_seen.map(|seen| targets.last.saturating_sub(seen)),
        slow_queued: options.slow.then(|| watches[0].queued()).flatten(),
    })
}

async fn wait_fast(
    watches: &mut [ProgressWatch],
    target: u64,
    timeout: Duration,
) -> Result<(), DriveError> {
    wait(watches, target, timeout, |watch| !watch.slow).await
}

async fn wait_all(
    watches: &mut [ProgressWatch],
    target: u64,
    timeout: Duration,
) -> Result<(), DriveError> {
    wait(watches, target, timeout, |_| true).await
}

async fn wait(
    watches: &mut [ProgressWatch],
    target: u64,
    timeout: Duration,
    include: impl Fn(&ProgressWatch) -> bool,
) -> Result<(), DriveError> {
    for (subscriber, watch) in watches.iter_mut().enumerate() {
        if !include(watch) {
            continue;
        }
        match tokio::time::timeout(timeout, watch.reached(target)).await {
            Ok(Ok(())) => {}
            Ok(Err(source)) => return Err(DriveError::SubscriberEnded { subscriber, source }),
            Err(_) => {
                return Err(DriveError::Stalled {
                    subscriber,
                    seen: watch.published(),
                    target,
                    timeout,
                });
            }
        }
    }
    Ok(())
}
