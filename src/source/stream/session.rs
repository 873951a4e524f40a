//! An open watch: how one is opened, its body, what it delivered so far,
//! and the lines it has read and decoded but not yet handed out.

use std::{collections::VecDeque, io, time::Duration};

use serde::de::DeserializeOwned;
use tokio::time::Instant;

use crate::source::{
    Watchable,
    decode::{
        Decoder,
        parallel::{self, Slices},
    },
    error::{DecodeTarget, Error},
    lines::{Read, WatchBody},
    target::{Target, WatchQuery},
    watch::{WatchLine, parse_event},
};

/// How much longer than its requested timeout a watch may stay silent
/// before its connection is taken for dead (R10). The server ends a healthy
/// watch at its timeout; the margin covers its timer's slack and the
/// network.
pub(crate) const WATCH_IDLE_MARGIN: Duration = Duration::from_secs(30);

/// Opens a watch; a start that hangs past the idle limit counts as idle
/// (R10). Takes the target alone: the state holds a session, which is not
/// `Sync`, and this future must be `Send`.
pub(super) async fn open_watch<T>(target: &Target, query: &WatchQuery) -> Result<Session<T>, Error>
where
    T: Watchable,
{
    let idle = query.timeout.saturating_add(WATCH_IDLE_MARGIN);
    tracing::debug!(
        resource_version = %query.resource_version,
        timeout_secs = query.timeout.as_secs(),
        streaming = query.send_initial_events,
        "watch started"
    );
    match tokio::time::timeout(idle, target.watch(query)).await {
        Ok(Ok(body)) => Ok(Session::new(body, idle)),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(idle_error(target, idle)),
    }
}

/// R10: the watch said nothing for `idle`.
pub(super) fn idle_error(target: &Target, idle: Duration) -> Error {
    tracing::debug!(?idle, "watch idle deadline passed");
    Error::WatchIdle {
        resource: target.name().to_owned(),
        idle,
    }
}

/// A watch ending this fast without any event is treated as a failure.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// What the next step of a watch gave.
pub(super) enum Received<T> {
    /// One line, decoded (blank lines are skipped).
    Line(Result<WatchLine<T>, Error>),
    /// The server ended the watch.
    Ended,
    /// The connection broke.
    Broke(io::Error),
    /// Nothing arrived for the idle limit (R10).
    Idle(Duration),
}

/// An open watch and what it delivered so far.
pub(super) struct Session<T> {
    body: WatchBody,
    started: Instant,
    /// Lines handed out, blank ones aside.
    pub(super) events: usize,
    /// How long the watch may stay silent.
    idle: Duration,
    /// Lines read together and decoded together, waiting to be handed out.
    decoded: VecDeque<Result<WatchLine<T>, Error>>,
}

