//! The informer, its dispatch to subscribers, the factory, the extension traits and the
//! snapshot metrics.
//!
//! One test binary: each module is the `tests/` file of its name, so a test's
//! name starts with its file's (`cargo test --test informer -- <file>::`).

mod cache_mode_common;
mod informer_common;
mod store_common;

#[cfg(feature = "compact")]
mod cache_mode;
mod dispatch_batch;
mod dispatch_coalesce;
mod dispatch_prop;
mod dispatch_rules;
mod ext;
mod ext_predicates;
mod factory_lifetimes;
mod factory_options;
mod informer_auto_traits;
mod informer_coalesce;
#[cfg(feature = "compact")]
mod informer_compact;
mod informer_decode_options;
mod informer_errors;
mod informer_failures;
mod informer_fake_server;
mod informer_listeners;
mod informer_model;
mod informer_polls;
mod informer_protobuf_fake;
mod informer_reclaim;
mod informer_rules;
mod informer_stop_batch;
mod informer_stop_prop;
mod informer_sync_wait;
mod library_store;
mod metrics_snapshot;
