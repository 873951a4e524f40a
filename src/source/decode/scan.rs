//! One pass over an object's JSON text before it is decoded, which finds
//! what the decode needs to know in advance:
//!
//! - the element count of every array, in the order the arrays open (the
//!   capacities of [`exact`](super::exact));
//! - whether the object plainly passes R7: a top-level object with one
//!   `metadata` object holding one non-empty `name` string, and a `kind`
//!   that is absent or the expected one.
//!
//! The pass looks only at the bytes that give JSON its structure and jumps
//! over strings with `memchr`, so it costs a fraction of the typed decode
//! (`benches/decode.rs` measures both: `watch_line/scan_alone` and
//! `source`); it replaces a second parse of the whole object by the R7
//! probe.
//!
//! The R7 verdict is one-sided on purpose. [`R7::Passes`] is given only
//! when the text is unambiguous (no escapes in the keys and values that
//! matter, no repeated keys); anything else, including every failure, is
//! [`R7::Unsure`], and the decoder then asks the exact probe
//! ([`probe`](super::probe)), which also decides every error. The pass does
//! not validate JSON: on text that is not JSON its counts are merely
//! useless, and the typed decode reports the fault (and the decoder again
//! asks the probe which error it is).

/// What one pass over an object's text found.
pub(crate) struct Scan {
    /// The element count of every array, in the order the arrays open.
    pub(crate) lengths: Vec<u32>,
    pub(crate) r7: R7,
}

/// The R7 verdict of a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum R7 {
    /// The object has metadata, a non-empty name and the expected kind (or
    /// none): the probe would accept it.
    Passes,
    /// Not plain enough to tell: the probe decides.
    Unsure,
}

/// An open object or array.
#[derive(Clone, Copy)]
enum Open {
    /// An array and the index of its count.
    Array(usize),
    /// An object: which one, and whether a key comes next.
    Object { role: Role, expect_key: bool },
}

/// Which map an object's text is in: what the R7 verdict reads (and what
/// `exact` watches to leave managedFields out).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// The object itself.
    Object,
    /// Its `metadata`.
    Metadata,
    Other,
}

/// A value the R7 verdict needs, about to start.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wanted {
    Kind,
    Metadata,
    Name,
}

/// The R7 facts gathered during the pass.
#[derive(Default)]
struct Facts {
    /// Something was not plain: repeated or escaped keys, a metadata that
    /// is not an object, a name that is not a plain string.
    unsure: bool,
    kinds: u32,
    metadatas: u32,
    names: u32,
    /// The `kind` string's text, if it is a string without escapes.
    kind: Option<(usize, usize)>,
    /// The `name` string's text, if it is a string without escapes.
    name: Option<(usize, usize)>,
}

