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
//!   equal to those written, as the default store does, for every object
//!   (CM9 says how); only pointer identity differs (CM5).
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
//!   allocation as, what was written and what notifications carried
//!   (unless the store kept the object decoded, CM6, CM9); in the default
//!   mode they are the same allocation.
//! - **CM6 Failures are counted, never panics.** An object that cannot be
//!   encoded, or whose encoding does not decode, is kept decoded (and
//!   counted in [`CompactStats::encode_failures`]); stored bytes that
//!   cannot be decoded are left out of the read's answer (a `get` finds
//!   nothing, a `list` skips them), counted in
//!   [`CompactStats::decode_failures`] and logged: a read cannot fail in
//!   the `Store` API, and an object the store cannot show is better
//!   missing than made up. If one of the first objects (those that make
//!   the dictionary) does not decode back, the store stops encoding and
//!   keeps every later object decoded: the type's serde impls do not read
//!   what they write. An update whose replaced version cannot be decoded
//!   is written; the informer reports
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
//!   (lookups, indexes) pays for encoding each new version (and checking
//!   it, CM9) and nothing for the old one. Subscribers join between two
//!   rounds of the writer, so a subscriber never misses a notification
//!   for it; one that joins later gets the store's objects as its replay
//!   (L1).
//! - **CM9 Lossless or kept whole.** Before the store keeps an object's
//!   bytes it reads them back as a read will (decompressed against the
//!   dictionary, decoded) and compares the result with the object written,
//!   by the type's `PartialEq`. An object that does not come back equal is
//!   kept decoded, as it was written, and counted in
//!   [`CompactStats::lossy_encodings`]; the objects around it are encoded
//!   as usual. See Lossless objects.
//!
//! # Lossless objects
//!
//! An encoding can decode without error to another object. k8s-openapi
//! writes a `Time` in whole seconds and a `MicroTime` in microseconds, so
//! an object whose times have finer digits comes back without them. An API
//! server's objects never have them; a source fed by hand, a transform that
//! stamps times, or a test fixture may. The loss happens in the type's
//! `Serialize`, before there are any bytes: checking that the bytes decode,
//! or that the decoded object encodes to the same bytes again, cannot see
//! it. Only the object written still holds the digits, so the check
//! compares with it, which costs one decode per write (BENCHMARKS.md has
//! the figures). Keeping such an object decoded, rather than refusing the
//! write or the type, keeps the store exact and every other object
//! compact; the counter says how many writes it concerned.
//!
//! This is why the compact cache asks for `K: PartialEq`. The types of
//! k8s-openapi and kube's `DynamicObject` have it; a custom resource
//! derives it (`#[kube(derive = "PartialEq")]` beside `#[derive(PartialEq)]`
//! on its spec and status). The check is as good as that `PartialEq`: one
//! that ignores a field lets a loss in that field through, and one under
//! which an object is not equal to itself (an `f64` field holding NaN)
//! keeps that object decoded.
//!
//! # Encoding
//!
//! MessagePack with field names, compressed with LZ4 against a dictionary,
//! is what the store keeps: of the candidates
//! `benches/compare/examples/compact_codecs.rs` measured on realistic Pods
//! (JSON and MessagePack, each alone, with LZ4, and with LZ4 and a
//! dictionary) it was the smallest, and the cheapest to write and to read;
//! figures live in BENCHMARKS.md. Written with field names, a struct is a
//! map keyed by its serde names, as in JSON, so the `Deserialize` of every
//! Kubernetes type (and of `serde_json::Value`, which `DynamicObject` and
//! managedFields hold) reads it back; every object is checked to read
//! back as itself all the same (CM9). LZ4 (`lz4_flex`, pure Rust) decompresses
//! a Pod in a small part of its decode's time; its dictionary is plain
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
    stored::Stored,
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
/// // Twice the default hot set of 256 decoded objects.
/// let cache = CompactCache::default().hot_objects(512);
/// assert_ne!(cache, CompactCache::default());
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
    /// Writes whose object was kept decoded because it could not be
    /// encoded, or its encoding did not decode (CM6).
    pub encode_failures: u64,
    /// Reads that left an object out because its bytes did not decode (CM6).
    pub decode_failures: u64,
    /// Writes whose object was kept decoded because its encoding decoded to
    /// an object not equal to it (CM9), such as one with a `Time` finer
    /// than whole seconds, which an API server never sends.
    pub lossy_encodings: u64,
}

