//! Parts of the crate's insides that are public for its own tests and
//! benchmarks only. The module is `#[doc(hidden)]`: it is not part of the
//! documented API and **not covered by semver**; anything here may change or
//! go in any release. An informer user needs none of it:
//! [`Informer`](crate::Informer), [`Subscription`](crate::Subscription) and
//! the other items re-exported at the crate root are the stable surface.

pub mod dispatch {
    //! The writer side of [`dispatch`](crate::dispatch): the distributor an
    //! informer's writer task owns, and the requests other tasks send it.
    //!
    //! The writer owns the store and the distributor; other tasks send it
    //! [`SubscribeRequest`]s. A sketch of one turn of its loop:
    //!
    //! ```
    //! use std::{sync::Arc, time::Duration};
    //! use futures::StreamExt;
    //! use kube_informer::{Notification, ObjectKey, store::Indexers};
    //! use kube_informer::unstable::store::Writer;
    //! use kube_informer::dispatch::SubscribeOptions;
    //! use kube_informer::unstable::dispatch::{Distributor, SubscribeRequest};
    //! use tokio::sync::{mpsc, watch};
    //!
    //! # #[tokio::main(flavor = "current_thread")]
    //! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    //! let writer = Writer::<String>::new(Indexers::new());
    //! let store = writer.reader();
    //! let (synced, synced_rx) = watch::channel(false);
    //! let mut distributor = Distributor::new(Duration::ZERO, synced_rx);
    //! let (requests_tx, mut requests) = mpsc::unbounded_channel();
    //!
    //! // Any task, any time: a subscription now, registered by the writer later.
    //! let (mut sub, request) = SubscribeRequest::new(SubscribeOptions::default());
    //! requests_tx.send(request)?;
    //!
    //! // The writer, between two batches: register, replaying the store.
    //! while let Ok(request) = requests.try_recv() {
    //!     distributor.register(request, store.snapshot());
    //! }
    //! // A batch: apply to the store, then notify.
    //! let fifo_synced = false;
    //! let key: ObjectKey = "default/a".parse()?;
    //! let object = Arc::new("a".to_string());
    //! let n = match writer.apply_upsert(key.clone(), object.clone())? {
    //!     None => Notification::Added { object, in_initial_list: !fifo_synced },
    //!     Some(old) => Notification::Updated { old, new: object, resync: false },
    //! };
    //! distributor.distribute(&key, n).await;
    //! synced.send_replace(true); // once the FIFO has synced
    //!
    //! assert!(matches!(sub.next().await, Some(Notification::Added { in_initial_list: true, .. })));
    //! assert!(sub.sync_status().has_synced());
    //! # Ok(()) }
    //! ```
    //!

    pub use crate::dispatch::{distributor::Distributor, request::SubscribeRequest};
}

pub mod informer {
    //! The [`InformerBuilder`](crate::InformerBuilder)'s origin typestate:
    //! its second type parameter, which says whether the builder lists and
    //! watches through an `Api` ([`FromApi`]) or reads a stream
    //! ([`FromStream`]). Users never name them; the crate's test helpers
    //! that extend every builder do (`S: Origin`).

    pub use crate::informer::builder::{FromApi, FromStream, Origin};
}

pub mod store {
    //! The write side of [`store`](crate::store): the one handle that
    //! changes a store. An informer keeps its writer to itself and hands
    //! out readers; a writer of your own fills a [`Store`](crate::Store)
    //! from a pipeline of your own.

    pub use crate::store::writer::Writer;
}

#[cfg(feature = "shard")]
#[cfg_attr(docsrs, doc(cfg(feature = "shard")))]
pub mod shard {
    //! The membership state machine of [`shard`](crate::shard), public so
    //! that its property tests drive it step by step: what a member decides
    //! from the Leases it reads and the writes it made; and the ring's
    //! members, member sets and their fingerprints, with which tests build
    //! an [`Ownership`](crate::shard::Ownership) of their own
    //! (`Ownership::of`).

    pub use crate::shard::{
        assign::{Fingerprint, Member, MemberId, MemberSet},
        handover::{Handover, OwnLease, Plan},
        lease::{LeaseApi, lease_record},
        view::{LeaseRecord, MembershipView},
    };
}

#[doc(hidden)]
pub mod protobuf {
    //! The Kubernetes protobuf decoder, reachable for its tests and its
    //! benchmark, and the source asking for protobuf, for the source's
    //! tests.

    pub use crate::protobuf::{
        DEFAULT_MAX_FRAME, FrameSplitter, ListPage, WatchEvent, decode_list, decode_status,
        decode_watch_event,
    };
    pub use crate::protobuf::{Error, decode_object};
    /// The list/watch source asking for an encoding, as an informer built
    /// with `InformerBuilder::encoding` runs it (for the source's tests).
    pub use crate::source::encoding_hook::watch_source_encoded;

    #[cfg(feature = "protobuf-generated")]
    k8s_openapi::k8s_if_1_34! {
        /// The generated decoders (the second design, for measurement;
        /// Kubernetes 1.34's types only).
        pub mod generated {
            pub use crate::protobuf::direct::{decode_pod, decode_pod_list};
        }
    }
}

pub mod decode {
    //! The source's decoding steps one at a time (a list page, a watch
    //! line, the R7 probe, line splitting), as the source runs them: what
    //! `benches/decode.rs` measures, and the decode-only floor of CPU per
    //! event that the benchmarks compare the runners with.

    pub use crate::source::decode_bench::*;
}
