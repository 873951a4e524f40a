//! Each Rust runner, driven end to end on a small generated workload.

use kube_informer_compare::{
    drive::{DriveError, Options, drive},
    generate::{Spec, write_workload},
    runners::{floor::Floor, kube_runtime::KubeRuntime},
};
use std::{path::PathBuf, time::Duration};

const SPEC: Spec = Spec {
    objects: 200,
    updates: 300,
    delete_percent: 10,
    seed: 3,
};

/// A workload file in the temp dir, removed when dropped.
struct TempWorkload(PathBuf);

impl Drop for TempWorkload {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn workload_file(name: &str) -> TempWorkload {
    let path = std::env::temp_dir().join(format!(
        "kube-informer-compare-{}-{name}.jsonl",
        std::process::id()
    ));
    let mut bytes = Vec::new();
    write_workload(SPEC, &mut bytes).unwrap();
    std::fs::write(&path, bytes).unwrap();
    TempWorkload(path)
}

fn options(workload: PathBuf, subscribers: usize, slow: bool) -> Options {
    Options {
        workload,
        subscribers,
        slow,
        timeout: Duration::from_secs(60),
    }
}

#[tokio::test]
async fn floor_delivers_every_event_to_every_subscriber() {
    let file = workload_file("floor");
    let report = drive::<Floor>(&options(file.0.clone(), 3, false))
        .await
        .unwrap();
    assert_eq!(report.runner, "floor");
    assert_eq!(
        (report.objects, report.updates, report.deletes),
        (200, 300, 20)
    );
    assert_eq!(report.events, 520);
    assert_eq!(report.deliveries_per_subscriber, 520);
    assert!(report.seconds > 0.0 && report.list_seconds <= report.seconds);
    assert!(report.rss_after_list.is_some());
    assert!(report.peak_rss > 0);
    assert_eq!(report.slow_backlog, None);
}

#[tokio::test]
async fn kube_runtime_subscribers_are_told_about_applies_only() {
    let file = workload_file("kube-runtime");
    let report = drive::<KubeRuntime>(&options(file.0.clone(), 2, false))
        .await
        .unwrap();
    assert_eq!(report.runner, "kube-runtime");
    assert_eq!(report.events, 520);
    assert_eq!(report.deliveries_per_subscriber, 500);
}

#[tokio::test(start_paused = true)]
async fn slow_variant_ends_with_the_fast_subscribers_and_reports_the_backlog() {
    let file = workload_file("slow");
    let report = drive::<Floor>(&options(file.0.clone(), 2, true))
        .await
        .unwrap();
    let backlog = report
        .slow_backlog
        .expect("the slow variant reports a backlog");
    assert!(backlog <= report.deliveries_per_subscriber);
    assert_eq!(report.rss_after_list, None);
}

#[tokio::test]
async fn slow_variant_needs_a_second_subscriber() {
    let file = workload_file("lonely");
    let error = drive::<Floor>(&options(file.0.clone(), 1, true))
        .await
        .unwrap_err();
    assert!(matches!(error, DriveError::SlowNeedsCompany(1)));
}

#[tokio::test]
async fn a_missing_workload_is_an_error() {
    let error = drive::<Floor>(&options(
        PathBuf::from("/nonexistent/workload.jsonl"),
        2,
        false,
    ))
    .await
    .unwrap_err();
    assert!(error.to_string().starts_with("cannot read workload"));
}

#[cfg(feature = "ours")]
mod ours {
    use super::*;
    use kube_informer_compare::runners::ours::{Ours, OursCoalesce};

    #[tokio::test]
    async fn ours_delivers_every_event_to_every_subscriber() {
        let file = workload_file("ours");
        let report = drive::<Ours>(&options(file.0.clone(), 3, false))
            .await
            .unwrap();
        assert_eq!(report.runner, "ours");
        assert_eq!(report.events, 520);
        assert_eq!(report.deliveries_per_subscriber, 520);
        assert!(report.rss_after_list.is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ours_on_a_multi_thread_runtime_reaches_quiescence() {
        let file = workload_file("ours-mt");
        let report = drive::<Ours>(&options(file.0.clone(), 4, false))
            .await
            .unwrap();
        assert_eq!(report.deliveries_per_subscriber, 520);
    }

    #[tokio::test(start_paused = true)]
    async fn ours_slow_variant_finishes_the_fast_subscribers() {
        let file = workload_file("ours-slow");
        let report = drive::<Ours>(&options(file.0.clone(), 3, true))
            .await
            .unwrap();
        assert!(report.slow);
        let backlog = report.slow_backlog.unwrap();
        assert!(backlog <= report.deliveries_per_subscriber);
        assert!(report.slow_queued.is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn ours_coalesce_slow_variant_finishes_the_fast_subscribers() {
        let file = workload_file("ours-coalesce");
        let report = drive::<OursCoalesce>(&options(file.0.clone(), 3, true))
            .await
            .unwrap();
        assert_eq!(report.runner, "ours-coalesce");
        assert!(report.slow_backlog.is_some());
        // At most two queued notifications per key (200 keys here).
        let queued = report.slow_queued.expect("runner (a) reports its queue");
        assert!(queued <= 2 * 200, "{queued} queued");
    }
}
