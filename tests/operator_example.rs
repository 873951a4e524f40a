//! The mirror operator of `examples/operator/` on the fake API server: a
//! deletion made while it was down is swept when it starts again, and writes
//! the server refuses are retried until the copies are made.
//!
//! The operator's code is the example's own (its modules are compiled into
//! this test).

use crate::operator::{controller, mirror};

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{ResourceExt, api::ObjectMeta};
use kube_informer::{informer::Defaults, runner::Action};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use controller::Operator;
use mirror::{Labels, Mirror};

fn meta(name: &str, namespace: Option<&str>, label: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_owned),
        labels: label.map(|l| [(l.to_owned(), "true".to_owned())].into()),
        ..Default::default()
    }
}

fn target(server: &FakeApiServer, name: &str) {
    let labels = Labels::default();
    server
        .create(&Namespace {
            metadata: meta(name, None, Some(&labels.target)),
            ..Default::default()
        })
        .unwrap();
}

fn source(server: &FakeApiServer, name: &str) {
    let labels = Labels::default();
    server
        .create(&ConfigMap {
            metadata: meta(name, Some("apps"), Some(&labels.source)),
            data: Some([("value".to_owned(), name.to_owned())].into()),
            ..Default::default()
        })
        .unwrap();
}

/// The copies on the server, as `namespace/name`, sorted.
fn copies(server: &FakeApiServer) -> Vec<String> {
    let label = Labels::default().copy_of;
    let mut names: Vec<String> = server
        .objects::<ConfigMap>()
        .iter()
        .filter(|cm| cm.labels().contains_key(&label))
        .map(|cm| format!("{}/{}", cm.namespace().unwrap(), cm.name_any()))
        .collect();
    names.sort();
    names
}

async fn wait_for_copies(server: &FakeApiServer, want: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while copies(server) != want {
        assert!(
            Instant::now() < deadline,
            "copies {:?}, want {want:?}",
            copies(server)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A running operator; the handle yields the keys whose reconciles failed,
/// once it stopped.
async fn start(server: &FakeApiServer) -> (CancellationToken, JoinHandle<Vec<String>>) {
    let stop = CancellationToken::new();
    let operator = Operator::start(
        server.client(),
        Labels::default(),
        Duration::from_secs(300),
        Defaults::default(),
    )
    .await
    .unwrap();
    let outcomes = operator
        .controller
        .with_config(kube_informer::controller::Config {
            concurrency: 4,
            ..Default::default()
        })
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run_by_key(
            |key, source, mirror: Arc<Mirror>| async move { mirror.reconcile(&key, source).await },
            |_, _, _| Action::backoff(),
            Arc::new(operator.mirror),
        );
    let factory = operator.factory;
    let failed = tokio::spawn(async move {
        let failed = outcomes
            .filter_map(|o| {
                std::future::ready(o.err().and_then(|e| e.key().map(ToString::to_string)))
            })
            .collect()
            .await;
        factory.shutdown().await;
        failed
    });
    (stop, failed)
}

#[tokio::test]
async fn deletions_made_while_the_operator_was_down_are_swept_when_it_starts() {
    let server = FakeApiServer::start().await;
    target(&server, "t1");
    target(&server, "t2");
    source(&server, "a");
    source(&server, "b");
    let (stop, runner) = start(&server).await;
    wait_for_copies(
        &server,
        &["t1/apps.a", "t1/apps.b", "t2/apps.a", "t2/apps.b"],
    )
    .await;
    stop.cancel();
    runner.await.unwrap();

    // While it is down: a source deleted, a namespace no longer a target.
    server.delete::<ConfigMap>(Some("apps"), "a").unwrap();
    let mut t2 = server.objects::<Namespace>().remove(1);
    assert_eq!(t2.name_any(), "t2");
    t2.metadata.labels = None;
    server.update(&t2).unwrap();
    assert_eq!(copies(&server).len(), 4, "nothing runs to clean up");

    let (stop, runner) = start(&server).await;
    wait_for_copies(&server, &["t1/apps.b"]).await;
    stop.cancel();
    runner.await.unwrap();
}

#[tokio::test]
async fn refused_writes_are_retried_until_the_copies_are_made() {
    let server = FakeApiServer::start().await;
    target(&server, "t1");
    source(&server, "a");
    server.fail_requests(RequestMatch::Write, ApiStatus::internal_error(), 3);
    let (stop, runner) = start(&server).await;
    wait_for_copies(&server, &["t1/apps.a"]).await;
    stop.cancel();
    let failed = runner.await.unwrap();
    assert_eq!(
        failed, ["apps/a"; 3],
        "each refused write is one failed reconcile, retried"
    );
}
