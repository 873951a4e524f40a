//! Where a cached Pod's heap goes: every live allocation of the wire
//! table's Pods, decoded as the informer's source decodes them and held in an
//! `Arc` as its store holds them, sorted by what it is and which part of the
//! Pod it belongs to.
//!
//! ```sh
//! cargo run --release -p kube-informer-compare --example pod_heap -- [PODS]
//! ```
//!
//! A recording allocator logs every allocation and free while the Pods are
//! decoded (glibc's malloc underneath). Walking each decoded Pod through its
//! own `Serialize` implementation then names the allocations: a string's
//! bytes start where the `&str` it serializes starts; a vector's buffer holds
//! the elements it serializes; a map's node holds the keys it serializes;
//! the `Arc` holds the `Pod` struct itself. Each allocation costs what malloc
//! hands out for it (`malloc_usable_size`) plus malloc's 8-byte header: the
//! difference from the bytes asked for is the allocator's overhead.
//!
//! Printed per Pod (averaged over PODS distinct Pods, default 2,000), for
//! the source's decoder (exact capacities), for a plain decode into kube's
//! `WatchEvent<Pod>` (what kube-runtime's watcher does) and for a
//! projection (`kube_informer::projection!`: metadata, `spec.nodeName`,
//! `status.phase`) decoded by the source, each with managedFields kept and
//! stripped:
//! - by kind of allocation: count, bytes asked for, bytes with the
//!   allocator's overhead, and inside them what is unused (vector slack,
//!   empty slots of map nodes);
//! - by part of the Pod (metadata, managedFields, spec, status);
//! - the inline structs: how many of each type a Pod holds, its size, and
//!   how much of that size is taken by fields the Pod does not set.
//!
//! The totals are live heap, not RSS: the RSS per cached Pod in
//! BENCHMARKS.md also holds what the allocator keeps free (NOTES.md,
//! "Where a cached Pod's bytes go", sets the two side by side).
use std::{
    alloc::{GlobalAlloc, Layout, System},
    collections::{BTreeMap, HashMap},
    fmt,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use k8s_openapi::api::core::v1::Pod;
use kube_informer::unstable::decode;
use kube_informer_compare::wire::pods::pod;
use serde::ser::{self, Serialize};

// ---- the recording allocator -------------------------------------------------

#[derive(Clone, Copy)]
enum Op {
    Alloc { ptr: usize, size: usize },
    Free { ptr: usize },
}

static RECORDING: AtomicBool = AtomicBool::new(false);
/// Reserved before recording starts, so pushing never allocates.
static LOG: Mutex<Vec<Op>> = Mutex::new(Vec::new());

fn record(op: Op) {
    if RECORDING.load(Ordering::Relaxed) {
        let mut log = LOG.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() < log.capacity() {
            log.push(op);
        } else {
            // A full log would allocate: stop, and say so at the end.
            RECORDING.store(false, Ordering::Relaxed);
        }
    }
}

struct Recording;

// SAFETY: every call is forwarded to System unchanged; the log only notes
// addresses and sizes, in memory reserved before recording began.
unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            record(Op::Alloc {
                ptr: ptr as usize,
                size: layout.size(),
            });
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        record(Op::Free { ptr: ptr as usize });
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            record(Op::Free { ptr: ptr as usize });
            record(Op::Alloc {
                ptr: new as usize,
                size: new_size,
            });
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Recording = Recording;

/// Runs `make` with the allocator recording; the allocations still live
/// when it returns (address → bytes asked for).
fn live_allocations<T>(make: impl FnOnce() -> T) -> (T, BTreeMap<usize, usize>) {
    {
        let mut log = LOG.lock().unwrap();
        log.clear();
        log.reserve(20_000_000);
    }
    RECORDING.store(true, Ordering::SeqCst);
    let made = make();
    let complete = RECORDING.swap(false, Ordering::SeqCst);
    assert!(complete, "the allocation log filled up: use fewer Pods");
    let log = std::mem::take(&mut *LOG.lock().unwrap());
    let mut live = BTreeMap::new();
    for op in log {
        match op {
            Op::Alloc { ptr, size } => {
                live.insert(ptr, size);
            }
            Op::Free { ptr } => {
                live.remove(&ptr);
            }
        }
    }
    (made, live)
}

/// What malloc hands out for the block at `ptr`, header included.
fn chunk(ptr: usize) -> usize {
    // SAFETY: `ptr` came from System (malloc) and is still allocated (the
    // Pods holding it are alive while this is called).
    unsafe { libc::malloc_usable_size(ptr as *mut libc::c_void) + 8 }
}

// ---- naming the allocations ---------------------------------------------------

/// What an allocation holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    /// The `Arc` around the Pod: its counts and the Pod struct inline.
    Object,
    /// A string's bytes.
    String,
    /// A vector's buffer of elements (structs inline).
    Vector,
    /// A B-tree node of a map (labels, annotations, resources, and the maps
    /// of managedFields' `fieldsV1` JSON).
    MapNode,
    /// None of the above (nothing of the Pod points at it).
    Other,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Object => "the Arc (counts and the struct inline)",
            Kind::String => "string bytes",
            Kind::Vector => "vector buffers",
            Kind::MapNode => "map nodes",
            Kind::Other => "unattributed",
        })
    }
}

