//! Wire mode end to end on a small workload: the loopback server answers
//! lists and watches as a kube-apiserver does, and each Rust runner, with
//! its real client, reaches quiescence (burst) or relists after a 410.

use kube::Client;
use kube_informer_compare::wire::{
    drive::{WireOptions, WireReport, WireRunner, client, drive},
    kube_runtime::KubeRuntimeWire,
    pods::{WireSpec, WireWorkload},
    server::{Chunking, WireServer},
};
use serde_json::Value;
use std::time::Duration;

/// N = 1,200: three pages of 500 (the informers' default page size).
const OBJECTS: usize = 1_200;

async fn start_server() -> String {
    start_server_with(Chunking::Backlog).await
}

async fn start_server_with(chunking: Chunking) -> String {
    let workload = WireWorkload::generate(WireSpec::standard(OBJECTS, 7));
    let (address, serving) = WireServer::with_chunking(workload, chunking)
        .bind(0)
        .await
        .unwrap();
    tokio::spawn(serving);
    format!("http://{address}")
}

fn options(server: String, subscribers: usize, strip: bool, relist: bool) -> WireOptions {
    WireOptions {
        server,
        subscribers,
        strip,
        relist,
        timeout: Duration::from_secs(60),
    }
}

async fn get(client: &Client, path: &str) -> Value {
    let request = http::Request::get(path).body(Vec::new()).unwrap();
    serde_json::from_str(&client.request_text(request).await.unwrap()).unwrap()
}

async fn post(client: &Client, path: &str) {
    let request = http::Request::post(path).body(Vec::new()).unwrap();
    client.request_text(request).await.unwrap();
}

async fn get_status(client: &Client, path: &str) -> u16 {
    let request = http::Request::get(path).body(Vec::new()).unwrap();
    match client.request_text(request).await {
        Ok(_) => 200,
        Err(kube::Error::Api(status)) => status.code,
        Err(other) => panic!("unexpected error {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_page_with_continue_tokens_as_the_api_server_does() {
    let server = start_server().await;
    let client = client(&server).unwrap();
    let first = get(&client, "/api/v1/pods?limit=500&resourceVersion=0").await;
    assert_eq!(first["kind"], "PodList");
    assert_eq!(first["items"].as_array().unwrap().len(), 500);
    assert_eq!(first["metadata"]["resourceVersion"], "1200");
    assert_eq!(first["metadata"]["remainingItemCount"], 700);
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    let second = get(&client, &format!("/api/v1/pods?limit=500&continue={token}")).await;
    let token = second["metadata"]["continue"].as_str().unwrap().to_string();
    let third = get(&client, &format!("/api/v1/pods?limit=500&continue={token}")).await;
    assert_eq!(third["items"].as_array().unwrap().len(), 200);
    assert!(third["metadata"].get("continue").is_none());
    let whole = get(&client, "/api/v1/pods").await;
    assert_eq!(whole["items"].as_array().unwrap().len(), OBJECTS);

    // After an expiry the snapshot is gone: its continue token and watches
    // from before it get 410.
    post(&client, "/bench/expire").await;
    let stale = format!("/api/v1/pods?limit=500&continue={token}");
    assert_eq!(get_status(&client, &stale).await, 410);
    let watch = http::Request::get("/api/v1/pods?watch=true&resourceVersion=1200")
        .body(Vec::new())
        .unwrap();
    let line = client.request_text(watch).await.unwrap();
    let event: Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);
    let stats = get(&client, "/bench/stats").await;
    assert_eq!(stats["lists"], 2);
    assert_eq!(stats["pages"], 4);
}

/// How long a whole run may take before the test gives up on it. The
/// runner's own waits time out after `options().timeout`; this is for a
/// runner that stops its runtime's threads, whose timers then never fire.
const HARD_DEADLINE: Duration = Duration::from_secs(180);

/// Drives a runner on a runtime of its own thread, so that a runner that
/// blocks its threads fails the test at [`HARD_DEADLINE`] rather than
/// hanging it (the test's runtime, which serves the workload, stays free).
///
/// One run at a time: a run reads the process's resident size and resets
/// its peak (`/proc/self/clear_refs`), so two runs at once in this test
/// process would read each other's memory, and a reset by one would put the
/// other's peak below its own earlier readings.
async fn drive_bounded<R: WireRunner + 'static>(options: WireOptions) -> WireReport {
    static ONE_RUN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _alone = ONE_RUN.lock().await;
    let (done, report) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime for the runner");
        let _ = done.send(runtime.block_on(drive::<R>(&options)));
    });
    match tokio::time::timeout(HARD_DEADLINE, report).await {
        Ok(Ok(report)) => report.unwrap(),
        Ok(Err(_)) => panic!("the runner's thread panicked"),
        Err(_) => panic!("no report within {HARD_DEADLINE:?}: the runner is stuck"),
    }
}

