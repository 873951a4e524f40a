//! The simulation faults: watch lag (FT1), injected write conflicts
//! (FT2), latency (FT3) and clearing faults (FT4), on tokio's paused
//! clock through the in-process client, so times are exact.

use crate::common;

use common::api_error;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube::{
    Api, ResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams},
};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch, WriteTarget};
use serde_json::json;
use tokio::time::Instant;

fn cm(name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("default".into());
    cm.metadata.name = Some(name.into());
    cm.data = Some([("value".to_owned(), value.to_owned())].into());
    cm
}

/// The next event's name, resourceVersion and arrival time since `start`.
async fn next_event(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
    start: Instant,
) -> (String, String, Duration) {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(60), stream.try_next())
            .await
            .expect("an event within 60 s")
            .expect("no watch error")
            .expect("the watch is open");
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                return (o.name_any(), o.resource_version().unwrap(), start.elapsed());
            }
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn ft1_lagged_watch_delivers_each_event_lag_late_in_order() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.in_process_client());
    // From a resourceVersion, so both watches start at the same point.
    server.create(&cm("before", "0")).unwrap();
    let from = server.resource_version().to_string();
    server.lag_watches(RequestMatch::Watch, Duration::from_secs(5), 1);
    let mut lagged = api
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    let mut prompt = api
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();

    let start = Instant::now();
    let a = server.create(&cm("a", "1")).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let b = server.create(&cm("b", "1")).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let a2 = server.update(&cm("a", "2")).unwrap();

    // The watch without lag saw each change when it happened.
    let seen: Vec<_> = [
        next_event(&mut prompt, start).await,
        next_event(&mut prompt, start).await,
        next_event(&mut prompt, start).await,
    ]
    .into_iter()
    .map(|(name, rv, _)| (name, rv))
    .collect();
    let expected = [
        ("a".to_owned(), a.resource_version().unwrap()),
        ("b".to_owned(), b.resource_version().unwrap()),
        ("a".to_owned(), a2.resource_version().unwrap()),
    ];
    assert_eq!(seen, expected);

    // The lagged one gets the same events, in order, each 5 s after it happened.
    let mut arrivals = Vec::new();
    for _ in 0..3 {
        arrivals.push(next_event(&mut lagged, start).await);
    }
    let names_rvs: Vec<_> = arrivals
        .iter()
        .map(|(n, rv, _)| (n.clone(), rv.clone()))
        .collect();
    assert_eq!(names_rvs, expected);
    let times: Vec<_> = arrivals.iter().map(|(_, _, t)| *t).collect();
    assert_eq!(
        times,
        [
            Duration::from_secs(5),
            Duration::from_millis(6000),
            Duration::from_millis(6500)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn ft1_lag_is_used_by_the_next_watches_only_and_delays_the_end() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.in_process_client());
    server.lag_watches(RequestMatch::Watch, Duration::from_secs(2), 1);
    let params = WatchParams::default().timeout(10);
    let start = Instant::now();
    let mut lagged = api.watch(&params, "0").await.unwrap().boxed();
    let mut later = api.watch(&params, "0").await.unwrap().boxed();
    server.create(&cm("a", "1")).unwrap();
    assert_eq!(next_event(&mut later, start).await.2, Duration::ZERO);
    assert_eq!(
        next_event(&mut lagged, start).await.2,
        Duration::from_secs(2)
    );
    // Ends at its 10 s timeout, seen 2 s late.
    assert!(lagged.next().await.is_none());
    assert_eq!(start.elapsed(), Duration::from_secs(12));
}

#[tokio::test(start_paused = true)]
async fn ft2_conflict_on_the_nth_write_to_an_object_with_the_api_servers_message() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.in_process_client());
    server.create(&cm("a", "0")).unwrap();
    server.create(&cm("b", "0")).unwrap();
    server.inject_write_conflict(WriteTarget::object::<ConfigMap>(Some("default"), "a"), 1);
    let patch = |v: &str| Patch::Merge(json!({"data": {"value": v}}));
    let pp = PatchParams::default();

    api.patch("a", &pp, &patch("1")).await.unwrap();
    // Writes to other objects do not count.
    api.patch("b", &pp, &patch("1")).await.unwrap();
    let rv_before = server.resource_version();
    let (code, reason, message) = api_error(api.patch("a", &pp, &patch("2")).await);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert_eq!(
        message,
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; \
         please apply your changes to the latest version and try again"
    );
    // Not applied; the next write goes through.
    assert_eq!(server.resource_version(), rv_before);
    assert_eq!(api.get("a").await.unwrap().data.unwrap()["value"], "1");
    api.patch("a", &pp, &patch("3")).await.unwrap();
    assert_eq!(api.get("a").await.unwrap().data.unwrap()["value"], "3");
}

