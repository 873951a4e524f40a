//! One live runner process: the wire table's informer set-up on a client
//! from a kubeconfig, measured from `READY` (when `live.sh` starts the
//! writer) until every subscriber has seen the writer's U updates (see the
//! module docs of [`super`]).

use super::{LiveReport, client};
use crate::{
    flags::Flags,
    wire::{
        count::{CounterWatch, counter},
        drive::{WireRunner, allocator, cpu_times},
    },
};
use std::{
    io::Write,
    path::PathBuf,
    time::{Duration, Instant},
};

/// What the command line chose: `live RUNNER --kubeconfig F --objects N
/// --updates U --subscribers S [--timeout-secs 900]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveOptions {
    /// Kubeconfig of the cluster.
    pub kubeconfig: PathBuf,
    /// N: the Pods the writer created (the cluster must hold no others).
    pub objects: u64,
    /// U: the updates the writer makes.
    pub updates: u64,
    /// S: subscribers.
    pub subscribers: usize,
    /// Give up when the sync, or the wait for the updates, lasts longer.
    pub timeout: Duration,
}

impl LiveOptions {
    /// Reads the flags of `live RUNNER`.
    pub fn from_flags(flags: &Flags) -> Result<Self, String> {
        let options = Self {
            kubeconfig: PathBuf::from(flags.text("kubeconfig")?),
            objects: flags.number("objects", None)? as u64,
            updates: flags.number("updates", None)? as u64,
            subscribers: flags.number("subscribers", Some(1))?,
            timeout: Duration::from_secs(flags.number("timeout-secs", Some(900))? as u64),
        };
        if options.objects == 0 || options.updates == 0 {
            return Err("--objects and --updates must be at least 1".into());
        }
        if options.subscribers == 0 {
            return Err("--subscribers must be at least 1".into());
        }
        Ok(options)
    }
}

/// Why a live run gave no figures.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The client could not be built.
    #[error("{0}")]
    Client(String),
    /// A subscriber stopped or stalled.
    #[error(
        "{phase}: subscriber {subscriber} saw {seen} of {target} notifications ({why}; timeout {timeout:?})"
    )]
    Stalled {
        /// `sync` or `updates`.
        phase: &'static str,
        /// Which subscriber.
        subscriber: usize,
        /// What it had published (at its last milestone, see [`milestones`]).
        seen: u64,
        /// What the runner waited for.
        target: u64,
        /// Ended or timed out.
        why: &'static str,
        /// The timeout.
        timeout: Duration,
    },
}

/// Runs runner `R`: prints `READY …` on stdout once synced, and returns the
/// figures of the watch phase.
pub async fn run<R: WireRunner>(options: &LiveOptions) -> Result<LiveReport, LiveError> {
    let client = client(&options.kubeconfig)
        .await
        .map_err(LiveError::Client)?;
    let (n, u) = (options.objects, options.updates);
    let (counters, mut watches): (Vec<_>, Vec<_>) = (0..options.subscribers)
        .map(|_| counter(milestones(n, u)))
        .unzip();
    let clock = Instant::now();
    let _started = R::start(client, false, counters);
    wait_all(&mut watches, "sync", n, options.timeout).await?;
    let sync_seconds = clock.elapsed().as_secs_f64();

    // The peak of the watch phase alone; the process's peak (sync included)
    // is read before the reset.
    let at_ready = crate::memory::resident();
    let peak_before_watch = at_ready.peak;
    let watch_peak_known = crate::memory::reset_peak();
    println!("READY {} sync_seconds={sync_seconds:.3}", R::NAME);
    let _ = std::io::stdout().flush();
    let start = cpu_times();
    let watching = Instant::now();
    wait_all(&mut watches, "updates", n + u, options.timeout).await?;
    let end = cpu_times();
    let mut report = LiveReport::new(
        R::NAME,
        allocator(),
        n,
        u,
        options.subscribers,
        sync_seconds,
        watching.elapsed().as_secs_f64(),
        start,
        end,
    );
    let memory = crate::memory::resident();
    report.rss = memory.now;
    report.peak_rss = memory.peak.max(peak_before_watch);
    report.watch_peak_rss = if watch_peak_known { memory.peak } else { 0 };
    report.rss_at_ready = at_ready.now;
    if crate::wire::drive::allocator() == "system" {
        (report.heap_in_use, report.heap_free_kept) = crate::wire::drive::heap();
    }
    Ok(report)
}

/// N, N + U, and every twentieth of the way between, so that a stall says
/// how far the subscriber got (to within U/20); 22 publications at most.
pub fn milestones(objects: u64, updates: u64) -> Vec<u64> {
    let mut milestones: Vec<u64> = (0..=PROGRESS_STEPS)
        .map(|step| objects + updates * step / PROGRESS_STEPS)
        .collect();
    milestones.dedup();
    milestones
}

/// See [`milestones`].
const PROGRESS_STEPS: u64 = 20;

async fn wait_all(
    watches: &mut [CounterWatch],
    phase: &'static str,
    target: u64,
    timeout: Duration,
) -> Result<(), LiveError> {
    let deadline = tokio::time::Instant::now() + timeout;
    for (subscriber, watch) in watches.iter_mut().enumerate() {
        let why = match tokio::time::timeout_at(deadline, watch.reached(target)).await {
            Ok(true) => continue,
            Ok(false) => "its stream ended",
            Err(_) => "timed out",
        };
        return Err(LiveError::Stalled {
            phase,
            subscriber,
            seen: watch.published(),
            target,
            why,
            timeout,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milestones_run_from_the_sync_to_the_last_update() {
        let steps = milestones(2000, 3000);
        assert_eq!(steps.first(), Some(&2000));
        assert_eq!(steps.last(), Some(&5000));
        assert_eq!(steps.len(), 21);
        assert_eq!(milestones(10, 5), vec![10, 11, 12, 13, 14, 15]);
    }

    #[test]
    fn live_options_need_a_kubeconfig_and_counts() {
        let args = |list: &[&str]| -> Vec<String> { list.iter().map(|a| a.to_string()).collect() };
        let flags = Flags::parse(&args(&[
            "--kubeconfig",
            "k",
            "--objects",
            "2000",
            "--updates",
            "3000",
        ]))
        .unwrap();
        let options = LiveOptions::from_flags(&flags).unwrap();
        assert_eq!(
            (options.objects, options.updates, options.subscribers),
            (2000, 3000, 1)
        );
        let flags = Flags::parse(&args(&["--kubeconfig", "k", "--objects", "2000"])).unwrap();
        assert!(LiveOptions::from_flags(&flags).is_err());
    }
}
