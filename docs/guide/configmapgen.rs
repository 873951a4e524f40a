// The guide's controller ("Writing a controller"): every
// ConfigMapGenerator gets a ConfigMap of its name holding its content,
// written by server-side apply and owned by the generator, is listed in a
// catalogue outside the cluster while it lives, and reports in its status
// which generation the ConfigMap shows. The guide's next chapter tests it
// on the simulator (tests/guide_controller.rs), which compiles this file in.

use std::{
    collections::BTreeMap,
    pin::pin,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client, CustomResource, Resource, ResourceExt,
    api::{ObjectMeta, Patch, PatchParams},
};
use kube_informer::{
    Controller, InformerFactory,
    controller::Config,
    finalizer::{self, Event, finalizer},
    informer::{self, Defaults},
    runner::Action,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Asks for a ConfigMap of the generator's name that holds `content`.
#[derive(CustomResource, Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "ConfigMapGenerator")]
#[kube(namespaced, shortname = "cmg", status = "ConfigMapGeneratorStatus")]
pub struct ConfigMapGeneratorSpec {
    /// What the ConfigMap's `content` key holds.
    pub content: String,
}

/// What the controller reports back on the generator.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapGeneratorStatus {
    /// The generation whose content the ConfigMap holds.
    pub observed_generation: Option<i64>,
}

/// The field manager of every write the controller makes.
pub const MANAGER: &str = "configmapgen.example.com";
/// Holds a generator until its catalogue entry is withdrawn.
pub const FINALIZER: &str = "configmapgen.example.com/catalogue";

/// Stands for a system outside the cluster that lists every generator's
/// content (a cloud service, a DNS zone). Nothing in Kubernetes removes an
/// entry when its generator goes: that is what the finalizer is for.
#[derive(Debug, Default)]
pub struct Catalogue {
    entries: Mutex<BTreeMap<String, String>>,
}

impl Catalogue {
    /// Lists `content` under `key`, replacing what was there.
    pub fn publish(&self, key: String, content: &str) {
        self.lock().insert(key, content.to_owned());
    }

    /// Removes the entry of `key`, if any.
    pub fn withdraw(&self, key: &str) {
        self.lock().remove(key);
    }

    /// The entry of `key`.
    pub fn entry(&self, key: &str) -> Option<String> {
        self.lock().get(key).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        // A panic elsewhere while the lock was held leaves whole entries.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What every reconcile is handed.
pub struct Context {
    /// Every write goes through it.
    pub client: Client,
    /// The system outside the cluster.
    pub catalogue: Catalogue,
}

impl Context {
    /// A context writing through `client`, with an empty catalogue.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            catalogue: Catalogue::default(),
        }
    }
}

/// Why applying a generator failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The API server refused or did not answer a write.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The generator lacks what the ConfigMap needs (never one the API
    /// server returned).
    #[error("the generator has no {0}")]
    Incomplete(&'static str),
}

/// A reconcile's error: the finalizer helper's, around the controller's own.
pub type Error = finalizer::Error<ReconcileError>;

/// Reconciles one generator under the finalizer: a generator without it
/// gets it and nothing else (the write comes back as a change, and its
/// reconcile applies); a live one is applied; one being deleted leaves the
/// catalogue, then the finalizer comes off and the API server lets it go.
pub async fn reconcile(
    generator: Arc<ConfigMapGenerator>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    // One the API server returned always has a namespace; one without is
    // refused by the helper (`WrongNamespace`) before any request.
    let namespace = generator.namespace().unwrap_or_default();
    let generators = Api::<ConfigMapGenerator>::namespaced(ctx.client.clone(), &namespace);
    finalizer(&generators, FINALIZER, generator, |event| async move {
        match event {
            Event::Apply(generator) => apply(&generator, &ctx).await,
            Event::Cleanup(generator) => {
                ctx.catalogue.withdraw(&catalogue_key(&generator));
                Ok(Action::await_change())
            }
        }
    })
    .await
}

