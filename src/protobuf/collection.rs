//! [`KindSchema`]: the kind of a collection the source lists and watches,
//! found at run time, and what the source decodes its bodies with.
//!
//! The source is generic over any `Deserialize` type, not over
//! k8s-openapi's `Resource`, so it cannot name `K::KIND`. A k8s-openapi
//! type names its kind to serde instead: its `Deserialize` impl asks for a
//! struct named after the kind, with `apiVersion` and `metadata` among its
//! fields. With the apiVersion of the collection's URL, that picks the
//! table's message; a type that asks for anything else (`DynamicObject`,
//! a custom resource's struct) or a kind the table lacks has no schema,
//! and the source keeps it on JSON.
//!
//! A metadata-only source asks for `meta.k8s.io/v1 PartialObjectMetadata`
//! whatever the resource ([`KindSchema::metadata`]). Its message holds the
//! metadata only, while the JSON object names its apiVersion and kind,
//! which kube's `PartialObjectMeta` keeps: the decoder hands those two
//! over after the message's fields, so both give the same value.

use std::cell::Cell;

use serde::de::{self as serde_de, DeserializeOwned, Visitor, value::BorrowedStrDeserializer};

use super::list::{ListPage, list_parts};
use super::schema::Message;
use super::watch::{WatchEvent, watch_event_of};
use super::wire::{self, Value};
use super::{Error, de, lookup};

/// A top-level kind of the table that has a list kind too: what a
/// collection's protobuf bodies are decoded by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KindSchema {
    api_version: &'static str,
    kind: &'static str,
    message: &'static Message,
    /// Hand `apiVersion` and `kind` to the type after the message's fields
    /// (the metadata-only kind, whose JSON has them).
    type_meta: bool,
}

impl PartialEq for KindSchema {
    fn eq(&self, other: &Self) -> bool {
        (self.api_version, self.kind) == (other.api_version, other.kind)
    }
}

impl KindSchema {
    /// The schema of `T` served at `api_version`, when `T` is a built-in
    /// kind's type (see the module docs).
    pub(crate) fn of<T: DeserializeOwned>(api_version: &str) -> Option<Self> {
        let (name, fields) = serde_name::<T>()?;
        if !(fields.contains(&"apiVersion") && fields.contains(&"metadata")) {
            return None;
        }
        Self::lookup(api_version, name)
    }

    /// The table's kind `kind` of `api_version`, if it has its list too.
    pub(crate) fn lookup(api_version: &str, kind: &str) -> Option<Self> {
        let (api_version, kind, message) = lookup::kind_entry(api_version, kind)?;
        lookup::kind_entry(api_version, &format!("{kind}List"))?;
        Some(Self {
            api_version,
            kind,
            message,
            type_meta: false,
        })
    }

    /// `meta.k8s.io/v1 PartialObjectMetadata`: what a metadata-only request
    /// of any resource is answered with.
    pub(crate) fn metadata() -> Option<Self> {
        Self::lookup(lookup::META_V1, "PartialObjectMetadata").map(|schema| Self {
            type_meta: true,
            ..schema
        })
    }

