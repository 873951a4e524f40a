//! The protobuf decoder against Go's own encoder, and on bad input.
//!
//! `tests/protobuf-vectors/` holds, for each object, the body
//! kube-apiserver sends as protobuf (`NAME.pb`) and the JSON it serves for
//! the same object (`NAME.json`), both written by
//! `conformance/go/cmd/protobuf-vectors` (`scripts/protobuf/vectors.sh`).

use std::{fmt::Debug, fs, path::PathBuf};

use k8s_openapi::{
    Resource,
    api::{
        apps::v1::{ControllerRevision, Deployment},
        certificates::v1::CertificateSigningRequest,
        coordination::v1::Lease,
        core::v1::{ConfigMap, Event, Node, PersistentVolume, Pod, Secret, Service},
        events::v1::Event as EventsEvent,
    },
};
use kube_informer::unstable::protobuf::{Error, decode_object};
use proptest::prelude::*;
use serde::de::DeserializeOwned;

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/protobuf-vectors")
}

fn read(name: &str, ext: &str) -> Vec<u8> {
    let path = vectors_dir().join(format!("{name}.{ext}"));
    fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn same_as_json<K>(name: &str) -> K
where
    K: Resource + DeserializeOwned + PartialEq + Debug,
{
    let from_json: K =
        serde_json::from_slice(&read(name, "json")).unwrap_or_else(|e| panic!("{name}.json: {e}"));
    let from_pb: K = decode_object(&read(name, "pb")).unwrap_or_else(|e| panic!("{name}.pb: {e}"));
    assert_eq!(
        from_pb, from_json,
        "{name}: protobuf and JSON decode to different values"
    );
    from_pb
}

/// Checks one vector against its JSON, as its type.
type Check = fn(&str);

/// Every vector, by name, with the type it decodes into.
const VECTORS: &[(&str, Check)] = &[
    ("pod", |n| drop(same_as_json::<Pod>(n))),
    ("pod-sub-second", |n| drop(same_as_json::<Pod>(n))),
    ("pod-minimal", |n| drop(same_as_json::<Pod>(n))),
    ("configmap", |n| drop(same_as_json::<ConfigMap>(n))),
    ("secret", |n| drop(same_as_json::<Secret>(n))),
    ("service", |n| drop(same_as_json::<Service>(n))),
    ("deployment", |n| drop(same_as_json::<Deployment>(n))),
    ("node", |n| drop(same_as_json::<Node>(n))),
    ("lease", |n| drop(same_as_json::<Lease>(n))),
    ("event", |n| drop(same_as_json::<EventsEvent>(n))),
    ("core-event", |n| drop(same_as_json::<Event>(n))),
    ("controllerrevision", |n| {
        drop(same_as_json::<ControllerRevision>(n))
    }),
    ("csr", |n| {
        drop(same_as_json::<CertificateSigningRequest>(n))
    }),
    ("persistentvolume", |n| {
        drop(same_as_json::<PersistentVolume>(n))
    }),
];

#[test]
fn pb1_every_vector_decodes_to_its_json_value() {
    let mut on_disk: Vec<String> = fs::read_dir(vectors_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter_map(|f| f.strip_suffix(".pb").map(str::to_owned))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = VECTORS.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "every vector on disk is checked, and only those"
    );
    for (name, check) in VECTORS {
        check(name);
    }
}

/// What the vectors hold, spelled out, so a decoder and a JSON path that
/// agree on a wrong value would still fail here.
#[test]
fn pb1_the_forms_json_gives() {
    use k8s_openapi::{ByteString, apimachinery::pkg::util::intstr::IntOrString};

    let pod: Pod = same_as_json("pod");
    let meta = &pod.metadata;
    assert_eq!(meta.generate_name.as_deref(), Some("web-7d4b9c8f6d-"));
    assert_eq!(meta.generation, Some(3));
    // `omitempty` scalars at zero are absent, as in JSON; pointers are kept.
    assert_eq!(meta.deletion_grace_period_seconds, None);
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(spec.host_network, None);
    assert_eq!(spec.enable_service_links, Some(false));
    assert_eq!(spec.priority, Some(-5));
    assert_eq!(
        spec.security_context.as_ref().unwrap().supplemental_groups,
        Some(vec![4000, 5000, -1])
    );
    let web = &spec.containers[0];
    assert_eq!(web.working_dir, None);
    assert_eq!(
        web.args.as_deref(),
        Some(&["--port=8080".to_string(), String::new()][..])
    );
    assert_eq!(
        web.resources.as_ref().unwrap().limits.as_ref().unwrap()["cpu"].0,
        "500m"
    );
    let probe = web.liveness_probe.as_ref().unwrap();
    assert_eq!(
        probe.http_get.as_ref().unwrap().port,
        IntOrString::String("http".into())
    );
    let readiness = web.readiness_probe.as_ref().unwrap();
    assert_eq!(
        readiness.tcp_socket.as_ref().unwrap().port,
        IntOrString::Int(8080)
    );
    // An inlined struct: a Volume's source is the Volume's own field in JSON.
    assert!(spec.volumes.as_ref().unwrap()[0].config_map.is_some());
    assert_eq!(meta.annotations.as_ref().unwrap()["note"], "a\u{fffd}b");
    let fields = meta.managed_fields.as_ref().unwrap()[1]
        .fields_v1
        .as_ref()
        .unwrap();
    assert_eq!(fields.0["f:status"]["f:phase"], serde_json::json!({}));
    assert_eq!(
        meta.creation_timestamp.as_ref().unwrap().0.to_string(),
        "2026-11-30T12:34:56Z"
    );

    let sub: Pod = same_as_json("pod-sub-second");
    assert_eq!(
        sub.metadata
            .creation_timestamp
            .unwrap()
            .0
            .subsec_nanosecond(),
        0
    );
    assert_eq!(sub.metadata.deletion_grace_period_seconds, Some(0));

    let lease: Lease = same_as_json("lease");
    let acquired = lease.spec.unwrap().acquire_time.unwrap().0;
    assert_eq!(acquired.subsec_nanosecond(), 123_456_000);

    let cm: ConfigMap = same_as_json("configmap");
    assert_eq!(
        cm.binary_data.as_ref().unwrap()["blob"],
        ByteString(vec![0, 1, 2, 0xfe, 0xff])
    );
    assert_eq!(cm.data.as_ref().unwrap()["ünïcode"], "✓");

    let svc: Service = same_as_json("service");
    let ports = svc.spec.unwrap().ports.unwrap();
    assert_eq!(ports[1].target_port, Some(IntOrString::Int(9090)));

    let csr: CertificateSigningRequest = same_as_json("csr");
    let extra = csr.spec.extra.unwrap();
    assert_eq!(extra["scopes"], ["a", "b"]);
}

// ---- hand-written bodies: the encodings Go does not write (PB4) ----

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field_varint(number: u64, v: u64, out: &mut Vec<u8>) {
    varint(number << 3, out);
    varint(v, out);
}

fn field_len(number: u64, bytes: &[u8], out: &mut Vec<u8>) {
    varint(number << 3 | 2, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

fn body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    field_len(1, api_version.as_bytes(), &mut type_meta);
    field_len(2, kind.as_bytes(), &mut type_meta);
    let mut out = b"k8s\0".to_vec();
    field_len(1, &type_meta, &mut out);
    field_len(2, raw, &mut out);
    out
}

fn named(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    field_len(1, name.as_bytes(), &mut out);
    out
}

#[test]
fn pb4_unknown_fields_packed_numbers_scattered_repeats_last_wins() {
    let mut meta = Vec::new();
    field_len(1, b"first", &mut meta);
    field_len(1, b"pod", &mut meta); // the last name wins
    field_varint(99, 7, &mut meta); // unknown: a varint
    varint(98 << 3 | 1, &mut meta); // unknown: fixed64
    meta.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    varint(97 << 3 | 5, &mut meta); // unknown: fixed32
    meta.extend_from_slice(&[1, 2, 3, 4]);
    field_len(96, b"unknown bytes", &mut meta);

    let mut security = Vec::new();
    let mut packed = Vec::new();
    for g in [1u64, 2, (-3i64) as u64] {
        varint(g, &mut packed);
    }
    field_len(4, &packed, &mut security); // supplementalGroups, packed
    field_varint(4, 4, &mut security); // and one unpacked after it

    let mut spec = Vec::new();
    field_len(2, &named("a"), &mut spec); // containers[0]
    field_len(10, b"node-1", &mut spec); // nodeName between two containers
    field_len(14, &security, &mut spec);
    field_len(2, &named("b"), &mut spec); // containers[1], apart from [0]

    let mut raw = Vec::new();
    field_len(1, &meta, &mut raw);
    field_len(2, &spec, &mut raw);
    field_varint(50, 1, &mut raw); // unknown at the top level

    let pod: Pod = decode_object(&body("v1", "Pod", &raw)).unwrap();
    assert_eq!(pod.metadata.name.as_deref(), Some("pod"));
    let spec = pod.spec.unwrap();
    let names: Vec<_> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(spec.node_name.as_deref(), Some("node-1"));
    assert_eq!(
        spec.security_context.unwrap().supplemental_groups,
        Some(vec![1, 2, -3, 4])
    );
}

fn entry(key: &str, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    field_len(1, key.as_bytes(), &mut out);
    field_len(2, value, &mut out);
    out
}

/// Many occurrences of repeated and map fields, in one run and scattered
/// among each other, in a message and in an inlined one: each field gets
/// every occurrence, in order, and the fields between them are still read.
#[test]
fn pb4_many_and_interleaved_repeated_and_map_fields() {
    // A ConfigMap: 500 data entries, binaryData entries between them, the
    // metadata last.
    let mut raw = Vec::new();
    for i in 0..500 {
        field_len(
            2,
            &entry(&format!("k{i:03}"), format!("v{i}").as_bytes()),
            &mut raw,
        );
        if i % 100 == 0 {
            field_len(3, &entry(&format!("b{i}"), &[i as u8]), &mut raw);
        }
    }
    field_varint(4, 1, &mut raw);
    let mut meta = Vec::new();
    field_len(1, b"many", &mut meta);
    for i in 0..50 {
        field_len(14, format!("f{i}").as_bytes(), &mut meta); // finalizers
        field_len(11, &entry(&format!("l{i}"), b"x"), &mut meta); // labels
    }
    field_len(1, &meta, &mut raw);
    let cm: ConfigMap = decode_object(&body("v1", "ConfigMap", &raw)).unwrap();
    let data = cm.data.unwrap();
    assert_eq!(data.len(), 500);
    assert_eq!(data["k000"], "v0");
    assert_eq!(data["k499"], "v499");
    let binary = cm.binary_data.unwrap();
    assert_eq!(binary.len(), 5);
    assert_eq!(binary["b400"].0, vec![144]);
    assert_eq!(cm.immutable, Some(true));
    assert_eq!(cm.metadata.name.as_deref(), Some("many"));
    let finalizers = cm.metadata.finalizers.unwrap();
    assert_eq!(finalizers.len(), 50);
    assert_eq!(
        (finalizers[0].as_str(), finalizers[49].as_str()),
        ("f0", "f49")
    );
    assert_eq!(cm.metadata.labels.unwrap().len(), 50);

    // A PodSpec: 300 containers in one run, then init containers and
    // containers taking turns, with a single field between them; an
    // ephemeral container whose inlined common part holds its own
    // repeated fields, scattered.
    let mut spec = Vec::new();
    for i in 0..300 {
        field_len(2, &named(&format!("c{i}")), &mut spec);
    }
    for i in 0..20 {
        field_len(20, &named(&format!("i{i}")), &mut spec);
        field_len(2, &named(&format!("c{}", 300 + i)), &mut spec);
        if i == 10 {
            field_len(10, b"node-1", &mut spec);
        }
    }
    let mut common = Vec::new();
    field_len(3, b"sh", &mut common);
    field_len(1, b"debug", &mut common);
    field_len(4, b"-x", &mut common);
    field_len(3, b"-c", &mut common);
    field_len(4, b"-y", &mut common);
    let mut ephemeral = Vec::new();
    field_len(2, b"c0", &mut ephemeral);
    field_len(1, &common, &mut ephemeral);
    field_len(34, &ephemeral, &mut spec);
    field_len(34, &ephemeral, &mut spec);
    let mut raw = Vec::new();
    field_len(2, &spec, &mut raw);
    let pod: Pod = decode_object(&body("v1", "Pod", &raw)).unwrap();
    let spec = pod.spec.unwrap();
    let names: Vec<String> = spec.containers.iter().map(|c| c.name.clone()).collect();
    let expected: Vec<String> = (0..320).map(|i| format!("c{i}")).collect();
    assert_eq!(names, expected);
    let init: Vec<String> = spec
        .init_containers
        .unwrap()
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(init, (0..20).map(|i| format!("i{i}")).collect::<Vec<_>>());
    assert_eq!(spec.node_name.as_deref(), Some("node-1"));
    let ephemeral = spec.ephemeral_containers.unwrap();
    assert_eq!(ephemeral.len(), 2);
    for e in &ephemeral {
        assert_eq!(e.name, "debug");
        assert_eq!(e.target_container_name.as_deref(), Some("c0"));
        assert_eq!(
            e.command.as_deref(),
            Some(&["sh".to_owned(), "-c".to_owned()][..])
        );
        assert_eq!(
            e.args.as_deref(),
            Some(&["-x".to_owned(), "-y".to_owned()][..])
        );
    }
}

#[test]
fn pb3_the_envelope_names_the_type_asked_for() {
    let pod = read("pod", "pb");
    match decode_object::<ConfigMap>(&pod) {
        Err(Error::KindMismatch {
            kind: "ConfigMap",
            found_kind,
            ..
        }) => assert_eq!(found_kind, "Pod"),
        other => panic!("a Pod body decoded as a ConfigMap: {other:?}"),
    }
    let wrong_version = body("v2", "Pod", &named("x"));
    assert!(matches!(
        decode_object::<Pod>(&wrong_version),
        Err(Error::KindMismatch { .. })
    ));

    // A kind the table lacks (here a type of the user's) is refused by name.
    #[derive(serde::Deserialize, Debug)]
    struct Widget {}
    impl Resource for Widget {
        const API_VERSION: &'static str = "example.com/v1";
        const GROUP: &'static str = "example.com";
        const KIND: &'static str = "Widget";
        const VERSION: &'static str = "v1";
        const URL_PATH_SEGMENT: &'static str = "widgets";
        type Scope = k8s_openapi::NamespaceResourceScope;
    }
    let err = decode_object::<Widget>(&body("example.com/v1", "Widget", &[])).unwrap_err();
    assert!(matches!(err, Error::UnknownKind { kind: "Widget", .. }));
    assert_eq!(
        err.to_string(),
        "no protobuf schema for example.com/v1 Widget"
    );
}

#[test]
fn pb2_bad_input_is_a_clear_error() {
    let cases: &[(&[u8], &str)] = &[
        (b"{\"kind\":\"Pod\"}", "magic"),
        (b"k8s\0\x0a", "truncated"),
        (b"k8s\0\x0a\x7f", "length of 127 bytes"),
        (
            b"k8s\0\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
            "varint",
        ),
        (b"k8s\0\x0b", "wire type 3"),
        (b"k8s\0\x00", "tag 0"),
    ];
    for (bytes, says) in cases {
        let err = decode_object::<Pod>(bytes).unwrap_err().to_string();
        assert!(
            err.contains(says),
            "{bytes:?}: {err:?} does not say {says:?}"
        );
    }
    // The object's name where a string belongs, as a varint.
    let mut meta = Vec::new();
    field_varint(1, 5, &mut meta);
    let mut raw = Vec::new();
    field_len(1, &meta, &mut raw);
    let err = decode_object::<Pod>(&body("v1", "Pod", &raw))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "field 1 of ObjectMeta has wire type 0, its schema gives wire type 2"
    );
}

fn decode_any(bytes: &[u8]) {
    // Each must return, Ok or Err; the Err must say something.
    fn one<K: Resource + DeserializeOwned>(bytes: &[u8]) {
        if let Err(e) = decode_object::<K>(bytes) {
            assert!(!e.to_string().is_empty());
        }
    }
    one::<Pod>(bytes);
    one::<ConfigMap>(bytes);
    one::<Deployment>(bytes);
    one::<Lease>(bytes);
    one::<EventsEvent>(bytes);
    one::<CertificateSigningRequest>(bytes);
}

fn all_vectors() -> Vec<Vec<u8>> {
    VECTORS.iter().map(|(n, _)| read(n, "pb")).collect()
}

#[test]
fn pb2_every_truncation_of_every_vector_is_an_error() {
    for (name, _) in VECTORS {
        let full = read(name, "pb");
        for len in 0..full.len() {
            decode_any(&full[..len]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn pb2_random_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut bytes = b"k8s\0".to_vec();
        bytes.extend_from_slice(&tail);
        decode_any(&bytes);
        decode_any(&tail);
    }

    #[test]
    fn pb2_mutated_vectors_never_panic(
        which in 0usize..14,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let vectors = all_vectors();
        let mut bytes = vectors[which % vectors.len()].clone();
        for (at, byte, op) in edits {
            if bytes.is_empty() {
                break;
            }
            let i = at.index(bytes.len());
            match op {
                0 => bytes[i] = byte,
                1 => { bytes.remove(i); }
                _ => bytes.insert(i, byte),
            }
        }
        decode_any(&bytes);
    }
}
