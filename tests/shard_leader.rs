//! Leader election as a gate (feature `leader-election`).
#![cfg(feature = "leader-election")]

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Informer, Notification, SubscribeOptions,
    shard::{ShardEvent, leader::Leadership},
    source::Event,
};
use tokio::sync::watch;

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = Some(name.into());
    cm.metadata.resource_version = Some("1".into());
    cm
}

#[tokio::test(start_paused = true)]
async fn a_gated_stream_passes_only_while_leader_and_replays_on_election() {
    let events = futures::stream::iter([
        Ok::<_, std::io::Error>(Event::ListStart),
        Ok(Event::Listed(cm("a"))),
        Ok(Event::Listed(cm("b"))),
        Ok(Event::ListDone {
            resource_version: "1".into(),
        }),
    ])
    .chain(futures::stream::pending());
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let (elected, is_leader) = watch::channel(false);
    let leadership = Leadership::new(is_leader);
    tokio::spawn(leadership.run());
    let mut gated = leadership.filter(
        informer.subscribe(SubscribeOptions::default()).unwrap(),
        informer.store(),
    );
    tokio::spawn(informer.run());
    informer.wait_until_synced().await;
    let nothing = tokio::time::timeout(Duration::from_secs(1), gated.next()).await;
    assert!(nothing.is_err(), "a follower sees nothing");

    elected.send(true).unwrap();
    let mut names = Vec::new();
    for _ in 0..2 {
        match gated.next().await.unwrap() {
            ShardEvent::Change {
                notification: Notification::Added { object, .. },
                ..
            } => names.push(object.metadata.name.clone().unwrap()),
            other => panic!("{other:?}"),
        }
    }
    names.sort();
    assert_eq!(names, ["a", "b"]);

    elected.send(false).unwrap();
    for _ in 0..2 {
        assert!(matches!(
            gated.next().await.unwrap(),
            ShardEvent::Lost { .. }
        ));
    }
}

#[tokio::test(start_paused = true)]
async fn work_runs_only_while_leader() {
    let (elected, is_leader) = watch::channel(false);
    let leadership = Leadership::new(is_leader);
    let work = tokio::spawn({
        let leadership = leadership.clone();
        async move {
            leadership
                .run_while_leader(tokio::time::sleep(Duration::from_secs(60)))
                .await
        }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!work.is_finished(), "waits for leadership");
    elected.send(true).unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    elected.send(false).unwrap();
    assert_eq!(
        work.await.unwrap(),
        None,
        "cancelled when leadership is lost"
    );

    let finished = tokio::spawn({
        let leadership = leadership.clone();
        async move { leadership.run_while_leader(async { 7 }).await }
    });
    elected.send(true).unwrap();
    assert_eq!(finished.await.unwrap(), Some(7));
}
