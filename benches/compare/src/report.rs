//! The one JSON line each run prints; the Go runner prints the same fields.

use serde::Serialize;
use serde_json::Value;

/// The figures of one run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// Which runner.
    pub runner: String,
    /// N: objects in the initial list.
    pub objects: u64,
    /// U: watch events that add or modify.
    pub updates: u64,
    /// D: deletes.
    pub deletes: u64,
    /// S: subscribers.
    pub subscribers: usize,
    /// Whether subscriber 0 slept 1 ms per notification.
    pub slow: bool,
    /// Events fed: N + U + D.
    pub events: u64,
    /// Notifications each subscriber gets (runners differ: see NOTES.md, "How each runner works, and what its figures mean").
    pub deliveries_per_subscriber: u64,
    /// Clocked time until every fast subscriber had seen everything.
    pub seconds: f64,
    /// Clocked time of the initial list alone.
    pub list_seconds: f64,
    /// Resident bytes after loading the workload, before feeding it.
    pub rss_before: u64,
    /// Resident bytes once the initial list was seen (not taken in the slow variant).
    pub rss_after_list: Option<u64>,
    /// Peak resident bytes during the run.
    pub peak_rss: u64,
    /// Slow variant: notifications the slow subscriber had yet to see when the others were done.
    pub slow_backlog: Option<u64>,
    /// Slow variant, runner (a) only: notifications waiting in the slow
    /// subscriber's queue when the others were done (`Subscription::pending`).
    pub slow_queued: Option<u64>,
}

impl Report {
    /// Events fed per clocked second.
    pub fn events_per_second(&self) -> f64 {
        self.events as f64 / self.seconds
    }

    /// Resident growth over the initial list, per listed object.
    pub fn bytes_per_object(&self) -> Option<f64> {
        let after = self.rss_after_list?;
        Some((after as f64 - self.rss_before as f64) / self.objects as f64)
    }

    /// The report as one JSON object, derived figures included.
    pub fn to_json(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(fields) = &mut value {
            fields.insert("events_per_second".into(), self.events_per_second().into());
            fields.insert("bytes_per_object".into(), self.bytes_per_object().into());
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_figures() {
        let report = Report {
            runner: "floor".into(),
            objects: 100,
            updates: 50,
            deletes: 10,
            subscribers: 4,
            slow: false,
            events: 160,
            deliveries_per_subscriber: 160,
            seconds: 0.5,
            list_seconds: 0.1,
            rss_before: 1_000_000,
            rss_after_list: Some(1_100_000),
            peak_rss: 1_200_000,
            slow_backlog: None,
            slow_queued: None,
        };
        let json = report.to_json();
        assert_eq!(json["events_per_second"], 320.0);
        assert_eq!(json["bytes_per_object"], 1000.0);
        assert_eq!(json["runner"], "floor");
    }
}
