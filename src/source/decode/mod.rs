//! From JSON text to typed objects, once, with the checks of R7: an object
//! must have metadata and a name, and be of the kind the list announced.
//!
//! List pages and watch lines are first read into envelopes whose objects
//! stay unparsed text borrowed from the page or line (`&RawValue`). Each
//! object's text is then scanned once ([`scan`]): the scan counts the
//! elements of every array and tells whether the object plainly passes R7.
//! An object it cannot vouch for goes to the exact R7 probe ([`probe`]),
//! which decides every error. The object is then decoded straight into its
//! type, with every vector given exactly the capacity it needs ([`exact`]).
//! Nothing goes through `serde_json::Value`, which would build every object
//! twice (see `benches/decode.rs` for the difference). Objects are
//! independent of each other, so a page, or a burst of watch lines that
//! arrived together, is decoded on several threads when it is big enough
//! to pay for them ([`parallel`], which also says why on the runtime's
//! workers). Before a thread decodes a piece of a big batch it makes
//! room in its heap ([`headroom`]), which would otherwise grow a page at a
//! time. `benches/compare/NOTES.md` ("Decoding: the measurements behind
//! `source/decode`") has the figures behind these choices.
//!
//! Two informer options reach here through the source's `SourceSetup`, as
//! fields of [`Decoder`]. `InformerBuilder::decode_threads` caps how many
//! threads decode one batch at once (the `limit` of `parallel`'s functions;
//! 1: every batch on the thread that reads it).
//! `InformerBuilder::plain_decode` takes the plain serde path beside the
//! tuned one: the probe, then `serde_json::from_str`, with no scan, no
//! capacity hints and no `exact`.
//! The seam is one branch, in [`Decoder::object_text`]; everything around
//! it (envelopes, batches, threads, errors) is the same for both paths.

mod exact;
mod headroom;
pub(crate) mod parallel;
mod probe;
mod scan;

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::error::{DecodeTarget, Error};
use crate::protobuf::KindSchema;

/// Decodes the objects of one collection.
#[derive(Debug, Default, Clone)]
pub(crate) struct Decoder {
    /// Learned from the `kind` of list answers (`ConfigMapList` → `ConfigMap`).
    /// Typed k8s-openapi objects also refuse a wrong kind while decoding,
    /// but `DynamicObject`s do not.
    expected_kind: Option<String>,
    /// Set once an object of this collection's type was decoded with its
    /// array counts out of step (`exact`): later objects are decoded
    /// without capacity hints. Shared by the clones that decode in parallel.
    no_hints: Arc<AtomicBool>,
    /// Leave `metadata.managedFields` out (`exact` says how). The tuned
    /// path only: the plain one decodes them, and whoever asked for both
    /// clears them after (the informer's FIFO does).
    skip_managed_fields: bool,
    /// Decode with plain `serde_json::from_str` after the probe: no scan,
    /// no `exact` (`InformerBuilder::plain_decode`).
    plain: bool,
    /// At most this many threads decode a batch at once (`parallel`);
    /// `None`: one per core, up to four (`InformerBuilder::decode_threads`).
    max_threads: Option<usize>,
    /// The kind's protobuf schema, when protobuf was asked for: what
    /// protobuf answers are decoded by.
    protobuf: Option<KindSchema>,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Decodes objects without their `metadata.managedFields` (on the
    /// tuned path; see [`Decoder::plain`]).
    pub(crate) fn skip_managed_fields(mut self, skip: bool) -> Self {
        self.skip_managed_fields = skip;
        self
    }

    /// Decodes each object with plain `serde_json::from_str` after the R7
    /// probe, if `plain`; managedFields are then decoded whatever
    /// [`Decoder::skip_managed_fields`] says.
    pub(crate) fn plain(mut self, plain: bool) -> Self {
        self.plain = plain;
        self
    }

    /// Decodes a batch on at most `threads` threads at once (`None`: one
    /// per core, up to four; 0 or 1: every batch on the calling thread).
    pub(crate) fn max_threads(mut self, threads: Option<usize>) -> Self {
        self.max_threads = threads;
        self
    }

    /// Decodes protobuf answers by `schema`.
    pub(crate) fn protobuf(mut self, schema: Option<KindSchema>) -> Self {
        self.protobuf = schema;
        self
    }

    /// The schema protobuf answers are decoded by; an error when protobuf
    /// came unasked, as `what`'s decode error.
    pub(crate) fn schema(&self, what: DecodeTarget) -> Result<KindSchema, Error> {
        self.protobuf.ok_or_else(|| {
            protobuf_error(
                crate::protobuf::Error::Custom("protobuf that was not asked for".into()),
                what,
            )
        })
    }

    /// One object's protobuf message (a list item), checked as R7 says
    /// (metadata, a name; the list's kind was checked with the list).
    pub(crate) fn protobuf_object<T: DeserializeOwned + 'static>(
        &self,
        raw: &[u8],
        what: DecodeTarget,
    ) -> Result<T, Error> {
        self.schema(what)?
            .object(raw)
            .map_err(|error| protobuf_error(error, what))
    }

