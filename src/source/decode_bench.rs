//! The source's decoding steps one by one, for `benches/decode.rs` and the
//! decode floor (re-exported as [`unstable::decode`](crate::unstable::decode)).

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::{
    decode::Decoder,
    error::{DecodeTarget, Error},
    lines::{Framing, Read, WatchBody},
    list::decode_items,
    watch::{WatchLine, parse_frame, parse_line},
};
use crate::protobuf::KindSchema;

/// Decodes a list answer's items as the source does, on `threads` threads
/// (`None`: the source's own choice for this page).
pub fn list_page<K: DeserializeOwned + Send>(
    text: &str,
    threads: Option<usize>,
) -> Vec<Result<K, Error>> {
    decode_items(text, &mut Decoder::new(), threads).unwrap_or_else(|error| vec![Err(error)])
}

fn decoder(list_kind: Option<&str>) -> Decoder {
    let mut decoder = Decoder::new();
    decoder.learn_list_kind(list_kind);
    decoder
}

/// Checks and decodes one object as the source does, against the item kind
/// of `list_kind` (e.g. `PodList`).
pub fn object<K: DeserializeOwned>(object: &RawValue, list_kind: Option<&str>) -> Result<K, Error> {
    decoder(list_kind).object(object, DecodeTarget::ListItem)
}

/// The R7 probe alone (kind and name), without the typed decode.
pub fn probe(object: &RawValue, kind: Option<&str>) -> Result<(), Error> {
    super::decode::probe_only(object.get(), kind)
}

/// The pass over an object's text that comes before its typed decode (the
/// length of every array, and whether R7 plainly holds), without the
/// decode; how many arrays it counted.
pub fn scan(object: &RawValue, kind: Option<&str>) -> usize {
    super::decode::scan_only(object.get(), kind)
}

/// Decodes one watch line as the source does, against the item kind of
/// `list_kind` (e.g. `PodList`); the object, if it carries one.
pub fn watch_line<K: DeserializeOwned>(
    line: &[u8],
    list_kind: Option<&str>,
) -> Result<Option<K>, Error> {
    Ok(match parse_line(line, &decoder(list_kind))? {
        Some(WatchLine::Object(_, object)) => Some(object),
        _ => None,
    })
}

/// Decodes one protobuf watch frame (a `WatchEvent` message, without its
/// length) as the source does, for the built-in kind `kind` of
/// `api_version`; the object, if it carries one.
pub fn watch_frame<K: DeserializeOwned + 'static>(
    frame: &[u8],
    api_version: &str,
    kind: &str,
) -> Result<Option<K>, Error> {
    let decoder = Decoder::new().protobuf(KindSchema::lookup(api_version, kind));
    Ok(match parse_frame(frame, &decoder)? {
        WatchLine::Object(_, object) => Some(object),
        _ => None,
    })
}

/// Cuts a watch body into lines as the source does; how many lines and
/// bytes it held. Needs a tokio runtime with time enabled.
pub async fn split_lines(
    body: std::pin::Pin<Box<dyn futures::AsyncBufRead + Send>>,
) -> (usize, usize) {
    let mut body = WatchBody::new(body, Framing::Lines);
    let (mut lines, mut bytes) = (0, 0);
    loop {
        match body.read(Duration::from_secs(3600)).await {
            Read::Lines(batch) => {
                for line in batch {
                    lines += 1;
                    bytes += line.len();
                }
            }
            Read::End | Read::Failed(_) | Read::Idle | Read::BadFrame(_) => return (lines, bytes),
        }
    }
}
