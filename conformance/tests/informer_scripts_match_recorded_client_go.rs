//! The named informer scripts through our `Informer` against client-go's
//! recorded answers (I1–I5, L1–L3), so `cargo test` checks them where Go is
//! not installed. `scripts/suites/conformance.sh` compares with a live
//! client-go too; `conformance informer --record` refreshes the recordings.

use kube_informer_conformance::{compare::compare, corpus, informer_runner};

#[test]
fn every_informer_script_matches_recorded_client_go_output() {
    let dir = corpus::default_informer_dir();
    let scripts = corpus::load_texts(&dir).expect("informer scripts load");
    assert!(
        scripts.len() >= 7,
        "only {} informer scripts",
        scripts.len()
    );
    let mut failures = Vec::new();
    for script in &scripts {
        let name = &script.name;
        let Some(recorded) = corpus::load_recording(&dir, name).expect("recording reads") else {
            failures.push(format!("{name}: no recorded client-go output"));
            continue;
        };
        // The recordings come from client-go v0.34, whose relist backoff
        // runs on the harness's fake clock.
        let ours = informer_runner::run(&script.text, informer_runner::relist_backoff("v034"));
        if let Some(d) = compare(&recorded, &ours) {
            failures.push(format!("{name}: {d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_malformed_step_is_a_harness_error_not_a_pass() {
    let script = "{\"script\":\"bad\",\"resyncCheck\":\"1h\",\"handlers\":[]}\n\
                  {\"step\":\"list\",\"items\":[],\"rv\":\"1\"}\n\
                  {\"step\":\"watch\",\"event\":\"TELEPORTED\",\"obj\":{\"name\":\"a\",\"rv\":\"2\"}}\n\
                  not json\n";
    let out = informer_runner::run(script, informer_runner::relist_backoff("v034"));
    assert_eq!(out.len(), 3);
    assert!(out[0].get("harness_error").is_none(), "{}", out[0]);
    assert!(
        out[1]["harness_error"]
            .as_str()
            .unwrap()
            .contains("TELEPORTED")
    );
    assert!(out[2].get("harness_error").is_some());
}

#[test]
fn a_resync_step_without_a_check_period_is_a_harness_error() {
    let script = "{\"script\":\"s\",\"resyncCheck\":\"0s\",\"handlers\":[{\"name\":\"h\",\"resync\":\"1h\"}]}\n\
                  {\"step\":\"list\",\"items\":[],\"rv\":\"1\"}\n\
                  {\"step\":\"resync\"}\n";
    let out = informer_runner::run(script, informer_runner::relist_backoff("v034"));
    assert!(
        out[1]["harness_error"]
            .as_str()
            .unwrap()
            .contains("no resync timer")
    );
}
