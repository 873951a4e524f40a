//! The informer's run loop: the source pump and the single writer, driven
//! together on the caller's task.
//!
//! The writer is the only code that writes the store or hands notifications
//! to subscribers. Subscribe requests and resync ticks are handled between
//! two batches, so a late subscriber's replay is taken at one consistent
//! point (L1) and a resync round never splits a key's batch. A stop is seen
//! there too, so it never splits a batch between subscribers (L12).

use std::{mem, panic::AssertUnwindSafe, sync::Arc};

use futures::FutureExt;
use kube::Resource;
use tokio::sync::mpsc;
use tracing::Instrument;

use super::{
    apply::apply_deltas,
    core::Core,
    error::{Callback, Error},
    pump::{Handoff, SourceEnd, pump, together},
    reclaim::Reclaim,
    resync::ResyncTimer,
    subscribe_route::SubscribeRoute,
};
use crate::{
    dispatch::{Distributor, EndReason, Start, SubscribeRequest},
    panic::panic_message,
    resource::WatchedResource,
    store::OldVersion,
};

/// The span `run` is instrumented with (ER2): the resource in words, and as
/// fields the labels its metrics carry (group, version, plural, namespace
/// or `all`), so two informers of one Rust type (two `DynamicObject`
/// informers, or one kind in two namespaces) log under different names.
fn span(resource: &WatchedResource) -> tracing::Span {
    tracing::info_span!(
        "informer",
        resource = %resource,
        group = resource.group.as_str(),
        version = resource.version.as_str(),
        plural = resource.resource.as_str(),
        namespace = resource.namespace.as_deref().unwrap_or("all"),
    )
}

/// The body of [`Informer::run`](super::Informer::run).
pub(crate) async fn run<K>(core: Arc<Core<K>>) -> Result<(), Error>
where
    K: Resource + Send + Sync + 'static,
{
    match core.life.start() {
        Start::Started => {}
        // A stop that came before `run` ends the informer here (L7).
        Start::StoppedBeforeRun => {
            core.release_unrun();
            return Ok(());
        }
        Start::AlreadyRan => return Err(Error::AlreadyRunning),
    }
    let (events, distributor, requests) = {
        let mut route = core.route.lock();
        match mem::replace(&mut *route, SubscribeRoute::Released) {
            SubscribeRoute::Unstarted {
                events,
                distributor,
            } => {
                let (sender, receiver) = mpsc::unbounded_channel();
                *route = SubscribeRoute::Running { requests: sender };
                (events, distributor, receiver)
            }
            // Only the run that started the life takes the route, and only
            // a life that ended without running releases it untaken.
            other => {
                *route = other;
                drop(route);
                core.life.finish(EndReason::Stopped);
                return Ok(());
            }
        }
    };
    // Whether `run` completes or its future is dropped, the informer ends
    // the same way: stopped, subscribers told, requests refused.
    let mut teardown = Teardown {
        core: Arc::clone(&core),
        distributor,
        requests,
        reason: EndReason::Stopped,
    };
    let span = span(&core.resource);
    let outcome = async {
        tracing::info!("informer started");
        core.metrics.started();
        let Teardown {
            distributor,
            requests,
            ..
        } = &mut teardown;
        distributor.mark_started();
        distributor.stop_on(core.life.stop_token());
        let handoff = Handoff::default();
        // The pump and the writer share this task and only the handoff;
        // the writer ends once the pump has closed the FIFO and it has
        // drained it, or at the end of its batch once a stop came (L12):
        // the stop is not a branch around both, which would cut a batch
        // some subscribers had and others had not.
        let writer = write(&core, distributor, requests, &handoff);
        let source = pump(
            events,
            &core.fifo,
            &core.reporter,
            &core.sync_progress,
            &handoff,
            core.life.stop_requested_wait(),
        );
        let body = async {
            match together(writer, source, &handoff).await {
                SourceEnd::Panicked(message) if !core.life.stop_requested() => {
                    tracing::warn!("event stream panicked; informer stopped");
                    Outcome::Panicked(Callback::EventStream, message)
                }
                SourceEnd::Ended if !core.life.stop_requested() => {
                    tracing::info!("source ended; informer stopped");
                    Outcome::Finished
                }
                // Asked to stop, also while the writer drained an ended source.
                _ => {
                    tracing::info!("informer stopped");
                    Outcome::Stopped
                }
            }
        };
        // L9: a panic nothing caught closer to its cause stops the informer
        // with its message rather than unwinding through the caller's task.
        match AssertUnwindSafe(body).catch_unwind().await {
            Ok(outcome) => outcome,
            Err(payload) => {
                let message = panic_message(payload);
                core.reporter.report(Error::Panicked {
                    callback: Callback::Informer,
                    message: message.clone(),
                });
                Outcome::Panicked(Callback::Informer, message)
            }
        }
    }
    .instrument(span)
    .await;
    let (reason, result) = match outcome {
        Outcome::Stopped => (EndReason::Stopped, Ok(())),
        Outcome::Finished => (EndReason::Finished, Ok(())),
        Outcome::Panicked(callback, message) => (
            EndReason::Panicked(message.clone()),
            Err(Error::Panicked { callback, message }),
        ),
    };
    teardown.reason = reason;
    drop(teardown);
    result
}

