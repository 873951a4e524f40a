//! `CacheModeExt`: one test build that runs in both of an informer's store
//! modes, chosen by the environment of the test run. A module of each test
//! binary that needs it (and of the conformance harness, by path), not a
//! crate: a dev-dependency on kube-informer with `compact` would turn the
//! feature on in every test build, and no feature set could be tested
//! without it.
//!
//! # Rules
//!
//! - **CM10 The switch.** An informer built with
//!   `CacheModeExt::cache_from_env` keeps its objects encoded (the compact
//!   cache, `InformerBuilder::compact_cache`) exactly when `CACHE_ENV` is
//!   `compact` and the build has the `compact` feature, and decoded
//!   otherwise. The variable is read once per process.
//!
//! The switch lives in test code, not in kube-informer: a library's
//! behaviour is its callers' choice, never the environment's. A test suite
//! that wants both modes from one build calls `cache_from_env` on its
//! builders and runs again with `KUBE_INFORMER_CACHE=compact`.
#![allow(dead_code)]

use std::sync::OnceLock;

use kube::Resource;
use kube_informer::{InformerBuilder, unstable::informer::Origin};
use serde::{Serialize, de::DeserializeOwned};

/// The environment variable `CacheModeExt::cache_from_env` reads: `compact`
/// chooses the compact cache, anything else (or nothing) the default store.
pub const CACHE_ENV: &str = "KUBE_INFORMER_CACHE";

/// Whether this run keeps objects compact: `CACHE_ENV` asks for it and the
/// build has the `compact` feature. Read once per process, so every
/// informer of a test run is in the same mode.
pub fn compact_from_env() -> bool {
    static COMPACT: OnceLock<bool> = OnceLock::new();
    *COMPACT.get_or_init(|| {
        cfg!(feature = "compact") && std::env::var(CACHE_ENV).is_ok_and(|mode| mode == "compact")
    })
}

/// The store mode of an informer under test, chosen by `CACHE_ENV` (CM10).
pub trait CacheModeExt: Sized {
    /// When `compact_from_env()`, chooses `compact_cache` with its defaults
    /// (a `compact_cache` call after this one sets other settings);
    /// otherwise changes nothing. The bounds are the compact cache's
    /// (`K: Serialize + PartialEq`, which informer builders do not ask for)
    /// in every build, so a test compiles the same with the feature or
    /// without it.
    #[must_use]
    fn cache_from_env(self) -> Self;
}

impl<K, S> CacheModeExt for InformerBuilder<K, S>
where
    K: Resource + Serialize + DeserializeOwned + PartialEq + Send + Sync + 'static,
    S: Origin,
{
    fn cache_from_env(self) -> Self {
        #[cfg(feature = "compact")]
        if compact_from_env() {
            return self.compact_cache(kube_informer::store::CompactCache::default());
        }
        self
    }
}
