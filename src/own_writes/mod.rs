//! Reading your own writes: recording the resourceVersion each write of a
//! reconcile returned, so the reconcile of that key that comes next can
//! wait until the caches show them.
//!
//! A reconciler that creates a child and is triggered again before the
//! informer has delivered that child finds no child in its cache and
//! creates it again (a 409 `AlreadyExists`, or a real duplicate with
//! `generateName`); one that writes a status may write it back over a
//! newer one. The fix is to know what was written and wait for the cache:
//!
//! 1. Write through a [`RecordedApi`] (from [`WriteLog::api`]), which
//!    forwards to `kube::Api` and records, under the key of the object
//!    being reconciled (the *parent*), which object was written (the
//!    *child*, or the parent itself) and what the API server answered.
//! 2. Before that parent's next reconcile, wait until every store that
//!    caches the written objects' resource has
//!    [caught up](crate::Store::caught_up) with those writes
//!    ([`Store::wait_for`](crate::Store::wait_for)), with a deadline.
//!    [`Controller::read_own_writes`](crate::controller::Controller::read_own_writes)
//!    does this for a controller; [`WriteLog::take`] gives the writes to
//!    code that gates a [`Runner`](crate::runner::Runner) of its own.
//!
//! Whether a store has caught up is decided by resourceVersion, as integers
//! where the API server's versions are comparable (KEP-5504, Kubernetes
//! 1.35+ and every etcd-backed server) and by equality where they are not:
//! rules RW1–RW3 in [`resource_version`](crate::resource_version).
//!
//! # Rules
//!
//! - **RW5 Recorded writes.** Each write of a [`RecordedApi`] that the API
//!   server accepted is recorded under the parent key the API was made
//!   for: the written object's resource (API group and plural, from the
//!   `Api`'s URL), its key, and [`Written::Version`] with the
//!   resourceVersion the answer carries, or [`Written::Deleted`] for a
//!   delete answered with a `Status` (the object is gone). A later write to
//!   the same object under the same parent replaces the earlier record. A
//!   refused write, or an answer without a name or resourceVersion,
//!   records nothing.
//! - **RW6 Taking.** [`WriteLog::take`] returns a parent's records and
//!   forgets them; records of other parents stay. A parent's records live
//!   until taken, so a log fed by a controller holds, at most, the writes
//!   of each key's last reconcile.
//!
//! - **RW9 A write that deleted.** An answer that is the object's last
//!   state, deleted by the write itself, is recorded as
//!   [`Written::Deleted`], not at its resourceVersion, which no cache will
//!   ever hold: it carries a `deletionTimestamp`,
//!   `deletionGracePeriodSeconds: 0` and no finalizer, as kube-apiserver
//!   answers the update that removed the last finalizer of an object being
//!   deleted. A Pod in its grace period is not gone yet, and is recorded at
//!   its version.
//!
//! The controller's gate has its own rules (RW7, RW8) in
//! [`controller`](crate::controller). The
//! [finalizer helper](crate::finalizer::finalizer) given a [`RecordedApi`]
//! records its patches here (Z10), and keeps in the log the cleanups that
//! finished while their finalizer was still on, so that a retry does not
//! run them again (Z11).
//!
//! # Bad input
//!
//! Nothing here panics: a write whose answer cannot be keyed is forwarded
//! and answered as `kube::Api` answered it, only not recorded.

mod api;
mod cleanups;
mod log;

pub use api::RecordedApi;
pub use log::{RecordedWrite, WriteLog};

use crate::resource_version::Written;
