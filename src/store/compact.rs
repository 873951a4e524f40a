//! The compact cache: a store that keeps each object encoded (MessagePack,
//! compressed with LZ4 against a dictionary of the first objects it kept)
//! and decodes it when read, with a small set of decoded objects for the
//! keys read often.
//!
//! # Rules
//!
//! Tests are named after them. Every store rule (ST1–ST5, RW4) holds in both
//! modes.
//!
//! - **CM1 Same answers.** A compact store answers every read (`get`,
//!   `get_by`, `list`, `list_keys`, `snapshot`, `by_index`, `index_keys`,
//!   `index_values`, namespace views, `caught_up`, `wait_for`) with objects
//!   equal to those written, as the default store does; only pointer
//!   identity differs (CM5).
//! - **CM2 Indexes at write.** Index functions run on the decoded object
//!   the writer was given, once per stored version (ST3); a read never runs
//!   them, and never decodes to answer `index_keys` or `index_values`.
//! - **CM3 Never stale.** The hot set serves a decoded object only for the
//!   exact encoded version the store holds under its key at the read:
//!   after a write returns, no read returns an older version.
//! - **CM4 Bounded hot set.** At most [`CompactCache::hot_objects`] decoded
//!   objects are kept. Only `get`, `get_by` and a namespace view's `get`
//!   admit a key (a read by key is what repeats), on its second read
//!   within the last `2 × hot_objects` keys read once; `list`, `by_index`,
//!   `snapshot` and the informer's own reads use the hot set but do not
//!   fill it, so one scan of every object does not flush the keys read
//!   often. A key written while it is hot stays hot with its new version
//!   (the writer has it decoded already).
//! - **CM5 Identity.** [`Writer::apply_upsert`](super::Writer::apply_upsert)
//!   returns the replaced object decoded (from the hot set when it is
//!   there). Objects read from a compact store are equal to, not the same
//!   allocation as, what was written and what notifications carried; in
//!   the default mode they are the same allocation.
//! - **CM6 Failures are counted, never panics.** An object that cannot be
//!   encoded is kept decoded (and counted in
//!   [`CompactStats::encode_failures`]); stored bytes that cannot be
//!   decoded are left out of the read's answer (a `get` finds nothing, a
//!   `list` skips them), counted in [`CompactStats::decode_failures`] and
//!   logged: a read cannot fail in the `Store` API, and an object the store
//!   cannot show is better missing than made up. If the first objects of a
//!   type do not decode back, the store stops encoding and keeps every
//!   later object decoded. An update whose replaced version cannot be
//!   decoded is written; the informer reports
//!   [`Error::Undecodable`](super::Error::Undecodable) and tells
//!   subscribers `Added` (the old version is unknown);
//!   [`Writer::apply_upsert`](super::Writer::apply_upsert) returns `None`.
//! - **CM7 An option like the others.** The compact cache and its hot-set
//!   bound are options an [`InformerFactory`](crate::InformerFactory)
//!   compares: a request that differs is refused.
//! - **CM8 No decode for no reader.** While an informer has no live
//!   subscriber, an update decodes the version it replaces only if the hot
//!   set holds it decoded already: the `Updated` notification that would
//!   carry it has no one to go to. An informer kept only for its store
//!   (lookups, indexes) pays for encoding each new version and nothing for
//!   the old one. Subscribers join between two rounds of the writer, so a
//!   subscriber never misses a notification for it; one that joins later
//!   gets the store's objects as its replay (L1).
//!
//! # Encoding
//!
//! `benches/compare/examples/compact_codecs.rs` measured candidates on the
//! wire table's Pods without managedFields (2,000 Pods, 2-core shared
//! machine, load ≈ 1; encode into a fresh buffer, decode includes the
//! decompression):
//!
//! | encoding | bytes / Pod | encode | decode p50 |
//! |---|---|---|---|
//! | JSON | 2,941 | 15.6 µs | 11.6 µs |
//! | JSON + LZ4 | 1,780 | 14.5 µs | 12.5 µs |
//! | JSON + LZ4 + dictionary | 429 | 16.1 µs | 12.3 µs |
//! | MessagePack (field names) | 2,458 | 11.6 µs | 9.1 µs |
//! | MessagePack + LZ4 | 1,655 | 12.7 µs | 9.6 µs |
//! | MessagePack + LZ4 + dictionary | 384 | 14.8 µs | 9.5 µs |
//!
//! MessagePack with field names and a dictionary is what the store keeps:
//! the smallest, and the cheapest to write and to read (into a reused
//! buffer, a Pod encodes in ≈ 7 µs against ≈ 9.4 µs for JSON, and decodes
//! in ≈ 10.8 µs against ≈ 13.8 µs; with managedFields 12.3 / 17.3 µs
//! against 15.7 / 20.5 µs). Written with field names, a struct is a map
//! keyed by its serde names, as in JSON, so the `Deserialize` of every
//! Kubernetes type (and of `serde_json::Value`, which `DynamicObject` and
//! managedFields hold) reads it back; the first objects of every store are
//! checked to decode back all the same (CM6). LZ4 (`lz4_flex`, pure Rust)
//! decompresses a Pod in about a microsecond; its dictionary is plain
//! prefix data, here the encodings of the first 8 objects kept. The store
//! compresses with a small LZ4 block compressor of its own
//! (`lz4_dictionary`), which hashes that dictionary once for the store's
//! life: `lz4_flex`'s compressor hashes it again into a newly allocated
//! table for every object, which cost more than the rest of the
//! compression and made glibc's malloc consolidate on every write.