    /// The `limit` to hand `parallel`'s functions.
    pub(crate) fn thread_limit(&self) -> usize {
        self.max_threads.unwrap_or(usize::MAX)
    }

    /// Remembers the item kind of a list answer.
    pub(crate) fn learn_list_kind(&mut self, list_kind: Option<&str>) {
        if let Some(kind) = list_kind
            .and_then(|k| k.strip_suffix("List"))
            .filter(|k| !k.is_empty())
        {
            self.expected_kind = Some(kind.to_owned());
        }
    }

    /// Checks and decodes one object; `what` names it in decode errors
    /// (`list item`, `watch object`).
    pub(crate) fn object<T: DeserializeOwned>(
        &self,
        object: &RawValue,
        what: DecodeTarget,
    ) -> Result<T, Error> {
        self.object_text(object.get(), what)
    }

    /// [`Decoder::object`] on an object's text, cut from a page whose JSON
    /// was already checked.
    ///
    /// The seam between the two paths: the tuned one (scan, probe if
    /// needed, `exact`) unless this decoder was asked for the plain one.
    pub(crate) fn object_text<T: DeserializeOwned>(
        &self,
        text: &str,
        what: DecodeTarget,
    ) -> Result<T, Error> {
        if self.plain {
            self.plain_text(text, what)
        } else {
            self.tuned_text(text, what)
        }
    }

    /// The plain path: the probe decides R7, then `serde_json::from_str`.
    /// Same objects and same errors as the tuned path, which is faster
    /// (`benches/compare/NOTES.md`, "The tuned decoder against plain
    /// serde"); here to rule it out, and to compare with it.
    fn plain_text<T: DeserializeOwned>(&self, text: &str, what: DecodeTarget) -> Result<T, Error> {
        probe::check(text, self.expected_kind.as_deref())?;
        serde_json::from_str(text).map_err(|source| Error::Decode { what, source })
    }

    /// The tuned path: the scan vouches for R7 or calls the probe, and its
    /// array counts size every vector (`exact`).
    fn tuned_text<T: DeserializeOwned>(&self, text: &str, what: DecodeTarget) -> Result<T, Error> {
        let expected_kind = self.expected_kind.as_deref();
        let scan = scan::scan(text, expected_kind);
        let passes = scan.r7 == scan::R7::Passes;
        if !passes {
            probe::check(text, expected_kind)?;
        }
        let hints = !self.no_hints.load(Ordering::Relaxed);
        let decoded = if hints || self.skip_managed_fields {
            self.through_wrapper(text, scan.lengths, hints)
        } else {
            serde_json::from_str(text)
        };
        decoded.map_err(|source| {
            // The scan does not validate JSON: text it passed that fails to
            // decode gets the probe's verdict first, as it would without it.
            match passes.then(|| probe::check(text, expected_kind)) {
                Some(Err(error)) => error,
                _ => Error::Decode { what, source },
            }
        })
    }

    /// `serde_json::from_str` through `exact`'s wrapper: every vector
    /// given the capacity its array needs (with `hints`), managedFields left
    /// out if asked.
    fn through_wrapper<T: DeserializeOwned>(
        &self,
        text: &str,
        lengths: Vec<u32>,
        hints: bool,
    ) -> serde_json::Result<T> {
        let guide = exact::Guide::new(lengths, hints, self.skip_managed_fields);
        let mut json = serde_json::Deserializer::from_str(text);
        let value = T::deserialize(exact::Hinted::new(&mut json, &guide))?;
        json.end()?;
        if hints && !guide.stayed_in_step() {
            self.no_hints.store(true, Ordering::Relaxed);
        }
        Ok(value)
    }
}

