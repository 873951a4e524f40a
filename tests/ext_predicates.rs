//! Predicates and the `predicate` combinator (rules P1–P6 in
//! `kube_informer::ext::changed`): what passes, resyncs, combinators,
//! the generation fallback, the compared fields.

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::{Stream, StreamExt, stream, stream::FusedStream};
use informer_common::{cm, describe, hand_source, ready, relist, send};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube_informer::{
    Informer, Notification,
    dispatch::SubscribeOptions,
    ext::{ChangeFilter, NotificationStreamExt, changed},
    source::Event,
};

fn with_labels(mut object: ConfigMap, labels: &[(&str, &str)]) -> ConfigMap {
    object.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    object
}

fn deployment(generation: Option<i64>, rv: &str) -> Deployment {
    let mut d = Deployment::default();
    d.metadata.namespace = Some("default".into());
    d.metadata.name = Some("web".into());
    d.metadata.generation = generation;
    d.metadata.resource_version = Some(rv.into());
    d
}

fn watched(old: ConfigMap, new: ConfigMap) -> Notification<ConfigMap> {
    Notification::Updated {
        old: Arc::new(old),
        new: Arc::new(new),
        resync: false,
    }
}

fn resync(object: ConfigMap) -> Notification<ConfigMap> {
    let object = Arc::new(object);
    Notification::Updated {
        old: object.clone(),
        new: object,
        resync: true,
    }
}

/// Every kind of notification once: an addition, a watched update whose
/// labels changed, one whose labels did not, a resync, a deletion.
fn one_of_each() -> Vec<Notification<ConfigMap>> {
    vec![
        Notification::Added {
            object: Arc::new(cm("a", "1")),
            in_initial_list: true,
        },
        watched(cm("a", "1"), with_labels(cm("a", "2"), &[("app", "web")])),
        watched(
            with_labels(cm("a", "2"), &[("app", "web")]),
            with_labels(cm("a", "3"), &[("app", "web")]),
        ),
        resync(with_labels(cm("a", "3"), &[("app", "web")])),
        Notification::Deleted {
            object: Arc::new(cm("a", "3")),
            final_state_unknown: true,
        },
    ]
}

async fn filtered<P: ChangeFilter<ConfigMap>>(p: P) -> Vec<String> {
    stream::iter(one_of_each())
        .filter_changes(p)
        .map(|n| describe(&n))
        .collect()
        .await
}

/// P1: additions and deletions pass even a predicate that passes nothing;
/// P2: so does a resync.
#[tokio::test]
async fn p1_p2_added_deleted_and_resyncs_pass_a_predicate_that_refuses_all() {
    let nothing = |_: &ConfigMap, _: &ConfigMap| false;
    assert_eq!(
        filtered(nothing).await,
        [
            "added a@1 initial=true",
            "updated a@3->3 resync=true",
            "deleted a@3 unknown=true",
        ]
    );
}

/// P1: a watched update passes exactly when the predicate does.
#[tokio::test]
async fn p1_watched_updates_pass_when_the_predicate_does() {
    assert_eq!(
        filtered(changed::labels()).await,
        [
            "added a@1 initial=true",
            "updated a@1->2 resync=false",
            "updated a@3->3 resync=true",
            "deleted a@3 unknown=true",
        ]
    );
    let everything = |_: &ConfigMap, _: &ConfigMap| true;
    assert_eq!(filtered(everything).await.len(), one_of_each().len());
}

/// P2: the predicate is not asked about a resync; only the two watched
/// updates reach it.
#[tokio::test]
async fn p2_a_resync_is_not_put_to_the_predicate() {
    let asked = AtomicUsize::new(0);
    let counting = |_: &ConfigMap, _: &ConfigMap| {
        asked.fetch_add(1, Ordering::Relaxed);
        false
    };
    filtered(counting).await;
    assert_eq!(asked.load(Ordering::Relaxed), 2);
}

/// P2 through an informer: a subscriber with a resync period gets its
/// rounds through a predicate that turns every watched update of an
/// unchanged label set away.
#[tokio::test(start_paused = true)]
async fn p2_a_subscriber_with_a_resync_period_gets_its_rounds_through_a_predicate() {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .resync_check_period(Duration::from_secs(1))
        .build();
    let mut labelled = informer
        .subscribe(SubscribeOptions::default().resync(Duration::from_secs(1)))
        .unwrap()
        .filter_changes(changed::labels());
    let run = tokio::spawn(informer.run());

    relist(&source, &[cm("a", "1")], "1");
    assert_eq!(next(&mut labelled).await, "added a@1 initial=true");
    // A data-only write is dropped, a label change passes.
    send(&source, Event::Modified(cm("a", "2")));
    send(
        &source,
        Event::Modified(with_labels(cm("a", "3"), &[("app", "web")])),
    );
    assert_eq!(next(&mut labelled).await, "updated a@2->3 resync=false");
    // A resync round passes though the labels did not change.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(next(&mut labelled).await, "updated a@3->3 resync=true");
    assert!(ready(&mut labelled).is_empty());

    drop(source);
    run.await.unwrap().unwrap();
    assert!(labelled.next().await.is_none());
}