    /// The kind's name (`Pod`).
    pub(crate) fn kind(&self) -> &'static str {
        self.kind
    }

    /// One object's message (a list item, or a watch event's object
    /// without its envelope), which must have metadata and a name.
    pub(crate) fn object<T: DeserializeOwned + 'static>(&self, raw: &[u8]) -> Result<T, Error> {
        check_identity(raw)?;
        // A type the generated decoders were written for (a `Pod`, with
        // the private `protobuf-generated` feature and k8s-openapi's 1.34
        // types) skips serde: the same value, about a third of the time
        // (`super::direct`).
        #[cfg(feature = "protobuf-generated")]
        k8s_openapi::k8s_if_1_34! {
            if !self.type_meta
                && let Some(object) = super::direct::object::<T>(raw)
            {
                return object;
            }
        }
        let message = de::MessageDe::new(raw, self.message, 1)?;
        if self.type_meta {
            T::deserialize(WithTypeMeta {
                inner: message,
                type_meta: [("apiVersion", self.api_version), ("kind", self.kind)],
            })
        } else {
            T::deserialize(message)
        }
    }

    /// A list body: its page, each item's message left as bytes of `body`.
    pub(crate) fn list<'a>(&self, body: &'a [u8]) -> Result<ListPage<&'a [u8]>, Error> {
        list_parts(body, self.api_version, self.kind).map(|(page, _)| page)
    }

    /// One frame of a watch stream, objects decoded as [`Self::object`];
    /// an object's error stays in its event (the frame is whole).
    pub(crate) fn watch_event<T: DeserializeOwned + 'static>(
        &self,
        frame: &[u8],
    ) -> Result<WatchEvent<Result<T, Error>>, Error> {
        watch_event_of(frame, self.api_version, self.kind, |raw| self.object(raw))
    }
}

/// An object must have metadata, and a name in it (rule R7 of the
/// source): read off the wire before anything is decoded.
fn check_identity(raw: &[u8]) -> Result<(), Error> {
    let [metadata] = wire::scalar_fields::<1>(raw)?;
    let Some(Value::Len(metadata)) = metadata else {
        return Err(Error::NoMetadata);
    };
    match wire::scalar_fields::<1>(metadata)? {
        [Some(Value::Len(name))] if !name.is_empty() => Ok(()),
        _ => Err(Error::NoName),
    }
}

/// A message's deserializer that hands `type_meta` over as two more
/// fields after the message's own.
struct WithTypeMeta<D> {
    inner: D,
    type_meta: [(&'static str, &'static str); 2],
}

impl<'de, D: serde_de::Deserializer<'de>> serde_de::Deserializer<'de> for WithTypeMeta<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_any(TypeMetaVisitor {
            inner: visitor,
            type_meta: self.type_meta,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// The visitor of [`WithTypeMeta`]: the message's map, then the two fields.
struct TypeMetaVisitor<V> {
    inner: V,
    type_meta: [(&'static str, &'static str); 2],
}

impl<'de, V: Visitor<'de>> Visitor<'de> for TypeMetaVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: serde_de::MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(TypeMetaMap {
            inner: map,
            type_meta: self.type_meta,
            phase: 0,
        })
    }
}

/// The message's entries, then `type_meta`'s.
struct TypeMetaMap<A> {
    inner: A,
    type_meta: [(&'static str, &'static str); 2],
    /// 0 while the message's entries are handed out, then one more than
    /// the index of `type_meta`'s entry whose key was handed out last.
    phase: usize,
}

impl<'de, A: serde_de::MapAccess<'de>> serde_de::MapAccess<'de> for TypeMetaMap<A> {
    type Error = A::Error;

    fn next_key_seed<K: serde_de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let mut seed = Some(seed);
        if self.phase == 0 {
            // The seed is taken only if the message has another key.
            if let Some(key) = self.inner.next_key_seed(TakeSeed(&mut seed))? {
                return Ok(Some(key));
            }
        }
        let (Some(seed), Some((key, _))) = (seed, self.type_meta.get(self.phase)) else {
            return Ok(None);
        };
        self.phase += 1;
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<S: serde_de::DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, A::Error> {
        match self
            .phase
            .checked_sub(1)
            .and_then(|i| self.type_meta.get(i))
        {
            None => self.inner.next_value_seed(seed),
            Some((_, value)) => seed.deserialize(BorrowedStrDeserializer::new(value)),
        }
    }
}

/// A seed held in an `Option`, taken out when it is used.
struct TakeSeed<'a, K>(&'a mut Option<K>);

impl<'de, K: serde_de::DeserializeSeed<'de>> serde_de::DeserializeSeed<'de> for TakeSeed<'_, K> {
    type Value = K::Value;

