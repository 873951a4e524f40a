//! Wire mode end to end on a small workload: the loopback server answers
//! lists and watches as a kube-apiserver does, and each Rust runner, with
//! its real client, reaches quiescence (burst) or relists after a 410.

use kube::Client;
use kube_informer_compare::wire::{
    drive::{WireOptions, WireReport, WireRunner, client, drive},
    floor::{FloorWire, TransportWire},
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_floor_tells_every_subscriber_every_event() {
    let report = burst::<FloorWire>(3, true).await;
    assert_eq!(report.runner, "floor");
    assert_burst(&report, OBJECTS as u64 + UPDATES + DELETES);
}

// The transport floor counts the watch body's lines without decoding them:
// lines split across chunks, one chunk per event or many, count once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transport_floor_counts_every_watch_line() {
    for chunking in [Chunking::Backlog, Chunking::PerEvent] {
        let server = start_server_with(chunking).await;
        let report = drive_bounded::<TransportWire>(options(server, 2, false, false)).await;
        assert_eq!(report.runner, "transport");
        assert_burst(&report, OBJECTS as u64 + UPDATES + DELETES);
    }
}

/// W-PB3: the server answers in the first encoding of the `Accept` header
/// it can produce, as kube-apiserver does: Pods or their metadata, JSON or
/// protobuf, with the Content-Type saying which; 406 when it can produce
/// none.
mod accept {
    use super::*;
    use bytes::Bytes;
    use http_body_util::BodyExt;
    use kube_informer_compare::wire::server::{
        Encodings,
        metadata::MetadataWorkload,
        protobuf::{self, ProtobufWorkload, field, fields},
    };

    const OBJECTS: usize = 120;

    /// A message shaped like a Pod's: field 1 its metadata (the name, as
    /// ObjectMeta's field 1), then a spec.
    fn pod_message(name: &str) -> Vec<u8> {
        let mut meta = Vec::new();
        protobuf::put_bytes(&mut meta, 1, name.as_bytes());
        let mut pod = Vec::new();
        protobuf::put_bytes(&mut pod, 1, &meta);
        protobuf::put_bytes(&mut pod, 2, &[1u8; 64]);
        pod
    }

    /// A server with JSON metadata and a protobuf form whose Pod `i` is
    /// named `item-i` and whose event `j` carries `event-j`.
    async fn start() -> Client {
        let workload = WireWorkload::generate(WireSpec::standard(OBJECTS, 3));
        let envelope =
            |name: String| Bytes::from(protobuf::envelope("v1", "Pod", &pod_message(&name)));
        let items: Vec<_> = (0..OBJECTS)
            .map(|i| envelope(format!("item-{i}")))
            .collect();
        let events: Vec<_> = (0..workload.events.len())
            .map(|j| envelope(format!("event-{j}")))
            .collect();
        let encodings = Encodings {
            protobuf: Some(
                ProtobufWorkload::from_envelopes(&items, &workload.event_types, &events).unwrap(),
            ),
            metadata: Some(
                MetadataWorkload::from_json(
                    &workload.items,
                    &workload.event_types,
                    &workload.event_objects,
                )
                .unwrap(),
            ),
        };
        let (address, serving) = WireServer::with_encodings(workload, Chunking::Backlog, encodings)
            .bind(0)
            .await
            .unwrap();
        tokio::spawn(serving);
        client(&format!("http://{address}")).unwrap()
    }

    /// Status, Content-Type and body of `GET path` with `accept`.
    async fn fetch(client: &Client, path: &str, accept: &str) -> (u16, String, Bytes) {
        let request = http::Request::get(path)
            .header(http::header::ACCEPT, accept)
            .body(Vec::new().into())
            .unwrap();
        let response = client.send(request).await.unwrap();
        let status = response.status().as_u16();
        let content_type = response.headers()[http::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, content_type, body)
    }

    /// The string in field `number` of `message`.
    fn text(message: &[u8], number: u32) -> String {
        String::from_utf8(message[field(message, number).unwrap().value].to_vec()).unwrap()
    }

    /// The envelope's apiVersion, kind and object.
    fn open(envelope: &[u8]) -> (String, String, &[u8]) {
        let body = envelope
            .strip_prefix(protobuf::PREFIX)
            .expect("an envelope");
        let type_meta = &body[field(body, 1).unwrap().value];
        (
            text(type_meta, 1),
            text(type_meta, 2),
            &body[field(body, 2).unwrap().value],
        )
    }

