//! [`Election`]: one replica's part in the election of a single Lease, as a
//! state machine with no I/O and no clock of its own. Its driver (`run.rs`)
//! reads and writes the Lease, says what came back and when, and installs
//! [`Election::leading_until`] in the gate. Rules LE1, LE2, LE4 and LE5 of
//! the [module docs](super) are decided here; LE3 is the deadline this
//! state hands the gate.

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
};
use tokio::time::Instant;

use super::LeaseConfig;
use crate::shard::{
    Error,
    assign::MemberId,
    lease::{acquisition, lease_record},
    view::{LeaseRecord, MembershipView},
};

/// What one replica knows of the Lease and of its own leadership.
#[derive(Debug)]
pub(crate) struct Election {
    config: LeaseConfig,
    lease: Known,
    /// When this replica first saw the Lease's current version, by its own
    /// clock (LE1).
    view: MembershipView,
    /// A renew deadline after this replica sent its last successful claim
    /// (LE3); `None` when it does not lead.
    leading_until: Option<Instant>,
}

#[derive(Clone, Debug)]
enum Known {
    /// Not read yet, or a write showed that what was read is stale.
    Unknown,
    /// The last read found no Lease.
    Absent,
    /// The Lease as last read or written.
    Present(Box<Lease>),
}

/// The write a round makes, if any.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Nothing to write: another replica holds the Lease and is live as
    /// seen from here, or nothing usable is known of it.
    Wait,
    /// Create the Lease, held by this replica.
    Create(Lease),
    /// Replace the Lease with one held by this replica, conditional on the
    /// resourceVersion it carries.
    Claim(Lease),
}

/// When the next round may start after a write.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// At once: the write met a newer Lease, which the next round reads.
    Now,
    /// A retry period after the write was sent.
    Period,
}

impl Election {
    pub(crate) fn new(config: LeaseConfig) -> Self {
        Self {
            config,
            lease: Known::Unknown,
            view: MembershipView::new(),
            leading_until: None,
        }
    }

    /// Whether this replica may act at `now` (LE3).
    pub(crate) fn leads(&self, now: Instant) -> bool {
        self.leading_until.is_some_and(|until| now < until)
    }

    /// Until when this replica may act; `None` when it does not lead.
    pub(crate) fn leading_until(&self) -> Option<Instant> {
        self.leading_until
    }

    /// Whether a round must read the Lease before it decides: always, but
    /// for a leader renewing over its own last write, whose version it
    /// knows (a renewal needs no read; if the Lease moved, the renewal
    /// conflicts and the next round reads).
    pub(crate) fn needs_read(&self, now: Instant) -> bool {
        !(self.leads(now) && self.known_holder() == Some(self.config.identity.as_str()))
    }

    /// A read answered at `now`. A failed read changes nothing: any write
    /// built on what is known is conditional on its version (LE2).
    pub(crate) fn read(&mut self, result: Result<Option<Lease>, Error>, now: Instant) {
        match result {
            Ok(Some(lease)) => self.know(lease, now),
            Ok(None) => {
                // LE4: nobody holds a Lease that is not there, and anyone
                // may create it now.
                self.lease = Known::Absent;
                self.leading_until = None;
            }
            Err(_) => {}
        }
    }

    /// What to write now; `wall` is the wall-clock time to record in it.
    pub(crate) fn decide(&self, now: Instant, wall: MicroTime) -> Decision {
        let lease = match &self.lease {
            Known::Unknown => return Decision::Wait,
            Known::Absent => return Decision::Create(self.claim(None, wall)),
            Known::Present(lease) => lease,
        };
        // LE2: no write without the version it replaces.
        if lease.metadata.resource_version.is_none() {
            return Decision::Wait;
        }
        let free = match holder(lease) {
            None => true,
            Some(holder) if holder == self.config.identity => true,
            // LE1: held by another, until it went a Lease duration without
            // a new version as seen from here. A Lease the view could not
            // record (no uid: not one an API server returns) never expires.
            Some(_) => {
                let id = MemberId::new(self.config.name.as_str());
                self.view.get(&id).is_some() && !self.view.is_live(&id, now)
            }
        };
        if free {
            Decision::Claim(self.claim(Some(lease.as_ref()), wall))
        } else {
            Decision::Wait
        }
    }

