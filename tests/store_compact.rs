//! The compact cache's rules CM1–CM5 through the store's public API (CM6's
//! failures are unit tests of `store::compact`, which can forge bytes).

use crate::store_common;

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::store::{CompactCache, Indexers, NAMESPACE_INDEX, Store};
use kube_informer::unstable::store::Writer;
use store_common::*;

fn by_app(calls: Arc<AtomicUsize>) -> Indexers<ConfigMap> {
    Indexers::new().with("by-app", move |cm: &ConfigMap| {
        calls.fetch_add(1, Ordering::Relaxed);
        cm.metadata
            .labels
            .iter()
            .flatten()
            .filter(|(k, _)| *k == "app")
            .map(|(_, v)| v.clone())
            .collect()
    })
}

fn object(i: usize) -> Arc<ConfigMap> {
    let mut cm = (*labelled(
        &format!("ns{}", i % 3),
        &format!("o{i}"),
        ["web", "db"][i % 2],
    ))
    .clone();
    cm.data = Some([("payload".to_string(), "x".repeat(i * 7))].into());
    Arc::new(cm)
}

/// Everything a store answers, by key, for comparing two stores.
fn answers(store: &Store<ConfigMap>) -> BTreeMap<String, String> {
    let show = |objects: Vec<Arc<ConfigMap>>| {
        let mut v: Vec<String> = objects.iter().map(|o| format!("{o:?}")).collect();
        v.sort();
        v.join("|")
    };
    let mut out = BTreeMap::new();
    out.insert("list".into(), show(store.list()));
    let mut keys: Vec<String> = store.list_keys().iter().map(|k| k.to_string()).collect();
    keys.sort();
    for k in &keys {
        let got = store.get(&key(k)).map(|o| format!("{o:?}"));
        out.insert(format!("get {k}"), got.unwrap_or_default());
    }
    out.insert("keys".into(), keys.join(","));
    let snapshot: Vec<Arc<ConfigMap>> = store.snapshot().into_iter().map(|(_, o)| o).collect();
    out.insert("snapshot".into(), show(snapshot));
    for app in ["web", "db", "none"] {
        out.insert(
            format!("by-app {app}"),
            show(store.by_index("by-app", app).unwrap()),
        );
    }
    for ns in ["ns0", "ns1", "ns2"] {
        out.insert(format!("ns {ns}"), show(store.namespace(ns).list()));
        out.insert(
            format!("by ns {ns}"),
            show(store.by_index(NAMESPACE_INDEX, ns).unwrap()),
        );
        out.insert(
            format!("get_by {ns}/o1"),
            format!("{:?}", store.get_by(Some(ns), "o1")),
        );
    }
    let mut values = store.index_values("by-app").unwrap();
    values.sort();
    out.insert("values".into(), values.join(","));
    out.insert("len".into(), store.len().to_string());
    out
}

/// CM1, CM5: after the same writes a compact store answers every read as
/// the default store does, and hands back equal replaced and removed
/// objects.
#[test]
fn cm1_a_compact_store_answers_every_read_as_the_default_one() {
    let plain = Writer::new(by_app(Arc::default()));
    let compact = Writer::compact(
        by_app(Arc::default()),
        CompactCache::default().hot_objects(4),
    );
    for round in 0..3 {
        for i in 0..40 {
            let k = key_of(&object(i));
            if (i + round) % 5 == 0 {
                assert_eq!(plain.apply_delete(&k), compact.apply_delete(&k));
                continue;
            }
            let mut next = (*object(i)).clone();
            next.metadata.resource_version = Some(format!("{round}"));
            let next = Arc::new(next);
            let a = plain.apply_upsert(k.clone(), next.clone()).unwrap();
            let b = compact.apply_upsert(k, next).unwrap();
            assert_eq!(a, b);
        }
        // Reads by key in between, so the hot set takes part.
        for i in 0..10 {
            compact.reader().get(&key_of(&object(i)));
        }
        assert_eq!(
            answers(&plain.reader()),
            answers(&compact.reader()),
            "round {round}"
        );
    }
    let stats = compact.reader().compact_stats().unwrap();
    assert_eq!(stats.encoded_objects, compact.reader().len() as u64);
    assert!(stats.hot_hits > 0);
    assert_eq!((stats.encode_failures, stats.decode_failures), (0, 0));
}

/// CM2: index functions run once per stored version, on the write; reads
/// and index lookups never run them.
#[test]
fn cm2_index_functions_run_at_the_write_only() {
    let calls = Arc::new(AtomicUsize::new(0));
    let writer = Writer::compact(by_app(calls.clone()), CompactCache::default());
    for i in 0..10 {
        writer.apply_upsert(key_of(&object(i)), object(i)).unwrap();
    }
    assert_eq!(calls.load(Ordering::Relaxed), 10);
    let store = writer.reader();
    assert_eq!(store.by_index("by-app", "web").unwrap().len(), 5);
    assert_eq!(store.index_keys("by-app", "db").unwrap().len(), 5);
    store.list();
    store.get(&key_of(&object(3)));
    writer.apply_delete(&key_of(&object(3)));
    assert_eq!(calls.load(Ordering::Relaxed), 10);
}

