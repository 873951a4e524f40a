//! The trace format shared with the Go harness (`conformance/TRACE_FORMAT.md`).

use serde::{Deserialize, Serialize};

/// The first line of a trace: its name and the FIFO's options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// A name for reports; corpus traces use their file name.
    pub trace: String,
    /// What the trace shows, for readers of the corpus; ignored by runners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
    /// Relisted objects are `Replaced` (true) or `Sync` (false).
    #[serde(rename = "emitReplaced")]
    pub emit_replaced: bool,
    /// Whether the FIFO consults known objects, kept up to date from pops.
    #[serde(rename = "knownObjects")]
    pub known_objects: bool,
    /// Whether the trace transform is installed: it rejects objects whose
    /// name starts with `reject` and counts its runs in an annotation.
    #[serde(default)]
    pub transform: bool,
    /// kube-informer only (client-go ignores it): run each Replace as a
    /// streamed relist, `list_start`, `listed` per item, `list_done` (F13),
    /// which must be indistinguishable from client-go's Replace.
    #[serde(
        default,
        rename = "streamedRelist",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub streamed_relist: bool,
}

/// A ConfigMap as a trace names it. No name makes a nameless object (a key
/// error); an empty namespace makes a cluster-scoped key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obj {
    /// The namespace; empty for none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ns: String,
    /// The name; `None` for a nameless object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The resourceVersion.
    pub rv: String,
}

/// One operation of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Op {
    /// `Add(obj)`.
    Add {
        /// The object.
        obj: Obj,
    },
    /// `Update(obj)`.
    Update {
        /// The object.
        obj: Obj,
    },
    /// `Delete(obj)`.
    Delete {
        /// The object.
        obj: Obj,
    },
    /// `Replace(items, rv)`.
    Replace {
        /// The complete list, in order.
        items: Vec<Obj>,
        /// The list's resourceVersion.
        rv: String,
    },
    /// `Resync()`.
    Resync,
    /// Pop one item if any is queued (or the FIFO is closed); else record "empty".
    Pop,
    /// `Close()`.
    Close,
    /// Put the most recently popped deltas back unless the key is pending
    /// (client-go's `AddIfNotPresent`; runs against client-go v0.32).
    Requeue,
}

/// A whole trace: header and operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The options.
    pub header: Header,
    /// The operations, in order.
    pub ops: Vec<Op>,
}

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The trace has no header line.
    #[error("trace has no header line")]
    MissingHeader,
    /// A line is not valid JSON for its place.
    #[error("line {line}: {source}")]
    Json {
        /// 1-based line number.
        line: usize,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
}

impl Trace {
    /// Whether the trace requeues, so it needs client-go v0.32.
    pub fn uses_requeue(&self) -> bool {
        self.ops.iter().any(|op| matches!(op, Op::Requeue))
    }

    /// Parses JSON lines: a header, then operations. Blank lines and an
    /// `{"end":true}` line are ignored.
    ///
    /// # Examples
    ///
    /// ```
    /// use kube_informer_conformance::trace::{Op, Trace};
    ///
    /// let trace = Trace::parse(
    ///     r#"{"trace":"t","emitReplaced":false,"knownObjects":true}
    /// {"op":"resync"}
    /// {"end":true}"#,
    /// )?;
    /// assert_eq!(trace.ops, [Op::Resync]);
    /// # Ok::<(), kube_informer_conformance::trace::TraceError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, TraceError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !is_end_line(l));
        let (n, first) = lines.next().ok_or(TraceError::MissingHeader)?;
        let header = serde_json::from_str(first).map_err(|source| TraceError::Json {
            line: n + 1,
            source,
        })?;
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

    /// The trace as JSON lines, without the end line.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        out.push_str(&serde_json::to_string(&self.header).expect("header serializes"));
        out.push('\n');
        for op in &self.ops {
            out.push_str(&serde_json::to_string(op).expect("op serializes"));
            out.push('\n');
        }
        out
    }
}

/// Whether a line is the `{"end":true}` line that closes a trace on a pipe.
pub fn is_end_line(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v.get("end").and_then(serde_json::Value::as_bool))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_round_trips_through_jsonl() {
        let text = r#"{"trace":"t","emitReplaced":true,"knownObjects":false}
{"op":"add","obj":{"ns":"d","name":"a","rv":"1"}}
{"op":"replace","items":[{"name":"n","rv":"2"},{"rv":"3"}],"rv":"9"}
{"op":"pop"}
{"op":"requeue"}
{"end":true}
"#;
        let trace = Trace::parse(text).unwrap();
        assert_eq!(trace.ops.len(), 4);
        assert!(trace.uses_requeue());
        assert_eq!(Trace::parse(&trace.to_jsonl()).unwrap(), trace);
    }

    #[test]
    fn bad_lines_are_errors_with_line_numbers() {
        assert!(matches!(Trace::parse(""), Err(TraceError::MissingHeader)));
        let err = Trace::parse(
            "{\"trace\":\"t\",\"emitReplaced\":true,\"knownObjects\":true}\n{\"op\":\"fly\"}",
        )
        .unwrap_err();
        assert!(matches!(err, TraceError::Json { line: 2, .. }), "{err}");
    }
}
