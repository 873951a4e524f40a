//! Waiting for the first sync fails fast (I6–I10): a refused or missing
//! resource is named at once, a wait given a deadline with
//! `tokio::time::timeout` finds the source's last error on the informer,
//! an informer that ends is reported, and the factory waits for all its
//! informers under one deadline.

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::{error::Error as _, time::Duration};

use futures::channel::mpsc;
use informer_common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind},
};
use kube_informer::{Informer, InformerFactory, informer::SyncError, source, source::Event};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
use tokio::time::{Instant, timeout};

const FORBIDDEN: &str = r#"configmaps is forbidden: User "system:serviceaccount:web:app" cannot list resource "configmaps""#;

fn forbidden() -> ApiStatus {
    ApiStatus::new(403, "Forbidden", FORBIDDEN)
}

/// An informer on ConfigMaps in namespace `web` labelled `app=web`, running.
fn web_configmaps(server: &FakeApiServer) -> Informer<ConfigMap> {
    let informer = Informer::builder(Api::<ConfigMap>::namespaced(server.client(), "web"))
        .cache_from_env()
        .source_config(source::Config::default().label_selector("app=web"))
        .build();
    tokio::spawn(informer.run());
    informer
}

/// What a list/watch source yields.
type ApiItem = Result<Event<ConfigMap>, source::Error>;

/// A source of `source::Error`s and events the test feeds by hand, as a
/// list/watch source would yield them.
fn api_like_source() -> (
    mpsc::UnboundedSender<ApiItem>,
    mpsc::UnboundedReceiver<ApiItem>,
) {
    mpsc::unbounded()
}

fn watch_error(code: u16, message: &str) -> source::Error {
    source::Error::WatchEvent {
        resource: "configmaps".into(),
        code,
        reason: "Refused".into(),
        message: message.into(),
    }
}

// I6
#[tokio::test(start_paused = true)]
async fn i6_a_serving_server_syncs_and_a_synced_informer_answers_at_once() {
    let server = FakeApiServer::start().await;
    let mut labelled = cm("a", "");
    labelled.metadata.namespace = Some("web".into());
    labelled.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    server.create(&labelled).unwrap();
    let informer = web_configmaps(&server);

    informer.wait_until_synced().await.unwrap();
    assert_eq!(informer.store().len(), 1);
    // Synced already: no time needed, not even under a zero timeout.
    let started = Instant::now();
    timeout(Duration::ZERO, informer.wait_until_synced())
        .await
        .expect("answers at once")
        .unwrap();
    informer.store().wait_until_synced().await.unwrap();
    assert_eq!(started.elapsed(), Duration::ZERO);
}

// I6: errors that are not refusals do not end the wait; the sync does.
#[tokio::test(start_paused = true)]
async fn i6_errors_before_the_sync_do_not_fail_a_wait_that_then_syncs() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), 2);
    let informer = web_configmaps(&server);
    informer.wait_until_synced().await.unwrap();
    assert!(informer.has_synced());
    assert_eq!(informer.metrics().errors, 2);
}

// I7
#[tokio::test(start_paused = true)]
async fn i7_a_forbidden_list_is_refused_at_once_naming_the_resource_and_message() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, forbidden(), usize::MAX);
    let informer = web_configmaps(&server);

    let started = Instant::now();
    let error = informer.wait_until_synced().await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO, "fails at once");
    match &error {
        SyncError::Refused {
            resource,
            status,
            message,
            ..
        } => {
            assert_eq!(*status, 403);
            assert_eq!(message, FORBIDDEN);
            assert_eq!(resource.resource, "configmaps");
            assert_eq!(resource.namespace.as_deref(), Some("web"));
            assert_eq!(resource.label_selector.as_deref(), Some("app=web"));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.starts_with(
            r#"configmaps in namespace web with labels "app=web" is forbidden (403): "#
        ),
        "{text}"
    );
    assert!(text.contains(FORBIDDEN), "{text}");
    assert!(text.contains("RBAC"), "{text}");
    // Its store and its subscriptions answer the same.
    assert!(matches!(
        informer.store().wait_until_synced().await,
        Err(SyncError::Refused { status: 403, .. })
    ));
    let subscription = informer
        .subscribe(kube_informer::dispatch::SubscribeOptions::default())
        .unwrap();
    assert!(matches!(
        subscription.wait_until_synced().await,
        Err(SyncError::Refused { status: 403, .. })
    ));
    // R9: the informer itself goes on retrying.
    assert!(!informer.is_stopped());
}

