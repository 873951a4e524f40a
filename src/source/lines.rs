//! A watch body cut into lines at the byte level, in batches; or, for a
//! protobuf watch, into frames of a 4-byte big-endian length and that many
//! bytes (the same batches, the same idle limit).
//!
//! Reading with `AsyncBufReadExt::lines` costs a `String` and a UTF-8 pass
//! per line before the JSON parser looks at it again. Here the bytes go
//! into one reused buffer and lines are handed out as slices of it; the
//! JSON parser checks what it reads. Whatever else has already arrived
//! when a line is complete is taken in the same batch without waiting, so
//! a burst of events can be decoded together (on several threads when it
//! is big, see `decode::parallel`).
//!
//! Every read from the connection is bounded by an idle limit (R10): a
//! watch that sends nothing at all, not even part of a line, for that long
//! is reported as idle.

use std::{io, pin::Pin, time::Duration};

use futures::{AsyncBufRead, AsyncBufReadExt, FutureExt};

use crate::protobuf::DEFAULT_MAX_FRAME;

/// The most bytes taken into one batch without waiting: bounds the buffer
/// when the server sends faster than objects are decoded.
const MAX_BATCH_BYTES: usize = 1 << 20;

/// The raw body of a watch response.
pub(crate) type Body = Pin<Box<dyn AsyncBufRead + Send>>;

/// How a watch body is cut into events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// JSON: one event per line.
    Lines,
    /// Protobuf: a 4-byte big-endian length, then that many bytes.
    LengthPrefixed,
}

/// What one read gave.
#[derive(Debug)]
pub(crate) enum Read<'a> {
    /// One or more whole lines, without their line ends.
    Lines(Lines<'a>),
    /// The body ended normally.
    End,
    /// The connection broke.
    Failed(io::Error),
    /// Nothing arrived for the idle limit.
    Idle,
    /// A frame longer than [`DEFAULT_MAX_FRAME`], or the body ended inside
    /// one: the stream cannot be read on.
    BadFrame(crate::protobuf::Error),
}

/// A watch body, read line by line.
pub(crate) struct WatchBody {
    body: Body,
    framing: Framing,
    buf: Vec<u8>,
    /// Bytes at the front of `buf` already handed out.
    handed_out: usize,
    /// How far `buf` is known to hold no line end; with frames, where the
    /// first frame not yet whole starts.
    scanned: usize,
    /// A frame length above the limit, met at `scanned`.
    too_large: Option<u64>,
    ended: bool,
    /// An error met while taking more bytes after a complete line; reported
    /// on the next read, after the lines before it.
    failed: Option<io::Error>,
}