/// The part of the Pod an allocation belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Part {
    Object,
    Metadata,
    ManagedFields,
    Spec,
    Status,
    /// Nothing of the Pod was found pointing at it.
    Unknown,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Object => "the object struct",
            Part::Metadata => "metadata (without managedFields)",
            Part::ManagedFields => "metadata.managedFields",
            Part::Spec => "spec",
            Part::Status => "status",
            Part::Unknown => "unattributed",
        })
    }
}

/// One allocation once named.
#[derive(Debug, Clone, Copy)]
struct Named {
    kind: Kind,
    part: Part,
    /// Bytes in use: a vector's elements, a map node's entries.
    used: usize,
}

/// Inline structs met while walking: (instances, bytes of the fields set).
#[derive(Debug, Default, Clone, Copy)]
struct StructTally {
    instances: usize,
    fields_set_bytes: usize,
}

/// Walks a Pod through its `Serialize` implementation and names the
/// allocations its references point into.
struct Walker<'a> {
    live: &'a BTreeMap<usize, usize>,
    named: &'a mut HashMap<usize, Named>,
    structs: &'a mut BTreeMap<&'static str, StructTally>,
    /// Text of every string allocation → (copies, malloc chunk bytes of
    /// all copies, of the smallest). Copies of one text can differ in chunk
    /// size: malloc may hand out a free chunk a little larger than asked.
    texts: &'a mut HashMap<String, (usize, usize, usize)>,
    part: Part,
    /// The structs being walked, innermost last: `[Pod]` at the Pod's own
    /// fields.
    stack: Vec<&'static str>,
    /// The allocation a field's inline bytes point at (a vector's buffer,
    /// a map's root node), for the sequence or map that serializes next.
    pending: Option<usize>,
    /// The sequences and maps being walked, innermost last.
    frames: Vec<Frame>,
}

/// A sequence or map being walked.
#[derive(Debug, Default)]
struct Frame {
    /// Its buffer or root node, when found.
    buffer: Option<usize>,
    elements: usize,
    /// Inline size of one element, learnt from the first.
    element_size: Option<usize>,
    /// Whether the frame is a map.
    map: bool,
}

