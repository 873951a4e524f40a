//! The end-to-end tests against a real kube-apiserver (`scripts/suites/e2e.sh` runs them
//! one module at a time); without a cluster each skips.
//!
//! One test binary: each module is the `tests/` file of its name, so a test's
//! name starts with its file's (`cargo test --test e2e -- <file>::`).

mod cache_mode_common;
mod e2e_support;
mod write_conformance;

#[cfg(feature = "controller")]
mod e2e_configmapgen;
#[cfg(feature = "controller")]
mod e2e_controller_side_by_side;
#[cfg(feature = "controller")]
mod e2e_finalizer;
mod e2e_informer;
mod e2e_informer_faults;
#[cfg(all(feature = "controller", feature = "shard"))]
mod e2e_operator;
mod e2e_protobuf;
mod e2e_shard;
mod e2e_smoke;
mod e2e_write_conformance;
