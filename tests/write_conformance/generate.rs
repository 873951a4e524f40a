//! Random write scripts from a seed: a few names of one resource, and a mix
//! of creates, replaces, patches of every kind, applies by two managers,
//! status writes, finalizers, deletes and bad requests, valid and invalid
//! alike. The same seed gives the same scripts.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::resources::Kind;
use super::script::{Script, Step};

const NAMES: [&str; 3] = ["a", "b", "c"];
const FINALIZER: &str = "example.com/hold";

/// `count` scripts made from `seed`, named `random-<seed>-<i>`.
pub fn scripts(seed: u64, count: usize) -> Vec<Script> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|i| script(&mut rng, format!("random-{seed}-{i}")))
        .collect()
}

fn script(rng: &mut StdRng, name: String) -> Script {
    let kind = match rng.random_range(0..10) {
        0..6 => Kind::ConfigMaps,
        6..9 => Kind::Widgets,
        _ => Kind::Pods,
    };
    let mut steps = Vec::new();
    // Most scripts start from an object or two, so later steps find them.
    for name in NAMES.iter().take(rng.random_range(0..3)) {
        steps.push(create(rng, kind, name));
    }
    for _ in 0..rng.random_range(3..9) {
        let name = NAMES[rng.random_range(0..NAMES.len())];
        steps.push(random_step(rng, kind, name));
    }
    Script {
        name,
        description: format!("random steps on {}", kind.plural()),
        watch: vec![kind],
        steps,
    }
}

/// Every step on `name` keeps its resourceVersion and uid for later
/// preconditions (a failed step leaves the older ones).
fn saving(mut step: Step, name: &str) -> Step {
    step.save = BTreeMap::from([
        (format!("rv_{name}"), "/metadata/resourceVersion".to_owned()),
        (format!("uid_{name}"), "/metadata/uid".to_owned()),
    ]);
    step
}

fn on(kind: Kind, method: &str, name: &str) -> Step {
    Step {
        method: method.to_owned(),
        resource: kind,
        name: Some(name.to_owned()),
        ..Step::default()
    }
}

fn labels(rng: &mut StdRng) -> Value {
    let mut labels = serde_json::Map::new();
    for key in ["x", "y"] {
        if rng.random_bool(0.5) {
            labels.insert(key.into(), json!(format!("v{}", rng.random_range(0..3))));
        }
    }
    Value::Object(labels)
}

/// A change to the part of the object users own (data or spec).
fn content(rng: &mut StdRng, kind: Kind) -> Value {
    let v = rng.random_range(0..3);
    match kind {
        Kind::ConfigMaps => json!({"data": {"k": format!("v{v}")}}),
        Kind::Widgets => json!({"spec": {"size": v}}),
        Kind::Pods => json!({"spec": {"activeDeadlineSeconds": 100 + v}}),
        Kind::Deployments => json!({"spec": {"replicas": v}}),
    }
}

fn merged(mut base: Value, patch: &Value) -> Value {
    if let (Some(b), Some(p)) = (base.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            match (b.get_mut(k), v) {
                (Some(bv @ Value::Object(_)), Value::Object(_)) => *bv = merged(bv.clone(), v),
                _ => {
                    b.insert(k.clone(), v.clone());
                }
            }
        }
    }
    base
}

fn create(rng: &mut StdRng, kind: Kind, name: &str) -> Step {
    let mut object = kind.object(name);
    object["metadata"]["labels"] = labels(rng);
    let mut step = saving(
        Step {
            method: "POST".into(),
            resource: kind,
            body: Some(object),
            ..Step::default()
        },
        name,
    );
    if rng.random_bool(0.3) {
        step.field_manager = Some("creator".into());
    }
    step
}

