//! The controller's reconcile metrics as Prometheus reads them (C8), with
//! controller-runtime's names, through `metrics::register_controller`.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use futures::StreamExt;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::ObjectMeta};
use kube_informer::{controller::Controller, metrics, runner::Action};
use kube_informer_testing::FakeApiServer;
use prometheus_client::{encoding::text::encode, registry::Registry};

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

/// The value of the sample `name{labels}` in `text`.
fn sample(text: &str, name: &str, labels: &str) -> f64 {
    let prefix = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
        .parse()
        .unwrap()
}

#[derive(Debug, thiserror::Error)]
#[error("no")]
struct Failure;

#[tokio::test(start_paused = true)]
async fn c8_every_reconcile_metric_moves_on_a_scrape() {
    let server = FakeApiServer::start().await;
    for name in ["ok", "fails", "panics", "slow-1", "slow-2"] {
        server.create(&cm(name)).unwrap();
    }
    let controller = Controller::new(Api::<ConfigMap>::all(server.client())).concurrency(4);
    let mut registry = Registry::default();
    metrics::register_controller(&mut registry, "configmaps", controller.metrics_reader());
    let scrape = || {
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        text
    };
    let outcomes = controller.run(
        |cm: Arc<ConfigMap>, _ctx: Arc<()>| async move {
            match cm.metadata.name.as_deref().unwrap() {
                "ok" => Ok(Action::done()),
                "fails" => Err(Failure),
                "panics" => panic!("boom"),
                _ => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(Action::requeue(Duration::from_secs(3600)))
                }
            }
        },
        |_cm, _error, _ctx| Action::requeue(Duration::from_secs(7200)),
        Arc::new(()),
    );
    let begun = tokio::time::Instant::now();
    // Driven until both slow reconciles ended (the panicking key keeps
    // backing off meanwhile).
    let driven = tokio::spawn(async move {
        let mut outcomes = std::pin::pin!(outcomes);
        let mut slow_done = 0;
        while slow_done < 2 {
            if let Some(Ok((_, Action::RequeueAfter(_)))) = outcomes.next().await {
                slow_done += 1;
            }
        }
    });
    // Until the two slow ones run.
    while !scrape().contains("controller_runtime_active_workers{controller=\"configmaps\"} 2") {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            tokio::time::Instant::now() - begun < Duration::from_secs(600),
            "{}",
            scrape()
        );
    }
    let labels = r#"controller="configmaps""#;
    let text = scrape();
    let result = |r: &str| {
        sample(
            &text,
            "controller_runtime_reconcile_total",
            &format!(r#"{labels},result="{r}""#),
        )
    };
    let (errors, panics) = (
        sample(&text, "controller_runtime_reconcile_errors_total", labels),
        sample(&text, "controller_runtime_reconcile_panics_total", labels),
    );
    assert_eq!(result("success"), 1.0, "{text}");
    // "fails" once (then it waits two hours), "panics" at least once (it
    // backs off and comes back).
    assert!(
        panics >= 1.0 && errors == panics + 1.0 && result("error") == errors,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "controller_runtime_reconcile_time_seconds_count",
            labels
        ),
        1.0 + errors
    );
    assert_eq!(
        sample(
            &text,
            "controller_runtime_max_concurrent_reconciles",
            labels
        ),
        4.0
    );
    // The slow ones finish an hour later, asking to be queued again.
    driven.await.unwrap();
    let text = scrape();
    assert_eq!(
        sample(
            &text,
            "controller_runtime_reconcile_total",
            &format!(r#"{labels},result="requeue_after""#)
        ),
        2.0
    );
    assert_eq!(
        sample(&text, "controller_runtime_active_workers", labels),
        0.0
    );
    assert!(
        sample(
            &text,
            "controller_runtime_reconcile_time_seconds_sum",
            labels
        ) >= 7200.0
    );
}
