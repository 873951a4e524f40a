//! Errors met while running reach the user and do not stop the informer
//! (R9).

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use futures::StreamExt;
use informer_common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{Informer, dispatch::SubscribeOptions, informer::Error, source::Event};

// R9
#[tokio::test]
async fn r9_every_source_error_reaches_errors_callback_and_count() {
    let calls = Arc::new(AtomicUsize::new(0));
    let events = futures::stream::iter([
        Err(std::io::Error::other("list failed: 500")),
        Ok(Event::ListStart),
        Ok(Event::Listed(cm("a", "1"))),
        Ok(Event::ListDone {
            resource_version: "1".into(),
        }),
        Err(std::io::Error::other("watch failed: connection reset")),
        Ok(Event::Modified(cm("a", "2"))),
        // An object the FIFO cannot key: reported, skipped, nothing else lost.
        Ok(Event::Added(ConfigMap::default())),
        Ok(Event::Added(cm("b", "3"))),
    ]);
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .on_error({
            let calls = Arc::clone(&calls);
            move |_| {
                calls.fetch_add(1, Ordering::Relaxed);
            }
        })
        .build();
    let errors = informer.errors();
    let subscription = informer.subscribe(SubscribeOptions::default()).unwrap();
    informer.run().await.unwrap();

    let errors: Vec<Error> = errors.collect().await;
    let messages: Vec<String> = errors
        .iter()
        .map(|e| format!("{:#}", anyhow::Error::from(e.clone())))
        .collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    // ER1: a stream's own error type stays reachable.
    assert!(matches!(&errors[0], Error::Stream(e) if e.downcast_ref::<std::io::Error>().is_some()));
    assert!(messages[0].contains("list failed: 500"));
    assert!(messages[1].contains("connection reset"));
    assert!(matches!(errors[2], Error::Queue(_)));
    assert!(errors.iter().all(Error::is_runtime));
    assert_eq!(informer.metrics().errors, 3);
    assert_eq!(calls.load(Ordering::Relaxed), 3);

    // The informer went on after each error.
    let seen: Vec<String> = collect_all(subscription)
        .await
        .iter()
        .map(describe)
        .collect();
    assert_eq!(
        seen,
        [
            "added a@1 initial=true",
            "updated a@1->2 resync=false",
            "added b@3 initial=false",
        ]
    );
}

// R9: every errors() stream gets every error; one created after the
// informer stopped ends at once.
#[tokio::test]
async fn r9_every_error_stream_gets_every_error() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let first = informer.errors();
    let second = informer.errors();
    let run = tokio::spawn(informer.run());
    for i in 0..5 {
        source
            .unbounded_send(Err(std::io::Error::other(format!("failure {i}"))))
            .unwrap();
    }
    drop(source);
    run.await.unwrap().unwrap();
    assert_eq!(first.collect::<Vec<_>>().await.len(), 5);
    assert_eq!(second.collect::<Vec<_>>().await.len(), 5);
    assert!(informer.errors().next().await.is_none());
}

// A transform runs on every object before it is cached.
#[tokio::test]
async fn transform_runs_before_caching() {
    let events = futures::stream::iter([
        Ok::<_, std::io::Error>(Event::ListStart),
        Ok(Event::Listed(cm("a", "1"))),
        Ok(Event::ListDone {
            resource_version: "1".into(),
        }),
    ]);
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .transform(|mut cm: ConfigMap| {
            cm.metadata.labels = Some([("seen".to_string(), "yes".to_string())].into());
            Ok(cm)
        })
        .indexer("seen", |cm: &ConfigMap| {
            cm.metadata
                .labels
                .iter()
                .flatten()
                .map(|(_, v)| v.clone())
                .collect()
        })
        .build();
    informer.run().await.unwrap();
    let store = informer.store();
    assert_eq!(store.by_index("seen", "yes").unwrap().len(), 1);
}

// R9: a transform that refuses an object keeps it out of the queue and the
// cache, reports why with the object's key, and the informer goes on.
#[tokio::test]
async fn r9_a_refused_transform_skips_the_object_and_reports_it() {
    let events = futures::stream::iter([
        Ok::<_, std::io::Error>(Event::ListStart),
        Ok(Event::Listed(cm("a", "1"))),
        Ok(Event::Listed(cm("secret", "2"))),
        Ok(Event::Listed(cm("b", "3"))),
        Ok(Event::ListDone {
            resource_version: "3".into(),
        }),
    ]);
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .transform(|cm: ConfigMap| {
            if cm.metadata.name.as_deref() == Some("secret") {
                return Err("not for this cache".into());
            }
            Ok(cm)
        })
        .build();
    let mut errors = informer.errors();
    informer.run().await.unwrap();
    let store = informer.store();
    let mut names: Vec<_> = store
        .list()
        .iter()
        .filter_map(|cm| cm.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    let Some(Error::Queue(error)) = errors.next().await else {
        panic!("the refusal is reported as a queue error");
    };
    assert!(
        matches!(&*error, kube_informer::store::Error::Transform { key, .. } if key.as_str().ends_with("secret")),
        "{error:?}"
    );
    assert_eq!(informer.metrics().errors, 1);
}