/// A protobuf decoding error as the source reports the JSON one for the
/// same fault: R7's errors by their own variants, an unknown event type
/// as such, anything else as a decode error of `what`.
pub(crate) fn protobuf_error(error: crate::protobuf::Error, what: DecodeTarget) -> Error {
    use crate::protobuf::Error as Pb;
    match error {
        Pb::NoMetadata => Error::MissingMetadata,
        Pb::NoName => Error::MissingName,
        Pb::KindMismatch {
            kind, found_kind, ..
        } => Error::WrongKind {
            expected: kind.to_owned(),
            found: found_kind,
        },
        Pb::UnknownEventType(event_type) => Error::UnknownEventType(event_type),
        other => Error::Decode {
            what,
            source: serde::de::Error::custom(format_args!("protobuf: {other}")),
        },
    }
}

/// The R7 checks alone, for the decode benchmark.
pub(crate) fn probe_only(object: &str, kind: Option<&str>) -> Result<(), Error> {
    probe::check(object, kind)
}

/// The pass before a typed decode alone, for the decode benchmark: how
/// many arrays it counted.
pub(crate) fn scan_only(object: &str, kind: Option<&str>) -> usize {
    scan::scan(object, kind).lengths.len()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::core::{DynamicObject, PartialObjectMeta};

    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    /// On either path.
    #[test]
    fn r7_checks_metadata_name_and_kind() {
        for plain in [false, true] {
            r7_checks_on(Decoder::new().plain(plain));
        }
    }

    fn r7_checks_on(mut d: Decoder) {
        d.learn_list_kind(Some("ConfigMapList"));
        let decode = |text: &str| d.object::<ConfigMap>(&raw(text), DecodeTarget::ListItem);
        assert!(matches!(
            decode(r#"{"kind": "ConfigMap"}"#),
            Err(Error::MissingMetadata)
        ));
        assert!(matches!(
            decode(r#"{"metadata": {}}"#),
            Err(Error::MissingName)
        ));
        assert!(matches!(
            decode(r#"{"kind": "Secret", "metadata": {"name": "a"}}"#),
            Err(Error::WrongKind { .. })
        ));
        assert!(matches!(
            decode(r#"{"metadata": {"name": "a"}, "data": 3}"#),
            Err(Error::Decode {
                what: DecodeTarget::ListItem,
                ..
            })
        ));
        let cm = decode(r#"{"metadata": {"name": "a"}}"#).unwrap();
        assert_eq!(cm.metadata.name.as_deref(), Some("a"));
    }

    /// An informer that strips managedFields has them left out while
    /// decoding; one that does not keeps them.
    #[test]
    fn managed_fields_are_skipped_only_when_asked() {
        let item = raw(
            r#"{"metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}}]},"data":{"k":"v"}}"#,
        );
        let kept: ConfigMap = Decoder::new()
            .object(&item, DecodeTarget::ListItem)
            .unwrap();
        assert_eq!(kept.metadata.managed_fields.map(|m| m.len()), Some(1));
        let stripped: ConfigMap = Decoder::new()
            .skip_managed_fields(true)
            .object(&item, DecodeTarget::ListItem)
            .unwrap();
        assert!(stripped.metadata.managed_fields.is_none());
        assert_eq!(stripped.data.unwrap()["k"], "v");
        // The plain path decodes them whatever: its user clears them.
        let plain: ConfigMap = Decoder::new()
            .skip_managed_fields(true)
            .plain(true)
            .object(&item, DecodeTarget::ListItem)
            .unwrap();
        assert_eq!(plain.metadata.managed_fields.map(|m| m.len()), Some(1));
    }

    /// R7: objects that do not check their own kind while decoding are
    /// checked against the list's kind all the same.
    #[test]
    fn r7_dynamic_and_metadata_objects_are_checked_too() {
        let mut d = Decoder::new();
        d.learn_list_kind(Some("WidgetList"));
        let widget = raw(
            r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3}}"#,
        );
        let object: DynamicObject = d.object(&widget, DecodeTarget::ListItem).unwrap();
        assert_eq!(object.data["spec"]["size"], 3);
        let stranger =
            raw(r#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g"}}"#);
        assert!(matches!(
            d.object::<DynamicObject>(&stranger, DecodeTarget::ListItem),
            Err(Error::WrongKind { .. })
        ));
        assert!(matches!(
            d.object::<DynamicObject>(&raw(r#"{"kind":"Widget"}"#), DecodeTarget::ListItem),
            Err(Error::MissingMetadata)
        ));

        let mut m = Decoder::new();
        m.learn_list_kind(Some("PartialObjectMetadataList"));
        let meta = raw(
            r#"{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"a","labels":{"x":"y"}}}"#,
        );
        let object: PartialObjectMeta<ConfigMap> = m.object(&meta, DecodeTarget::ListItem).unwrap();
        assert_eq!(object.metadata.labels.unwrap()["x"], "y");
    }
}
