//! The controller's log story (C8): one ERROR line per failed reconcile,
//! inside its `reconciling object` span. Its own test binary: tracing's
//! per-callsite interest is process-wide, and tests running beside it
//! without a subscriber would race it.

mod log_common;

use log_common::Buffer;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::ObjectMeta};
use kube_informer::{controller::Controller, runner::Action};
use kube_informer_testing::FakeApiServer;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failure(&'static str);

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::new()),
        ..Default::default()
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c8_one_error_line_per_failed_reconcile_in_its_span() {
    use tracing_subscriber::util::SubscriberInitExt;
    let logs = Buffer::default();
    let _guard = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_ansi(false)
        .with_env_filter("kube_informer=info")
        .set_default();
    let server = FakeApiServer::start().await;
    server.create(&cm("a")).unwrap();
    let outcomes = Controller::new(Api::<ConfigMap>::all(server.client())).run(
        |_cm: Arc<ConfigMap>, _ctx: Arc<()>| async { Err::<Action, _>(Failure("disk full")) },
        |_cm, _error, _ctx| Action::requeue(Duration::from_secs(3600)),
        Arc::new(()),
    );
    let mut outcomes = std::pin::pin!(outcomes);
    assert!(outcomes.next().await.unwrap().is_err());
    let text = logs.text();
    let errors: Vec<&str> = text.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "{text}");
    assert!(errors[0].contains("reconciling object"), "{}", errors[0]);
    assert!(errors[0].contains("object.ref=default/a"), "{}", errors[0]);
    assert!(errors[0].contains("reconcile.id="), "{}", errors[0]);
    assert!(errors[0].contains("disk full"), "{}", errors[0]);
}
