//! Decodes the same 200 realistic Pod watch lines `ROUNDS` times, through
//! the source's decoder (`source`: envelope, scan, R7, typed decode with
//! exact capacities) or a plain typed decode of the line (`plain`), so an
//! instruction count can compare them where wall time cannot (this VM has
//! no hardware counters and shares its cores):
//!
//! ```sh
//! cargo build --release -p kube-informer-compare --example decode_icount
//! for r in 0 5; do valgrind --tool=callgrind target/release/examples/decode_icount source $r; done
//! ```
//!
//! (instructions at 5 rounds − at 0 rounds) / 1,000 is the cost per line.
use k8s_openapi::api::core::v1::Pod;
use kube_informer::unstable::decode as decode_bench;
fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap();
    let rounds: usize = args.next().unwrap().parse().unwrap();
    let lines: Vec<String> = (0..200)
        .map(|i| serde_json::json!({"type": "MODIFIED", "object": kube_informer_compare::wire::pods::pod(i, 1, 10 + i as u64)}).to_string())
        .collect();
    let mut n = 0usize;
    for _ in 0..rounds {
        for line in &lines {
            match mode.as_str() {
                "source" => {
                    n += decode_bench::watch_line::<Pod>(line.as_bytes(), Some("PodList"))
                        .unwrap()
                        .is_some() as usize
                }
                _ => {
                    #[derive(serde::Deserialize)]
                    struct E {
                        object: Pod,
                    }
                    let e: E = serde_json::from_str(line).unwrap();
                    n += e.object.metadata.name.is_some() as usize;
                }
            }
        }
    }
    println!("{n}");
}