impl std::fmt::Debug for WatchBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchBody")
            .field("buffered", &(self.buf.len() - self.handed_out))
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl WatchBody {
    pub(crate) fn new(body: Body, framing: Framing) -> Self {
        Self {
            body,
            framing,
            buf: Vec::new(),
            handed_out: 0,
            scanned: 0,
            too_large: None,
            ended: false,
            failed: None,
        }
    }

    /// Waits for at least one whole line (or the end), then also takes
    /// whatever bytes are already there. Cancel safe: bytes read before a
    /// cancellation stay in the buffer.
    pub(crate) async fn read(&mut self, idle: Duration) -> Read<'_> {
        self.buf.drain(..self.handed_out);
        self.scanned -= self.handed_out;
        self.handed_out = 0;
        loop {
            if let Some(end) = self.last_end() {
                self.take_ready();
                let end = self.last_end().unwrap_or(end);
                return Read::Lines(self.hand_out(end));
            }
            if let Some(len) = self.too_large {
                return Read::BadFrame(crate::protobuf::Error::FrameTooLarge {
                    len,
                    max: DEFAULT_MAX_FRAME,
                });
            }
            if let Some(error) = self.failed.take() {
                return Read::Failed(error);
            }
            if self.ended {
                return match (self.buf.len(), self.framing) {
                    (0, _) => Read::End,
                    // A last line without a line end still counts.
                    (len, Framing::Lines) => Read::Lines(self.hand_out(len)),
                    (_, Framing::LengthPrefixed) => Read::BadFrame(
                        crate::protobuf::Error::Truncated("the watch stream ends inside a frame"),
                    ),
                };
            }
            match tokio::time::timeout(idle, self.body.fill_buf()).await {
                Err(_) => return Read::Idle,
                Ok(Err(error)) => return Read::Failed(error),
                Ok(Ok(bytes)) => {
                    if bytes.is_empty() {
                        self.ended = true;
                    } else {
                        let len = bytes.len();
                        self.buf.extend_from_slice(bytes);
                        self.body.as_mut().consume(len);
                    }
                }
            }
        }
    }

    /// Takes bytes that are ready now, without waiting, up to the batch limit.
    fn take_ready(&mut self) {
        while !self.ended && self.failed.is_none() && self.buf.len() < MAX_BATCH_BYTES {
            match self.body.fill_buf().now_or_never() {
                None => return,
                Some(Err(error)) => self.failed = Some(error),
                Some(Ok([])) => self.ended = true,
                Some(Ok(bytes)) => {
                    let len = bytes.len();
                    self.buf.extend_from_slice(bytes);
                    self.body.as_mut().consume(len);
                }
            }
        }
    }

    /// The end of the last whole line or frame in the buffer, if any.
    fn last_end(&mut self) -> Option<usize> {
        match self.framing {
            Framing::Lines => self.last_line_end(),
            Framing::LengthPrefixed => self.last_frame_end(),
        }
    }

    /// The end of the last whole frame, walking the lengths from the first
    /// frame not known whole; a length above the limit stops the walk.
    fn last_frame_end(&mut self) -> Option<usize> {
        let start = self.scanned;
        while self.too_large.is_none() {
            let Some(length) = self
                .buf
                .get(self.scanned..)
                .and_then(|b| b.first_chunk::<4>())
            else {
                break;
            };
            let len = u32::from_be_bytes(*length) as usize;
            if len > DEFAULT_MAX_FRAME {
                self.too_large = Some(len as u64);
                break;
            }
            if self.buf.len() - self.scanned - 4 < len {
                break;
            }
            self.scanned += 4 + len;
        }
        (self.scanned > start).then_some(self.scanned)
    }

    /// The position after the last `\n` in the buffer, if any.
    fn last_line_end(&mut self) -> Option<usize> {
        let found = memchr::memrchr(b'\n', &self.buf[self.scanned..]).map(|i| self.scanned + i + 1);
        if found.is_none() {
            self.scanned = self.buf.len();
        }
        found
    }

    /// Hands out the lines before `end`, which is the last line end in the
    /// buffer (or the buffer's end), so nothing after it needs scanning again.
    fn hand_out(&mut self, end: usize) -> Lines<'_> {
        self.handed_out = end;
        if self.framing == Framing::Lines {
            self.scanned = self.buf.len();
        }
        Lines {
            rest: &self.buf[..end],
            framing: self.framing,
        }
    }
}

/// Whole lines from one read, without their `\n` (or `\r\n`); or whole
/// frames, without their length.
#[derive(Debug)]
pub(crate) struct Lines<'a> {
    rest: &'a [u8],
    framing: Framing,
}

impl Lines<'_> {
    /// How the events were cut.
    pub(crate) fn framing(&self) -> Framing {
        self.framing
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        if self.framing == Framing::LengthPrefixed {
            // Whole frames only are handed out: the lengths were walked.
            let (length, rest) = self.rest.split_first_chunk::<4>()?;
            let len = u32::from_be_bytes(*length) as usize;
            let frame = rest.get(..len)?;
            self.rest = rest.get(len..).unwrap_or_default();
            return Some(frame);
        }
        // memchr scans a word or a vector register at a time; a byte loop
        // over a 4 KB Pod line cost about 1.5% of a burst's CPU.
        let (line, rest) = match memchr::memchr(b'\n', self.rest) {
            Some(i) => (&self.rest[..i], &self.rest[i + 1..]),
            None => (self.rest, &[][..]),
        };
        self.rest = rest;
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    }
}

