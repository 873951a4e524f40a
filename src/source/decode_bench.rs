//! The source's decoding steps, reachable from `benches/decode.rs`. Not
//! part of the supported API: names and signatures may change at any time.

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::{
    decode::Decoder,
    error::Error,
    list::decode_page,
    watch::{WatchLine, parse_line},
};

/// Decodes a list answer's items as the source does, on `threads` threads
/// (`None`: the source's own choice for this page).
pub fn list_page<K: DeserializeOwned + Send>(
    text: &str,
    threads: Option<usize>,
) -> Vec<Result<K, Error>> {
    match decode_page(text, &mut Decoder::new(), threads) {
        Ok(page) => page.items,
        Err(error) => vec![Err(error)],
    }
}

/// Checks and decodes one object as the source does.
pub fn object<K: DeserializeOwned>(object: &RawValue) -> Result<K, Error> {
    Decoder::new().object(object, "list item")
}

/// The R7 probe alone (kind and name), without the typed decode.
pub fn probe(object: &RawValue) -> Result<(), Error> {
    super::decode::probe_only(object.get())
}

/// Decodes one watch line as the source does; the object, if it carries one.
pub fn watch_line<K: DeserializeOwned>(line: &[u8]) -> Result<Option<K>, Error> {
    Ok(match parse_line(line, &Decoder::new())? {
        Some(WatchLine::Object(_, object)) => Some(object),
        _ => None,
    })
}
