//! The generated protobuf decoders (the second design, built for
//! measurement) against the serde-driven decoder and serde_json, on every
//! Pod written by Go's own encoder (`tests/protobuf-vectors/`).

use std::{fs, path::PathBuf};

use k8s_openapi::api::core::v1::Pod;
use kube_informer::unstable::protobuf::{Error, decode_list, decode_object, generated};
use proptest::prelude::*;

fn read(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/protobuf-vectors")
        .join(name);
    fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The Pod vectors at the top of `tests/protobuf-vectors/`: every `NAME.pb`
/// whose JSON names `"kind": "Pod"`.
fn pod_vectors() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/protobuf-vectors");
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter_map(|f| f.strip_suffix(".pb").map(str::to_owned))
        .filter(|name| {
            let json: serde_json::Value =
                serde_json::from_slice(&read(&format!("{name}.json"))).unwrap();
            json["kind"] == "Pod"
        })
        .collect();
    names.sort();
    names
}

#[test]
fn pb1_generated_pod_decoder_gives_the_serde_and_json_values() {
    let names = pod_vectors();
    assert!(
        names.len() >= 3,
        "pod, pod-minimal and pod-sub-second at least: {names:?}"
    );
    for name in &names {
        let pb = read(&format!("{name}.pb"));
        let generated = generated::decode_pod(&pb).unwrap_or_else(|e| panic!("{name}: {e}"));
        let serde_pb: Pod = decode_object(&pb).unwrap();
        let json: Pod = serde_json::from_slice(&read(&format!("{name}.json"))).unwrap();
        assert_eq!(
            generated, serde_pb,
            "{name}: generated against serde-protobuf"
        );
        assert_eq!(generated, json, "{name}: generated against JSON");
    }
    // The full vector fills what the special forms reach: times, raw JSON
    // (managedFields), quantities, int-or-strings, inlined volume sources.
    let pod = generated::decode_pod(&read("pod.pb")).unwrap();
    let meta = &pod.metadata;
    assert!(meta.creation_timestamp.is_some());
    assert!(meta.managed_fields.as_ref().unwrap()[0].fields_v1.is_some());
    let spec = pod.spec.as_ref().unwrap();
    assert!(
        spec.volumes
            .as_ref()
            .unwrap()
            .iter()
            .any(|v| v.config_map.is_some() || v.empty_dir.is_some() || v.projected.is_some())
    );
    assert!(
        spec.containers[0]
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .is_some_and(|r| !r.is_empty())
    );
}

#[test]
fn pb1_generated_pod_list_decoder_gives_the_items_serde_and_json_give() {
    for name in ["podlist", "podlist-empty"] {
        let pb = read(&format!("wire/{name}.pb"));
        let generated = generated::decode_pod_list(&pb).unwrap();
        assert_eq!(generated, decode_list::<Pod>(&pb).unwrap().items, "{name}");
        let json: k8s_openapi::List<Pod> =
            serde_json::from_slice(&read(&format!("wire/{name}.json"))).unwrap();
        assert_eq!(generated, json.items, "{name}");
    }
    assert!(
        !generated::decode_pod_list(&read("wire/podlist.pb"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn pb3_generated_decoder_checks_the_kind() {
    assert!(matches!(
        generated::decode_pod(&read("configmap.pb")),
        Err(Error::KindMismatch { .. })
    ));
    assert!(matches!(
        generated::decode_pod(&read("wire/podlist.pb")),
        Err(Error::KindMismatch { .. })
    ));
    assert!(matches!(generated::decode_pod(b"{}"), Err(Error::BadMagic)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// PB2 for the generated decoder: cut or changed bytes give a value or
    /// an error, never a panic, and a body both decoders accept decodes
    /// alike.
    #[test]
    fn pb2_generated_decoder_never_panics(cut in 0usize..4096, at in 0usize..4096, byte: u8) {
        let mut pb = read("pod.pb");
        let at = at % pb.len();
        pb[at] = byte;
        pb.truncate(cut.max(at + 1).min(pb.len()));
        let generated = generated::decode_pod(&pb);
        if let (Ok(a), Ok(b)) = (&generated, decode_object::<Pod>(&pb)) {
            prop_assert_eq!(a, &b);
        }
    }
}