#[cfg(test)]
mod tests {
    use futures::{StreamExt, TryStreamExt};

    use super::*;

    fn body(chunks: Vec<io::Result<&'static [u8]>>) -> WatchBody {
        let stream = futures::stream::iter(chunks);
        WatchBody::new(Box::pin(stream.into_async_read()), Framing::Lines)
    }

    async fn all_lines(mut body: WatchBody) -> (Vec<Vec<String>>, &'static str) {
        let mut batches = Vec::new();
        loop {
            match body.read(Duration::from_secs(1)).await {
                Read::Lines(lines) => batches.push(
                    lines
                        .map(|l| String::from_utf8(l.to_vec()).unwrap())
                        .collect(),
                ),
                Read::End => return (batches, "end"),
                Read::Failed(_) => return (batches, "failed"),
                Read::Idle => return (batches, "idle"),
                Read::BadFrame(_) => return (batches, "bad frame"),
            }
        }
    }

    #[tokio::test]
    async fn lines_across_chunks_come_out_whole_and_in_order() {
        let (batches, end) = all_lines(body(vec![
            Ok(b"{\"a\":1}\n{\"b\""),
            Ok(b":2}\r\n\n{\"c\":3}\n"),
            Ok(b"{\"d\":4}"),
        ]))
        .await;
        let lines: Vec<String> = batches.concat();
        assert_eq!(
            lines,
            [r#"{"a":1}"#, r#"{"b":2}"#, "", r#"{"c":3}"#, r#"{"d":4}"#]
        );
        assert_eq!(end, "end");
        assert!(
            batches.len() < lines.len(),
            "ready chunks are batched: {batches:?}"
        );
    }

    #[tokio::test]
    async fn an_error_comes_after_the_lines_before_it() {
        let (batches, end) = all_lines(body(vec![
            Ok(b"one\ntwo\nthr"),
            Err(io::Error::other("reset")),
        ]))
        .await;
        assert_eq!(batches.concat(), ["one", "two"]);
        assert_eq!(end, "failed");
    }

    /// R10: a body that sends nothing is reported idle after the limit.
    #[tokio::test(start_paused = true)]
    async fn r10_a_silent_body_is_idle_after_the_limit() {
        let silent = futures::stream::iter([Ok::<_, io::Error>(&b"one\ntw"[..])])
            .chain(futures::stream::pending());
        let mut body = WatchBody::new(Box::pin(silent.into_async_read()), Framing::Lines);
        let started = tokio::time::Instant::now();
        assert!(matches!(
            body.read(Duration::from_secs(5)).await,
            Read::Lines(_)
        ));
        assert!(matches!(
            body.read(Duration::from_secs(5)).await,
            Read::Idle
        ));
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    /// R10: any byte is traffic: a line trickling in slower than the limit
    /// as a whole, but never silent for the limit, is not idle.
    #[tokio::test(start_paused = true)]
    async fn r10_any_byte_counts_as_traffic() {
        let trickle =
            futures::stream::iter(["{\"a\"", ":", "1", "}", "\n"]).then(|part| async move {
                tokio::time::sleep(Duration::from_secs(4)).await;
                Ok::<_, io::Error>(part.as_bytes())
            });
        let mut body = WatchBody::new(
            Box::pin(Box::pin(trickle).into_async_read()),
            Framing::Lines,
        );
        match body.read(Duration::from_secs(5)).await {
            Read::Lines(mut lines) => assert_eq!(lines.next(), Some(&br#"{"a":1}"#[..])),
            other => panic!("{other:?}"),
        }
        assert!(matches!(body.read(Duration::from_secs(5)).await, Read::End));
    }
}