/// Makes the generator's ConfigMap what its spec says, lists the content
/// in the catalogue, and reports the generation in the status.
async fn apply(generator: &ConfigMapGenerator, ctx: &Context) -> Result<Action, ReconcileError> {
    let name = generator.name_any();
    let namespace = generator
        .namespace()
        .ok_or(ReconcileError::Incomplete("namespace"))?;
    let owner = generator
        .controller_owner_ref(&())
        .ok_or(ReconcileError::Incomplete("uid"))?;
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some([("content".to_owned(), generator.spec.content.clone())].into()),
        ..ConfigMap::default()
    };
    // Server-side apply sends only the fields this manager owns; `force`
    // takes back a field someone else changed by hand.
    let apply = PatchParams::apply(MANAGER).force();
    Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace)
        .patch(&name, &apply, &Patch::Apply(&config_map))
        .await?;
    ctx.catalogue
        .publish(catalogue_key(generator), &generator.spec.content);

    // The status write comes back as a change like any other; its
    // reconcile finds the status current and writes nothing.
    let generation = generator.meta().generation;
    if generator
        .status
        .as_ref()
        .and_then(|s| s.observed_generation)
        != generation
    {
        let status = json!({ "status": { "observedGeneration": generation } });
        Api::<ConfigMapGenerator>::namespaced(ctx.client.clone(), &namespace)
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
    }
    // Again in five minutes, to repair what no event reported (a ConfigMap
    // created and deleted by hand while a watch was down).
    Ok(Action::requeue(Duration::from_secs(300)))
}

fn catalogue_key(generator: &ConfigMapGenerator) -> String {
    format!(
        "{}/{}",
        generator.namespace().unwrap_or_default(),
        generator.name_any()
    )
}

/// What a failed reconcile's key gets next.
pub fn error_policy(
    _generator: Arc<ConfigMapGenerator>,
    error: &Error,
    _ctx: Arc<Context>,
) -> Action {
    match error {
        // Bad input fails the same way until the generator changes, and
        // its change queues it again.
        finalizer::Error::ApplyFailed(ReconcileError::Incomplete(_))
        | finalizer::Error::UnnamedObject
        | finalizer::Error::InvalidFinalizer { .. }
        | finalizer::Error::WrongNamespace { .. } => Action::await_change(),
        // A refused or unanswered write, or a finalizer patch whose test
        // failed on a cache that was behind (422): again after the key's
        // backoff, from the object as the cache holds it then.
        _ => Action::backoff(),
    }
}

/// What every informer of the controller starts from: it never reads
/// managedFields, so none are cached.
pub fn defaults() -> Defaults {
    Defaults {
        strip_managed_fields: true,
        ..Defaults::default()
    }
}

/// The controller's wiring on `factory`'s informers: generators, the
/// ConfigMaps they own, two reconciles at a time.
pub fn controller(
    factory: &InformerFactory,
) -> Result<Controller<ConfigMapGenerator>, informer::Error> {
    let client = factory.client();
    Ok(Controller::with_factory(factory, Api::all(client.clone()))?
        .owns(Api::<ConfigMap>::all(client))
        .with_config(Config { concurrency: 2, ..Default::default() }))
}

/// Runs the controller on `client`'s cluster until SIGINT or SIGTERM. It
/// fails only if the controller cannot start (the CRD is not installed,
/// RBAC refuses a list); a failed reconcile is logged once, in its span,
/// and retried.
pub async fn serve(client: Client) -> Result<(), kube_informer::Error> {
    let factory = InformerFactory::with_defaults(client, defaults());
    let ctx = Arc::new(Context::new(factory.client()));
    let outcomes = controller(&factory)?
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx);
    let mut outcomes = pin!(outcomes);
    while let Some(outcome) = outcomes.next().await {
        let Err(error) = outcome else { continue };
        if error.key().is_none() {
            return Err(error.into());
        }
    }
    Ok(())
}