fn random_step(rng: &mut StdRng, kind: Kind, name: &str) -> Step {
    let rv = format!("${{rv_{name}}}");
    let uid = format!("${{uid_{name}}}");
    let step = match rng.random_range(0..22) {
        0..3 => create(rng, kind, name),
        3 => {
            let mut object = kind.object("");
            object["metadata"] = json!({"generateName": format!("{name}-")});
            Step {
                method: "POST".into(),
                resource: kind,
                body: Some(object),
                ..Step::default()
            }
        }
        4 => on(kind, "GET", name),
        5 | 6 => {
            let mut object = merged(kind.object(name), &content(rng, kind));
            object["metadata"]["labels"] = labels(rng);
            if rng.random_bool(0.7) {
                object["metadata"]["resourceVersion"] = json!(rv);
            }
            Step {
                body: Some(object),
                ..on(kind, "PUT", name)
            }
        }
        7 | 8 => {
            let mut patch = if rng.random_bool(0.5) {
                content(rng, kind)
            } else {
                json!({"metadata": {"labels": labels(rng)}})
            };
            if rng.random_bool(0.3) {
                patch["metadata"]["labels"]["x"] = Value::Null;
            }
            if rng.random_bool(0.3) {
                patch["metadata"]["resourceVersion"] = json!(rv);
            }
            Step {
                content_type: Some("application/merge-patch+json".into()),
                body: Some(patch),
                ..on(kind, "PATCH", name)
            }
        }
        9 | 10 => {
            let value = format!("v{}", rng.random_range(0..3));
            let mut ops = Vec::new();
            if rng.random_bool(0.5) {
                ops.push(json!({"op": "test", "path": "/metadata/labels/x", "value": value}));
            }
            ops.push(match rng.random_range(0..4) {
                0 => json!({"op": "add", "path": "/metadata/labels", "value": {"x": "v1"}}),
                1 => json!({"op": "replace", "path": "/metadata/labels/x", "value": "v2"}),
                2 => json!({"op": "remove", "path": "/metadata/labels/y"}),
                _ => {
                    json!({"op": "add", "path": "/metadata/annotations", "value": {"note": value}})
                }
            });
            Step {
                content_type: Some("application/json-patch+json".into()),
                body: Some(Value::Array(ops)),
                ..on(kind, "PATCH", name)
            }
        }
        11 => Step {
            content_type: Some("application/strategic-merge-patch+json".into()),
            body: Some(json!({"metadata": {"labels": labels(rng)}})),
            ..on(kind, "PATCH", name)
        },
        12..15 => {
            let manager = ["m1", "m2"][rng.random_range(0..2)];
            let mut object = kind.object(name);
            object["metadata"] = json!({"name": name, "labels": {"owner": manager}});
            let object = merged(object, &content(rng, kind));
            Step {
                content_type: Some("application/apply-patch+yaml".into()),
                field_manager: rng.random_bool(0.9).then(|| manager.to_owned()),
                force: rng.random_bool(0.3),
                body: Some(object),
                ..on(kind, "PATCH", name)
            }
        }
        15 => {
            let status = match kind {
                Kind::Pods => {
                    json!({"status": {"message": format!("m{}", rng.random_range(0..3))}})
                }
                _ => json!({"status": {"ready": rng.random_bool(0.5)}}),
            };
            Step {
                subresource: Some("status".into()),
                content_type: Some("application/merge-patch+json".into()),
                body: Some(status),
                ..on(kind, "PATCH", name)
            }
        }
        16 => {
            let finalizers = if rng.random_bool(0.6) {
                json!([FINALIZER])
            } else {
                Value::Null
            };
            Step {
                content_type: Some("application/merge-patch+json".into()),
                body: Some(json!({"metadata": {"finalizers": finalizers}})),
                ..on(kind, "PATCH", name)
            }
        }
        17..20 => {
            let body = match rng.random_range(0..4) {
                0 => None,
                1 => Some(json!({"preconditions": {"resourceVersion": rv}})),
                2 => Some(json!({"preconditions": {"uid": uid}})),
                _ => Some(json!({"propagationPolicy": "Background"})),
            };
            Step {
                body,
                dry_run: rng.random_bool(0.15),
                ..on(kind, "DELETE", name)
            }
        }
        _ => bad_request(rng, kind, name),
    };
    saving(step, name)
}

/// Requests the server must refuse with a 4xx.
fn bad_request(rng: &mut StdRng, kind: Kind, name: &str) -> Step {
    match rng.random_range(0..5) {
        0 => Step {
            body_text: Some("{not json".into()),
            ..on(kind, "PUT", name)
        },
        1 => Step {
            content_type: Some("application/xml".into()),
            body_text: Some("<patch/>".into()),
            ..on(kind, "PATCH", name)
        },
        2 => Step {
            body: Some(kind.object("someone-else")),
            ..on(kind, "PUT", name)
        },
        3 => {
            let mut object = kind.object(name);
            object["metadata"]["namespace"] = json!("elsewhere");
            Step {
                method: "POST".into(),
                resource: kind,
                body: Some(object),
                ..Step::default()
            }
        }
        _ => Step {
            content_type: Some("application/json-patch+json".into()),
            body: Some(json!({"op": "add"})),
            ..on(kind, "PATCH", name)
        },
    }
}
