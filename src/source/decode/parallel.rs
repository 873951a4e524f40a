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
//! cluster that flushes one event per chunk cost no hand-off and no
//! wake-up. A bigger batch awaited by a source (a list page, a watch burst:
//! [`decode_detached`]) is cut into pieces of about that size, each decoded
//! by a task of its own on the runtime's worker threads, at most as many at
//! once as the batch may take (one per core up to [`MAX_THREADS`], lowered
//! by `InformerBuilder::decode_threads`, the `limit` of [`splits`] and
//! [`decode_detached`]); with a limit of 1, or on a current-thread runtime,
//! its batches are decoded in place, however big.
//!
//! Why the runtime's workers and not threads of their own: under glibc's
//! malloc each thread allocates from an arena of its own, and memory freed
//! into an arena is reused only by the threads allocating from it. The
//! objects of a list decoded on threads that then sit idle leave their
//! memory there when the watch replaces them; the replacements, decoded in
//! place on the workers, take new memory, and the peak grows by what the
//! watch replaced (1.5× kube-runtime's at N = 50,000 in BENCHMARKS.md).
//! Decoded on the workers, the list's objects and their replacements share
//! arenas. Why pieces: no task of the program waits behind more than one
//! piece (about a millisecond) on its worker, and the caller's task is free
//! while the pieces decode (a list fetches its next page meanwhile).
//!
//! [`decode_all`] and [`decode_on`] (the decode benchmark and the tests,
//! which call without awaiting) split over a `rayon` pool of their own,
//! started on first use, never by an informer.

