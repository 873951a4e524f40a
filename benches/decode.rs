//! Decoding what the API server sends: list pages of 500 realistic Pods
//! (≈ 3.7 KB each) and watch lines, through
//!
//! - `value`: JSON → `serde_json::Value` → `from_value::<Pod>` (the old path),
//! - `source`: the source's decoder (envelope with the object as borrowed
//!   `&RawValue`, the R7 probe of kind and name, one typed decode with
//!   exact vector capacities),
//! - `typed_only`: envelope + typed decode + a look at `metadata.name`,
//!   without the probe (the other way to check R7, which cannot tell a
//!   missing `metadata` from a missing name nor check a `DynamicObject`'s kind),
//! - `plain`: `from_str` straight into a typed list or event, no checks
//!   (the floor),
//!
//! and the source's page decode on 1 and 2 threads (its decode pool), the
//! thread split at the batch sizes around its threshold, and (`scan_alone`)
//! the pass over each object's text that comes before its typed decode.
//!
//! `cargo bench --bench decode -- --quick` for a short run.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kube_informer::unstable::decode as decode_bench;
use serde::Deserialize;
use serde_json::{Value, json, value::RawValue};

const PAGE: usize = 500;

/// A Pod as a ReplicaSet makes it and the kubelet reports it: labels,
/// annotations, an owner, two managedFields entries, a container with
/// env, ports, resources and a mount, tolerations, a projected volume,
/// status with conditions and a container status.
fn pod(i: usize) -> Value {
    json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {
            "name": format!("web-7d4b9c8f6d-{i:05}"), "generateName": "web-7d4b9c8f6d-",
            "namespace": "production", "uid": format!("3f9a1c2e-5b7d-4e8f-9a0b-{i:012}"),
            "resourceVersion": (100_000 + i).to_string(), "creationTimestamp": "2026-11-30T12:34:56Z",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6d", "tier": "frontend", "version": "v1.42.0"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-30T12:30:00Z", "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f6d",
                "uid": "8c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-30T12:34:56Z", "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
                        "f:ownerReferences": {".": {}, "k:{\"uid\":\"8c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f\"}": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:env": {".": {}, "k:{\"name\":\"LOG_LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}}},
                        "f:image": {}, "f:name": {}, "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}},
                        "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}}}},
                        "f:restartPolicy": {}, "f:schedulerName": {}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-30T12:35:10Z",
                 "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": {"f:status": {
                    "f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                    "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:startTime": {}}}}
            ]
        },
        "spec": {
            "volumes": [{"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
            "containers": [{
                "name": "web", "image": "registry.example.com/team/web:v1.42.0", "imagePullPolicy": "IfNotPresent",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "LOG_LEVEL", "value": "info"},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
                "volumeMounts": [{"name": "kube-api-access-x7k2p", "readOnly": true,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "nodeName": format!("node-{:03}", i % 50), "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-30T12:35:10Z"},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-30T12:34:56Z"}],
            "hostIP": "10.0.3.17", "podIP": format!("10.244.{}.{}", i % 250, i % 200 + 2), "startTime": "2026-11-30T12:34:56Z",
            "containerStatuses": [{"name": "web", "state": {"running": {"startedAt": "2026-11-30T12:35:02Z"}},
                "lastState": {}, "ready": true, "restartCount": 0, "started": true,
                "image": "registry.example.com/team/web:v1.42.0",
                "imageID": "registry.example.com/team/web@sha256:4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e",
                "containerID": "containerd://9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"}],
            "qosClass": "Burstable"
        }
    })
}

/// A list answer as the API server writes it (items without kind).
fn page_text(n: usize) -> String {
    let items: Vec<Value> = (0..n)
        .map(|i| {
            let mut p = pod(i);
            let object = p.as_object_mut().expect("a pod is an object");
            object.remove("kind");
            object.remove("apiVersion");
            p
        })
        .collect();
    json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "600000"}, "items": items})
        .to_string()
}

fn watch_line(i: usize) -> String {
    json!({"type": "MODIFIED", "object": pod(i)}).to_string()
}

#[derive(Deserialize)]
struct ValueList {
    items: Vec<Value>,
}

#[derive(Deserialize)]
struct TypedList {
    items: Vec<Pod>,
}

#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(borrow)]
    items: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct ValueLine {
    #[serde(rename = "type")]
    _event_type: String,
    object: Value,
}

#[derive(Deserialize)]
struct TypedLine {
    #[serde(rename = "type")]
    _event_type: String,
    object: Pod,
}

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(rename = "type")]
    _event_type: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

fn typed_only(raw: &RawValue) -> Option<Pod> {
    let pod: Pod = serde_json::from_str(raw.get()).ok()?;
    pod.metadata.name.as_ref().filter(|n| !n.is_empty())?;
    Some(pod)
}

fn list_page(c: &mut Criterion) {
    let text = page_text(PAGE);
    println!(
        "page of {PAGE}: {} bytes, {} bytes per pod; one pod with kind: {} bytes",
        text.len(),
        text.len() / PAGE,
        pod(1).to_string().len()
    );
    let mut group = c.benchmark_group("list_page_500");
    group.throughput(Throughput::Elements(PAGE as u64));
    group.sample_size(20);
    group.bench_function("value", |b| {
        b.iter(|| {
            let list: ValueList = serde_json::from_str(black_box(&text)).unwrap();
            let pods: Vec<Pod> = list
                .items
                .into_iter()
                .map(|v| serde_json::from_value(v).unwrap())
                .collect();
            black_box(pods)
        })
    });
    group.bench_function("source_1_thread", |b| {
        b.iter(|| black_box(decode_bench::list_page::<Pod>(black_box(&text), Some(1))))
    });
    group.bench_function("source_2_threads", |b| {
        b.iter(|| black_box(decode_bench::list_page::<Pod>(black_box(&text), Some(2))))
    });
    group.bench_function("source_auto", |b| {
        b.iter(|| black_box(decode_bench::list_page::<Pod>(black_box(&text), None)))
    });
    group.bench_function("typed_only", |b| {
        b.iter(|| {
            let list: RawList<'_> = serde_json::from_str(black_box(&text)).unwrap();
            let pods: Vec<Option<Pod>> = list.items.iter().map(|raw| typed_only(raw)).collect();
            black_box(pods)
        })
    });
    group.bench_function("plain", |b| {
        b.iter(|| {
            let list: TypedList = serde_json::from_str(black_box(&text)).unwrap();
            black_box(list.items)
        })
    });
    group.finish();
}

fn watch_lines(c: &mut Criterion) {
    let lines: Vec<String> = (0..64).map(watch_line).collect();
    let mut group = c.benchmark_group("watch_line");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.sample_size(30);
    group.bench_function("value", |b| {
        b.iter(|| {
            for line in &lines {
                let parsed: ValueLine = serde_json::from_str(black_box(line)).unwrap();
                let pod: Pod = serde_json::from_value(parsed.object).unwrap();
                black_box(pod);
            }
        })
    });
    group.bench_function("source", |b| {
        b.iter(|| {
            for line in &lines {
                black_box(
                    decode_bench::watch_line::<Pod>(black_box(line.as_bytes()), Some("PodList"))
                        .unwrap(),
                );
            }
        })
    });
    group.bench_function("typed_only", |b| {
        b.iter(|| {
            for line in &lines {
                let parsed: RawLine<'_> = serde_json::from_str(black_box(line)).unwrap();
                black_box(typed_only(parsed.object));
            }
        })
    });
    group.bench_function("plain", |b| {
        b.iter(|| {
            for line in &lines {
                let parsed: TypedLine = serde_json::from_str(black_box(line)).unwrap();
                black_box(parsed.object);
            }
        })
    });
    group.bench_function("probe_alone", |b| {
        b.iter(|| {
            for line in &lines {
                let parsed: RawLine<'_> = serde_json::from_str(black_box(line)).unwrap();
                decode_bench::probe(black_box(parsed.object), Some("Pod")).unwrap();
            }
        })
    });
    // The pass before the typed decode alone (array lengths, R7), on the
    // objects already cut out of their lines.
    let objects: Vec<&RawValue> = lines
        .iter()
        .map(|line| serde_json::from_str::<RawLine<'_>>(line).unwrap().object)
        .collect();
    group.bench_function("scan_alone", |b| {
        b.iter(|| {
            for object in &objects {
                black_box(decode_bench::scan(black_box(object), Some("Pod")));
            }
        })
    });
    group.finish();
}

/// The thread split at batch sizes around its threshold: where two
/// threads start to beat one.
fn split_threshold(c: &mut Criterion) {
    let mut group = c.benchmark_group("split_threshold");
    group.sample_size(20);
    for n in [4usize, 16, 32, 64, 128] {
        let text = page_text(n);
        for threads in [1usize, 2] {
            group.bench_with_input(
                BenchmarkId::new(format!("{threads}_threads"), n),
                &text,
                |b, text| {
                    b.iter(|| {
                        black_box(decode_bench::list_page::<Pod>(
                            black_box(text),
                            Some(threads),
                        ))
                    })
                },
            );
        }
    }
    group.finish();
}

/// Cutting a watch body into lines: `AsyncBufReadExt::lines` (a `String`
/// per line, UTF-8 checked) against the source's byte-level splitter, over
/// 64 Pod events arriving in 4 KiB chunks.
fn line_splitting(c: &mut Criterion) {
    use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};

    let body: Vec<u8> = (0..64)
        .flat_map(|i| {
            let mut line = watch_line(i).into_bytes();
            line.push(b'\n');
            line
        })
        .collect();
    let chunks = || {
        futures::stream::iter(
            body.chunks(4096)
                .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
                .collect::<Vec<_>>(),
        )
        .into_async_read()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("line_split_64_events");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("string_lines", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let lines = Box::pin(chunks()).lines();
                let (n, bytes) = lines
                    .fold((0usize, 0usize), |(n, bytes), line| async move {
                        (n + 1, bytes + line.unwrap().len())
                    })
                    .await;
                black_box((n, bytes))
            })
        })
    });
    group.bench_function("byte_splitter", |b| {
        b.iter(|| {
            runtime
                .block_on(async { black_box(decode_bench::split_lines(Box::pin(chunks())).await) })
        })
    });
    // The scan alone, as the splitter does it (the last line end of what
    // arrived, then each line end): a byte loop against memchr.
    group.bench_function("scan_byte_loop", |b| {
        b.iter(|| {
            let body = black_box(&body[..]);
            let end = body.iter().rposition(|c| *c == b'\n').map_or(0, |i| i + 1);
            let mut rest = &body[..end];
            let mut n = 0;
            while let Some(i) = rest.iter().position(|c| *c == b'\n') {
                rest = &rest[i + 1..];
                n += 1;
            }
            black_box(n)
        })
    });
    group.bench_function("scan_memchr", |b| {
        b.iter(|| {
            let body = black_box(&body[..]);
            let end = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
            let mut rest = &body[..end];
            let mut n = 0;
            while let Some(i) = memchr::memchr(b'\n', rest) {
                rest = &rest[i + 1..];
                n += 1;
            }
            black_box(n)
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    list_page,
    watch_lines,
    split_threshold,
    line_splitting
);
criterion_main!(benches);
