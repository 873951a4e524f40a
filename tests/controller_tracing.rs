//! The controller's log story: failed and panicking reconciles are the
//! stream's to report, and the controller logs them only at a level it is
//! given, one line each inside the `reconciling object` span (C8, C13).
//! Its own test binary: tracing's per-callsite interest is process-wide,
//! and tests running beside it without a subscriber would race it; every
//! test here captures at the same filter.

mod log_common;

use log_common::Buffer;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::ObjectMeta};
use kube_informer::{
    controller::{Controller, Error},
    runner::Action,
};
use kube_informer_testing::FakeApiServer;
use tracing::{Level, subscriber::DefaultGuard};

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

/// Captures every level of the crate's logs on this thread.
fn capture() -> (Buffer, DefaultGuard) {
    use tracing_subscriber::util::SubscriberInitExt;
    let logs = Buffer::default();
    let guard = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_ansi(false)
        .with_env_filter("kube_informer=trace")
        .set_default();
    (logs, guard)
}

/// How the reconciler of [`first_outcome`] ends.
#[derive(Clone, Copy)]
enum Ending {
    Fails,
    Panics,
}

/// Runs a controller over one ConfigMap, with the reconcile failing as
/// `ending` says, and `configure` applied; returns its first item.
async fn first_outcome(
    ending: Ending,
    configure: impl FnOnce(Controller<ConfigMap>) -> Controller<ConfigMap>,
) -> Error<Failure> {
    let server = FakeApiServer::start().await;
    server.create(&cm("a")).unwrap();
    let controller = configure(Controller::new(Api::<ConfigMap>::all(server.client())));
    let outcomes = controller.run(
        move |_cm: Arc<ConfigMap>, _ctx: Arc<()>| async move {
            match ending {
                Ending::Fails => Err::<Action, _>(Failure("disk full")),
                Ending::Panics => panic!("out of cheese"),
            }
        },
        |_cm, _error, _ctx| Action::requeue(Duration::from_secs(3600)),
        Arc::new(()),
    );
    let mut outcomes = std::pin::pin!(outcomes);
    outcomes.next().await.unwrap().unwrap_err()
}

/// The crate's lines that report a failed or panicking reconcile.
fn failure_lines(logs: &Buffer) -> Vec<String> {
    logs.text()
        .lines()
        .filter(|l| l.contains("reconcile failed") || l.contains("reconcile panicked"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c8_c13_one_line_per_failed_reconcile_at_the_chosen_level_in_its_span() {
    for (level, shown) in [(Level::ERROR, "ERROR"), (Level::WARN, " WARN")] {
        let (logs, _guard) = capture();
        let error = first_outcome(Ending::Fails, |c| {
            c.with_config(kube_informer::controller::Config {
                reconcile_error_log: Some(level),
                ..Default::default()
            })
        })
        .await;
        assert!(matches!(error, Error::Reconcile { .. }), "{error}");
        let lines = failure_lines(&logs);
        assert_eq!(lines.len(), 1, "{}", logs.text());
        let line = &lines[0];
        assert!(line.contains(shown), "{line}");
        assert!(line.contains("reconciling object"), "{line}");
        assert!(line.contains("object.ref=default/a"), "{line}");
        assert!(line.contains("reconcile.id="), "{line}");
        assert!(line.contains("disk full"), "{line}");
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c13_a_panic_is_logged_at_the_chosen_level_in_its_span() {
    let (logs, _guard) = capture();
    let error = first_outcome(Ending::Panics, |c| {
        c.with_config(kube_informer::controller::Config {
            reconcile_error_log: Some(Level::INFO),
            ..Default::default()
        })
    })
    .await;
    assert!(matches!(error, Error::Panicked { .. }), "{error}");
    let lines = failure_lines(&logs);
    assert_eq!(lines.len(), 1, "{}", logs.text());
    assert!(lines[0].contains(" INFO"), "{}", lines[0]);
    assert!(lines[0].contains("reconciling object"), "{}", lines[0]);
    assert!(lines[0].contains("out of cheese"), "{}", lines[0]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c13_by_default_failures_are_yielded_and_not_logged() {
    for ending in [Ending::Fails, Ending::Panics] {
        let (logs, _guard) = capture();
        let error = first_outcome(ending, |c| c).await;
        assert!(
            matches!(error, Error::Reconcile { .. } | Error::Panicked { .. }),
            "{error}"
        );
        assert_eq!(failure_lines(&logs), Vec::<String>::new());
        // The capture works: the reconcile's span was entered and logged.
        assert!(logs.text().contains("kube_informer"), "{}", logs.text());
    }
    let (logs, _guard) = capture();
    let error = first_outcome(Ending::Fails, |c| {
        c.with_config(kube_informer::controller::Config {
            reconcile_error_log: None,
            ..Default::default()
        })
    })
    .await;
    assert!(matches!(error, Error::Reconcile { .. }), "{error}");
    assert!(failure_lines(&logs).is_empty(), "{}", logs.text());
}