/// How the run loop ended.
enum Outcome {
    Stopped,
    Finished,
    Panicked(Callback, String),
}

/// How long the writer, idle, keeps the objects it holds for subscribers to
/// drop (see `reclaim`) before it lets go of them.
const RELEASE_WHEN_IDLE: std::time::Duration = std::time::Duration::from_secs(1);

/// The most FIFO pops whose notifications share one wake per subscriber.
const WAKE_BATCH: usize = 64;

/// The single writer: pops the FIFO, applies, distributes; between batches,
/// registers subscribers and runs resync rounds. Returns once the FIFO is
/// closed and empty, or at the end of a batch once a stop came (L12).
async fn write<K>(
    core: &Core<K>,
    distributor: &mut Distributor<K>,
    requests: &mut mpsc::UnboundedReceiver<SubscribeRequest<K>>,
    handoff: &Handoff,
) where
    K: Resource + Send + Sync + 'static,
{
    let fifo = &core.fifo;
    let store = &core.writer;
    let mut timer = ResyncTimer::new(distributor.resync_check_period());
    let mut synced = false;
    let mut batch = Vec::new();
    let mut reclaim = Reclaim::default();
    loop {
        // Between two batches: a stop ends the writer here, with every
        // subscriber handed the same notifications (L12).
        if core.life.stop_requested() {
            distributor.end_batch();
            return;
        }
        // Then control messages.
        while let Ok(request) = requests.try_recv() {
            register(core, distributor, request);
        }
        let now = tokio::time::Instant::now();
        // As client-go's reflector does, a relist starts the resync check
        // period over (L3).
        if handoff.take_relisted() {
            timer.restart(now);
        }
        if timer.due(now) {
            resync_round(core, distributor, now);
        }

        // A round of pops; each subscriber is woken once for the round
        // (`end_batch`), not once per notification. Subscribers join only
        // between rounds, so one with none has no reader for the versions
        // an update replaces, and a compact store need not decode them (CM8).
        let old_version = if distributor.is_empty() {
            OldVersion::IfDecoded
        } else {
            OldVersion::Decoded
        };
        let mut popped = 0;
        loop {
            // The producer (the pump) shares this task, so nothing enqueues
            // between this check and the pop: the flag is exactly whether
            // the FIFO had synced before this pop (I4).
            let in_initial_list = !fifo.has_synced();
            let Some(deltas) = fifo.try_pop() else { break };
            handoff.popped();
            let key = apply_deltas(
                store,
                deltas,
                in_initial_list,
                old_version,
                &mut batch,
                &core.reporter,
            );
            // L10: while this waits for a full Bounded subscriber, the pump
            // does not read the source.
            handoff.writer_waiting(true);
            for notification in &batch {
                reclaim.hold(notification);
            }
            for notification in batch.drain(..) {
                distributor.distribute_batched(&key, notification).await;
            }
            handoff.writer_waiting(false);
            mark_synced_once(core, &mut synced);
            popped += 1;
            // A stop that ended a wait for room ends the batch at this pop,
            // so full `Bounded` queues go past their bound by at most the
            // rest of one pop's notifications (L12).
            if popped == WAKE_BATCH
                || distributor.is_stopping()
                || !tokio::task::coop::has_budget_remaining()
            {
                break;
            }
            // One unit per pop, as between rounds; it cannot yield here.
            tokio::task::coop::consume_budget().await;
        }
        distributor.end_batch();
        // What subscribers have dropped since the last round is freed here,
        // on the thread that decodes the watch (see `reclaim`).
        reclaim.free_unheld();
        if popped > 0 {
            // Let the pump and timers in between long runs of batches.
            tokio::task::coop::consume_budget().await;
            continue;
        }
        mark_synced_once(core, &mut synced);
        if fifo.is_closed() {
            return;
        }
        tokio::select! {
            biased;
            Some(request) = requests.recv() => register(core, distributor, request),
            now = timer.tick() => resync_round(core, distributor, now),
            () = handoff.progress() => {}
            // Idle with objects held: free what subscribers have dropped by
            // then and let go of the rest, so a quiet informer holds none.
            () = tokio::time::sleep(RELEASE_WHEN_IDLE), if reclaim.holds_any() => {
                reclaim.release_all();
            }
        }
    }
}

