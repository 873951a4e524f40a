//! Decoding with exact vector capacities.
//!
//! serde_json cannot tell a `Vec`'s `Deserialize` how many elements an
//! array holds, so the vector grows as elements arrive: a `Vec` of one or
//! two containers, volumes or env vars ends with room for four (or the next
//! power of two), and the slack stays in the cache for as long as the
//! object does: a noticeable part of what a cached Pod costs in memory
//! (`benches/compare/NOTES.md`, "Decoding: the measurements behind
//! `source/decode`").
//!
//! So before an object is decoded, one pass over its text counts the
//! elements of every array, in the order the arrays open
//! ([`scan`](super::scan)); the decode then runs through [`Hinted`], a
//! thin wrapper around serde_json's deserializer that hands the next count
//! to each sequence as its exact `size_hint`, which `Vec` uses as its
//! capacity. The wrapper
//! also sends values the type ignores through `deserialize_any`, so every
//! array of the text is visited in order and the counts stay in step.
//!
//! The same wrapper leaves `metadata.managedFields` out when the informer
//! strips them (`InformerBuilder::strip_managed_fields`): it notes the keys
//! of the object and of its metadata as they are read, reads past the
//! managedFields value, and gives the field `null`. The entries are never
//! built, where the object is decoded, instead of being built there and
//! dropped later on the thread that feeds the FIFO (a `serde_json::Value` tree per
//! entry).
//!
//! A hint is only ever a capacity: if the counts fell out of step (a type
//! that takes part of the text without visiting it, such as a `RawValue`
//! field), values are still decoded exactly right, only with other
//! capacities. A sequence that ends with another length than its hint
//! turns hinting off for the rest of the object, and the
//! [`Decoder`](super::Decoder) stops hinting for that type altogether.

use std::{cell::Cell, fmt, marker::PhantomData};

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess,
    VariantAccess, Visitor, value::UnitDeserializer,
};

use super::scan::Role;

/// What guides one object's decode: the counts of its arrays, handed out
/// in order, and whether to leave `metadata.managedFields` out.
pub(crate) struct Guide {
    counts: Vec<u32>,
    next: Cell<usize>,
    /// Set when a sequence did not have its hinted length (or hints are
    /// off): no more hints.
    lost_step: Cell<bool>,
    /// Which map opens next: the object itself, its metadata, or another.
    next_map: Cell<Role>,
    /// Set while a key of the object or of its metadata is read.
    reading_key: Cell<bool>,
    last_key: Cell<Key>,
}

/// The keys that matter for leaving managedFields out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Metadata,
    ManagedFields,
    Other,
}

impl Guide {
    /// A guide with the array `counts` of the object's text (used as size
    /// hints when `hints`), leaving `metadata.managedFields` out when
    /// `skip_managed_fields`.
    pub(crate) fn new(counts: Vec<u32>, hints: bool, skip_managed_fields: bool) -> Self {
        Self {
            counts,
            next: Cell::new(0),
            lost_step: Cell::new(!hints),
            next_map: Cell::new(if skip_managed_fields {
                Role::Object
            } else {
                Role::Other
            }),
            reading_key: Cell::new(false),
            last_key: Cell::new(Key::Other),
        }
    }

    fn take(&self) -> Option<usize> {
        let next = self.next.get();
        self.next.set(next + 1);
        if self.lost_step.get() {
            return None;
        }
        let count = self.counts.get(next).map(|c| *c as usize);
        if count.is_none() {
            self.lost_step.set(true);
        }
        count
    }

    /// Whether every count was used, each by a sequence of that length.
    pub(crate) fn stayed_in_step(&self) -> bool {
        !self.lost_step.get() && self.next.get() == self.counts.len()
    }

    /// A string was visited: if it is a key being watched for, remember it.
    fn saw(&self, text: &str) {
        if self.reading_key.replace(false) {
            self.last_key.set(match text {
                "metadata" => Key::Metadata,
                "managedFields" => Key::ManagedFields,
                _ => Key::Other,
            });
        }
    }
}

/// A deserializer that gives sequences their exact length (see the module
/// docs).
pub(crate) struct Hinted<'a, D> {
    inner: D,
    guide: &'a Guide,
}

impl<'a, D> Hinted<'a, D> {
    pub(crate) fn new(inner: D, guide: &'a Guide) -> Self {
        Self { inner, guide }
    }
}

/// Wraps what serde hands around so the hints follow the decode down.
struct Wrap<'a, T> {
    inner: T,
    guide: &'a Guide,
}

impl<'a, T> Wrap<'a, T> {
    fn new(inner: T, guide: &'a Guide) -> Self {
        Self { inner, guide }
    }
}