// I7: a refusal reported while the wait is on ends it; so does one
// reported before the wait began.
#[tokio::test(start_paused = true)]
async fn i7_a_refusal_ends_a_wait_whether_it_came_before_or_during_it() {
    let (source, events) = api_like_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    tokio::spawn(informer.run());

    let waiting = tokio::spawn({
        let informer = informer.clone();
        async move { informer.wait_until_synced().await }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!waiting.is_finished());
    let answered = Instant::now();
    source
        .unbounded_send(Err(watch_error(401, "Unauthorized")))
        .unwrap();
    let error = waiting.await.unwrap().unwrap_err();
    assert_eq!(answered.elapsed(), Duration::ZERO);
    assert!(
        matches!(&error, SyncError::Refused { status: 401, message, .. } if message == "Unauthorized"),
        "{error:?}"
    );
    assert!(error.to_string().contains("credentials"), "{error}");

    // A later call, the refusal still the latest answer: refused at once.
    let error = informer.wait_until_synced().await;
    assert!(
        matches!(error, Err(SyncError::Refused { status: 401, .. })),
        "{error:?}"
    );
}

// I7: once a list is answered the refusal no longer stands; the wait goes
// on and ends as the informer does (here, under a timeout of the caller's,
// the refusal still the informer's last error, I8).
#[tokio::test(start_paused = true)]
async fn i7_a_refusal_no_longer_stands_once_a_list_is_answered() {
    let (source, events) = api_like_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    tokio::spawn(informer.run());
    source.unbounded_send(Err(watch_error(403, "no"))).unwrap();
    assert!(matches!(
        informer.wait_until_synced().await,
        Err(SyncError::Refused { status: 403, .. })
    ));

    source.unbounded_send(Ok(Event::ListStart)).unwrap();
    // Let the informer read it.
    tokio::time::sleep(Duration::from_millis(1)).await;
    let started = Instant::now();
    let waited = timeout(Duration::from_secs(10), informer.wait_until_synced()).await;
    assert!(waited.is_err(), "{waited:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    let last_error = informer.last_error();
    assert_eq!(last_error.and_then(|e| e.status_code()), Some(403));

    source
        .unbounded_send(Ok(Event::ListDone {
            resource_version: "1".into(),
        }))
        .unwrap();
    informer.wait_until_synced().await.unwrap();
}

// I7: the informer keeps retrying after a refusal; once the server lets
// the list through, a new wait succeeds.
#[tokio::test(start_paused = true)]
async fn i7_after_a_refusal_the_informer_retries_and_a_later_wait_succeeds() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, forbidden(), 1);
    let informer = web_configmaps(&server);
    assert!(matches!(
        informer.wait_until_synced().await,
        Err(SyncError::Refused { status: 403, .. })
    ));
    // The retry comes after a backoff (R5: 0.8 s, jittered up to 1.6 s).
    tokio::time::sleep(Duration::from_secs(2)).await;
    informer.wait_until_synced().await.unwrap();
    assert_eq!(
        server.requests().iter().filter(|r| r.is_list()).count(),
        2,
        "one refused list, one answered"
    );
}

// I7
#[tokio::test(start_paused = true)]
async fn i7_a_resource_the_server_does_not_serve_is_not_found() {
    let server = FakeApiServer::start().await;
    let widgets = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let informer = Informer::builder(Api::<DynamicObject>::namespaced_with(
        server.client(),
        "web",
        &widgets,
    ))
    .cache_from_env()
    .build();
    tokio::spawn(informer.run());

    let started = Instant::now();
    let error = informer.wait_until_synced().await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO, "fails at once");
    match &error {
        SyncError::NotFound { resource, message } => {
            assert_eq!(
                (resource.group.as_str(), resource.version.as_str()),
                ("example.com", "v1")
            );
            assert_eq!(resource.resource, "widgets");
            assert_eq!(message, "unknown resource example.com/v1/widgets");
        }
        other => panic!("expected not found, got {other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.starts_with(
            "widgets.example.com in namespace web is not served by the API server (404): \
             unknown resource example.com/v1/widgets;"
        ),
        "{text}"
    );
    assert!(text.contains("CustomResourceDefinition"), "{text}");
    assert!(
        text.contains("/apis/example.com/v1/namespaces/web/widgets"),
        "{text}"
    );
    assert_eq!(error.resource().namespace.as_deref(), Some("web"));
}

// I8: the caller's deadline passes; the informer says what its source
// reported last, and keeps at it.
#[tokio::test(start_paused = true)]
async fn i8_a_list_failing_with_500_leaves_its_last_error_when_a_deadline_passes() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), usize::MAX);
    let informer = web_configmaps(&server);

    let started = Instant::now();
    let waited = timeout(Duration::from_secs(30), informer.wait_until_synced()).await;
    assert!(waited.is_err(), "{waited:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    let last_error = informer.last_error().expect("the list failed");
    assert_eq!(last_error.status_code(), Some(500));
    // ER1: the whole story is along the chain, each part once.
    let chain = format!("{:#}", anyhow::Error::from(last_error.clone()));
    assert!(
        chain.starts_with("list/watch failed: list of configmaps"),
        "{chain}"
    );
    assert!(
        chain.contains("internal error injected by the fake server"),
        "{chain}"
    );
    assert!(last_error.source().is_some());
    // Several lists failed meanwhile; the informer is still at it.
    assert!(server.requests().iter().filter(|r| r.is_list()).count() > 2);
    assert!(!informer.is_stopped());
}

