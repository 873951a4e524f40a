//! The random generator must keep reaching every edge case the comparison
//! relies on; a change to the generator that loses one fails here.

use kube_informer_conformance::{
    coverage::{Coverage, EDGE_CASES},
    generate, rust_runner,
};

#[test]
fn two_thousand_random_traces_reach_every_edge_case() {
    let mut coverage = Coverage::new();
    for index in 0..2000 {
        rust_runner::run_with_coverage(&generate::trace(42, index), &mut coverage);
    }
    let missing: Vec<_> = EDGE_CASES
        .iter()
        .filter(|case| !coverage.contains_key(*case))
        .collect();
    assert!(
        missing.is_empty(),
        "never reached: {missing:?}\nreached: {coverage:?}"
    );
}
