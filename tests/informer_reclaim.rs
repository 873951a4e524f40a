//! IR2: objects only notifications hold (the one an update replaced) are freed by
//! the informer once subscribers drop them; an informer with nothing more to
//! apply keeps none of them alive.

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use informer_common::*;
use kube_informer::{Informer, dispatch::SubscribeOptions, source::Event};

// IR2 (on tokio's paused clock: the sleep below only moves time on)
#[tokio::test(start_paused = true)]
async fn ir2_a_quiet_informer_keeps_no_replaced_object_alive() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let mut subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    let run = tokio::spawn(informer.run());

    relist(&source, &[cm("a", "1")], "1");
    let added = subscription.next().await.unwrap();
    assert_eq!(describe(&added), "added a@1 initial=true");
    let first = Arc::downgrade(added.object());
    drop(added);
    send(&source, Event::Modified(cm("a", "2")));
    let updated = subscription.next().await.unwrap();
    assert_eq!(describe(&updated), "updated a@1->2 resync=false");
    drop(updated);

    // No further change comes; the version the update replaced is no
    // subscriber's any more and must not stay alive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(first.upgrade().is_none(), "a@1 is still alive");
    let stored = informer.store().namespace("default").get("a").unwrap();
    assert_eq!(stored.metadata.resource_version.as_deref(), Some("2"));

    informer.stop();
    run.await.unwrap().unwrap();
}
