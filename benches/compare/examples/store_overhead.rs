//! Exact heap bytes each cached object costs beyond the object itself, by a
//! counting allocator rather than resident size (which moves in pages and
//! keeps freed capacity): the figure behind the "≤ 150 bytes per cached
//! object" target of issue 7.
//!
//! ```text
//! cargo run --release -p kube-informer-compare --example store_overhead -- [N]
//! ```
//!
//! For N generated ConfigMaps it prints the live heap added by
//! - `HashMap<String, Arc<ConfigMap>>` (the floor's cache), and
//! - the `Informer` after its initial list, with 0 and with 4 drained subscribers,
//!
//! each divided by N. Moving an object into an `Arc` costs the same in every
//! case and is counted (16 bytes of counts plus the allocation's rounding).

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{Informer, SubscribeOptions, source::Event};
use kube_informer_compare::{
    generate::{Spec, write_workload},
    workload::Workload,
};
use std::{
    alloc::{GlobalAlloc, Layout, System},
    collections::HashMap,
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicIsize, Ordering},
    },
};

/// Live bytes as malloc hands them out: usable size plus its 8-byte header.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

fn chunk(ptr: *mut u8) -> isize {
    // SAFETY: `ptr` came from System (malloc) and is still allocated.
    (unsafe { libc::malloc_usable_size(ptr.cast()) } + 8) as isize
}

// SAFETY: every call is forwarded to System unchanged; the counter only reads
// the size of blocks System returned and has not freed yet.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(chunk(ptr), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(chunk(ptr), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = chunk(ptr);
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_add(chunk(new) - old, Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn objects(n: usize) -> Vec<ConfigMap> {
    let mut bytes = Vec::new();
    let spec = Spec {
        objects: n,
        updates: 0,
        delete_percent: 0,
        seed: 1,
    };
    write_workload(spec, &mut bytes).expect("writing to memory does not fail");
    let mut list = Workload::parse(&bytes)
        .expect("the generator writes valid workloads")
        .list;
    // Freeing spare capacity of the list would count against the figure.
    list.shrink_to_fit();
    list
}

/// Live bytes the floor's map adds for `list`, per object.
fn floor(list: Vec<ConfigMap>) -> f64 {
    let n = list.len();
    let before = live();
    let mut map = HashMap::new();
    for object in list {
        let key = format!(
            "{}/{}",
            object.metadata.namespace.as_deref().unwrap_or(""),
            object.metadata.name.as_deref().unwrap_or("")
        );
        map.insert(key, Arc::new(object));
    }
    // `list`'s buffer is gone; count the objects as moved, as in the informer.
    let added = live() - before;
    let per_object = added as f64 / n as f64;
    drop(map);
    per_object
}

/// Live bytes the informer adds for `list` once listed and, with
/// subscribers, once each has drained its notifications.
async fn informer(list: Vec<ConfigMap>, subscribers: usize) -> f64 {
    let n = list.len();
    let before = live();
    let events = futures::stream::iter(
        std::iter::once(Event::ListStart)
            .chain(list.into_iter().map(Event::Listed))
            .chain(std::iter::once(Event::ListDone {
                resource_version: "1".into(),
            }))
            .map(Ok::<_, Infallible>),
    )
    .chain(futures::stream::pending());
    let informer = Informer::<ConfigMap>::builder_from_stream(events).build();
    let mut drained = Vec::new();
    for _ in 0..subscribers {
        let mut subscription = informer
            .subscribe(SubscribeOptions::default())
            .expect("a fresh informer accepts subscribers");
        drained.push(tokio::spawn(async move {
            let mut seen = 0;
            while seen < n {
                subscription.next().await;
                seen += 1;
            }
            subscription
        }));
    }
    let run = tokio::spawn(informer.run());
    informer.wait_until_synced().await.unwrap();
    let mut subscriptions = Vec::new();
    for task in drained {
        subscriptions.push(task.await.expect("subscriber task"));
    }
    // Let the pump finish its last batch.
    while informer.store().len() < n {
        tokio::task::yield_now().await;
    }
    let added = live() - before;
    // Tear everything down before the next measurement starts counting.
    informer.stop();
    let _ = run.await;
    drop((subscriptions, informer));
    added as f64 / n as f64
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(10_000);
    let before = live();
    let one = Arc::new(ConfigMap::default());
    let arc_cost = live() - before - std::mem::size_of::<ConfigMap>() as isize;
    drop(one);
    println!("N = {n}; live heap added per cached object (bytes):");
    println!(
        "  of which moving the object into an Arc (counts, malloc header, rounding): {arc_cost}"
    );
    println!(
        "  floor HashMap<String, Arc<ConfigMap>>: {:.0}",
        floor(objects(n))
    );
    for subscribers in [0, 4] {
        println!(
            "  Informer, {subscribers} subscribers:        {:.0}",
            informer(objects(n), subscribers).await
        );
    }
}