/// How a store turns objects into bytes and back: fixed when the store is
/// made, where the object type's serde bounds are known.
pub(crate) struct Codec<K> {
    encode: fn(&K, &mut Vec<u8>) -> Result<(), rmp_serde::encode::Error>,
    decode: fn(&[u8]) -> Result<K, rmp_serde::decode::Error>,
    /// Whether a decoded object is the one written (CM9): the type's
    /// `PartialEq`, the only view of an object that does not go through
    /// its `Serialize`, which is where a loss happens.
    equal: fn(&K, &K) -> bool,
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

impl<K: Serialize + DeserializeOwned + PartialEq> Codec<K> {
    /// MessagePack with field names: a struct is written as a map keyed by
    /// its serde names, as in JSON, so every type whose `Deserialize`
    /// reads maps (all Kubernetes types do) reads it back.
    pub(crate) fn msgpack() -> Self {
        Self {
            encode: |object, out| rmp_serde::encode::write_named(out, object),
            decode: |bytes| rmp_serde::from_slice(bytes),
            equal: |decoded, written| decoded == written,
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
    hot: Mutex<HotSet<K>>,
    encoded_objects: AtomicU64,
    encoded_bytes: AtomicU64,
    hot_hits: AtomicU64,
    decodes: AtomicU64,
    encode_failures: AtomicU64,
    decode_failures: AtomicU64,
    lossy_encodings: AtomicU64,
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
            lossy_encodings: AtomicU64::new(0),
        }
    }

    /// The form `object` is stored in: encoded, or decoded when it cannot
    /// be (CM6) or would not read back equal (CM9). Called by the one
    /// writer, outside the store's lock.
    pub(super) fn store(&self, key: &ObjectKey, object: &Arc<K>) -> Stored<K> {
        match self.encode(key, object) {
            Some(bytes) => Stored::Encoded(bytes),
            None => Stored::Decoded(Arc::clone(object)),
        }
    }

    fn encode(&self, key: &ObjectKey, object: &K) -> Option<Arc<[u8]>> {
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
            tracing::error!(%key, %error, "compact cache: an object could not be encoded; it is kept decoded");
            return None;
        }
        let Ok(length) = u32::try_from(scratch.len()) else {
            self.encode_failures.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let dictionary = self.dictionary.get();
        let bytes = match dictionary {
            Some(dictionary) => {
                // The header and the block are written into one buffer, so
                // the stored bytes are its one copy.
                compressed.clear();
                compressed.push(WITH_DICTIONARY);
                compressed.extend_from_slice(&length.to_le_bytes());
                compressor.compress(scratch, dictionary, compressed);
                Arc::from(&compressed[..])
            }
            None => frame(PLAIN, length, &lz4_flex::block::compress(scratch)),
        };
        // CM9: the bytes are read back as a read will read them, and kept
        // only if that gives the object written.
        match unframe(&bytes, dictionary.map(Dictionary::bytes), |encoded| {
            (self.codec.decode)(encoded).map_err(|e| e.to_string())
        }) {
            Ok(decoded) if (self.codec.equal)(&decoded, object) => {}
            Ok(_) => {
                // A loss is a property of one object (a time with finer
                // digits than its type writes), so the store goes on
                // encoding; the counter, not the log, tells how often.
                if self.lossy_encodings.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!(%key, "compact cache: an object's encoding reads back as a different object; it is kept decoded (further ones are logged at debug level)");
                } else {
                    tracing::debug!(%key, "compact cache: an object's encoding reads back as a different object; it is kept decoded");
                }
                return None;
            }
            Err(error) => {
                self.encode_failures.fetch_add(1, Ordering::Relaxed);
                if dictionary.is_none() {
                    // One of the first objects: most likely a type whose
                    // serde impls do not read what they write, which would
                    // pay an encoding and a failed decode for every object.
                    *disabled = true;
                    tracing::error!(%key, %error, "compact cache: an object's encoding does not decode back; this store keeps objects decoded from now on");
                } else {
                    tracing::error!(%key, %error, "compact cache: an object's encoding does not decode back; it is kept decoded");
                }
                return None;
            }
        }
        if dictionary.is_none() {
            samples.extend_from_slice(scratch);
            *sampled += 1;
            if *sampled >= DICTIONARY_OBJECTS || samples.len() >= DICTIONARY_MAX {
                let dictionary = Dictionary::new(samples);
                *samples = Vec::new();
                // Only this writer sets it, under the training lock.
                let _ = self.dictionary.set(dictionary);
            }
        }
        self.encoded_objects.fetch_add(1, Ordering::Relaxed);
        self.encoded_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Some(bytes)
    }

