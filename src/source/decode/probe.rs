//! The parts of an object that R7 checks (its kind and `metadata.name`),
//! read from the object's JSON text without building anything.
//!
//! Everything else in the object is skipped by the JSON parser without
//! allocating, which costs a fraction of the typed decode that follows
//! (see `benches/decode.rs`). Checking before decoding, rather than
//! decoding and then looking at `Resource::meta()`, is what tells "no
//! metadata" from "no name": typed objects decode a missing `metadata` as
//! an empty `ObjectMeta`.

use std::{borrow::Cow, fmt, marker::PhantomData};

use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, MapAccess, SeqAccess, Visitor},
};
use serde_json::value::RawValue;

use crate::source::error::Error;

/// The top level of an object: its kind and its metadata.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    metadata: Option<MetaProbe<'a>>,
}

/// `metadata`, if it is an object: its name, as raw JSON.
enum MetaProbe<'a> {
    Object { name: Option<&'a RawValue> },
    NotAnObject,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum MetaKey {
    Name,
    #[serde(other)]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for MetaProbe<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MetaVisitor(PhantomData))
    }
}

struct MetaVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for MetaVisitor<'a> {
    type Value = MetaProbe<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut name = None;
        while let Some(key) = map.next_key::<MetaKey>()? {
            match key {
                MetaKey::Name => name = map.next_value::<Option<&'de RawValue>>()?,
                MetaKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(MetaProbe::Object { name })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MetaProbe::NotAnObject)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(MetaProbe::NotAnObject)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(MetaProbe::NotAnObject)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(MetaProbe::NotAnObject)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(MetaProbe::NotAnObject)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(MetaProbe::NotAnObject)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(MetaProbe::NotAnObject)
    }
}

/// A JSON string's value, unescaped only when it has escapes.
fn json_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(text).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// Checks an object's JSON (in this order, as client-go's reflector does):
/// it has `metadata`, `metadata.name` is a non-empty string, and its
/// `kind`, when it has one, is `expected_kind`.
pub(crate) fn check(object: &str, expected_kind: Option<&str>) -> Result<(), Error> {
    // Only a value that is not an object fails to probe: it has no metadata.
    let probe: Probe<'_> = serde_json::from_str(object).map_err(|_| Error::MissingMetadata)?;
    let Some(MetaProbe::Object { name }) = probe.metadata else {
        return Err(Error::MissingMetadata);
    };
    if name.and_then(json_str).is_none_or(|name| name.is_empty()) {
        return Err(Error::MissingName);
    }
    if let (Some(expected), Some(found)) = (expected_kind, probe.kind.and_then(json_str))
        && expected != found
    {
        return Err(Error::WrongKind {
            expected: expected.to_owned(),
            found: found.into_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r7_probe_tells_each_fault_apart() {
        let ok = r#"{"kind":"Pod","metadata":{"namespace":"a","name":"p","labels":{"x":"y"}},"spec":{"containers":[]}}"#;
        assert!(check(ok, Some("Pod")).is_ok());
        assert!(check(ok, None).is_ok());
        assert!(
            check(r#"{"metadata":{"name":"p"}}"#, Some("Pod")).is_ok(),
            "no kind is fine"
        );
        for no_metadata in [
            r#"{"kind":"Pod"}"#,
            r#"{"metadata":null}"#,
            r#"{"metadata":"p"}"#,
            r#"{"metadata":["p"]}"#,
            r#"{"metadata":3}"#,
            "[]",
            "7",
            r#""text""#,
            "null",
        ] {
            assert!(
                matches!(check(no_metadata, None), Err(Error::MissingMetadata)),
                "{no_metadata}"
            );
        }
        for no_name in [
            r#"{"metadata":{}}"#,
            r#"{"metadata":{"name":""}}"#,
            r#"{"metadata":{"name":null}}"#,
            r#"{"metadata":{"name":7}}"#,
            r#"{"metadata":{"name":{"a":"b"}}}"#,
        ] {
            assert!(
                matches!(check(no_name, None), Err(Error::MissingName)),
                "{no_name}"
            );
        }
        assert!(check(r#"{"metadata":{"name":"\u0070"}}"#, None).is_ok());
        match check(r#"{"kind":"Secret","metadata":{"name":"p"}}"#, Some("Pod")) {
            Err(Error::WrongKind { expected, found }) => {
                assert_eq!((expected.as_str(), found.as_str()), ("Pod", "Secret"));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            check(
                r#"{"kind":"P\u006fd","metadata":{"name":"p"}}"#,
                Some("Pod")
            )
            .is_ok()
        );
        // Metadata is checked before the kind.
        assert!(matches!(
            check(r#"{"kind":"Secret","metadata":{}}"#, Some("Pod")),
            Err(Error::MissingName)
        ));
    }
}
