//! [`MembershipView`]: the ring's Leases as this replica has seen them, and
//! which members are alive by this replica's own clock.

use std::{cmp::Ordering, collections::BTreeMap, time::Duration};

use tokio::time::Instant;

use super::assign::{Fingerprint, Member, MemberId};
use crate::resource_version::compare;

/// What the ring needs from one member's Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRecord {
    /// The member (Lease name) and its incarnation (Lease uid).
    pub member: Member,
    /// The Lease's resourceVersion: any write changes it, so a new value is
    /// a renewal.
    pub resource_version: String,
    /// `spec.leaseDurationSeconds`: how long after an observed renewal the
    /// member counts as alive.
    pub duration: Duration,
    /// The member set this member acknowledged, if any.
    pub ack: Option<Fingerprint>,
}

/// The ring's Leases as one replica observed them.
///
/// A member is alive while `observed_at + duration` is in the future, where
/// `observed_at` is when *this* replica saw the Lease's current version, by
/// this replica's clock. The Lease's own `renewTime` is never read: it was
/// written with another machine's clock. This is client-go leader
/// election's rule, and makes the view immune to clock offsets between
/// machines (only a difference in clock *rates* matters; see the
/// [module docs](super)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokio::time::Instant;
/// use kube_informer::unstable::shard::{LeaseRecord, Member, MembershipView};
///
/// let t0 = Instant::now();
/// let record = LeaseRecord {
///     member: Member::new("ring-b", "uid-b"),
///     resource_version: "7".into(),
///     duration: Duration::from_secs(15),
///     ack: None,
/// };
/// let mut view = MembershipView::new();
/// view.observe(record.clone(), t0);
/// assert!(view.is_live(&record.member.id, t0 + Duration::from_secs(14)));
/// // The same version seen again later is not a renewal, nor is an older
/// // one delivered late (S8).
/// view.observe(record.clone(), t0 + Duration::from_secs(10));
/// let older = LeaseRecord { resource_version: "6".into(), ..record.clone() };
/// assert!(!view.observe(older, t0 + Duration::from_secs(11)));
/// assert!(!view.is_live(&record.member.id, t0 + Duration::from_secs(15)));
/// assert_eq!(view.get(&record.member.id), Some(&record));
/// ```
#[derive(Debug, Default, Clone)]
pub struct MembershipView {
    leases: BTreeMap<MemberId, Observed>,
}

/// Whether `record` is news beside the version of the Lease already
/// `seen` (S8): a later resourceVersion when the two compare (RW1; versions
/// of one resource are ordered across objects, so across incarnations too),
/// else any other version or incarnation (RW2). An older version is not
/// news however late it arrives: a notification the informer delivers
/// after a list showed something newer says nothing new. Not the
/// informer's resync rule (`notification::same_resource_version`): a
/// record holds the resourceVersion as read, and a new uid with an equal
/// opaque resourceVersion is a new Lease, so news.
fn is_news(seen: &LeaseRecord, record: &LeaseRecord) -> bool {
    match compare(&record.resource_version, &seen.resource_version) {
        Some(order) => order == Ordering::Greater,
        None => {
            seen.resource_version != record.resource_version
                || seen.member.incarnation != record.member.incarnation
        }
    }
}

#[derive(Debug, Clone)]
struct Observed {
    record: LeaseRecord,
    observed_at: Instant,
}

impl MembershipView {
    /// An empty view.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a Lease as seen at `now`. A newer resourceVersion (or a new
    /// incarnation) counts as a renewal observed at `now`; the same version
    /// seen again, or an older one, changes nothing (S8). Returns whether it
    /// was a renewal.
    pub fn observe(&mut self, record: LeaseRecord, now: Instant) -> bool {
        match self.leases.get_mut(&record.member.id) {
            Some(seen) if !is_news(&seen.record, &record) => false,
            _ => {
                self.leases.insert(
                    record.member.id.clone(),
                    Observed {
                        record,
                        observed_at: now,
                    },
                );
                true
            }
        }
    }

    /// Forgets a Lease that was deleted.
    pub fn remove(&mut self, id: &MemberId) -> Option<LeaseRecord> {
        self.leases.remove(id).map(|o| o.record)
    }

    /// Replaces the whole view with a complete list read at `now` (a
    /// relist or a confirming read), which must be newer than everything
    /// observed before it: Leases missing from it are forgotten, the others
    /// are observed as by [`observe`](Self::observe), so a version already
    /// seen keeps the time it was first seen (S8).
    pub fn replace(&mut self, records: impl IntoIterator<Item = LeaseRecord>, now: Instant) {
        let mut next = BTreeMap::new();
        for record in records {
            let observed = match self.leases.remove(&record.member.id) {
                Some(seen) if !is_news(&seen.record, &record) => seen,
                _ => Observed {
                    record,
                    observed_at: now,
                },
            };
            next.insert(observed.record.member.id.clone(), observed);
        }
        self.leases = next;
    }

    /// The Lease last seen for `id`.
    pub fn get(&self, id: &MemberId) -> Option<&LeaseRecord> {
        self.leases.get(id).map(|o| &o.record)
    }

    /// Whether `id`'s Lease was renewed, as seen from here, less than its
    /// duration before `now`.
    pub fn is_live(&self, id: &MemberId, now: Instant) -> bool {
        self.leases.get(id).is_some_and(|o| o.is_live(now))
    }

    /// Every Lease seen, live or not.
    pub fn records(&self) -> impl Iterator<Item = &LeaseRecord> {
        self.leases.values().map(|o| &o.record)
    }

    /// The Leases alive at `now`.
    pub fn live(&self, now: Instant) -> impl Iterator<Item = &LeaseRecord> {
        self.leases
            .values()
            .filter(move |o| o.is_live(now))
            .map(|o| &o.record)
    }

    /// The Leases expired at `now`.
    pub fn expired(&self, now: Instant) -> impl Iterator<Item = &LeaseRecord> {
        self.leases
            .values()
            .filter(move |o| !o.is_live(now))
            .map(|o| &o.record)
    }

    /// The next moment after `now` at which a live Lease expires.
    pub fn next_expiry(&self, now: Instant) -> Option<Instant> {
        self.leases
            .values()
            .map(Observed::expires_at)
            .filter(|at| *at > now)
            .min()
    }
}

impl Observed {
    fn expires_at(&self) -> Instant {
        self.observed_at + self.record.duration
    }

    fn is_live(&self, now: Instant) -> bool {
        now < self.expires_at()
    }
}
