//! Writes a deterministic workload file (see [`crate::workload`] for the format).
//!
//! The objects look like ConfigMaps a Helm-managed application keeps: five
//! recommended labels, three annotations, ten data entries of 40 to 200 bytes
//! and the managedFields the API server adds (one entry from creation, one
//! more once a controller has updated the data). That is about 2.8 KB of JSON
//! per object, close to what real clusters hold for ConfigMaps.

use rand::{Rng, SeedableRng, distr::Alphanumeric, rngs::StdRng, seq::SliceRandom};
use serde_json::{Map, Value, json};
use std::io::{self, Write};

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Objects in the initial list.
    pub objects: usize,
    /// MODIFIED events after the list, each on a key drawn uniformly.
    pub updates: usize,
    /// Percentage of the objects deleted at the end.
    pub delete_percent: usize,
    /// Seed of the random generator: equal specs give equal files.
    pub seed: u64,
}

impl Spec {
    /// How many objects are deleted at the end.
    pub fn deletes(&self) -> usize {
        self.objects * self.delete_percent / 100
    }
}

const NAMESPACES: usize = 20;
const COMPONENTS: [&str; 5] = ["api", "worker", "frontend", "cache", "batch"];
const ENVIRONMENTS: [&str; 3] = ["prod", "staging", "dev"];
const DATA_KEYS: [&str; 10] = [
    "application.properties",
    "logging.yaml",
    "features.json",
    "endpoints.conf",
    "limits.yaml",
    "cache.conf",
    "auth.yaml",
    "tracing.yaml",
    "routes.conf",
    "env",
];

/// The evolving state of one generated ConfigMap.
struct Object {
    index: usize,
    uid: String,
    created: String,
    checksum: String,
    data: Vec<String>,
    /// Data keys a controller has rewritten, and when it last did.
    updated_keys: u16,
    updated_at: Option<String>,
    resource_version: u64,
}

/// Writes the workload described by `spec` to `out`.
pub fn write_workload(spec: Spec, out: &mut impl Write) -> io::Result<()> {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let mut resource_version = 0u64;
    let mut objects: Vec<Object> = (0..spec.objects)
        .map(|index| {
            resource_version += 1;
            new_object(index, resource_version, &mut rng)
        })
        .collect();

    write!(
        out,
        r#"{{"type":"LIST","object":{{"apiVersion":"v1","kind":"ConfigMapList","metadata":{{"resourceVersion":"{resource_version}"}},"items":["#
    )?;
    for (position, object) in objects.iter().enumerate() {
        if position > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &render(object))?;
    }
    out.write_all(b"]}}\n")?;

    for _ in 0..spec.updates {
        let object = &mut objects[rng.random_range(0..spec.objects)];
        let entry = rng.random_range(0..DATA_KEYS.len());
        object.data[entry] = random_text(&mut rng, 40, 200);
        resource_version += 1;
        object.resource_version = resource_version;
        object.updated_keys |= 1 << entry;
        object.updated_at = Some(timestamp(resource_version));
        write_event(out, "MODIFIED", object)?;
    }

    let mut doomed: Vec<usize> = (0..spec.objects).collect();
    doomed.shuffle(&mut rng);
    for &index in &doomed[..spec.deletes()] {
        let object = &mut objects[index];
        resource_version += 1;
        object.resource_version = resource_version;
        write_event(out, "DELETED", object)?;
    }
    out.flush()
}

fn write_event(out: &mut impl Write, kind: &str, object: &Object) -> io::Result<()> {
    write!(out, r#"{{"type":"{kind}","object":"#)?;
    serde_json::to_writer(&mut *out, &render(object))?;
    out.write_all(b"}\n")
}

fn new_object(index: usize, resource_version: u64, rng: &mut StdRng) -> Object {
    Object {
        index,
        uid: format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            rng.random::<u32>(),
            rng.random::<u16>(),
            rng.random::<u16>() & 0xfff,
            rng.random::<u16>() & 0xfff,
            rng.random::<u64>() & 0xffff_ffff_ffff
        ),
        created: timestamp(resource_version),
        checksum: (0..4)
            .map(|_| format!("{:016x}", rng.random::<u64>()))
            .collect(),
        data: (0..DATA_KEYS.len())
            .map(|_| random_text(rng, 40, 200))
            .collect(),
        updated_keys: 0,
        updated_at: None,
        resource_version,
    }
}

