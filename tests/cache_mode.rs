//! What the compact pass of `scripts/test-all.sh` rests on: it runs the
//! test targets that build informers with the test module
//! `cache_mode_common`'s `CacheModeExt::cache_from_env` again with `KUBE_INFORMER_CACHE=compact`,
//! and that tests the compact cache only if the variable reaches the
//! builder. In that pass an informer built with `cache_from_env` keeps its
//! objects encoded; in the other one it keeps them decoded.

use crate::cache_mode_common::{CACHE_ENV, CacheModeExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{Informer, source::Event};

// CM10
#[test]
fn cm10_cache_from_env_keeps_objects_encoded_exactly_when_the_variable_says_compact() {
    let compact = std::env::var(CACHE_ENV).is_ok_and(|mode| mode == "compact");
    let events = futures::stream::empty::<Result<Event<ConfigMap>, std::io::Error>>();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    assert_eq!(informer.store().compact_stats().is_some(), compact);
}
