//! [`Handover`]: the pure state machine of one ring member.
//!
//! It takes in what the member saw (Lease notifications, the results of its
//! own Lease writes, confirming reads) with the time it saw them, and says
//! what to do (write the own Lease, fence expired Leases, confirm, act on
//! which keys). No I/O and no clock of its own, so the same code runs under
//! the membership task and under the tests that replay generated
//! interleavings. The rules are numbered S1… in the [module docs](super).

use std::{sync::Arc, time::Duration};

use tokio::time::Instant;

use crate::hash::KeyMap;

use super::{
    assign::{Fingerprint, Member, MemberId, MemberSet},
    ownership::Ownership,
    view::{LeaseRecord, MembershipView},
};

/// The member's own Lease as its last successful write left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnLease {
    /// The Lease's uid: the member's incarnation.
    pub uid: Arc<str>,
    /// The resourceVersion the next write is conditional on.
    pub resource_version: String,
    /// The acknowledged set written in it.
    pub ack: Option<Fingerprint>,
}

/// What [`Handover::plan`] asks its driver to do now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Write the own Lease now (create it when there is none, else a
    /// renewal conditional on its resourceVersion) instead of waiting for
    /// the renew period: it is missing, or a new acknowledgement is ready.
    pub write_now: bool,
    /// The acknowledgement every write of the own Lease carries from now on.
    pub ack: Option<Fingerprint>,
    /// Leases seen expired: delete each, conditional on the resourceVersion
    /// recorded here (S5), then report with [`Handover::remove`].
    pub fence: Vec<LeaseRecord>,
    /// Read every Lease of the ring in one list and hand the result to
    /// [`Handover::confirm`] with this set (S4).
    pub confirm: Option<MemberSet>,
    /// Call [`Handover::update`] and [`Handover::plan`] again by then even if
    /// nothing happens.
    pub wake_at: Option<Instant>,
}

/// The state machine of one ring member: membership view, own Lease,
/// adopted and acquired member sets.
///
/// Drive it by feeding it what happens ([`observe`](Self::observe),
/// [`remove`](Self::remove), [`written`](Self::written),
/// [`lease_lost`](Self::lease_lost), [`confirm`](Self::confirm)) and, after
/// each input and at [`Plan::wake_at`], calling [`update`](Self::update)
/// (which keys may be acted on now: install that before anything else) and
/// then [`plan`](Self::plan) (what to write, fence, confirm).
///
/// # Examples
///
/// A lone member: creates its Lease, acknowledges the set of itself, confirms
/// and then owns every key.
///
/// ```
/// use std::time::Duration;
/// use tokio::time::Instant;
/// use kube_informer::ObjectKey;
/// use kube_informer::unstable::shard::{Handover, LeaseRecord, Member, MemberId, OwnLease};
///
/// let t0 = Instant::now();
/// let mut member = Handover::new(MemberId::new("ring-a"), Duration::from_secs(10), Duration::from_secs(2));
/// let key: ObjectKey = "default/web".parse()?;
///
/// assert!(!member.update(t0).owns(&key));
/// let plan = member.plan(t0, false);
/// assert!(plan.write_now); // no Lease yet: create it
/// member.written(t0, OwnLease { uid: "uid-a".into(), resource_version: "1".into(), ack: plan.ack });
///
/// member.update(t0);
/// let plan = member.plan(t0, false);
/// assert!(plan.write_now); // acknowledge the set {ring-a}
/// member.written(t0, OwnLease { uid: "uid-a".into(), resource_version: "2".into(), ack: plan.ack });
///
/// member.update(t0);
/// let set = member.plan(t0, false).confirm.expect("ready to confirm");
/// let snapshot = vec![LeaseRecord {
///     member: Member::new("ring-a", "uid-a"),
///     resource_version: "2".into(),
///     duration: Duration::from_secs(15),
///     ack: Some(set.fingerprint()),
/// }];
/// assert!(member.confirm(&set, snapshot, t0));
/// assert!(member.update(t0).owns(&key));
/// // Without a renewal the member stops acting after the renew deadline.
/// assert!(!member.update(t0 + Duration::from_secs(10)).owns(&key));
/// # Ok::<(), kube_informer::store::Error>(())
/// ```
#[derive(Debug)]
pub struct Handover {
    me: MemberId,
    renew_deadline: Duration,
    retry_period: Duration,
    view: MembershipView,
    own: Option<OwnLease>,
    /// Sent time of the last successful write plus the renew deadline (S3).
    active_until: Option<Instant>,
    /// The member set last adopted: live members by this member's view.
    target: Option<MemberSet>,
    /// Keys held: owned in every one of these sets; empty holds nothing.
    /// The first is the set of the last acquisition, the others were
    /// adopted since (S2).
    holding: Vec<MemberSet>,
    /// Fence requests sent: the version and when, so a failed one is
    /// retried after a retry period and not on every call.
    fenced: KeyMap<MemberId, (String, Instant)>,
}

