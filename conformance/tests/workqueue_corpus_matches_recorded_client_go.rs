//! Every named work queue trace under `workqueue-traces/` gives, through our
//! `WorkQueue`, exactly the output recorded from client-go's
//! `TypedRateLimitingQueue` (`workqueue-traces/expected/`), so `cargo test`
//! checks the W rules against client-go on machines without Go.

use std::path::Path;

use kube_informer_conformance::{
    compare::compare, corpus, workqueue_runner, workqueue_trace::WqTrace,
};

#[test]
fn workqueue_corpus_matches_recorded_client_go() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workqueue-traces");
    let files = corpus::load_texts(&dir).unwrap();
    assert!(files.len() >= 8, "the named corpus is missing");
    for file in files {
        let trace = WqTrace::parse(&file.text).unwrap();
        let recorded = corpus::load_recording(&dir, &file.name)
            .unwrap()
            .unwrap_or_else(|| panic!("{} has no recording", file.name));
        let ours = workqueue_runner::run(&trace);
        if let Some(d) = compare(&recorded, &ours) {
            panic!("{}: {d}", file.name);
        }
    }
}
