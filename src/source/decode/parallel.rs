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
//! # Where objects are decoded
//!
//! A batch too small to split (less than [`MIN_BYTES_PER_THREAD`] of JSON
//! per thread: about forty realistic Pods, a millisecond of decoding) is
//! decoded on the thread that asks, in place, so the watch events of a
//! cluster that flushes one event per chunk cost no thread hand-off and no
//! wake-up. A bigger batch is cut into chunks for the process's decode
//! threads (one per core up to [`MAX_THREADS`], shared by all informers of
//! the process, started on first use): a batch wakes as many threads as it
//! has chunks, and the objects of big batches all come from the heaps of
//! threads that keep decoding ([`decode_on`] says how). An informer may
//! take fewer of them per batch (`InformerBuilder::decode_threads`, the
//! `limit` of [`splits`], [`decode_all`] and [`decode_detached`]); with a
//! limit of 1 its batches are all decoded on the thread that reads them,
//! however big, and it neither wakes nor starts a decode thread.
//!
//! The pool is a `rayon` pool of its own (not rayon's global pool, which
//! the program may use for other work). A batch that big is not decoded on
//! a runtime worker: list pages and watch batches are handed whole to a
//! blocking task of the runtime ([`decode_detached`]), which the caller
//! awaits, so the worker runs other tasks meanwhile (a list fetches its
//! next page). On a machine with one core, or if the pool cannot be
//! started, batches are decoded on the calling thread, exactly as a serial
//! decode. BENCHMARKS.md has what this costs in CPU and memory.