impl Walker<'_> {
    /// The live allocation that holds address `addr`.
    fn containing(&self, addr: usize) -> Option<(usize, usize)> {
        let (&start, &size) = self.live.range(..=addr).next_back()?;
        (addr < start + size.max(1)).then_some((start, size))
    }

    fn name(&mut self, start: usize, kind: Kind, used: usize) {
        let part = self.part;
        let named = self.named.entry(start).or_insert(Named {
            kind,
            part,
            used: 0,
        });
        if named.kind == kind {
            named.used += used;
        }
    }

    /// Names the map node holding `value` (serde_json's maps hand out
    /// references into their nodes; typed maps hand out references to
    /// references, which point at the stack and match nothing).
    fn entry_part<T: ?Sized>(&mut self, value: &T) {
        let addr = value as *const T as *const () as usize;
        if let Some((start, _)) = self.containing(addr) {
            self.name(start, Kind::MapNode, std::mem::size_of_val(value));
        }
    }

    /// The first word of `value`'s inline bytes that is the start of a live
    /// allocation nobody named yet: where a `Vec` or `BTreeMap` keeps its
    /// elements.
    fn points_at<T: ?Sized>(&self, value: &T) -> Option<usize> {
        let bytes = std::mem::size_of_val(value);
        let base = value as *const T as *const u8;
        (0..bytes / 8).find_map(|i| {
            // SAFETY: reads `value`'s own initialised bytes, word by word,
            // unaligned; the word is only compared, never dereferenced.
            let word = unsafe { (base.add(i * 8) as *const usize).read_unaligned() };
            (self.live.contains_key(&word) && !self.named.contains_key(&word)).then_some(word)
        })
    }

    /// The size of the element that starts serializing now, if it is the
    /// first of the innermost sequence.
    fn element_is(&mut self, size: usize) {
        if let Some(frame) = self.frames.last_mut()
            && !frame.map
            && frame.element_size.is_none()
        {
            frame.element_size = Some(size);
        }
    }

    /// A value other than a sequence or map serializes: what the last field
    /// pointed at is not a buffer.
    fn scalar(&mut self, size: usize) {
        self.pending = None;
        self.element_is(size);
    }

    fn open(&mut self, map: bool) {
        let buffer = self.pending.take();
        self.element_is(24);
        self.frames.push(Frame {
            buffer,
            map,
            ..Frame::default()
        });
    }

    fn close(&mut self) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        let Some(buffer) = frame.buffer else {
            return;
        };
        if self.named.contains_key(&buffer) {
            return;
        }
        if frame.map {
            // A typed map's root node: String keys and String-sized values
            // (labels, annotations, Quantity), 48 bytes an entry. A map of
            // more than 11 entries has more nodes, found by nothing.
            self.name(buffer, Kind::MapNode, frame.elements * 48);
        } else {
            let size = frame.element_size.unwrap_or(0);
            self.name(buffer, Kind::Vector, frame.elements * size);
        }
    }
}

#[derive(Debug)]
struct Never;

impl fmt::Display for Never {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("never")
    }
}

impl std::error::Error for Never {}

impl ser::Error for Never {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Never
    }
}

type R = Result<(), Never>;