impl<T: DeserializeOwned + Send + 'static> Session<T> {
    pub(super) fn new(body: WatchBody, idle: Duration) -> Self {
        Self {
            body,
            started: Instant::now(),
            events: 0,
            idle,
            decoded: VecDeque::new(),
        }
    }

    /// The next line, decoded. Lines that arrived together are decoded
    /// together: in place when they are few, off this thread and on several
    /// threads when there are enough of them.
    pub(super) async fn next(&mut self, decoder: &Decoder) -> Received<T> {
        loop {
            if let Some(line) = self.decoded.pop_front() {
                return Received::Line(line);
            }
            match self.body.read(self.idle).await {
                Read::Lines(lines) => {
                    let framing = lines.framing();
                    let lines: Vec<&[u8]> = lines.collect();
                    let bytes: usize = lines.iter().map(|line| line.len()).sum();
                    let limit = decoder.thread_limit();
                    let decoded = if parallel::splits(lines.len(), bytes, limit) {
                        // A burst: in pieces, as tasks on the runtime's
                        // workers, while this task waits. The lines are
                        // copied out of the body's buffer, which the next
                        // read reuses.
                        let mut text = Vec::with_capacity(bytes);
                        let ranges = lines
                            .iter()
                            .map(|line| {
                                let start = text.len();
                                text.extend_from_slice(line);
                                start..text.len()
                            })
                            .collect();
                        let decoder = decoder.clone();
                        parallel::decode_detached(
                            Slices { text, ranges },
                            limit,
                            move |line: &[u8]| parse_event(line, framing, &decoder),
                        )
                        .await
                    } else {
                        // A few events, as a server that flushes each one
                        // sends them, or any batch of an informer limited
                        // to one thread: here, waking nothing.
                        lines
                            .iter()
                            .map(|line| parse_event(line, framing, decoder))
                            .collect()
                    };
                    self.decoded
                        .extend(decoded.into_iter().filter_map(Result::transpose));
                }
                Read::End => return Received::Ended,
                Read::Failed(error) => return Received::Broke(error),
                Read::Idle => return Received::Idle(self.idle),
                // As a line that is not JSON: the watch cannot go on.
                Read::BadFrame(error) => {
                    return Received::Line(Err(crate::source::decode::protobuf_error(
                        error,
                        DecodeTarget::WatchLine,
                    )));
                }
            }
        }
    }

    /// After the watch ended: fine, unless it died young and empty (R3),
    /// which hints at a server in trouble.
    pub(super) fn check_lifetime(&self) -> Result<(), Error> {
        let lived = self.started.elapsed();
        if self.events == 0 && lived < VERY_SHORT_WATCH {
            Err(Error::VeryShortWatch(lived))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::{
            Arc,
            atomic::{AtomicUsize, Ordering},
        },
        thread::{self, ThreadId},
    };

    use super::*;

    /// Whatever object it is given, and the thread that decoded it.
    struct DecodedOn(ThreadId);

    impl<'de> serde::Deserialize<'de> for DecodedOn {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            serde::de::IgnoredAny::deserialize(deserializer)?;
            Ok(Self(thread::current().id()))
        }
    }

    /// Which threads decoded a burst of 500 lines (2 MB) read at once by
    /// a watch of a runtime with one worker, and the worker's thread; and
    /// how often another task of the runtime ran while the burst decoded.
    fn decoding_threads(decoder: &Decoder) -> (Vec<ThreadId>, ThreadId, usize) {
        let data = "x".repeat(4_000);
        let lines: String = (0..500)
            .map(|i| {
                format!(
                    r#"{{"type":"ADDED","object":{{"metadata":{{"name":"o-{i}"}},"data":{{"k":"{data}"}}}}}}"#
                ) + "\n"
            })
            .collect();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let decoder = decoder.clone();
        runtime.block_on(async move {
            tokio::spawn(async move {
                let ticks = Arc::new(AtomicUsize::new(0));
                let ticker = tokio::spawn({
                    let ticks = Arc::clone(&ticks);
                    async move {
                        loop {
                            ticks.fetch_add(1, Ordering::Relaxed);
                            tokio::task::yield_now().await;
                        }
                    }
                });
                tokio::task::yield_now().await;
                let body = WatchBody::new(
                    Box::pin(futures::io::Cursor::new(lines.into_bytes())),
                    crate::source::lines::Framing::Lines,
                );
                let mut session = Session::<DecodedOn>::new(body, Duration::from_secs(60));
                let mut threads = Vec::new();
                let before = ticks.load(Ordering::Relaxed);
                loop {
                    match session.next(&decoder).await {
                        Received::Line(Ok(WatchLine::Object(_, DecodedOn(thread)))) => {
                            threads.push(thread);
                        }
                        Received::Ended => break,
                        _ => panic!("not an object, nor the end"),
                    }
                }
                let during = ticks.load(Ordering::Relaxed) - before;
                ticker.abort();
                (threads, thread::current().id(), during)
            })
            .await
            .unwrap()
        })
    }

    // `decode_threads(1)`: a burst is decoded on the thread that read it,
    // in one go.
    #[test]
    fn a_burst_stays_on_the_reading_thread_with_one_decode_thread() {
        let (threads, reader, _) = decoding_threads(&Decoder::new().max_threads(Some(1)));
        assert_eq!(threads.len(), 500);
        assert!(threads.iter().all(|thread| *thread == reader));
    }

    // By default the same burst is decoded in pieces, as tasks of the
    // runtime (here its one worker), and the runtime's other tasks run
    // between them (unless there is one core: then in one go).
    #[test]
    fn a_burst_is_decoded_in_pieces_that_let_other_tasks_run() {
        let (threads, worker, during) = decoding_threads(&Decoder::new());
        assert_eq!(threads.len(), 500);
        assert!(threads.iter().all(|thread| *thread == worker));
        if thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
            assert!(during > 0, "no other task ran while the burst decoded");
        }
    }
}
