//! The parallel decoder against the serial one, on random pages and watch
//! bursts with bad items mixed in: same results, same order, same errors
//! at the same positions.

use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;

use super::{
    decode::{
        Decoder,
        parallel::{Slices, decode_detached, decode_on},
    },
    envelope::read_envelope,
    error::DecodeTarget,
    watch::parse_line,
};

#[derive(Debug, Clone, Copy)]
enum Item {
    Good,
    NoName,
    EmptyName,
    NoMetadata,
    WrongKind,
    TypeError,
    NotAnObject,
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        6 => Just(Item::Good),
        1 => Just(Item::NoName),
        1 => Just(Item::EmptyName),
        1 => Just(Item::NoMetadata),
        1 => Just(Item::WrongKind),
        1 => Just(Item::TypeError),
        1 => Just(Item::NotAnObject),
    ]
}

fn json(item: Item, i: usize) -> String {
    let data = format!(r#"{{"k{i}":"{}"}}"#, "v".repeat(i % 50));
    match item {
        Item::Good => format!(
            r#"{{"kind":"ConfigMap","metadata":{{"name":"cm-{i}","namespace":"ns"}},"data":{data}}}"#
        ),
        Item::NoName => format!(r#"{{"metadata":{{"namespace":"ns"}},"data":{data}}}"#),
        Item::EmptyName => r#"{"metadata":{"name":""}}"#.to_owned(),
        Item::NoMetadata => format!(r#"{{"kind":"ConfigMap","data":{data}}}"#),
        Item::WrongKind => format!(r#"{{"kind":"Secret","metadata":{{"name":"s-{i}"}}}}"#),
        Item::TypeError => format!(r#"{{"metadata":{{"name":"t-{i}"}},"data":[{i}]}}"#),
        Item::NotAnObject => i.to_string(),
    }
}

/// Results in a comparable form: the object, or the error's variant
/// and message (a JSON error's message carries its position).
fn summary<T: std::fmt::Debug>(result: &Result<T, crate::source::Error>) -> String {
    match result {
        Ok(object) => format!("{object:?}"),
        Err(error) => format!("{error:?} / {error}"),
    }
}

proptest! {
    #[test]
    fn parallel_page_decode_equals_serial(items in prop::collection::vec(item(), 0..120), threads in 2usize..6) {
        let page = format!(
            r#"{{"kind":"ConfigMapList","metadata":{{"resourceVersion":"5"}},"items":[{}]}}"#,
            items.iter().enumerate().map(|(i, item)| json(*item, i)).collect::<Vec<_>>().join(",")
        );
        #[derive(serde::Deserialize)]
        struct Page<'a> {
            #[serde(borrow)]
            items: Vec<&'a serde_json::value::RawValue>,
        }
        let parsed: Page<'_> = serde_json::from_str(&page).unwrap();
        let mut decoder = Decoder::new();
        decoder.learn_list_kind(Some("ConfigMapList"));
        let decode = |raw: &&serde_json::value::RawValue| decoder.object::<ConfigMap>(raw, DecodeTarget::ListItem);
        let serial: Vec<String> = decode_on(&parsed.items, 1, page.len(), decode).iter().map(summary).collect();
        let parallel: Vec<String> = decode_on(&parsed.items, threads, page.len(), decode).iter().map(summary).collect();
        prop_assert_eq!(serial.len(), items.len());
        prop_assert_eq!(&parallel, &serial);
        // As the relist decodes a page: cut by the envelope, decoded
        // in pieces on the runtime's workers while the caller awaits.
        let ranges = read_envelope(&page).unwrap().items;
        let plain = decoder.clone().plain(true);
        let plain: Vec<String> = decode_on(&parsed.items, threads, page.len(), |raw| plain.object::<ConfigMap>(raw, DecodeTarget::ListItem)).iter().map(summary).collect();
        prop_assert_eq!(&plain, &serial);
        let detached = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap().block_on(
            decode_detached(Slices { text: page.clone(), ranges }, usize::MAX, move |item| decoder.object_text::<ConfigMap>(item, DecodeTarget::ListItem)),
        );
        let detached: Vec<String> = detached.iter().map(summary).collect();
        prop_assert_eq!(detached, serial);
    }

    #[test]
    fn parallel_watch_burst_decode_equals_serial(items in prop::collection::vec((item(), 0u8..6), 0..120), threads in 2usize..6) {
        let lines: Vec<String> = items.iter().enumerate().map(|(i, (item, kind))| match kind {
            0 => format!(r#"{{"type":"ADDED","object":{}}}"#, json(*item, i)),
            1 => format!(r#"{{"object":{},"type":"MODIFIED"}}"#, json(*item, i)),
            2 => r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}"#.to_owned(),
            3 => r#"{"type":"SURPRISE","object":{}}"#.to_owned(),
            4 => "{not json".to_owned(),
            _ => String::new(),
        }).collect();
        let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        let mut decoder = Decoder::new();
        decoder.learn_list_kind(Some("ConfigMapList"));
        let decode = |line: &&[u8]| parse_line::<ConfigMap>(line, &decoder);
        let serial: Vec<String> = decode_on(&lines, 1, 0, decode).iter().map(summary).collect();
        let parallel: Vec<String> = decode_on(&lines, threads, 0, decode).iter().map(summary).collect();
        prop_assert_eq!(&parallel, &serial);
        let plain = decoder.clone().plain(true);
        let plain: Vec<String> = decode_on(&lines, threads, 0, |line| parse_line::<ConfigMap>(line, &plain)).iter().map(summary).collect();
        prop_assert_eq!(plain, serial);
    }
}
