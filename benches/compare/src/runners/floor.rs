//! Runner (d), the floor: the same events put into a `HashMap` and pushed
//! into one unbounded channel per subscriber. No keys queue, no deltas, no
//! handlers, no replay: what any informer must at least spend.

use crate::{
    drive::{Feed, Phase, Runner},
    progress::{Progress, Targets},
    workload::{Counts, EventKind, Phases},
};
use k8s_openapi::api::core::v1::ConfigMap;
use std::{collections::HashMap, sync::Arc};
use tokio::sync::mpsc;

/// See the module docs.
#[derive(Debug)]
pub struct Floor;

impl Runner for Floor {
    const NAME: &'static str = "floor";

    fn targets(counts: Counts) -> Targets {
        Targets {
            list: counts.listed,
            updates: counts.listed + counts.applied,
            last: counts.total(),
        }
    }

    fn start(phases: Phases, subscribers: Vec<Progress>, mut feed: Feed) {
        let mut senders = Vec::with_capacity(subscribers.len());
        for mut progress in subscribers {
            let (sender, mut receiver) = mpsc::unbounded_channel::<Arc<ConfigMap>>();
            senders.push(sender);
            tokio::spawn(async move {
                while let Some(object) = receiver.recv().await {
                    progress.observe(&object);
                    progress.pace().await;
                }
            });
        }
        tokio::spawn(async move {
            let mut cache = Cache {
                objects: HashMap::new(),
                senders,
            };
            feed.opened(Phase::List).await;
            for object in phases.list {
                cache.apply(EventKind::Added, object);
            }
            feed.opened(Phase::Updates).await;
            for event in phases.updates {
                cache.apply(event.kind, event.object);
            }
            feed.opened(Phase::Deletes).await;
            for event in phases.deletes {
                cache.apply(event.kind, event.object);
            }
        });
    }
}

struct Cache {
    objects: HashMap<String, Arc<ConfigMap>>,
    senders: Vec<mpsc::UnboundedSender<Arc<ConfigMap>>>,
}

impl Cache {
    fn apply(&mut self, kind: EventKind, object: ConfigMap) {
        let key = format!(
            "{}/{}",
            object.metadata.namespace.as_deref().unwrap_or(""),
            object.metadata.name.as_deref().unwrap_or("")
        );
        let object = Arc::new(object);
        match kind {
            EventKind::Deleted => {
                self.objects.remove(&key);
            }
            EventKind::Added | EventKind::Modified => {
                self.objects.insert(key, Arc::clone(&object));
            }
        }
        for sender in &self.senders {
            // A subscriber that is gone no longer counts; the driver notices.
            let _ = sender.send(Arc::clone(&object));
        }
    }
}
