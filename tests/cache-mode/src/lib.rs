//! [`CacheModeExt`]: one test build that runs in both of an informer's
//! store modes, chosen by the environment of the test run.
//!
//! # Rules
//!
//! - **CM10 The switch.** An informer built with
//!   [`CacheModeExt::cache_from_env`] keeps its objects encoded (the compact
//!   cache, [`InformerBuilder::compact_cache`]) exactly when [`CACHE_ENV`]
//!   is `compact`, and decoded otherwise. The variable is read once per
//!   process.
//!
//! The switch lives in this test-only crate, not in kube-informer: a
//! library's behaviour is its callers' choice, never the environment's. A test suite that wants
//! both modes from one build calls `.cache_from_env()` on its builders and
//! runs again with `KUBE_INFORMER_CACHE=compact`.

use std::sync::OnceLock;

use kube::Resource;
use kube_informer::{InformerBuilder, store::CompactCache, unstable::informer::Origin};
use serde::{Serialize, de::DeserializeOwned};

/// The environment variable [`CacheModeExt::cache_from_env`] reads: `compact`
/// chooses the compact cache, anything else (or nothing) the default store.
pub const CACHE_ENV: &str = "KUBE_INFORMER_CACHE";

/// Whether [`CACHE_ENV`] asks for the compact cache; read once per process,
/// so every informer of a test run is in the same mode.
pub fn compact_from_env() -> bool {
    static COMPACT: OnceLock<bool> = OnceLock::new();
    *COMPACT.get_or_init(|| std::env::var(CACHE_ENV).is_ok_and(|mode| mode == "compact"))
}

/// The store mode of an informer under test, chosen by [`CACHE_ENV`] (CM10).
///
/// # Examples
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::{Informer, source::Event};
/// use kube_informer_cache_mode::{CacheModeExt, compact_from_env};
///
/// let events = futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>();
/// let informer = Informer::builder_from_stream(events).cache_from_env().build();
/// assert_eq!(informer.store().compact_stats().is_some(), compact_from_env());
/// ```
pub trait CacheModeExt: Sized {
    /// When [`CACHE_ENV`] is `compact`, chooses
    /// [`compact_cache`](InformerBuilder::compact_cache) with its defaults
    /// (a `compact_cache` call after this one sets other settings);
    /// otherwise changes nothing. It is a method the tests call, not a default every
    /// builder reads, because the compact cache needs
    /// `K: Serialize + PartialEq`, which informer builders do not ask for
    /// (projections, for one, only deserialize).
    #[must_use]
    fn cache_from_env(self) -> Self;
}

impl<K, S> CacheModeExt for InformerBuilder<K, S>
where
    K: Resource + Serialize + DeserializeOwned + PartialEq + Send + Sync + 'static,
    S: Origin,
{
    fn cache_from_env(self) -> Self {
        if compact_from_env() {
            self.compact_cache(CompactCache::default())
        } else {
            self
        }
    }
}
