//! Sharding: replicas of one program share out the keys of a resource,
//! coordinated through Leases, so the reconcile work scales out and no two
//! live replicas act on one key at the same time.
//!
//! ```text
//! Lease informer ──▶ Handover (pure) ──▶ KeyGate ──▶ gate.filter(stream) / gate.begin(key)
//!   own Lease writes ◀──┘  fences, confirming lists
//! ```
//!
//! Each replica ([`Shard`]) holds a Lease named `<ring>-<identity>` in one
//! namespace, labelled [`RING_LABEL`]` = <ring>`, and watches the ring's
//! Leases with this crate's own [`Informer`](crate::Informer). Consumers see
//! only the keys their replica owns, through its gate's
//! [`filter`](KeyGate::filter) or by starting each piece of work with
//! [`KeyGate::begin`], which hands out a [`WorkGuard`] only for an owned key.
//!
//! In this mode every replica still lists and watches the whole resource:
//! the cache is not sharded, the reconcile work is (see "Next step" below).
//!
//! # Rules
//!
//! - **S1 Assignment.** A key belongs to the member with the highest
//!   rendezvous weight among the members of a member set; the weights
//!   come from a fixed, pinned hash, so every replica of every build
//!   computes the same owner. A member leaving moves only its keys; one
//!   joining takes about `1/N`. (`tests/shard_assign.rs`: 3 members and
//!   10,000 keys give 3297 / 3323 / 3380; a leave moves exactly the
//!   leaver's 3380; a join moves 2564, all to the joiner.)
//! - **S2 Release before acknowledging.** When a member's view of the live
//!   members changes to a set `T`, it at once stops handing out every key it
//!   does not own in `T`, waits until the work in flight on those keys ends,
//!   and only then writes `T`'s fingerprint in its Lease
//!   ([`ACK_ANNOTATION`]). So at any time a member holds only keys it owns in
//!   the set its Lease acknowledges.
//! - **S3 Stop before expiring.** A member acts on keys only while less than
//!   the renew deadline has passed since it *sent* its last successful Lease
//!   write. The others count it alive until the Lease duration has passed
//!   since they *observed* that write, which was after it was sent; the
//!   renew deadline is shorter than the Lease duration. The [`KeyGate`]
//!   enforces the deadline itself: from that instant it refuses every key
//!   and every [`WorkGuard::lost`] resolves, even while the membership task
//!   waits on a request. Each Lease request is abandoned after a retry
//!   period without an answer, and an abandoned write never counts as
//!   successful, however late its answer.
//! - **S4 Acquire on a confirmed, unanimous set.** A member starts acting on
//!   the keys of a set `T` only after a list of all the ring's Leases, read
//!   after its own acknowledgement was written, shows exactly the members of
//!   `T` (same Lease uids), each acknowledging `T`.
//! - **S5 Fence the dead.** A Lease this replica saw expire (no new version
//!   within its duration, by this replica's clock: client-go leader
//!   election's `observedTime` rule) is deleted, conditional on the
//!   resourceVersion that was seen expiring. If its holder renewed in the
//!   meantime the delete fails; if the delete succeeds, the holder's next
//!   write fails, and it joins again as a new incarnation.
//! - **S6 Announce.** A sharded stream ([`KeyGate::filter`]) yields
//!   `Lost { key }` for every stored key its replica lets go, and replays
//!   every stored key it acquires as `Added { in_initial_list: true }`.
//! - **S7 Graceful leave.** A stopping [`Shard`] lets go of every key, waits
//!   for the work in flight, then deletes its Lease so the others need not
//!   wait for it to expire. If work is still in flight a renew deadline
//!   after the stop, it leaves the Lease in place to expire instead.
//! - **S8 A fresh view.** A member judges each other member's Lease by the
//!   newest version it has been shown, from the instant it first saw that
//!   version: a notification or a list that shows an older version (in
//!   RW1's order; for opaque versions, the same one) changes nothing, and
//!   a list gives a version already seen no new time. Its membership task
//!   keeps its Lease informer running and takes in its notifications while
//!   its own Lease requests are out, each observed when it arrived, and
//!   hands them all to the state machine before it plans again; a write
//!   that failed is retried a retry period later, never at once. So no
//!   fence, no member counted alive or expired in an adopted set and no
//!   confirmation rests on a version older than the newest the informer
//!   has delivered, and a member fences a Lease only on the version it saw
//!   expire, whatever its own requests are doing (hanging, failing, or
//!   creating a Lease again after it was fenced). Checked in
//!   `tests/shard_handover.rs`, after every generated step, against a
//!   reference of the versions each driver handed on (each view holds
//!   exactly the newest, counted alive exactly while less than a Lease
//!   duration has passed since it was first handed on, and every fence
//!   names it); and in `tests/shard_member.rs`, whose server delivers
//!   every change at once, so every fence must name a version written at
//!   least a Lease duration before and not replaced since.
//!
//! # The Lease's fields
//!
//! A member's Lease is named `<ring>-<identity>` and its `holderIdentity` is
//! that name. `renewTime` is the member's wall clock at each write, and
//! `leaseDurationSeconds` its configured duration. As in client-go's leader
//! election record, `acquireTime` is set when the Lease is created (and when
//! a member takes over a Lease of its name last held by another holder, which
//! also adds one to `leaseTransitions`); renewals keep `acquireTime` and
//! `leaseTransitions` and move only `renewTime`. A restarted process of the
//! same identity that finds its Lease still there renews it: same holder, no
//! transition. The members themselves judge liveness only by *when they
//! observed* a new resourceVersion, never by `renewTime`, so clock offsets
//! between machines do not matter; the times are for people and tools.
//!
//! # The guarantee
//!
//! *While every replica is live* (renewing within its deadline), a key is
//! never held by two replicas at once — held meaning handed out through the
//! gate or with a [`WorkGuard`] alive. Why: two holders of a key cannot both
//! count each other as members of the sets they hold under (the rendezvous
//! owner among both is one of them). A replica acquires only on a confirmed
//! list (S4); of two acquisitions, the one listed later saw the other
//! replica's current acknowledgement (each list is one consistent read, taken
//! after the lister's own acknowledgement), which must equal its own set, and
//! by S2 the other replica holds only keys it owns in that set. A replica
//! missing from a later list was deleted, which S5 allows only once it
//! expired, and by S3 it had stopped by then. `tests/shard_handover.rs`
//! checks this against generated interleavings of Lease events (delivered
//! late, in order), writes (applied late, replies lost, abandoned by their
//! sender and applied later still), fences, lists,
//! acknowledgements, work in flight, kills, restarts and joins, and with a
//! property that keeps work running across whole handovers (a member that
//! acknowledged with work still in flight on a released key fails it);
//! `tests/shard_member.rs` checks the same of whole replicas (membership
//! task, [`KeyGate`], guards) through joins, kills and stops.
//!
//! *When a replica is killed*, its work ends with it, and its keys stay
//! untouched until the others see its Lease expire: a Lease duration after
//! they last observed it renew, plus the time to fence it, acknowledge the
//! new set and confirm (a few API round trips and at most a retry period).
//! Nobody takes them earlier, even with clocks set differently on each
//! machine. So the takeover comes between about `lease_duration -
//! retry_period` (the last renewal was sent at most a retry period and one
//! round trip before the kill) and `lease_duration` plus those round trips
//! after the kill.
//! Exclusivity across the kill therefore rests on the Lease alone: there is
//! no moment at which both the killed replica and its successor act, because
//! the successor waits for an expiry the killed replica can no longer
//! prevent. `tests/e2e_shard.rs` measures it on a real kube-apiserver (three
//! replicas of the mirror operator example in sharded mode, 1,000 changing
//! sources, a SIGKILL, a restart and a join; with a 4 s Lease and a 2 s
//! retry period the killed replica's keys were taken over between 2.4 s and
//! 2.8 s after the kill in six runs, depending on how long before the kill
//! the last renewal was, and no two reconciles of one key overlapped).
//!
//! *When a replica is partitioned* (alive but unable to renew, whether its
//! requests fail or get no answer at all), it stops handing out keys a
//! renew deadline after it sent its last successful write (S3), while the
//! others wait a Lease duration after they observed that write. Work it already handed out is not stopped by the library:
//! its [`WorkGuard::lost`] resolves at that moment, and the work must end
//! within the gap `lease_duration - renew_deadline` for the guarantee to
//! hold.
//!
//! *The role of the Lease duration.* It bounds the takeover time after a
//! kill, and its gap to the renew deadline is the safety margin: it must
//! cover the difference in clock *rates* between machines over one Lease
//! duration (client-go's tolerance rule: the ratio of the two is the
//! tolerated rate ratio) and the time work takes to notice that its guard was
//! [lost](WorkGuard::lost). Work that runs on after its replica stopped
//! renewing is outside the guarantee: a consumer whose work can outlast the
//! gap must watch [`WorkGuard::lost`].
//!
//! Three things the guarantee does not cover. A member's keys are acquired
//! only when *all* live members acknowledged the same set: with continuous
//! churn, acquisitions wait (keys already held keep working). The API
//! server is trusted: Lease writes are linearizable and lists are quorum
//! reads, as kube-apiserver over etcd provides. And each identity must run
//! in one process at a time: two live processes of one identity write the
//! same Lease and both count as its member.
//!
//! # A work queue over a shard
//!
//! A [`WorkQueue`](crate::queue::WorkQueue) accepts only owned keys when it
//! is fed from a sharded stream ([`KeyGate::filter`]): add each `Change`'s key and drop its
//! guard at once (the queue, not the feed, holds the work). A key lost
//! while it waited in the queue is dropped by a
//! [`Runner`](crate::runner::Runner) built with
//! [`gate`](crate::runner::Runner::gate): each key it takes from the queue
//! must pass [`KeyGate::begin`] first, a refused key is dropped without a
//! reconcile (and its failure count forgotten), and the [`WorkGuard`] of an
//! admitted key lives as long as its reconcile, so a handover waits for it.
//! Keys of other streams feeding the same queue (children mapped to their
//! owner, say) may be added unfiltered, or filtered with
//! [`KeyGate::owns`] to keep the queue small: the runner's gate drops the
//! ones not owned either way. `examples/operator` runs this way with
//! `--shard`.
//!
//! ```text
//! shard.gate().filter(subscription) ──Change: key──▶ WorkQueue ──Runner::gate(shard.gate())──▶ reconcile
//!                                                        (key refused: dropped, forgotten)
//! ```
//!
//! # Metrics and logs
//!
//! [`KeyGate::metrics`] reports the members this replica acts under, the
//! keys of a store it owns, how often its ownership changed (handovers) and
//! the work in flight; with the `prometheus` feature
//! `metrics::register` exports them
//! (`METRICS.md`). The membership task logs acquisitions at info (with the
//! member count and the member set's fingerprint), fencing of an expired
//! Lease at info, and Lease read/write failures at warn.
//!
//! # Next step: a sharded cache
//!
//! Here every replica still caches the whole resource. The next step (not
//! built) is a *sharder*: one elected replica (see [`leader`](self#leader-election))
//! watches the objects and the ring and writes each object's owner into a
//! label (e.g. `shard.kube-informer.rs/<ring>=<member>`), and each replica's
//! informer selects only `…=<itself>`, so each caches only its shard. The
//! handover then has three steps per moved object: the sharder first
//! relabels the object to a "draining" value (the old owner's informer sees
//! it leave its selector, a `Deleted` with the last state, and lets go),
//! waits for the old owner's acknowledgement, then labels it with the new
//! owner (whose informer sees it arrive as `Added`). Costs: a write per
//! object per move (a join rewrites `1/N` of all objects, and each write is a
//! watch event for every other client), labels the users see on their
//! objects (and must not fight with GitOps tools that own the labels), a
//! single sharder that must itself be elected and can lag under churn, and
//! objects created between two sharder passes belong to nobody until
//! labelled (a latency added to every create). The reward: memory and watch
//! traffic per replica drop to about `1/N`.
//!
//! # Leader election
//!
//! For work that must run on one replica at a time, behind the
//! `leader-election` feature, `leader::Leadership` runs client-go's
//! election over one Lease (the incumbent keeps it while it renews, others
//! take it over once they observed it unchanged for a Lease duration, a
//! stop releases it) with this module's Lease requests and their deadline,
//! and gates work through a [`KeyGate`] that owns every key while leading.
//! As here, the leader stops acting a renew deadline after it sent its last
//! successful renewal, whatever its requests are waiting on, and every
//! write is conditional on the resourceVersion it replaces, so a late one
//! never moves another holder's Lease. Its rules are LE1–LE7 in
//! `shard::leader`.

pub(crate) mod assign;
mod config;
mod error;
mod gate;
pub(crate) mod handover;
mod hash;
mod intake;
#[cfg(feature = "leader-election")]
pub mod leader;
pub(crate) mod lease;
mod member;
mod ownership;
mod stream;
pub(crate) mod view;
mod writer;

pub use config::LeaseConfig;
pub use error::Error;
pub use gate::{KeyGate, WorkGuard};
pub use lease::{ACK_ANNOTATION, RING_LABEL};
pub use member::Shard;
pub use ownership::Ownership;
pub use stream::ShardEvent;