/// CM3: once a write returns, no read returns an older version, though the
/// key was hot; readers racing a writer see versions that never go back.
#[test]
fn cm3_reads_never_see_a_version_older_than_the_last_write() {
    let writer = Writer::compact(Indexers::new(), CompactCache::default().hot_objects(2));
    let store = writer.reader();
    let k = key("ns/a");
    for rv in 1..=50 {
        writer
            .apply_upsert(k.clone(), cm("ns", "a", &rv.to_string()))
            .unwrap();
        for _ in 0..2 {
            let got = store.get(&k).unwrap();
            assert_eq!(
                got.metadata.resource_version.as_deref(),
                Some(&*rv.to_string())
            );
        }
    }
    writer.apply_delete(&k);
    assert!(store.get(&k).is_none());

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (store, stop, k) = (store.clone(), stop.clone(), k.clone());
            std::thread::spawn(move || {
                let mut last = 0u64;
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if let Some(o) = store.get(&k) {
                        let rv: u64 = o
                            .metadata
                            .resource_version
                            .as_deref()
                            .unwrap()
                            .parse()
                            .unwrap();
                        assert!(rv >= last, "read {rv} after {last}");
                        last = rv;
                        reads += 1;
                    }
                }
                reads
            })
        })
        .collect();
    for rv in 100..2_000u64 {
        writer
            .apply_upsert(k.clone(), cm("ns", "a", &rv.to_string()))
            .unwrap();
        let got = store.get(&k).unwrap();
        assert_eq!(
            got.metadata.resource_version.as_deref(),
            Some(&*rv.to_string())
        );
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
}

/// CM4: `get` admits a key on its second read and reads it from the hot
/// set from then on; a `list` of everything neither fills the set nor
/// flushes the keys `get` reads; the set never holds more than its bound.
#[test]
fn cm4_get_fills_the_hot_set_and_a_list_does_not_flush_it() {
    let writer = Writer::compact(Indexers::new(), CompactCache::default().hot_objects(2));
    let store = writer.reader();
    for i in 0..20 {
        writer.apply_upsert(key_of(&object(i)), object(i)).unwrap();
    }
    let stats = || store.compact_stats().unwrap();
    let hot = key_of(&object(0));
    // Read once: decoded, not kept.
    store.get(&hot);
    let once = stats();
    store.get(&hot);
    let twice = stats();
    assert_eq!(
        (twice.hot_hits, twice.decodes),
        (once.hot_hits, once.decodes + 1)
    );
    store.get(&hot);
    let after = stats();
    assert_eq!(
        (after.hot_hits, after.decodes),
        (twice.hot_hits + 1, twice.decodes)
    );

    // A list decodes the 19 others, reads the hot one from the set, and
    // admits nothing: the hot key still hits.
    store.list();
    let listed = stats();
    assert_eq!(listed.decodes, after.decodes + 19);
    assert_eq!(listed.hot_hits, after.hot_hits + 1);
    store.get(&hot);
    assert_eq!(stats().hot_hits, listed.hot_hits + 1);

    // With a bound of 2, admitting two more keys evicts one of the three:
    // `hot` was read again since it joined and `a` was not, so `a` goes;
    // reading `a` again decodes.
    let (a, b) = (key_of(&object(5)), key_of(&object(6)));
    for k in [&a, &a, &b, &b] {
        store.get(k);
    }
    let evicted = stats();
    store.get(&hot);
    assert_eq!(
        stats().hot_hits,
        evicted.hot_hits + 1,
        "the key read often stays"
    );
    let before = stats();
    store.get(&a);
    store.get(&b);
    let after = stats();
    assert_eq!(
        after.decodes + after.hot_hits,
        before.decodes + before.hot_hits + 2
    );
    assert!(after.decodes > before.decodes, "one of a, b was evicted");

    // A key written while hot stays hot with the new version.
    store.get(&hot);
    let mut next = (*object(0)).clone();
    next.metadata.resource_version = Some("9".into());
    writer
        .apply_upsert(hot.clone(), Arc::new(next.clone()))
        .unwrap();
    let written = stats();
    assert_eq!(*store.get(&hot).unwrap(), next);
    assert_eq!(stats().decodes, written.decodes);
}

/// CM5: an upsert hands back the replaced version and a delete the removed
/// one, decoded and equal to what was written; a compact store's objects
/// are equal to, not the same allocation as, what was written.
#[test]
fn cm5_replaced_and_removed_versions_come_back_equal() {
    let writer = Writer::compact(Indexers::new(), CompactCache::default().hot_objects(0));
    let (v1, v2) = (cm("ns", "a", "1"), cm("ns", "a", "2"));
    assert!(
        writer
            .apply_upsert(key("ns/a"), v1.clone())
            .unwrap()
            .is_none()
    );
    let old = writer
        .apply_upsert(key("ns/a"), v2.clone())
        .unwrap()
        .unwrap();
    assert_eq!(old, v1);
    let read = writer.reader().get(&key("ns/a")).unwrap();
    assert_eq!(read, v2);
    assert!(!Arc::ptr_eq(&read, &v2));
    assert_eq!(writer.apply_delete(&key("ns/a")).unwrap(), v2);
    let stats = writer.reader().compact_stats().unwrap();
    assert_eq!((stats.encoded_objects, stats.encoded_bytes), (0, 0));
}
