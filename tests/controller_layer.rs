//! The operator layer: work queue, runner, `Controller`, finalizer helper,
//! read-your-own-writes, sharding, leader election and their metrics, and the
//! programs built on them (the operator example, the guide's controller, the dashboard).
//!
//! One test binary: each module is the `tests/` file of its name, so a test's
//! name starts with its file's (`cargo test --test controller_layer -- <file>::`).

mod cache_mode_common;
#[cfg(feature = "kube-runtime")]
mod informer_common;
/// The operator example's modules (`examples/operator/`), compiled in once
/// for the files that run them: `dashboard`, `metrics_scrape` and
/// `operator_example`.
#[allow(dead_code)] // each file calls the parts it needs
#[path = "../examples/operator"]
mod operator {
    #[cfg(all(feature = "controller", feature = "shard"))]
    pub mod controller;
    #[cfg(feature = "prometheus")]
    pub mod metrics_http;
    #[cfg(all(feature = "controller", feature = "shard"))]
    pub mod mirror;
    #[cfg(all(feature = "prometheus", feature = "controller", feature = "shard"))]
    pub mod sharding;
}
#[cfg(feature = "prometheus")]
mod scrape_common;
#[cfg(feature = "leader-election")]
mod shard_leader_common;

#[cfg(all(feature = "controller", feature = "shard"))]
mod controller;
#[cfg(feature = "kube-runtime")]
mod controller_feed;
#[cfg(all(feature = "prometheus", feature = "controller", feature = "shard"))]
mod dashboard;
#[cfg(feature = "controller")]
mod finalizer_rules;
#[cfg(feature = "controller")]
mod guide_controller;
#[cfg(all(feature = "controller", feature = "prometheus"))]
mod metrics_controller;
#[cfg(feature = "prometheus")]
mod metrics_scrape;
#[cfg(feature = "shard")]
mod metrics_shard;
#[cfg(all(feature = "controller", feature = "shard"))]
mod operator_example;
#[cfg(feature = "controller")]
mod own_writes;
mod queue_backoff_holds;
mod queue_priorities;
mod queue_priorities_prop;
mod queue_prop;
mod queue_rules;
mod runner_closing;
#[cfg(feature = "shard")]
mod runner_gate;
mod runner_owners;
mod runner_rules;
#[cfg(feature = "shard")]
mod shard_assign;
#[cfg(feature = "shard")]
mod shard_handover;
#[cfg(feature = "leader-election")]
mod shard_leader;
#[cfg(feature = "leader-election")]
mod shard_leader_cut;
#[cfg(feature = "shard")]
mod shard_member;
#[cfg(feature = "shard")]
mod shard_partition;
#[cfg(feature = "shard")]
mod shard_stream;
