//! The builder's choice of store: [`InformerBuilder::compact_cache`] (with
//! the `compact` feature), or the default store.

use kube::Resource;
#[cfg(feature = "compact")]
use serde::{Serialize, de::DeserializeOwned};

use super::{InformerBuilder, Origin};
#[cfg(feature = "compact")]
use crate::store::Codec;
use crate::store::CompactCache;

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
    #[cfg(feature = "compact")]
    #[cfg_attr(docsrs, doc(cfg(feature = "compact")))]
    pub fn compact_cache(mut self, cache: CompactCache) -> Self
    where
        K: Serialize + DeserializeOwned + PartialEq,
    {
        self.common.cache = Some((Codec::msgpack(), cache));
        self
    }

    /// The compact cache's settings, if chosen: what a factory compares.
    pub(super) fn cache_settings(&self) -> Option<CompactCache> {
        self.common.cache.as_ref().map(|(_, cache)| *cache)
    }
}
