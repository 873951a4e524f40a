//! PB9–PB12: the source asking for protobuf, against a server that answers
//! with the Go-written bodies of `tests/protobuf-vectors/wire/` (the
//! testing crate serves JSON only): what it asks for, the events it gives
//! (the events the same bodies give in JSON), how it reads a protobuf
//! `Status`, and what it does with a malformed frame.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    http::header,
    response::Response,
};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api,
    api::{ApiResource, DynamicObject},
};
use kube_informer::{
    Informer, InformerFactory,
    informer::Defaults,
    source::{self, Config, DecodeTarget, Encoding, Error, Event, ListStrategy, Watchable},
    unstable::protobuf::watch_source_encoded,
};
use parking_lot::Mutex;

use crate::protobuf_wire::{json_events, read};
use crate::source_helpers::{exact_backoff, next, next_error, next_event, spawned};

const PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";
const JSON: &str = "application/json";

/// The frames of `watch.pb`, each with its length prefix.
fn frames() -> Vec<Vec<u8>> {
    let stream = read("watch.pb");
    let mut rest = &stream[..];
    let mut frames = Vec::new();
    while let Some((length, body)) = rest.split_first_chunk::<4>() {
        let len = u32::from_be_bytes(*length) as usize;
        frames.push(rest[..4 + len].to_vec());
        rest = &body[len..];
    }
    assert_eq!(
        frames.len(),
        6,
        "ADDED, MODIFIED, DELETED, two BOOKMARKs, ERROR"
    );
    frames
}

/// `bytes` as one frame.
fn frame(bytes: &[u8]) -> Vec<u8> {
    let mut frame = (bytes.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(bytes);
    frame
}

/// A length-delimited protobuf field (numbers and lengths below 128).
fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![number << 3 | 2, u8::try_from(bytes.len()).unwrap()];
    out.extend_from_slice(bytes);
    out
}

/// One answer of the server.
#[derive(Clone)]
struct Answer {
    status: u16,
    content_type: &'static str,
    chunks: Vec<Vec<u8>>,
    /// The body stays open after its chunks (a watch that goes on).
    hang: bool,
}

impl Answer {
    fn ok(content_type: &'static str, body: Vec<u8>) -> Self {
        Self {
            status: 200,
            content_type,
            chunks: vec![body],
            hang: false,
        }
    }

    fn status(status: u16, body: Vec<u8>) -> Self {
        Self {
            status,
            ..Self::ok(PROTOBUF, body)
        }
    }

    /// A protobuf watch sending `body` in pieces of `piece` bytes, then
    /// staying open.
    fn watch(body: Vec<u8>, piece: usize) -> Self {
        Self {
            status: 200,
            content_type: PROTOBUF_WATCH,
            chunks: body.chunks(piece).map(<[u8]>::to_vec).collect(),
            hang: true,
        }
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    watch: bool,
    query: String,
    accept: Option<String>,
}

impl Seen {
    fn param(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_bytes())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    }
}

#[derive(Default)]
struct Script {
    lists: VecDeque<Answer>,
    watches: VecDeque<Answer>,
    seen: Vec<Seen>,
}

/// A server answering lists and watches from scripts, in order: a list
/// with none left gets an empty protobuf page, a watch with none left
/// stays open and says nothing.
#[derive(Clone, Default)]
struct PbServer(Arc<Mutex<Script>>);

impl PbServer {
    fn client(&self) -> kube::Client {
        let router = Router::new().fallback(handle).with_state(self.clone());
        kube::Client::new(router, "production")
    }

    fn list(&self, answer: Answer) -> &Self {
        self.0.lock().lists.push_back(answer);
        self
    }

    fn watch(&self, answer: Answer) -> &Self {
        self.0.lock().watches.push_back(answer);
        self
    }

    fn seen(&self) -> Vec<Seen> {
        self.0.lock().seen.clone()
    }

