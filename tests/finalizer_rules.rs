//! The finalizer helper (Z1–Z7, Z9–Z11) against the fake API server, which applies
//! JSON patches with `test` and deletes as kube-apiserver does: a deleted
//! object with finalizers is marked with a `deletionTimestamp` and goes
//! with its last finalizer. Tests also create objects already "being
//! deleted" from the test side (a `deletionTimestamp` in the object). The
//! same rules run against the real kube-apiserver in tests/e2e_finalizer.rs.

use crate::cache_mode_common::CacheModeExt;
use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::{
    api::core::v1::ConfigMap,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};
use kube::{Api, ResourceExt};
use kube_informer::{
    Informer, ObjectKey, SubscribeOptions,
    ext::NotificationStreamExt,
    finalizer::{self, Event, FinalizerApi, PATCH_TIMEOUT, finalizer},
    own_writes::WriteLog,
    queue::WorkQueue,
    resource_version::Written,
    runner::{Action, Runner},
};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
use parking_lot::Mutex;

const OURS: &str = "example.com/cleanup";
const OTHER: &str = "other.io/keep";

#[derive(Debug, PartialEq, thiserror::Error)]
#[error("failed on purpose")]
struct Failed;

type Outcome = Result<Action, finalizer::Error<Failed>>;

fn cm(name: &str, finalizers: &[&str], deleting: bool) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            finalizers: (!finalizers.is_empty())
                .then(|| finalizers.iter().map(|f| f.to_string()).collect()),
            deletion_timestamp: deleting.then(|| Time(Timestamp::now())),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn api(server: &FakeApiServer) -> Api<ConfigMap> {
    Api::namespaced(server.client(), "default")
}

/// What the reconcile was handed, by name.
fn seen(event: &Event<ConfigMap>) -> &'static str {
    match event {
        Event::Apply(_) => "apply",
        Event::Cleanup(_) => "cleanup",
    }
}

/// Runs `finalizer` through `api` (a plain or a recorded `Api`) with a
/// reconcile that records each event and answers `answer`; returns its
/// outcome and the events seen.
async fn run<A: FinalizerApi<ConfigMap>>(
    api: &A,
    object: ConfigMap,
    answer: Result<Action, Failed>,
) -> (Outcome, Vec<&'static str>) {
    let events = Mutex::new(Vec::new());
    let outcome = finalizer(api, OURS, Arc::new(object), |event| {
        events.lock().push(seen(&event));
        async move { answer }
    })
    .await;
    (outcome, events.into_inner())
}

fn writes(server: &FakeApiServer) -> usize {
    server.requests().iter().filter(|r| r.is_write()).count()
}

fn api_code(error: &kube::Error) -> Option<(u16, &str)> {
    match error {
        kube::Error::Api(status) => Some((status.code, status.reason.as_str())),
        _ => None,
    }
}

/// Z1, Z9: an object without the finalizer gets it, appended after the
/// ones it has; then Apply runs on the object the server answered with,
/// which carries it, and Apply's action comes back.
#[tokio::test]
async fn z1_z9_adds_the_finalizer_then_applies_the_answer() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    for (name, before, after) in [
        ("bare", &[][..], &[OURS][..]),
        ("other", &[OTHER][..], &[OTHER, OURS][..]),
    ] {
        let created = server.create(&cm(name, before, false)).unwrap();
        let applied: Arc<Mutex<Option<ConfigMap>>> = Arc::default();
        let every = Action::requeue(Duration::from_secs(9));
        let outcome = finalizer(&api, OURS, Arc::new(created), |event| {
            let applied = applied.clone();
            async move {
                match event {
                    Event::Apply(object) => *applied.lock() = Some((*object).clone()),
                    Event::Cleanup(_) => panic!("cleanup of a live object"),
                }
                Ok::<_, Failed>(every)
            }
        })
        .await;
        assert_eq!(outcome.unwrap(), every, "{name}");
        let stored = api.get(name).await.unwrap();
        assert_eq!(stored.finalizers(), after, "{name}");
        let applied = applied.lock().take().expect("Apply ran");
        assert_eq!(applied.finalizers(), after, "{name}");
        assert_eq!(applied.resource_version(), stored.resource_version());
    }
}

