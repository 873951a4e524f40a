//! [`Life`]: the one value that says whether the informer feeding a set of
//! subscriptions has ended, and why.

use std::{
    fmt,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use parking_lot::Mutex;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::EndReason;

/// The life of what feeds a set of subscriptions (an informer), the one
/// value that says whether it has ended and why.
///
/// Its owner starts it (`run`) and finishes it with a reason. Subscriptions,
/// error streams and sync waiters only observe it, through [`Life::ended`].
/// One transition is not the owner's: a stop asked for while nothing runs
/// (a cancelled token, with no `run` ever polled) ends it as soon as anyone
/// observes it or tries to start it, because no run loop exists to do so
/// (L7).
pub(crate) struct Life {
    /// Cancelled to ask for a stop.
    stop: CancellationToken,
    stage: Mutex<Stage>,
    /// Cancelled once `stage` is `Ended`.
    ended: CancellationToken,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Stage {
    Idle,
    Running,
    Ended { reason: EndReason, ran: bool },
}

/// What [`Life::start`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// Idle until now: the caller runs it and finishes it.
    Started,
    /// Asked to stop before it ever ran: it has ended without running.
    StoppedBeforeRun,
    /// Running, or it ran and ended.
    AlreadyRan,
}

impl Life {
    /// An idle life that `stop` asks to end.
    pub(crate) fn new(stop: CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            stop,
            stage: Mutex::new(Stage::Idle),
            ended: CancellationToken::new(),
        })
    }

    /// Asks it to stop; an idle one ends at once.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
        self.end_if_stopped_idle();
    }

    /// Whether a stop was asked for (it may still be running).
    pub(crate) fn stop_requested(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// The token that asks for a stop, for what must observe it without
    /// the life (the distributor's waits for room, L12).
    pub(crate) fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Resolves once a stop is asked for.
    pub(crate) async fn stop_requested_wait(&self) {
        self.stop.cancelled().await;
    }

    /// Idle → running, unless a stop came first or it already ran.
    pub(crate) fn start(&self) -> Start {
        self.end_if_stopped_idle();
        let mut stage = self.stage.lock();
        match &*stage {
            Stage::Idle => {
                *stage = Stage::Running;
                Start::Started
            }
            Stage::Ended { ran: false, .. } => Start::StoppedBeforeRun,
            Stage::Running | Stage::Ended { ran: true, .. } => Start::AlreadyRan,
        }
    }

    /// Running → ended with `reason`. The owner calls it once everything
    /// the observers read (subscription queues, error streams) is closed,
    /// so an observer that sees the end sees them closed too.
    pub(crate) fn finish(&self, reason: EndReason) {
        self.stop.cancel();
        {
            let mut stage = self.stage.lock();
            if matches!(*stage, Stage::Ended { .. }) {
                return;
            }
            *stage = Stage::Ended { reason, ran: true };
        }
        self.ended.cancel();
    }

    /// Whether it has ended.
    pub(crate) fn is_ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Why it ended, once it has.
    pub(crate) fn end_reason(&self) -> Option<EndReason> {
        match &*self.stage.lock() {
            Stage::Ended { reason, .. } => Some(reason.clone()),
            Stage::Idle | Stage::Running => None,
        }
    }

    /// Resolves with the reason once it has ended. An idle life asked to
    /// stop is ended here, by whoever waits first.
    pub(crate) fn ended(self: &Arc<Self>) -> Ended {
        Ended {
            life: Arc::clone(self),
            stop: Some(Box::pin(self.stop.clone().cancelled_owned())),
            ended: Box::pin(self.ended.clone().cancelled_owned()),
        }
    }

    /// Idle and asked to stop → ended without running.
    fn end_if_stopped_idle(&self) {
        if !self.stop.is_cancelled() {
            return;
        }
        {
            let mut stage = self.stage.lock();
            if *stage != Stage::Idle {
                return;
            }
            *stage = Stage::Ended {
                reason: EndReason::Stopped,
                ran: false,
            };
        }
        self.ended.cancel();
    }
}

impl fmt::Debug for Life {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Life")
            .field("stop_requested", &self.stop_requested())
            .field("stage", &*self.stage.lock())
            .finish()
    }
}

/// Future of [`Life::ended`].
pub(crate) struct Ended {
    life: Arc<Life>,
    /// `None` once the stop was seen.
    stop: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    ended: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl Future for Ended {
    type Output = EndReason;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<EndReason> {
        if let Some(stop) = &mut self.stop
            && stop.as_mut().poll(cx).is_ready()
        {
            self.stop = None;
            self.life.end_if_stopped_idle();
        }
        if self.ended.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        Poll::Ready(self.life.end_reason().unwrap_or(EndReason::Stopped))
    }
}

impl fmt::Debug for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ended").field("life", &self.life).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn l7_a_stop_before_start_ends_an_idle_life_for_its_observers() {
        let life = Life::new(CancellationToken::new());
        let ended = tokio::spawn({
            let life = Arc::clone(&life);
            async move { life.ended().await }
        });
        tokio::task::yield_now().await;
        assert!(!ended.is_finished());
        life.stop();
        assert_eq!(ended.await.unwrap(), EndReason::Stopped);
        assert_eq!(life.start(), Start::StoppedBeforeRun);
        assert_eq!(life.start(), Start::StoppedBeforeRun);
    }

    #[tokio::test]
    async fn l7_a_cancelled_token_is_noticed_by_the_first_observer() {
        let token = CancellationToken::new();
        let life = Life::new(token.clone());
        token.cancel();
        // Nothing ended it yet: nothing runs that could.
        assert!(!life.is_ended());
        assert_eq!(life.ended().await, EndReason::Stopped);
        assert!(life.is_ended());
    }

    #[tokio::test]
    async fn a_running_life_ends_only_when_its_owner_finishes_it() {
        let life = Life::new(CancellationToken::new());
        assert_eq!(life.start(), Start::Started);
        assert_eq!(life.start(), Start::AlreadyRan);
        life.stop();
        let mut ended = Box::pin(life.ended());
        assert!(futures::poll!(ended.as_mut()).is_pending());
        life.finish(EndReason::Panicked("boom".into()));
        assert_eq!(ended.await, EndReason::Panicked("boom".into()));
        // A second finish does not rewrite the reason.
        life.finish(EndReason::Finished);
        assert_eq!(life.end_reason(), Some(EndReason::Panicked("boom".into())));
        assert_eq!(life.start(), Start::AlreadyRan);
    }
}
