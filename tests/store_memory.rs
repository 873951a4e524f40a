//! The store's own overhead per cached object stays under 150 bytes (keys
//! shared, not copied; the namespace index holds one key clone per object).
//!
//! One test in this binary, so the counting allocator sees only it.

mod cache_mode_common;
mod store_common;

use std::{
    alloc::{GlobalAlloc, Layout, System},
    sync::atomic::{AtomicIsize, Ordering},
};

use kube_informer::unstable::store::Writer;
use kube_informer::{ObjectKey, store::Indexers};
use store_common::cm;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn store_overhead_per_object_is_under_150_bytes() {
    const N: usize = 20_000;
    // Objects and keys exist before the store: only the store's own
    // structures are counted.
    let objects: Vec<_> = (0..N)
        .map(|i| {
            let o = cm(&format!("ns{}", i % 50), &format!("cm-{i}"), "1");
            (ObjectKey::from_object(&*o).unwrap(), o)
        })
        .collect();
    let writer = Writer::new(Indexers::new());
    let store = writer.reader();
    let before = LIVE.load(Ordering::Relaxed);
    for (key, object) in &objects {
        writer.apply_upsert(key.clone(), object.clone()).unwrap();
    }
    let per_object = (LIVE.load(Ordering::Relaxed) - before) as f64 / N as f64;
    println!("store overhead: {per_object:.1} bytes per object");
    assert!(per_object <= 150.0, "{per_object:.1} bytes per object");
    assert_eq!(store.len(), N);
}
