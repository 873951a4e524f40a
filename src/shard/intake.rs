//! [`Intake`]: the membership task's Lease informer, kept running and read
//! while the task waits on its own Lease requests, so its view of the ring
//! never falls behind what the informer delivered (S8).
//!
//! The task sends one request at a time (a write, a fence, a confirming
//! list), each bounded by a retry period. Were the informer polled only
//! between requests, a member whose requests keep failing slowly (its
//! writes hang, or it was fenced and its creates hang) would go from one
//! request to the next without reading a notification: its view would
//! freeze, the live members' Leases would expire in it, and it would fence
//! them on versions long replaced. So every request is awaited here beside
//! the informer: what arrives meanwhile is kept, with the instant it
//! arrived, and handed to the state machine after the request's own
//! outcome, before the next plan.

use std::collections::VecDeque;

use futures::{StreamExt, future::BoxFuture};
use k8s_openapi::api::coordination::v1::Lease;
use tokio::time::Instant;

use super::{handover::Handover, lease::lease_record};
use crate::{
    Notification,
    dispatch::{SubscribeOptions, Subscription},
    informer::{self, Informer},
};

/// The Lease informer of one membership task, its notifications taken in
/// and not yet handed on, and how it ended.
pub(super) struct Intake {
    leases: Subscription<Lease>,
    run: BoxFuture<'static, Result<(), informer::Error>>,
    /// Taken in, not yet handed to the state machine: each notification
    /// with the instant it arrived, which is when its version was observed.
    pending: VecDeque<(Notification<Lease>, Instant)>,
    /// How the informer ended, until taken.
    ended: Option<Result<(), informer::Error>>,
    /// Its `run` resolved or its stream ended: neither is polled again.
    done: bool,
}

impl Intake {
    /// Subscribes to `informer`, which this intake then runs.
    pub(super) fn start(informer: &Informer<Lease>) -> Result<Self, informer::Error> {
        Ok(Self {
            leases: informer.subscribe(SubscribeOptions::default())?,
            run: Box::pin(informer.run()),
            pending: VecDeque::new(),
            ended: None,
            done: false,
        })
    }

    /// Awaits `request` while the informer runs and what it delivers is
    /// taken in.
    pub(super) async fn during<T>(&mut self, request: impl Future<Output = T>) -> T {
        let mut request = std::pin::pin!(request);
        loop {
            tokio::select! {
                biased;
                out = &mut request => return out,
                () = self.receive(), if !self.done => {}
            }
        }
    }

    /// Waits until the informer delivers something or ends; never resolves
    /// once it has ended.
    pub(super) async fn next(&mut self) {
        if self.done {
            std::future::pending::<()>().await;
        }
        self.receive().await;
    }

    async fn receive(&mut self) {
        let ended = tokio::select! {
            biased;
            notification = self.leases.next() => match notification {
                Some(notification) => {
                    self.pending.push_back((notification, Instant::now()));
                    return;
                }
                None => Ok(()),
            },
            result = &mut self.run => result,
        };
        self.done = true;
        self.ended = Some(ended);
    }

    /// Hands what was taken in to `core`, oldest first, each seen at the
    /// instant it arrived.
    pub(super) fn apply(&mut self, core: &mut Handover) {
        for (notification, at) in self.pending.drain(..) {
            match notification {
                Notification::Deleted { object, .. } => {
                    if let Some(record) = lease_record(&object) {
                        core.remove(&record.member);
                    }
                }
                notification => {
                    if let Some(record) = lease_record(notification.object()) {
                        core.observe(record, at);
                    }
                }
            }
        }
    }

    /// How the informer ended, once it has; given once.
    pub(super) fn take_end(&mut self) -> Option<Result<(), informer::Error>> {
        self.ended.take()
    }
}
