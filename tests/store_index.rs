//! Store reads, indexes and the known-objects view the FIFO uses.

mod store_common;

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    fifo::KnownObjects,
    store::{Error, Indexers, NAMESPACE_INDEX, Store},
};
use store_common::*;

fn by_app() -> Indexers<ConfigMap> {
    Indexers::new().with("by-app", |cm: &ConfigMap| {
        cm.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app").cloned())
            .into_iter()
            .collect()
    })
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn names(objects: Vec<Arc<ConfigMap>>) -> Vec<String> {
    sorted(objects.iter().map(|o| key_of(o).to_string()).collect())
}

#[test]
fn get_list_len_follow_upserts_and_deletes() {
    let store = Store::new(Indexers::new());
    assert!(store.is_empty());
    let a = cm("ns", "a", "1");
    assert!(store.apply_upsert(key("ns/a"), a.clone()).is_none());
    let a2 = cm("ns", "a", "2");
    let old = store.apply_upsert(key("ns/a"), a2.clone()).unwrap();
    assert!(Arc::ptr_eq(&old, &a));
    assert!(Arc::ptr_eq(&store.get(&key("ns/a")).unwrap(), &a2));
    store.apply_upsert(key("other/b"), cm("other", "b", "1"));
    assert_eq!(store.len(), 2);
    assert_eq!(names(store.list()), ["ns/a", "other/b"]);
    let removed = store.apply_delete(&key("ns/a")).unwrap();
    assert!(Arc::ptr_eq(&removed, &a2));
    assert!(store.apply_delete(&key("ns/a")).is_none());
    assert_eq!(
        store
            .list_keys()
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>(),
        ["other/b"]
    );
}

#[test]
fn namespace_index_is_built_in() {
    let store = Store::new(Indexers::new());
    store.apply_upsert(key("ns1/a"), cm("ns1", "a", "1"));
    store.apply_upsert(key("ns1/b"), cm("ns1", "b", "1"));
    store.apply_upsert(key("ns2/c"), cm("ns2", "c", "1"));
    assert_eq!(
        names(store.by_index(NAMESPACE_INDEX, "ns1").unwrap()),
        ["ns1/a", "ns1/b"]
    );
    assert_eq!(
        sorted(store.index_values(NAMESPACE_INDEX).unwrap()),
        ["ns1", "ns2"]
    );
    store.apply_delete(&key("ns2/c"));
    assert_eq!(store.index_values(NAMESPACE_INDEX).unwrap(), ["ns1"]);
    assert!(store.by_index(NAMESPACE_INDEX, "ns2").unwrap().is_empty());
}

#[test]
fn custom_index_refiles_on_update_and_forgets_on_delete() {
    let store = Store::new(by_app());
    store.apply_upsert(key("ns/a"), labelled("ns", "a", "web"));
    store.apply_upsert(key("ns/b"), labelled("ns", "b", "web"));
    store.apply_upsert(key("ns/c"), cm("ns", "c", "1")); // no label: no value
    assert_eq!(
        names(store.by_index("by-app", "web").unwrap()),
        ["ns/a", "ns/b"]
    );

    store.apply_upsert(key("ns/a"), labelled("ns", "a", "db"));
    assert_eq!(names(store.by_index("by-app", "web").unwrap()), ["ns/b"]);
    assert_eq!(names(store.by_index("by-app", "db").unwrap()), ["ns/a"]);
    assert_eq!(sorted(store.index_values("by-app").unwrap()), ["db", "web"]);

    store.apply_delete(&key("ns/b"));
    assert_eq!(store.index_values("by-app").unwrap(), ["db"]);
    assert_eq!(store.index_keys("by-app", "db").unwrap(), [key("ns/a")]);
}

#[test]
fn unknown_index_is_an_error() {
    let store = Store::<ConfigMap>::new(Indexers::new());
    assert_eq!(
        store.by_index("nope", "x").unwrap_err(),
        Error::UnknownIndex("nope".into())
    );
    assert_eq!(
        store.index_values("nope").unwrap_err().to_string(),
        "no index named \"nope\""
    );
}

#[test]
fn an_indexer_under_an_existing_name_replaces_it() {
    let indexers =
        Indexers::<ConfigMap>::new().with(NAMESPACE_INDEX, |_| vec!["everything".into()]);
    assert_eq!(indexers.names().collect::<Vec<_>>(), [NAMESPACE_INDEX]);
    let store = Store::new(indexers);
    store.apply_upsert(key("ns/a"), cm("ns", "a", "1"));
    assert_eq!(store.index_values(NAMESPACE_INDEX).unwrap(), ["everything"]);
}

#[test]
fn known_objects_view_matches_the_store() {
    let store = Store::new(Indexers::new());
    store.apply_upsert(key("ns/a"), cm("ns", "a", "1"));
    let known: Arc<dyn KnownObjects<ConfigMap>> = Arc::new(store.clone());
    assert!(known.get_by_key(&key("ns/a")).is_some());
    assert!(known.get_by_key(&key("ns/b")).is_none());
    assert_eq!(known.list_keys(), [key("ns/a")]);
    store.apply_delete(&key("ns/a"));
    assert!(known.list_keys().is_empty());
}

#[tokio::test]
async fn wait_until_synced_wakes_on_mark_synced() {
    let store = Store::<ConfigMap>::new(Indexers::new());
    assert!(!store.has_synced());
    let reader = store.clone();
    let waiter = tokio::spawn(async move { reader.wait_until_synced().await });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    store.mark_synced();
    waiter.await.unwrap();
    assert!(store.has_synced());
    // Already synced: returns at once.
    store.wait_until_synced().await;
}

/// Readers racing a writer that keeps moving objects between index values
/// never see an object filed under a value its index function does not give.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn readers_never_see_objects_and_indexes_disagree() {
    let store = Store::new(by_app());
    let apps = ["a", "b", "c"];
    for i in 0..50 {
        store.apply_upsert(
            key(&format!("ns/o{i}")),
            labelled("ns", &format!("o{i}"), "a"),
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..2 {
        let (store, stop) = (store.clone(), stop.clone());
        readers.push(tokio::spawn(async move {
            let mut checks = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for app in apps {
                    for obj in store.by_index("by-app", app).unwrap() {
                        let label = obj.metadata.labels.as_ref().unwrap()["app"].clone();
                        assert_eq!(label, app, "object filed under a stale value");
                    }
                    let keys = store.index_keys("by-app", app).unwrap();
                    assert!(keys.len() <= 50);
                }
                checks += 1;
                tokio::task::yield_now().await;
            }
            checks
        }));
    }
    let writer = {
        let store = store.clone();
        tokio::task::spawn_blocking(move || {
            for round in 0..20_000usize {
                let i = round % 50;
                let name = format!("o{i}");
                let k = key(&format!("ns/{name}"));
                if round % 7 == 0 {
                    store.apply_delete(&k);
                }
                store.apply_upsert(k, labelled("ns", &name, apps[round % 3]));
            }
        })
    };
    writer.await.unwrap();
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.await.unwrap() > 0);
    }
    let every: usize = apps
        .iter()
        .map(|a| store.by_index("by-app", a).unwrap().len())
        .sum();
    assert_eq!(every, 50);
}