    const PROTOBUF_FIRST: &str = "application/vnd.kubernetes.protobuf,application/json";
    const METADATA_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    const METADATA_WATCH: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn protobuf_lists_are_pod_list_envelopes_with_the_list_meta() {
        let client = start().await;
        let (status, content_type, body) =
            fetch(&client, "/api/v1/pods?limit=50", PROTOBUF_FIRST).await;
        assert_eq!(
            (status, content_type.as_str()),
            (200, "application/vnd.kubernetes.protobuf")
        );
        let (api_version, kind, list) = open(&body);
        assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "PodList"));
        let list_meta = &list[field(list, 1).unwrap().value];
        assert_eq!(text(list_meta, 2), "120");
        let token = text(list_meta, 3);
        assert_eq!(token, "120-50");
        assert_eq!(&list_meta[field(list_meta, 4).unwrap().value], &[70]);
        let items: Vec<_> = fields(list)
            .unwrap()
            .into_iter()
            .filter(|f| f.number == 2)
            .collect();
        assert_eq!(items.len(), 50);
        assert_eq!(
            &list[items[7].value.clone()],
            pod_message("item-7").as_slice()
        );

        let (_, _, last) = fetch(
            &client,
            &format!("/api/v1/pods?limit=100&continue={token}"),
            PROTOBUF_FIRST,
        )
        .await;
        let (_, _, list) = open(&last);
        let list_meta = &list[field(list, 1).unwrap().value];
        assert_eq!(
            text(list_meta, 3),
            "",
            "the last page has no continue token"
        );
        assert!(field(list_meta, 4).is_err(), "nor a remaining count");

        // The metadata list: each item is the Pod's field 1 alone.
        let (_, content_type, body) = fetch(&client, "/api/v1/pods", METADATA_LIST).await;
        assert_eq!(content_type, "application/vnd.kubernetes.protobuf");
        let (api_version, kind, list) = open(&body);
        assert_eq!(
            (api_version.as_str(), kind.as_str()),
            ("meta.k8s.io/v1", "PartialObjectMetadataList")
        );
        let items: Vec<_> = fields(list)
            .unwrap()
            .into_iter()
            .filter(|f| f.number == 2)
            .collect();
        assert_eq!(items.len(), OBJECTS);
        let partial = &list[items[3].value.clone()];
        assert_eq!(fields(partial).unwrap().len(), 1);
        assert_eq!(
            text(&partial[field(partial, 1).unwrap().value], 1),
            "item-3"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn protobuf_watches_are_length_prefixed_watch_events() {
        let client = start().await;
        post(&client, "/bench/release?phase=all").await;
        for (accept, kind) in [
            (PROTOBUF_FIRST, "Pod"),
            (METADATA_WATCH, "PartialObjectMetadata"),
        ] {
            let (status, content_type, body) = fetch(
                &client,
                "/api/v1/pods?watch=true&resourceVersion=120&timeoutSeconds=1",
                accept,
            )
            .await;
            assert_eq!(
                (status, content_type.as_str()),
                (200, "application/vnd.kubernetes.protobuf;stream=watch")
            );
            let mut rest = &body[..];
            let mut count = 0;
            while !rest.is_empty() {
                let length = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
                let event = &rest[4..4 + length];
                let expected = if count < 2 * OBJECTS {
                    "MODIFIED"
                } else {
                    "DELETED"
                };
                assert_eq!(text(event, 1), expected);
                let extension = &event[field(event, 2).unwrap().value];
                let (_, object_kind, object) = open(&extension[field(extension, 1).unwrap().value]);
                assert_eq!(object_kind, kind);
                let meta = &object[field(object, 1).unwrap().value];
                assert_eq!(text(meta, 1), format!("event-{count}"));
                rest = &rest[4 + length..];
                count += 1;
            }
            assert_eq!(count, 2 * OBJECTS + OBJECTS / 10);
        }
        // After an expiry, a protobuf watch from before it gets a 410 frame.
        post(&client, "/bench/expire").await;
        let (_, _, body) = fetch(
            &client,
            "/api/v1/pods?watch=true&resourceVersion=120",
            PROTOBUF_FIRST,
        )
        .await;
        let event = &body[4..];
        assert_eq!(text(event, 1), "ERROR");
        let extension = &event[field(event, 2).unwrap().value];
        let (_, kind, status) = open(&extension[field(extension, 1).unwrap().value]);
        assert_eq!(kind, "Status");
        assert_eq!(text(status, 4), "Expired");
        assert_eq!(
            &status[field(status, 6).unwrap().value],
            &[0x9a, 0x03],
            "code 410"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn metadata_json_lists_and_watches_hold_partial_object_metadata() {
        let client = start().await;
        let (status, content_type, body) = fetch(
            &client,
            "/api/v1/pods?limit=50",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .await;
        assert_eq!((status, content_type.as_str()), (200, "application/json"));
        let list: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(list["kind"], "PartialObjectMetadataList");
        assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(list["metadata"]["continue"], "120-50");
        let pods = get(&client, "/api/v1/pods?limit=50").await;
        for (item, pod) in list["items"]
            .as_array()
            .unwrap()
            .iter()
            .zip(pods["items"].as_array().unwrap())
        {
            assert_eq!(item["kind"], "PartialObjectMetadata");
            assert_eq!(item["metadata"], pod["metadata"]);
            assert!(item.get("spec").is_none());
        }
        post(&client, "/bench/release?phase=all").await;
        let (_, _, body) = fetch(
            &client,
            "/api/v1/pods?watch=true&resourceVersion=120&timeoutSeconds=1",
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )
        .await;
        let lines: Vec<Value> = body
            .split(|byte| *byte == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 2 * OBJECTS + OBJECTS / 10);
        assert_eq!(lines[0]["type"], "MODIFIED");
        assert_eq!(lines[0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(lines[0]["object"]["metadata"]["resourceVersion"], "121");
        assert!(lines[0]["object"].get("status").is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn json_stays_the_default_and_the_unproducible_gets_406() {
        let encoding = start().await;
        let (_, content_type, body) =
            fetch(&encoding, "/api/v1/pods?limit=1", "application/json").await;
        assert_eq!(content_type, "application/json");
        assert_eq!(
            serde_json::from_slice::<Value>(&body).unwrap()["kind"],
            "PodList"
        );
        let (status, _, _) = fetch(&encoding, "/api/v1/pods", "application/yaml").await;
        assert_eq!(status, 406);
        // A server without the encodings answers the metadata client's
        // header with its last choice, plain JSON Pods.
        let plain = start_server().await;
        let (_, content_type, body) = fetch(
            &client(&plain).unwrap(),
            "/api/v1/pods?limit=1",
            METADATA_LIST,
        )
        .await;
        assert_eq!(content_type, "application/json");
        assert_eq!(
            serde_json::from_slice::<Value>(&body).unwrap()["kind"],
            "PodList"
        );
    }
}
