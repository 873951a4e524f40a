//! S6: what a sharded stream ([`KeyGate::filter`]) yields — only owned keys, acquisitions
//! replayed from the store, losses announced, each change with its guard.

use crate::cache_mode_common::CacheModeExt;
use futures::{StreamExt, poll};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Informer, Notification, ObjectKey, SubscribeOptions,
    shard::{KeyGate, Ownership, ShardEvent},
    source::Event,
    unstable::shard::{Member, MemberId, MemberSet},
};
use tokio::sync::mpsc;

fn cm(name: &str, rv: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = Some(name.into());
    cm.metadata.resource_version = Some(rv.into());
    cm
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("ns"), name).unwrap()
}

/// Two members; `mine` is the ownership of "a" in {a, b}.
fn halves() -> (Ownership, Vec<String>, Vec<String>) {
    let set = MemberSet::new([Member::new("a", "1"), Member::new("b", "1")]);
    let mine = Ownership::of(MemberId::new("a"), [set]);
    let (owned, other): (Vec<String>, Vec<String>) = (0..20)
        .map(|i| format!("o{i}"))
        .partition(|n| mine.owns(&key(n)));
    (mine, owned, other)
}

type Events = mpsc::UnboundedSender<Result<Event<ConfigMap>, std::io::Error>>;

async fn informer_with(names: &[String]) -> (Informer<ConfigMap>, Events) {
    let (events, receiver) = mpsc::unbounded_channel();
    events.send(Ok(Event::ListStart)).unwrap();
    for n in names {
        events.send(Ok(Event::Listed(cm(n, "1")))).unwrap();
    }
    events
        .send(Ok(Event::ListDone {
            resource_version: "1".into(),
        }))
        .unwrap();
    let stream =
        futures::stream::unfold(receiver, |mut r| async move { Some((r.recv().await?, r)) });
    let informer = Informer::builder_from_stream(stream)
        .cache_from_env()
        .build();
    (informer, events)
}

// S6
#[tokio::test]
async fn s6_only_owned_keys_pass_and_each_change_holds_a_guard() {
    let (mine, owned, other) = halves();
    assert!(!owned.is_empty() && !other.is_empty());
    let all: Vec<String> = owned.iter().chain(&other).cloned().collect();
    let (informer, _events) = informer_with(&all).await;
    let gate = KeyGate::new(mine);
    let mut sharded = gate.filter(
        informer.subscribe(SubscribeOptions::default()).unwrap(),
        informer.store(),
    );
    tokio::spawn(informer.run());
    let mut seen = Vec::new();
    let mut guards = Vec::new();
    for _ in 0..owned.len() {
        match sharded.next().await.unwrap() {
            ShardEvent::Change {
                notification,
                guard,
            } => {
                assert!(matches!(notification, Notification::Added { .. }));
                seen.push(guard.key().name().to_owned());
                guards.push(guard);
            }
            ShardEvent::Lost { key } => panic!("lost {key}"),
        }
    }
    seen.sort();
    let mut expected = owned.clone();
    expected.sort();
    assert_eq!(seen, expected);
    assert_eq!(gate.in_flight(), owned.len());
    // Nothing else is pending: the other half was dropped.
    assert!(poll!(sharded.next()).is_pending());
    drop(guards);
    assert_eq!(gate.in_flight(), 0);
}

// S6
#[tokio::test]
async fn s6_acquired_keys_replay_from_the_store_and_lost_keys_are_announced() {
    let (mine, owned, other) = halves();
    let all: Vec<String> = owned.iter().chain(&other).cloned().collect();
    let (informer, events) = informer_with(&all).await;
    let gate = KeyGate::new(Ownership::nothing());
    let mut sharded = gate.filter(
        informer.subscribe(SubscribeOptions::default()).unwrap(),
        informer.store(),
    );
    tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    // An update the stream sees before owning anything.
    events
        .send(Ok(Event::Modified(cm(&owned[0], "2"))))
        .unwrap();
    tokio::task::yield_now().await;
    assert!(poll!(sharded.next()).is_pending());

    gate.set_ownership(mine.clone());
    let mut replayed = Vec::new();
    for _ in 0..owned.len() {
        match sharded.next().await.unwrap() {
            ShardEvent::Change {
                notification:
                    Notification::Added {
                        object,
                        in_initial_list: true,
                    },
                guard,
            } => {
                if guard.key().name() == owned[0] {
                    // The store's newest state, not the listed one.
                    assert_eq!(object.metadata.resource_version.as_deref(), Some("2"));
                }
                replayed.push(guard.key().name().to_owned());
            }
            other => panic!("{other:?}"),
        }
    }
    replayed.sort();
    let mut expected = owned.clone();
    expected.sort();
    assert_eq!(replayed, expected);

    gate.set_ownership(Ownership::nothing());
    let mut lost = Vec::new();
    for _ in 0..owned.len() {
        match sharded.next().await.unwrap() {
            ShardEvent::Lost { key } => lost.push(key.name().to_owned()),
            other => panic!("{other:?}"),
        }
    }
    lost.sort();
    assert_eq!(lost, expected);
    // A change of a key no longer owned does not pass.
    events
        .send(Ok(Event::Modified(cm(&owned[0], "3"))))
        .unwrap();
    tokio::task::yield_now().await;
    assert!(poll!(sharded.next()).is_pending());
}

// S2
#[tokio::test]
async fn s2_a_guard_outlives_ownership_and_reports_the_loss() {
    let gate = KeyGate::new(Ownership::everything());
    let k = key("x");
    let mut guard = gate.begin(&k).unwrap();
    assert!(!gate.set_ownership(Ownership::everything()));
    let lost = tokio::spawn(async move {
        guard.lost().await;
        guard
    });
    tokio::task::yield_now().await;
    assert!(!lost.is_finished());
    assert!(
        gate.set_ownership(Ownership::nothing()),
        "work still in flight"
    );
    let guard = lost.await.unwrap();
    assert!(gate.released_busy());
    let released = gate.released();
    tokio::pin!(released);
    assert!(poll!(released.as_mut()).is_pending());
    drop(guard);
    assert!(poll!(released.as_mut()).is_ready());
    assert!(!gate.released_busy());
}