impl ser::Serializer for &mut Walker<'_> {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, _: bool) -> R {
        self.scalar(1);
        Ok(())
    }
    fn serialize_i8(self, _: i8) -> R {
        self.scalar(1);
        Ok(())
    }
    fn serialize_i16(self, _: i16) -> R {
        self.scalar(2);
        Ok(())
    }
    fn serialize_i32(self, _: i32) -> R {
        self.scalar(4);
        Ok(())
    }
    fn serialize_i64(self, _: i64) -> R {
        self.scalar(8);
        Ok(())
    }
    fn serialize_u8(self, _: u8) -> R {
        self.scalar(1);
        Ok(())
    }
    fn serialize_u16(self, _: u16) -> R {
        self.scalar(2);
        Ok(())
    }
    fn serialize_u32(self, _: u32) -> R {
        self.scalar(4);
        Ok(())
    }
    fn serialize_u64(self, _: u64) -> R {
        self.scalar(8);
        Ok(())
    }
    fn serialize_f32(self, _: f32) -> R {
        self.scalar(4);
        Ok(())
    }
    fn serialize_f64(self, _: f64) -> R {
        self.scalar(8);
        Ok(())
    }
    fn serialize_char(self, _: char) -> R {
        self.scalar(4);
        Ok(())
    }
    fn serialize_str(self, v: &str) -> R {
        self.scalar(24);
        // Strings made only to be serialized (a timestamp's text) start
        // in no live allocation of the Pod's and are skipped.
        let start = v.as_ptr() as usize;
        if !v.is_empty() && self.live.contains_key(&start) && !self.named.contains_key(&start) {
            self.name(start, Kind::String, v.len());
            let bytes = chunk(start);
            let copies = self.texts.entry(v.to_owned()).or_insert((0, 0, bytes));
            copies.0 += 1;
            copies.1 += bytes;
            copies.2 = copies.2.min(bytes);
        }
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> R {
        self.scalar(24);
        Ok(())
    }
    fn serialize_none(self) -> R {
        self.scalar(0);
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> R {
        value.serialize(self)
    }
    fn serialize_unit(self) -> R {
        self.scalar(0);
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        self.scalar(0);
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> R {
        self.scalar(0);
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, value: &T) -> R {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        value: &T,
    ) -> R {
        value.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Never> {
        self.open(false);
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Never> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Never> {
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, Never> {
        self.open(true);
        Ok(self)
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Self, Never> {
        self.pending = None;
        if let Some(size) = inline_size(name) {
            self.element_is(size);
        }
        self.structs.entry(name).or_default().instances += 1;
        self.stack.push(name);
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Never> {
        Ok(self)
    }
}

impl ser::SerializeSeq for &mut Walker<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        if let Some(frame) = self.frames.last_mut() {
            frame.elements += 1;
        }
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        self.close();
        Ok(())
    }
}

impl ser::SerializeTuple for &mut Walker<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for &mut Walker<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for &mut Walker<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl ser::SerializeMap for &mut Walker<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> R {
        if let Some(frame) = self.frames.last_mut() {
            frame.elements += 1;
        }
        self.entry_part(key);
        key.serialize(&mut **self)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        self.entry_part(value);
        self.pending = self.points_at(value);
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        self.close();
        Ok(())
    }
}

impl ser::SerializeStruct for &mut Walker<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> R {
        let outer = self.part;
        match (self.stack.len(), key) {
            (1, "metadata") => self.part = Part::Metadata,
            (1, "spec") => self.part = Part::Spec,
            (1, "status") => self.part = Part::Status,
            (2, "managedFields") if outer == Part::Metadata => self.part = Part::ManagedFields,
            _ => {}
        }
        // The field's inline size as set (an `Option`'s value unwrapped:
        // the same size for strings, vectors and structs, which have a
        // niche; a few bytes less for numbers and booleans).
        let constant = self.stack.len() == 1 && matches!(key, "apiVersion" | "kind");
        if let Some(name) = self.stack.last()
            && !constant
        {
            self.structs.entry(name).or_default().fields_set_bytes += std::mem::size_of_val(value);
        }
        self.pending = self.points_at(value);
        value.serialize(&mut **self)?;
        self.part = outer;
        Ok(())
    }
    fn end(self) -> R {
        self.stack.pop();
        Ok(())
    }
}

impl ser::SerializeStructVariant for &mut Walker<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, _: &'static str, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        Ok(())
    }
}

// ---- a projection ----------------------------------------------------------------

/// What a node-aware controller reads of a Pod (`kube_informer::projection!`).
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
struct SlimPod {
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<SlimSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<SlimStatus>,
}

#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SlimSpec {
    node_name: Option<String>,
}

#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
struct SlimStatus {
    phase: Option<String>,
}

kube_informer::projection!(SlimPod, Pod);

// ---- the inline structs --------------------------------------------------------

/// `size_of` of the k8s-openapi types a wire Pod holds, by the name their
/// `Serialize` gives.
fn inline_size(name: &str) -> Option<usize> {
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
    use std::mem::size_of;
    Some(match name {
        "Pod" => size_of::<Pod>(),
        "SlimPod" => size_of::<SlimPod>(),
        "SlimSpec" => size_of::<SlimSpec>(),
        "SlimStatus" => size_of::<SlimStatus>(),
        "ObjectMeta" => size_of::<meta::ObjectMeta>(),
        "ManagedFieldsEntry" => size_of::<meta::ManagedFieldsEntry>(),
        "OwnerReference" => size_of::<meta::OwnerReference>(),
        "PodSpec" => size_of::<core::PodSpec>(),
        "Container" => size_of::<core::Container>(),
        "ContainerPort" => size_of::<core::ContainerPort>(),
        "EnvVar" => size_of::<core::EnvVar>(),
        "ResourceRequirements" => size_of::<core::ResourceRequirements>(),
        "VolumeMount" => size_of::<core::VolumeMount>(),
        "Volume" => size_of::<core::Volume>(),
        "ProjectedVolumeSource" => size_of::<core::ProjectedVolumeSource>(),
        "VolumeProjection" => size_of::<core::VolumeProjection>(),
        "ServiceAccountTokenProjection" => size_of::<core::ServiceAccountTokenProjection>(),
        "ConfigMapProjection" => size_of::<core::ConfigMapProjection>(),
        "KeyToPath" => size_of::<core::KeyToPath>(),
        "DownwardAPIProjection" => size_of::<core::DownwardAPIProjection>(),
        "DownwardAPIVolumeFile" => size_of::<core::DownwardAPIVolumeFile>(),
        "ObjectFieldSelector" => size_of::<core::ObjectFieldSelector>(),
        "Toleration" => size_of::<core::Toleration>(),
        "PodStatus" => size_of::<core::PodStatus>(),
        "PodCondition" => size_of::<core::PodCondition>(),
        "ContainerStatus" => size_of::<core::ContainerStatus>(),
        "ContainerState" => size_of::<core::ContainerState>(),
        "ContainerStateRunning" => size_of::<core::ContainerStateRunning>(),
        _ => return None,
    })
}

