//! Decoding one object from protobuf against decoding it from JSON, side by
//! side in one run: the Pod of `tests/protobuf-vectors/pod.pb` (written by
//! Go's encoder, with managedFields, two containers' worth of spec, probes,
//! volumes, affinity, tolerations and a status) and the Node of `node.pb`
//! (maps of quantities, conditions, addresses, images), each beside the
//! same object as compact JSON text.
//!
//! - `generated` (Pod only, with the private `protobuf-generated` feature):
//!   the generated decoder of `src/protobuf/direct.rs`, filling the
//!   struct's fields by field number,
//! - `protobuf`: the body (`k8s\0` envelope) into `Pod`, through serde,
//! - `json_source`: the source's JSON decoder for one object (its kind and
//!   name check, then the typed decode),
//! - `json_plain`: `serde_json::from_slice::<Pod>`, no checks (the floor of
//!   the JSON path),
//! - `protobuf_watch_source`, `json_watch_source`: one MODIFIED watch event
//!   of the object (a protobuf frame, a JSON line) decoded as the source
//!   decodes it: the event's envelope, the R7 checks and the object (for
//!   the Pod with `protobuf-generated`, by the generated decoder, as the
//!   source does).
//!
//! `cargo bench --bench protobuf -- --quick` for a short run; add
//! `--features protobuf-generated` for the generated decoder.
//!
//! On a busy machine wall time says little; a fixed count of calls under
//! `perf stat` (instructions, task-clock) says more. With
//! `PROTOBUF_BENCH_COUNT=N` and `PROTOBUF_BENCH_ONLY=pod/protobuf` (a group's
//! vector and one decoder) the binary decodes that N times and exits; the
//! difference between two counts, over the difference in N, is one call.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::{
    Resource,
    api::core::v1::{Node, Pod},
};
use kube_informer::unstable::{
    decode as decode_bench,
    protobuf::{Error, decode_object},
};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

fn vector(name: &str, ext: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/protobuf-vectors/{name}.{ext}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A MODIFIED `WatchEvent` message carrying `body`, as the API server
/// frames it (without the frame's length).
fn watch_frame(body: &[u8]) -> Vec<u8> {
    fn field(number: u8, bytes: &[u8], out: &mut Vec<u8>) {
        out.push(number << 3 | 2);
        let mut len = bytes.len();
        while len >= 0x80 {
            out.push((len as u8 & 0x7f) | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(bytes);
    }
    let mut extension = Vec::new();
    field(1, body, &mut extension);
    let mut frame = Vec::new();
    field(1, b"MODIFIED", &mut frame);
    field(2, &extension, &mut frame);
    frame
}

/// A decoder of one body into `K` besides the crate's own.
type Extra<K> = (&'static str, fn(&[u8]) -> Result<K, Error>);

/// One decoder, bound to its input.
type Decode<'a, K> = Box<dyn Fn() -> K + 'a>;

/// One group, `NAME_decode`, of the decoders on vector `name`: the three
/// every kind has, and `extra`.
fn compare<K>(c: &mut Criterion, name: &str, list_kind: &str, extra: Option<Extra<K>>)
where
    K: Resource + DeserializeOwned + PartialEq + std::fmt::Debug + 'static,
{
    let pb = vector(name, "pb");
    // As the API server sends it: compact, fields in Go's order.
    let pretty = String::from_utf8(vector(name, "json")).unwrap();
    let json: String = {
        let mut out = String::with_capacity(pretty.len());
        let mut in_string = false;
        let mut escaped = false;
        for ch in pretty.chars() {
            if in_string {
                out.push(ch);
                match (escaped, ch) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => in_string = false,
                    _ => {}
                }
            } else if ch == '"' {
                in_string = true;
                out.push(ch);
            } else if !ch.is_whitespace() {
                out.push(ch);
            }
        }
        out
    };
    let raw: Box<RawValue> = serde_json::from_str(&json).unwrap();
    let expected: K = serde_json::from_str(&json).unwrap();
    assert_eq!(decode_object::<K>(&pb).unwrap(), expected);
    eprintln!(
        "{name}: {} bytes of protobuf, {} bytes of JSON",
        pb.len(),
        json.len()
    );

    let mut decoders: Vec<(&str, Decode<'_, K>)> = Vec::new();
    if let Some((decoder, decode)) = extra {
        assert_eq!(decode(&pb).unwrap(), expected, "{name}/{decoder}");
        let body: &[u8] = &pb;
        decoders.push((decoder, Box::new(move || decode(black_box(body)).unwrap())));
    }
    decoders.push((
        "protobuf",
        Box::new(|| decode_object::<K>(black_box(&pb)).unwrap()),
    ));
    decoders.push((
        "json_source",
        Box::new(|| decode_bench::object::<K>(black_box(&raw), Some(list_kind)).unwrap()),
    ));
    decoders.push((
        "json_plain",
        Box::new(|| serde_json::from_slice::<K>(black_box(json.as_bytes())).unwrap()),
    ));

    let frame = watch_frame(&pb);
    let line = format!(r#"{{"type":"MODIFIED","object":{json}}}"#);
    let (api_version, kind) = (K::API_VERSION, K::KIND);
    assert_eq!(
        decode_bench::watch_frame::<K>(&frame, api_version, kind).unwrap(),
        Some(expected)
    );
    decoders.push((
        "protobuf_watch_source",
        Box::new(move || {
            decode_bench::watch_frame::<K>(black_box(&frame), api_version, kind)
                .unwrap()
                .unwrap()
        }),
    ));
    decoders.push((
        "json_watch_source",
        Box::new(move || {
            decode_bench::watch_line::<K>(black_box(line.as_bytes()), Some(list_kind))
                .unwrap()
                .unwrap()
        }),
    ));

    if let (Ok(only), Ok(count)) = (
        std::env::var("PROTOBUF_BENCH_ONLY"),
        std::env::var("PROTOBUF_BENCH_COUNT"),
    ) {
        let count: u64 = count.parse().expect("PROTOBUF_BENCH_COUNT: a number");
        for (decoder, decode) in decoders {
            if only == format!("{name}/{decoder}") {
                for _ in 0..count {
                    black_box(decode());
                }
                std::process::exit(0);
            }
        }
        return;
    }

    let mut group = c.benchmark_group(format!("{name}_decode"));
    group.throughput(Throughput::Elements(1));
    for (decoder, decode) in decoders {
        group.bench_function(decoder, |b| b.iter(&decode));
    }
    group.finish();
}

fn pod(c: &mut Criterion) {
    #[cfg(feature = "protobuf-generated")]
    let extra: Option<Extra<Pod>> = Some((
        "generated",
        kube_informer::unstable::protobuf::generated::decode_pod,
    ));
    #[cfg(not(feature = "protobuf-generated"))]
    let extra = None;
    compare::<Pod>(c, "pod", "PodList", extra);
}

fn node(c: &mut Criterion) {
    compare::<Node>(c, "node", "NodeList", None);
}

criterion_group!(benches, pod, node);
criterion_main!(benches);
