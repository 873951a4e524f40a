//! A list answer's envelope: its kind, metadata and where each item lies,
//! read in one pass that leaves the items as text.

use std::{borrow::Cow, ops::Range};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::{DecodeTarget, Error};

/// A list answer whose items stay unparsed text borrowed from the page, so
/// that each is decoded once, straight into its type.
#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    metadata: RawListMeta,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawListMeta {
    resource_version: Option<String>,
    #[serde(rename = "continue")]
    continue_token: Option<String>,
}

/// One list answer read as far as its metadata: what is needed to ask for
/// the next page, with the items left as text.
#[derive(Debug)]
pub(super) struct Envelope {
    pub(super) kind: Option<String>,
    pub(super) resource_version: Option<String>,
    pub(super) continue_token: Option<String>,
    /// Where each item lies in the answer's text.
    pub(super) items: Vec<Range<usize>>,
}

/// Reads a list answer's kind, metadata and item boundaries; one pass that
/// also checks the whole answer is JSON.
pub(super) fn read_envelope(text: &str) -> Result<Envelope, Error> {
    let raw: RawList<'_> = serde_json::from_str(text).map_err(|source| Error::Decode {
        what: DecodeTarget::List,
        source,
    })?;
    let start = text.as_ptr() as usize;
    let items = raw
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|item| {
            // Each item is borrowed from `text`, so its address is an
            // offset into it.
            let offset = item.get().as_ptr() as usize - start;
            offset..offset + item.get().len()
        })
        .collect();
    Ok(Envelope {
        kind: raw.kind.map(Cow::into_owned),
        resource_version: raw.metadata.resource_version,
        continue_token: raw.metadata.continue_token,
        items,
    })
}