    /// Waits (tokio time) until the server has seen `n` requests.
    async fn wait_requests(&self, n: usize) -> Vec<Seen> {
        for _ in 0..3600 {
            let seen = self.seen();
            if seen.len() >= n {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the server saw {:?}, not {n} requests", self.seen());
    }
}

async fn handle(State(server): State<PbServer>, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default().to_owned();
    let watch = query.split('&').any(|pair| pair == "watch=true");
    let accept = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let answer = {
        let mut script = server.0.lock();
        script.seen.push(Seen {
            watch,
            query,
            accept,
        });
        if watch {
            script.watches.pop_front()
        } else {
            script.lists.pop_front()
        }
    };
    let answer = answer.unwrap_or_else(|| match watch {
        true => Answer::watch(Vec::new(), 1),
        false => Answer::ok(PROTOBUF, read("podlist-empty.pb")),
    });
    let chunks = futures::stream::iter(
        answer
            .chunks
            .into_iter()
            .map(|chunk| Ok::<_, std::io::Error>(Bytes::from(chunk))),
    );
    let body = match answer.hang {
        true => Body::from_stream(chunks.chain(futures::stream::pending())),
        false => Body::from_stream(chunks),
    };
    Response::builder()
        .status(answer.status)
        .header(header::CONTENT_TYPE, answer.content_type)
        .body(body)
        .unwrap()
}

fn pods(
    server: &PbServer,
    config: Config<Pod>,
) -> impl Stream<Item = Result<Event<Pod>, Error>> + Unpin + use<> {
    let api: Api<Pod> = Api::namespaced(server.client(), "production");
    spawned(watch_source_encoded(
        api,
        config.backoff(exact_backoff()),
        Encoding::Protobuf,
    ))
}

/// The pods and events of the JSON vectors.
fn json_list() -> k8s_openapi::List<Pod> {
    serde_json::from_slice(&read("podlist.json")).unwrap()
}

fn json_pod(index: usize) -> Pod {
    serde_json::from_value(json_events()[index].1.clone()).unwrap()
}

/// The vectors' list, in two pages, then their watch: the events the JSON
/// of the same objects gives.
async fn expect_vector_events<S>(events: &mut S)
where
    S: Stream<Item = Result<Event<Pod>, Error>> + Unpin,
{
    let list = json_list();
    assert!(matches!(next_event(events).await, Event::ListStart));
    for pod in &list.items {
        match next_event(events).await {
            Event::Listed(listed) => assert_eq!(&listed, pod),
            other => panic!("{other:?}"),
        }
    }
    match next_event(events).await {
        Event::ListDone { resource_version } => assert_eq!(resource_version, "100042"),
        other => panic!("{other:?}"),
    }
    match next_event(events).await {
        Event::Added(pod) => assert_eq!(pod, json_pod(0)),
        other => panic!("{other:?}"),
    }
    match next_event(events).await {
        Event::Modified(pod) => assert_eq!(pod, json_pod(1)),
        other => panic!("{other:?}"),
    }
    match next_event(events).await {
        Event::Deleted(pod) => assert_eq!(pod, json_pod(2)),
        other => panic!("{other:?}"),
    }
    for rv in ["100050", "100051"] {
        match next_event(events).await {
            Event::Bookmark { resource_version } => assert_eq!(resource_version, rv),
            other => panic!("{other:?}"),
        }
    }
    match next_error(events).await {
        Error::WatchEvent { code, reason, .. } => {
            assert_eq!((code, reason.as_str()), (410, "Expired"))
        }
        other => panic!("{other:?}"),
    }
}

/// The Accept headers of a source's first list and watch (the server
/// answering the list in JSON).
async fn accepts<K: Watchable>(
    server: &PbServer,
    api: Api<K>,
    encoding: Encoding,
) -> Vec<Option<String>> {
    server.list(Answer::ok(JSON, read("podlist-empty.json")));
    let mut events = spawned(watch_source_encoded(api, Config::default(), encoding));
    while !matches!(next(&mut events).await, Ok(Event::ListDone { .. })) {}
    let seen = server.wait_requests(2).await;
    seen.into_iter().map(|request| request.accept).collect()
}

// PB9: a built-in kind's lists and watches ask for protobuf, with JSON as
// the fallback; JSON asks for nothing, a DynamicObject stays on JSON
// whatever is asked, and a metadata-only source asks for its view in
// protobuf, then in JSON.
#[tokio::test(start_paused = true)]
async fn pb9_built_in_kinds_ask_for_protobuf_and_others_for_json() {
    let server = PbServer::default();
    let mut events = pods(&server, Config::default());
    while !matches!(next(&mut events).await, Ok(Event::ListDone { .. })) {}
    let seen = server.wait_requests(2).await;
    assert!(!seen[0].watch && seen[1].watch, "{seen:?}");
    for request in &seen {
        assert_eq!(
            request.accept.as_deref(),
            Some(PROTOBUF_ACCEPT),
            "{request:?}"
        );
    }
    drop(events);

    let json = PbServer::default();
    let api: Api<Pod> = Api::namespaced(json.client(), "production");
    assert_eq!(accepts(&json, api, Encoding::Json).await, [None, None]);

    let dynamic = PbServer::default();
    let resource = ApiResource::erase::<Pod>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(dynamic.client(), "production", &resource);
    assert_eq!(
        accepts(&dynamic, api, Encoding::Protobuf).await,
        [None, None]
    );

    let metadata = PbServer::default();
    let api: Api<Pod> = Api::namespaced(metadata.client(), "production");
    let informer = Informer::metadata_builder(api)
        .encoding(Encoding::Protobuf)
        .build();
    let run = tokio::spawn(informer.run());
    let seen = metadata.wait_requests(1).await;
    let accept = seen[0].accept.as_deref().unwrap_or_default();
    assert!(
        accept.starts_with(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadataList"
        ),
        "{accept}"
    );
    informer.stop();
    drop(run);
}

// PB10: pages (continue token and resourceVersion) and a watch (in pieces
// that cut the frames anywhere) in protobuf give the events their JSON
// gives, bookmarks and an ERROR event included.
#[tokio::test(start_paused = true)]
async fn pb10_protobuf_pages_and_watch_give_the_json_events() {
    for piece in [1, 7, 4096] {
        let server = PbServer::default();
        server
            .list(Answer::ok(PROTOBUF, read("podlist.pb")))
            .list(Answer::ok(PROTOBUF, read("podlist-empty.pb")))
            .watch(Answer::watch(read("watch.pb"), piece));
        let mut events = pods(&server, Config::default());
        expect_vector_events(&mut events).await;
        let seen = server.seen();
        assert_eq!(
            seen[1].param("continue").as_deref(),
            json_list().metadata.continue_.as_deref(),
            "the second page is asked for with the first's token"
        );
        assert_eq!(seen[2].param("resourceVersion").as_deref(), Some("100042"));
    }
}

// PB9: the answer is decoded by its Content-Type: a server that answers
// JSON to a protobuf request is read as JSON, with the same events.
#[tokio::test(start_paused = true)]
async fn pb9_a_json_answer_to_a_protobuf_request_is_read_as_json() {
    let lines: String = serde_json::from_slice::<Vec<serde_json::Value>>(&read("watch.json"))
        .unwrap()
        .iter()
        .map(|event| format!("{event}\n"))
        .collect();
    let server = PbServer::default();
    server
        .list(Answer::ok(JSON, read("podlist.json")))
        .list(Answer::ok(JSON, read("podlist-empty.json")))
        .watch(Answer {
            content_type: JSON,
            ..Answer::watch(lines.into_bytes(), 100)
        });
    let mut events = pods(&server, Config::default());
    expect_vector_events(&mut events).await;
    assert!(
        server
            .seen()
            .iter()
            .all(|r| r.accept.as_deref() == Some(PROTOBUF_ACCEPT))
    );
}

// PB10: a streaming list in protobuf ends at its initial-events-end
// bookmark, and the same watch goes on.
#[tokio::test(start_paused = true)]
async fn pb10_a_protobuf_streaming_list_ends_at_its_bookmark() {
    let frames = frames();
    let server = PbServer::default();
    server.watch(Answer::watch(
        [&frames[0][..], &frames[3], &frames[4]].concat(),
        5,
    ));
    let mut events = pods(
        &server,
        Config::default().list_strategy(ListStrategy::Streaming),
    );
    assert!(matches!(next_event(&mut events).await, Event::ListStart));
    match next_event(&mut events).await {
        Event::Listed(pod) => assert_eq!(pod, json_pod(0)),
        other => panic!("{other:?}"),
    }
    match next_event(&mut events).await {
        Event::ListDone { resource_version } => assert_eq!(resource_version, "100050"),
        other => panic!("{other:?}"),
    }
    match next_event(&mut events).await {
        Event::Bookmark { resource_version } => assert_eq!(resource_version, "100051"),
        other => panic!("{other:?}"),
    }
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].param("sendInitialEvents").as_deref(), Some("true"));
    assert_eq!(seen[0].accept.as_deref(), Some(PROTOBUF_ACCEPT));
}

