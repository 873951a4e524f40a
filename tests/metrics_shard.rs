//! A sharded replica's metrics (`KeyGate::metrics`): members, owned keys,
//! ownership changes and work in flight move as membership changes.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::unstable::store::Writer;
use kube_informer::{
    ObjectKey,
    shard::{KeyGate, Ownership},
    unstable::shard::{Member, MemberId, MemberSet},
};

fn store_of(n: usize) -> Writer<ConfigMap> {
    let writer = Writer::new(Default::default());
    for i in 0..n {
        let key = ObjectKey::new(Some("default"), &format!("cm-{i}")).unwrap();
        writer
            .apply_upsert(key, Arc::new(ConfigMap::default()))
            .unwrap();
    }
    writer
}

fn set(ids: &[&str]) -> MemberSet {
    MemberSet::new(ids.iter().map(|id| Member::new(*id, "1")))
}

#[test]
fn shard_metrics_follow_members_owned_keys_changes_and_work() {
    let writer = store_of(3_000);
    let store = writer.reader();
    let gate = KeyGate::new(Ownership::nothing());
    let before = gate.metrics(&store);
    assert_eq!(
        (before.members, before.owned_keys, before.ownership_changes),
        (0, 0, 0)
    );

    // Joins a ring of three: about a third of the keys.
    gate.set_ownership(Ownership::of(MemberId::new("a"), [set(&["a", "b", "c"])]));
    let three = gate.metrics(&store);
    assert_eq!((three.members, three.ownership_changes), (3, 1));
    assert!(
        (850..=1150).contains(&three.owned_keys),
        "{}",
        three.owned_keys
    );

    // The same ownership again is no change.
    gate.set_ownership(Ownership::of(MemberId::new("a"), [set(&["a", "b", "c"])]));
    assert_eq!(gate.metrics(&store).ownership_changes, 1);

    // c leaves: a owns about half.
    gate.set_ownership(Ownership::of(MemberId::new("a"), [set(&["a", "b"])]));
    let two = gate.metrics(&store);
    assert_eq!((two.members, two.ownership_changes), (2, 2));
    assert!(
        two.owned_keys > three.owned_keys && (1300..=1700).contains(&two.owned_keys),
        "{}",
        two.owned_keys
    );

    // Work in flight is counted while its guards live.
    let owned: Vec<ObjectKey> = store
        .list_keys()
        .into_iter()
        .filter(|key| gate.owns(key))
        .take(2)
        .collect();
    let guards: Vec<_> = owned.iter().map(|key| gate.begin(key).unwrap()).collect();
    assert_eq!(gate.metrics(&store).work_in_flight, 2);
    drop(guards);
    assert_eq!(gate.metrics(&store).work_in_flight, 0);

    // Fenced: owns nothing.
    gate.set_ownership(Ownership::nothing());
    let fenced = gate.metrics(&store);
    assert_eq!(
        (fenced.members, fenced.owned_keys, fenced.ownership_changes),
        (0, 0, 3)
    );
}