use std::{
    fmt,
    sync::{
        Arc, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
};

use parking_lot::Mutex;
use serde::{Serialize, de::DeserializeOwned};

use super::{
    hot::HotSet,
    lz4_dictionary::{self, Compressor, Dictionary},
};
use crate::key::ObjectKey;

/// How many objects' encodings make the LZ4 dictionary: the first ones the store
/// keeps, usually from the first list, so they look like the rest.
pub(super) const DICTIONARY_OBJECTS: usize = 8;
/// Gathering stops at what LZ4 can reach back to; [`Dictionary::new`]
/// keeps the end of a longer one.
const DICTIONARY_MAX: usize = lz4_dictionary::MAX_OFFSET;

/// Tags of the encoded forms (the first byte of the stored bytes).
const PLAIN: u8 = 0;
const WITH_DICTIONARY: u8 = 1;
/// The tag byte and the encoded length (u32, little endian).
const HEADER: usize = 5;

/// The compact cache's settings: how many decoded objects it keeps for keys
/// read often.
///
/// Chosen with
/// [`InformerBuilder::compact_cache`](crate::InformerBuilder::compact_cache),
/// or for a store of your own with
/// [`Writer::compact`](super::Writer::compact). See the module docs of
/// [`store`](super) (Compact cache) for what it costs and saves.
///
/// # Examples
///
/// ```
/// use kube_informer::store::CompactCache;
///
/// let cache = CompactCache::default().hot_objects(1024);
/// assert_eq!(cache.hot_object_limit(), 1024);
/// assert_eq!(CompactCache::default().hot_object_limit(), 256);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompactCache {
    hot_objects: usize,
}

impl Default for CompactCache {
    /// 256 decoded objects: about 5 MB of Pods, against about 50 MB for
    /// 50,000 Pods kept encoded.
    fn default() -> Self {
        Self { hot_objects: 256 }
    }
}

impl CompactCache {
    /// Keeps at most `objects` decoded objects for the keys read often by
    /// `get` (CM4); `0` keeps none, so every read decodes.
    pub fn hot_objects(mut self, objects: usize) -> Self {
        self.hot_objects = objects;
        self
    }

    /// The most decoded objects kept.
    pub fn hot_object_limit(&self) -> usize {
        self.hot_objects
    }
}

/// What a compact store has done so far: see [`Store::compact_stats`](super::Store::compact_stats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactStats {
    /// Objects held encoded now.
    pub encoded_objects: u64,
    /// Their encoded bytes, in all.
    pub encoded_bytes: u64,
    /// Reads served from the hot set.
    pub hot_hits: u64,
    /// Objects decoded to answer reads or to return a replaced version.
    pub decodes: u64,
    /// Objects kept decoded because they could not be encoded (CM6).
    pub encode_failures: u64,
    /// Reads that left an object out because its bytes did not decode (CM6).
    pub decode_failures: u64,
}

