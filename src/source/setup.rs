//! [`SourceSetup`]: what an informer hands its source besides the user's
//! config.

use std::sync::Arc;

/// What an informer hands the source it runs, besides the user's
/// [`Config`](super::Config): where the source counts what it does, and how it decodes.
/// Kept out of `Config` so that a config stays plain data, which clones
/// and compares as its settings; a source opened by [`watch_source`](super::watch_source) gets
/// the defaults, and counts for nobody.
#[derive(Debug, Default)]
pub(crate) struct SourceSetup {
    pub(crate) metrics: Arc<crate::metrics::SourceRecorder>,
    /// Leave `metadata.managedFields` out while decoding (set by
    /// `InformerBuilder::strip_managed_fields`). The tuned decoder does;
    /// with [`DecodeOptions::plain`] the informer clears them after.
    pub(crate) skip_managed_fields: bool,
    /// Which decode path, on how many threads.
    pub(crate) decode: DecodeOptions,
}

/// How a source decodes, as its informer asked: the decode options of
/// `InformerBuilder` (`decode_threads`, `plain_decode`, `encoding`). The default is
/// the tuned decoder, big batches in pieces on the runtime's workers.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DecodeOptions {
    /// At most this many threads decode a batch at once; `None`: one per
    /// core, up to four.
    pub(crate) threads: Option<usize>,
    /// Plain `serde_json::from_str` after the R7 probe, instead of the
    /// tuned decoder (see `decode`'s module docs).
    pub(crate) plain: bool,
    /// What to ask the server for (`InformerBuilder::encoding`).
    pub(crate) encoding: super::Encoding,
}
