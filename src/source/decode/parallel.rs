//! Decoding a batch of independent objects on several threads, in order.
//!
//! A list page holds up to 500 objects and a watch burst can hold as many;
//! decoding them is most of what a source costs, and each object decodes on
//! its own. So a big batch is cut into one contiguous chunk per thread and
//! the results are put back together chunk by chunk: the output is exactly
//! what a serial decode gives, same order, same errors at the same
//! positions. Only decoding fans out; the events still leave the source one
//! by one, in order.
//!
//! # Where objects are decoded, and why it matters for memory
//!
//! On a machine with two cores or more, *every* batch, big or small, is
//! decoded on the same few long-lived threads (one per core up to
//! [`MAX_THREADS`], shared by all informers of the process, started on
//! first use), and the threads take turns, so each decodes an equal share
//! of the objects over time. The reason is the allocator, not speed:
//! glibc's malloc gives each thread an arena, and memory freed into an arena
//! is reused only by allocations made from that arena. An object the writer
//! frees goes back to the arena of the thread that decoded it; if that
//! thread no longer allocates (a short-lived thread, or one that seldom
//! gets a batch), the memory stays with the process. Measured in the wire
//! burst (N = 50,000 Pods, S = 1, BENCHMARKS.md): with big batches on
//! short-lived threads and small ones on the runtime's threads, the peak
//! RSS was 1.42× the RSS after the initial sync, with 0.7–0.8 GiB of freed
//! memory held; on a fixed pool where whichever thread was awake took each
//! small batch, 1.27–1.29× with 0.4 GiB held; taking turns, 1.01–1.02×
//! with 5–17 MiB held (three runs each).
//!
//! The pool is a `rayon` pool of its own (not rayon's global pool, which
//! the program may use for other work); a batch is one `broadcast`, in
//! which each thread decodes its chunk or nothing. A watch burst's caller
//! blocks while its batch is decoded, as it would decoding it itself; a
//! list page's caller awaits it instead ([`decode_detached`]), so that the
//! next page can be fetched meanwhile. On a machine with one core, or if
//! the pool cannot be started, batches are decoded on the calling thread,
//! exactly as a serial decode.

use super::headroom;
use std::{
    num::NonZeroUsize,
    ops::Range,
    panic,
    sync::{
        Arc, OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
};

/// The least JSON, in bytes, worth a thread of its own: about forty
/// realistic Pods, a millisecond of decoding, against the tens of
/// microseconds a split and join cost.
pub(crate) const MIN_BYTES_PER_THREAD: usize = 128 * 1024;

/// The most decode threads a process starts, however many cores it has:
/// every batch wakes all of them (see [`decode_on`]), and one writer per
/// informer could not use the objects of more.
const MAX_THREADS: usize = 4;

/// How many threads may decode at once: the cores this process may use,
/// up to [`MAX_THREADS`].
fn available_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(NonZeroUsize::get)
            .unwrap_or(1)
            .min(MAX_THREADS)
    })
}

