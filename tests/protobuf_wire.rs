//! The protobuf list page, Status body and watch stream against Go's own
//! encoder (`tests/protobuf-vectors/wire/`, written by
//! `conformance/go/cmd/protobuf-vectors`), and on bad input.

use std::{fs, path::PathBuf};

use k8s_openapi::{
    List,
    api::core::v1::{ConfigMap, Pod},
};
use kube::core::Status;
use kube_informer::unstable::protobuf::{
    DEFAULT_MAX_FRAME, Error, FrameSplitter, WatchEvent, decode_list, decode_status,
    decode_watch_event,
};
use proptest::prelude::*;

pub(crate) fn read(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/protobuf-vectors/wire")
        .join(name);
    fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn pb5_a_list_page_decodes_to_its_json_value() {
    for name in ["podlist", "podlist-empty"] {
        let page = decode_list::<Pod>(&read(&format!("{name}.pb"))).unwrap();
        let json: List<Pod> = serde_json::from_slice(&read(&format!("{name}.json"))).unwrap();
        assert_eq!(page.items, json.items, "{name}");
        assert_eq!(
            Some(&page.resource_version),
            json.metadata.resource_version.as_ref(),
            "{name}"
        );
        assert_eq!(page.continue_token, json.metadata.continue_, "{name}");
        assert_eq!(
            page.remaining_item_count, json.metadata.remaining_item_count,
            "{name}"
        );
    }
    let page = decode_list::<Pod>(&read("podlist.pb")).unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.resource_version, "100042");
    assert!(page.continue_token.is_some());
    assert_eq!(page.remaining_item_count, Some(17));
    let empty = decode_list::<Pod>(&read("podlist-empty.pb")).unwrap();
    assert!(empty.items.is_empty());
    assert_eq!(
        (empty.continue_token, empty.remaining_item_count),
        (None, None)
    );

    // The envelope must name the list of the kind asked for.
    assert!(matches!(
        decode_list::<ConfigMap>(&read("podlist.pb")),
        Err(Error::KindMismatch { found_kind, .. }) if found_kind == "PodList"
    ));
    assert!(matches!(
        decode_list::<Pod>(&read("status-410.pb")),
        Err(Error::KindMismatch { .. })
    ));
}

#[test]
fn pb6_a_status_body_decodes_to_its_json_value() {
    for (name, code, reason) in [
        ("status-403", 403, "Forbidden"),
        ("status-410", 410, "Expired"),
        ("status-429", 429, "TooManyRequests"),
    ] {
        let status = decode_status(&read(&format!("{name}.pb"))).unwrap();
        let json: Status = serde_json::from_slice(&read(&format!("{name}.json"))).unwrap();
        assert_eq!(status, json, "{name}");
        assert_eq!((status.code, status.reason.as_str()), (code, reason));
        assert!(status.is_failure(), "{name}");
    }
    let throttled = decode_status(&read("status-429.pb")).unwrap();
    let details = throttled.details.unwrap();
    assert_eq!(details.retry_after_seconds, 1);
    assert_eq!(details.causes[0].reason, "Throttled");
    assert!(matches!(
        decode_status(&read("podlist.pb")),
        Err(Error::KindMismatch { .. })
    ));
}

/// The stream's events, as the JSON watch stream carries them.
pub(crate) fn json_events() -> Vec<(String, serde_json::Value)> {
    let events: Vec<serde_json::Value> = serde_json::from_slice(&read("watch.json")).unwrap();
    events
        .into_iter()
        .map(|e| (e["type"].as_str().unwrap().to_owned(), e["object"].clone()))
        .collect()
}

fn check_events(events: &[WatchEvent<Pod>]) {
    let expected = json_events();
    assert_eq!(events.len(), expected.len());
    for (event, (kind, object)) in events.iter().zip(&expected) {
        let pod = || serde_json::from_value::<Pod>(object.clone()).unwrap();
        match (event, kind.as_str()) {
            (WatchEvent::Added(p), "ADDED")
            | (WatchEvent::Modified(p), "MODIFIED")
            | (WatchEvent::Deleted(p), "DELETED") => assert_eq!(*p, pod(), "{kind}"),
            (
                WatchEvent::Bookmark {
                    resource_version,
                    initial_events_end,
                },
                "BOOKMARK",
            ) => {
                let meta = &object["metadata"];
                assert_eq!(resource_version, meta["resourceVersion"].as_str().unwrap());
                assert_eq!(
                    *initial_events_end,
                    meta["annotations"]["k8s.io/initial-events-end"] == "true"
                );
            }
            (WatchEvent::Error(status), "ERROR") => {
                assert_eq!(
                    **status,
                    serde_json::from_value::<Status>(object.clone()).unwrap()
                );
                assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            }
            (event, kind) => panic!("{kind} decoded as {event:?}"),
        }
    }
}