    /// A write replaced `old` (if any) under `key` by `new` (`None`: the
    /// key was removed): the hot set keeps the key with its new version or
    /// forgets it, and returns the replaced version if it held it (CM4, CM5).
    pub(super) fn rewrite_hot(
        &self,
        key: &ObjectKey,
        old: Option<&Arc<[u8]>>,
        new: Option<(Arc<[u8]>, Arc<K>)>,
    ) -> Option<Arc<K>> {
        self.hot.lock().rewrite(key, old, new)
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
            lossy_encodings: self.lossy_encodings.load(Ordering::Relaxed),
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
            let Stored::Encoded(bytes) = compact.store(&key, &object) else {
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
        K: Serialize + DeserializeOwned + PartialEq + Clone,
    {
        let compact = Compact::new(Codec::<K>::msgpack(), CompactCache::default());
        let key: ObjectKey = "ns/a".parse().unwrap();
        let object = Arc::new(object);
        for _ in 0..=DICTIONARY_OBJECTS {
            assert!(matches!(compact.store(&key, &object), Stored::Encoded(_)));
        }
        let Stored::Encoded(bytes) = compact.store(&key, &object) else {
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
    #[derive(Debug, PartialEq)]
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
        let key: ObjectKey = "ns/a".parse().unwrap();
        for _ in 0..3 {
            assert!(matches!(
                compact.store(&key, &Arc::new(OneWay)),
                Stored::Decoded(_)
            ));
        }
        let stats = compact.stats();
        assert_eq!((stats.encoded_objects, stats.encode_failures), (0, 1));
    }

    /// A type whose `Serialize` writes `kept` and drops `dropped`, as
    /// k8s-openapi's `Time` drops sub-second digits: its encodings all
    /// decode, to an equal object only when `dropped` was 0.
    #[derive(Debug, PartialEq)]
    struct Truncating {
        kept: u32,
        dropped: u32,
    }
    impl Serialize for Truncating {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_u32(self.kept)
        }
    }
    impl<'de> serde::Deserialize<'de> for Truncating {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let kept = u32::deserialize(d)?;
            Ok(Self { kept, dropped: 0 })
        }
    }

    #[test]
    fn cm9_an_object_that_reads_back_different_is_kept_decoded_before_and_after_the_dictionary() {
        let compact = Compact::new(Codec::<Truncating>::msgpack(), CompactCache::default());
        let key: ObjectKey = "ns/a".parse().unwrap();
        let mut encoded = 0;
        for i in 0..DICTIONARY_OBJECTS as u32 * 3 {
            // Every third object loses its `dropped`.
            let object = Arc::new(Truncating {
                kept: i,
                dropped: u32::from(i % 3 == 1),
            });
            match compact.store(&key, &object) {
                Stored::Encoded(bytes) => {
                    assert_eq!(object.dropped, 0, "object {i} was encoded");
                    assert_eq!(*compact.resolve(&key, bytes, false).unwrap(), *object);
                    encoded += 1;
                }
                Stored::Decoded(kept) => {
                    assert_eq!(object.dropped, 1, "object {i} was kept decoded");
                    assert!(Arc::ptr_eq(&kept, &object), "kept as it was written");
                }
            }
        }
        assert!(
            compact.dictionary.get().is_some(),
            "lossy objects do not stop the store"
        );
        let stats = compact.stats();
        assert_eq!(
            (
                stats.encoded_objects,
                stats.lossy_encodings,
                stats.encode_failures
            ),
            (encoded, DICTIONARY_OBJECTS as u64, 0)
        );
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