    /// A write of this replica's claim, sent at `sent_at`, answered at
    /// `now` (or abandoned then).
    pub(crate) fn written(
        &mut self,
        result: Result<Lease, Error>,
        sent_at: Instant,
        now: Instant,
    ) -> Retry {
        match result {
            Ok(lease) => {
                let mine = holder(&lease) == Some(self.config.identity.as_str());
                self.know(lease, now);
                if mine {
                    // LE3: measured from the send, which came before the
                    // others could observe the write.
                    self.leading_until = Some(sent_at + self.config.renew_deadline);
                }
                Retry::Period
            }
            Err(Error::LeaseNotFound) => {
                // LE4: the Lease was deleted; another replica may create it.
                self.lease = Known::Unknown;
                self.leading_until = None;
                Retry::Now
            }
            Err(Error::LeaseConflict | Error::LeaseAlreadyExists) => {
                self.lease = Known::Unknown;
                Retry::Now
            }
            // Perhaps applied, perhaps not (a timeout, a failed request;
            // a fake `LeaseApi` may answer any error): never counted (LE3).
            // If it was applied, the next write conflicts and the Lease is
            // read again.
            Err(_) => Retry::Period,
        }
    }

    /// The write that gives the Lease up (LE6), if this replica holds it as
    /// last known: no holder, no times, the transitions kept, conditional
    /// on the version last known.
    pub(crate) fn release(&self) -> Option<Lease> {
        let Known::Present(lease) = &self.lease else {
            return None;
        };
        if holder(lease) != Some(self.config.identity.as_str())
            || lease.metadata.resource_version.is_none()
        {
            return None;
        }
        let mut lease = Lease::clone(lease);
        let spec = lease.spec.take().unwrap_or_default();
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(String::new()),
            acquire_time: None,
            renew_time: None,
            lease_duration_seconds: Some(self.duration_seconds()),
            ..spec
        });
        Some(lease)
    }

    /// The answer to the release: this replica leads no more either way.
    pub(crate) fn released(&mut self, result: Result<Lease, Error>, now: Instant) {
        self.leading_until = None;
        if let Ok(lease) = result {
            self.know(lease, now);
        }
    }

    fn know(&mut self, lease: Lease, now: Instant) {
        if holder(&lease) != Some(self.config.identity.as_str()) {
            // LE4: another holder, or none (released).
            self.leading_until = None;
        }
        if let Some(record) = self.record(&lease) {
            self.view.observe(record, now);
        }
        self.lease = Known::Present(Box::new(lease));
    }

    fn known_holder(&self) -> Option<&str> {
        match &self.lease {
            Known::Present(lease) => holder(lease),
            Known::Unknown | Known::Absent => None,
        }
    }

    /// The Lease as the observedTime rule sees it: a version, and how long
    /// it counts as live after it was first seen. That is the longer of the
    /// duration its holder wrote and this replica's own, so a Lease written
    /// with a short, zero or missing duration is not taken early.
    fn record(&self, lease: &Lease) -> Option<LeaseRecord> {
        let mut record = lease_record(lease)?;
        record.duration = record.duration.max(self.config.lease_duration);
        Some(record)
    }

    /// `prior` (or a new Lease) held by this replica from `wall` on, with
    /// the fields as client-go writes them (LE5); everything else of
    /// `prior` (labels, annotations, its resourceVersion) is kept.
    fn claim(&self, prior: Option<&Lease>, wall: MicroTime) -> Lease {
        let me = self.config.identity.as_str();
        let prior_spec = prior.map(|lease| lease.spec.clone().unwrap_or_default());
        let (acquire_time, transitions) = acquisition(me, prior_spec.as_ref(), &wall);
        let mut lease = prior.cloned().unwrap_or_else(|| Lease {
            metadata: ObjectMeta {
                name: Some(self.config.name.clone()),
                ..ObjectMeta::default()
            },
            spec: None,
        });
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(me.to_owned()),
            lease_duration_seconds: Some(self.duration_seconds()),
            acquire_time: Some(acquire_time),
            renew_time: Some(wall),
            lease_transitions: Some(transitions),
            ..prior_spec.unwrap_or_default()
        });
        lease
    }

    fn duration_seconds(&self) -> i32 {
        self.config
            .lease_duration
            .as_secs()
            .try_into()
            .unwrap_or(i32::MAX)
    }
}