async fn burst<R: WireRunner + 'static>(subscribers: usize, strip: bool) -> WireReport {
    let server = start_server().await;
    drive_bounded::<R>(options(server, subscribers, strip, false)).await
}

async fn relist<R: WireRunner + 'static>(subscribers: usize, strip: bool) -> WireReport {
    let server = start_server().await;
    drive_bounded::<R>(options(server, subscribers, strip, true)).await
}

const UPDATES: u64 = 2 * OBJECTS as u64;
const DELETES: u64 = OBJECTS as u64 / 10;

fn assert_burst(report: &WireReport, deliveries: u64) {
    assert_eq!(report.variant, "burst");
    assert_eq!(
        (report.objects, report.updates, report.deletes),
        (OBJECTS as u64, UPDATES, DELETES)
    );
    assert_eq!(report.events, OBJECTS as u64 + UPDATES + DELETES);
    assert_eq!(report.deliveries_per_subscriber, deliveries);
    assert_eq!(report.server.lists, 1);
    assert_eq!(report.server.pages, 3);
    assert_eq!(report.server.events_sent, UPDATES + DELETES);
    assert!(report.sync_seconds > 0.0 && report.sync_seconds < report.seconds);
    assert!(report.cpu_seconds > 0.0);
    assert!(report.peak_rss >= report.rss_after_sync);
}

fn assert_relist(report: &WireReport) {
    assert_eq!(report.variant, "relist");
    assert_eq!(report.events, OBJECTS as u64);
    assert_eq!(report.deliveries_per_subscriber, 2 * OBJECTS as u64);
    assert_eq!(report.server.lists, 2);
    assert_eq!(report.server.events_sent, 0);
    assert!(report.server.expired_watches >= 1);
}

#[test]
fn chunkings_parse_from_their_names() {
    for name in ["backlog", "event", "rate=1000"] {
        assert_eq!(Chunking::parse(name).unwrap().name(), name);
    }
    assert!(Chunking::parse("rate=0").is_err());
    assert!(Chunking::parse("lines").is_err());
}

#[cfg(feature = "ours")]
mod ours {
    use super::*;
    use kube_informer_compare::wire::ours::OursWire;

    // One chunk per event, and a steady rate: every event still arrives, and
    // the report says how the server wrote them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ours_reaches_quiescence_with_one_chunk_per_event_and_at_a_rate() {
        for chunking in [Chunking::PerEvent, Chunking::Rate(20_000)] {
            let server = start_server_with(chunking).await;
            let report = drive_bounded::<OursWire>(options(server, 1, false, false)).await;
            assert_burst(&report, OBJECTS as u64 + UPDATES + DELETES);
            assert_eq!(report.chunking, chunking.name());
            assert!(report.watch_cpu_seconds > 0.0);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ours_tells_every_subscriber_every_event() {
        let report = burst::<OursWire>(3, false).await;
        assert_eq!(report.runner, "ours");
        assert_burst(&report, OBJECTS as u64 + UPDATES + DELETES);
        assert!(report.most_pending.is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ours_with_strip_reaches_quiescence() {
        let report = burst::<OursWire>(1, true).await;
        assert!(report.strip);
        assert_burst(&report, OBJECTS as u64 + UPDATES + DELETES);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ours_relists_after_a_410() {
        assert_relist(&relist::<OursWire>(2, true).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_runtime_reaches_quiescence_with_deletes_held_back() {
    let report = burst::<KubeRuntimeWire>(3, false).await;
    assert_eq!(report.runner, "kube-runtime");
    assert_burst(&report, OBJECTS as u64 + UPDATES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_runtime_with_strip_reaches_quiescence() {
    let report = burst::<KubeRuntimeWire>(1, true).await;
    assert_burst(&report, OBJECTS as u64 + UPDATES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_runtime_reaches_quiescence_with_one_chunk_per_event() {
    let server = start_server_with(Chunking::PerEvent).await;
    let report = drive_bounded::<KubeRuntimeWire>(options(server, 1, false, false)).await;
    assert_burst(&report, OBJECTS as u64 + UPDATES);
    assert_eq!(report.chunking, "event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_runtime_relists_after_a_410() {
    assert_relist(&relist::<KubeRuntimeWire>(2, false).await);
}