/// Forwards `deserialize_*` methods, with the visitor wrapped.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method($($arg,)* Wrap::new(visitor, self.guide))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Hinted<'_, D> {
    type Error = D::Error;

    forward!(
        deserialize_any(),
        deserialize_bool(),
        deserialize_i8(),
        deserialize_i16(),
        deserialize_i32(),
        deserialize_i64(),
        deserialize_i128(),
        deserialize_u8(),
        deserialize_u16(),
        deserialize_u32(),
        deserialize_u64(),
        deserialize_u128(),
        deserialize_f32(),
        deserialize_f64(),
        deserialize_char(),
        deserialize_str(),
        deserialize_string(),
        deserialize_bytes(),
        deserialize_byte_buf(),
        deserialize_option(),
        deserialize_unit(),
        deserialize_seq(),
        deserialize_map(),
        deserialize_identifier(),
        deserialize_unit_struct(name: &'static str),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
    );

    /// An ignored value is visited all the same, so the arrays inside it
    /// use up their counts.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(Wrap::new(visitor, self.guide))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        // serde_json's `RawValue` takes its text without visiting it.
        if name == "$serde_json::private::RawValue" {
            self.guide.lost_step.set(true);
        }
        self.inner
            .deserialize_newtype_struct(name, Wrap::new(visitor, self.guide))
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method<E: de::Error>(self, value: $ty) -> Result<V::Value, E> {
            self.inner.$method(value)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit!(
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_f64(f64),
        visit_char(char),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    );

    fn visit_str<E: de::Error>(self, value: &str) -> Result<V::Value, E> {
        self.guide.saw(value);
        self.inner.visit_str(value)
    }

    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<V::Value, E> {
        self.guide.saw(value);
        self.inner.visit_borrowed_str(value)
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<V::Value, E> {
        self.guide.saw(&value);
        self.inner.visit_string(value)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Hinted::new(deserializer, self.guide))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .visit_newtype_struct(Hinted::new(deserializer, self.guide))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        let hint = self.guide.take();
        self.inner.visit_seq(HintedSeq {
            inner: seq,
            guide: self.guide,
            hint,
            seen: 0,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        let role = self.guide.next_map.replace(Role::Other);
        self.inner.visit_map(HintedMap {
            inner: map,
            guide: self.guide,
            role,
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(Wrap::new(data, self.guide))
    }
}

/// A sequence that knows its length.
struct HintedSeq<'a, A> {
    inner: A,
    guide: &'a Guide,
    hint: Option<usize>,
    seen: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for HintedSeq<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        let next = self.inner.next_element_seed(Wrap::new(seed, self.guide))?;
        match next {
            Some(_) => self.seen += 1,
            None => {
                if self.hint.is_some_and(|hint| hint != self.seen) {
                    self.guide.lost_step.set(true);
                }
            }
        }
        Ok(next)
    }

    fn size_hint(&self) -> Option<usize> {
        match self.hint {
            Some(hint) if !self.guide.lost_step.get() => Some(hint.saturating_sub(self.seen)),
            _ => self.inner.size_hint(),
        }
    }
}

/// A map, and for the object and its metadata, the keys that matter.
struct HintedMap<'a, A> {
    inner: A,
    guide: &'a Guide,
    role: Role,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for HintedMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if self.role == Role::Other {
            return self.inner.next_key_seed(Wrap::new(seed, self.guide));
        }
        self.guide.last_key.set(Key::Other);
        self.guide.reading_key.set(true);
        let key = self.inner.next_key_seed(Wrap::new(seed, self.guide));
        self.guide.reading_key.set(false);
        key
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match (self.role, self.guide.last_key.get()) {
            (Role::Object, Key::Metadata) => {
                self.guide.next_map.set(Role::Metadata);
                let value = self.inner.next_value_seed(Wrap::new(seed, self.guide));
                self.guide.next_map.set(Role::Other);
                value
            }
            (Role::Metadata, Key::ManagedFields) => {
                // Read past the value (its arrays use up their counts), and
                // give the field `null`: `ObjectMeta::managed_fields` is an
                // `Option`, so it is `None`.
                self.inner
                    .next_value_seed(Wrap::new(PhantomData::<IgnoredAny>, self.guide))?;
                seed.deserialize(UnitDeserializer::new())
            }
            _ => self.inner.next_value_seed(Wrap::new(seed, self.guide)),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.inner
            .deserialize(Hinted::new(deserializer, self.guide))
    }
}

impl<'a, 'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<'a, A> {
    type Error = A::Error;
    type Variant = Wrap<'a, A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), A::Error> {
        let (value, variant) = self.inner.variant_seed(Wrap::new(seed, self.guide))?;
        Ok((value, Wrap::new(variant, self.guide)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.newtype_variant_seed(Wrap::new(seed, self.guide))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.inner
            .tuple_variant(len, Wrap::new(visitor, self.guide))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.inner
            .struct_variant(fields, Wrap::new(visitor, self.guide))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use proptest::prelude::*;
    use serde::{Deserialize, de::DeserializeOwned};
    use serde_json::{Value, json, value::RawValue};

    use super::*;

    /// Decodes `text` through the wrapper, with hints, leaving managedFields
    /// out if `skip`; and whether the counts stayed in step.
    fn decode<T: DeserializeOwned>(text: &str, skip: bool) -> (T, bool) {
        let guide = Guide::new(super::super::scan::scan(text, None).lengths, true, skip);
        let mut json = serde_json::Deserializer::from_str(text);
        let value = T::deserialize(Hinted::new(&mut json, &guide)).unwrap();
        json.end().unwrap();
        (value, guide.stayed_in_step())
    }

    /// What the hints are for: a Pod's vectors end with exactly their
    /// length as capacity (serde_json alone gives a `Vec` of two
    /// containers room for four).
    #[test]
    fn a_pods_vectors_are_exact() {
        let text = json!({
            "metadata": {"name": "p", "ownerReferences": [
                {"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u"}]},
            "spec": {
                "containers": [
                    {"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C"}],
                     "ports": [{"containerPort": 80}]},
                    {"name": "b", "args": ["x", "y", "z", "w", "v"]},
                ],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "tolerations": [{"key": "k"}, {"key": "l"}, {"key": "m"}],
            },
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        })
        .to_string();
        let (pod, in_step): (Pod, bool) = decode(&text, false);
        assert!(in_step);
        assert_eq!(pod, serde_json::from_str::<Pod>(&text).unwrap());
        let spec = pod.spec.unwrap();
        let exact = |len: usize, cap: usize| assert_eq!((len, cap), (len, len));
        exact(spec.containers.len(), spec.containers.capacity());
        let env = spec.containers[0].env.as_ref().unwrap();
        exact(env.len(), env.capacity());
        let args = spec.containers[1].args.as_ref().unwrap();
        exact(args.len(), args.capacity());
        let volumes = spec.volumes.unwrap();
        exact(volumes.len(), volumes.capacity());
        let tolerations = spec.tolerations.unwrap();
        exact(tolerations.len(), tolerations.capacity());
        let owners = pod.metadata.owner_references.unwrap();
        exact(owners.len(), owners.capacity());
    }

    /// `metadata.managedFields` is left out, and only it: keys of that name
    /// elsewhere stay, and the counts of the arrays after it stay in step.
    #[test]
    fn managed_fields_are_left_out_of_the_metadata_only() {
        let text = json!({
            "kind": "Pod",
            "metadata": {
                "name": "p",
                "labels": {"managedFields": "kept"},
                "managedFields": [
                    {"manager": "m", "operation": "Update", "fieldsV1": {"f:a": {"f:b": {}}, "f:c": [1, [2, 3]]}},
                    {"manager": "n", "operation": "Apply"},
                ],
                "annotations": {"a": "b"},
            },
            "spec": {
                "managedFields": "unknown field, ignored",
                "containers": [{"name": "a", "args": ["managedFields", "x", "y"]}],
            },
        })
        .to_string();
        let (pod, in_step): (Pod, bool) = decode(&text, true);
        assert!(in_step);
        let mut expected: Pod = serde_json::from_str(&text).unwrap();
        assert_eq!(
            expected.metadata.managed_fields.as_ref().map(Vec::len),
            Some(2)
        );
        expected.metadata.managed_fields = None;
        assert_eq!(pod, expected);
        let args = pod.spec.unwrap().containers[0].args.clone().unwrap();
        assert_eq!((args.len(), args.capacity()), (3, 3));

        // A dynamic object: its own `managedFields` elsewhere are data.
        let (object, in_step): (kube::core::DynamicObject, bool) = decode(&text, true);
        assert!(in_step);
        assert!(object.metadata.managed_fields.is_none());
        assert_eq!(object.metadata.labels.unwrap()["managedFields"], "kept");
        assert_eq!(
            object.data["spec"]["managedFields"],
            "unknown field, ignored"
        );
    }

    /// Fields the type does not know are visited too, so the arrays after
    /// them keep their counts.
    #[test]
    fn ignored_fields_keep_the_counts_in_step() {
        #[derive(Deserialize)]
        struct Known {
            late: Vec<u8>,
        }
        let text = r#"{"unknown": [[1, 2], {"x": [3]}], "late": [1, 2, 3]}"#;
        let (known, in_step): (Known, bool) = decode(text, false);
        assert!(in_step);
        assert_eq!((known.late.len(), known.late.capacity()), (3, 3));
    }

    /// A `RawValue` takes its text unvisited: the decode is still right,
    /// and the hints are known to be out of step.
    #[test]
    fn a_raw_value_turns_hints_off_and_decodes_right() {
        #[derive(Deserialize)]
        struct WithRaw {
            raw: Box<RawValue>,
            after: Vec<u8>,
        }
        let text = r#"{"raw": [[1], [2, 3]], "after": [7, 8]}"#;
        let (value, in_step): (WithRaw, bool) = decode(text, false);
        assert!(!in_step);
        assert_eq!(value.raw.get(), "[[1], [2, 3]]");
        assert_eq!(value.after, [7, 8]);
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[\\[\\]{},:\"\\\\a-z ]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\\[\\],\"]{0,3}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any JSON decodes through the hints to the same value, with every
        /// count used by an array of that length.
        #[test]
        fn hinted_decoding_equals_plain_decoding(value in any_json(), pretty in any::<bool>()) {
            let text = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) }.unwrap();
            let (decoded, in_step): (Value, bool) = decode(&text, false);
            prop_assert_eq!(decoded, value);
            prop_assert!(in_step);
        }
    }
}
