//! The election loop: a round per retry period (read the Lease unless
//! renewing, decide, write), the gate kept in step with
//! [`Election::leading_until`], and the release on stop (LE6).

use std::{future::Future, time::Duration};

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::MicroTime, jiff::Timestamp};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use super::{
    LeaseConfig,
    election::{Decision, Election, Retry},
};
use crate::shard::{Error, KeyGate, Ownership, lease::LeaseApi};

/// Runs the election until `stop`, then gives the Lease up if no work is
/// left in flight.
pub(super) async fn elect<A: LeaseApi>(
    api: A,
    config: LeaseConfig,
    gate: KeyGate,
    stop: CancellationToken,
) {
    let period = config.retry_period;
    let name = config.name.clone();
    let mut election = Election::new(config.clone());
    let mut next_round = Instant::now();
    // A conflict is retried at once, but not twice in a row: a server that
    // keeps answering 409 is asked once per period.
    let mut retried = false;
    let mut leading = false;
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            () = sleep_until(next_round) => {}
        }
        let round = Instant::now();
        if election.needs_read(round) {
            let read = within(period, api.get(&name)).await;
            if let Err(error) = &read {
                tracing::warn!(lease = %name, %error, "cannot read the leader lease");
            }
            election.read(read, Instant::now());
            install(&gate, &election);
        }
        let sent_at = Instant::now();
        let written = match election.decide(sent_at, wall_clock()) {
            Decision::Wait => None,
            Decision::Create(lease) => Some(within(period, api.create(lease)).await),
            Decision::Claim(lease) => Some(within(period, api.replace(lease)).await),
        };
        next_round = match written {
            None => {
                retried = false;
                round + period
            }
            Some(result) => {
                if let Err(error) = &result {
                    tracing::warn!(lease = %name, %error, "cannot write the leader lease");
                }
                match election.written(result, sent_at, Instant::now()) {
                    Retry::Now if !retried => {
                        retried = true;
                        Instant::now()
                    }
                    Retry::Now | Retry::Period => {
                        retried = false;
                        sent_at + period
                    }
                }
            }
        };
        install(&gate, &election);
        let now_leading = election.leads(Instant::now());
        if now_leading != leading {
            leading = now_leading;
            if leading {
                tracing::info!(lease = %name, identity = %config.identity, "leading");
            } else {
                tracing::info!(lease = %name, identity = %config.identity, "stopped leading");
            }
        }
    }
    leave(&api, &mut election, &gate, &config).await;
}

/// The gate owns everything until the election's deadline, or nothing.
fn install(gate: &KeyGate, election: &Election) {
    match election.leading_until() {
        Some(until) => gate.grant(Ownership::everything(), Some(until)),
        None => gate.grant(Ownership::nothing(), None),
    };
}

/// LE6: nothing is handed out any more; once the work in flight ended
/// (waiting at most a renew deadline), the Lease is released so the next
/// leader need not wait for it to expire. Work still running keeps the
/// Lease in place to expire: releasing it would let another replica start
/// beside that work.
async fn leave<A: LeaseApi>(
    api: &A,
    election: &mut Election,
    gate: &KeyGate,
    config: &LeaseConfig,
) {
    gate.set_ownership(Ownership::nothing());
    if !gate.wait_idle(Instant::now() + config.renew_deadline).await {
        tracing::warn!(lease = %config.name, "work still in flight: leaving the leader lease to expire");
        return;
    }
    let Some(release) = election.release() else {
        return;
    };
    let result = within(config.retry_period, api.replace(release)).await;
    match &result {
        Ok(_) => tracing::info!(lease = %config.name, "released the leader lease"),
        Err(error) => {
            tracing::warn!(lease = %config.name, %error, "cannot release the leader lease");
        }
    }
    election.released(result, Instant::now());
}

/// `request`, abandoned when no answer came within `timeout`: every Lease
/// call of the election has this deadline (LE3).
async fn within<T>(
    timeout: Duration,
    request: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::time::timeout(timeout, request)
        .await
        .unwrap_or(Err(Error::LeaseTimedOut(timeout)))
}

fn wall_clock() -> MicroTime {
    MicroTime(Timestamp::now())
}