/// Z1, Z9: a refused addition runs no Apply; an Apply that fails after the
/// finalizer went on is Apply's error, and the finalizer stays.
#[tokio::test]
async fn z1_z9_no_apply_without_the_finalizer_and_its_error_after() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    let first = server.create(&cm("app", &[], false)).unwrap();
    server.fail_requests(RequestMatch::Update, ApiStatus::service_unavailable(), 1);
    let (outcome, events) = run(&api, first.clone(), Ok(Action::AwaitChange)).await;
    assert!(
        matches!(&outcome, Err(finalizer::Error::AddFinalizer(e)) if api_code(e) == Some((503, "ServiceUnavailable"))),
        "{outcome:?}"
    );
    assert!(events.is_empty(), "{events:?}");

    let (outcome, events) = run(&api, first, Err(Failed)).await;
    assert!(
        matches!(outcome, Err(finalizer::Error::ApplyFailed(Failed))),
        "{outcome:?}"
    );
    assert_eq!(events, ["apply"]);
    assert_eq!(api.get("app").await.unwrap().finalizers(), [OURS]);
}

/// Z2: with the finalizer on, a live object goes to Apply; its action or
/// its error comes back and nothing is written.
#[tokio::test]
async fn z2_applies_when_the_finalizer_is_on() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    let created = server.create(&cm("app", &[OTHER, OURS], false)).unwrap();
    server.clear_requests();

    let every = Action::requeue(Duration::from_secs(300));
    let (outcome, events) = run(&api, created.clone(), Ok(every)).await;
    assert_eq!((outcome.unwrap(), events), (every, vec!["apply"]));
    let (outcome, events) = run(&api, created, Err(Failed)).await;
    assert!(matches!(
        outcome,
        Err(finalizer::Error::ApplyFailed(Failed))
    ));
    assert_eq!(events, ["apply"]);
    assert_eq!(writes(&server), 0);
}

/// Z3: an object being deleted goes to Cleanup, then loses our finalizer
/// and only ours; the cleanup's action comes back.
#[tokio::test]
async fn z3_cleans_up_then_removes_the_finalizer() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    let deleting = server.create(&cm("app", &[OTHER, OURS], true)).unwrap();

    let (outcome, events) = run(&api, deleting, Ok(Action::AwaitChange)).await;
    assert_eq!(
        (outcome.unwrap(), events),
        (Action::AwaitChange, vec!["cleanup"])
    );
    assert_eq!(api.get("app").await.unwrap().finalizers(), [OTHER]);
}

/// Z3: a failed cleanup keeps the finalizer and writes nothing; the next
/// attempt cleans up and removes it.
#[tokio::test]
async fn z3_a_failed_cleanup_keeps_the_finalizer() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    let deleting = server.create(&cm("app", &[OURS], true)).unwrap();
    server.clear_requests();

    let (outcome, events) = run(&api, deleting.clone(), Err(Failed)).await;
    assert!(matches!(
        outcome,
        Err(finalizer::Error::CleanupFailed(Failed))
    ));
    assert_eq!(events, ["cleanup"]);
    assert_eq!(writes(&server), 0);
    assert_eq!(api.get("app").await.unwrap().finalizers(), [OURS]);

    let (outcome, events) = run(&api, deleting, Ok(Action::AwaitChange)).await;
    assert_eq!(
        (outcome.unwrap(), events),
        (Action::AwaitChange, vec!["cleanup"])
    );
    // Its last finalizer gone, the object being deleted is gone too.
    assert!(api.get_opt("app").await.unwrap().is_none());
}

/// Z4: an object being deleted without our finalizer is left alone.
#[tokio::test]
async fn z4_leaves_a_deleting_object_without_the_finalizer_alone() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    let deleting = server.create(&cm("app", &[OTHER], true)).unwrap();
    server.clear_requests();

    let (outcome, events) = run(&api, deleting, Ok(Action::requeue(Duration::from_secs(1)))).await;
    assert_eq!(outcome.unwrap(), Action::AwaitChange);
    assert!(events.is_empty());
    assert_eq!(writes(&server), 0);
}