/// Registers a subscriber asked for while running: the store as it is now is
/// its replay (L1).
fn register<K>(core: &Core<K>, distributor: &mut Distributor<K>, request: SubscribeRequest<K>)
where
    K: Resource + Send + Sync + 'static,
{
    let replay = core.store.snapshot();
    tracing::debug!(replayed = replay.len(), "subscriber joined");
    distributor.register(request, replay);
}

/// A resync check: the FIFO resyncs only when some subscriber is due (I3).
fn resync_round<K>(core: &Core<K>, distributor: &mut Distributor<K>, now: tokio::time::Instant)
where
    K: Resource + Send + Sync + 'static,
{
    if distributor.should_resync(now) {
        tracing::debug!("resync round");
        if let Err(error) = core.fifo.resync() {
            core.reporter.report(Error::from_fifo(error));
        }
    }
}

/// Marks the store synced once the FIFO has handed out the whole initial
/// list (F7); from then on `has_synced` is true for good.
fn mark_synced_once<K>(core: &Core<K>, synced: &mut bool)
where
    K: Resource + Send + Sync + 'static,
{
    if !*synced && core.fifo.has_synced() {
        *synced = true;
        core.writer.mark_synced();
        core.metrics.synced();
        tracing::info!(objects = core.store.len(), "informer synced");
    }
}

/// Ends the informer when dropped: refuses new subscribers, ends the open
/// ones after what is queued for them with `reason` (L6), ends the error
/// streams.
struct Teardown<K: Resource + Send + Sync + 'static> {
    core: Arc<Core<K>>,
    distributor: Distributor<K>,
    requests: mpsc::UnboundedReceiver<SubscribeRequest<K>>,
    reason: EndReason,
}

impl<K: Resource + Send + Sync + 'static> Drop for Teardown<K> {
    fn drop(&mut self) {
        let core = &self.core;
        *core.route.lock() = SubscribeRoute::Released;
        core.life.stop();
        core.fifo.close();
        // Requests sent before the route was released are refused.
        self.requests.close();
        while let Ok(request) = self.requests.try_recv() {
            request.refuse();
        }
        let reason = mem::replace(&mut self.reason, EndReason::Stopped);
        self.distributor.close_with(reason.clone());
        core.reporter.close();
        // Last: whoever sees the end sees every subscription and error
        // stream closed.
        core.life.finish(reason);
    }
}