/// The server's `Status` inside a source error.
fn status(error: &Error) -> &kube::core::Status {
    match error {
        Error::List {
            source: kube::Error::Api(status),
            ..
        }
        | Error::WatchStart {
            source: kube::Error::Api(status),
            ..
        } => status,
        other => panic!("{other:?}"),
    }
}

// PB11: protobuf Status bodies fail requests as their JSON does: a 410 list
// retries at once with a consistent list, a 403 list backs off and
// relists, a 429 watch start backs off and watches again.
#[tokio::test(start_paused = true)]
async fn pb11_protobuf_status_errors_are_handled_as_json_ones() {
    let server = PbServer::default();
    server
        .list(Answer::status(410, read("status-410.pb")))
        .list(Answer::status(403, read("status-403.pb")))
        .watch(Answer::status(429, read("status-429.pb")));
    let mut events = pods(&server, Config::default());

    let gone = next_error(&mut events).await;
    assert_eq!(
        (status(&gone).code, status(&gone).reason.as_str()),
        (410, "Expired")
    );
    let forbidden = next_error(&mut events).await;
    let forbidden_status = status(&forbidden);
    assert_eq!(
        (forbidden_status.code, forbidden_status.reason.as_str()),
        (403, "Forbidden")
    );
    assert!(forbidden_status.message.contains("cannot list resource"));
    let seen = server.seen();
    assert_eq!(seen[0].param("resourceVersion").as_deref(), Some("0"));
    assert_eq!(
        seen[1].param("resourceVersion"),
        None,
        "after 410: a consistent list at once"
    );

    assert!(matches!(next_event(&mut events).await, Event::ListStart));
    assert!(matches!(
        next_event(&mut events).await,
        Event::ListDone { .. }
    ));
    let throttled = next_error(&mut events).await;
    let throttled_status = status(&throttled);
    assert_eq!(
        (throttled_status.code, throttled_status.reason.as_str()),
        (429, "TooManyRequests")
    );
    assert_eq!(
        throttled_status
            .details
            .as_ref()
            .map(|d| d.retry_after_seconds),
        Some(1)
    );
    let seen = server.wait_requests(5).await;
    assert!(
        seen[4].watch,
        "429 on a watch start watches again: {seen:?}"
    );
}

