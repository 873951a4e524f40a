//! Property: for random schedules of object changes and faults, folding the
//! source's events (a relist replaces the whole map, Added/Modified upsert,
//! Deleted removes) ends equal to the server's state (R1–R9 together).

use crate::source_helpers;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, ResourceExt};
use kube_informer::source::{self, Config, Event, ListStrategy};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch, WatchFault};
use parking_lot::Mutex;
use proptest::prelude::*;
use source_helpers::*;

#[derive(Debug, Clone)]
enum Fault {
    WatchError(u16),
    Drop,
    Malformed,
    UnknownType,
    NoName,
    Close,
    Compact,
    ListFails,
    ContinueExpires,
    WatchStart429,
    Bookmark,
}

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u8),
    Delete(u8),
    Fault(Fault, usize),
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let fault = prop_oneof![
        prop_oneof![Just(410u16), Just(500u16), Just(429u16)].prop_map(Fault::WatchError),
        Just(Fault::Drop),
        Just(Fault::Malformed),
        Just(Fault::UnknownType),
        Just(Fault::NoName),
        Just(Fault::Close),
        Just(Fault::Compact),
        Just(Fault::ListFails),
        Just(Fault::ContinueExpires),
        Just(Fault::WatchStart429),
        Just(Fault::Bookmark),
    ];
    prop_oneof![
        4 => (0u8..8, 0u8..3).prop_map(|(n, v)| Op::Put(n, v)),
        2 => (0u8..8).prop_map(Op::Delete),
        2 => (fault, 0usize..3).prop_map(|(f, n)| Op::Fault(f, n)),
        2 => (0u64..5000).prop_map(Op::Wait),
    ]
}

/// The consumer's view: the map, plus the relist being read.
#[derive(Default)]
struct Fold {
    map: BTreeMap<String, String>,
    relist: Option<BTreeMap<String, String>>,
}

impl Fold {
    fn apply(&mut self, event: Event<ConfigMap>) {
        let entry = |o: &ConfigMap| (o.name_any(), o.resource_version().unwrap_or_default());
        match event {
            Event::Added(o) | Event::Modified(o) => {
                let (k, v) = entry(&o);
                self.map.insert(k, v);
            }
            Event::Deleted(o) => {
                self.map.remove(&o.name_any());
            }
            Event::ListStart => self.relist = Some(BTreeMap::new()),
            Event::Listed(o) => {
                let (k, v) = entry(&o);
                self.relist
                    .as_mut()
                    .expect("Listed outside a relist")
                    .insert(k, v);
            }
            Event::ListDone { .. } => {
                self.map = self.relist.take().expect("ListDone outside a relist")
            }
            Event::Bookmark { .. } => {}
        }
    }
}

fn inject(server: &FakeApiServer, fault: &Fault, after: usize) {
    let watch = |f| server.inject_watch_fault(RequestMatch::Watch, after, f);
    match fault {
        Fault::WatchError(410) => watch(WatchFault::ErrorEvent(ApiStatus::expired())),
        Fault::WatchError(429) => watch(WatchFault::ErrorEvent(ApiStatus::too_many_requests())),
        Fault::WatchError(_) => watch(WatchFault::ErrorEvent(ApiStatus::internal_error())),
        Fault::Drop => watch(WatchFault::DropConnection),
        Fault::Malformed => watch(WatchFault::MalformedLine),
        Fault::UnknownType => watch(WatchFault::UnknownEventType),
        Fault::NoName => watch(WatchFault::ObjectWithoutName),
        Fault::Close => server.close_watches(),
        Fault::Compact => server.compact(),
        Fault::ListFails => {
            server.fail_requests(RequestMatch::List, ApiStatus::internal_error(), 1)
        }
        Fault::ContinueExpires => {
            server.fail_requests(RequestMatch::ListContinue, ApiStatus::expired(), 1)
        }
        Fault::WatchStart429 => {
            server.fail_requests(RequestMatch::Watch, ApiStatus::too_many_requests(), 1)
        }
        Fault::Bookmark => server.send_bookmark(),
    }
}

async fn run(ops: Vec<Op>, streaming: bool) -> Result<(), TestCaseError> {
    let server = FakeApiServer::start().await;
    let fold = Arc::new(Mutex::new(Fold::default()));
    let strategy = if streaming {
        ListStrategy::Streaming
    } else {
        ListStrategy::Paginated
    };
    let config = Config::default()
        .page_size(2)
        .list_strategy(strategy)
        .backoff(exact_backoff());
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let events = source::watch_source(api, config);
    let folding = fold.clone();
    let task = tokio::spawn(async move {
        futures::pin_mut!(events);
        while let Some(item) = events.next().await {
            if let Ok(event) = item {
                folding.lock().apply(event);
            }
        }
    });

    // The names the ops have put and not deleted since. A delete succeeds
    // exactly for these; a failure for any other reason would leave the
    // server in a state the ops did not ask for.
    let mut present = BTreeSet::new();
    for op in &ops {
        match op {
            Op::Put(n, v) => {
                server
                    .apply(&cm(&format!("cm-{n}"), &format!("v{v}")))
                    .unwrap();
                present.insert(*n);
            }
            Op::Delete(n) => {
                let deleted = server.delete::<ConfigMap>(Some("default"), &format!("cm-{n}"));
                prop_assert_eq!(
                    deleted.is_ok(),
                    present.remove(n),
                    "delete of cm-{}: {:?}",
                    n,
                    deleted.err()
                );
            }
            Op::Fault(fault, after) => inject(&server, fault, *after),
            Op::Wait(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
        }
        tokio::task::yield_now().await;
    }

    // Quiescence: a last write, and wait until the fold has seen it outside
    // of any open relist. Everything before it is then reflected too.
    let sentinel = server.create(&cm("zz-sentinel", "end")).unwrap();
    let sentinel_rv = sentinel.resource_version();
    let caught_up = tokio::time::timeout(Duration::from_secs(24 * 3600), async {
        loop {
            {
                let f = fold.lock();
                if f.relist.is_none() && f.map.get("zz-sentinel") == sentinel_rv.as_ref() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    task.abort();
    prop_assert!(caught_up.is_ok(), "the source never caught up");

    let expected: BTreeMap<String, String> = server
        .objects::<ConfigMap>()
        .iter()
        .map(|o| (o.name_any(), o.resource_version().unwrap_or_default()))
        .collect();
    prop_assert_eq!(&fold.lock().map, &expected);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    // R1–R9
    #[test]
    fn folded_events_equal_server_state(ops in prop::collection::vec(op(), 1..40), streaming in any::<bool>()) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(run(ops, streaming))?;
    }
}
