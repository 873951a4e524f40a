//! PB10 against the real kube-apiserver: for each kind, a JSON informer
//! and a protobuf informer (`InformerBuilder::encoding`) run side by side
//! over a changing workload (creates, label updates, deletes), and every
//! object their stores hold and every notification they deliver must be
//! equal (`PartialEq` on the k8s-openapi value), and equal to what a plain
//! JSON list of the server gives. A custom resource (as `DynamicObject`)
//! stays on JSON under `Encoding::Protobuf`, and must agree the same way.
//!
//! Skipped (and passing, with a note on stderr) unless
//! `KUBE_INFORMER_E2E_KUBECONFIG` is set; `bash scripts/suites/e2e.sh` sets it.

use crate::e2e_support;

use std::fmt::Debug;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use e2e_support::informer::{WAIT, quick_retries, reported, spawn_run, stop, synced};
use e2e_support::{Access, Recorder, Scene, post_params, within};
use k8s_openapi::api::{
    apps::v1::Deployment,
    coordination::v1::Lease,
    core::v1::{ConfigMap, Event as CoreEvent, Node, Pod, Secret, Service},
    events::v1::Event as EventsEvent,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::{Resource, ResourceExt};
use kube_informer::dispatch::SubscribeOptions;
use kube_informer::source::{Encoding, ListStrategy};
use kube_informer::{Informer, Notification, Store};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

/// The label every object of a run carries, and the informers select on
/// (so cluster-scoped kinds see this run's objects only).
const RUN_LABEL: &str = "kie2e-protobuf-run";

/// Makes the object named by the first argument, of the run named by the
/// second (the namespace, for namespaced kinds), as JSON.
type Make = Box<dyn Fn(&str, &str) -> Value + Send + Sync>;

/// What one kind's run needs: its collection and how to make its i-th
/// object (as JSON, read into the type).
struct Workload<K: Resource> {
    api: Api<K>,
    run: String,
    make: Make,
}

impl<K> Workload<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + PartialEq + Send + Sync + 'static,
{
    fn name(&self, i: usize) -> String {
        format!("{}-{i}", self.run)
    }

    fn object(&self, i: usize) -> Result<K> {
        let mut value = (self.make)(&self.name(i), &self.run);
        value["metadata"]["name"] = json!(self.name(i));
        value["metadata"]["labels"] = json!({ RUN_LABEL: self.run, "step": "0" });
        Ok(serde_json::from_value(value)?)
    }

    fn selector(&self) -> String {
        format!("{RUN_LABEL}={}", self.run)
    }

    async fn create(&self, i: usize) -> Result<()> {
        self.api
            .create(&post_params(), &self.object(i)?)
            .await
            .with_context(|| format!("creating {}", self.name(i)))?;
        Ok(())
    }

    /// Sets label `step` of object `i`; its new resourceVersion.
    async fn relabel(&self, i: usize, step: &str) -> Result<String> {
        let patch = Patch::Merge(json!({ "metadata": { "labels": { "step": step } } }));
        let patched = self
            .api
            .patch(&self.name(i), &PatchParams::default(), &patch)
            .await
            .with_context(|| format!("relabelling {}", self.name(i)))?;
        Ok(patched.resource_version().unwrap_or_default())
    }

    async fn delete(&self, i: usize) -> Result<()> {
        self.api
            .delete(&self.name(i), &DeleteParams::default())
            .await
            .with_context(|| format!("deleting {}", self.name(i)))?;
        Ok(())
    }

    /// The run's objects as a JSON list of the server gives them, in key
    /// order; `rv` "0" reads the watch cache.
    async fn listed(&self, rv: Option<&str>) -> Result<Vec<K>> {
        let mut params = ListParams::default().labels(&self.selector());
        if rv.is_some() {
            params = params.match_any();
        }
        let mut items = self.api.list(&params).await?.items;
        items.sort_by_key(key);
        Ok(items)
    }

    /// Removes whatever a run left (cluster-scoped objects outlive the
    /// test's namespace).
    async fn clean_up(&self) -> Result<()> {
        for object in self.listed(None).await? {
            let _ = self
                .api
                .delete(&object.name_any(), &DeleteParams::default())
                .await;
        }
        Ok(())
    }
}

fn key<K: Resource>(object: &K) -> (Option<String>, String) {
    (object.namespace(), object.name_any())
}

fn held<K: Resource + Clone>(store: &Store<K>) -> Vec<K> {
    let mut objects: Vec<K> = store.list().iter().map(|o| (**o).clone()).collect();
    objects.sort_by_key(key);
    objects
}

/// A notification with its objects, comparable across the two informers.
fn comparable<K: Clone>(notification: &Notification<K>) -> (&'static str, Vec<K>, bool) {
    match notification {
        Notification::Added {
            object,
            in_initial_list,
        } => ("added", vec![(**object).clone()], *in_initial_list),
        Notification::Updated { old, new, resync } => {
            ("updated", vec![(**old).clone(), (**new).clone()], *resync)
        }
        Notification::Deleted {
            object,
            final_state_unknown,
        } => ("deleted", vec![(**object).clone()], *final_state_unknown),
    }
}

/// The media type the server answers a request for `api`'s collection
/// with (`query`: a list's or a watch's), asked for as the protobuf
/// informer asks.
async fn answered_type<K: Resource + Clone>(api: &Api<K>, query: &str) -> Result<String> {
    let request = http::Request::get(format!("{}?{query}", api.resource_url()))
        .header(
            http::header::ACCEPT,
            "application/vnd.kubernetes.protobuf, application/json",
        )
        .body(kube::client::Body::from(Vec::new()))?;
    let response = within(WAIT, "a protobuf list", async {
        Ok(api.clone().into_client().send(request).await?)
    })
    .await?;
    let content_type = response.headers().get(http::header::CONTENT_TYPE);
    Ok(content_type
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned())
}

/// The run: three objects before the informers start, then three more,
/// label updates, two deletes and a last update of object 0 that both
/// informers must reach; then stores and notifications are compared.
async fn side_by_side<K>(label: &str, workload: Workload<K>, protobuf: bool) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + PartialEq + Send + Sync + 'static,
{
    // The server does answer protobuf where the informer asks for it, so
    // the two informers read two encodings.
    for query in ["limit=1", "watch=true&timeoutSeconds=1"] {
        let answered = answered_type(&workload.api, query).await?;
        ensure!(
            answered.starts_with("application/vnd.kubernetes.protobuf") == protobuf,
            "{label}: the server answers {query} with {answered}"
        );
    }
    workload.clean_up().await?;
    for i in 0..3 {
        workload.create(i).await?;
    }
    // Both informers' first lists (resourceVersion "0") must see the three.
    within(WAIT, "the watch cache holding the first objects", async {
        while workload.listed(Some("0")).await?.len() < 3 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    })
    .await?;

    // The JSON informer is the reference; the protobuf ones list in pages
    // and as a streaming list (sendInitialEvents).
    let runs = [
        ("JSON", Encoding::Json, ListStrategy::Paginated),
        ("protobuf", Encoding::Protobuf, ListStrategy::Paginated),
        (
            "protobuf streaming",
            Encoding::Protobuf,
            ListStrategy::Streaming,
        ),
    ];
    let mut informers = Vec::new();
    for (which, encoding, strategy) in runs {
        let config = quick_retries()
            .label_selector(workload.selector())
            .list_strategy(strategy);
        let informer = Informer::builder(workload.api.clone())
            .source_config(config)
            .encoding(encoding)
            .build();
        let errors = informer.errors();
        let log = Recorder::start(informer.subscribe(SubscribeOptions::default())?);
        let run = spawn_run(&informer);
        informers.push((which, informer, errors, log, run));
    }
    for (which, informer, ..) in &informers {
        synced(informer).await.context(*which)?;
    }

    for i in 3..6 {
        workload.create(i).await?;
    }
    for (i, step) in [(0, "1"), (3, "1"), (4, "1"), (1, "2"), (3, "2")] {
        workload.relabel(i, step).await?;
    }
    for i in [2, 5] {
        workload.delete(i).await?;
    }
    let last = workload.relabel(0, "last").await?;

    let expected = workload.listed(None).await?;
    ensure!(
        expected.len() == 4,
        "{label}: the server holds {}",
        expected.len()
    );
    let folded = expected
        .iter()
        .map(|o| (o.name_any(), o.resource_version().unwrap_or_default()))
        .collect();
    let mut reference = None;
    for (which, informer, errors, log, run) in informers {
        log.wait_for_state(WAIT, which, &folded)
            .await
            .with_context(|| format!("{label}: the {which} informer reaching {last}"))?;
        let held = held(&informer.store());
        ensure!(
            held == expected,
            "{label}: the {which} informer holds other values than a JSON list gives:\n{held:#?}\n{expected:#?}"
        );
        let seen: Vec<_> = log.notifications().iter().map(comparable).collect();
        // 3 listed, 3 added, 5 updated, 2 deleted, the last update (and,
        // for Pods, the update that marks each deleted one as terminating).
        ensure!(
            seen.len() >= 14,
            "{label}: {which}: {} notifications",
            seen.len()
        );
        agrees(
            &mut reference,
            seen,
            &format!("{label}: the {which} informer's notifications"),
        )?;
        finish(&format!("{label}: {which}"), &informer, errors, run).await?;
    }
    workload.clean_up().await
}

/// Keeps the first informer's `seen` (the JSON one's) as the reference,
/// and checks every later one against it.
fn agrees<T: PartialEq + Debug>(reference: &mut Option<T>, seen: T, what: &str) -> Result<()> {
    match reference {
        None => *reference = Some(seen),
        Some(json) => ensure!(
            seen == *json,
            "{what} differ from the JSON informer's:\n{seen:#?}\n{json:#?}"
        ),
    }
    Ok(())
}

/// Checks that `informer` reported no error, and stops it.
async fn finish<K>(
    which: &str,
    informer: &Informer<K>,
    mut errors: impl futures::Stream<Item = kube_informer::informer::Error> + Unpin,
    run: tokio::task::JoinHandle<Result<(), kube_informer::informer::Error>>,
) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let errors: Vec<String> = reported(&mut errors)
        .into_iter()
        .map(|e| format!("{e:#}"))
        .collect();
    ensure!(errors.is_empty(), "{which}: errors reported: {errors:?}");
    stop(informer, run).await
}

