//! Checks of the repository itself: layering, rule ids, MIGRATING.md's pairs, auto traits,
//! and the fake API server's writes against the recorded conformance scripts.
//!
//! One test binary: each module is the `tests/` file of its name, so a test's
//! name starts with its file's (`cargo test --test checks -- <file>::`).

mod write_conformance;

mod architecture;
#[cfg(all(feature = "controller", feature = "shard"))]
mod auto_traits;
#[cfg(all(feature = "controller", feature = "kube-runtime"))]
mod migrating;
mod rule_ids;
mod write_conformance_fake;
