//! Store reads and indexes, written through the store's one `Writer`: the
//! store's rules ST1–ST5, and F2, I1, I2 and L9 where they meet the store.

use crate::store_common;

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::store::{Error, Indexers, NAMESPACE_INDEX};
use kube_informer::unstable::store::Writer;
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

/// I1, I2 on the store's side: an upsert hands back the object it replaced
/// (`None` for a new key) and a delete the one it removed, which the
/// informer turns into Updated, Added and Deleted; reads follow each write.
#[test]
fn i1_get_list_len_follow_upserts_and_deletes() {
    let writer = new_writer(Indexers::new());
    let store = writer.reader();
    assert!(store.is_empty());
    let a = cm("ns", "a", "1");
    assert!(
        writer
            .apply_upsert(key("ns/a"), a.clone())
            .unwrap()
            .is_none()
    );
    let a2 = cm("ns", "a", "2");
    let old = writer
        .apply_upsert(key("ns/a"), a2.clone())
        .unwrap()
        .unwrap();
    assert_same(&old, &a);
    assert_same(&store.get(&key("ns/a")).unwrap(), &a2);
    writer
        .apply_upsert(key("other/b"), cm("other", "b", "1"))
        .unwrap();
    assert_eq!(store.len(), 2);
    assert_eq!(names(store.list()), ["ns/a", "other/b"]);
    let removed = writer.apply_delete(&key("ns/a")).unwrap();
    assert_same(&removed, &a2);
    assert!(writer.apply_delete(&key("ns/a")).is_none());
    assert_eq!(
        store
            .list_keys()
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>(),
        ["other/b"]
    );
}

// ST1
#[test]
fn st1_namespace_index_is_built_in() {
    let writer = new_writer(Indexers::new());
    let store = writer.reader();
    writer
        .apply_upsert(key("ns1/a"), cm("ns1", "a", "1"))
        .unwrap();
    writer
        .apply_upsert(key("ns1/b"), cm("ns1", "b", "1"))
        .unwrap();
    writer
        .apply_upsert(key("ns2/c"), cm("ns2", "c", "1"))
        .unwrap();
    assert_eq!(
        names(store.by_index(NAMESPACE_INDEX, "ns1").unwrap()),
        ["ns1/a", "ns1/b"]
    );
    assert_eq!(
        sorted(store.index_values(NAMESPACE_INDEX).unwrap()),
        ["ns1", "ns2"]
    );
    writer.apply_delete(&key("ns2/c"));
    assert_eq!(store.index_values(NAMESPACE_INDEX).unwrap(), ["ns1"]);
    assert!(store.by_index(NAMESPACE_INDEX, "ns2").unwrap().is_empty());
}

// ST1
#[test]
fn st1_custom_index_refiles_on_update_and_forgets_on_delete() {
    let writer = new_writer(by_app());
    let store = writer.reader();
    writer
        .apply_upsert(key("ns/a"), labelled("ns", "a", "web"))
        .unwrap();
    writer
        .apply_upsert(key("ns/b"), labelled("ns", "b", "web"))
        .unwrap();
    writer
        .apply_upsert(key("ns/c"), cm("ns", "c", "1"))
        .unwrap(); // no label: no value
    assert_eq!(
        names(store.by_index("by-app", "web").unwrap()),
        ["ns/a", "ns/b"]
    );

    writer
        .apply_upsert(key("ns/a"), labelled("ns", "a", "db"))
        .unwrap();
    assert_eq!(names(store.by_index("by-app", "web").unwrap()), ["ns/b"]);
    assert_eq!(names(store.by_index("by-app", "db").unwrap()), ["ns/a"]);
    assert_eq!(sorted(store.index_values("by-app").unwrap()), ["db", "web"]);

    writer.apply_delete(&key("ns/b"));
    assert_eq!(store.index_values("by-app").unwrap(), ["db"]);
    assert_eq!(store.index_keys("by-app", "db").unwrap(), [key("ns/a")]);
}

// ST1
#[test]
fn st1_unknown_index_is_an_error() {
    let writer = Writer::<ConfigMap>::new(Indexers::new());
    let store = writer.reader();
    assert_eq!(
        store.by_index("nope", "x").unwrap_err(),
        Error::UnknownIndex("nope".into())
    );
    assert_eq!(
        store.index_values("nope").unwrap_err().to_string(),
        "no index named \"nope\""
    );
}