// ---- one measurement -------------------------------------------------------------

/// How the Pods are decoded and kept.
#[derive(Debug, Clone, Copy)]
struct Mode {
    decoder: &'static str,
    strip_managed_fields: bool,
}

/// Totals over all Pods of one mode.
#[derive(Debug, Default)]
struct Totals {
    /// (allocations, bytes asked for, bytes with overhead, bytes unused).
    by_kind: BTreeMap<Kind, (usize, usize, usize, usize)>,
    /// Bytes with overhead.
    by_part: BTreeMap<Part, usize>,
    structs: BTreeMap<&'static str, StructTally>,
    /// String bytes (with overhead) whose text is held more than once: all
    /// copies, and all but one of each text.
    repeated_strings: (usize, usize),
}

fn measure(mode: Mode, lines: &[Vec<u8>]) -> Totals {
    if mode.decoder == "projection" {
        return measure_objects(lines, |line| {
            let mut pod: SlimPod = decode::watch_line(line, Some("PodList"))
                .expect("the wire Pods decode")
                .expect("a MODIFIED line carries an object");
            if mode.strip_managed_fields {
                pod.metadata.managed_fields = None;
            }
            pod
        });
    }
    measure_objects(lines, |line| {
        let mut pod: Pod = match mode.decoder {
            "source" => decode::watch_line(line, Some("PodList"))
                .expect("the wire Pods decode")
                .expect("a MODIFIED line carries an object"),
            _ => {
                let event: kube::core::WatchEvent<Pod> =
                    serde_json::from_slice(line).expect("the wire Pods decode");
                match event {
                    kube::core::WatchEvent::Modified(pod) => pod,
                    _ => unreachable!("every line is MODIFIED"),
                }
            }
        };
        if mode.strip_managed_fields {
            pod.metadata.managed_fields = None;
        }
        pod
    })
}

/// Decodes every line with `decode`, holds each object in an `Arc`, and
/// names the allocations still live.
fn measure_objects<T: Serialize>(lines: &[Vec<u8>], decode: impl Fn(&[u8]) -> T) -> Totals {
    let mut held: Vec<Arc<T>> = Vec::with_capacity(lines.len());
    let ((), live) = live_allocations(|| {
        for line in lines {
            held.push(Arc::new(decode(line)));
        }
    });

    let mut named = HashMap::new();
    let mut texts = HashMap::new();
    let mut totals = Totals::default();
    for pod in &held {
        // The Arc's allocation holds the Pod: name it first.
        let at = Arc::as_ptr(pod) as usize;
        let mut walker = Walker {
            live: &live,
            named: &mut named,
            structs: &mut totals.structs,
            texts: &mut texts,
            part: Part::Object,
            stack: Vec::new(),
            pending: None,
            frames: Vec::new(),
        };
        if let Some((start, _)) = walker.containing(at) {
            walker.name(start, Kind::Object, std::mem::size_of::<T>());
        }
        let _ = pod.serialize(&mut walker);
    }
    for (&ptr, &asked) in &live {
        let Named { kind, part, used } = named.get(&ptr).copied().unwrap_or(Named {
            kind: Kind::Other,
            part: Part::Unknown,
            used: asked,
        });
        let with_overhead = chunk(ptr);
        let entry = totals.by_kind.entry(kind).or_default();
        entry.0 += 1;
        entry.1 += asked;
        entry.2 += with_overhead;
        entry.3 += asked.saturating_sub(used);
        *totals.by_part.entry(part).or_default() += with_overhead;
    }
    drop(held);
    for &(copies, bytes, smallest) in texts.values() {
        if copies > 1 {
            totals.repeated_strings.0 += bytes;
            totals.repeated_strings.1 += bytes - smallest;
        }
    }
    totals
}