/// How a store turns objects into bytes and back: fixed when the store is
/// made, where the object type's serde bounds are known.
pub(crate) struct Codec<K> {
    encode: fn(&K, &mut Vec<u8>) -> Result<(), rmp_serde::encode::Error>,
    decode: fn(&[u8]) -> Result<K, rmp_serde::decode::Error>,
}

impl<K> Clone for Codec<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Codec<K> {}

impl<K> fmt::Debug for Codec<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Codec(msgpack+lz4)")
    }
}

impl<K: Serialize + DeserializeOwned> Codec<K> {
    /// MessagePack with field names: a struct is written as a map keyed by
    /// its serde names, as in JSON, so every type whose `Deserialize`
    /// reads maps (all Kubernetes types do) reads it back.
    pub(crate) fn msgpack() -> Self {
        Self {
            encode: |object, out| rmp_serde::encode::write_named(out, object),
            decode: |bytes| rmp_serde::from_slice(bytes),
        }
    }
}

/// One cached object as the store holds it.
pub(super) enum Stored<K> {
    /// The default mode's form, and the compact mode's for an object that
    /// could not be encoded (CM6).
    Decoded(Arc<K>),
    /// A tag byte, the encoding's length (u32, little endian), the LZ4 block.
    Encoded(Arc<[u8]>),
}

impl<K> Stored<K> {
    /// The object, when it is kept decoded.
    pub(super) fn decoded(&self) -> Option<Arc<K>> {
        match self {
            Self::Decoded(object) => Some(Arc::clone(object)),
            Self::Encoded(_) => None,
        }
    }
}

impl<K> Clone for Stored<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Decoded(object) => Self::Decoded(Arc::clone(object)),
            Self::Encoded(bytes) => Self::Encoded(Arc::clone(bytes)),
        }
    }
}

/// The dictionary while it is being gathered, and the writer's scratch
/// buffer for encodings.
struct Training {
    samples: Vec<u8>,
    sampled: usize,
    scratch: Vec<u8>,
    /// The stored bytes before they are copied into their `Arc`.
    compressed: Vec<u8>,
    /// The input's hash table, kept between objects.
    compressor: Compressor,
    /// Set when one of the first objects did not decode back: from then on
    /// objects are kept decoded (CM6).
    disabled: bool,
}

/// A compact store's codec, dictionary, hot set and counters.
pub(super) struct Compact<K> {
    codec: Codec<K>,
    dictionary: OnceLock<Dictionary>,
    training: Mutex<Training>,
    pub(super) hot: Mutex<HotSet<K>>,
    encoded_objects: AtomicU64,
    encoded_bytes: AtomicU64,
    hot_hits: AtomicU64,
    decodes: AtomicU64,
    encode_failures: AtomicU64,
    decode_failures: AtomicU64,
}

impl<K> Compact<K> {
    pub(super) fn new(codec: Codec<K>, settings: CompactCache) -> Self {
        Self {
            codec,
            dictionary: OnceLock::new(),
            training: Mutex::new(Training {
                samples: Vec::new(),
                sampled: 0,
                scratch: Vec::new(),
                compressed: Vec::new(),
                compressor: Compressor::default(),
                disabled: false,
            }),
            hot: Mutex::new(HotSet::new(settings.hot_objects)),
            encoded_objects: AtomicU64::new(0),
            encoded_bytes: AtomicU64::new(0),
            hot_hits: AtomicU64::new(0),
            decodes: AtomicU64::new(0),
            encode_failures: AtomicU64::new(0),
            decode_failures: AtomicU64::new(0),
        }
    }

    /// The form `object` is stored in: encoded, or decoded when it cannot
    /// be (CM6). Called by the one writer, outside the store's lock.
    pub(super) fn store(&self, object: &Arc<K>) -> Stored<K> {
        match self.encode(object) {
            Some(bytes) => Stored::Encoded(bytes),
            None => Stored::Decoded(Arc::clone(object)),
        }
    }

