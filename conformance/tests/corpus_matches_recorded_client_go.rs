//! The named corpus against client-go's recorded output (F1–F11), so the
//! edge cases are checked by `cargo test` even where Go is not installed.
//! `scripts/suites/conformance.sh` re-checks each recording against a live
//! client-go; `conformance fifo --record` refreshes them.

use kube_informer_conformance::{compare::compare, corpus, rust_runner};

#[test]
fn every_corpus_trace_matches_recorded_client_go_output() {
    let dir = corpus::default_dir();
    let traces = corpus::load(&dir).expect("corpus loads");
    assert!(
        traces.len() >= 20,
        "corpus has only {} traces",
        traces.len()
    );
    let mut failures = Vec::new();
    for trace in &traces {
        let name = &trace.header.trace;
        let Some(recorded) = corpus::load_recording(&dir, name).expect("recording reads") else {
            failures.push(format!("{name}: no recorded client-go output"));
            continue;
        };
        if let Some(d) = compare(&recorded, &rust_runner::run(trace)) {
            failures.push(format!("{name}: {d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
