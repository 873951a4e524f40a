//! Decoding one Pod from protobuf against decoding it from JSON, side by
//! side in one run: the Pod of `tests/protobuf-vectors/pod.pb` (written by
//! Go's encoder, with managedFields, two containers' worth of spec, probes,
//! volumes, affinity, tolerations and a status), and the same Pod as
//! compact JSON text.
//!
//! - `protobuf`: the body (`k8s\0` envelope) into `Pod`,
//! - `json_source`: the source's JSON decoder for one object (its kind and
//!   name check, then the typed decode),
//! - `json_plain`: `serde_json::from_slice::<Pod>`, no checks (the floor of
//!   the JSON path).
//!
//! `cargo bench --bench protobuf -- --quick` for a short run.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kube_informer::unstable::{decode as decode_bench, protobuf::decode_object};
use serde_json::value::RawValue;

fn vector(ext: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/protobuf-vectors/pod.{ext}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn pod(c: &mut Criterion) {
    let pb = vector("pb");
    // As the API server sends it: compact, fields in Go's order.
    let pretty = String::from_utf8(vector("json")).unwrap();
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
    let expected: Pod = serde_json::from_str(&json).unwrap();
    assert_eq!(decode_object::<Pod>(&pb).unwrap(), expected);
    eprintln!(
        "pod: {} bytes of protobuf, {} bytes of JSON",
        pb.len(),
        json.len()
    );

    let mut group = c.benchmark_group("pod_decode");
    group.throughput(Throughput::Elements(1));
    group.bench_function("protobuf", |b| {
        b.iter(|| decode_object::<Pod>(black_box(&pb)).unwrap())
    });
    group.bench_function("json_source", |b| {
        b.iter(|| decode_bench::object::<Pod>(black_box(&raw), Some("PodList")).unwrap())
    });
    group.bench_function("json_plain", |b| {
        b.iter(|| serde_json::from_slice::<Pod>(black_box(json.as_bytes())).unwrap())
    });
    group.finish();
}

criterion_group!(benches, pod);
criterion_main!(benches);