fn render(object: &Object) -> Value {
    let i = object.index;
    let namespace = format!("team-{:02}", i % NAMESPACES);
    let release = format!("svc-{:03}", i % 500);
    let data: Map<String, Value> = DATA_KEYS
        .iter()
        .zip(&object.data)
        .map(|(key, value)| (key.to_string(), Value::String(value.clone())))
        .collect();
    let labels = json!({
        "app.kubernetes.io/name": release,
        "app.kubernetes.io/component": COMPONENTS[i % COMPONENTS.len()],
        "app.kubernetes.io/part-of": format!("platform-{:02}", i % 20),
        "app.kubernetes.io/managed-by": "Helm",
        "environment": ENVIRONMENTS[i % ENVIRONMENTS.len()],
    });
    let annotations = json!({
        "meta.helm.sh/release-name": release,
        "meta.helm.sh/release-namespace": namespace,
        "config.example.com/checksum": object.checksum,
    });
    let mut managed_fields = vec![json!({
        "manager": "helm",
        "operation": "Update",
        "apiVersion": "v1",
        "time": object.created,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:data": field_set(DATA_KEYS.iter().copied()),
            "f:metadata": {
                "f:annotations": field_set(annotations.as_object().into_iter().flat_map(|m| m.keys().map(String::as_str))),
                "f:labels": field_set(labels.as_object().into_iter().flat_map(|m| m.keys().map(String::as_str))),
            }
        }
    })];
    if let Some(updated_at) = &object.updated_at {
        let keys = DATA_KEYS
            .iter()
            .enumerate()
            .filter(|(bit, _)| object.updated_keys & (1 << bit) != 0)
            .map(|(_, key)| *key);
        managed_fields.push(json!({
            "manager": "config-reloader",
            "operation": "Update",
            "apiVersion": "v1",
            "time": updated_at,
            "fieldsType": "FieldsV1",
            "fieldsV1": { "f:data": field_set(keys) }
        }));
    }
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("app-config-{i:06}"),
            "namespace": namespace,
            "uid": object.uid,
            "resourceVersion": object.resource_version.to_string(),
            "creationTimestamp": object.created,
            "labels": labels,
            "annotations": annotations,
            "managedFields": managed_fields,
        },
        "data": data,
    })
}

/// A managedFields set: `{"f:<name>": {}}` for each name.
fn field_set<'a>(names: impl Iterator<Item = &'a str>) -> Value {
    Value::Object(names.map(|name| (format!("f:{name}"), json!({}))).collect())
}

fn random_text(rng: &mut StdRng, min: usize, max: usize) -> String {
    let len = rng.random_range(min..=max);
    rng.sample_iter(Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// An RFC 3339 time that moves forward one second per ten resource versions.
fn timestamp(resource_version: u64) -> String {
    let seconds = resource_version / 10;
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    format!(
        "2026-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        1 + (days / 28) % 12,
        1 + days % 28,
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Counts, Workload};

    fn generate(spec: Spec) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_workload(spec, &mut bytes).unwrap();
        bytes
    }

    #[test]
    fn same_seed_same_bytes_and_the_counts_asked_for() {
        let spec = Spec {
            objects: 50,
            updates: 80,
            delete_percent: 10,
            seed: 7,
        };
        let bytes = generate(spec);
        assert_eq!(bytes, generate(spec));
        assert_ne!(bytes, generate(Spec { seed: 8, ..spec }));

        let workload = Workload::parse(&bytes).unwrap();
        assert_eq!(
            workload.counts(),
            Counts {
                listed: 50,
                applied: 80,
                deleted: 5
            }
        );
        assert_eq!(workload.list_resource_version, "50");
        let phases = workload.into_phases();
        assert_eq!(phases.updates.len(), 80);
        assert_eq!(phases.deletes.len(), 5);
    }

    #[test]
    fn objects_are_realistic_and_versions_increase() {
        let bytes = generate(Spec {
            objects: 20,
            updates: 30,
            delete_percent: 10,
            seed: 1,
        });
        let workload = Workload::parse(&bytes).unwrap();
        let first = &workload.list[0];
        assert_eq!(first.data.as_ref().unwrap().len(), 10);
        assert_eq!(first.metadata.labels.as_ref().unwrap().len(), 5);
        assert_eq!(first.metadata.annotations.as_ref().unwrap().len(), 3);
        assert!(!first.metadata.managed_fields.as_ref().unwrap().is_empty());
        let per_object = bytes.len() / (20 + 30 + 2);
        assert!(
            (1500..4000).contains(&per_object),
            "{per_object} bytes per object"
        );

        let versions: Vec<u64> = workload
            .events
            .iter()
            .map(|event| {
                event
                    .object
                    .metadata
                    .resource_version
                    .as_ref()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert!(versions.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(versions[0] > 20);
    }
}
