//! S1: rendezvous assignment — balance, minimal movement, determinism.

use kube_informer::{
    ObjectKey,
    unstable::shard::{Member, MemberId, MemberSet},
};

fn keys(n: usize) -> Vec<ObjectKey> {
    (0..n)
        .map(|i| ObjectKey::new(Some(&format!("ns-{}", i % 10)), &format!("object-{i}")).unwrap())
        .collect()
}

fn set(ids: &[&str]) -> MemberSet {
    MemberSet::new(ids.iter().map(|id| Member::new(*id, format!("uid-{id}"))))
}

fn owners(set: &MemberSet, keys: &[ObjectKey]) -> Vec<MemberId> {
    keys.iter().map(|k| set.owner(k).unwrap().clone()).collect()
}

#[test]
fn s1_three_members_share_ten_thousand_keys_within_five_percent() {
    let keys = keys(10_000);
    let ring = set(&["workers-0", "workers-1", "workers-2"]);
    let owners = owners(&ring, &keys);
    let third = 10_000.0 / 3.0;
    for member in ring.members() {
        let count = owners.iter().filter(|o| **o == member.id).count();
        eprintln!("S1 balance: {} owns {count} of 10000", member.id);
        assert!(
            (count as f64 - third).abs() <= third * 0.05,
            "{} owns {count}, not within 5% of {third:.0}",
            member.id
        );
    }
}

#[test]
fn s1_a_member_leaving_moves_only_its_keys() {
    let keys = keys(10_000);
    let before = owners(&set(&["workers-0", "workers-1", "workers-2"]), &keys);
    let after = owners(&set(&["workers-0", "workers-1"]), &keys);
    let mut moved = 0;
    for (b, a) in before.iter().zip(&after) {
        if b != a {
            moved += 1;
            assert_eq!(b.as_str(), "workers-2", "a key of a staying member moved");
        } else {
            assert_ne!(b.as_str(), "workers-2");
        }
    }
    let had = before.iter().filter(|o| o.as_str() == "workers-2").count();
    eprintln!("S1 leave: {moved} of 10000 keys moved (the leaver had {had})");
    assert_eq!(moved, had);
}

#[test]
fn s1_a_member_joining_takes_about_one_nth() {
    let keys = keys(10_000);
    let before = owners(&set(&["workers-0", "workers-1", "workers-2"]), &keys);
    let after = owners(
        &set(&["workers-0", "workers-1", "workers-2", "workers-3"]),
        &keys,
    );
    let mut moved = 0;
    for (b, a) in before.iter().zip(&after) {
        if b != a {
            moved += 1;
            assert_eq!(a.as_str(), "workers-3", "a key moved between old members");
        }
    }
    eprintln!("S1 join: {moved} of 10000 keys moved, all to the joiner (1/4 = 2500)");
    assert!(
        (moved as f64 - 2500.0).abs() <= 2500.0 * 0.05,
        "{moved} moved"
    );
}

#[test]
fn s1_owner_is_the_same_whatever_the_order_or_process() {
    let a = set(&["b", "c", "a"]);
    let b = set(&["a", "b", "c"]);
    assert_eq!(a, b);
    assert_eq!(a.fingerprint(), b.fingerprint());
    let keys = keys(1000);
    assert_eq!(owners(&a, &keys), owners(&b, &keys));
    // Pinned: another build or process must compute exactly these.
    let pinned: Vec<_> = keys[..8]
        .iter()
        .map(|k| a.owner(k).unwrap().to_string())
        .collect();
    assert_eq!(pinned, PINNED_OWNERS);
    assert_eq!(a.fingerprint().to_string(), PINNED_FINGERPRINT);
}

#[test]
fn s1_fingerprint_changes_with_an_incarnation() {
    let one = MemberSet::new([Member::new("a", "1"), Member::new("b", "1")]);
    let again = MemberSet::new([Member::new("a", "1"), Member::new("b", "2")]);
    assert_ne!(one, again);
    assert_ne!(one.fingerprint(), again.fingerprint());
    // The assignment depends on ids only: a returning member gets its keys back.
    let keys = keys(1000);
    assert_eq!(owners(&one, &keys), owners(&again, &keys));
}

#[test]
fn s1_empty_set_owns_nothing() {
    assert_eq!(MemberSet::empty().owner(&"x".parse().unwrap()), None);
}

const PINNED_OWNERS: [&str; 8] = ["b", "b", "b", "c", "c", "b", "c", "c"];
const PINNED_FINGERPRINT: &str = "aab6af4ad4e52a48";
