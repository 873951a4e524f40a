//! The decode-only floor of CPU per watch event: the wire table's Pods as
//! `MODIFIED` watch lines, bytes to typed `Pod`s and dropped, on one thread,
//! with nothing else running in the process. No informer can spend less per
//! event than this without decoding less.
//!
//! ```sh
//! cargo build --release -p kube-informer-compare --example decode_floor
//! target/release/examples/decode_floor [SECONDS]   # default 3 per mode
//! ```
//!
//! Modes: `source` is kube-informer's decoder as its source runs it
//! (envelope, scan, R7, typed decode with exact capacities); `plain` is one
//! `serde_json::from_str` of the line into a typed event, what a client with
//! no checks of its own does (kube-runtime's watcher decodes this way). CPU
//! is the process's user + system time (`getrusage`), so the figure is
//! comparable with the runners' CPU per event. Prints one JSON line per mode.
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube_informer::unstable::decode;
use kube_informer_compare::wire::{drive::cpu_times, pods::pod};

/// Distinct Pods, so caches see a realistic spread of sizes and strings.
const LINES: usize = 2_000;

fn main() {
    let seconds: u64 = std::env::args()
        .nth(1)
        .map_or(3, |s| s.parse().expect("SECONDS is a whole number"));
    let lines: Vec<String> = (0..LINES)
        // Type first, as API servers write a watch line (and the wire
        // server does); `json!` would sort the keys.
        .map(|i| {
            format!(
                r#"{{"type":"MODIFIED","object":{}}}"#,
                pod(i, 1, 10 + i as u64)
            )
        })
        .collect();
    let bytes = lines.iter().map(String::len).sum::<usize>() / LINES;
    for mode in ["source", "plain"] {
        // One warm-up pass: first-touch page faults are not decoding.
        decode_all(mode, &lines);
        let (user0, system0) = cpu_times();
        let start = Instant::now();
        let mut events = 0usize;
        while start.elapsed() < Duration::from_secs(seconds) {
            events += decode_all(mode, &lines);
        }
        let (user1, system1) = cpu_times();
        let cpu = (user1 - user0) + (system1 - system0);
        println!(
            "{}",
            serde_json::json!({
                "mode": mode,
                "events": events,
                "line_bytes": bytes,
                "cpu_us_per_event": cpu * 1e6 / events as f64,
                "system_us_per_event": (system1 - system0) * 1e6 / events as f64,
            })
        );
    }
}

/// Decodes every line once in `mode` and drops the objects; the count.
fn decode_all(mode: &str, lines: &[String]) -> usize {
    #[derive(serde::Deserialize)]
    struct Line {
        object: Pod,
    }
    let mut decoded = 0;
    for line in lines {
        let ok = match mode {
            "source" => decode::watch_line::<Pod>(line.as_bytes(), Some("PodList"))
                .expect("the wire Pods decode")
                .is_some(),
            _ => {
                let line: Line = serde_json::from_str(line).expect("the wire Pods decode");
                line.object.metadata.name.is_some()
            }
        };
        decoded += usize::from(ok);
    }
    decoded
}
