//! The wire workload: realistic Pods, serialized once before any runner
//! connects, so the server only copies bytes while a runner is measured.
//!
//! Each Pod looks like one a Deployment's ReplicaSet made and a kubelet
//! reports on: labels, annotations, an ownerReference, two managedFields
//! entries (the controller's spec and the kubelet's status), two containers
//! with env, ports, resources and volumeMounts, tolerations, a projected
//! service-account volume, and a status with conditions and
//! containerStatuses. Serialized it is about 3.7 KB of JSON.
//!
//! The objects are numbered 0..N. Object `i` is listed at resourceVersion
//! `i + 1`, so the list's resourceVersion is `N`. Watch event `j` (0-based)
//! carries resourceVersion `N + 1 + j`: first U `MODIFIED` events on keys
//! drawn uniformly with a fixed seed, then D `DELETED` events for D distinct
//! keys, each carrying the key's last state.

use bytes::Bytes;
use rand::{Rng, SeedableRng, rngs::StdRng, seq::SliceRandom};
use serde_json::{Value, json};

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireSpec {
    /// N: Pods in the initial list.
    pub objects: usize,
    /// U: `MODIFIED` events.
    pub updates: usize,
    /// D: `DELETED` events (at most N).
    pub deletes: usize,
    /// Seed of the key choice.
    pub seed: u64,
}

impl WireSpec {
    /// The benchmark's shape: U = 2N modifications, D = N/10 deletes.
    pub fn standard(objects: usize, seed: u64) -> Self {
        Self {
            objects,
            updates: 2 * objects,
            deletes: objects / 10,
            seed,
        }
    }
}

/// Namespaces the Pods are spread over.
pub const NAMESPACES: usize = 20;

/// The serialized workload.
#[derive(Debug, Clone)]
pub struct WireWorkload {
    /// What it was generated from.
    pub spec: WireSpec,
    /// The N list items, each one Pod's JSON.
    pub items: Vec<Bytes>,
    /// The U + D watch events, each one complete line
    /// `{"type":…,"object":…}\n` as the API server writes it.
    pub events: Vec<Bytes>,
    /// Each event's type (`MODIFIED` or `DELETED`).
    pub event_types: Vec<&'static str>,
    /// Each event's object, a slice of its line.
    pub event_objects: Vec<Bytes>,
}

impl WireWorkload {
    /// Generates the workload of `spec`.
    pub fn generate(spec: WireSpec) -> Self {
        let deletes = spec.deletes.min(spec.objects);
        let items = (0..spec.objects)
            .map(|index| Bytes::from(serialize(&pod(index, 0, index as u64 + 1))))
            .collect();
        let mut versions = vec![0u64; spec.objects];
        let mut rng = StdRng::seed_from_u64(spec.seed);
        let mut events = Vec::with_capacity(spec.updates + deletes);
        let mut event_types = Vec::with_capacity(spec.updates + deletes);
        let mut rv = spec.objects as u64;
        if spec.objects > 0 {
            for _ in 0..spec.updates {
                let index = rng.random_range(0..spec.objects);
                versions[index] += 1;
                rv += 1;
                events.push(event_line("MODIFIED", &pod(index, versions[index], rv)));
                event_types.push("MODIFIED");
            }
        }
        let mut doomed: Vec<usize> = (0..spec.objects).collect();
        doomed.shuffle(&mut rng);
        for &index in doomed.iter().take(deletes) {
            rv += 1;
            events.push(event_line("DELETED", &pod(index, versions[index], rv)));
            event_types.push("DELETED");
        }
        let event_objects = events
            .iter()
            .zip(&event_types)
            .map(|(line, kind)| {
                line.slice(event_prefix(kind).len()..line.len() - EVENT_SUFFIX.len())
            })
            .collect();
        Self {
            spec: WireSpec { deletes, ..spec },
            items,
            events,
            event_types,
            event_objects,
        }
    }