use super::headroom;
use std::{
    num::NonZeroUsize,
    ops::{Index, Range},
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
/// one writer per informer could not use the objects of more.
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

/// Whether a batch of `len` items and `bytes` bytes is split over several
/// threads, at most `limit` (and so worth decoding off the caller's
/// thread). Asks for the pool only then, so an informer whose limit is 1
/// never starts it.
pub(crate) fn splits(len: usize, bytes: usize, limit: usize) -> bool {
    threads_for(len, bytes, available_threads().min(limit)) > 1 && pool().is_some()
}

/// `items.iter().map(decode).collect()`, on the decode threads, split over
/// several of them, at most `limit`, when the batch (`bytes` of JSON in
/// all) is big enough.
pub(crate) fn decode_all<I, O, F>(items: &[I], bytes: usize, limit: usize, decode: F) -> Vec<O>
where
    I: Sync,
    O: Send,
    F: Fn(&I) -> O + Sync,
{
    decode_on(
        items,
        threads_for(items.len(), bytes, available_threads().min(limit)),
        bytes,
        decode,
    )
}

/// `items.iter().map(decode).collect()` in up to `threads` chunks; `bytes`
/// is the batch's JSON, for the room each thread makes in its heap first
/// (`headroom`). A panicking `decode` panics here, as it would serially.
///
/// One chunk is decoded on the calling thread, in place, and wakes nobody.
/// More chunks go to the decode threads while the caller waits, so every
/// object of a big batch comes from a decode thread's heap, which keeps
/// allocating and so reuses the memory of the objects the writer frees (a
/// blocking task's thread, which may sit idle or exit, would not). A batch
/// with a chunk for every decode thread is one `broadcast`, whose first
/// chunk goes to the next thread in turn, so each thread decodes its share
/// over time; a batch with fewer chunks is one job per chunk, waking only
/// as many threads.
pub(crate) fn decode_on<I, O, F>(items: &[I], threads: usize, bytes: usize, decode: F) -> Vec<O>
where
    I: Sync,
    O: Send,
    F: Fn(&I) -> O + Sync,
{
    static TURN: AtomicUsize = AtomicUsize::new(0);
    let parts = threads.clamp(1, items.len().max(1));
    // One chunk neither needs the pool nor starts it.
    let Some(pool) = (parts > 1).then(pool).flatten() else {
        headroom::make_room(bytes);
        return items.iter().map(&decode).collect();
    };
    let workers = pool.current_num_threads();
    let parts = parts.min(workers);
    let chunk = items.len().div_ceil(parts);
    let chunk_bytes = bytes / parts;
    let decode_chunk = |chunk: &[I]| -> Vec<O> {
        headroom::make_room(chunk_bytes);
        chunk.iter().map(&decode).collect()
    };
    let mut decoded: Vec<Option<Vec<O>>> = if parts == workers {
        let first = TURN.fetch_add(1, Ordering::Relaxed) % workers;
        // Thread `index` decodes chunk `(index - first) mod workers`.
        let mut by_thread = pool.broadcast(|context| {
            let part = (context.index() + workers - first) % workers;
            items.chunks(chunk).nth(part).map(decode_chunk)
        });
        by_thread.rotate_left(first);
        by_thread
    } else {
        let mut by_chunk: Vec<Option<Vec<O>>> = items.chunks(chunk).map(|_| None).collect();
        let decode_chunk = &decode_chunk;
        pool.scope(|scope| {
            for (chunk, out) in items.chunks(chunk).zip(by_chunk.iter_mut()) {
                scope.spawn(move |_| *out = Some(decode_chunk(chunk)));
            }
        });
        by_chunk
    };
    let mut out = Vec::with_capacity(items.len());
    for part in &mut decoded {
        out.extend(part.take().unwrap_or_default());
    }
    out
}

/// Objects cut out of one text (a list page's `String`, a watch batch's
/// bytes): the text and where each object lies in it.
#[derive(Debug)]
pub(crate) struct Slices<T = String> {
    pub(crate) text: T,
    pub(crate) ranges: Vec<Range<usize>>,
}

/// `decode` applied to every object of `slices`, in order, like
/// [`decode_all`] with the same `limit`; but the caller awaits instead of
/// blocking its thread.
///
/// A batch too small to split, or whose `limit` is 1, is decoded in
/// place. A bigger one is handed whole to a blocking task of the runtime,
/// which decodes it with the decode threads, so the thread that asked (a
/// runtime worker) is free meanwhile: it can fetch the next page and run
/// the tasks that apply the objects already decoded. A blocking task
/// rather than a job on the decode threads, because tokio's paused test
/// clock does not jump ahead while a blocking task runs: timers in a
/// paused test (the watch's inactivity timeout, a resync) see no time
/// pass during a decode, as before. Outside a tokio runtime the batch is decoded in place. A
/// panicking `decode` panics here, in the caller, as it would serially.
pub(crate) async fn decode_detached<T, O, F>(slices: Slices<T>, limit: usize, decode: F) -> Vec<O>
where
    T: AsRef<[u8]> + Index<Range<usize>> + Send + Sync + 'static,
    O: Send + 'static,
    F: Fn(&T::Output) -> O + Send + Sync + 'static,
{
    let bytes = slices.text.as_ref().len();
    let split = splits(slices.ranges.len(), bytes, limit);
    let work = Arc::new((slices, decode));
    let decode_batch = move |(slices, decode): &(Slices<T>, F)| {
        decode_all(&slices.ranges, bytes, limit, |range| {
            decode(&slices.text[range.clone()])
        })
    };
    let Some(runtime) = tokio::runtime::Handle::try_current().ok().filter(|_| split) else {
        return decode_batch(&work);
    };
    let job = Arc::clone(&work);
    match runtime.spawn_blocking(move || decode_batch(&job)).await {
        Ok(objects) => objects,
        Err(error) if error.is_panic() => panic::resume_unwind(error.into_panic()),
        // Cancelled before it ran (the runtime is shutting down): decode
        // here instead.
        Err(_) => decode_batch(&work),
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

    /// Which threads decoded a batch of `n` items of `size` bytes each,
    /// detached from a current-thread runtime; and the runtime's thread.
    fn decoding_threads(
        n: usize,
        size: usize,
        limit: usize,
    ) -> (Vec<std::thread::ThreadId>, std::thread::ThreadId) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let text = vec![b'x'; n * size];
            let ranges = (0..n).map(|i| i * size..(i + 1) * size).collect();
            let threads = decode_detached(Slices { text, ranges }, limit, |_: &[u8]| {
                std::thread::current().id()
            })
            .await;
            (threads, std::thread::current().id())
        })
    }

    // A few events are decoded where they arrive: no thread is woken.
    #[test]
    fn small_batches_are_decoded_on_the_calling_thread() {
        let (threads, caller) = decoding_threads(3, 4_000, usize::MAX);
        assert!(threads.iter().all(|thread| *thread == caller));
    }

    // `decode_threads(1)` (or 0): even a burst is decoded where it arrives,
    // on the thread that read it, without a blocking task or a decode
    // thread.
    #[test]
    fn a_limit_of_one_decodes_big_batches_on_the_calling_thread() {
        for limit in [0, 1] {
            let (threads, caller) = decoding_threads(500, 4_000, limit);
            assert_eq!(threads.len(), 500);
            assert!(
                threads.iter().all(|thread| *thread == caller),
                "limit {limit}"
            );
            assert!(!splits(500, 500 * 4_000, limit));
        }
    }

    // A burst is decoded off the runtime's thread, which stays free for
    // other tasks meanwhile (on one core there are no decode threads).
    #[test]
    fn big_batches_are_decoded_off_the_runtime_thread() {
        let (threads, caller) = decoding_threads(500, 4_000, usize::MAX);
        assert_eq!(threads.len(), 500);
        if pool().is_some() {
            assert!(threads.iter().all(|thread| *thread != caller));
        }
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
