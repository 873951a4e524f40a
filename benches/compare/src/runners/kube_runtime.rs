//! Runner (b): kube-runtime's reflector writing a shared store
//! (`reflector::store_shared` + `WatchStreamExt::reflect_shared`), with one
//! `ReflectHandle` per subscriber.
//!
//! Two properties of kube-runtime 5.0 shape this runner, and NOTES.md
//! ("How each runner works, and what its figures mean") states them next
//! to the figures:
//!
//! - Subscribers are told about applied objects only. The store forgets a
//!   deleted object and the handles never hear of it, so each subscriber gets
//!   N + U notifications, not N + U + D.
//! - A handle receives a reference and looks the object up in the store when
//!   polled. If the object was deleted in between, the handle returns
//!   `Pending` without arranging a wake-up and that subscriber stops for good.
//!   So the runner lets every subscriber drain the updates before it feeds
//!   the deletes (`DRAIN_BEFORE_DELETES`); the wait is inside the clock.

use crate::{
    drive::{Feed, Phase, Runner},
    progress::{Progress, Targets},
    workload::{Counts, EventKind, Phases, WatchEvent},
};
use futures::{StreamExt, future};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_runtime::{WatchStreamExt, reflector, watcher};

/// Capacity of the broadcast channel between the reflector and the handles;
/// 256 is what kube-rs's own shared-stream example uses. When the slowest
/// handle is this far behind, the reflector waits.
pub const BROADCAST_BUFFER: usize = 256;

/// See the module docs.
#[derive(Debug)]
pub struct KubeRuntime;

impl Runner for KubeRuntime {
    const NAME: &'static str = "kube-runtime";
    const DRAIN_BEFORE_DELETES: bool = true;

    fn targets(counts: Counts) -> Targets {
        let applied = counts.listed + counts.applied;
        Targets {
            list: counts.listed,
            updates: applied,
            last: applied,
        }
    }

    fn start(phases: Phases, subscribers: Vec<Progress>, mut feed: Feed) {
        let (_reader, writer) = reflector::store_shared::<ConfigMap>(BROADCAST_BUFFER);
        for mut progress in subscribers {
            let mut handle = writer
                .subscribe()
                .expect("a writer made by store_shared can always be subscribed");
            tokio::spawn(async move {
                while let Some(object) = handle.next().await {
                    progress.observe(&object);
                    progress.pace().await;
                }
            });
        }
        let events = async_stream::stream! {
            feed.opened(Phase::List).await;
            yield Ok(watcher::Event::Init);
            for object in phases.list {
                yield Ok(watcher::Event::InitApply(object));
            }
            yield Ok(watcher::Event::InitDone);
            feed.opened(Phase::Updates).await;
            for event in phases.updates {
                yield Ok(to_watcher_event(event));
            }
            feed.opened(Phase::Deletes).await;
            for event in phases.deletes {
                yield Ok(to_watcher_event(event));
            }
        };
        let events: futures::stream::BoxStream<
            'static,
            watcher::Result<watcher::Event<ConfigMap>>,
        > = events.boxed();
        tokio::spawn(
            events
                .reflect_shared(writer)
                .for_each(|_| future::ready(())),
        );
    }
}

fn to_watcher_event(event: WatchEvent) -> watcher::Event<ConfigMap> {
    match event.kind {
        EventKind::Added | EventKind::Modified => watcher::Event::Apply(event.object),
        EventKind::Deleted => watcher::Event::Delete(event.object),
    }
}