/// The process's decode threads; `None` on one core or if they cannot be
/// started.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = available_threads();
        if threads < 2 {
            return None;
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("kube-informer-decode-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// How many threads a batch of `len` items and `bytes` bytes is split over.
pub(crate) fn threads_for(len: usize, bytes: usize, available: usize) -> usize {
    available.min(bytes / MIN_BYTES_PER_THREAD).min(len).max(1)
}

/// `items.iter().map(decode).collect()`, on the decode threads, split over
/// several of them when the batch (`bytes` of JSON in all) is big enough.
pub(crate) fn decode_all<I, O, F>(items: &[I], bytes: usize, decode: F) -> Vec<O>
where
    I: Sync,
    O: Send,
    F: Fn(&I) -> O + Sync,
{
    decode_on(
        items,
        threads_for(items.len(), bytes, available_threads()),
        bytes,
        decode,
    )
}

/// `items.iter().map(decode).collect()` in up to `threads` chunks, on the
/// decode threads when there are any; `bytes` is the batch's JSON, for the
/// room each thread makes in its heap first (`headroom`). A panicking
/// `decode` panics here, as it would serially.
///
/// The threads take turns: the first chunk of each batch goes to the next
/// thread in turn, so over time every thread decodes (allocates) its share
/// of the objects, and the memory freed into its arena is reused.
pub(crate) fn decode_on<I, O, F>(items: &[I], threads: usize, bytes: usize, decode: F) -> Vec<O>
where
    I: Sync,
    O: Send,
    F: Fn(&I) -> O + Sync,
{
    static TURN: AtomicUsize = AtomicUsize::new(0);
    let Some(pool) = pool().filter(|_| !items.is_empty()) else {
        headroom::make_room(bytes);
        return items.iter().map(&decode).collect();
    };
    let workers = pool.current_num_threads();
    let parts = threads.clamp(1, workers).min(items.len());
    let chunk = items.len().div_ceil(parts);
    let chunk_bytes = bytes / parts;
    let first = TURN.fetch_add(1, Ordering::Relaxed) % workers;
    // Thread `index` decodes chunk `(index - first) mod workers`, if any.
    let mut decoded: Vec<Option<Vec<O>>> = pool.broadcast(|context| {
        let part = (context.index() + workers - first) % workers;
        items.chunks(chunk).nth(part).map(|chunk| {
            headroom::make_room(chunk_bytes);
            chunk.iter().map(&decode).collect()
        })
    });
    let mut out = Vec::with_capacity(items.len());
    for part in 0..parts {
        out.extend(decoded[(first + part) % workers].take().unwrap_or_default());
    }
    out
}

/// Objects cut out of one text: the text and where each object lies in it.
#[derive(Debug)]
pub(crate) struct Slices {
    pub(crate) text: String,
    pub(crate) ranges: Vec<Range<usize>>,
}

/// `decode` applied to every object of `slices`, in order, like
/// [`decode_all`]; but the caller awaits instead of blocking its thread.
///
/// A list page is handed whole to a blocking task of the runtime, which
/// waits for the decode threads, so the thread that asked (a runtime
/// worker) is free meanwhile: it can fetch the next page and run the tasks
/// that apply the objects already decoded. A blocking task rather than a
/// job on the decode threads, because tokio's paused test clock does not
/// jump ahead while a blocking task runs: timers in a paused test (the
/// watch's inactivity timeout, a resync) see no time pass during a decode,
/// as before. Outside a tokio runtime the page is decoded in place. A
/// panicking `decode` panics here, in the caller, as it would serially.
pub(crate) async fn decode_detached<O, F>(slices: Slices, decode: F) -> Vec<O>
where
    O: Send + 'static,
    F: Fn(&str) -> O + Send + Sync + 'static,
{
    let work = Arc::new((slices, decode));
    let decode_page = |(slices, decode): &(Slices, F)| {
        decode_all(&slices.ranges, slices.text.len(), |range| {
            decode(&slices.text[range.clone()])
        })
    };
    let on_pool = pool().is_some() && !work.0.ranges.is_empty();
    let Some(runtime) = tokio::runtime::Handle::try_current()
        .ok()
        .filter(|_| on_pool)
    else {
        return decode_page(&work);
    };
    let job = Arc::clone(&work);
    match runtime.spawn_blocking(move || decode_page(&job)).await {
        Ok(objects) => objects,
        Err(error) if error.is_panic() => panic::resume_unwind(error.into_panic()),
        // Cancelled before it ran (the runtime is shutting down): decode
        // here instead.
        Err(_) => decode_page(&work),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_batches_and_single_cores_stay_serial() {
        assert_eq!(threads_for(500, 500 * 3700, 1), 1);
        assert_eq!(threads_for(10, 10 * 3700, 8), 1);
        assert_eq!(threads_for(500, 500 * 3700, 2), 2);
        assert_eq!(threads_for(500, 500 * 3700, 64), 14);
        assert_eq!(threads_for(2, 10 << 20, 8), 2);
        assert_eq!(threads_for(0, 0, 8), 1);
    }

    #[test]
    fn output_keeps_input_order_on_any_thread_count() {
        let items: Vec<u32> = (0..1001).collect();
        let serial: Vec<u64> = items.iter().map(|i| u64::from(*i) * 3).collect();
        for threads in 1..=7 {
            assert_eq!(decode_on(&items, threads, 0, |i| u64::from(*i) * 3), serial);
            // With room made on every thread first: the same.
            let room = 4 << 20;
            assert_eq!(
                decode_on(&items, threads, room, |i| u64::from(*i) * 3),
                serial
            );
        }
        assert!(decode_on(&[] as &[u32], 4, 0, |i| *i).is_empty());
    }
}
