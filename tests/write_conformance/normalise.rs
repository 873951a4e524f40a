//! Makes two recordings of one script comparable: what the two servers
//! cannot agree on (identities, times, resourceVersion numbers, the
//! namespace's name, `generateName` suffixes) becomes a placeholder.
//!
//! - a `uid` → `<uid-N>`, N by first appearance (also where a message or
//!   an ownerReference quotes it);
//! - a `resourceVersion` → `<rv-N>`, N its rank among the run's
//!   resourceVersions (both servers only ever count up), also where a
//!   message quotes it;
//! - an RFC 3339 time (`creationTimestamp`, `deletionTimestamp`,
//!   `managedFields[].time`) → `<time>`;
//! - the namespace's name → `<ns>`;
//! - a name made from `generateName: p` → `p<gen-N>`, N by first appearance;
//! - a uid quoted inside a key (a `managedFields` entry's
//!   `k:{"uid":"…"}` for an owner reference) → the same `<uid-N>`;
//! - `managedFields` entries are sorted by operation, manager, apiVersion
//!   and subresource: both servers order them by the second each was
//!   written in, which the `<time>` placeholders no longer show and which
//!   two runs need not share;
//! - the causes of a server-side apply conflict (`FieldManagerConflict`)
//!   are sorted by field and message: kube-apiserver lists them in the
//!   order it happens to walk its managers, which changes from run to run.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::run::Recording;

/// The recording as one JSON document with placeholders:
/// `{"steps": [{"status", "body"}…], "events": {"<plural>": [event…]}}`.
pub fn normalise(recording: &Recording) -> Value {
    let events: Map<String, Value> = recording
        .events
        .iter()
        .map(|(kind, events)| (kind.plural().to_owned(), Value::Array(events.clone())))
        .collect();
    let mut doc = json!({
        "steps": serde_json::to_value(&recording.steps).expect("records are JSON"),
        "events": events,
    });
    let mut seen = Seen::default();
    seen.collect(&doc);
    let names = Names::from(&seen, &recording.namespace);
    names.rewrite(&mut doc, None);
    sort_managed_fields(&mut doc);
    sort_conflict_causes(&mut doc);
    doc
}

/// Sorts the causes of every apply conflict `Status` by field and message.
fn sort_conflict_causes(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(causes)) = map
                .get_mut("details")
                .and_then(|d| d.get_mut("causes"))
                .filter(|c| {
                    c.as_array().is_some_and(|c| {
                        c.iter()
                            .all(|cause| cause["reason"] == "FieldManagerConflict")
                    })
                })
            {
                causes.sort_by_key(|c| {
                    ["field", "message"].map(|k| c[k].as_str().unwrap_or("").to_owned())
                });
            }
            map.values_mut().for_each(sort_conflict_causes);
        }
        Value::Array(items) => items.iter_mut().for_each(sort_conflict_causes),
        _ => {}
    }
}

/// Sorts every `managedFields` list by operation, manager, apiVersion and
/// subresource: both servers order entries by the time of their last
/// write first, which has a resolution of one second, so the order of two
/// managers' entries depends on whether their writes fell in one second.
pub fn sort_managed_fields(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(entries)) = map.get_mut("managedFields") {
                let key = |e: &Value| {
                    ["operation", "manager", "apiVersion", "subresource"]
                        .map(|k| e[k].as_str().unwrap_or("").to_owned())
                };
                entries.sort_by_key(key);
            }
            map.values_mut().for_each(sort_managed_fields);
        }
        Value::Array(items) => items.iter_mut().for_each(sort_managed_fields),
        _ => {}
    }
}

#[derive(Default)]
struct Seen {
    uids: Vec<String>,
    rvs: BTreeSet<u64>,
    generated: Vec<(String, String)>,
}

impl Seen {
    fn collect(&mut self, value: &Value) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(uid)) = map.get("uid")
                    && !uid.is_empty()
                    && !self.uids.contains(uid)
                {
                    self.uids.push(uid.clone());
                }
                if let Some(rv) = map
                    .get("resourceVersion")
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse().ok())
                {
                    self.rvs.insert(rv);
                }
                if let (Some(Value::String(prefix)), Some(Value::String(name))) =
                    (map.get("generateName"), map.get("name"))
                    && name.starts_with(prefix.as_str())
                    && name.len() > prefix.len()
                    && !self.generated.iter().any(|(n, _)| n == name)
                {
                    self.generated.push((name.clone(), prefix.clone()));
                }
                map.values().for_each(|v| self.collect(v));
            }
            Value::Array(items) => items.iter().for_each(|v| self.collect(v)),
            _ => {}
        }
    }
}

/// Every replacement, longest first so that no placeholder is cut into.
struct Names {
    whole: BTreeMap<String, String>,
    substrings: Vec<(String, String)>,
    rvs: BTreeMap<String, String>,
}

impl Names {
    fn from(seen: &Seen, namespace: &str) -> Self {
        let mut whole = BTreeMap::new();
        for (i, uid) in seen.uids.iter().enumerate() {
            whole.insert(uid.clone(), format!("<uid-{}>", i + 1));
        }
        for (i, (name, prefix)) in seen.generated.iter().enumerate() {
            whole.insert(name.clone(), format!("{prefix}<gen-{}>", i + 1));
        }
        if !namespace.is_empty() {
            whole.insert(namespace.to_owned(), "<ns>".to_owned());
        }
        let rvs = seen
            .rvs
            .iter()
            .enumerate()
            .map(|(i, rv)| (rv.to_string(), format!("<rv-{}>", i + 1)))
            .collect();
        let mut substrings: Vec<(String, String)> =
            whole.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        substrings.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
        Names {
            whole,
            substrings,
            rvs,
        }
    }

