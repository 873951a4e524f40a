//! The seeded simulations: CPU-heavy, so kept apart from the tests that wait in real time.
//!
//! One test binary: each module is the `tests/` file of its name, so a test's
//! name starts with its file's (`cargo test --test simulations -- <file>::`).

mod cache_mode_common;
#[cfg(feature = "controller")]
mod simulation_common;

#[cfg(feature = "controller")]
mod simulation_configmapgen;
#[cfg(feature = "controller")]
mod simulation_finalizer;
mod simulation_informer;
mod simulation_kube_runtime;
#[cfg(all(feature = "controller", feature = "shard"))]
mod simulation_mirror;
#[cfg(all(feature = "deterministic", feature = "controller"))]
mod simulation_repeat;
