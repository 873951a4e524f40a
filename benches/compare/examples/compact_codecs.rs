//! Candidate encodings for the store's compact cache, on the wire table's
//! realistic Pods with managedFields stripped: bytes kept per Pod, encode and
//! decode time per Pod (decode: decompress and deserialize into a `Pod`).
//!
//! ```sh
//! cargo run --release -p kube-informer-compare --example compact_codecs -- [PODS]
//! ```
//!
//! The dictionary candidates prime LZ4 with the encodings of the first
//! `DICT_PODS` Pods (what the store does with the first objects it keeps).
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube_informer_compare::wire::pods::pod;

const DICT_PODS: usize = 8;

type Encode = fn(&Pod) -> Vec<u8>;
type Decode = fn(&[u8]) -> Pod;

fn json_enc(p: &Pod) -> Vec<u8> {
    serde_json::to_vec(p).unwrap()
}
fn json_dec(b: &[u8]) -> Pod {
    serde_json::from_slice(b).unwrap()
}
fn mp_enc(p: &Pod) -> Vec<u8> {
    rmp_serde::to_vec_named(p).unwrap()
}
fn mp_dec(b: &[u8]) -> Pod {
    rmp_serde::from_slice(b).unwrap()
}

fn measure(name: &str, pods: &[Pod], enc: Encode, dec: Decode, lz4: bool, dict: bool) {
    let mut dictionary = Vec::new();
    if dict {
        for p in &pods[..DICT_PODS] {
            dictionary.extend_from_slice(&enc(p));
        }
        // LZ4 looks back at most 64 KiB.
        let start = dictionary.len().saturating_sub(65_535);
        dictionary.drain(..start);
    }
    let started = Instant::now();
    let encoded: Vec<(Vec<u8>, usize)> = pods
        .iter()
        .map(|p| {
            let raw = enc(p);
            let len = raw.len();
            let out = match (lz4, dict) {
                (false, _) => raw,
                (true, false) => lz4_flex::block::compress(&raw),
                (true, true) => lz4_flex::block::compress_with_dict(&raw, &dictionary),
            };
            (out, len)
        })
        .collect();
    let encode_us = started.elapsed().as_secs_f64() * 1e6 / pods.len() as f64;
    let bytes: usize = encoded.iter().map(|(b, _)| b.len()).sum();
    let raw: usize = encoded.iter().map(|(_, l)| *l).sum();
    let mut times = Vec::with_capacity(pods.len());
    for (b, len) in &encoded {
        let started = Instant::now();
        let pod = match (lz4, dict) {
            (false, _) => dec(b),
            (true, false) => dec(&lz4_flex::block::decompress(b, *len).unwrap()),
            (true, true) => {
                dec(&lz4_flex::block::decompress_with_dict(b, *len, &dictionary).unwrap())
            }
        };
        times.push(started.elapsed().as_secs_f64() * 1e6);
        std::hint::black_box(pod);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{name:<22} {:>7.0} B/pod (raw {:>5.0}) encode {:>6.1} µs  decode p50 {:>6.1} µs p99 {:>6.1} µs",
        bytes as f64 / pods.len() as f64,
        raw as f64 / pods.len() as f64,
        encode_us,
        times[times.len() / 2],
        times[times.len() * 99 / 100],
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(2_000, |a| a.parse().expect("PODS"));
    let pods: Vec<Pod> = (0..n)
        .map(|i| {
            let mut p: Pod = serde_json::from_value(pod(i, 1, i as u64 + 1)).unwrap();
            p.metadata.managed_fields = None;
            p
        })
        .collect();
    for _ in 0..2 {
        measure("json", &pods, json_enc, json_dec, false, false);
        measure("json+lz4", &pods, json_enc, json_dec, true, false);
        measure("json+lz4+dict", &pods, json_enc, json_dec, true, true);
        measure("msgpack", &pods, mp_enc, mp_dec, false, false);
        measure("msgpack+lz4", &pods, mp_enc, mp_dec, true, false);
        measure("msgpack+lz4+dict", &pods, mp_enc, mp_dec, true, true);
        println!();
    }
}
