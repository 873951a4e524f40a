//! Differential conformance between kube-informer and client-go.
//!
//! A trace (see `conformance/TRACE_FORMAT.md`) is a list of DeltaFifo
//! operations. [`rust_runner`] runs it through our
//! [`DeltaFifo`](kube_informer::fifo::DeltaFifo), [`go_runner`] through
//! client-go's DeltaFIFO (a Go program under `conformance/go/`), and
//! [`compare`] reports the first line where the two observers disagree.
//! [`generate`] makes seeded random traces; [`corpus`] loads the named
//! edge-case traces under `conformance/traces/`.
//!
//! At the informer level, [`informer_runner`] runs informer scripts
//! ([`informer_steps`]) through our [`Informer`](kube_informer::Informer)
//! and prints each subscription's notifications ([`informer_notes`]) in the
//! format of the Go `informer-trace` harness; [`informer_script`] makes
//! seeded random scripts.
//!
//! For the work queue, [`workqueue_runner`] runs [`workqueue_trace`]s through
//! our [`WorkQueue`](kube_informer::queue::WorkQueue) and the Go
//! `workqueue-trace` harness through client-go's `TypedRateLimitingQueue`;
//! [`workqueue_generate`] makes seeded random ones.
#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]
#![forbid(unsafe_code)]

// The test binaries' switch to the compact cache (CM10), shared by path.
#[path = "../../tests/cache_mode_common/mod.rs"]
mod cache_mode_common;
pub mod compare;
pub mod corpus;
pub mod coverage;
pub mod generate;
pub mod go_runner;
pub mod informer_notes;
pub mod informer_runner;
pub mod informer_script;
pub mod informer_steps;
pub mod rust_runner;
pub mod trace;
pub mod workqueue_generate;
pub mod workqueue_runner;
pub mod workqueue_trace;
