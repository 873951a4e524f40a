//! Decoding a batch of independent objects on several threads, in order.
//!
//! A list page holds up to 500 objects and a watch burst can hold as many;
//! decoding them is most of what a source costs, and each object decodes on
//! its own. So a big batch is cut into one contiguous chunk per thread,
//! each chunk decoded on a scoped thread (the calling thread takes the
//! first), and the results are put back together chunk by chunk: the
//! output is exactly what a serial decode gives, same order, same errors at
//! the same positions. Only decoding fans out; the events still leave the
//! source one by one, in order.
//!
//! Scoped threads rather than a pool: they borrow the page text without
//! copying, need no dependency and no global pool that would compete with
//! the async runtime's threads, and starting one costs tens of
//! microseconds, which a batch must be worth several times over before it
//! is split (see [`MIN_BYTES_PER_THREAD`], measured in `benches/decode.rs`).
//! On a machine with one core, or for a small batch, the batch is decoded
//! on the calling thread, exactly as a serial decode.

use std::{num::NonZeroUsize, sync::OnceLock};

/// The least JSON, in bytes, worth a thread of its own: about forty
/// realistic Pods, a millisecond of decoding, against tens of microseconds
/// to start and join a thread.
pub(crate) const MIN_BYTES_PER_THREAD: usize = 128 * 1024;

/// How many threads may decode at once: the cores this process may use.
fn available_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(NonZeroUsize::get)
            .unwrap_or(1)
    })
}

/// How many threads a batch of `len` items and `bytes` bytes is split over.
pub(crate) fn threads_for(len: usize, bytes: usize, available: usize) -> usize {
    available.min(bytes / MIN_BYTES_PER_THREAD).min(len).max(1)
}

/// `items.iter().map(decode).collect()`, on several threads when the batch
/// (`bytes` of JSON in all) is big enough and there are cores to use.
pub(crate) fn decode_all<I, O, F>(items: &[I], bytes: usize, decode: F) -> Vec<O>
where
    I: Sync,
    O: Send,
    F: Fn(&I) -> O + Sync,
{
    decode_on(
        items,
        threads_for(items.len(), bytes, available_threads()),
        decode,
    )
}

/// `items.iter().map(decode).collect()` on `threads` threads.
pub(crate) fn decode_on<I, O, F>(items: &[I], threads: usize, decode: F) -> Vec<O>
where
    I: Sync,
    O: Send,
    F: Fn(&I) -> O + Sync,
{
    if threads <= 1 || items.len() <= 1 {
        return items.iter().map(&decode).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let decode = &decode;
    std::thread::scope(|scope| {
        let mut chunks = items.chunks(chunk);
        let first = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|chunk| {
                let spawned = std::thread::Builder::new()
                    .name("kube-informer-decode".into())
                    .spawn_scoped(scope, move || chunk.iter().map(decode).collect::<Vec<O>>());
                // A thread that cannot be started decodes its chunk here.
                spawned.map_err(|_| chunk)
            })
            .collect();
        let mut out = Vec::with_capacity(items.len());
        out.extend(first.iter().map(decode));
        for other in others {
            match other {
                Ok(handle) => match handle.join() {
                    Ok(decoded) => out.extend(decoded),
                    // A panicking `Deserialize` impl panics here as it would serially.
                    Err(panic) => std::panic::resume_unwind(panic),
                },
                Err(chunk) => out.extend(chunk.iter().map(decode)),
            }
        }
        out
    })
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
            assert_eq!(decode_on(&items, threads, |i| u64::from(*i) * 3), serial);
        }
        assert!(decode_on(&[] as &[u32], 4, |i| *i).is_empty());
    }
}