#[tokio::test(start_paused = true)]
async fn ft2_conflict_by_matcher_names_the_group_and_spares_creates() {
    let server = FakeApiServer::start().await;
    let client = server.in_process_client();
    let mut deployment = Deployment::default();
    deployment.metadata.namespace = Some("default".into());
    deployment.metadata.name = Some("web".into());
    server.create(&deployment).unwrap();
    server.inject_write_conflict(RequestMatch::Write, 0);

    // A create names no object in its URL: it is not counted.
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    configmaps
        .create(&PostParams::default(), &cm("c", "0"))
        .await
        .unwrap();

    let deployments: Api<Deployment> = Api::default_namespaced(client);
    let patch = Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}}));
    let (code, _, message) = api_error(
        deployments
            .patch("web", &PatchParams::default(), &patch)
            .await,
    );
    assert_eq!(code, 409);
    assert!(
        message.starts_with("Operation cannot be fulfilled on deployments.apps \"web\""),
        "{message}"
    );
    // Used once.
    deployments
        .patch("web", &PatchParams::default(), &patch)
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn ft3_latency_delays_every_matching_request_on_virtual_time_only() {
    // Four delayed answers add up to 80 s: far more than the wall-clock
    // bound below, which a loaded machine stays well within when the
    // latency is virtual.
    const LATENCY: Duration = Duration::from_secs(20);
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.in_process_client());
    server.add_latency(RequestMatch::List, LATENCY);
    let wall = std::time::Instant::now();
    for _ in 0..3 {
        let start = Instant::now();
        api.list(&ListParams::default()).await.unwrap();
        assert_eq!(start.elapsed(), LATENCY);
    }
    // Other requests are not delayed.
    let start = Instant::now();
    api.create(&PostParams::default(), &cm("a", "0"))
        .await
        .unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);
    // A failed answer is delayed too.
    server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), 1);
    let start = Instant::now();
    assert_eq!(api_error(api.list(&ListParams::default()).await).0, 500);
    assert_eq!(start.elapsed(), LATENCY);
    assert!(
        wall.elapsed() < Duration::from_secs(40),
        "virtual time only"
    );
}

#[tokio::test(start_paused = true)]
async fn ft4_clear_faults_drops_every_pending_fault() {
    let server = FakeApiServer::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.in_process_client());
    server.create(&cm("a", "0")).unwrap();
    server.fail_requests(RequestMatch::Any, ApiStatus::internal_error(), 10);
    server.add_latency(RequestMatch::Any, Duration::from_secs(1));
    server.inject_write_conflict(RequestMatch::Update, 0);
    server.lag_watches(RequestMatch::Watch, Duration::from_secs(3), 1);
    server.clear_faults();

    let start = Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    let pp = PatchParams::default();
    api.patch("a", &pp, &Patch::Merge(json!({"data": {"value": "1"}})))
        .await
        .unwrap();
    let mut watch = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert_eq!(next_event(&mut watch, start).await.2, Duration::ZERO);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test]
async fn ft6_a_status_without_causes_has_no_details() {
    let server = FakeApiServer::start().await;
    let client = server.client();
    // A body that is not JSON: a 400 with no causes.
    let request = axum::http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .body(b"{not json".to_vec())
        .unwrap();
    let answer = client.request_text(request).await;
    let status = match answer {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected a 400 Status, got {other:?}"),
    };
    assert_eq!(status.code, 400);
    assert!(status.details.is_none(), "{status:?}");
    // With causes, they are there, each with its field when it has one
    // (SD1).
    let invalid = ApiStatus::new(422, "Invalid", "bad")
        .with_cause("FieldValueInvalid", "bad", "spec.size")
        .with_cause("FieldValueRequired", "missing", "");
    assert_eq!(
        invalid.to_json()["details"],
        serde_json::json!({"causes": [
            {"reason": "FieldValueInvalid", "message": "bad", "field": "spec.size"},
            {"reason": "FieldValueRequired", "message": "missing"},
        ]})
    );
    assert!(
        ApiStatus::internal_error()
            .to_json()
            .get("details")
            .is_none()
    );
}