// ST1
#[test]
fn st1_an_indexer_under_an_existing_name_replaces_it() {
    let indexers =
        Indexers::<ConfigMap>::new().with(NAMESPACE_INDEX, |_| vec!["everything".into()]);
    assert_eq!(indexers.names().collect::<Vec<_>>(), [NAMESPACE_INDEX]);
    let writer = new_writer(indexers);
    let store = writer.reader();
    writer
        .apply_upsert(key("ns/a"), cm("ns", "a", "1"))
        .unwrap();
    assert_eq!(store.index_values(NAMESPACE_INDEX).unwrap(), ["everything"]);
}

// ST5
#[tokio::test]
async fn st5_wait_until_synced_wakes_on_mark_synced() {
    let writer = Writer::<ConfigMap>::new(Indexers::new());
    let store = writer.reader();
    assert!(!store.has_synced());
    let reader = store.clone();
    let waiter = tokio::spawn(async move { reader.wait_until_synced().await });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    writer.mark_synced();
    waiter.await.unwrap().unwrap();
    assert!(store.has_synced());
    // Already synced: returns at once.
    store.wait_until_synced().await.unwrap();
}

/// ST2: readers racing a writer that keeps moving objects between index
/// values never see an object filed under a value its index function does
/// not give.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn st2_readers_never_see_objects_and_indexes_disagree() {
    let writer = new_writer(by_app());
    let store = writer.reader();
    let apps = ["a", "b", "c"];
    for i in 0..50 {
        writer
            .apply_upsert(
                key(&format!("ns/o{i}")),
                labelled("ns", &format!("o{i}"), "a"),
            )
            .unwrap();
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
    let writing = {
        tokio::task::spawn_blocking(move || {
            for round in 0..20_000usize {
                let i = round % 50;
                let name = format!("o{i}");
                let k = key(&format!("ns/{name}"));
                if round % 7 == 0 {
                    writer.apply_delete(&k);
                }
                writer
                    .apply_upsert(k, labelled("ns", &name, apps[round % 3]))
                    .unwrap();
            }
        })
    };
    writing.await.unwrap();
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

/// ST3, L9: an index function that panics refuses the write: the older
/// version stays, filed under its older values, and no value of the refused
/// version leaks into any index.
#[test]
fn st3_an_indexer_that_panics_leaves_the_store_as_it_was() {
    let writer = new_writer(Indexers::new().with("by-app", |cm: &ConfigMap| {
        let app = cm.metadata.labels.as_ref().unwrap()["app"].clone();
        assert_ne!(app, "boom", "cannot index {app}");
        vec![app]
    }));
    let store = writer.reader();
    let v1 = labelled("ns", "a", "web");
    writer.apply_upsert(key("ns/a"), v1.clone()).unwrap();

    let error = writer
        .apply_upsert(key("ns/a"), labelled("ns", "a", "boom"))
        .unwrap_err();
    match &error {
        Error::IndexerPanicked { index, message } => {
            assert_eq!(index, "by-app");
            assert!(message.contains("cannot index boom"), "{message}");
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(
        error
            .to_string()
            .starts_with("index function \"by-app\" panicked")
    );
    assert_same(&store.get(&key("ns/a")).unwrap(), &v1);
    assert_eq!(names(store.by_index("by-app", "web").unwrap()), ["ns/a"]);
    assert_eq!(store.index_values("by-app").unwrap(), ["web"]);

    // A new key whose index function panics is not stored at all.
    assert!(
        writer
            .apply_upsert(key("ns/b"), labelled("ns", "b", "boom"))
            .is_err()
    );
    assert!(store.get(&key("ns/b")).is_none());
    assert_eq!(sorted(store.index_values(NAMESPACE_INDEX).unwrap()), ["ns"]);
    assert_eq!(store.len(), 1);

    // The store goes on working.
    writer
        .apply_upsert(key("ns/a"), labelled("ns", "a", "db"))
        .unwrap();
    assert_eq!(store.index_values("by-app").unwrap(), ["db"]);
    writer.apply_delete(&key("ns/a"));
    assert!(store.index_values("by-app").unwrap().is_empty());
}

/// ST3: removal unfiles the values the object was stored under, without
/// calling the index function again: a function whose answer changes between
/// calls (or that would panic now) cannot leave a stale entry behind.
#[test]
fn st3_removal_unfiles_the_kept_values_without_calling_the_indexer() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = calls.clone();
    let writer = new_writer(Indexers::new().with("by-call", move |_: &ConfigMap| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        assert!(n < 2, "index function called again");
        vec![format!("call-{n}")]
    }));
    let store = writer.reader();
    writer
        .apply_upsert(key("ns/a"), cm("ns", "a", "1"))
        .unwrap();
    assert_eq!(store.index_values("by-call").unwrap(), ["call-0"]);
    // The replacement unfiles "call-0" (kept), files "call-1".
    writer
        .apply_upsert(key("ns/a"), cm("ns", "a", "2"))
        .unwrap();
    assert_eq!(store.index_values("by-call").unwrap(), ["call-1"]);
    assert!(writer.apply_delete(&key("ns/a")).is_some());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(store.index_values("by-call").unwrap().is_empty());
    assert!(store.index_keys("by-call", "call-1").unwrap().is_empty());
}

/// F2: a lookup by namespace and name finds the object under the key F2
/// spells from them; parts no key can have (a `/`, an empty name) find
/// nothing.
#[test]
fn f2_get_by_finds_namespaced_and_cluster_scoped_objects() {
    let writer = new_writer(Indexers::new());
    let store = writer.reader();
    writer
        .apply_upsert(key("ns/a"), cm("ns", "a", "1"))
        .unwrap();
    let mut node = (*cm("", "node-1", "1")).clone();
    node.metadata.namespace = None;
    writer.apply_upsert(key("node-1"), Arc::new(node)).unwrap();

    assert_eq!(key_of(&store.get_by(Some("ns"), "a").unwrap()), key("ns/a"));
    assert!(store.get_by(Some("other"), "a").is_none());
    assert!(store.get_by(None, "a").is_none());
    assert!(store.get_by(None, "node-1").is_some());
    assert!(store.get_by(Some(""), "node-1").is_some());
    // Parts no key can have find nothing, rather than another key.
    assert!(store.get_by(None, "ns/a").is_none());
    assert!(store.get_by(Some("ns/a"), "x").is_none());
    assert!(store.get_by(Some("ns"), "").is_none());
}

// ST4
#[test]
fn st4_namespace_view_lists_and_gets_one_namespace() {
    let writer = new_writer(Indexers::new());
    let store = writer.reader();
    for (ns, name) in [("ns1", "a"), ("ns1", "b"), ("ns2", "a")] {
        writer
            .apply_upsert(key(&format!("{ns}/{name}")), cm(ns, name, "1"))
            .unwrap();
    }
    let ns1 = store.namespace("ns1");
    assert_eq!(names(ns1.list()), ["ns1/a", "ns1/b"]);
    assert_eq!(key_of(&ns1.get("a").unwrap()), key("ns1/a"));
    assert!(ns1.get("c").is_none());
    // A view reads the store as it is now.
    writer.apply_delete(&key("ns1/a"));
    assert!(ns1.get("a").is_none());
    assert_eq!(names(ns1.list()), ["ns1/b"]);
    assert!(store.namespace("ns3").list().is_empty());
}

/// ST4: with the namespace index replaced by a user index, the namespace
/// view still answers by the keys' namespaces.
#[test]
fn st4_namespace_view_works_without_the_namespace_index() {
    let indexers = Indexers::<ConfigMap>::new().with(NAMESPACE_INDEX, |_| vec!["x".into()]);
    let writer = new_writer(indexers);
    let store = writer.reader();
    writer
        .apply_upsert(key("ns1/a"), cm("ns1", "a", "1"))
        .unwrap();
    writer
        .apply_upsert(key("ns2/b"), cm("ns2", "b", "1"))
        .unwrap();
    assert_eq!(names(store.namespace("ns1").list()), ["ns1/a"]);
    assert!(store.namespace("ns2").get("b").is_some());
}