/// Z5: the finalizers changed between the read and the patch: the addition
/// fails with the API server's 422 and appends nothing.
#[tokio::test]
async fn z5_a_concurrent_change_makes_the_addition_fail() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    for (name, read, meanwhile) in [
        ("bare", &[][..], &[OTHER][..]),
        ("one", &[OTHER][..], &[OTHER, "third.io/x"][..]),
    ] {
        let stale = server.create(&cm(name, read, false)).unwrap();
        server.update(&cm(name, meanwhile, false)).unwrap();

        let (outcome, events) = run(&api, stale, Ok(Action::AwaitChange)).await;
        let Err(finalizer::Error::AddFinalizer(error)) = outcome else {
            panic!("{name}: {outcome:?}");
        };
        assert_eq!(api_code(&error), Some((422, "Invalid")), "{name}");
        assert!(events.is_empty());
        assert_eq!(
            api.get(name).await.unwrap().finalizers(),
            meanwhile,
            "{name}"
        );
    }
}

/// Z5: our finalizer moved between the read and the patch (another writer
/// removed one before it): the removal fails and removes nothing, though
/// the cleanup ran (it runs again on the retry).
#[tokio::test]
async fn z5_a_concurrent_change_makes_the_removal_fail() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    let stale = server
        .create(&cm("app", &[OTHER, OURS, "third.io/x"], true))
        .unwrap();
    server
        .update(&cm("app", &[OURS, "third.io/x"], true))
        .unwrap();

    let (outcome, events) = run(&api, stale, Ok(Action::AwaitChange)).await;
    let Err(finalizer::Error::RemoveFinalizer(error)) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(api_code(&error), Some((422, "Invalid")));
    assert_eq!(events, ["cleanup"]);
    assert_eq!(
        api.get("app").await.unwrap().finalizers(),
        [OURS, "third.io/x"]
    );
}

/// Z5: the object read was deleted and another one created under its name,
/// carrying our finalizer and live: the removal computed from the old one
/// fails on the uid test instead of stripping the new one's finalizer.
#[tokio::test]
async fn z5_a_recreated_object_is_not_patched() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    let old = server.create(&cm("app", &[OURS], true)).unwrap();
    // Another writer removes the finalizer: the object goes.
    server.update(&cm("app", &[], true)).unwrap();
    let new = server.create(&cm("app", &[OURS], false)).unwrap();
    assert_ne!(old.uid(), new.uid());

    let (outcome, _) = run(&api, old, Ok(Action::AwaitChange)).await;
    let Err(finalizer::Error::RemoveFinalizer(error)) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(api_code(&error), Some((422, "Invalid")));
    assert_eq!(api.get("app").await.unwrap().finalizers(), [OURS]);
}

/// Z6: bad input fails before any request.
#[tokio::test]
async fn z6_bad_input_sends_nothing() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    let object = server.create(&cm("app", &[], false)).unwrap();
    server.clear_requests();
    let never = |_: Event<ConfigMap>| async { Ok::<_, Failed>(Action::AwaitChange) };

    for bad in ["cleanup", "Example.com/x", "example.com/"] {
        let outcome = finalizer(&api, bad, Arc::new(object.clone()), never).await;
        assert!(
            matches!(&outcome, Err(finalizer::Error::InvalidFinalizer { name, .. }) if name == bad),
            "{bad}: {outcome:?}"
        );
    }
    let mut unnamed = object.clone();
    unnamed.metadata.name = None;
    let outcome = finalizer(&api, OURS, Arc::new(unnamed), never).await;
    assert!(matches!(outcome, Err(finalizer::Error::UnnamedObject)));

    for (other, api_ns) in [
        (Api::<ConfigMap>::all(server.client()), None),
        (Api::namespaced(server.client(), "team-b"), Some("team-b")),
    ] {
        let outcome = finalizer(&other, OURS, Arc::new(object.clone()), never).await;
        let Err(finalizer::Error::WrongNamespace { object, api }) = outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(
            (object.as_deref(), api.as_deref()),
            (Some("default"), api_ns)
        );
    }
    assert!(server.requests().is_empty());
}

/// Z7: a patch the server never answers fails at the deadline, on tokio's
/// clock, as a kube service error.
#[tokio::test(start_paused = true)]
async fn z7_a_patch_without_an_answer_fails_at_its_deadline() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    let object = server.create(&cm("app", &[], false)).unwrap();
    server.delay_requests(RequestMatch::Update, PATCH_TIMEOUT * 2, 1);

    let started = tokio::time::Instant::now();
    let (outcome, events) = run(&api, object, Ok(Action::AwaitChange)).await;
    // Z1: no answer, no Apply.
    assert!(
        matches!(
            outcome,
            Err(finalizer::Error::AddFinalizer(kube::Error::Service(_)))
        ),
        "{outcome:?}"
    );
    assert!(events.is_empty());
    let waited = started.elapsed();
    assert!(
        waited >= PATCH_TIMEOUT && waited < PATCH_TIMEOUT + Duration::from_secs(1),
        "{waited:?}"
    );
    assert!(api.get("app").await.unwrap().finalizers().is_empty());
}