    fn rewrite(&self, value: &mut Value, key: Option<&str>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    self.rewrite(v, Some(k));
                }
                let quoting: Vec<String> = map
                    .keys()
                    .filter(|k| k.starts_with("k:{"))
                    .filter(|k| {
                        self.substrings
                            .iter()
                            .any(|(from, _)| k.contains(from.as_str()))
                    })
                    .cloned()
                    .collect();
                for old in quoting {
                    if let Some(v) = map.remove(&old) {
                        let mut new = old.clone();
                        for (from, to) in &self.substrings {
                            new = new.replace(from.as_str(), to);
                        }
                        map.insert(new, v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.rewrite(v, key)),
            Value::String(s) => *s = self.rewrite_str(s, key),
            _ => {}
        }
    }

    fn rewrite_str(&self, s: &str, key: Option<&str>) -> String {
        if is_time(s) {
            return "<time>".to_owned();
        }
        if key == Some("resourceVersion")
            && let Some(rv) = self.rvs.get(s)
        {
            return rv.clone();
        }
        if let Some(placeholder) = self.whole.get(s) {
            return placeholder.clone();
        }
        if !matches!(key, Some("message" | "text")) {
            return s.to_owned();
        }
        let mut out = s.to_owned();
        for (from, to) in &self.substrings {
            if out.contains(from.as_str()) {
                out = out.replace(from.as_str(), to);
            }
        }
        replace_numbers(&out, &self.rvs)
    }
}

/// Replaces each run of digits that is a known resourceVersion and that
/// a message quotes as one (the text just before it names a
/// resourceVersion): other numbers, such as a column in a parse error,
/// stay.
fn replace_numbers(s: &str, rvs: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        let tail: String = out
            .chars()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        match rvs.get(digits.as_str()) {
            Some(rv) if tail.to_ascii_lowercase().contains("resourceversion") => out.push_str(rv),
            _ => out.push_str(digits),
        }
        digits.clear();
    };
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

/// `2025-01-02T03:04:05Z`, with optional fractional seconds.
fn is_time(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 || !s.ends_with('Z') {
        return false;
    }
    let digit = |i: usize| b[i].is_ascii_digit();
    (0..4).all(digit)
        && b[4] == b'-'
        && digit(5)
        && digit(6)
        && b[7] == b'-'
        && digit(8)
        && digit(9)
        && b[10] == b'T'
        && digit(11)
        && digit(12)
        && b[13] == b':'
        && digit(14)
        && digit(15)
        && b[16] == b':'
        && digit(17)
        && digit(18)
        && (b.len() == 20 || (b[19] == b'.' && b[20..b.len() - 1].iter().all(u8::is_ascii_digit)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wc2_times_are_recognised() {
        assert!(is_time("2025-01-02T03:04:05Z"));
        assert!(is_time("2025-01-02T03:04:05.123456Z"));
        assert!(!is_time("2025-01-02"));
        assert!(!is_time("uid-3"));
    }

    #[test]
    fn wc2_managed_fields_are_sorted_and_uids_in_keys_replaced() {
        let uid = "9de567c2-3af6-4c63-bae3-b602781a705e";
        let owner_key = format!("k:{{\"uid\":\"{uid}\"}}");
        let recording_doc = json!({
            "metadata": {"uid": uid, "managedFields": [
                {"manager": "unknown", "operation": "Update", "time": "2025-01-02T03:04:06Z"},
                {"manager": "creator", "operation": "Update", "time": "2025-01-02T03:04:05Z",
                 "fieldsV1": {"f:metadata": {"f:ownerReferences": {owner_key: {}}}}},
                {"manager": "m1", "operation": "Apply", "time": "2025-01-02T03:04:07Z"},
            ]}
        });
        let mut seen = Seen::default();
        seen.collect(&recording_doc);
        let names = Names::from(&seen, "ns");
        let mut doc = recording_doc.clone();
        names.rewrite(&mut doc, None);
        sort_managed_fields(&mut doc);
        let managers: Vec<_> = doc["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["m1", "creator", "unknown"]);
        let owners =
            &doc["metadata"]["managedFields"][1]["fieldsV1"]["f:metadata"]["f:ownerReferences"];
        assert!(owners.get("k:{\"uid\":\"<uid-1>\"}").is_some(), "{owners}");
    }

    #[test]
    fn wc2_apply_conflict_causes_are_sorted_and_other_causes_kept_in_order() {
        let cause = |reason: &str, field: &str| json!({"reason": reason, "field": field});
        let mut doc = json!({"steps": [
            {"body": {"details": {"causes": [
                cause("FieldManagerConflict", ".spec.size"),
                cause("FieldManagerConflict", ".metadata.labels.owner"),
            ]}}},
            {"body": {"details": {"causes": [
                cause("FieldValueInvalid", "spec.b"),
                cause("FieldValueInvalid", "spec.a"),
            ]}}},
        ]});
        sort_conflict_causes(&mut doc);
        let fields = |step: usize| -> Vec<String> {
            doc["steps"][step]["body"]["details"]["causes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["field"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(fields(0), [".metadata.labels.owner", ".spec.size"]);
        assert_eq!(fields(1), ["spec.b", "spec.a"]);
    }

    #[test]
    fn wc2_numbers_in_messages_that_are_resource_versions_are_replaced() {
        let rvs = BTreeMap::from([("17".to_owned(), "<rv-1>".to_owned())]);
        assert_eq!(
            replace_numbers("ResourceVersion in precondition: 17, not 170", &rvs),
            "ResourceVersion in precondition: <rv-1>, not 170"
        );
        assert_eq!(
            replace_numbers("line 1 column 17", &rvs),
            "line 1 column 17"
        );
    }
}