/// What a watch of these frames gives, after an empty list: the events
/// and errors up to the next list request.
async fn watch_of(body: Vec<u8>) -> (Vec<Result<Event<Pod>, Error>>, PbServer) {
    let server = PbServer::default();
    server.watch(Answer {
        hang: false,
        ..Answer::watch(body, 3)
    });
    let mut events = pods(&server, Config::default());
    while !matches!(next(&mut events).await, Ok(Event::ListDone { .. })) {}
    let mut items = Vec::new();
    loop {
        let item = next(&mut events).await;
        if matches!(item, Ok(Event::ListStart)) {
            return (items, server);
        }
        items.push(item);
    }
}

fn is_broken_frame(item: &Result<Event<Pod>, Error>) -> bool {
    matches!(
        item,
        Err(Error::Decode {
            what: DecodeTarget::WatchLine,
            ..
        })
    )
}

// PB12: a malformed frame is reported as a line that is not JSON is: the
// watch ends and the source relists after a backoff; a bad object in a
// whole frame is skipped as a bad JSON object is, and the watch goes on.
#[tokio::test(start_paused = true)]
async fn pb12_malformed_frames_are_reported_as_malformed_json() {
    let frames = frames();
    let garbage = frame(&[0xff, 0xff, 0xff]);
    let (items, server) = watch_of([&frames[0][..], &garbage, &frames[1]].concat()).await;
    assert!(matches!(items[0], Ok(Event::Added(_))), "{items:?}");
    assert!(is_broken_frame(&items[1]), "{items:?}");
    assert_eq!(
        items.len(),
        2,
        "nothing read after the broken frame: {items:?}"
    );
    let seen = server.seen();
    assert!(
        seen[1].watch && !seen[2].watch,
        "a relist follows: {seen:?}"
    );

    // A length above the frame limit, and a stream that ends inside a frame.
    let too_long = [0x7f, 0xff, 0xff, 0xff, 0, 0].to_vec();
    let cut = frames[1][..frames[1].len() - 3].to_vec();
    for tail in [too_long, cut] {
        let (items, _) = watch_of([&frames[0][..], &tail].concat()).await;
        assert!(matches!(items[0], Ok(Event::Added(_))), "{items:?}");
        assert!(is_broken_frame(&items[1]), "{items:?}");
    }

    // An object of another kind, one without a name, and an unknown event
    // type in whole frames: each skipped, the watch goes on.
    let object = |kind: &[u8], object: &[u8]| {
        let type_meta = [field(1, b"v1"), field(2, kind)].concat();
        let body = [&b"k8s\0"[..], &field(1, &type_meta), &field(2, object)].concat();
        field(2, &field(1, &body))
    };
    let named = field(1, &field(1, b"a"));
    let unnamed = field(1, &field(3, b"ns"));
    let wrong_kind = frame(&[field(1, b"ADDED"), object(b"ConfigMap", &named)].concat());
    let no_name = frame(&[field(1, b"ADDED"), object(b"Pod", &unnamed)].concat());
    let unknown = frame(&[field(1, b"NOPE"), object(b"Pod", &named)].concat());
    let (items, _) =
        watch_of([&wrong_kind[..], &no_name, &unknown, &frames[1], &frames[5]].concat()).await;
    assert!(
        matches!(&items[0], Err(Error::WrongKind { found, .. }) if found == "ConfigMap"),
        "{items:?}"
    );
    assert!(matches!(items[1], Err(Error::MissingName)), "{items:?}");
    assert!(
        matches!(&items[2], Err(Error::UnknownEventType(t)) if t == "NOPE"),
        "{items:?}"
    );
    assert!(
        matches!(&items[3], Ok(Event::Modified(pod)) if *pod == json_pod(1)),
        "{items:?}"
    );
    assert!(
        matches!(items[4], Err(Error::WatchEvent { code: 410, .. })),
        "{items:?}"
    );
}