    fn deserialize<D: serde_de::Deserializer<'de>>(self, d: D) -> Result<K::Value, D::Error> {
        match self.0.take() {
            Some(seed) => seed.deserialize(d),
            None => Err(serde_de::Error::custom("a map key's seed used twice")),
        }
    }
}

/// The struct name and fields `T`'s `Deserialize` impl asks for, if it
/// asks for a struct.
fn serde_name<T: DeserializeOwned>() -> Option<(&'static str, &'static [&'static str])> {
    let asked = Cell::new(None);
    // The probe always fails: only what it was asked for matters.
    let _ = T::deserialize(NameProbe(&asked));
    asked.get()
}

/// A deserializer that notes the struct it is asked for and gives nothing.
struct NameProbe<'a>(&'a Cell<Option<(&'static str, &'static [&'static str])>>);

impl<'de> serde_de::Deserializer<'de> for NameProbe<'_> {
    type Error = serde_de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde_de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(Some((name, fields)));
        Err(serde_de::Error::custom("a probe"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
    use kube::core::{DynamicObject, PartialObjectMeta};

    use super::*;

    #[test]
    fn built_in_types_have_a_schema_and_others_do_not() {
        assert_eq!(
            KindSchema::of::<ConfigMap>("v1").map(|s| s.kind()),
            Some("ConfigMap")
        );
        assert_eq!(
            KindSchema::of::<Deployment>("apps/v1").map(|s| s.kind()),
            Some("Deployment")
        );
        // The URL's apiVersion must be the kind's.
        assert!(KindSchema::of::<ConfigMap>("example.com/v1").is_none());
        assert!(KindSchema::of::<DynamicObject>("v1").is_none());
        assert!(KindSchema::of::<PartialObjectMeta<ConfigMap>>("v1").is_none());
        assert_eq!(
            KindSchema::metadata().map(|s| s.kind()),
            Some("PartialObjectMetadata")
        );
        assert!(KindSchema::of::<serde_json::Value>("v1").is_none());
        // A struct named after a kind but without its fields.
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Pod {
            spec: Option<String>,
        }
        assert!(KindSchema::of::<Pod>("v1").is_none());
        assert!(KindSchema::lookup("v1", "Nope").is_none());
    }

    /// The metadata-only view gives the value its JSON gives, the type
    /// fields (which its message lacks) included.
    #[test]
    fn pb9_metadata_only_objects_decode_as_their_json() {
        let schema = KindSchema::metadata().unwrap();
        // PartialObjectMetadata { metadata: { name: "a", labels: { "x": "y" } } }
        let raw = b"\x0a\x0b\x0a\x01a\x5a\x06\x0a\x01x\x12\x01y";
        let decoded: PartialObjectMeta<ConfigMap> = schema.object(raw).unwrap();
        let json: PartialObjectMeta<ConfigMap> = serde_json::from_str(
            r#"{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"a","labels":{"x":"y"}}}"#,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&decoded).unwrap(),
            serde_json::to_value(&json).unwrap()
        );
        assert_eq!(
            decoded.types.map(|t| t.kind).as_deref(),
            Some("PartialObjectMetadata")
        );
    }

    #[test]
    fn r7_objects_need_metadata_and_a_name() {
        let schema = KindSchema::lookup("v1", "ConfigMap").unwrap();
        // ConfigMap { data: { "k": "v" } }: no metadata.
        let no_metadata = b"\x12\x06\x0a\x01k\x12\x01v";
        assert!(matches!(
            schema.object::<ConfigMap>(no_metadata),
            Err(Error::NoMetadata)
        ));
        // ConfigMap { metadata: { namespace: "n" } }: no name.
        let no_name = b"\x0a\x03\x1a\x01n";
        assert!(matches!(
            schema.object::<ConfigMap>(no_name),
            Err(Error::NoName)
        ));
        // ConfigMap { metadata: { name: "a" } }.
        let named: ConfigMap = schema.object(b"\x0a\x03\x0a\x01a").unwrap();
        assert_eq!(named.metadata.name.as_deref(), Some("a"));
    }
}
