//! Rendezvous (highest-random-weight) assignment of object keys to members.
//!
//! Every member gets a pseudo-random weight per key; the key belongs to the
//! member with the highest weight. Removing a member moves only the keys it
//! had (every other member's weights are unchanged, so the maximum among the
//! rest is unchanged); adding one moves to it exactly the keys on which it
//! beats the old maximum, about `1/N` of them. The weights come from
//! [`hash`](super::hash), a fixed algorithm, so every replica computes the same
//! owner for the same member set.

use std::{fmt, sync::Arc};

use super::hash;
use crate::key::ObjectKey;

/// The name of one member of a ring: the name of its Lease.
///
/// # Examples
///
/// ```
/// use kube_informer::unstable::shard::MemberId;
///
/// let id = MemberId::new("workers-pod-0");
/// assert_eq!(id.as_str(), "workers-pod-0");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemberId(Arc<str>);

impl MemberId {
    /// A member id from its Lease name.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self(name.into())
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for MemberId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for MemberId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One incarnation of a member: its id and the uid of the Lease object it
/// holds. A member whose Lease was deleted and created again is a new
/// incarnation, so a member set that loses and regains it is a different set
/// (its [`Fingerprint`] differs), which keeps old acknowledgements from
/// counting for the new set.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Member {
    /// The member's id (its Lease name).
    pub id: MemberId,
    /// The uid of its Lease object.
    pub incarnation: Arc<str>,
}

impl Member {
    /// A member from its id and Lease uid.
    pub fn new(id: impl Into<Arc<str>>, incarnation: impl Into<Arc<str>>) -> Self {
        Self {
            id: MemberId::new(id),
            incarnation: incarnation.into(),
        }
    }
}

/// The identity of a [`MemberSet`]: a stable hash of its members' ids and
/// incarnations, written in Leases to acknowledge the set.
///
/// # Examples
///
/// ```
/// use kube_informer::unstable::shard::Fingerprint;
///
/// let f: Fingerprint = "000000000000feed".parse()?;
/// assert_eq!(f.as_u64(), 0xfeed);
/// assert_eq!(f.to_string(), "000000000000feed");
/// assert!("feed".parse::<Fingerprint>().is_err());
/// # Ok::<(), kube_informer::shard::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(u64);

impl Fingerprint {
    /// The numeric value.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({:016x})", self.0)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl std::str::FromStr for Fingerprint {
    type Err = super::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() != 16 {
            return Err(super::Error::InvalidFingerprint(s.to_owned()));
        }
        u64::from_str_radix(s, 16)
            .map(Self)
            .map_err(|_| super::Error::InvalidFingerprint(s.to_owned()))
    }
}

/// A set of members and the assignment of keys it implies.
///
/// Cheap to clone. Two sets are equal when they hold the same incarnations.
///
/// # Examples
///
/// ```
/// use kube_informer::{ObjectKey, unstable::shard::{Member, MemberSet}};
///
/// let set = MemberSet::new([Member::new("a", "uid-a"), Member::new("b", "uid-b")]);
/// let key: ObjectKey = "default/web".parse()?;
/// let owner = set.owner(&key).unwrap();
/// assert!(owner.as_str() == "a" || owner.as_str() == "b");
/// // Every replica computes the same owner for the same set.
/// let again = MemberSet::new([Member::new("b", "uid-b"), Member::new("a", "uid-a")]);
/// assert_eq!(again.owner(&key), Some(owner));
/// assert_eq!(again.fingerprint(), set.fingerprint());
/// # Ok::<(), kube_informer::store::Error>(())
/// ```
#[derive(Clone)]
pub struct MemberSet {
    inner: Arc<SetInner>,
}

struct SetInner {
    /// Sorted by id, one entry per id.
    members: Vec<Member>,
    /// `hash_str(id)` of each member, same order.
    member_hashes: Vec<u64>,
    fingerprint: Fingerprint,
}

impl MemberSet {
    /// A set of members. When one id appears twice, the greatest
    /// incarnation is kept (a Lease name is unique in a namespace, so this
    /// only happens with hand-made input).
    pub fn new(members: impl IntoIterator<Item = Member>) -> Self {
        let mut members: Vec<Member> = members.into_iter().collect();
        members.sort();
        members.dedup_by(|later, earlier| {
            if later.id == earlier.id {
                *earlier = later.clone();
                true
            } else {
                false
            }
        });
        let member_hashes = members
            .iter()
            .map(|m| hash::hash_str(m.id.as_str()))
            .collect();
        let fingerprint = Fingerprint(hash::hash_parts(
            members
                .iter()
                .flat_map(|m| [m.id.as_str(), &*m.incarnation]),
        ));
        Self {
            inner: Arc::new(SetInner {
                members,
                member_hashes,
                fingerprint,
            }),
        }
    }

    /// The empty set.
    pub fn empty() -> Self {
        Self::new([])
    }

    /// The members, sorted by id.
    pub fn members(&self) -> &[Member] {
        &self.inner.members
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.inner.members.len()
    }

    /// Whether the set has no member.
    pub fn is_empty(&self) -> bool {
        self.inner.members.is_empty()
    }

    /// Whether `id` is a member (any incarnation).
    pub fn contains(&self, id: &MemberId) -> bool {
        self.inner
            .members
            .binary_search_by(|m| m.id.cmp(id))
            .is_ok()
    }

    /// The stable identity of this set.
    pub fn fingerprint(&self) -> Fingerprint {
        self.inner.fingerprint
    }

    /// The member that owns `key`, or `None` for the empty set.
    ///
    /// The owner depends only on the member ids, not on incarnations, so a
    /// member that comes back gets its old keys back.
    pub fn owner(&self, key: &ObjectKey) -> Option<&MemberId> {
        self.owner_of_hash(hash::hash_str(key.as_str()))
    }

    pub(crate) fn owner_of_hash(&self, key_hash: u64) -> Option<&MemberId> {
        let inner = &*self.inner;
        // Ties (equal 64-bit weights) go to the greatest id: members are
        // sorted, so `>=` keeps the later one.
        let mut best: Option<(u64, usize)> = None;
        for (i, member_hash) in inner.member_hashes.iter().enumerate() {
            let w = hash::weight(key_hash, *member_hash);
            if best.is_none_or(|(bw, _)| w >= bw) {
                best = Some((w, i));
            }
        }
        best.map(|(_, i)| &inner.members[i].id)
    }
}

impl PartialEq for MemberSet {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || self.inner.members == other.inner.members
    }
}

impl Eq for MemberSet {}

impl fmt::Debug for MemberSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemberSet")
            .field(
                "members",
                &self.inner.members.iter().map(|m| &m.id).collect::<Vec<_>>(),
            )
            .field("fingerprint", &self.inner.fingerprint)
            .finish()
    }
}
