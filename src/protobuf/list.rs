//! A list body (`GET` of a collection): `k8s\0`, an envelope naming
//! `<Kind>List`, and a message of the list's metadata (field 1, a
//! `ListMeta`) and its items (field 2, each the kind's message). Rule PB5.

use k8s_openapi::Resource;
use serde::de::DeserializeOwned;

use super::schema::Message;
use super::wire::{self, Cursor, Value};
use super::{Envelope, Error, lookup};

/// One page of a list: its items and what its `ListMeta` says of the
/// collection.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage<K> {
    /// The objects, in the server's order.
    pub items: Vec<K>,
    /// `metadata.resourceVersion`: the collection's version as of this
    /// page (empty when the server sent none).
    pub resource_version: String,
    /// `metadata.continue`: the token for the next page, if there is one.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`: how many objects the pages after
    /// this one hold, when the server counted them.
    pub remaining_item_count: Option<i64>,
}

/// Decodes a protobuf list body of `K` (`k8s\0`, an envelope naming `K`'s
/// apiVersion and `<Kind>List`) into its page.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_informer::unstable::protobuf::{decode_list, Error};
///
/// // `k8s\0`, then Unknown { typeMeta: { "v1", "ConfigMapList" }, raw:
/// //     ConfigMapList { metadata: { resourceVersion: "7" },
/// //                     items: [{ metadata: { name: "a" } }] } }
/// let body = b"k8s\0\x0a\x13\x0a\x02v1\x12\x0dConfigMapList\x12\x0c\x0a\x03\x12\x017\x12\x05\x0a\x03\x0a\x01a";
/// let page = decode_list::<ConfigMap>(body)?;
/// assert_eq!(page.resource_version, "7");
/// assert_eq!(page.items[0].metadata.name.as_deref(), Some("a"));
/// assert_eq!(page.continue_token, None);
/// # Ok::<(), Error>(())
/// ```
pub fn decode_list<K>(bytes: &[u8]) -> Result<ListPage<K>, Error>
where
    K: Resource + DeserializeOwned,
{
    let (page, item) = list_parts(bytes, K::API_VERSION, K::KIND)?;
    let mut items = Vec::with_capacity(page.items.len());
    for object in page.items {
        items.push(K::deserialize(super::de::MessageDe::new(object, item, 1)?)?);
    }
    Ok(ListPage {
        items,
        resource_version: page.resource_version,
        continue_token: page.continue_token,
        remaining_item_count: page.remaining_item_count,
    })
}

/// A list body of `kind` read as far as its `ListMeta`: the page with
/// each item's message left as bytes of `bytes`, and the item's table
/// entry to decode them by.
pub(crate) fn list_parts<'a>(
    bytes: &'a [u8],
    api_version: &'static str,
    kind: &'static str,
) -> Result<(ListPage<&'a [u8]>, &'static Message), Error> {
    let envelope = Envelope::open(bytes)?;
    envelope.expect(api_version, &format!("{kind}List"), kind)?;
    let raw = envelope.raw;
    let item = lookup::kind(api_version, kind).ok_or(Error::UnknownKind { api_version, kind })?;

    let mut page = ListPage {
        items: Vec::new(),
        resource_version: String::new(),
        continue_token: None,
        remaining_item_count: None,
    };
    let mut cur = Cursor::new(raw);
    while !cur.at_end() {
        let (number, wire_type) = cur.tag()?;
        let value = cur.value(wire_type)?;
        match (number, value) {
            (1, Value::Len(meta)) => {
                let [_self_link, rv, token, remaining] = wire::scalar_fields::<4>(meta)?;
                page.resource_version = string(rv, 2)?.unwrap_or_default();
                page.continue_token = string(token, 3)?.filter(|t| !t.is_empty());
                page.remaining_item_count = match remaining {
                    None => None,
                    Some(Value::Varint(n)) => Some(n as i64),
                    Some(v) => return Err(wrong("ListMeta", 4, wire::VARINT, v)),
                };
            }
            (2, Value::Len(object)) => page.items.push(object),
            (1 | 2, v) => return Err(wrong("List", number, wire::LEN, v)),
            _ => {} // a field this decoder does not know
        }
    }
    Ok((page, item))
}

/// A `ListMeta` string field, lossily decoded.
fn string(value: Option<Value<'_>>, number: u32) -> Result<Option<String>, Error> {
    match value {
        None => Ok(None),
        Some(Value::Len(b)) => Ok(Some(String::from_utf8_lossy(b).into_owned())),
        Some(v) => Err(wrong("ListMeta", number, wire::LEN, v)),
    }
}

fn wrong(message: &'static str, field: u32, expected: u8, found: Value<'_>) -> Error {
    Error::WrongWireType {
        message,
        field,
        expected,
        found: found.wire_type(),
    }
}
