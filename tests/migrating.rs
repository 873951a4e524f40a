//! MG1: every row of MIGRATING.md has a compiled pair here, and every pair its row.
//! MIGRATING.md, compiled: one function per row of its table, holding the
//! kube-runtime form and the kube-informer form of the same step, and a
//! test that every row has its pair and every pair its row, by the names
//! the row gives. The pairs are compiled, not run (most need a cluster);
//! the controller's behaviour is checked in `tests/controller.rs`.
#![allow(dead_code)]

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube::{Api, Client, Resource, ResourceExt, core::PartialObjectMeta};
use kube_informer::{
    Informer, ObjectKey, SubscribeOptions,
    controller::{Config, Controller},
    ext::{ChangeFilter, changed},
    finalizer,
    runner::Action,
};
use kube_runtime::{
    WatchStreamExt,
    controller::Action as RuntimeAction,
    reflector::{self, ObjectRef},
    watcher,
};

async fn pair_watcher(client: Client) {
    // kube-runtime
    let objects = kube_runtime::watcher(
        Api::<ConfigMap>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .applied_objects();
    drop(objects);
    // kube-informer
    let informer = Informer::builder(Api::<ConfigMap>::all(client)).build();
    let changes = informer.subscribe(SubscribeOptions::default());
    drop((changes, informer.run()));
}

async fn pair_watcher_config_labels(client: Client) {
    // kube-runtime
    let config = watcher::Config::default().labels("app=web");
    drop(kube_runtime::watcher(
        Api::<ConfigMap>::all(client.clone()),
        config,
    ));
    // kube-informer
    let informer = Informer::builder(Api::<ConfigMap>::all(client))
        .label_selector("app=web")
        .build();
    drop(informer);
}

async fn pair_metadata_watcher(client: Client) {
    // kube-runtime
    drop(kube_runtime::watcher(
        Api::<PartialObjectMeta<ConfigMap>>::all(client.clone()),
        watcher::Config::default(),
    ));
    // kube-informer
    drop(Informer::metadata_builder(Api::<ConfigMap>::all(client)).build());
}

async fn pair_reflector(client: Client) {
    // kube-runtime
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = kube_runtime::reflector(
        writer,
        kube_runtime::watcher(
            Api::<ConfigMap>::all(client.clone()),
            watcher::Config::default(),
        ),
    );
    drop((reader, stream));
    // kube-informer
    let informer = Informer::builder(Api::<ConfigMap>::all(client)).build();
    let reader = informer.store();
    drop((reader, informer.run()));
}

fn pair_store_state(
    runtime: reflector::Store<ConfigMap>,
    informer: kube_informer::Store<ConfigMap>,
) -> (Vec<Arc<ConfigMap>>, Vec<Arc<ConfigMap>>) {
    // kube-runtime
    let theirs = runtime.state();
    // kube-informer
    let ours = informer.list();
    (theirs, ours)
}

fn pair_store_get(
    runtime: reflector::Store<ConfigMap>,
    informer: kube_informer::Store<ConfigMap>,
) -> Result<(), kube_informer::Error> {
    // kube-runtime
    let cached = runtime.get(&ObjectRef::new("settings").within("default"));
    // kube-informer
    let ours = informer.get(&ObjectKey::new(Some("default"), "settings")?);
    assert_eq!(cached.is_some(), ours.is_some());
    Ok(())
}

async fn pair_store_wait_until_ready(
    runtime: reflector::Store<ConfigMap>,
    store: kube_informer::Store<ConfigMap>,
) -> Result<(), Box<dyn std::error::Error>> {
    // kube-runtime
    runtime.wait_until_ready().await?;
    // kube-informer
    store.wait_until_synced().await?;
    Ok(())
}

fn pair_object_ref() -> Result<(), kube_informer::Error> {
    // kube-runtime
    let runtime = ObjectRef::<ConfigMap>::new("settings").within("default");
    // kube-informer
    let ours = ObjectKey::new(Some("default"), "settings")?;
    assert_eq!(runtime.name, ours.name());
    Ok(())
}

fn pair_predicates_generation(old: &Deployment, new: &Deployment) -> bool {
    // kube-runtime: a hash of one state, compared with the one remembered.
    let runtime =
        kube_runtime::predicates::generation(new) != kube_runtime::predicates::generation(old);
    // kube-informer: the two states of an update.
    let ours = changed::generation().passes(old, new);
    runtime == ours
}

async fn pair_predicate_filter(client: Client) {
    // kube-runtime
    let spec_changes = kube_runtime::watcher(
        Api::<Deployment>::all(client.clone()),
        watcher::Config::default(),
    )
    .applied_objects()
    .predicate_filter(kube_runtime::predicates::generation, Default::default());
    drop(spec_changes);
    // kube-informer
    let controller =
        Controller::new(Api::<Deployment>::all(client)).filter_changes(changed::generation());
    drop(controller);
}

async fn pair_controller_new(client: Client) {
    // kube-runtime
    drop(kube_runtime::Controller::new(
        Api::<Deployment>::all(client.clone()),
        watcher::Config::default(),
    ));
    // kube-informer
    drop(Controller::new(Api::<Deployment>::all(client)));
}

async fn pair_controller_owns(client: Client) {
    // kube-runtime
    drop(
        kube_runtime::Controller::new(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .owns(
            Api::<ConfigMap>::all(client.clone()),
            watcher::Config::default().labels("app=web"),
        ),
    );
    // kube-informer
    drop(
        Controller::new(Api::<Deployment>::all(client.clone()))
            .owns_configured(Api::<ConfigMap>::all(client), |informer| {
                informer.label_selector("app=web")
            }),
    );
}

async fn pair_controller_watches(client: Client) {
    // kube-runtime: the mapper takes the object and returns references.
    drop(
        kube_runtime::Controller::new(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .watches(
            Api::<ConfigMap>::all(client.clone()),
            watcher::Config::default(),
            |cm: ConfigMap| Some(ObjectRef::new("web").within(&cm.namespace().unwrap_or_default())),
        ),
    );
    // kube-informer: the mapper borrows the object and returns keys.
    drop(
        Controller::new(Api::<Deployment>::all(client.clone()))
            .watches(Api::<ConfigMap>::all(client), |cm: &ConfigMap| {
                ObjectKey::new(cm.namespace().as_deref(), "web").ok()
            }),
    );
}

async fn pair_controller_reconcile_on(client: Client) {
    // kube-runtime
    let refs = futures::stream::iter([ObjectRef::new("web").within("default")]);
    drop(
        kube_runtime::Controller::new(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .reconcile_on(refs),
    );
    // kube-informer
    let keys = futures::stream::iter(ObjectKey::new(Some("default"), "web").ok());
    drop(Controller::new(Api::<Deployment>::all(client)).reconcile_on(keys));
}

async fn pair_controller_reconcile_all_on(client: Client) {
    // kube-runtime
    drop(
        kube_runtime::Controller::new(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .reconcile_all_on(futures::stream::pending::<()>()),
    );
    // kube-informer
    drop(
        Controller::new(Api::<Deployment>::all(client))
            .reconcile_all_on(futures::stream::pending::<()>()),
    );
}

async fn pair_controller_graceful_shutdown_on(client: Client) {
    // kube-runtime
    drop(
        kube_runtime::Controller::new(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .graceful_shutdown_on(futures::future::pending::<()>()),
    );
    // kube-informer
    drop(
        Controller::new(Api::<Deployment>::all(client))
            .graceful_shutdown_on(futures::future::pending::<()>()),
    );
}

async fn pair_controller_shutdown_on_signal(client: Client) {
    // kube-runtime
    drop(
        kube_runtime::Controller::new(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .shutdown_on_signal(),
    );
    // kube-informer
    drop(Controller::new(Api::<Deployment>::all(client)).shutdown_on_signal());
}

async fn runtime_reconcile(_: Arc<Deployment>, _: Arc<()>) -> Result<RuntimeAction, kube::Error> {
    Ok(RuntimeAction::await_change())
}

fn runtime_error_policy(_: Arc<Deployment>, _: &kube::Error, _: Arc<()>) -> RuntimeAction {
    RuntimeAction::requeue(Duration::from_secs(5))
}

/// A kube-informer reconciler may fail with `anyhow::Error`.
async fn reconcile(_: Arc<Deployment>, _: Arc<()>) -> anyhow::Result<Action> {
    Ok(Action::await_change())
}

fn error_policy(_: Arc<Deployment>, _: &anyhow::Error, _: Arc<()>) -> Action {
    Action::backoff()
}

async fn pair_controller_run(client: Client) -> Result<(), kube_informer::Error> {
    // kube-runtime
    kube_runtime::Controller::new(
        Api::<Deployment>::all(client.clone()),
        watcher::Config::default(),
    )
    .run(runtime_reconcile, runtime_error_policy, Arc::new(()))
    .for_each(|_| async {})
    .await;
    // kube-informer: the stream's errors convert into the crate's error.
    let outcomes =
        Controller::new(Api::<Deployment>::all(client)).run(reconcile, error_policy, Arc::new(()));
    let mut outcomes = std::pin::pin!(outcomes);
    while let Some(outcome) = outcomes.next().await {
        let (_key, _action) = outcome?;
    }
    Ok(())
}

async fn pair_config_concurrency(client: Client) {
    // kube-runtime
    drop(
        kube_runtime::Controller::new(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .with_config(kube_runtime::Config::default().concurrency(4)),
    );
    // kube-informer
    drop(
        Controller::new(Api::<Deployment>::all(client)).with_config(Config {
            concurrency: 4,
            ..Config::default()
        }),
    );
}

async fn pair_config_debounce(client: Client) {
    // kube-runtime
    drop(
        kube_runtime::Controller::new(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .with_config(kube_runtime::Config::default().debounce(Duration::from_secs(1))),
    );
    // kube-informer
    drop(
        Controller::new(Api::<Deployment>::all(client)).with_config(Config {
            debounce: Duration::from_secs(1),
            ..Config::default()
        }),
    );
}

fn pair_action_requeue() -> (RuntimeAction, Action) {
    // kube-runtime
    let theirs = RuntimeAction::requeue(Duration::from_secs(300));
    // kube-informer
    let ours = Action::requeue(Duration::from_secs(300));
    (theirs, ours)
}

fn pair_action_await_change() -> (RuntimeAction, Action) {
    // kube-runtime
    let theirs = RuntimeAction::await_change();
    // kube-informer
    let ours = Action::await_change();
    (theirs, ours)
}

async fn pair_finalizer(
    api: Api<ConfigMap>,
    object: Arc<ConfigMap>,
) -> Result<(), kube_informer::Error> {
    // kube-runtime: the reconcile's error must be a `std::error::Error`.
    let runtime = kube_runtime::finalizer(
        &api,
        "example.com/cleanup",
        object.clone(),
        |event| async move {
            match event {
                kube_runtime::finalizer::Event::Apply(_) => {
                    Ok::<_, std::io::Error>(RuntimeAction::await_change())
                }
                kube_runtime::finalizer::Event::Cleanup(_) => Ok(RuntimeAction::await_change()),
            }
        },
    )
    .await;
    drop(runtime);
    // kube-informer: any error that displays, and `?` into the crate's error.
    finalizer::finalizer(&api, "example.com/cleanup", object, |event| async move {
        match event {
            finalizer::Event::Apply(_) => Ok::<_, anyhow::Error>(Action::await_change()),
            finalizer::Event::Cleanup(_) => Ok(Action::await_change()),
        }
    })
    .await?;
    Ok(())
}

/// kube-runtime's `events::Recorder`, kept, in a kube-informer reconcile.
async fn pair_events_recorder(client: Client, cm: Arc<ConfigMap>) -> anyhow::Result<Action> {
    use kube_runtime::events::{Event, EventType, Recorder};
    // kube-runtime
    let event = Event {
        type_: EventType::Normal,
        reason: "Reconciled".into(),
        note: None,
        action: "Reconcile".into(),
        secondary: None,
    };
    // kube-informer: the same Recorder, from a reconcile of this crate's.
    let recorder = Recorder::new(client, "configmap-controller".into());
    recorder.publish(&event, &cm.object_ref(&())).await?;
    Ok(Action::await_change())
}

/// The names a row gives: the last path segment of the first code span of
/// a cell (`Controller::owns` gives `owns`, `watcher` gives `watcher`).
fn named(cell: &str) -> Option<&str> {
    let code = cell.split('`').nth(1)?;
    let path = code.split(['(', '<', ' ']).next()?;
    path.rsplit("::").next().filter(|name| !name.is_empty())
}

/// Each `pair_` function of this file and its text, from its `fn` line to
/// its closing brace (the first `}` line at the left margin).
fn pairs(source: &str) -> BTreeMap<&str, String> {
    let mut pairs = BTreeMap::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line
            .strip_prefix("fn pair_")
            .or_else(|| line.strip_prefix("async fn pair_"))
        else {
            continue;
        };
        let name = &rest[..rest.find('(').unwrap_or(rest.len())];
        let mut text = line.to_owned();
        for line in lines.by_ref() {
            text.push('\n');
            text.push_str(line);
            if line == "}" {
                break;
            }
        }
        pairs.insert(name, text);
    }
    pairs
}

#[test]
fn mg1_every_row_of_migrating_md_has_a_compiled_pair_that_names_both_items() {
    let doc = include_str!("../MIGRATING.md");
    let source = include_str!("migrating.rs");
    let mut pairs = pairs(source);
    let mut rows = 0;
    for row in doc.lines().filter(|line| line.starts_with("| `")) {
        rows += 1;
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 4, "a row of four cells: {row}");
        let pair = named(cells[3]).unwrap_or_else(|| panic!("no pair named: {row}"));
        let text = pairs.remove(pair).unwrap_or_else(|| {
            panic!("MIGRATING.md names pair_{pair}, which tests/migrating.rs lacks")
        });
        // The kube-runtime form comes first, the kube-informer form after
        // this marker; each must use the item its column names.
        let (theirs, ours) = text
            .split_once("// kube-informer")
            .unwrap_or_else(|| panic!("pair_{pair} has no `// kube-informer` form"));
        assert!(
            theirs.contains("// kube-runtime"),
            "pair_{pair} has no `// kube-runtime` form"
        );
        for (cell, form, side) in [
            (cells[0], theirs, "kube-runtime"),
            (cells[1], ours, "kube-informer"),
        ] {
            let name = named(cell).unwrap_or_else(|| panic!("no item named: {row}"));
            assert!(
                form.contains(name),
                "the {side} form of pair_{pair} does not use `{name}`, which its row names"
            );
        }
    }
    assert!(rows >= 20, "the table has {rows} rows");
    assert!(
        pairs.is_empty(),
        "pairs without a row in MIGRATING.md: {:?}",
        pairs.keys().collect::<Vec<_>>()
    );
}