/// Starts the scene of `test` and runs `workload` in its namespace.
async fn run_in_namespace<K>(
    test: &str,
    make: impl Fn(&str, &str) -> Value + Send + Sync + 'static,
) -> Result<()>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
        + PartialEq
        + Send
        + Sync
        + 'static,
{
    let Some(scene) = Scene::start(test, Access::Shared).await? else {
        return Ok(());
    };
    let workload = Workload {
        api: Api::<K>::namespaced(scene.client.clone(), &scene.ns.name),
        run: scene.ns.name.clone(),
        make: Box::new(make),
    };
    side_by_side(test, workload, true).await?;
    scene.ns.delete().await
}

/// One test per namespaced kind: `run_in_namespace` of the kind with the
/// closure that makes its objects.
macro_rules! namespaced_kinds {
    ($($test:ident: $kind:ty = $make:expr;)*) => {$(
        #[tokio::test]
        async fn $test() -> Result<()> {
            run_in_namespace::<$kind>(stringify!($test), $make).await
        }
    )*};
}

namespaced_kinds! {
    e2e_protobuf_pb10_pods: Pod = |name, _| {
        json!({
            "metadata": { "annotations": { "note": name } },
            "spec": {
                "containers": [{
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "ports": [{ "containerPort": 8080, "protocol": "TCP" }],
                    "resources": { "requests": { "cpu": "100m", "memory": "64Mi" } },
                    "env": [{ "name": "A", "value": "b" }],
                    "livenessProbe": { "httpGet": { "path": "/", "port": "http" } }
                }],
                "terminationGracePeriodSeconds": 0
            }
        })
    };
    e2e_protobuf_pb10_configmaps: ConfigMap = |name, _| {
        json!({ "metadata": {}, "data": { "name": name, "empty": "" }, "binaryData": { "b": "AAEC" } })
    };
    e2e_protobuf_pb10_secrets: Secret = |_, _| json!({ "metadata": {}, "type": "Opaque", "data": { "k": "c2VjcmV0", "z": "" } });
    e2e_protobuf_pb10_services: Service = |_, _| {
        json!({
            "metadata": {},
            "spec": {
                "selector": { "app": "web" },
                "ports": [{ "name": "http", "port": 80, "targetPort": "http" }]
            }
        })
    };
    e2e_protobuf_pb10_deployments: Deployment = |name, _| {
        json!({
            "metadata": {},
            "spec": {
                "replicas": 2,
                "selector": { "matchLabels": { "app": name } },
                "strategy": { "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": 0 } },
                "template": {
                    "metadata": { "labels": { "app": name } },
                    "spec": { "containers": [{ "name": "c", "image": "registry.k8s.io/pause:3.10" }] }
                }
            }
        })
    };
    e2e_protobuf_pb10_leases: Lease = |name, _| {
        json!({
            "metadata": {},
            "spec": {
                "holderIdentity": name,
                "leaseDurationSeconds": 15,
                "acquireTime": "2026-01-02T03:04:05.123456Z",
                "renewTime": "2026-01-02T03:04:06.654321Z",
                "leaseTransitions": 0
            }
        })
    };
    e2e_protobuf_pb10_core_events: CoreEvent = |name, namespace| {
        json!({
            "metadata": {},
            "involvedObject": { "kind": "ConfigMap", "name": name, "namespace": namespace, "apiVersion": "v1" },
            "reason": "Tested",
            "message": "side by side",
            "type": "Normal",
            "count": 2,
            "firstTimestamp": "2026-01-02T03:04:05Z",
            "lastTimestamp": "2026-01-02T03:04:07Z",
            "source": { "component": "kie2e" }
        })
    };
    e2e_protobuf_pb10_events: EventsEvent = |name, namespace| {
        json!({
            "metadata": {},
            "eventTime": "2026-01-02T03:04:05.123456Z",
            "reportingController": "kie2e.example.com/protobuf",
            "reportingInstance": "kie2e-0",
            "action": "Test",
            "reason": "Tested",
            "type": "Normal",
            "note": "side by side",
            "regarding": { "kind": "ConfigMap", "name": name, "namespace": namespace, "apiVersion": "v1" }
        })
    };
}

