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
//! watch replaced (`benches/compare/NOTES.md`, "Peak RSS and glibc's
//! heaps").
//! Decoded on the workers, the list's objects and their replacements share
//! arenas. Why pieces: no task of the program waits behind more than one
//! piece (about a millisecond) on its worker, and the caller's task is free
//! while the pieces decode (a list fetches its next page meanwhile).
//!
//! [`decode_all`] and [`decode_on`] (the decode benchmark and the tests,
//! which call without awaiting) split over scoped threads of their own;
//! an informer never calls them.

use super::headroom;
use futures::StreamExt as _;
use std::{
    num::NonZeroUsize,
    ops::{Index, Range},
    panic,
    sync::{Arc, OnceLock},
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

/// `items.iter().map(decode).collect()`, split over several threads, at
/// most `limit`, when the batch (`bytes` of JSON in all) is big enough.
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

/// `items.iter().map(decode).collect()` in up to `threads` chunks, the
/// first on the calling thread and each other on a scoped thread of its
/// own, blocking the caller until all are done; `bytes` is the batch's
/// JSON, for the room each thread makes in its heap first (`headroom`). A
/// panicking `decode` panics here, with its own payload, as it would
/// serially. For callers that cannot await: the decode benchmark
/// (`unstable::decode`) and the tests; informers decode with
/// [`decode_detached`].
pub(crate) fn decode_on<I, O, F>(items: &[I], threads: usize, bytes: usize, decode: F) -> Vec<O>
where
    I: Sync,
    O: Send,
    F: Fn(&I) -> O + Sync,
{
    let parts = threads.clamp(1, items.len().max(1));
    let chunk = items.len().div_ceil(parts).max(1);
    let chunk_bytes = bytes / parts;
    let decode_chunk = |chunk: &[I]| -> Vec<O> {
        headroom::make_room(chunk_bytes);
        chunk.iter().map(&decode).collect()
    };
    let mut chunks = items.chunks(chunk);
    let Some(first) = chunks.next() else {
        return Vec::new();
    };
    std::thread::scope(|scope| {
        let others: Vec<_> = chunks
            .map(|chunk| scope.spawn(|| decode_chunk(chunk)))
            .collect();
        let mut out = Vec::with_capacity(items.len());
        out.extend(decode_chunk(first));
        for other in others {
            match other.join() {
                Ok(decoded) => out.extend(decoded),
                Err(payload) => panic::resume_unwind(payload),
            }
        }
        out
    })
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
    if !splits(len, bytes, limit) {
        return slices.decode(0..len, &decode);
    }
    let runtime = tokio::runtime::Handle::current();
    let in_flight = threads_for(len, bytes, available_threads().min(limit));
    // Pieces of about a millisecond of decoding each, as tasks on the
    // runtime's workers, at most `in_flight` at once: the objects come from
    // the heaps of the threads that decode the watch's small batches too,
    // and no piece holds a worker long.
    let pieces = (bytes / MIN_BYTES_PER_THREAD).clamp(1, len);
    let chunk = len.div_ceil(pieces);
    let piece_bytes = bytes / pieces;
    let piece = move |start: usize| start..(start + chunk).min(len);
    let work = Arc::new((slices, decode));
    let spawn = |start: usize| {
        let work = Arc::clone(&work);
        Spawned(runtime.spawn(async move {
            headroom::make_room(piece_bytes);
            let (slices, decode) = &*work;
            slices.decode(piece(start), decode)
        }))
    };
    let mut decoded = futures::stream::iter((0..len).step_by(chunk).map(spawn)).buffered(in_flight);
    let mut out = Vec::with_capacity(len);
    while let Some(objects) = futures::StreamExt::next(&mut decoded).await {
        match objects {
            Ok(objects) => out.extend(objects),
            Err(error) if error.is_panic() => panic::resume_unwind(error.into_panic()),
            // Cancelled before it ran (the runtime is shutting down): that
            // piece here, so the batch stays whole and in order.
            Err(_) => {
                let (slices, decode) = &*work;
                out.extend(slices.decode(piece(out.len()), decode));
            }
        }
    }
    out
}

impl<T: Index<Range<usize>>> Slices<T> {
    /// `decode` applied to the objects `items` (indexes into `ranges`), in
    /// order, here.
    fn decode<O, F: Fn(&T::Output) -> O>(&self, items: Range<usize>, decode: &F) -> Vec<O> {
        self.ranges[items]
            .iter()
            .map(|range| decode(&self.text[range.clone()]))
            .collect()
    }
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
    use std::panic::AssertUnwindSafe;

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

    /// The message a panic carried.
    fn message(payload: Box<dyn std::any::Any + Send>) -> String {
        payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default()
    }

    // A decode that panics on another thread panics in the caller, with
    // its own message, blocking or awaited.
    #[test]
    fn a_panicking_decode_panics_in_the_caller_with_its_message() {
        let items: Vec<u32> = (0..1000).collect();
        let decode = |i: &u32| {
            if *i == 900 {
                panic!("item {i} is bad");
            }
            *i
        };
        let blocking = std::panic::catch_unwind(|| decode_on(&items, 3, 0, decode));
        assert_eq!(message(blocking.unwrap_err()), "item 900 is bad");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let awaited = std::panic::catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(async {
                let text = vec![b'x'; 1000 * 4_000];
                let ranges = (0..1000).map(|i| i * 4_000..(i + 1) * 4_000).collect();
                decode_detached(Slices { text, ranges }, usize::MAX, |object: &[u8]| {
                    assert_ne!(object.len(), 4_000, "a bad object");
                })
                .await
            })
        }));
        let message = message(awaited.unwrap_err());
        assert!(message.contains("a bad object"), "{message}");
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