/// Splits `stream` fed in pieces of `sizes` (cycled), decoding each frame.
fn decode_stream(stream: &[u8], sizes: &[usize]) -> Result<Vec<WatchEvent<Pod>>, Error> {
    let mut splitter = FrameSplitter::new(DEFAULT_MAX_FRAME);
    let mut events = Vec::new();
    let mut rest = stream;
    let mut sizes = sizes.iter().cycle();
    while !rest.is_empty() {
        let n = (*sizes.next().unwrap()).clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        splitter.push(chunk);
        while let Some(frame) = splitter.next_frame()? {
            events.push(decode_watch_event::<Pod>(frame)?);
        }
    }
    splitter.finish()?;
    Ok(events)
}

#[test]
fn pb7_a_watch_stream_decodes_to_its_json_events_in_any_pieces() {
    let stream = read("watch.pb");
    let whole = decode_stream(&stream, &[stream.len()]).unwrap();
    check_events(&whole);
    assert!(matches!(
        whole[3],
        WatchEvent::Bookmark {
            initial_events_end: true,
            ..
        }
    ));
    assert!(matches!(
        whole[4],
        WatchEvent::Bookmark {
            initial_events_end: false,
            ..
        }
    ));
    for sizes in [&[1][..], &[2], &[3], &[5], &[4, 1, 7], &[1000, 3], &[4095]] {
        assert_eq!(decode_stream(&stream, sizes).unwrap(), whole, "{sizes:?}");
    }
}

#[test]
fn pb8_a_malformed_stream_is_a_clear_error() {
    let stream = read("watch.pb");
    // Cut short: inside a length, inside a frame.
    for cut in [2, 4, 100, stream.len() - 1] {
        let err = decode_stream(&stream[..cut], &[7]).unwrap_err();
        assert!(matches!(err, Error::Truncated(_)), "{cut}: {err}");
    }
    // A length beyond the limit.
    let mut splitter = FrameSplitter::new(1024);
    splitter.push(&[0xff, 0xff, 0xff, 0xff, 0]);
    assert!(matches!(
        splitter.next_frame(),
        Err(Error::FrameTooLarge {
            len: 0xffff_ffff,
            max: 1024
        })
    ));
    // A frame of garbage, an unknown type, a missing object, another kind.
    let err = decode_watch_event::<Pod>(&[0xff, 0xff]).unwrap_err();
    assert!(
        matches!(err, Error::Truncated(_) | Error::BadTag(_)),
        "{err}"
    );
    let err = decode_watch_event::<Pod>(b"\x0a\x04NOPE\x12\x00").unwrap_err();
    assert!(matches!(err, Error::UnknownEventType(t) if t == "NOPE"));
    let err = decode_watch_event::<Pod>(b"\x0a\x05ADDED").unwrap_err();
    assert!(matches!(err, Error::Missing(_)), "{err}");
    let mut splitter = FrameSplitter::new(DEFAULT_MAX_FRAME);
    splitter.push(&stream);
    let first = splitter.next_frame().unwrap().unwrap().to_vec();
    let err = decode_watch_event::<ConfigMap>(&first).unwrap_err();
    assert!(matches!(err, Error::KindMismatch { .. }), "{err}");
    assert!(err.to_string().contains("Pod"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// PB2 for the new forms: any bytes give a value or an error.
    #[test]
    fn pb8_random_and_mutated_streams_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..512),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let _ = decode_stream(&tail, &[3]);
        let _ = decode_list::<Pod>(&tail);
        let _ = decode_status(&tail);
        let _ = decode_watch_event::<Pod>(&tail);
        for name in ["watch.pb", "podlist.pb", "status-429.pb"] {
            let mut bytes = read(name);
            let i = at.index(bytes.len());
            bytes[i] = byte;
            let _ = decode_stream(&bytes, &[64]);
            let _ = decode_list::<Pod>(&bytes);
            let _ = decode_status(&bytes);
        }
    }
}
