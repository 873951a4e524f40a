//! [`InformerBuilder::compact_cache`] and the testing aid that sets it from
//! the environment.

use std::sync::OnceLock;

use kube::Resource;
use serde::{Serialize, de::DeserializeOwned};

use super::{InformerBuilder, Origin};
use crate::store::{Codec, CompactCache};

/// The environment variable [`InformerBuilder::cache_from_env`] reads.
pub const CACHE_ENV: &str = "KUBE_INFORMER_CACHE";

/// Whether [`CACHE_ENV`] asks for the compact cache; read once per process.
fn compact_from_env() -> bool {
    static COMPACT: OnceLock<bool> = OnceLock::new();
    *COMPACT.get_or_init(|| std::env::var(CACHE_ENV).is_ok_and(|mode| mode == "compact"))
}

impl<K, S> InformerBuilder<K, S>
where
    K: Resource + Send + Sync + 'static,
    S: Origin,
{
    /// Keeps the informer's objects encoded in its store and decodes them
    /// when read, with `cache`'s bounded set of decoded objects for the
    /// keys read often (the store's rules CM1–CM9, [`store::compact`](crate::store::compact)).
    /// A cached object takes a small fraction of its decoded memory;
    /// a read decodes unless the key is hot. Each write encodes the new
    /// version and decodes it back to check it, and each update decodes
    /// the version it replaces for the `Updated` notification, unless no
    /// subscriber is live (CM8); BENCHMARKS.md has the figures. The `Store`
    /// API and notifications are unchanged, except that objects read from
    /// the store are equal to, not the same allocation as, those
    /// notifications carried (CM5).
    ///
    /// Every object reads back equal to the one written: one whose
    /// encoding would decode to another object (a `Time` with sub-second
    /// digits, which k8s-openapi writes in whole seconds) is kept decoded
    /// and counted in [`CompactStats::lossy_encodings`](crate::store::CompactStats::lossy_encodings)
    /// (CM9). The check compares by `K`'s `PartialEq`: k8s-openapi's types
    /// and `DynamicObject` have it, and a custom resource derives it with
    /// `#[kube(derive = "PartialEq")]` and `#[derive(PartialEq)]` on its
    /// spec and status.
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, source::Event, store::CompactCache};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// let events = futures::stream::iter([Ok::<_, std::io::Error>(Event::Added(cm.clone()))]);
    /// let informer = Informer::builder_from_stream(events)
    ///     .compact_cache(CompactCache::default().hot_objects(64))
    ///     .build();
    /// informer.run().await.unwrap();
    /// assert_eq!(*informer.store().get_by(None, "a").unwrap(), cm);
    /// assert_eq!(informer.store().compact_stats().unwrap().encoded_objects, 1);
    /// # }
    /// ```
    pub fn compact_cache(mut self, cache: CompactCache) -> Self
    where
        K: Serialize + DeserializeOwned + PartialEq,
    {
        self.common.cache = Some((Codec::msgpack(), cache));
        self
    }

    /// A testing aid: when the environment variable
    /// `KUBE_INFORMER_CACHE` is `compact` (read once per process), chooses
    /// [`compact_cache`](Self::compact_cache) with its defaults unless the
    /// builder chose it already; otherwise changes nothing. It lets one
    /// test suite run in both modes without being built twice. It is a
    /// method the suites call, not a default every builder reads, because
    /// the compact cache needs `K: Serialize + PartialEq`, which the
    /// constructors do not ask for (projections, for one, only
    /// deserialize).
    ///
    /// # Examples
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube_informer::{Informer, source::Event};
    ///
    /// let events = futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>();
    /// let informer = Informer::builder_from_stream(events).cache_from_env().build();
    /// let compact = std::env::var("KUBE_INFORMER_CACHE").is_ok_and(|m| m == "compact");
    /// assert_eq!(informer.store().compact_stats().is_some(), compact);
    /// ```
    pub fn cache_from_env(self) -> Self
    where
        K: Serialize + DeserializeOwned + PartialEq,
    {
        if self.common.cache.is_none() && compact_from_env() {
            self.compact_cache(CompactCache::default())
        } else {
            self
        }
    }

    /// The compact cache's settings, if chosen: what a factory compares.
    pub(super) fn cache_settings(&self) -> Option<CompactCache> {
        self.common.cache.as_ref().map(|(_, cache)| *cache)
    }
}