/// The Lease's holder; an empty identity is none, as client-go reads it.
fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()?
        .holder_identity
        .as_deref()
        .filter(|holder| !holder.is_empty())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::jiff::Timestamp;

    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn config(identity: &str) -> LeaseConfig {
        LeaseConfig {
            lease_duration: 3 * SECOND,
            renew_deadline: 2 * SECOND,
            retry_period: SECOND / 2,
            ..LeaseConfig::new("lock", identity)
        }
    }

    fn wall(seconds: i64) -> MicroTime {
        MicroTime(Timestamp::from_second(1_700_000_000 + seconds).unwrap())
    }

    /// `lease` as the server stores it at version `rv`.
    fn stored(mut lease: Lease, rv: u64) -> Lease {
        lease.metadata.resource_version = Some(rv.to_string());
        lease.metadata.uid = Some("uid-1".into());
        lease
    }

    fn held_by(holder: &str, duration: i32, rv: u64) -> Lease {
        stored(
            Lease {
                metadata: ObjectMeta {
                    name: Some("lock".into()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(holder.into()),
                    lease_duration_seconds: Some(duration),
                    acquire_time: Some(wall(0)),
                    renew_time: Some(wall(0)),
                    lease_transitions: Some(4),
                    ..LeaseSpec::default()
                }),
            },
            rv,
        )
    }

    fn claimed(decision: Decision) -> Lease {
        match decision {
            Decision::Claim(lease) | Decision::Create(lease) => lease,
            Decision::Wait => panic!("expected a write"),
        }
    }

    // LE1: a live holder is left alone until its version went a Lease
    // duration unchanged as seen from here, whatever its renewTime says.
    #[test]
    fn le1_another_holder_is_taken_over_only_after_a_lease_duration_unchanged() {
        let t0 = Instant::now();
        let mut election = Election::new(config("b"));
        election.read(Ok(Some(held_by("a", 3, 7))), t0);
        assert!(matches!(
            election.decide(t0 + 2 * SECOND, wall(100)),
            Decision::Wait
        ));
        // Seen again later, unchanged: the clock still runs from t0.
        election.read(Ok(Some(held_by("a", 3, 7))), t0 + 2 * SECOND);
        assert!(matches!(
            election.decide(t0 + 3 * SECOND - Duration::from_millis(1), wall(100)),
            Decision::Wait
        ));
        // A new version starts the clock again.
        election.read(Ok(Some(held_by("a", 3, 8))), t0 + 3 * SECOND);
        assert!(matches!(
            election.decide(t0 + 5 * SECOND, wall(100)),
            Decision::Wait
        ));
        let claim = claimed(election.decide(t0 + 6 * SECOND, wall(100)));
        assert_eq!(claim.metadata.resource_version.as_deref(), Some("8"));
    }

    // LE1: a holder that wrote a shorter (or no) duration is still given
    // this replica's own.
    #[test]
    fn le1_a_short_written_duration_does_not_shorten_the_wait() {
        let t0 = Instant::now();
        let mut election = Election::new(config("b"));
        election.read(Ok(Some(held_by("a", 0, 7))), t0);
        assert!(matches!(
            election.decide(t0 + 2 * SECOND, wall(1)),
            Decision::Wait
        ));
        assert!(matches!(
            election.decide(t0 + 3 * SECOND, wall(1)),
            Decision::Claim(_)
        ));
    }

    // LE1, bad input: a Lease without a uid (which no API server returns)
    // cannot be observed, so it is never taken from its holder.
    #[test]
    fn le1_a_lease_that_cannot_be_observed_is_not_taken_from_its_holder() {
        let t0 = Instant::now();
        let mut election = Election::new(config("b"));
        let mut uidless = held_by("a", 3, 7);
        uidless.metadata.uid = None;
        election.read(Ok(Some(uidless)), t0);
        assert!(matches!(
            election.decide(t0 + 3600 * SECOND, wall(1)),
            Decision::Wait
        ));
    }

    // LE1: a released Lease (empty holder) or an absent one is taken at once.
    #[test]
    fn le1_a_released_or_absent_lease_is_taken_at_once() {
        let t0 = Instant::now();
        let mut election = Election::new(config("b"));
        election.read(Ok(Some(held_by("", 3, 7))), t0);
        assert!(matches!(election.decide(t0, wall(1)), Decision::Claim(_)));
        election.read(Ok(None), t0);
        let create = claimed(election.decide(t0, wall(1)));
        assert_eq!(create.metadata.resource_version, None);
        assert_eq!(create.metadata.name.as_deref(), Some("lock"));
    }

    // LE2: nothing is written over a Lease whose version is not known.
    #[test]
    fn le2_no_write_without_the_version_it_replaces() {
        let t0 = Instant::now();
        let mut election = Election::new(config("b"));
        assert!(matches!(election.decide(t0, wall(1)), Decision::Wait));
        let mut versionless = held_by("", 3, 7);
        versionless.metadata.resource_version = None;
        election.read(Ok(Some(versionless)), t0);
        assert!(matches!(election.decide(t0, wall(1)), Decision::Wait));
    }

    // LE3: leadership lasts a renew deadline from the send of the last
    // successful claim; an abandoned claim does not extend it.
    #[test]
    fn le3_leadership_runs_from_the_send_of_the_last_successful_claim() {
        let t0 = Instant::now();
        let mut election = Election::new(config("a"));
        election.read(Ok(None), t0);
        let create = claimed(election.decide(t0, wall(0)));
        let sent = t0 + SECOND;
        let answered = sent + SECOND / 4;
        assert_eq!(
            election.written(Ok(stored(create, 1)), sent, answered),
            Retry::Period
        );
        assert_eq!(election.leading_until(), Some(sent + 2 * SECOND));
        assert!(!election.needs_read(answered), "a renewal needs no read");
        let renewal = claimed(election.decide(answered, wall(1)));
        assert_eq!(renewal.metadata.resource_version.as_deref(), Some("1"));
        election.written(
            Err(Error::LeaseTimedOut(SECOND / 2)),
            sent + SECOND,
            sent + SECOND * 3 / 2,
        );
        assert_eq!(election.leading_until(), Some(sent + 2 * SECOND));
        assert!(election.leads(sent + 2 * SECOND - Duration::from_millis(1)));
        assert!(!election.leads(sent + 2 * SECOND));
        assert!(election.needs_read(sent + 2 * SECOND));
    }

    // LE4: a read that shows another holder, or no Lease, ends leadership
    // before its deadline.
    #[test]
    fn le4_seeing_another_holder_ends_leadership_at_once() {
        let t0 = Instant::now();
        let mut election = Election::new(config("a"));
        election.read(Ok(None), t0);
        let create = claimed(election.decide(t0, wall(0)));
        election.written(Ok(stored(create, 1)), t0, t0);
        assert!(election.leads(t0));
        election.read(Ok(Some(held_by("b", 3, 2))), t0 + SECOND);
        assert!(!election.leads(t0 + SECOND));

        let mut election = Election::new(config("a"));
        election.read(Ok(None), t0);
        let create = claimed(election.decide(t0, wall(0)));
        election.written(Ok(stored(create, 1)), t0, t0);
        assert_eq!(
            election.written(Err(Error::LeaseNotFound), t0, t0),
            Retry::Now
        );
        assert!(!election.leads(t0));
    }

    // LE5: create, renew, take over and release write the fields as
    // client-go's leader election record has them.
    #[test]
    fn le5_the_fields_follow_client_go() {
        let t0 = Instant::now();
        let mut a = Election::new(config("a"));
        a.read(Ok(None), t0);
        let create = claimed(a.decide(t0, wall(0)));
        let spec = create.spec.clone().unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.acquire_time, Some(wall(0)));
        assert_eq!(spec.renew_time, Some(wall(0)));
        assert_eq!(spec.lease_transitions, Some(0));
        assert_eq!(spec.lease_duration_seconds, Some(3));

        a.written(Ok(stored(create, 1)), t0, t0);
        let renewal = claimed(a.decide(t0, wall(5)));
        let spec = renewal.spec.clone().unwrap();
        assert_eq!(spec.acquire_time, Some(wall(0)));
        assert_eq!(spec.renew_time, Some(wall(5)));
        assert_eq!(spec.lease_transitions, Some(0));

        let mut b = Election::new(config("b"));
        let mut labelled = held_by("a", 3, 9);
        labelled.metadata.labels = Some([("team".to_owned(), "x".to_owned())].into());
        b.read(Ok(Some(labelled)), t0);
        let takeover = claimed(b.decide(t0 + 3 * SECOND, wall(9)));
        let spec = takeover.spec.clone().unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("b"));
        assert_eq!(spec.acquire_time, Some(wall(9)));
        assert_eq!(spec.lease_transitions, Some(5));
        assert_eq!(
            takeover.metadata.labels.as_ref().unwrap()["team"],
            "x",
            "what others wrote in the Lease is kept"
        );

        b.written(Ok(stored(takeover, 10)), t0, t0);
        let release = b.release().expect("b holds the Lease");
        let spec = release.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some(""));
        assert_eq!((spec.acquire_time, spec.renew_time), (None, None));
        assert_eq!(spec.lease_transitions, Some(5));
        assert_eq!(release.metadata.resource_version.as_deref(), Some("10"));
        assert!(a.release().is_some(), "a still thinks it holds the Lease");
        a.read(Ok(Some(held_by("b", 3, 10))), t0);
        assert!(a.release().is_none(), "a holds it no more");
    }
}