/// Z10: through a `RecordedApi` the addition is recorded at the version it
/// left, and the removal that let the object go as its deletion (RW9).
#[tokio::test]
async fn z10_the_patches_are_recorded_in_the_write_log() {
    let server = FakeApiServer::start().await;
    let log = WriteLog::new();
    let key: ObjectKey = "default/app".parse().unwrap();
    let recorded = log.api(api(&server), key.clone());
    let created = server.create(&cm("app", &[], false)).unwrap();

    let (outcome, events) = run(&recorded, created, Ok(Action::AwaitChange)).await;
    assert_eq!(
        (outcome.unwrap(), events),
        (Action::AwaitChange, vec!["apply"])
    );
    let added = api(&server).get("app").await.unwrap();
    let writes = log.take(&key);
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(
        (writes[0].group.as_str(), writes[0].resource.as_str()),
        ("", "configmaps")
    );
    assert_eq!(writes[0].key, key);
    assert_eq!(
        writes[0].written,
        Written::Version(added.resource_version().unwrap())
    );

    server.delete::<ConfigMap>(Some("default"), "app").unwrap();
    let deleting = api(&server).get("app").await.unwrap();
    let (outcome, events) = run(&recorded, deleting, Ok(Action::AwaitChange)).await;
    assert_eq!(
        (outcome.unwrap(), events),
        (Action::AwaitChange, vec!["cleanup"])
    );
    assert!(api(&server).get_opt("app").await.unwrap().is_none());
    let writes = log.take(&key);
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0].written, Written::Deleted);
}

/// Z11: a removal refused by a 503 after a cleanup that succeeded: through
/// a `RecordedApi` the retry sends the removal only; through a plain `Api`
/// the cleanup runs again.
#[tokio::test]
async fn z11_a_failed_removal_is_retried_without_a_second_cleanup() {
    let server = FakeApiServer::start().await;
    let log = WriteLog::new();
    let key: ObjectKey = "default/app".parse().unwrap();
    let recorded = log.api(api(&server), key.clone());
    let plain = api(&server);
    for (through, cleanups) in [
        ("recorded", vec!["cleanup"]),
        ("plain", vec!["cleanup", "cleanup"]),
    ] {
        let deleting = server.create(&cm("app", &[OURS], true)).unwrap();
        server.fail_requests(RequestMatch::Update, ApiStatus::service_unavailable(), 1);
        let mut seen = Vec::new();
        for attempt in 0..2 {
            let (outcome, events) = match through {
                "recorded" => run(&recorded, deleting.clone(), Ok(Action::AwaitChange)).await,
                _ => run(&plain, deleting.clone(), Ok(Action::AwaitChange)).await,
            };
            seen.extend(events);
            match attempt {
                0 => assert!(
                    matches!(&outcome, Err(finalizer::Error::RemoveFinalizer(e)) if api_code(e) == Some((503, "ServiceUnavailable"))),
                    "{through}: {outcome:?}"
                ),
                _ => assert_eq!(outcome.unwrap(), Action::AwaitChange, "{through}"),
            }
        }
        assert_eq!(seen, cleanups, "{through}");
        assert!(plain.get_opt("app").await.unwrap().is_none(), "{through}");
    }
}