    /// The resourceVersion of the initial list.
    pub fn list_resource_version(&self) -> u64 {
        self.spec.objects as u64
    }

    /// The resourceVersion of the last watch event.
    pub fn last_resource_version(&self) -> u64 {
        self.list_resource_version() + self.events.len() as u64
    }

    /// Mean size of a listed Pod's JSON, in bytes.
    pub fn mean_item_bytes(&self) -> f64 {
        if self.items.is_empty() {
            return 0.0;
        }
        self.items.iter().map(Bytes::len).sum::<usize>() as f64 / self.items.len() as f64
    }
}

fn serialize(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("a JSON value always serializes")
}

/// What precedes an event's object on its line: the type first, as the
/// API server writes it.
fn event_prefix(kind: &str) -> String {
    format!(r#"{{"type":"{kind}","object":"#)
}

/// What follows an event's object on its line.
const EVENT_SUFFIX: &[u8] = b"}\n";

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = event_prefix(kind).into_bytes();
    line.extend_from_slice(&serialize(object));
    line.extend_from_slice(EVENT_SUFFIX);
    Bytes::from(line)
}

/// A 64-bit mix of `x` (splitmix64's finalizer): stable pseudo-random
/// identifiers without keeping any state per object.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn uid(seed: u64) -> String {
    let a = mix(seed);
    let b = mix(a);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

fn timestamp(seconds: u64) -> String {
    // 2026-11-01T00:00:00Z plus `seconds` (within one month: days < 28).
    let seconds = seconds % (27 * 86_400);
    format!(
        "2026-11-{:02}T{:02}:{:02}:{:02}Z",
        1 + seconds / 86_400,
        (seconds / 3_600) % 24,
        (seconds / 60) % 60,
        seconds % 60
    )
}

