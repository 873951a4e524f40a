//! Drives the Go harness (`conformance/go`, program `fifo-trace`): one long
//! running process fed trace after trace over stdin, so thousands of traces
//! cost one process start.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
};

use serde_json::Value;

use crate::trace::{Trace, is_end_line};

/// Why the Go harness could not answer.
#[derive(Debug, thiserror::Error)]
pub enum GoError {
    /// The binary could not be started.
    #[error("cannot start {path}: {source}")]
    Spawn {
        /// The binary.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Reading or writing the pipe failed.
    #[error("pipe to the go harness failed: {0}")]
    Io(#[from] std::io::Error),
    /// The harness exited before answering; its stderr (printed above) says why.
    #[error("go harness exited early ({status}); its stderr is above")]
    Exited {
        /// How it exited.
        status: String,
    },
    /// The harness printed a line that is not JSON.
    #[error("go harness printed a line that is not json: {line:?}")]
    BadLine {
        /// The line.
        line: String,
    },
}

/// A running `fifo-trace` process.
#[derive(Debug)]
pub struct GoHarness {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl GoHarness {
    /// Starts the harness binary at `path`.
    pub fn start(path: &Path) -> Result<Self, GoError> {
        let mut child = Command::new(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Inherited, not piped: nobody would drain a pipe between
            // traces, and a full pipe would stall the harness.
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|source| GoError::Spawn {
                path: path.to_owned(),
                source,
            })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        Ok(Self {
            child,
            stdin,
            stdout,
        })
    }

    /// Runs one trace and returns one JSON value per operation.
    ///
    /// The harness answers only after reading the end line, so writing the
    /// whole trace first cannot deadlock on full pipes.
    pub fn run(&mut self, trace: &Trace) -> Result<Vec<Value>, GoError> {
        self.run_text(&trace.to_jsonl())
    }

    /// Runs one trace or script given as JSON lines (header first, no end
    /// line) and returns one JSON value per operation or step.
    pub fn run_text(&mut self, jsonl: &str) -> Result<Vec<Value>, GoError> {
        let mut input = jsonl.trim_end().to_owned();
        input.push_str("\n{\"end\":true}\n");
        if let Err(e) = self
            .stdin
            .write_all(input.as_bytes())
            .and_then(|()| self.stdin.flush())
        {
            return Err(self.exited().unwrap_or(GoError::Io(e)));
        }
        let mut lines = Vec::new();
        let mut first = true;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                return Err(self.exited().unwrap_or(GoError::Exited {
                    status: "stdout closed".to_owned(),
                }));
            }
            if is_end_line(&line) {
                return Ok(lines);
            }
            let value: Value =
                serde_json::from_str(&line).map_err(|_| GoError::BadLine { line: line.clone() })?;
            // The first line echoes the trace or script name.
            if first && (value.get("trace").is_some() || value.get("script").is_some()) {
                first = false;
                continue;
            }
            first = false;
            lines.push(value);
        }
    }

    fn exited(&mut self) -> Option<GoError> {
        let status = self.child.try_wait().ok().flatten();
        status.map(|status| GoError::Exited {
            status: status.to_string(),
        })
    }
}

impl Drop for GoHarness {
    fn drop(&mut self) {
        // Closing stdin ends the harness's read loop; wait so no zombie stays.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