// PB12: a list body that is not protobuf fails the list as JSON that does
// not parse does; the source relists after a backoff.
#[tokio::test(start_paused = true)]
async fn pb12_a_malformed_protobuf_page_fails_the_list() {
    let server = PbServer::default();
    server.list(Answer::ok(PROTOBUF, b"k8s\0\x0a\xff".to_vec()));
    let mut events = pods(&server, Config::default());
    assert!(matches!(
        next_error(&mut events).await,
        Error::Decode {
            what: DecodeTarget::List,
            ..
        }
    ));
    assert!(matches!(next_event(&mut events).await, Event::ListStart));
    assert!(matches!(
        next_event(&mut events).await,
        Event::ListDone { .. }
    ));
}

// PB12: an informer over protobuf reports a broken frame on its error
// stream and keeps what it holds.
#[tokio::test(start_paused = true)]
async fn pb12_an_informer_keeps_its_objects_through_a_broken_frame() {
    let server = PbServer::default();
    server
        .list(Answer::ok(PROTOBUF, read("podlist.pb")))
        .list(Answer::ok(PROTOBUF, read("podlist-empty.pb")))
        .watch(Answer::watch(frame(&[0xff, 0xff]), 16))
        // The relist after the broken frame hangs, so the store is seen
        // between the error and the next list.
        .list(Answer {
            hang: true,
            chunks: Vec::new(),
            ..Answer::ok(PROTOBUF, Vec::new())
        });
    let api: Api<Pod> = Api::namespaced(server.client(), "production");
    let informer = Informer::builder(api)
        .source_config(source::Config::default().backoff(exact_backoff()))
        .encoding(Encoding::Protobuf)
        .build();
    let mut errors = informer.errors();
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    let error = tokio::time::timeout(Duration::from_secs(3600), errors.next())
        .await
        .unwrap()
        .unwrap();
    let mut chain = error.to_string();
    let mut cause = std::error::Error::source(&error);
    while let Some(next) = cause {
        chain = format!("{chain}: {next}");
        cause = next.source();
    }
    assert!(chain.contains("failed to decode watch line"), "{chain}");
    let store = informer.store();
    let mut held: Vec<Pod> = store.list().iter().map(|pod| (**pod).clone()).collect();
    held.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut listed = json_list().items;
    listed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    assert_eq!(held, listed);
    informer.stop();
    drop(run);
}

