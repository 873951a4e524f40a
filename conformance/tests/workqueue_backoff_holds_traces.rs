//! W13 traces (`workqueue-traces/backoff-holds/`): our `WorkQueue` with
//! `backoff_holds(true)` gives the written expectation (`expected/`), the
//! same trace with the option off gives client-go's recorded output
//! (`client-go/expected/`), and the two differ, so each trace shows what
//! the option changes. Checked without Go; `conformance workqueue` also
//! checks the recordings against a live client-go.

use std::path::Path;

use kube_informer_conformance::{
    compare::compare, corpus, workqueue_runner, workqueue_trace::WqTrace,
};

#[test]
fn w13_traces_give_the_written_expectation_and_differ_from_client_go() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workqueue-traces/backoff-holds");
    let files = corpus::load_texts(&dir).unwrap();
    assert!(files.len() >= 3, "the W13 traces are missing");
    for file in files {
        let mut trace = WqTrace::parse(&file.text).unwrap();
        assert!(
            trace.header.backoff_holds,
            "{}: runs with the option on",
            file.name
        );
        let ours = workqueue_runner::run(&trace);
        let expected = corpus::load_recording(&dir, &file.name)
            .unwrap()
            .unwrap_or_else(|| panic!("{} has no written expectation", file.name));
        if let Some(d) = compare(&expected, &ours) {
            panic!("{}: {}", file.name, d.labelled("expected", "kube-informer"));
        }
        let client_go = corpus::load_recording(&dir.join("client-go"), &file.name)
            .unwrap()
            .unwrap_or_else(|| panic!("{} has no client-go recording", file.name));
        assert!(
            compare(&client_go, &ours).is_some(),
            "{}: shows no difference from client-go",
            file.name
        );
        trace.header.backoff_holds = false;
        let default = workqueue_runner::run(&trace);
        if let Some(d) = compare(&client_go, &default) {
            panic!("{} with the option off: {d}", file.name);
        }
    }
}
