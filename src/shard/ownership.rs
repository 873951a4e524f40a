//! [`Ownership`]: which keys one replica may act on at one moment.

use std::sync::Arc;

use super::assign::{MemberId, MemberSet};
use crate::key::ObjectKey;

/// Which keys a replica may act on right now.
///
/// A replica that changes its member set keeps only the keys it owns in
/// both the set it acquired under and every set adopted since, so an
/// ownership is "owner in all of these sets", plus the two ends: nothing
/// (not a member, not renewed, not leader) and everything (the leader of a
/// [`leader`](super) gate).
///
/// # Examples
///
/// ```
/// use kube_informer::{ObjectKey, shard::{KeyGate, Ownership}};
///
/// let key: ObjectKey = "default/web".parse()?;
/// let gate = KeyGate::new(Ownership::everything());
/// assert!(gate.owns(&key));
/// gate.set_ownership(Ownership::nothing());
/// assert!(!gate.owns(&key));
/// # Ok::<(), kube_informer::store::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ownership {
    scope: Scope,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Scope {
    Nothing,
    Everything,
    Owner {
        me: MemberId,
        sets: Arc<[MemberSet]>,
    },
}

impl Ownership {
    /// No key.
    pub fn nothing() -> Self {
        Self {
            scope: Scope::Nothing,
        }
    }

    /// Every key.
    pub fn everything() -> Self {
        Self {
            scope: Scope::Everything,
        }
    }

    /// The keys `me` owns in every one of `sets`; nothing when `sets` is
    /// empty. The membership task computes ownerships; this is public for
    /// tests (its argument types are in the hidden `unstable::shard`).
    #[doc(hidden)]
    pub fn of(me: MemberId, sets: impl IntoIterator<Item = MemberSet>) -> Self {
        let sets: Arc<[MemberSet]> = sets.into_iter().collect();
        if sets.is_empty() {
            return Self::nothing();
        }
        Self {
            scope: Scope::Owner { me, sets },
        }
    }

    /// Whether the key is owned. For the gate and the crate's tests: a
    /// program asks [`KeyGate::owns`](super::KeyGate::owns), which also
    /// heeds the ownership's deadline.
    #[doc(hidden)]
    pub fn owns(&self, key: &ObjectKey) -> bool {
        match &self.scope {
            Scope::Nothing => false,
            Scope::Everything => true,
            Scope::Owner { me, sets } => {
                let key_hash = super::hash::hash_str(key.as_str());
                sets.iter()
                    .all(|set| set.owner_of_hash(key_hash) == Some(me))
            }
        }
    }

    /// Members of the newest member set this ownership acts under: 0 for
    /// [`nothing`](Self::nothing), 1 for [`everything`](Self::everything)
    /// (a leader acting alone). Outside the semver promise: what a user
    /// reads is `ShardMetrics::members`.
    #[doc(hidden)]
    pub fn members(&self) -> usize {
        match &self.scope {
            Scope::Nothing => 0,
            Scope::Everything => 1,
            Scope::Owner { sets, .. } => sets.last().map_or(0, |set| set.len()),
        }
    }

    /// Whether no key is owned for sure (an ownership by sets may still own
    /// none, which only a look at the keys can tell). Outside the semver
    /// promise: for the crate's own tests.
    #[doc(hidden)]
    pub fn is_nothing(&self) -> bool {
        matches!(self.scope, Scope::Nothing)
    }
}