// PB9: a factory's default encoding reaches the informers it builds, and
// counts among the options two requests for one informer must agree on.
#[tokio::test(start_paused = true)]
async fn pb9_a_factory_default_encoding_reaches_its_informers() {
    let server = PbServer::default();
    let factory = InformerFactory::with_defaults(
        server.client(),
        Defaults {
            encoding: Encoding::Protobuf,
            ..Defaults::default()
        },
    );
    let api = || Api::<Pod>::namespaced(server.client(), "production");
    let informer = factory.build(api(), |b| b).unwrap();
    assert!(factory.build(api(), |b| b).is_ok(), "the same options");
    assert!(
        factory
            .build(api(), |b| b.encoding(Encoding::Json))
            .is_err(),
        "another encoding is another informer's options"
    );
    let run = tokio::spawn(informer.run());
    let seen = server.wait_requests(1).await;
    assert_eq!(seen[0].accept.as_deref(), Some(PROTOBUF_ACCEPT));
    informer.stop();
    drop(run);
}

/// A `meta.k8s.io/v1` body (`k8s\0` and its envelope) of `kind` holding
/// `raw`.
fn meta_body(kind: &[u8], raw: &[u8]) -> Vec<u8> {
    let type_meta = [field(1, b"meta.k8s.io/v1"), field(2, kind)].concat();
    [&b"k8s\0"[..], &field(1, &type_meta), &field(2, raw)].concat()
}

/// A PartialObjectMetadata message: namespace `production`, `name`, and
/// the resourceVersion `rv`.
fn partial(name: &[u8], rv: &[u8]) -> Vec<u8> {
    let meta = [field(1, name), field(3, b"production"), field(6, rv)].concat();
    field(1, &meta)
}

// PB10: a metadata-only informer lists and watches PartialObjectMetadata in
// protobuf, and holds what the same objects' JSON gives.
#[tokio::test(start_paused = true)]
async fn pb10_metadata_only_informers_read_protobuf() {
    let list = [field(1, &field(2, b"10")), field(2, &partial(b"a", b"9"))].concat();
    let added = [
        field(1, b"ADDED"),
        field(
            2,
            &field(
                1,
                &meta_body(b"PartialObjectMetadata", &partial(b"b", b"11")),
            ),
        ),
    ]
    .concat();
    let server = PbServer::default();
    server
        .list(Answer::ok(
            PROTOBUF,
            meta_body(b"PartialObjectMetadataList", &list),
        ))
        .watch(Answer::watch(frame(&added), 5));
    let api: Api<Pod> = Api::namespaced(server.client(), "production");
    let informer = Informer::metadata_builder(api)
        .encoding(Encoding::Protobuf)
        .build();
    let mut errors = informer.errors();
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    while informer.store().len() < 2 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let json = |name: &str, rv: &str| {
        let text = format!(
            r#"{{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{{"name":"{name}","namespace":"production","resourceVersion":"{rv}"}}}}"#
        );
        serde_json::from_str::<kube::core::PartialObjectMeta<Pod>>(&text).unwrap()
    };
    for (name, rv) in [("a", "9"), ("b", "11")] {
        let held = informer.store().get_by(Some("production"), name).unwrap();
        assert_eq!(
            serde_json::to_value(&*held).unwrap(),
            serde_json::to_value(json(name, rv)).unwrap()
        );
    }
    assert!(futures::FutureExt::now_or_never(errors.next()).is_none());
    let seen = server.seen();
    assert!(seen[1].watch);
    assert!(
        seen[1]
            .accept
            .as_deref()
            .unwrap_or_default()
            .starts_with("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;"),
        "{seen:?}"
    );
    informer.stop();
    drop(run);
}