#[tokio::test]
async fn e2e_protobuf_pb10_nodes() -> Result<()> {
    let test = "e2e_protobuf_pb10_nodes";
    let Some(scene) = Scene::start(test, Access::Shared).await? else {
        return Ok(());
    };
    let workload = Workload {
        api: Api::<Node>::all(scene.client.clone()),
        run: scene.ns.name.clone(),
        make: Box::new(|_, _| {
            json!({
                "metadata": {},
                "spec": {
                    "podCIDR": "10.244.1.0/24",
                    "taints": [{ "key": "kie2e", "value": "x", "effect": "NoSchedule" }]
                }
            })
        }),
    };
    side_by_side(test, workload, true).await?;
    scene.ns.delete().await
}

// PB9: a custom resource as `DynamicObject` is asked for as JSON whatever
// the encoding (the server has no protobuf for it), and equal both ways.
#[tokio::test]
async fn e2e_protobuf_pb9_custom_resources_stay_json() -> Result<()> {
    let test = "e2e_protobuf_pb9_custom_resources_stay_json";
    let Some(scene) = Scene::start(test, Access::Shared).await? else {
        return Ok(());
    };
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": { "name": "pbwidgets.kie2e.example.com" },
        "spec": {
            "group": "kie2e.example.com",
            "names": { "kind": "PbWidget", "plural": "pbwidgets", "singular": "pbwidget", "listKind": "PbWidgetList" },
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } }
            }]
        }
    }))?;
    let crds = Api::<CustomResourceDefinition>::all(scene.client.clone());
    match crds.create(&post_params(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error.into()),
    }
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kie2e.example.com", "v1", "PbWidget"),
        "pbwidgets",
    );
    let api =
        Api::<DynamicObject>::namespaced_with(scene.client.clone(), &scene.ns.name, &resource);
    // Served once the CRD is established.
    within(WAIT, "the custom resource being served", async {
        while api.list(&ListParams::default()).await.is_err() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    })
    .await?;
    let workload = Workload {
        api,
        run: scene.ns.name.clone(),
        make: Box::new(|name, _| {
            json!({
                "apiVersion": "kie2e.example.com/v1",
                "kind": "PbWidget",
                "metadata": {},
                "spec": { "size": 3, "owner": name, "tags": ["a", "b"] }
            })
        }),
    };
    side_by_side(test, workload, false).await?;
    scene.ns.delete().await
}

