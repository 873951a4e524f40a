//! Seeded random informer scripts (format: `TRACE_FORMAT.md`, "Informer
//! scripts"). Every script must give client-go the same answers run after
//! run, and our Informer the same answers as client-go.

use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use crate::generate::trace_seed;

const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];
/// Resync periods a script may use: never, or above the harness's 60 s floor.
const PERIODS: [&str; 5] = ["0s", "30m", "1h", "90m", "2h"];

struct Gen {
    rng: StdRng,
    rv: u64,
}

impl Gen {
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.rng.random_range(0..from.len())]
    }

    fn obj(&mut self) -> Value {
        self.rv += 1;
        json!({"ns": "default", "name": self.pick(&NAMES), "rv": self.rv.to_string()})
    }

    fn list(&mut self, step: &str) -> Value {
        let mut names = NAMES.to_vec();
        names.retain(|_| self.rng.random_bool(0.6));
        let items: Vec<Value> = names
            .into_iter()
            .map(|name| {
                // Unchanged objects keep an old version: a relist then
                // brings resync-type updates (I3).
                let rv = if self.rng.random_bool(0.3) {
                    "1".to_owned()
                } else {
                    self.rv += 1;
                    self.rv.to_string()
                };
                json!({"ns": "default", "name": name, "rv": rv})
            })
            .collect();
        self.rv += 1;
        json!({"step": step, "items": items, "rv": self.rv.to_string()})
    }
}

/// Random informer script `index` of seed `seed`, as JSON lines.
///
/// # Examples
///
/// ```
/// use kube_informer_conformance::informer_script;
///
/// let script = informer_script::random(7, 0);
/// assert_eq!(script, informer_script::random(7, 0));
/// assert!(script.lines().nth(1).unwrap().contains(r#""step":"list""#));
/// ```
pub fn random(seed: u64, index: u64) -> String {
    let mut g = Gen {
        rng: StdRng::seed_from_u64(trace_seed(seed ^ 0x1f0e, index)),
        rv: 1,
    };
    let check = if g.rng.random_bool(0.8) { "1h" } else { "0s" };
    let handlers: Vec<Value> = (0..g.rng.random_range(1..=3))
        .map(|i| json!({"name": format!("h{i}"), "resync": g.pick(&PERIODS)}))
        .collect();
    let mut lines = vec![json!({
        "script": format!("random seed={seed} script={index}"),
        "resyncCheck": check,
        "handlers": handlers,
    })];
    lines.push(g.list("list"));
    let mut late = 0;
    for _ in 0..g.rng.random_range(3..=25) {
        let step = match g.rng.random_range(0..100) {
            0..=24 => json!({"step": "watch", "event": "ADDED", "obj": g.obj()}),
            25..=49 => json!({"step": "watch", "event": "MODIFIED", "obj": g.obj()}),
            50..=64 => json!({"step": "watch", "event": "DELETED", "obj": g.obj()}),
            65..=74 => g.list("relist"),
            75..=89 if check != "0s" => json!({"step": "resync"}),
            90..=94 if late < 2 => {
                late += 1;
                let resync = g.pick(&PERIODS);
                json!({"step": "subscribe", "handler": {"name": format!("late{late}"), "resync": resync}})
            }
            _ => json!({"step": "watch", "event": "BOOKMARK", "obj": g.obj()}),
        };
        lines.push(step);
    }
    let mut text = String::new();
    for line in lines {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text
}
