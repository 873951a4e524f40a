//! What a simulation run did, as text lines that compare byte for byte.

use std::fmt;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::time::Instant;

use crate::{RecordedRequest, store::State};

/// Collects the lines of a run while it goes, stamped with the simulated
/// time since the start.
#[derive(Debug)]
pub(crate) struct Recorder {
    start: Instant,
    lines: Mutex<Vec<String>>,
}

fn stamp(elapsed: std::time::Duration) -> String {
    format!("{:>5}.{:06}", elapsed.as_secs(), elapsed.subsec_micros())
}

impl Recorder {
    pub(crate) fn new() -> Self {
        Self {
            start: Instant::now(),
            lines: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn line(&self, text: fmt::Arguments<'_>) {
        let line = format!("{} {text}", stamp(self.start.elapsed()));
        self.lines.lock().push(line);
    }

    /// The trace: the lines recorded during the run, then every request
    /// the server received, then every change in its event log.
    pub(crate) fn finish(&self, seed: u64, requests: &[RecordedRequest], state: &State) -> Trace {
        let mut lines = vec![format!("seed {seed}")];
        lines.extend(self.lines.lock().iter().cloned());
        lines.push(format!("requests {}", requests.len()));
        for request in requests {
            let query: Vec<String> = request
                .query
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            lines.push(format!(
                "{} {} {}?{}",
                stamp(request.received_at.saturating_duration_since(self.start)),
                request.method,
                request.path,
                query.join("&")
            ));
        }
        lines.push(format!(
            "events {} (newest resourceVersion {})",
            state.log.len(),
            state.rv
        ));
        for event in &state.log {
            let meta = &event.new["metadata"];
            lines.push(format!(
                "{} {:?} {} {}/{} {:016x}",
                event.rv,
                event.change,
                event.resource,
                meta["namespace"].as_str().unwrap_or(""),
                meta["name"].as_str().unwrap_or(""),
                fnv1a(normalised(&event.new).to_string().as_bytes()),
            ));
        }
        Trace { seed, lines }
    }
}

/// An object without the wall-clock times a server may stamp on it.
fn normalised(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(meta) = object["metadata"].as_object_mut() {
        meta.remove("creationTimestamp");
        meta.remove("deletionTimestamp");
        if let Some(Value::Array(entries)) = meta.get_mut("managedFields") {
            for entry in entries.iter_mut().filter_map(Value::as_object_mut) {
                entry.remove("time");
            }
        }
    }
    object
}

/// 64-bit FNV-1a: a fixed hash, the same in every build.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The record of one simulation run (SI4): the faults the schedule chose
/// and the lines the scenario recorded, each at its simulated time; every
/// request the server received, with its time and query; and every change
/// in the server's event log (resourceVersion, type, resource, key and a
/// hash of the object without its timestamps).
///
/// Two runs of a deterministic scenario with the same seed give equal
/// traces ([`Simulation`](crate::Simulation) says when that holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    seed: u64,
    lines: Vec<String>,
}

impl Trace {
    /// The seed of the run.
    ///
    /// ```
    /// use kube_informer_testing::Simulation;
    ///
    /// let trace = Simulation::new(9).run(|_sim| async {});
    /// assert_eq!(trace.seed(), 9);
    /// ```
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The lines, in order.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// A 64-bit FNV-1a hash of the lines: equal traces have equal
    /// fingerprints, and the same trace has the same fingerprint in every
    /// build.
    ///
    /// ```
    /// use kube_informer_testing::Simulation;
    ///
    /// let run = |seed| Simulation::new(seed).run(|_sim| async {});
    /// assert_eq!(run(1).fingerprint(), run(1).fingerprint());
    /// ```
    pub fn fingerprint(&self) -> u64 {
        fnv1a(self.to_string().as_bytes())
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}
