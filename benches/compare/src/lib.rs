//! Side-by-side benchmark of informer implementations on one workload.
//!
//! `run.sh` in this directory generates the workload, runs every runner one
//! at a time in release mode and keeps the results in `results/`;
//! `headline.py` writes BENCHMARKS.md's table from one wire pass, and
//! NOTES.md keeps what the other runs found.
//! This crate holds the workload generator and the Rust runners; client-go's
//! runner is the Go module in `go/`.
#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]

#[cfg(feature = "ours")]
pub mod apiserver;
pub mod drive;
pub mod flags;
pub mod generate;
pub mod live;
pub mod memory;
pub mod progress;
pub mod report;
pub mod runners;
pub mod wire;
pub mod workload;