    fn encode(&self, object: &K) -> Option<Arc<[u8]>> {
        let mut training = self.training.lock();
        if training.disabled {
            return None;
        }
        let Training {
            samples,
            sampled,
            scratch,
            compressed,
            compressor,
            disabled,
        } = &mut *training;
        scratch.clear();
        if let Err(error) = (self.codec.encode)(object, scratch) {
            self.encode_failures.fetch_add(1, Ordering::Relaxed);
            tracing::error!(%error, "compact cache: an object could not be encoded; it is kept decoded");
            return None;
        }
        let Ok(length) = u32::try_from(scratch.len()) else {
            self.encode_failures.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let bytes = match self.dictionary.get() {
            Some(dictionary) => {
                // The header and the block are written into one buffer, so
                // the stored bytes are its one copy.
                compressed.clear();
                compressed.push(WITH_DICTIONARY);
                compressed.extend_from_slice(&length.to_le_bytes());
                compressor.compress(scratch, dictionary, compressed);
                Arc::from(&compressed[..])
            }
            None => {
                // Until the dictionary is made, each of the first objects
                // is checked to decode back (a type whose serde impls do
                // not round-trip through the encoding would lose objects), then
                // joins the dictionary.
                if (self.codec.decode)(scratch).is_err() {
                    *disabled = true;
                    self.encode_failures.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(
                        "compact cache: an object's encoding does not decode back; this store keeps objects decoded from now on"
                    );
                    return None;
                }
                let bytes = frame(PLAIN, length, &lz4_flex::block::compress(scratch));
                samples.extend_from_slice(scratch);
                *sampled += 1;
                if *sampled >= DICTIONARY_OBJECTS || samples.len() >= DICTIONARY_MAX {
                    let dictionary = Dictionary::new(samples);
                    *samples = Vec::new();
                    // Only this writer sets it, under the training lock.
                    let _ = self.dictionary.set(dictionary);
                }
                bytes
            }
        };
        self.encoded_objects.fetch_add(1, Ordering::Relaxed);
        self.encoded_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Some(bytes)
    }

    /// Notes that `stored` left the store (replaced or removed).
    pub(super) fn forget(&self, stored: &Stored<K>) {
        if let Stored::Encoded(bytes) = stored {
            self.encoded_objects.fetch_sub(1, Ordering::Relaxed);
            self.encoded_bytes
                .fetch_sub(bytes.len() as u64, Ordering::Relaxed);
        }
    }

    /// The object stored as `bytes`: from the hot set if it holds this very
    /// version (CM3), else decoded now and, when `admit`, kept in the hot
    /// set (CM4). `None` (counted and logged) when the bytes do not decode.
    pub(super) fn resolve(&self, key: &ObjectKey, bytes: Arc<[u8]>, admit: bool) -> Option<Arc<K>> {
        if let Some(object) = self.hot.lock().get(key.as_str(), &bytes) {
            self.hot_hits.fetch_add(1, Ordering::Relaxed);
            return Some(object);
        }
        let object = Arc::new(self.decode(key, &bytes)?);
        if admit {
            self.hot.lock().admit(key, bytes, Arc::clone(&object));
        }
        Some(object)
    }

    fn decode(&self, key: &ObjectKey, bytes: &[u8]) -> Option<K> {
        self.decodes.fetch_add(1, Ordering::Relaxed);
        let decoded = unframe(
            bytes,
            self.dictionary.get().map(Dictionary::bytes),
            |encoded| (self.codec.decode)(encoded).map_err(|e| e.to_string()),
        );
        match decoded {
            Ok(object) => Some(object),
            Err(error) => {
                self.decode_failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!(%key, %error, "compact cache: stored bytes did not decode; the object is left out of this read");
                None
            }
        }
    }

    pub(super) fn stats(&self) -> CompactStats {
        CompactStats {
            encoded_objects: self.encoded_objects.load(Ordering::Relaxed),
            encoded_bytes: self.encoded_bytes.load(Ordering::Relaxed),
            hot_hits: self.hot_hits.load(Ordering::Relaxed),
            decodes: self.decodes.load(Ordering::Relaxed),
            encode_failures: self.encode_failures.load(Ordering::Relaxed),
            decode_failures: self.decode_failures.load(Ordering::Relaxed),
        }
    }
}

fn frame(tag: u8, length: u32, block: &[u8]) -> Arc<[u8]> {
    let mut bytes = Vec::with_capacity(HEADER + block.len());
    bytes.push(tag);
    bytes.extend_from_slice(&length.to_le_bytes());
    bytes.extend_from_slice(block);
    bytes.into()
}

/// A scratch buffer kept up to this size per reading thread.
const SCRATCH_KEPT: usize = 256 * 1024;

thread_local! {
    /// Each reading thread decompresses into its own buffer: a fresh one
    /// per read would be a large allocation, which makes glibc's malloc
    /// consolidate its free lists on every decode (measured: a cold `get`
    /// of a Pod ≈ 10 µs slower).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Decompresses `bytes` and hands the encoding to `f`.
fn unframe<T>(
    bytes: &[u8],
    dictionary: Option<&[u8]>,
    f: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Result<T, String> {
    let (&tag, rest) = bytes.split_first().ok_or("empty")?;
    let (length, block) = rest.split_at_checked(4).ok_or("no length")?;
    let length = u32::from_le_bytes(length.try_into().map_err(|_| "no length")?) as usize;
    let dictionary = match (tag, dictionary) {
        (PLAIN, _) => &[][..],
        (WITH_DICTIONARY, Some(dictionary)) => dictionary,
        (WITH_DICTIONARY, None) => return Err("encoded with a dictionary the store lacks".into()),
        (other, _) => return Err(format!("unknown tag {other}")),
    };
    SCRATCH.with(|scratch| {
        // A reentrant read (a decode that reads the store) gets a buffer
        // of its own.
        let mut own = Vec::new();
        let mut borrowed = scratch.try_borrow_mut();
        let buffer = match &mut borrowed {
            Ok(buffer) => &mut **buffer,
            Err(_) => &mut own,
        };
        buffer.clear();
        buffer.resize(length, 0);
        let result = lz4_flex::block::decompress_into_with_dict(block, buffer, dictionary)
            .map_err(|e| e.to_string())
            .and_then(|written| {
                if written == length {
                    f(&buffer[..written])
                } else {
                    Err(format!("{written} bytes where {length} were stored"))
                }
            });
        if buffer.capacity() > SCRATCH_KEPT {
            *buffer = Vec::new();
        }
        result
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn cm(name: &str, value: &str) -> Arc<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.name = Some(name.into());
        cm.data = Some([("k".to_string(), value.to_string())].into());
        Arc::new(cm)
    }

    #[test]
    fn cm1_objects_decode_equal_before_and_after_the_dictionary() {
        let compact = Compact::new(Codec::<ConfigMap>::msgpack(), CompactCache::default());
        let key: ObjectKey = "ns/a".parse().unwrap();
        for i in 0..DICTIONARY_OBJECTS * 2 {
            let object = cm(&format!("a{i}"), &"x".repeat(i));
            let Stored::Encoded(bytes) = compact.store(&object) else {
                panic!("a ConfigMap encodes");
            };
            let expected_tag = if i < DICTIONARY_OBJECTS {
                PLAIN
            } else {
                WITH_DICTIONARY
            };
            assert_eq!(bytes[0], expected_tag, "object {i}");
            let decoded = compact.resolve(&key, bytes, false).unwrap();
            assert_eq!(*decoded, *object);
        }
        assert_eq!(
            compact.stats().encoded_objects,
            (DICTIONARY_OBJECTS * 2) as u64
        );
    }

    /// Encodes `object` past the dictionary's objects and decodes it back.
    fn round_trip<K>(object: K) -> K
    where
        K: Serialize + DeserializeOwned + Clone,
    {
        let compact = Compact::new(Codec::<K>::msgpack(), CompactCache::default());
        let key: ObjectKey = "ns/a".parse().unwrap();
        let object = Arc::new(object);
        for _ in 0..=DICTIONARY_OBJECTS {
            assert!(matches!(compact.store(&object), Stored::Encoded(_)));
        }
        let Stored::Encoded(bytes) = compact.store(&object) else {
            panic!("an object past the dictionary's is kept encoded");
        };
        let decoded = compact.resolve(&key, bytes, false).unwrap();
        assert_eq!(compact.stats().encode_failures, 0);
        (*decoded).clone()
    }

    #[test]
    fn cm1_kubernetes_types_with_untyped_parts_round_trip() {
        use k8s_openapi::{
            ByteString,
            api::core::v1::{Secret, Service, ServicePort, ServiceSpec},
            apimachinery::pkg::{
                apis::meta::v1::{FieldsV1, ManagedFieldsEntry, Time},
                util::intstr::IntOrString,
            },
            jiff::Timestamp,
        };
        use kube::api::{ApiResource, DynamicObject, GroupVersionKind};

        // A custom resource: `types` and `data` are flattened, `data` an
        // untyped tree with numbers of each kind, nulls and nesting.
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
        let mut widget = DynamicObject::new("w", &resource)
            .within("ns")
            .data(serde_json::json!({
                "spec": {"replicas": 3, "ratio": 0.25, "big": u64::MAX, "neg": -7,
                         "on": true, "gone": null, "list": [1, "two", {"three": [3.5]}]},
            }));
        widget.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            fields_v1: Some(FieldsV1(serde_json::json!({"f:spec": {"f:replicas": {}}}))),
            manager: Some("kubectl".into()),
            time: Some(Time(Timestamp::from_second(1_700_000_000).unwrap())),
            ..Default::default()
        }]);
        assert_eq!(round_trip(widget.clone()), widget);

        let mut secret = Secret::default();
        secret.metadata.name = Some("s".into());
        secret.data = Some([("k".to_string(), ByteString(vec![0, 1, 2, 255]))].into());
        assert_eq!(round_trip(secret.clone()), secret);

        let service = Service {
            spec: Some(ServiceSpec {
                ports: Some(vec![
                    ServicePort {
                        port: 80,
                        target_port: Some(IntOrString::Int(8080)),
                        ..Default::default()
                    },
                    ServicePort {
                        port: 443,
                        target_port: Some(IntOrString::String("https".into())),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(round_trip(service.clone()), service);
    }

    #[test]
    fn cm6_bytes_that_do_not_decode_are_counted_not_panicked_on() {
        let compact = Compact::new(Codec::<ConfigMap>::msgpack(), CompactCache::default());
        let key: ObjectKey = "ns/a".parse().unwrap();
        for bytes in [
            &b""[..],
            b"\x00\x01",
            b"\x07\x00\x00\x00\x00",
            b"\x01\x05\x00\x00\x00abc",
            b"\x00\xff\xff\x00\x00zz",
        ] {
            assert!(compact.resolve(&key, bytes.into(), true).is_none());
        }
        // An encoding that is not a ConfigMap's.
        let not_a_cm = frame(PLAIN, 4, &lz4_flex::block::compress(b"[1]x"));
        assert!(compact.resolve(&key, not_a_cm, true).is_none());
        assert_eq!(compact.stats().decode_failures, 6);
        assert_eq!(compact.hot.lock().len(), 0);
    }

    /// A type whose encoding does not decode back.
    #[derive(Debug)]
    struct OneWay;
    impl Serialize for OneWay {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str("one way")
        }
    }
    impl<'de> serde::Deserialize<'de> for OneWay {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let n = u64::deserialize(d)?;
            Err(serde::de::Error::custom(format!("no {n}")))
        }
    }

    #[test]
    fn cm6_a_type_that_does_not_round_trip_is_kept_decoded() {
        let compact = Compact::new(Codec::<OneWay>::msgpack(), CompactCache::default());
        for _ in 0..3 {
            assert!(matches!(
                compact.store(&Arc::new(OneWay)),
                Stored::Decoded(_)
            ));
        }
        let stats = compact.stats();
        assert_eq!((stats.encoded_objects, stats.encode_failures), (0, 1));
    }
}

#[cfg(test)]
mod size {
    /// The store's Memory section: an entry holds its object in two words
    /// (the decoded `Arc`, or the encoded bytes' fat `Arc`): one word more
    /// than a bare `Arc<K>` in the default mode, 8 bytes per object.
    #[test]
    fn memory_a_stored_object_takes_two_words() {
        assert_eq!(
            std::mem::size_of::<super::Stored<k8s_openapi::api::core::v1::Pod>>(),
            16
        );
    }
}
