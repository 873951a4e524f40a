//! Shutting a controller down: on a future of the user's, or on SIGINT and
//! SIGTERM (the first asks for a graceful stop, the second abandons what
//! still runs).

use futures::future::BoxFuture;
use tokio_util::sync::{CancellationToken, DropGuard};

/// When to stop taking keys (graceful) and when to drop what runs (forced).
#[derive(Default)]
pub(super) struct Shutdown {
    pub(super) graceful: Vec<BoxFuture<'static, ()>>,
    pub(super) on_signal: bool,
}

impl std::fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shutdown")
            .field("triggers", &self.graceful.len())
            .field("on_signal", &self.on_signal)
            .finish()
    }
}

/// A running controller's shutdown: the one owner of its cancellation.
/// `graceful` fires at the first trigger, `forced` at a second signal;
/// dropping it ends the tasks that watch the triggers.
pub(super) struct Stop {
    pub(super) graceful: CancellationToken,
    pub(super) forced: CancellationToken,
    _watchers: DropGuard,
}

impl Shutdown {
    /// Spawns what watches the triggers, for as long as the returned
    /// [`Stop`] lives.
    pub(super) fn start(self) -> Stop {
        let graceful = CancellationToken::new();
        let forced = CancellationToken::new();
        let done = CancellationToken::new();
        for trigger in self.graceful {
            let (graceful, done) = (graceful.clone(), done.clone());
            tokio::spawn(async move {
                tokio::select! {
                    biased;
                    () = trigger => graceful.cancel(),
                    () = done.cancelled() => {}
                }
            });
        }
        if self.on_signal {
            let (graceful, forced, done) = (graceful.clone(), forced.clone(), done.clone());
            tokio::spawn(async move {
                tokio::select! {
                    biased;
                    () = signalled() => {}
                    () = done.cancelled() => return,
                }
                tracing::info!(
                    "signal received: finishing the reconciles that run; a second signal abandons them"
                );
                graceful.cancel();
                tokio::select! {
                    biased;
                    () = signalled() => {}
                    () = done.cancelled() => return,
                }
                tracing::warn!("second signal received: abandoning the reconciles that run");
                forced.cancel();
            });
        }
        Stop {
            graceful,
            forced,
            _watchers: done.drop_guard(),
        }
    }
}

/// Resolves at the next SIGINT (Ctrl-C) or, on Unix, SIGTERM (what a
/// kubelet sends to stop a pod). If the handlers cannot be installed it
/// never resolves, and says so once.
async fn signalled() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    biased;
                    result = tokio::signal::ctrl_c() => if let Err(error) = result {
                        tracing::warn!(%error, "cannot listen for SIGINT");
                        terminate.recv().await;
                    },
                    _ = terminate.recv() => {}
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                if tokio::signal::ctrl_c().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    if let Err(error) = tokio::signal::ctrl_c().await {
        tracing::warn!(%error, "cannot listen for Ctrl-C");
        std::future::pending::<()>().await;
    }
}
