//! Runner (a): this crate's `Informer`, built with `Informer::builder_from_stream`.
//!
//! Not written yet: the `Informer` does not exist. When it does, this module
//! implements `crate::drive::Runner` for it, as the other runners do:
//!
//! - the feed stream yields `source::Event::ListStart`, one `Listed` per list
//!   item, `ListDone` with the list's resourceVersion, then `Modified` /
//!   `Deleted` per watch event, waiting on `Feed::opened` before each phase;
//! - one `subscribe(SubscribeOptions::default())` per `Progress`, each
//!   drained by a task that calls `observe` then `pace`;
//! - `targets`: N after the list, N + U after the updates, N + U + D at the
//!   end (every notification reaches every subscriber);
//! - `run()` spawned on the runtime;
//! - `main.rs` dispatches `run ours` to `drive::<Ours>`.
//!
//! `run.sh` builds with `--features ours` (which brings in kube-informer) as
//! soon as `src/informer/` defines `pub struct Informer`, and skips runner (a)
//! with a note while `run ours` exits with status 3, as it does until then.