/// The next notification, or a failure once a minute of paused time has
/// passed without one (the resync timer keeps the clock moving, so a
/// notification that never comes would otherwise hang the test).
async fn next<S: Stream<Item = Notification<ConfigMap>> + Unpin>(s: &mut S) -> String {
    let n = tokio::time::timeout(Duration::from_secs(60), s.next())
        .await
        .expect("no notification within a minute")
        .expect("the stream ended");
    describe(&n)
}

/// P3: `or` passes when either side does, `and` when both do.
#[test]
fn p3_or_passes_when_either_does_and_when_both_do() {
    let yes = |_: &ConfigMap, _: &ConfigMap| true;
    let no = |_: &ConfigMap, _: &ConfigMap| false;
    let (a, b) = (ConfigMap::default(), ConfigMap::default());
    for (first, second, either, both) in [
        (true, true, true, true),
        (true, false, true, false),
        (false, true, true, false),
        (false, false, false, false),
    ] {
        let pick = |v: bool| if v { yes } else { no };
        assert_eq!(pick(first).or(pick(second)).passes(&a, &b), either);
        assert_eq!(pick(first).and(pick(second)).passes(&a, &b), both);
    }
}

/// P3: the second predicate is asked only when the first does not decide.
#[test]
fn p3_the_second_predicate_is_asked_only_when_needed() {
    let asked = AtomicUsize::new(0);
    let second = |_: &ConfigMap, _: &ConfigMap| {
        asked.fetch_add(1, Ordering::Relaxed);
        true
    };
    let (a, b) = (ConfigMap::default(), ConfigMap::default());
    let yes = |_: &ConfigMap, _: &ConfigMap| true;
    let no = |_: &ConfigMap, _: &ConfigMap| false;

    assert!(yes.or(&second).passes(&a, &b));
    assert!(!no.and(&second).passes(&a, &b));
    assert_eq!(asked.load(Ordering::Relaxed), 0);
    assert!(no.or(&second).passes(&a, &b));
    assert!(yes.and(&second).passes(&a, &b));
    assert_eq!(asked.load(Ordering::Relaxed), 2);
}

/// P3: the built-in predicates combine without naming the object type,
/// which they take from the stream they filter.
#[tokio::test]
async fn p3_built_in_predicates_combine_without_type_annotations() {
    assert_eq!(
        filtered(changed::annotations().or(changed::labels())).await,
        filtered(changed::labels()).await
    );
    // labels changed and resourceVersion changed: the one labelled update.
    assert_eq!(
        filtered(changed::labels().and(changed::resource_version())).await,
        filtered(changed::labels()).await
    );
    // labels changed and finalizers changed: no watched update passes.
    assert_eq!(
        filtered(changed::labels().and(changed::finalizers())).await,
        filtered(|_: &ConfigMap, _: &ConfigMap| false).await
    );
}

/// P3 with predicates chosen at run time: boxed and shared trait objects
/// are predicates, combine, and filter a stream as the predicate inside.
#[tokio::test]
async fn p3_boxed_and_shared_predicates_combine_and_filter() {
    let boxed: Box<dyn ChangeFilter<ConfigMap> + Send + Sync> = Box::new(changed::annotations());
    let shared: Arc<dyn ChangeFilter<ConfigMap> + Send + Sync> = Arc::new(changed::labels());
    assert_eq!(
        filtered(boxed.or(shared.clone())).await,
        filtered(changed::labels()).await
    );
    assert_eq!(filtered(shared).await, filtered(changed::labels()).await);
}

/// P4: the generation decides where both sides have one: a status write
/// (new resourceVersion, same generation) is turned away, a spec change
/// passes.
#[test]
fn p4_generation_passes_when_the_generation_changed() {
    let generation = changed::generation();
    let before = deployment(Some(3), "100");
    assert!(!generation.passes(&before, &deployment(Some(3), "101")));
    assert!(generation.passes(&before, &deployment(Some(4), "102")));
    // A generation is compared, not ordered: any difference passes.
    assert!(generation.passes(&deployment(Some(4), "102"), &before));
}