impl Handover {
    /// A member named `me` (its Lease name), which stops acting on keys
    /// `renew_deadline` after sending its last successful Lease write, and
    /// retries fencing every `retry_period`.
    pub fn new(me: MemberId, renew_deadline: Duration, retry_period: Duration) -> Self {
        Self {
            me,
            renew_deadline,
            retry_period,
            view: MembershipView::new(),
            own: None,
            active_until: None,
            target: None,
            holding: Vec::new(),
            fenced: KeyMap::default(),
        }
    }

    /// This member's id.
    pub fn me(&self) -> &MemberId {
        &self.me
    }

    /// The own Lease as last written, if it exists.
    pub fn own_lease(&self) -> Option<&OwnLease> {
        self.own.as_ref()
    }

    /// The other members' Leases as seen.
    pub fn view(&self) -> &MembershipView {
        &self.view
    }

    /// The member set last adopted.
    pub fn target(&self) -> Option<&MemberSet> {
        self.target.as_ref()
    }

    /// Whether this member may act at `now`: its Lease exists and its last
    /// successful write was sent less than the renew deadline ago (S3).
    pub fn is_active(&self, now: Instant) -> bool {
        self.own.is_some() && self.active_until.is_some_and(|until| now < until)
    }

    /// When this member stops acting unless a write sent before then
    /// succeeds: the send time of its last successful write plus the renew
    /// deadline (S3). `None` while it has no Lease.
    pub fn active_until(&self) -> Option<Instant> {
        self.own.as_ref().and(self.active_until)
    }

    /// A Lease of the ring seen at `now` (a notification of the Lease
    /// informer, at the instant it arrived); a version older than one
    /// already seen changes nothing (S8). The own Lease is ignored here:
    /// its state comes from [`written`](Self::written).
    pub fn observe(&mut self, record: LeaseRecord, now: Instant) {
        if record.member.id != self.me {
            self.view.observe(record, now);
        }
    }

    /// A Lease of the ring was deleted. For the own Lease (same
    /// incarnation) this means it was fenced: see
    /// [`lease_lost`](Self::lease_lost).
    pub fn remove(&mut self, member: &Member) {
        if member.id == self.me {
            if self
                .own
                .as_ref()
                .is_some_and(|own| own.uid == member.incarnation)
            {
                self.lease_lost();
            }
            return;
        }
        if self
            .view
            .get(&member.id)
            .is_some_and(|seen| seen.member.incarnation == member.incarnation)
        {
            self.view.remove(&member.id);
        }
        self.fenced.remove(&member.id);
    }

    /// A write of the own Lease, sent at `sent_at`, succeeded and left it as
    /// `lease`.
    pub fn written(&mut self, sent_at: Instant, lease: OwnLease) {
        if self.own.as_ref().is_some_and(|own| own.uid != lease.uid) {
            // A new incarnation: nothing held under the old one survives.
            self.holding.clear();
            self.target = None;
        }
        let until = sent_at + self.renew_deadline;
        self.active_until = Some(self.active_until.map_or(until, |t| t.max(until)));
        self.own = Some(lease);
    }

    /// The own Lease is gone or was replaced by someone else (a write failed
    /// with not-found or conflict and a read showed another incarnation):
    /// the member was fenced. It stops acting at once and must create a new
    /// Lease, a new incarnation, to join again.
    pub fn lease_lost(&mut self) {
        self.own = None;
        self.active_until = None;
        self.holding.clear();
        self.target = None;
    }

    /// The own Lease as a read showed it, after a write failed with a
    /// conflict (a write whose reply was lost may have changed it). The same
    /// incarnation updates the version the next write is conditional on; a
    /// different one, or none, means this member was fenced
    /// ([`lease_lost`](Self::lease_lost)). Never extends the time this
    /// member may act: only a write it sent does.
    pub fn read_own(&mut self, lease: Option<OwnLease>) {
        match (lease, &mut self.own) {
            (Some(read), Some(own)) if read.uid == own.uid => {
                own.resource_version = read.resource_version;
                own.ack = read.ack;
            }
            _ => self.lease_lost(),
        }
    }

    /// Adopts the member set live at `now` and returns the keys this member
    /// may act on now. Install the result (so no new work starts on a
    /// released key) before calling [`plan`](Self::plan).
    pub fn update(&mut self, now: Instant) -> Ownership {
        if !self.is_active(now) {
            self.holding.clear();
        }
        if let Some(own) = &self.own {
            let me = Member {
                id: self.me.clone(),
                incarnation: Arc::clone(&own.uid),
            };
            let live = MemberSet::new(
                self.view
                    .live(now)
                    .map(|r| r.member.clone())
                    .chain(std::iter::once(me)),
            );
            if self.target.as_ref() != Some(&live) {
                // S2: adopting a set releases at once every held key it
                // gives to another member.
                if !self.holding.is_empty() && self.holding.last() != Some(&live) {
                    self.holding.push(live.clone());
                }
                self.target = Some(live);
            }
        }
        self.ownership(now)
    }