/// Scans one object's JSON text; `expected_kind` is the kind the list
/// announced, if any.
pub(crate) fn scan(text: &str, expected_kind: Option<&str>) -> Scan {
    let json = text.as_bytes();
    let mut lengths = Vec::new();
    let mut open: Vec<Open> = Vec::with_capacity(16);
    let mut facts = Facts {
        // An object must be a JSON object.
        unsure: json.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{'),
        ..Facts::default()
    };
    let mut wanted: Option<Wanted> = None;
    let mut opening_metadata = false;
    let mut seen_top = false;
    let mut i = 0;
    while i < json.len() {
        let byte = json[i];
        if byte.is_ascii_whitespace() || byte == b':' {
            i += 1;
            continue;
        }
        // The first byte of a value the verdict needs.
        if let Some(want) = wanted.take() {
            match (want, byte) {
                (Wanted::Kind | Wanted::Name, b'"') => {
                    let (end, escaped) = string_end(json, i + 1);
                    let span = (!escaped).then_some((i + 1, end));
                    match want {
                        Wanted::Kind => facts.kind = span,
                        _ => facts.name = span,
                    }
                    facts.unsure |= escaped;
                    i = end + 1;
                    continue;
                }
                (Wanted::Metadata, b'{') => opening_metadata = true,
                // A kind that is not a string is not checked (as the probe does).
                (Wanted::Kind, _) => {}
                _ => facts.unsure = true,
            }
        }
        match byte {
            b'"' => {
                let (end, escaped) = string_end(json, i + 1);
                // What follows a string in text written without spaces, a
                // key's colon or the comma after a value, is stepped over
                // here rather than in a turn of the loop of its own.
                let mut next = end + 1;
                match open.last_mut() {
                    Some(Open::Object { role, expect_key }) if *expect_key => {
                        *expect_key = false;
                        wanted = key_role(*role, &json[i + 1..end], escaped, &mut facts);
                        if json.get(next) == Some(&b':') {
                            next += 1;
                        }
                    }
                    top if json.get(next) == Some(&b',') => {
                        comma(top, &mut lengths);
                        next += 1;
                    }
                    _ => {}
                }
                i = next;
                continue;
            }
            b'[' => {
                open.push(Open::Array(lengths.len()));
                let empty = json[i + 1..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .is_none_or(|b| *b == b']');
                lengths.push(u32::from(!empty));
            }
            b'{' => {
                let role = if open.is_empty() && !seen_top {
                    Role::Object
                } else if std::mem::take(&mut opening_metadata) {
                    Role::Metadata
                } else {
                    Role::Other
                };
                seen_top = true;
                open.push(Open::Object {
                    role,
                    expect_key: true,
                });
            }
            b']' | b'}' => {
                open.pop();
                // The comma after a closed value, in the same turn.
                if json.get(i + 1) == Some(&b',') {
                    comma(open.last_mut(), &mut lengths);
                    i += 1;
                }
            }
            b',' => comma(open.last_mut(), &mut lengths),
            _ => {}
        }
        i += 1;
    }
    let r7 = facts.verdict(json, expected_kind);
    Scan { lengths, r7 }
}

/// A comma in the value `top` is open: one more element of an array, or
/// a key next in an object.
fn comma(top: Option<&mut Open>, lengths: &mut [u32]) {
    match top {
        Some(Open::Array(count)) => lengths[*count] += 1,
        Some(Open::Object { expect_key, .. }) => *expect_key = true,
        None => {}
    }
}

impl Facts {
    fn verdict(&self, json: &[u8], expected_kind: Option<&str>) -> R7 {
        let plain = !self.unsure && self.kinds <= 1 && self.metadatas == 1 && self.names == 1;
        let named = self.name.is_some_and(|(from, to)| to > from);
        let kind_fits = match (expected_kind, self.kind) {
            (Some(expected), Some((from, to))) => &json[from..to] == expected.as_bytes(),
            _ => true,
        };
        if plain && named && kind_fits {
            R7::Passes
        } else {
            R7::Unsure
        }
    }
}

/// What a key of an object with `role` means for the verdict: the value it
/// introduces, if the verdict needs it.
fn key_role(role: Role, key: &[u8], escaped: bool, facts: &mut Facts) -> Option<Wanted> {
    if role == Role::Other {
        return None;
    }
    if escaped {
        // `"n\u0061me"` is `name`: too fancy to tell here.
        facts.unsure = true;
        return None;
    }
    match (role, key) {
        (Role::Object, b"kind") => {
            facts.kinds += 1;
            Some(Wanted::Kind)
        }
        (Role::Object, b"metadata") => {
            facts.metadatas += 1;
            Some(Wanted::Metadata)
        }
        (Role::Metadata, b"name") => {
            facts.names += 1;
            Some(Wanted::Name)
        }
        _ => None,
    }
}

/// The index of the quote that closes a string whose text starts at
/// `from` (or the end of `json` if it is not closed), and whether the
/// string holds escapes.
fn string_end(json: &[u8], mut from: usize) -> (usize, bool) {
    let mut escaped = false;
    while let Some(at) = memchr::memchr2(b'"', b'\\', &json[from.min(json.len())..]) {
        let at = from + at;
        if json[at] == b'"' {
            return (at, escaped);
        }
        escaped = true;
        from = at + 2;
    }
    (json.len(), escaped)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;
    use crate::source::decode::probe;

    #[test]
    fn counts_arrays_in_opening_order() {
        let text = r#" [ [], [1, [2,3], {"a": [ ], "b,]\"[": "x,y"}], [ {} ] , "[", [[[]]] ] "#;
        assert_eq!(scan(text, None).lengths, [5, 0, 3, 2, 0, 1, 1, 1, 0]);
        assert_eq!(scan(r#"{"a": "\\", "b": [1]}"#, None).lengths, [1]);
        assert!(scan("{}", None).lengths.is_empty());
    }

    #[test]
    fn r7_passes_only_plain_objects() {
        let passes = |text: &str, kind: Option<&str>| scan(text, kind).r7 == R7::Passes;
        let pod =
            r#"{"kind":"Pod","metadata":{"labels":{"name":""},"name":"p"},"spec":{"name":[]}}"#;
        assert!(passes(pod, Some("Pod")));
        assert!(passes(pod, None));
        assert!(passes(r#" {"metadata" : { "name" : "p" } } "#, Some("Pod")));
        assert!(passes(r#"{"kind":3,"metadata":{"name":"p"}}"#, Some("Pod")));
        for unsure in [
            r#"{"kind":"Secret","metadata":{"name":"p"}}"#,
            r#"{"kind":"P\u006fd","metadata":{"name":"p"}}"#,
            r#"{"kind":"Pod","metadata":{"name":"p\u0070"}}"#,
            r#"{"kind":"Pod","kind":"Pod","metadata":{"name":"p"}}"#,
            r#"{"metadata":{"name":"p"},"metadata":{"name":"p"}}"#,
            r#"{"metadata":{"name":"p","name":"q"}}"#,
            r#"{"metadata":{"name":""}}"#,
            r#"{"metadata":{"name":7}}"#,
            r#"{"metadata":{}}"#,
            r#"{"metadata":null}"#,
            r#"{"metadata":["p"]}"#,
            r#"{"spec":{"metadata":{"name":"p"}}}"#,
            r#"{"m\u0065tadata":{"name":"p"}}"#,
            r#"[{"metadata":{"name":"p"}}]"#,
            r#""{\"metadata\":{\"name\":\"p\"}}""#,
            "",
        ] {
            assert!(!passes(unsure, Some("Pod")), "{unsure}");
        }
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("kind".to_owned()),
            Just("metadata".to_owned()),
            Just("name".to_owned()),
            Just("n\\u0061me".to_owned()),
            "[a-z\\[\\]{},:\"]{0,3}",
        ]
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            prop_oneof![
                Just("Pod"),
                Just("Secret"),
                Just(""),
                Just("p"),
                Just("a\\\"[")
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Objects shaped like Kubernetes objects more often than not: a kind,
    /// a metadata with a name, each of any value or missing.
    fn objectish() -> impl Strategy<Value = Value> {
        let maybe = |s: BoxedStrategy<Value>| prop::option::weighted(0.8, s);
        // Strings the checks compare, some of them written with escapes.
        let field = || {
            prop_oneof![
                3 => prop_oneof![Just("Pod"), Just("Secret"), Just(""), Just("p"), Just("P\"od"), Just("p\n")]
                    .prop_map(Value::from),
                1 => any_json(),
            ]
            .boxed()
        };
        let metadata = prop_oneof![
            any_json(),
            (maybe(field()), any_json()).prop_map(|(name, other)| {
                let mut meta = serde_json::Map::new();
                if let Some(name) = name {
                    meta.insert("name".into(), name);
                }
                meta.insert("namespace".into(), other);
                Value::Object(meta)
            }),
        ];
        (maybe(field()), maybe(metadata.boxed()), any_json()).prop_map(|(kind, metadata, rest)| {
            let mut object = match rest {
                Value::Object(object) => object,
                _ => serde_json::Map::new(),
            };
            if let Some(kind) = kind {
                object.insert("kind".into(), kind);
            }
            if let Some(metadata) = metadata {
                object.insert("metadata".into(), metadata);
            }
            Value::Object(object)
        })
    }

    proptest! {
        // Cheap cases, and the faults that matter are a few in a hundred.
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// The scan passes only what the exact probe accepts, whatever the
        /// object (keys that matter are generated often, in any place).
        #[test]
        fn r7_passes_implies_the_probe_accepts(value in prop_oneof![any_json(), objectish()], pretty in any::<bool>(), kind in prop::option::of(Just("Pod"))) {
            let text = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) }.unwrap();
            if scan(&text, kind).r7 == R7::Passes {
                prop_assert!(probe::check(&text, kind).is_ok(), "{}", text);
            }
        }

        /// The counts are the lengths of the text's arrays in the order
        /// they open, whatever the keys and strings hold (brackets,
        /// commas, colons, quotes) and however the text is spaced.
        #[test]
        fn lengths_are_the_arrays_in_opening_order(value in any_json(), pretty in any::<bool>()) {
            fn walk(value: &Value, lengths: &mut Vec<u32>) {
                match value {
                    Value::Array(items) => {
                        lengths.push(items.len() as u32);
                        items.iter().for_each(|item| walk(item, lengths));
                    }
                    Value::Object(map) => map.values().for_each(|item| walk(item, lengths)),
                    _ => {}
                }
            }
            let text = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) }.unwrap();
            let mut expected = Vec::new();
            walk(&value, &mut expected);
            prop_assert_eq!(scan(&text, None).lengths, expected, "{}", text);
        }

        /// And it does pass plain objects, wherever their fields are.
        #[test]
        fn r7_passes_plain_objects(mut value in any_json(), name in "[a-z]{1,5}", pretty in any::<bool>()) {
            let mut object = match value.take() { Value::Object(object) => object, _ => serde_json::Map::new() };
            // Escaped keys at the top are not plain: the probe decides those.
            object.retain(|key, _| key != "kind" && !key.contains(['\\', '"']));
            object.insert("metadata".into(), serde_json::json!({"namespace": "n", "name": name}));
            let text = if pretty { serde_json::to_string_pretty(&object) } else { serde_json::to_string(&object) }.unwrap();
            prop_assert_eq!(scan(&text, Some("Pod")).r7, R7::Passes, "{}", text);
        }
    }
}