/// Z11: what is kept is the cleanup of one object: a removal refused by a
/// stale read's 422 is retried on the newer object without a second
/// cleanup, and an object created again under the name gets its own.
#[tokio::test]
async fn z11_a_finished_cleanup_belongs_to_its_object() {
    let server = FakeApiServer::start().await;
    let log = WriteLog::new();
    let recorded = log.api(api(&server), "default/app".parse().unwrap());

    let stale = server.create(&cm("app", &[OTHER, OURS], true)).unwrap();
    // Another writer drops its finalizer: ours moves from index 1 to 0.
    server.update(&cm("app", &[OURS], true)).unwrap();
    let (outcome, events) = run(&recorded, stale, Ok(Action::AwaitChange)).await;
    let Err(finalizer::Error::RemoveFinalizer(error)) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(api_code(&error), Some((422, "Invalid")));
    assert_eq!(events, ["cleanup"]);
    let newer = api(&server).get("app").await.unwrap();
    let (outcome, events) = run(&recorded, newer, Ok(Action::AwaitChange)).await;
    assert_eq!((outcome.unwrap(), events), (Action::AwaitChange, vec![]));
    assert!(api(&server).get_opt("app").await.unwrap().is_none());

    // A cleanup kept for one object (its removal refused by a 503) ...
    let first = server.create(&cm("app", &[OURS], true)).unwrap();
    server.fail_requests(RequestMatch::Update, ApiStatus::service_unavailable(), 1);
    let (outcome, events) = run(&recorded, first.clone(), Ok(Action::AwaitChange)).await;
    assert!(
        matches!(outcome, Err(finalizer::Error::RemoveFinalizer(_))),
        "{outcome:?}"
    );
    assert_eq!(events, ["cleanup"]);
    // ... whose finalizer another writer removes, so it goes ...
    server.update(&cm("app", &[], true)).unwrap();
    // ... is not the cleanup of the object created again under its name.
    let again = server.create(&cm("app", &[OURS], true)).unwrap();
    assert_ne!(again.uid(), first.uid());
    let (outcome, events) = run(&recorded, again, Ok(Action::AwaitChange)).await;
    assert_eq!(
        (outcome.unwrap(), events),
        (Action::AwaitChange, vec!["cleanup"])
    );
}

/// Z1, Z9, Z2, Z3 through an informer and a runner: the first reconcile
/// adds the finalizer and applies; the write brings the object back and
/// the next one applies again; a deletion brings one cleanup and the
/// finalizer's removal, and the object goes.
#[tokio::test]
async fn z1_z9_z2_z3_the_informer_brings_the_object_back_after_each_write() {
    let server = FakeApiServer::start().await;
    let api = api(&server);
    server.create(&cm("app", &[], false)).unwrap();

    let informer = Informer::builder(api.clone()).cache_from_env().build();
    let queue = WorkQueue::new();
    tokio::spawn(
        queue.feed_results(
            informer
                .subscribe(SubscribeOptions::default())
                .unwrap()
                .keys(),
            |error| panic!("{error}"),
        ),
    );
    let store = informer.store();
    tokio::spawn(informer.run());

    let events: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let runs = Arc::new(Mutex::new(0));
    let reconciles = Runner::new(queue.clone()).run_with_store(
        store,
        {
            let (api, events, runs) = (api.clone(), events.clone(), runs.clone());
            move |_key, object: Option<Arc<ConfigMap>>| {
                let (api, events, runs) = (api.clone(), events.clone(), runs.clone());
                async move {
                    *runs.lock() += 1;
                    let Some(object) = object else {
                        return Ok(Action::AwaitChange);
                    };
                    finalizer(&api, OURS, object, |event| {
                        events.lock().push(seen(&event));
                        async { Ok::<_, Failed>(Action::AwaitChange) }
                    })
                    .await
                }
            }
        },
        |_, _| Action::backoff(),
    );
    let driver = tokio::spawn(reconciles.for_each(|outcome| async move {
        assert!(outcome.is_ok(), "{outcome:?}");
    }));

    let wait_for = |want: Vec<&'static str>| {
        let events = events.clone();
        async move {
            tokio::time::timeout(Duration::from_secs(60), async {
                while *events.lock() != want {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await
            .unwrap_or_else(|_| panic!("events {:?}, wanted {want:?}", events.lock()));
        }
    };
    wait_for(vec!["apply", "apply"]).await;
    // One reconcile added the finalizer and applied, the next (for the
    // write) applied again.
    assert_eq!(*runs.lock(), 2);
    assert_eq!(api.get("app").await.unwrap().finalizers(), [OURS]);

    server.delete::<ConfigMap>(Some("default"), "app").unwrap();
    wait_for(vec!["apply", "apply", "cleanup"]).await;
    // Watched for: the limit only bounds a hang.
    tokio::time::timeout(
        Duration::from_secs(60),
        kube_runtime::wait::await_condition(api.clone(), "app", |object: Option<&ConfigMap>| {
            object.is_none()
        }),
    )
    .await
    .expect("the object goes once its finalizer is removed")
    .unwrap();
    assert!(api.get_opt("app").await.unwrap().is_none());
    queue.shutdown();
    driver.await.unwrap();
}