/// P4: where either side has no generation, the resourceVersion decides.
#[test]
fn p4_without_a_generation_the_resource_version_decides() {
    // ConfigMaps have none.
    let generation = changed::generation();
    assert!(generation.passes(&cm("a", "1"), &cm("a", "2")));
    assert!(!generation.passes(&cm("a", "2"), &cm("a", "2")));
    // A Deployment with one side without: a changed resourceVersion passes, an equal one does not.
    let generation = changed::generation();
    assert!(generation.passes(&deployment(None, "1"), &deployment(Some(1), "2")));
    assert!(generation.passes(&deployment(Some(1), "1"), &deployment(None, "2")));
    assert!(!generation.passes(&deployment(Some(1), "5"), &deployment(None, "5")));
}

/// P4 on a stream of Deployments: status writes dropped, spec changes kept.
#[tokio::test]
async fn p4_generation_filters_status_writes_from_a_stream() {
    let update = |old, new| Notification::Updated {
        old: Arc::new(old),
        new: Arc::new(new),
        resync: false,
    };
    let kept: Vec<_> = stream::iter([
        update(deployment(Some(1), "1"), deployment(Some(1), "2")),
        update(deployment(Some(1), "2"), deployment(Some(2), "3")),
        update(deployment(Some(2), "3"), deployment(Some(2), "4")),
    ])
    .filter_changes(changed::generation())
    .map(|n| n.object().metadata.resource_version.clone().unwrap())
    .collect()
    .await;
    assert_eq!(kept, ["3"]);
}

/// P5: labels, annotations and finalizers pass on a change of their own
/// field only, and a missing field equals an empty one.
#[test]
fn p5_fields_compare_their_own_field_with_missing_as_empty() {
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let base = cm("a", "1");

    let mut labelled = base.clone();
    labelled.metadata.labels = Some(map(&[("app", "web")]));
    let mut annotated = base.clone();
    annotated.metadata.annotations = Some(map(&[("note", "x")]));
    let mut finalized = base.clone();
    finalized.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);

    assert!(changed::labels().passes(&base, &labelled));
    assert!(!changed::labels().passes(&base, &annotated));
    assert!(!changed::labels().passes(&base, &finalized));

    assert!(changed::annotations().passes(&base, &annotated));
    assert!(!changed::annotations().passes(&base, &labelled));
    assert!(!changed::annotations().passes(&base, &finalized));

    assert!(changed::finalizers().passes(&base, &finalized));
    assert!(changed::finalizers().passes(&finalized, &base));
    assert!(!changed::finalizers().passes(&base, &labelled));

    // Missing equals empty, both ways.
    let mut empty = base.clone();
    empty.metadata.labels = Some(map(&[]));
    empty.metadata.annotations = Some(map(&[]));
    empty.metadata.finalizers = Some(vec![]);
    for (old, new) in [(&base, &empty), (&empty, &base)] {
        assert!(!changed::labels().passes(old, new));
        assert!(!changed::annotations().passes(old, new));
        assert!(!changed::finalizers().passes(old, new));
    }

    // A changed value under the same key is a change.
    let mut relabelled = base.clone();
    relabelled.metadata.labels = Some(map(&[("app", "db")]));
    assert!(changed::labels().passes(&labelled, &relabelled));
}

/// P5: finalizers are a list: a reorder is a change.
#[test]
fn p5_finalizers_compare_as_a_list() {
    let with = |names: &[&str]| {
        let mut object = cm("a", "1");
        object.metadata.finalizers = Some(names.iter().map(|n| n.to_string()).collect());
        object
    };
    assert!(!changed::finalizers().passes(&with(&["a", "b"]), &with(&["a", "b"])));
    assert!(changed::finalizers().passes(&with(&["a", "b"]), &with(&["b", "a"])));
}

/// P6: the resourceVersion strings are compared; missing reads as "".
#[test]
fn p6_resource_version_compares_the_strings_missing_as_empty() {
    let rv = changed::resource_version();
    assert!(rv.passes(&cm("a", "1"), &cm("a", "2")));
    assert!(!rv.passes(&cm("a", "2"), &cm("a", "2")));
    let mut missing = cm("a", "1");
    missing.metadata.resource_version = None;
    assert!(!rv.passes(&missing, &cm("a", "")));
    assert!(rv.passes(&missing, &cm("a", "1")));
}

/// P1 on the stream's shape: the filter may drop any item, so its lower
/// size hint is 0 and its upper one the inner stream's; it is fused when
/// the inner stream is.
#[tokio::test]
async fn p1_the_filter_passes_the_upper_size_hint_and_is_fused() {
    let mut s = stream::iter(one_of_each())
        .fuse()
        .filter_changes(changed::labels());
    assert_eq!(s.size_hint(), (0, Some(5)));
    assert!(!s.is_terminated());
    while s.next().await.is_some() {}
    assert!(s.is_terminated());
}