use super::headroom;
use futures::StreamExt as _;
use std::{
    num::NonZeroUsize,
    ops::{Index, Range},
    panic,
    sync::{
        Arc, OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
};
use tokio::runtime::RuntimeFlavor;

/// The least JSON, in bytes, worth a thread of its own: about forty
/// realistic Pods, a millisecond of decoding, against the tens of
/// microseconds a split and join cost.
pub(crate) const MIN_BYTES_PER_THREAD: usize = 128 * 1024;

/// The most threads that decode one batch at once, however many cores the
/// process has: one writer per informer could not use the objects of more.
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

/// Whether [`decode_detached`] splits a batch of `len` items and `bytes`
/// bytes into pieces, at most `limit` at once: when it is big enough and
/// the current runtime has several workers. The caller copies the batch
/// out of a buffer it reuses only then.
pub(crate) fn splits(len: usize, bytes: usize, limit: usize) -> bool {
    threads_for(len, bytes, available_threads().min(limit)) > 1
        && tokio::runtime::Handle::try_current()
            .is_ok_and(|runtime| runtime.runtime_flavor() == RuntimeFlavor::MultiThread)
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

/// `decode` applied to every object of `slices`, in order, as a serial
/// decode gives them; the caller awaits instead of blocking its thread.
///
/// A batch too small to split, one whose `limit` is 1, or one decoded on a
/// current-thread runtime or outside a runtime is decoded in place.
/// Otherwise it is cut into pieces of about [`MIN_BYTES_PER_THREAD`] of
/// JSON, decoded by tasks spawned on the runtime, at most as many at once
/// as [`threads_for`] allows, while the caller's task waits (see the
/// module docs for why there). Each piece first makes room in its thread's
/// heap (`headroom`). A panicking `decode` panics here, in the caller, as
/// it would serially; a piece the runtime cancels before it ran (it is
/// shutting down) is decoded here, so the batch comes back whole. Dropping
/// the future aborts the pieces not started.
pub(crate) async fn decode_detached<T, O, F>(slices: Slices<T>, limit: usize, decode: F) -> Vec<O>
where
    T: AsRef<[u8]> + Index<Range<usize>> + Send + Sync + 'static,
    O: Send + 'static,
    F: Fn(&T::Output) -> O + Send + Sync + 'static,
{
    let bytes = slices.text.as_ref().len();
    let len = slices.ranges.len();
    let in_flight = threads_for(len, bytes, available_threads().min(limit));
    let runtime = tokio::runtime::Handle::try_current()
        .ok()
        .filter(|runtime| in_flight > 1 && runtime.runtime_flavor() == RuntimeFlavor::MultiThread);
    let Some(runtime) = runtime else {
        return slices
            .ranges
            .iter()
            .map(|range| decode(&slices.text[range.clone()]))
            .collect();
    };
    // Pieces of about a millisecond of decoding each, as tasks on the
    // runtime's workers, at most `in_flight` at once: the objects come from
    // the heaps of the threads that decode the watch's small batches too,
    // and no piece holds a worker long.
    let pieces = (bytes / MIN_BYTES_PER_THREAD).clamp(1, len);
    let chunk = len.div_ceil(pieces);
    let piece_bytes = bytes / pieces;
    let work = Arc::new((slices, decode));
    let spawn = |start: usize| {
        let work = Arc::clone(&work);
        let end = (start + chunk).min(len);
        Spawned(runtime.spawn(async move {
            headroom::make_room(piece_bytes);
            let (slices, decode) = &*work;
            slices.ranges[start..end]
                .iter()
                .map(|range| decode(&slices.text[range.clone()]))
                .collect::<Vec<O>>()
        }))
    };
    let mut decoded = futures::stream::iter((0..len).step_by(chunk).map(spawn)).buffered(in_flight);
    let mut out = Vec::with_capacity(len);
    while let Some(piece) = futures::StreamExt::next(&mut decoded).await {
        match piece {
            Ok(objects) => out.extend(objects),
            Err(error) if error.is_panic() => panic::resume_unwind(error.into_panic()),
            // Cancelled before it ran (the runtime is shutting down): that
            // piece here, so the batch stays whole and in order.
            Err(_) => {
                let (slices, decode) = &*work;
                let start = out.len();
                let end = (start + chunk).min(len);
                out.extend(
                    slices.ranges[start..end]
                        .iter()
                        .map(|range| decode(&slices.text[range.clone()])),
                );
            }
        }
    }
    out
}

/// A spawned piece, aborted if the decode that awaits it is dropped.
struct Spawned<O>(tokio::task::JoinHandle<O>);

impl<O> std::future::Future for Spawned<O> {
    type Output = Result<O, tokio::task::JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

impl<O> Drop for Spawned<O> {
    fn drop(&mut self) {
        self.0.abort();
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
    /// detached from a task of a runtime with `workers` workers (0: a
    /// current-thread runtime); and the thread of the task that awaited.
    fn decoding_threads(
        n: usize,
        size: usize,
        limit: usize,
        workers: usize,
    ) -> (Vec<std::thread::ThreadId>, std::thread::ThreadId) {
        let runtime = match workers {
            0 => tokio::runtime::Builder::new_current_thread().build(),
            n => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(n)
                .build(),
        }
        .unwrap();
        runtime.block_on(async move {
            tokio::spawn(async move {
                let text = vec![b'x'; n * size];
                let ranges = (0..n).map(|i| i * size..(i + 1) * size).collect();
                let threads = decode_detached(Slices { text, ranges }, limit, |_: &[u8]| {
                    std::thread::current().id()
                })
                .await;
                (threads, std::thread::current().id())
            })
            .await
            .unwrap()
        })
    }

    // A few events are decoded where they arrive: no task is spawned.
    #[test]
    fn small_batches_are_decoded_on_the_calling_thread() {
        let (threads, caller) = decoding_threads(3, 4_000, usize::MAX, 0);
        assert!(threads.iter().all(|thread| *thread == caller));
        let (threads, caller) = decoding_threads(3, 4_000, usize::MAX, 1);
        assert!(threads.iter().all(|thread| *thread == caller));
    }

    // `decode_threads(1)` (or 0): even a burst is decoded where it arrives,
    // on the thread that read it, without a blocking task or a decode
    // thread.
    #[test]
    fn a_limit_of_one_decodes_big_batches_on_the_calling_thread() {
        for limit in [0, 1] {
            let (threads, caller) = decoding_threads(500, 4_000, limit, 0);
            assert_eq!(threads.len(), 500);
            assert!(
                threads.iter().all(|thread| *thread == caller),
                "limit {limit}"
            );
            assert!(!splits(500, 500 * 4_000, limit));
        }
    }

    // A burst on a current-thread runtime is decoded in place; with
    // several workers, in pieces spread over them (the caller's task
    // waits, so its worker decodes pieces too); in order either way.
    #[test]
    fn big_batches_are_decoded_in_pieces_on_the_runtime_workers() {
        let (threads, caller) = decoding_threads(500, 4_000, usize::MAX, 0);
        assert!(threads.iter().all(|thread| *thread == caller));
        // 2 MB: 15 pieces of about 128 KiB, each a task on a worker.
        let (threads, _) = decoding_threads(500, 4_000, usize::MAX, 2);
        assert_eq!(threads.len(), 500);
        let workers = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-worker")
            .build()
            .unwrap();
        let names = workers.block_on(async {
            tokio::spawn(async {
                let text = vec![b'x'; 500 * 4_000];
                let ranges = (0..500).map(|i| i * 4_000..(i + 1) * 4_000).collect();
                decode_detached(Slices { text, ranges }, usize::MAX, |_: &[u8]| {
                    std::thread::current().name().map(str::to_owned)
                })
                .await
            })
            .await
            .unwrap()
        });
        assert!(
            names
                .iter()
                .all(|name| name.as_deref() == Some("test-worker")),
            "{:?}",
            names.first()
        );
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