// I8: a wait that takes a timeout itself answers `TimedOut` with the last
// error as its source: a controller's `sync_timeout`, checked in
// tests/controller.rs (c12_a_timed_out_sync_names_its_last_error_once_in_the_chain).

// I8: no error and no sync: nothing to report, and nothing was asked of
// the server.
#[tokio::test(start_paused = true)]
async fn i8_an_informer_that_is_not_running_has_no_last_error() {
    let server = FakeApiServer::start().await;
    let informer = Informer::builder(Api::<ConfigMap>::all(server.client()))
        .cache_from_env()
        .build();
    let waited = timeout(Duration::from_secs(5), informer.wait_until_synced()).await;
    assert!(waited.is_err(), "{waited:?}");
    assert!(informer.last_error().is_none());
    assert!(server.requests().is_empty());
}

// I8: a plain stream has no HTTP answers: its errors never refuse, they
// stay the informer's last error.
#[tokio::test(start_paused = true)]
async fn i8_a_plain_stream_informer_keeps_its_own_error_as_the_last() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    tokio::spawn(informer.run());
    source
        .unbounded_send(Err(std::io::Error::other("403 Forbidden, in my own words")))
        .unwrap();
    let waited = timeout(Duration::from_secs(3), informer.wait_until_synced()).await;
    assert!(waited.is_err(), "{waited:?}");
    let last_error = informer.last_error().expect("the stream's error");
    let own = last_error
        .source()
        .and_then(|e| e.downcast_ref::<std::io::Error>())
        .expect("the stream's own error");
    assert_eq!(own.to_string(), "403 Forbidden, in my own words");
}

// I8: the factory's wait has no deadline of its own: it waits for an
// informer not yet started, and answers once it has synced.
#[tokio::test(start_paused = true)]
async fn i8_the_factory_wait_has_no_deadline_of_its_own() {
    let server = FakeApiServer::start().await;
    let factory = InformerFactory::new(server.client());
    factory
        .build(Api::<ConfigMap>::all(server.client()), |b| b)
        .unwrap();
    let waiting = tokio::spawn({
        let factory = factory.clone();
        async move { factory.wait_until_synced().await }
    });
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!waiting.is_finished());
    factory.start();
    waiting.await.unwrap().unwrap();
    factory.shutdown().await;
}

// I9
#[tokio::test(start_paused = true)]
async fn i9_an_informer_stopped_before_it_synced_is_reported_stopped() {
    // Stopped before `run` (L7).
    let (_source, events) = hand_source();
    let unrun = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    unrun.stop();
    let error = unrun.wait_until_synced().await.unwrap_err();
    assert!(matches!(&error, SyncError::Stopped { .. }), "{error:?}");
    assert!(
        error.to_string().contains("stopped before it synced"),
        "{error}"
    );

    // Stopped while the wait is on.
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), usize::MAX);
    let informer = web_configmaps(&server);
    let waiting = tokio::spawn({
        let informer = informer.clone();
        async move { informer.wait_until_synced().await }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    let stopped = Instant::now();
    informer.stop();
    let error = waiting.await.unwrap().unwrap_err();
    assert_eq!(stopped.elapsed(), Duration::ZERO);
    assert!(
        matches!(&error, SyncError::Stopped { resource } if resource.resource == "configmaps"),
        "{error:?}"
    );

    // A source that ends before its list is done.
    let (source, events) = hand_source();
    let ended = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    tokio::spawn(ended.run());
    send(&source, Event::ListStart);
    drop(source);
    assert!(matches!(
        ended.wait_until_synced().await,
        Err(SyncError::Stopped { .. })
    ));
}

// I9: an informer that synced and then stopped still counts as synced.
#[tokio::test(start_paused = true)]
async fn i9_an_informer_that_synced_before_it_stopped_is_synced() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    tokio::spawn(informer.run());
    relist(&source, &[cm("a", "1")], "1");
    drop(source);
    informer.wait_until_synced().await.unwrap();
    informer.store().wait_until_synced().await.unwrap();
}

