//! The compact cache's LZ4 block compressor (`src/store/lz4_dictionary.rs`,
//! which hashes the store's dictionary once) side by side with `lz4_flex`'s
//! own dictionary compression (`compress_into_with_dict`, which hashes the
//! dictionary on every call), on the wire table's realistic Pods with
//! managedFields stripped, encoded as the store encodes them (MessagePack
//! with field names) and compressed against a dictionary of the first 8
//! Pods' encodings, as the store's is. Prints bytes per Pod and the time to
//! compress and to decompress one, the two compressors alternating round by
//! round so a busy machine slows both alike; the ratio of each round is the
//! figure to read.
//!
//! ```sh
//! cargo run --release -p kube-informer-compare --example lz4_dictionary -- [PODS]
//! ```
use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::Pod;
use kube_informer_compare::wire::pods::pod;

// The store's own file, built here as it is in the crate.
#[allow(dead_code)]
#[path = "../../../src/store/lz4_dictionary.rs"]
mod lz4_dictionary;

use lz4_dictionary::{Compressor, Dictionary};

const DICTIONARY_PODS: usize = 8;
const ROUNDS: usize = 15;

fn encoded(i: usize) -> Vec<u8> {
    let mut p: Pod = serde_json::from_value(pod(i, 1, i as u64 + 1)).unwrap();
    p.metadata.managed_fields = None;
    rmp_serde::to_vec_named(&p).unwrap()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000);
    let samples: Vec<u8> = (0..DICTIONARY_PODS).flat_map(encoded).collect();
    let inputs: Vec<Vec<u8>> = (DICTIONARY_PODS..DICTIONARY_PODS + n)
        .map(encoded)
        .collect();
    let raw: usize = inputs.iter().map(Vec::len).sum();
    let dictionary = Dictionary::new(&samples);
    let dict = dictionary.bytes();

    let mut compressor = Compressor::default();
    let ours: Vec<Vec<u8>> = inputs
        .iter()
        .map(|input| {
            let mut out = Vec::new();
            compressor.compress(input, &dictionary, &mut out);
            out
        })
        .collect();
    let flex: Vec<Vec<u8>> = inputs
        .iter()
        .map(|input| lz4_flex::block::compress_with_dict(input, dict))
        .collect();
    for (block, input) in ours.iter().chain(&flex).zip(inputs.iter().cycle()) {
        let back = lz4_flex::block::decompress_with_dict(block, input.len(), dict).unwrap();
        assert_eq!(&back, input, "a block reads back as its input");
    }
    let per_pod = |total: usize| total as f64 / n as f64;
    println!(
        "{n} Pods, {:.0} B each as MessagePack; dictionary {} B",
        per_pod(raw),
        dict.len()
    );
    println!(
        "bytes per Pod: ours {:.1}, lz4_flex with the dictionary {:.1}, lz4_flex alone {:.1}",
        per_pod(ours.iter().map(Vec::len).sum()),
        per_pod(flex.iter().map(Vec::len).sum()),
        per_pod(
            inputs
                .iter()
                .map(|i| lz4_flex::block::compress(i).len())
                .sum()
        ),
    );

    let ns = |elapsed: Duration| elapsed.as_secs_f64() * 1e9 / n as f64;
    let mut out = Vec::new();
    let mut buffer = vec![0; lz4_flex::block::get_maximum_output_size(raw)];
    let mut decompressed = vec![0; inputs.iter().map(Vec::len).max().unwrap_or(0)];
    let (mut t_ours, mut t_flex, mut d_ours, mut d_flex) = (vec![], vec![], vec![], vec![]);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for input in &inputs {
            out.clear();
            compressor.compress(input, &dictionary, &mut out);
            black_box(&out);
        }
        t_ours.push(ns(started.elapsed()));
        let started = Instant::now();
        for input in &inputs {
            let written =
                lz4_flex::block::compress_into_with_dict(input, &mut buffer, dict).unwrap();
            black_box(&buffer[..written]);
        }
        t_flex.push(ns(started.elapsed()));
        for (blocks, times) in [(&ours, &mut d_ours), (&flex, &mut d_flex)] {
            let started = Instant::now();
            for (block, input) in blocks.iter().zip(&inputs) {
                let out = &mut decompressed[..input.len()];
                black_box(lz4_flex::block::decompress_into_with_dict(block, out, dict).unwrap());
            }
            times.push(ns(started.elapsed()));
        }
    }
    let ratios: Vec<f64> = t_flex.iter().zip(&t_ours).map(|(f, o)| f / o).collect();
    println!(
        "compress, ns per Pod (median of {ROUNDS} rounds): ours {:.0}, lz4_flex {:.0}; lz4_flex / ours per round: median {:.2}, from {:.2} to {:.2}",
        median(t_ours),
        median(t_flex),
        median(ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );
    println!(
        "decompress (lz4_flex), ns per Pod: ours' blocks {:.0}, lz4_flex's blocks {:.0}",
        median(d_ours),
        median(d_flex)
    );
}
