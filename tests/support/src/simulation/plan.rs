//! The fault schedule a seed gives: asked by the server once per request
//! and once per watch (FT5), it draws from its own stream and writes each
//! decision into the trace.

use std::{sync::Arc, time::Duration};

use serde_json::Value;

use super::{FaultMix, rng::SimRng, trace::Recorder};
use crate::{
    ApiStatus, RecordedRequest, WatchFault,
    faults::{Answer, FaultPlan, WatchSetup, conflict_for, written_object},
};

/// Events a breaking watch may send first: `0..WATCH_BREAK_EVENTS`.
const WATCH_BREAK_EVENTS: u64 = 8;

#[derive(Debug)]
pub(crate) struct SeededPlan {
    rng: SimRng,
    mix: FaultMix,
    recorder: Arc<Recorder>,
    /// What every request takes before its drawn latency (SI8).
    request_time: Duration,
}

impl SeededPlan {
    pub(crate) fn new(
        seed: u64,
        mix: FaultMix,
        recorder: Arc<Recorder>,
        request_time: Duration,
    ) -> Self {
        Self {
            rng: SimRng::new(seed, FAULT_STREAM),
            mix,
            recorder,
            request_time,
        }
    }

    fn error_status(&mut self, request: &RecordedRequest) -> ApiStatus {
        let may_expire = (request.is_list() && request.param("continue").is_some())
            || (request.is_watch()
                && request
                    .param("resourceVersion")
                    .is_some_and(|rv| !rv.is_empty() && rv != "0"));
        let choices = if may_expire { 4 } else { 3 };
        match self.rng.below(choices) {
            0 => ApiStatus::internal_error(),
            1 => ApiStatus::too_many_requests(),
            2 => ApiStatus::service_unavailable(),
            _ => ApiStatus::expired(),
        }
    }
}

/// The stream of the fault schedule (the scenario's is [`super::SCENARIO_STREAM`]).
const FAULT_STREAM: u64 = 1;

impl FaultPlan for SeededPlan {
    fn request(&mut self, request: &RecordedRequest, body: &[u8]) -> Vec<Answer> {
        let mut answers = Vec::new();
        let mut notes = Vec::new();
        let latency = self.rng.up_to(self.mix.max_latency);
        if !latency.is_zero() {
            notes.push(format!("latency {}ms", latency.as_millis()));
        }
        let took = self.request_time + latency;
        if !took.is_zero() {
            answers.push(Answer::Delay(took));
        }
        let status = if self.rng.chance(self.mix.request_errors) {
            Some(self.error_status(request))
        } else {
            written_object(request)
                .filter(|_| has_precondition(&request.method, body))
                .filter(|_| self.rng.chance(self.mix.write_conflicts))
                .map(|(path, name)| conflict_for(&path, &name))
        };
        if let Some(status) = status {
            notes.push(format!("{} {}", status.code, status.reason));
            answers.push(Answer::Status(status));
        }
        if !notes.is_empty() {
            self.recorder.line(format_args!(
                "fault {} {}: {}",
                request.method,
                request.path,
                notes.join(", ")
            ));
        }
        answers
    }

    fn watch(&mut self, request: &RecordedRequest) -> WatchSetup {
        let mut setup = WatchSetup::default();
        let mut notes = Vec::new();
        if self.rng.chance(self.mix.watch_breaks) {
            let after = self.rng.below(WATCH_BREAK_EVENTS) as usize;
            let fault = match self.rng.below(3) {
                0 => WatchFault::DropConnection,
                1 => WatchFault::End,
                _ => WatchFault::ErrorEvent(ApiStatus::expired()),
            };
            notes.push(format!("{fault:?} after {after} events"));
            setup.faults.push((after, fault));
        }
        if self.rng.chance(self.mix.watch_lag) {
            let lag = self.rng.up_to(self.mix.max_watch_lag);
            if lag > Duration::ZERO {
                notes.push(format!("lag {}ms", lag.as_millis()));
                setup.lag = Some(lag);
            }
        }
        if !notes.is_empty() {
            self.recorder.line(format_args!(
                "fault watch {}: {}",
                request.path,
                notes.join(", ")
            ));
        }
        setup
    }
}

/// The schedule once faults stop (SI7): no faults, only the request
/// time every request takes (SI8).
#[derive(Debug)]
pub(crate) struct QuietPlan {
    pub(crate) request_time: Duration,
}

impl FaultPlan for QuietPlan {
    fn request(&mut self, _: &RecordedRequest, _: &[u8]) -> Vec<Answer> {
        if self.request_time.is_zero() {
            Vec::new()
        } else {
            vec![Answer::Delay(self.request_time)]
        }
    }

    fn watch(&mut self, _: &RecordedRequest) -> WatchSetup {
        WatchSetup::default()
    }
}

/// Whether a write carries a resourceVersion precondition, the only kind
/// the API server can refuse with a conflict.
fn has_precondition(method: &str, body: &[u8]) -> bool {
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let set = |v: &Value| v.as_str().is_some_and(|rv| !rv.is_empty());
    match (method, &body) {
        ("DELETE", _) => set(&body["preconditions"]["resourceVersion"]),
        // A JSON patch: a `test` of the resourceVersion.
        (_, Value::Array(operations)) => operations.iter().any(|op| {
            op["op"] == "test" && op["path"] == "/metadata/resourceVersion" && set(&op["value"])
        }),
        _ => set(&body["metadata"]["resourceVersion"]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si3_only_writes_with_a_resource_version_precondition_may_conflict() {
        assert!(has_precondition(
            "PUT",
            br#"{"metadata":{"resourceVersion":"4"}}"#
        ));
        assert!(!has_precondition("PUT", br#"{"metadata":{"name":"a"}}"#));
        assert!(has_precondition(
            "PATCH",
            br#"[{"op":"test","path":"/metadata/resourceVersion","value":"4"}]"#
        ));
        assert!(!has_precondition(
            "PATCH",
            br#"[{"op":"add","path":"/data","value":{}}]"#
        ));
        assert!(has_precondition(
            "DELETE",
            br#"{"preconditions":{"resourceVersion":"4"}}"#
        ));
        assert!(!has_precondition("DELETE", b""));
        assert!(!has_precondition("PATCH", b"not json"));
    }
}