// I10
#[tokio::test(start_paused = true)]
async fn i10_the_factory_reports_the_forbidden_one_of_two_informers() {
    let server = FakeApiServer::start().await;
    let factory = InformerFactory::new(server.client());
    let configmaps = factory
        .build(Api::<ConfigMap>::namespaced(server.client(), "web"), |b| b)
        .unwrap();
    factory.start();
    factory.wait_until_synced().await.unwrap();

    // The program may list ConfigMaps but not Secrets.
    server.fail_requests(RequestMatch::List, forbidden(), usize::MAX);
    let secrets = factory
        .build(Api::<Secret>::namespaced(server.client(), "web"), |b| b)
        .unwrap();
    factory.start();
    let started = Instant::now();
    let error = factory.wait_until_synced().await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO, "fails at once");
    match &error {
        SyncError::Refused {
            resource, status, ..
        } => {
            assert_eq!(*status, 403);
            assert_eq!(resource.resource, "secrets");
            assert_eq!(resource.namespace.as_deref(), Some("web"));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .starts_with("secrets in namespace web is forbidden (403)")
    );
    assert!(configmaps.has_synced());
    assert!(!secrets.has_synced() && !secrets.is_stopped());
    factory.shutdown().await;
}

// I10: a deadline put around the factory's wait holds for all its
// informers at once, not one per informer; an informer the factory has not
// started never syncs, so the wait for it ends only at the deadline.
#[tokio::test(start_paused = true)]
async fn i10_the_factory_waits_once_for_all_under_one_deadline() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), usize::MAX);
    let factory = InformerFactory::new(server.client());
    for namespace in ["a", "b", "c"] {
        factory
            .build(
                Api::<ConfigMap>::namespaced(server.client(), namespace),
                |b| b,
            )
            .unwrap();
    }
    factory.start();
    let started = Instant::now();
    let waited = tokio::time::timeout(Duration::from_secs(20), factory.wait_until_synced()).await;
    assert!(waited.is_err(), "{waited:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(20));

    let unstarted = InformerFactory::new(server.client());
    unstarted
        .build(Api::<Secret>::all(server.client()), |b| b)
        .unwrap();
    let started = Instant::now();
    let waited = tokio::time::timeout(Duration::from_secs(5), unstarted.wait_until_synced()).await;
    assert!(waited.is_err(), "{waited:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    // A factory with no informer has nothing to wait for.
    InformerFactory::new(server.client())
        .wait_until_synced()
        .await
        .unwrap();
    factory.shutdown().await;
}

// I12: every wait returns `SyncError::Stopped` when its informer stops
// before syncing: the informer's, its store's, a subscription's and its
// `SyncStatus`'s, at the instant of the stop on the paused clock.
#[tokio::test(start_paused = true)]
async fn i12_every_wait_without_a_deadline_returns_when_the_informer_stops() {
    let server = FakeApiServer::start().await;
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), usize::MAX);
    let informer = web_configmaps(&server);
    let store = informer.store();
    let subscription = informer
        .subscribe(kube_informer::dispatch::SubscribeOptions::default())
        .unwrap();
    let status = subscription.sync_status();
    let waits = tokio::spawn({
        let informer = informer.clone();
        async move {
            let (a, b, c, d) = tokio::join!(
                informer.wait_until_synced(),
                store.wait_until_synced(),
                subscription.wait_until_synced(),
                status.wait_until_synced(),
            );
            (a, b, c, d, Instant::now())
        }
    });
    // Past the first list retries: nothing gives up on its own.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!waits.is_finished(), "no deadline of their own");
    let stopped = Instant::now();
    informer.stop();
    let (a, b, c, d, at) = waits.await.unwrap();
    for wait in [a, b, c, d] {
        assert!(
            matches!(&wait, Err(SyncError::Stopped { resource }) if resource.resource == "configmaps"),
            "{wait:?}"
        );
    }
    assert_eq!(at, stopped);
}

// I12: the factory's wait without a deadline fails when one of its
// informers stops before syncing, naming it.
#[tokio::test(start_paused = true)]
async fn i12_the_factory_wait_returns_when_an_informer_stops() {
    let server = FakeApiServer::start().await;
    let factory = InformerFactory::new(server.client());
    let configmaps = factory
        .build(Api::<ConfigMap>::all(server.client()), |b| b)
        .unwrap();
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), usize::MAX);
    let secrets = factory
        .build(Api::<Secret>::all(server.client()), |b| b)
        .unwrap();
    factory.start();
    let waiting = tokio::spawn({
        let factory = factory.clone();
        async move { (factory.wait_until_synced().await, Instant::now()) }
    });
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!waiting.is_finished());
    let stopped = Instant::now();
    secrets.stop();
    let (synced, at) = waiting.await.unwrap();
    match synced {
        Err(SyncError::Stopped { resource, .. }) => assert_eq!(resource.resource, "secrets"),
        other => panic!("expected the secrets informer's stop, got {other:?}"),
    }
    assert_eq!(at, stopped);
    drop(configmaps);
    factory.shutdown().await;
}
