//! Helpers shared by the informer tests: ConfigMaps, a source the test
//! feeds by hand, and folds that rebuild a cache from what was observed.
#![allow(dead_code)]

use std::{collections::BTreeMap, io, sync::Arc};

use futures::{Stream, StreamExt, channel::mpsc};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube_informer::{Notification, source::Event, store::Store};

/// A ConfigMap `default/{name}` at resourceVersion `rv`.
pub fn cm(name: &str, rv: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

pub type SourceItem = Result<Event<ConfigMap>, io::Error>;

/// A source the test feeds by hand; the informer ends when it is dropped.
pub fn hand_source() -> (
    mpsc::UnboundedSender<SourceItem>,
    impl Stream<Item = SourceItem> + Send + 'static,
) {
    mpsc::unbounded()
}

pub fn send(source: &mpsc::UnboundedSender<SourceItem>, event: Event<ConfigMap>) {
    source.unbounded_send(Ok(event)).expect("informer is gone");
}

/// Sends a whole relist.
pub fn relist(source: &mpsc::UnboundedSender<SourceItem>, objects: &[ConfigMap], rv: &str) {
    send(source, Event::ListStart);
    for object in objects {
        send(source, Event::Listed(object.clone()));
    }
    send(
        source,
        Event::ListDone {
            resource_version: rv.into(),
        },
    );
}

pub fn name(object: &Arc<ConfigMap>) -> String {
    object.metadata.name.clone().unwrap()
}

pub fn rv(object: &ConfigMap) -> String {
    object.metadata.resource_version.clone().unwrap_or_default()
}

/// A short, comparable description of a notification.
pub fn describe(n: &Notification<ConfigMap>) -> String {
    match n {
        Notification::Added {
            object,
            in_initial_list,
        } => format!(
            "added {}@{} initial={in_initial_list}",
            name(object),
            rv(object)
        ),
        Notification::Updated { old, new, resync } => format!(
            "updated {}@{}->{} resync={resync}",
            name(new),
            rv(old),
            rv(new)
        ),
        Notification::Deleted {
            object,
            final_state_unknown,
        } => format!(
            "deleted {}@{} unknown={final_state_unknown}",
            name(object),
            rv(object)
        ),
    }
}

/// name → resourceVersion, rebuilt from notifications. Panics when a
/// notification does not follow from the state before it (an update whose
/// `old` is not the current state, an add of a present key, a delete of an
/// absent one): that would mean something was lost or reordered.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Fold(pub BTreeMap<String, String>);

impl Fold {
    pub fn apply(&mut self, n: &Notification<ConfigMap>) {
        match n {
            Notification::Added { object, .. } => {
                let previous = self.0.insert(name(object), rv(object));
                assert!(previous.is_none(), "added a present key: {}", describe(n));
            }
            Notification::Updated { old, new, .. } => {
                let current = self.0.insert(name(new), rv(new));
                assert_eq!(
                    current.as_deref(),
                    Some(rv(old).as_str()),
                    "update does not start from the current state: {}",
                    describe(n)
                );
            }
            Notification::Deleted { object, .. } => {
                let removed = self.0.remove(&name(object));
                assert!(removed.is_some(), "deleted an absent key: {}", describe(n));
            }
        }
    }
}

/// The store as name → resourceVersion.
pub fn store_state(store: &Store<ConfigMap>) -> BTreeMap<String, String> {
    store
        .list()
        .iter()
        .map(|object| (name(object), rv(object)))
        .collect()
}

/// What a cache fed by `events` must end up holding: watch events upsert or
/// remove, a relist replaces everything.
pub fn fold_events<'a>(
    events: impl IntoIterator<Item = &'a Event<ConfigMap>>,
) -> BTreeMap<String, String> {
    let mut state = BTreeMap::new();
    let mut relist: Option<BTreeMap<String, String>> = None;
    for event in events {
        match event {
            Event::Added(o) | Event::Modified(o) => {
                state.insert(o.metadata.name.clone().unwrap(), rv(o));
            }
            Event::Deleted(o) => {
                state.remove(o.metadata.name.as_deref().unwrap());
            }
            Event::ListStart => relist = Some(BTreeMap::new()),
            Event::Listed(o) => {
                relist
                    .as_mut()
                    .expect("Listed outside a relist")
                    .insert(o.metadata.name.clone().unwrap(), rv(o));
            }
            Event::ListDone { .. } => state = relist.take().expect("ListDone without ListStart"),
            Event::Bookmark { .. } => {}
        }
    }
    state
}

/// Reads everything a subscription yields until it ends.
pub async fn collect_all<S>(subscription: S) -> Vec<Notification<ConfigMap>>
where
    S: Stream<Item = Notification<ConfigMap>>,
{
    subscription.collect().await
}

/// Reads what is ready now, without waiting.
pub fn ready<S>(subscription: &mut S) -> Vec<Notification<ConfigMap>>
where
    S: Stream<Item = Notification<ConfigMap>> + Unpin,
{
    let mut out = Vec::new();
    while let Some(Some(n)) = futures::FutureExt::now_or_never(subscription.next()) {
        out.push(n);
    }
    out
}
