//! Runner (a): this crate's `Informer`, built with
//! `Informer::builder_from_stream` and fed the workload as source events:
//! `ListStart`, one `Listed` per list item, `ListDone` with the list's
//! resourceVersion, then `Modified` / `Deleted` per watch event.
//!
//! Every subscriber is one `subscribe` drained by a task that calls
//! `observe` then `pace`; each sees every event (N + U + D notifications).
//! Two variants differ only in the slow subscriber's lag policy:
//! [`Ours`] keeps the default `Lag::Unbounded` for everyone, and
//! [`OursCoalesce`] subscribes the slow subscriber with `Lag::Coalesce`, so
//! its queue keeps only the newest state per key (it is then told fewer
//! notifications than the others, and its backlog in the report is counted
//! against N + U + D all the same).

use crate::{
    drive::{Feed, Phase, Runner},
    progress::{Progress, Targets},
    workload::{Counts, EventKind, Phases, WatchEvent},
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{Informer, Lag, SubscribeOptions, source::Event};
use std::convert::Infallible;

/// Runner (a); `COALESCE_SLOW` puts the slow subscriber (if any) on
/// `Lag::Coalesce` instead of the default `Lag::Unbounded`.
#[derive(Debug)]
pub struct OursWith<const COALESCE_SLOW: bool>;

/// Runner (a) with every subscriber on the default `Lag::Unbounded`.
pub type Ours = OursWith<false>;

/// Runner (a) with the slow subscriber (if any) on `Lag::Coalesce`.
pub type OursCoalesce = OursWith<true>;

impl<const COALESCE_SLOW: bool> Runner for OursWith<COALESCE_SLOW> {
    const NAME: &'static str = if COALESCE_SLOW {
        "ours-coalesce"
    } else {
        "ours"
    };

    fn targets(counts: Counts) -> Targets {
        every_event(counts)
    }

    fn start(phases: Phases, subscribers: Vec<Progress>, feed: Feed) {
        let slow_lag = if COALESCE_SLOW {
            Lag::Coalesce
        } else {
            Lag::Unbounded
        };
        start(phases, subscribers, feed, slow_lag);
    }
}

fn every_event(counts: Counts) -> Targets {
    Targets {
        list: counts.listed,
        updates: counts.listed + counts.applied,
        last: counts.total(),
    }
}

/// Builds the informer, subscribes everyone, then spawns `run`. `slow_lag`
/// applies to the slow subscriber only.
fn start(phases: Phases, subscribers: Vec<Progress>, mut feed: Feed, slow_lag: Lag) {
    let events = async_stream::stream! {
        feed.opened(Phase::List).await;
        yield Ok::<_, Infallible>(Event::ListStart);
        for object in phases.list {
            yield Ok(Event::Listed(object));
        }
        yield Ok(Event::ListDone { resource_version: phases.list_resource_version });
        feed.opened(Phase::Updates).await;
        for event in phases.updates {
            yield Ok(to_source_event(event));
        }
        feed.opened(Phase::Deletes).await;
        for event in phases.deletes {
            yield Ok(to_source_event(event));
        }
    };
    let informer = Informer::<ConfigMap>::builder_from_stream(events).build();
    for mut progress in subscribers {
        let lag = if progress.is_slow() {
            slow_lag
        } else {
            Lag::Unbounded
        };
        let mut subscription = informer
            .subscribe(SubscribeOptions::default().lag(lag))
            .expect("an informer that has not run yet accepts subscribers");
        tokio::spawn(async move {
            while let Some(notification) = subscription.next().await {
                progress.observe(notification.object());
                if progress.is_slow() {
                    // Its queue length is the pending memory the report shows.
                    progress.set_queued(subscription.pending());
                }
                progress.pace().await;
            }
        });
    }
    // The informer stops when its last handle is dropped, so this task holds
    // one until the source has ended and everything queued was handed out.
    tokio::spawn(async move {
        let run = informer.run();
        if let Err(error) = run.await {
            eprintln!("informer stopped with an error: {error}");
        }
        drop(informer);
    });
}

fn to_source_event(event: WatchEvent) -> Event<ConfigMap> {
    match event.kind {
        EventKind::Added => Event::Added(event.object),
        EventKind::Modified => Event::Modified(event.object),
        EventKind::Deleted => Event::Deleted(event.object),
    }
}
