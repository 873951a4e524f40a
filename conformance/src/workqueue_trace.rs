//! Work queue traces (`conformance/TRACE_FORMAT.md`, "Work queue traces"):
//! operations on one queue of string items, run through client-go's
//! `TypedRateLimitingQueue` by `workqueue-trace` and through our
//! [`WorkQueue`](kube_informer::queue::WorkQueue) by
//! [`workqueue_runner`](crate::workqueue_runner).

use serde::{Deserialize, Serialize};

use crate::trace::TraceError;

/// The first line of a work queue trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WqHeader {
    /// A name for reports; corpus traces use their file name.
    pub workqueue: String,
    /// What the trace shows, for readers of the corpus; ignored by runners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
    /// Runs our queue with `backoff_holds(true)` (W13), which differs from
    /// client-go on purpose; the Go harness ignores it. Such traces live in
    /// `workqueue-traces/backoff-holds/`, with a written expectation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backoff_holds: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One operation of a work queue trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum WqOp {
    /// `Add(item)`.
    Add {
        /// The item.
        item: String,
    },
    /// `AddAfter(item, ms)`.
    AddAfter {
        /// The item.
        item: String,
        /// The delay in milliseconds.
        ms: u64,
    },
    /// `AddRateLimited(item)` with client-go's default controller limiter;
    /// the output shows the delay it chose.
    AddRateLimited {
        /// The item.
        item: String,
    },
    /// `Forget(item)`.
    Forget {
        /// The item.
        item: String,
    },
    /// `NumRequeues(item)`.
    Requeues {
        /// The item.
        item: String,
    },
    /// `Get()`, never blocking: `empty` when nothing is queued on an open
    /// queue, else an item or `shutdown`.
    Get,
    /// `Done` of an item the harness holds: `item` by name, else the
    /// `nth` held (modulo the number held, oldest first); `not held` when
    /// there is none.
    Done {
        /// The item to release, if named.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        item: Option<String>,
        /// Which held item to release when none is named.
        #[serde(default, skip_serializing_if = "is_zero")]
        nth: u64,
    },
    /// `ShutDown()`.
    Shutdown,
    /// Moves the clock forward (client-go: the fake clock; ours: tokio's
    /// paused clock).
    Advance {
        /// Milliseconds.
        ms: u64,
    },
}

/// A work queue trace: header and operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WqTrace {
    /// The header.
    pub header: WqHeader,
    /// The operations, in order.
    pub ops: Vec<WqOp>,
}

impl WqTrace {
    /// Parses JSON lines: a header, then one operation per line.
    pub fn parse(text: &str) -> Result<Self, TraceError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or(TraceError::MissingHeader)?;
        let header =
            serde_json::from_str(first).map_err(|source| TraceError::Json { line: 1, source })?;
        let ops = lines
            .map(|(n, l)| {
                serde_json::from_str(l).map_err(|source| TraceError::Json {
                    line: n + 1,
                    source,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { header, ops })
    }

    /// The trace as JSON lines, header first.
    pub fn to_jsonl(&self) -> String {
        let mut out = serde_json::to_string(&self.header).expect("a header serializes");
        out.push('\n');
        for op in &self.ops {
            out.push_str(&serde_json::to_string(op).expect("an op serializes"));
            out.push('\n');
        }
        out
    }
}