/// Pod `index` at its `version`-th modification, with resourceVersion `rv`.
pub fn pod(index: usize, version: u64, rv: u64) -> Value {
    let id = index as u64;
    let app = format!("svc-{:03}", index % 150);
    let template_hash = format!("{:010x}", mix(id / 7 + 1_000_000) & 0xff_ffff_ffff);
    let replica_set = format!("{app}-{template_hash}");
    let name = format!("{replica_set}-{:05x}", mix(id) & 0xf_ffff);
    let name = format!("{name}{index}");
    let namespace = format!("team-{:02}", index % NAMESPACES);
    let created = timestamp(mix(id) % 86_400);
    let changed = timestamp(86_400 + (mix(id) % 86_400) + version * 37);
    let node = format!("node-{:03}", mix(id + 7) % 400);
    let pod_ip = format!(
        "10.{}.{}.{}",
        64 + index % 64,
        (index / 64) % 256,
        2 + index % 250
    );
    let image_tag = format!("1.{}.{}", index % 9, index % 31);
    let restarts = version % 4;
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid(id),
            "resourceVersion": rv.to_string(),
            "creationTimestamp": created,
            "labels": {
                "app.kubernetes.io/name": app,
                "app.kubernetes.io/version": image_tag,
                "pod-template-hash": template_hash,
                "tier": if index.is_multiple_of(3) { "backend" } else { "frontend" }
            },
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "example.com/revision": version.to_string()
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": replica_set,
                "uid": uid(id / 7 + 1_000_000),
                "controller": true,
                "blockOwnerDeletion": true
            }],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": created,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {
                            "f:annotations": {".": {}, "f:prometheus.io/port": {}, "f:prometheus.io/scrape": {}},
                            "f:labels": {".": {}, "f:app.kubernetes.io/name": {}, "f:pod-template-hash": {}},
                            "f:ownerReferences": {".": {}}
                        },
                        "f:spec": {
                            "f:containers": {
                                "k:{\"name\":\"app\"}": {".": {}, "f:env": {".": {}}, "f:image": {}, "f:name": {}, "f:ports": {".": {}}, "f:resources": {".": {}}},
                                "k:{\"name\":\"proxy\"}": {".": {}, "f:image": {}, "f:name": {}}
                            }
                        }
                    }
                },
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": changed,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:status": {
                            "f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:lastTransitionTime": {}, "f:status": {}}},
                            "f:containerStatuses": {}, "f:phase": {}, "f:podIP": {}
                        }
                    },
                    "subresource": "status"
                }
            ]
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": format!("registry.example.com/storefront/{app}:{image_tag}"),
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                    "env": [
                        {"name": "LOG_LEVEL", "value": "info"},
                        {"name": "GOMAXPROCS", "value": "2"}
                    ],
                    "resources": {"limits": {"memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
                    "volumeMounts": [
                        {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}
                    ],
                    "imagePullPolicy": "IfNotPresent"
                },
                {
                    "name": "proxy",
                    "image": "registry.example.com/mesh/proxy:2.4.1",
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                    "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]
                }
            ],
            "volumes": [
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                ]}}
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": node,
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ]
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": changed},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": changed}
            ],
            "podIP": pod_ip,
            "startTime": created,
            "containerStatuses": [
                {"name": "app", "state": {"running": {"startedAt": changed}}, "ready": true, "restartCount": restarts,
                 "image": format!("registry.example.com/storefront/{app}:{image_tag}"),
                 "imageID": format!("sha256:{:016x}{:016x}", mix(id + 1), mix(id + 2)),
                 "containerID": format!("containerd://{:016x}{:016x}", mix(id * 31 + version), mix(id * 37 + version)), "started": true},
                {"name": "proxy", "state": {"running": {"startedAt": created}}, "ready": true, "restartCount": 0,
                 "image": "registry.example.com/mesh/proxy:2.4.1",
                 "imageID": "sha256:4f1c2a9e8d7b6a5c4f3e2d1c0b9a8f7e",
                 "containerID": format!("containerd://{:016x}{:016x}", mix(id * 41), mix(id * 43)), "started": true}
            ],
            "qosClass": "Burstable"
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn pods_decode_as_typed_pods_and_are_about_3_7_kb() {
        let workload = WireWorkload::generate(WireSpec::standard(200, 1));
        let size = workload.mean_item_bytes();
        assert!((3_300.0..4_100.0).contains(&size), "mean Pod size {size}");
        for item in &workload.items {
            let pod: Pod = serde_json::from_slice(item).unwrap();
            assert_eq!(pod.metadata.managed_fields.as_ref().map(Vec::len), Some(2));
            assert_eq!(pod.spec.as_ref().unwrap().containers.len(), 2);
        }
    }

    #[test]
    fn events_follow_the_list_in_resource_version_order() {
        let workload = WireWorkload::generate(WireSpec::standard(100, 2));
        assert_eq!(workload.events.len(), 200 + 10);
        let mut names = std::collections::HashSet::new();
        for (index, line) in workload.events.iter().enumerate() {
            assert_eq!(line.last(), Some(&b'\n'));
            let event: Value = serde_json::from_slice(line).unwrap();
            let expected_type = if index < 200 { "MODIFIED" } else { "DELETED" };
            assert_eq!(event["type"], expected_type);
            assert_eq!(
                event["object"]["metadata"]["resourceVersion"],
                (101 + index).to_string()
            );
            if index >= 200 {
                assert!(names.insert(event["object"]["metadata"]["name"].clone()));
            }
            assert_eq!(workload.event_types[index], expected_type);
            let object: Value = serde_json::from_slice(&workload.event_objects[index]).unwrap();
            assert_eq!(object, event["object"]);
        }
        assert_eq!(workload.last_resource_version(), 310);
    }

    #[test]
    fn names_are_unique() {
        let workload = WireWorkload::generate(WireSpec::standard(1_000, 1));
        let names: std::collections::HashSet<_> = workload
            .items
            .iter()
            .map(|item| serde_json::from_slice::<Value>(item).unwrap()["metadata"]["name"].clone())
            .collect();
        assert_eq!(names.len(), 1_000);
    }
}