fn per_pod(bytes: usize, pods: usize) -> String {
    format!("{:.0}", bytes as f64 / pods as f64)
}

fn print(mode: Mode, totals: &Totals, pods: usize) {
    let all: (usize, usize, usize, usize) = totals.by_kind.values().fold((0, 0, 0, 0), |a, b| {
        (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3)
    });
    println!(
        "\n### decoder: {}, managedFields {}\n",
        mode.decoder,
        if mode.strip_managed_fields {
            "stripped"
        } else {
            "kept"
        }
    );
    println!(
        "live heap per Pod: {} B with malloc's overhead, {} B asked for, {:.1} allocations",
        per_pod(all.2, pods),
        per_pod(all.1, pods),
        all.0 as f64 / pods as f64
    );
    println!("\n| allocation | per Pod | B asked | B with overhead | of which unused |");
    println!("|---|---:|---:|---:|---:|");
    for (kind, (count, asked, with, unused)) in &totals.by_kind {
        println!(
            "| {kind} | {:.1} | {} | {} | {} |",
            *count as f64 / pods as f64,
            per_pod(*asked, pods),
            per_pod(*with, pods),
            per_pod(*unused, pods)
        );
    }
    println!(
        "| malloc's overhead (header and rounding) | | | {} | |",
        per_pod(all.2 - all.1, pods)
    );
    println!(
        "\nstrings whose text is held more than once (in this Pod or another): {} B per Pod \
         with overhead; one copy of each text would save {} B per Pod",
        per_pod(totals.repeated_strings.0, pods),
        per_pod(totals.repeated_strings.1, pods)
    );
    println!("\n| part of the Pod | B with overhead per Pod |");
    println!("|---|---:|");
    for (part, bytes) in &totals.by_part {
        println!("| {part} | {} |", per_pod(*bytes, pods));
    }
    println!(
        "\n| inline struct | per Pod | size (B) | B of fields set | B of fields not set, per Pod |"
    );
    println!("|---|---:|---:|---:|---:|");
    let mut unset_total = 0;
    for (name, tally) in &totals.structs {
        let Some(size) = inline_size(name) else {
            println!(
                "| {name} | {:.1} | ? | | |",
                tally.instances as f64 / pods as f64
            );
            continue;
        };
        let unset = (size * tally.instances).saturating_sub(tally.fields_set_bytes);
        unset_total += unset;
        println!(
            "| {name} | {:.1} | {size} | {} | {} |",
            tally.instances as f64 / pods as f64,
            per_pod(tally.fields_set_bytes, tally.instances),
            per_pod(unset, pods)
        );
    }
    println!(
        "\ninline bytes of fields not set, all structs: {} B per Pod",
        per_pod(unset_total, pods)
    );
}

fn main() {
    let pods: usize = std::env::args()
        .nth(1)
        .map_or(2_000, |s| s.parse().expect("PODS is a whole number"));
    let lines: Vec<Vec<u8>> = (0..pods)
        .map(|i| {
            serde_json::to_vec(
                &serde_json::json!({"type": "MODIFIED", "object": pod(i, 1, 10 + i as u64)}),
            )
            .expect("JSON serializes")
        })
        .collect();
    let json_bytes: usize = (0..pods)
        .map(|i| serde_json::to_vec(&pod(i, 1, 10 + i as u64)).map_or(0, |v| v.len()))
        .sum();
    println!(
        "{pods} wire Pods, {} B of JSON each on average; sizes of the types: Pod {} B, \
         String {} B, Vec {} B, BTreeMap {} B, serde_json::Value {} B",
        per_pod(json_bytes, pods),
        std::mem::size_of::<Pod>(),
        std::mem::size_of::<String>(),
        std::mem::size_of::<Vec<u8>>(),
        std::mem::size_of::<BTreeMap<String, String>>(),
        std::mem::size_of::<serde_json::Value>(),
    );
    for decoder in ["source", "plain", "projection"] {
        for strip_managed_fields in [false, true] {
            let mode = Mode {
                decoder,
                strip_managed_fields,
            };
            let totals = measure(mode, &lines);
            print(mode, &totals, pods);
        }
    }
}
