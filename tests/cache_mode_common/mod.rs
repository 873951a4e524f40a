//! `CacheModeExt`: one test build that runs in both of an informer's store
//! modes and both of its wire encodings, chosen by the environment of the
//! test run. A module of each test
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
//! - **CM11 The encoding switch.** The same call also asks for protobuf
//!   (`InformerBuilder::encoding(Encoding::Protobuf)`) exactly when
//!   `ENCODING_ENV` is `protobuf`, and JSON otherwise: the fake API server
//!   then answers the lists and watches of built-in kinds in protobuf (and
//!   of custom resources in JSON, as kube-apiserver does). Read once per
//!   process too.
//!
//! The switch lives in test code, not in kube-informer: a library's
//! behaviour is its callers' choice, never the environment's. A test suite
//! that wants both modes from one build calls `cache_from_env` on its
//! builders and runs again with `KUBE_INFORMER_CACHE=compact`.
#![allow(dead_code)]

use std::sync::OnceLock;

use kube::Resource;
use kube_informer::{
    InformerBuilder,
    source::Encoding,
    unstable::informer::{FromApi, FromStream, Origin},
};
use serde::{Serialize, de::DeserializeOwned};

/// The environment variable `CacheModeExt::cache_from_env` reads: `compact`
/// chooses the compact cache, anything else (or nothing) the default store.
pub const CACHE_ENV: &str = "KUBE_INFORMER_CACHE";

/// The environment variable that makes `CacheModeExt::cache_from_env` ask
/// for protobuf: `protobuf` does, anything else (or nothing) keeps JSON.
pub const ENCODING_ENV: &str = "KUBE_INFORMER_ENCODING";

/// Whether this run's informers ask for protobuf (CM11).
pub fn protobuf_from_env() -> bool {
    static PROTOBUF: OnceLock<bool> = OnceLock::new();
    *PROTOBUF.get_or_init(|| std::env::var(ENCODING_ENV).is_ok_and(|mode| mode == "protobuf"))
}

/// Whether this run keeps objects compact: `CACHE_ENV` asks for it and the
/// build has the `compact` feature. Read once per process, so every
/// informer of a test run is in the same mode.
pub fn compact_from_env() -> bool {
    static COMPACT: OnceLock<bool> = OnceLock::new();
    *COMPACT.get_or_init(|| {
        cfg!(feature = "compact") && std::env::var(CACHE_ENV).is_ok_and(|mode| mode == "compact")
    })
}

/// The encoding half of `cache_from_env`: only a builder that lists and
/// watches an API has an encoding; one fed by a stream keeps what it is fed.
pub trait EncodingFromEnv: Sized {
    /// `Encoding::Protobuf` when `protobuf_from_env()`, else unchanged.
    #[must_use]
    fn encoding_from_env(self) -> Self;
}

impl<K: Resource + Send + Sync + 'static> EncodingFromEnv for InformerBuilder<K, FromApi> {
    fn encoding_from_env(self) -> Self {
        if protobuf_from_env() {
            self.encoding(Encoding::Protobuf)
        } else {
            self
        }
    }
}

impl<K: Resource + Send + Sync + 'static> EncodingFromEnv for InformerBuilder<K, FromStream> {
    fn encoding_from_env(self) -> Self {
        self
    }
}

/// The store mode and encoding of an informer under test, chosen by
/// `CACHE_ENV` (CM10) and `ENCODING_ENV` (CM11).
pub trait CacheModeExt: Sized {
    /// When `compact_from_env()`, chooses `compact_cache` with its defaults
    /// (a `compact_cache` call after this one sets other settings); when
    /// `protobuf_from_env()`, asks for protobuf (an `encoding` call after
    /// this one overrides it); otherwise changes nothing. The bounds are the compact cache's
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
    Self: EncodingFromEnv,
{
    fn cache_from_env(self) -> Self {
        let builder = self.encoding_from_env();
        #[cfg(feature = "compact")]
        if compact_from_env() {
            return builder.compact_cache(kube_informer::store::CompactCache::default());
        }
        builder
    }
}
