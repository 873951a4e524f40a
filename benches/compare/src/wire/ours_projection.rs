//! Wire runner (a′): kube-informer caching a projection of each Pod
//! (`kube_informer::projection!`: its metadata, `spec.nodeName` and
//! `status.phase`), otherwise as runner (a): `Informer::builder(Api)` on
//! the loopback server, one `subscribe` per subscriber drained by its own
//! task, every subscriber told about every event. What a controller that
//! reads three fields of a Pod caches. Runner `ours-projection-compact`
//! keeps the same projection in the compact cache
//! (`InformerBuilder::compact_cache`).

use super::{
    count::Counter,
    drive::{Started, WireRunner},
    ours::spawn,
};
use k8s_openapi::{api::core::v1::Pod, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kube::{Api, Client};
use kube_informer::{Informer, store::CompactCache};
use serde::{Deserialize, Serialize};

/// The projection: a Pod's metadata, node and phase. `Serialize` and
/// `PartialEq` only for the compact cache, which keeps it encoded and
/// checks that it reads back equal.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct SlimPod {
    metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<SlimSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<SlimStatus>,
}

/// The projected part of a Pod's spec.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct SlimSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    node_name: Option<String>,
}

/// The projected part of a Pod's status.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
struct SlimStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    phase: Option<String>,
}

kube_informer::projection!(SlimPod, Pod);

impl SlimPod {
    /// What a subscriber reads: the node's and the phase's lengths.
    fn read(&self) -> usize {
        let node = self.spec.as_ref().and_then(|s| s.node_name.as_deref());
        let phase = self.status.as_ref().and_then(|s| s.phase.as_deref());
        node.map_or(0, str::len) + phase.map_or(0, str::len)
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct OursProjectionWire;

impl WireRunner for OursProjectionWire {
    const NAME: &'static str = "ours-projection";
    const TOLD_OF_DELETES: bool = true;

    fn start(client: Client, strip: bool, subscribers: Vec<Counter>) -> Started {
        start_projection(client, strip, false, subscribers)
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct OursProjectionCompactWire;

impl WireRunner for OursProjectionCompactWire {
    const NAME: &'static str = "ours-projection-compact";
    const TOLD_OF_DELETES: bool = true;

    fn start(client: Client, strip: bool, subscribers: Vec<Counter>) -> Started {
        start_projection(client, strip, true, subscribers)
    }
}

/// The projection's informer, in the compact cache if `compact`, and its
/// draining subscribers.
fn start_projection(
    client: Client,
    strip: bool,
    compact: bool,
    subscribers: Vec<Counter>,
) -> Started {
    let api: Api<SlimPod> = Api::all(client);
    let mut builder = Informer::builder(api);
    if strip {
        builder = builder.strip_managed_fields();
    }
    if compact {
        builder = builder.compact_cache(CompactCache::default());
    }
    spawn(builder.build(), subscribers, |counter, pod: &SlimPod| {
        let version = pod.metadata.resource_version.as_deref().unwrap_or("");
        counter.observe_parts(version, pod.read());
    });
    Started {
        deletes_applied: None,
    }
}
