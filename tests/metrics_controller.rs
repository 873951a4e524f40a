//! The controller's reconcile metrics as Prometheus reads them (C8), with
//! controller-runtime's names, and the read-your-own-writes gate's (RW8),
//! through `metrics::register`.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{ObjectMeta, Patch, PatchParams},
};
use kube_informer::{
    ObjectKey,
    controller::Controller,
    metrics::{self, ControllerMetrics},
    own_writes::WriteLog,
    runner::Action,
};
use kube_informer_testing::{FakeApiServer, RequestMatch};
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
    let controller = Controller::new(Api::<ConfigMap>::all(server.client())).with_config(
        kube_informer::controller::Config {
            concurrency: 4,
            ..Default::default()
        },
    );
    let mut registry = Registry::default();
    metrics::register::<ControllerMetrics>(&mut registry, "configmaps", &controller);
    let scrape = || {
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        text
    };
    let outcomes = controller.run(
        |cm: Arc<ConfigMap>, _ctx: Arc<()>| async move {
            match cm.metadata.name.as_deref().unwrap() {
                "ok" => Ok(Action::await_change()),
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

/// RW8 (`src/controller/mod.rs`): the read-your-own-writes gate's holds,
/// expiries and hold time, as Prometheus reads them.
#[tokio::test(start_paused = true)]
async fn rw8_hold_metrics_move_on_a_scrape() {
    let server = FakeApiServer::start().await;
    server.create(&cm("app")).unwrap();
    // The cache hears of every change 1 s late, after the 200 ms deadline.
    server.lag_watches(RequestMatch::Watch, Duration::from_secs(1), usize::MAX);
    let client = server.in_process_client();
    let writes = WriteLog::new();
    let controller = Controller::new(Api::<ConfigMap>::all(client.clone()))
        .read_own_writes(writes.clone(), Duration::from_millis(200));
    let mut registry = Registry::default();
    metrics::register::<ControllerMetrics>(&mut registry, "configmaps", &controller);
    let runs = Arc::new(AtomicU64::new(0));
    let outcomes = controller.run(
        move |cm: Arc<ConfigMap>, _ctx: Arc<()>| {
            let (writes, client, runs) = (writes.clone(), client.clone(), runs.clone());
            async move {
                if runs.fetch_add(1, Ordering::SeqCst) > 0 {
                    return Ok(Action::await_change());
                }
                // Writes the object itself, then asks to run again at once.
                let key = ObjectKey::from_object(&*cm).unwrap();
                let patch = serde_json::json!({"data": {"seen": "yes"}});
                writes
                    .api(Api::<ConfigMap>::namespaced(client, "default"), key)
                    .patch("app", &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                Ok::<_, kube::Error>(Action::requeue(Duration::from_millis(10)))
            }
        },
        |_cm, _error, _ctx| Action::backoff(),
        Arc::new(()),
    );
    let mut outcomes = std::pin::pin!(outcomes);
    for _ in 0..2 {
        outcomes.next().await.unwrap().unwrap();
    }
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    let labels = r#"controller="configmaps""#;
    let value = |name: &str| sample(&text, name, labels);
    assert_eq!(value("kube_informer_controller_own_write_holds_total"), 1.0);
    assert_eq!(
        value("kube_informer_controller_own_write_expiries_total"),
        1.0
    );
    assert_eq!(
        value("kube_informer_controller_own_write_hold_seconds_count"),
        1.0
    );
    assert_eq!(
        value("kube_informer_controller_own_write_hold_seconds_sum"),
        0.2
    );
}