/// A metadata-only object as the two encodings must agree on it: its type
/// fields and its metadata.
type MetaView = (Option<kube::core::TypeMeta>, kube::core::ObjectMeta);

// PB9, PB10: metadata-only informers of a built-in kind, one asking for
// JSON and one for protobuf (PartialObjectMetadata in protobuf, the server
// answering protobuf), hold the same type fields and metadata, and the
// metadata a full JSON list gives.
#[tokio::test]
async fn e2e_protobuf_pb10_metadata_only() -> Result<()> {
    let test = "e2e_protobuf_pb10_metadata_only";
    let Some(scene) = Scene::start(test, Access::Shared).await? else {
        return Ok(());
    };
    let api = Api::<ConfigMap>::namespaced(scene.client.clone(), &scene.ns.name);
    let workload = Workload {
        api: api.clone(),
        run: scene.ns.name.clone(),
        make: Box::new(
            |name, _| json!({ "metadata": { "annotations": { "note": name } }, "data": { "k": "v" } }),
        ),
    };
    for i in 0..3 {
        workload.create(i).await?;
    }
    let mut informers = Vec::new();
    for encoding in [Encoding::Json, Encoding::Protobuf] {
        let informer = Informer::metadata_builder(api.clone())
            .source_config(quick_retries().label_selector(workload.selector()))
            .encoding(encoding)
            .build();
        let errors = informer.errors();
        let run = spawn_run(&informer);
        informers.push((encoding, informer, errors, run));
    }
    for (encoding, informer, ..) in &informers {
        synced(informer)
            .await
            .with_context(|| format!("{encoding:?}"))?;
    }
    for i in 3..5 {
        workload.create(i).await?;
    }
    workload.relabel(0, "1").await?;
    workload.delete(1).await?;
    workload.relabel(3, "last").await?;
    let expected: Vec<kube::core::ObjectMeta> = workload
        .listed(None)
        .await?
        .into_iter()
        .map(|o| o.metadata)
        .collect();
    ensure!(expected.len() == 4, "the server holds {}", expected.len());

    let mut reference: Option<Vec<MetaView>> = None;
    for (encoding, informer, errors, run) in informers {
        let held = within(WAIT, "the metadata informer reaching the list", async {
            loop {
                let mut held: Vec<MetaView> = informer
                    .store()
                    .list()
                    .iter()
                    .map(|o| (o.types.clone(), o.metadata.clone()))
                    .collect();
                held.sort_by_key(|(_, meta)| meta.name.clone());
                if held.iter().map(|(_, meta)| meta).eq(expected.iter()) {
                    return Ok(held);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .with_context(|| format!("{encoding:?}: {:#?}", informer.store().list()))?;
        ensure!(
            held.iter().all(|(types, _)| types
                .as_ref()
                .is_some_and(|t| t.kind == "PartialObjectMetadata")),
            "{encoding:?}: type fields {held:#?}"
        );
        agrees(
            &mut reference,
            held,
            &format!("{encoding:?}: the values held"),
        )?;
        finish(&format!("{encoding:?}"), &informer, errors, run).await?;
    }
    workload.clean_up().await?;
    scene.ns.delete().await
}