    /// The keys this member may act on at `now`, as of the last
    /// [`update`](Self::update).
    pub fn ownership(&self, now: Instant) -> Ownership {
        if self.is_active(now) {
            Ownership::of(self.me.clone(), self.holding.iter().cloned())
        } else {
            Ownership::nothing()
        }
    }

    /// What to do now. `released_busy` says whether work that started before
    /// the last [`update`](Self::update) is still running on a key the
    /// update released: the acknowledgement waits for it (S2).
    pub fn plan(&mut self, now: Instant, released_busy: bool) -> Plan {
        let current_ack = self.own.as_ref().and_then(|own| own.ack);
        let ack = match &self.target {
            Some(target) if !released_busy => Some(target.fingerprint()),
            _ => current_ack,
        };
        let write_now = self.own.is_none() || ack != current_ack;

        let mut fence = Vec::new();
        let mut wake_at = self.active_until.filter(|until| *until > now);
        let expired: Vec<LeaseRecord> = self.view.expired(now).cloned().collect();
        for record in expired {
            let due = match self.fenced.get(&record.member.id) {
                Some((rv, at)) if *rv == record.resource_version => {
                    let retry = *at + self.retry_period;
                    wake_at = earliest(wake_at, retry);
                    now >= retry
                }
                _ => true,
            };
            if due {
                self.fenced.insert(
                    record.member.id.clone(),
                    (record.resource_version.clone(), now),
                );
                wake_at = earliest(wake_at, now + self.retry_period);
                fence.push(record);
            }
        }
        if let Some(expiry) = self.view.next_expiry(now) {
            wake_at = earliest(wake_at, expiry);
        }

        Plan {
            write_now,
            ack,
            fence,
            confirm: self.ready_to_confirm(now),
            wake_at,
        }
    }

    /// The set to confirm, when this member's view says every Lease of the
    /// ring is live, in the adopted set, and acknowledged it, and this
    /// member wrote its own acknowledgement and does not yet hold under it.
    fn ready_to_confirm(&self, now: Instant) -> Option<MemberSet> {
        let target = self.target.as_ref()?;
        let own = self.own.as_ref()?;
        if !self.is_active(now) || own.ack != Some(target.fingerprint()) {
            return None;
        }
        if self.holding.len() == 1 && self.holding[0] == *target {
            return None;
        }
        let mut others = 0;
        for record in self.view.records() {
            if !self.view.is_live(&record.member.id, now)
                || record.ack != Some(target.fingerprint())
            {
                return None;
            }
            others += 1;
        }
        (others + 1 == target.len()).then(|| target.clone())
    }

    /// The result of the confirming read [`Plan::confirm`] asked for:
    /// every Lease of the ring, listed at one resourceVersion after this
    /// member's acknowledgement was written, read at `now`. Acquires the
    /// keys of `set` (returns `true`) when the list shows exactly the
    /// members of `set`, each (this one included) acknowledging it, and
    /// `set` is still the adopted set (S4). Otherwise the list updates the
    /// view and the member tries again when its plan says so.
    pub fn confirm(&mut self, set: &MemberSet, snapshot: Vec<LeaseRecord>, now: Instant) -> bool {
        let mut mine = None;
        let others = snapshot.iter().filter(|r| r.member.id != self.me).cloned();
        self.view.replace(others, now);
        for record in &snapshot {
            if record.member.id == self.me {
                mine = Some(record);
            }
        }
        match (mine, &mut self.own) {
            (Some(record), Some(own)) if record.member.incarnation == own.uid => {
                // Only this member writes its Lease, so the list is at
                // least as new as the last write it knows of.
                own.resource_version = record.resource_version.clone();
                own.ack = record.ack;
            }
            (_, Some(_)) => {
                self.lease_lost();
                return false;
            }
            (_, None) => return false,
        }
        let listed = MemberSet::new(snapshot.iter().map(|r| r.member.clone()));
        let acked = snapshot.iter().all(|r| r.ack == Some(set.fingerprint()));
        if self.is_active(now) && self.target.as_ref() == Some(set) && listed == *set && acked {
            self.holding = vec![set.clone()];
            true
        } else {
            false
        }
    }
}

fn earliest(a: Option<Instant>, b: Instant) -> Option<Instant> {
    Some(a.map_or(b, |a| a.min(b)))
}
