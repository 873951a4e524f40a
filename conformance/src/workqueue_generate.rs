//! Seeded random work queue traces.
//!
//! Trace `n` of seed `s` depends only on `(s, n)`, so one failing trace of a
//! run regenerates alone (`workqueue --seed S --trace N`).
//!
//! Two things are kept out of random traces on purpose, both documented in
//! `conformance/DIFFERENCES.md`:
//! - two different items waiting for the *same* deadline: client-go's heap
//!   releases them in an order its heap layout decides, ours in call order;
//!   the generator tracks deadlines and shifts a colliding one by a
//!   millisecond (an extra `advance`, or another delay);
//! - more than 90 rate-limited adds: client-go's token bucket runs on the
//!   real clock, which a trace cannot control; below the burst of 100 it
//!   never delays, on either side.

use std::collections::HashMap;

use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::{
    generate::trace_seed,
    workqueue_trace::{WqHeader, WqOp, WqTrace},
};

const ITEMS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const MAX_RATE_LIMITED: usize = 90;

/// What the generator knows of the queue without running it: the clock,
/// the waiting deadlines and the limiter's failure counts.
#[derive(Default)]
struct Model {
    now: u64,
    waiting: HashMap<&'static str, u64>,
    failures: HashMap<&'static str, u32>,
    rate_limited: usize,
    shut_down: bool,
    ops: Vec<WqOp>,
}

impl Model {
    /// Whether a deadline at `at` for `item` would tie with another item's.
    fn ties(&self, item: &str, at: u64) -> bool {
        let effective = self.waiting.get(item).is_none_or(|&cur| at < cur);
        effective
            && self
                .waiting
                .iter()
                .any(|(&other, &t)| other != item && t == at)
    }

    fn wait(&mut self, item: &'static str, at: u64) {
        if self.shut_down {
            return;
        }
        let entry = self.waiting.entry(item).or_insert(at);
        *entry = (*entry).min(at);
    }

    fn advance(&mut self, ms: u64) {
        self.now += ms;
        let now = self.now;
        self.waiting.retain(|_, at| *at > now);
        self.ops.push(WqOp::Advance { ms });
    }

    fn backoff_ms(&self, item: &str) -> u64 {
        let exp = self.failures.get(item).copied().unwrap_or(0);
        let ms = 5u64.saturating_mul(1u64.checked_shl(exp).unwrap_or(u64::MAX));
        ms.min(1_000_000)
    }
}

/// Random work queue trace `index` of the run seeded with `seed`.
///
/// # Examples
///
/// ```
/// use kube_informer_conformance::workqueue_generate::trace;
///
/// assert_eq!(trace(7, 3), trace(7, 3));
/// assert_ne!(trace(7, 3), trace(7, 4));
/// ```
pub fn trace(seed: u64, index: u64) -> WqTrace {
    let mut rng = StdRng::seed_from_u64(trace_seed(seed, index) ^ 0x5751_5545_5545);
    let len = rng.random_range(5..80);
    let mut m = Model::default();
    for _ in 0..len {
        let item = ITEMS[rng.random_range(0..ITEMS.len())];
        match rng.random_range(0..100) {
            0..22 => m.ops.push(WqOp::Add { item: item.into() }),
            22..42 => m.ops.push(WqOp::Get),
            42..56 => m.ops.push(WqOp::Done {
                item: None,
                nth: rng.random_range(0..4),
            }),
            56..66 => {
                let mut ms = rng.random_range(1..60);
                while m.ties(item, m.now + ms) {
                    ms += 1;
                }
                m.wait(item, m.now + ms);
                m.ops.push(WqOp::AddAfter {
                    item: item.into(),
                    ms,
                });
            }
            66..78 if m.rate_limited < MAX_RATE_LIMITED => {
                while m.ties(item, m.now + m.backoff_ms(item)) {
                    m.advance(1);
                }
                let at = m.now + m.backoff_ms(item);
                m.wait(item, at);
                *m.failures.entry(item).or_default() += 1;
                m.rate_limited += 1;
                m.ops.push(WqOp::AddRateLimited { item: item.into() });
            }
            78..82 => {
                m.failures.remove(item);
                m.ops.push(WqOp::Forget { item: item.into() });
            }
            82..85 => m.ops.push(WqOp::Requeues { item: item.into() }),
            85..98 => {
                let ms = if rng.random_bool(0.15) {
                    rng.random_range(100..3000)
                } else {
                    rng.random_range(1..40)
                };
                m.advance(ms);
            }
            98..100 if !m.shut_down && rng.random_bool(0.5) => {
                m.shut_down = true;
                m.waiting.clear();
                m.ops.push(WqOp::Shutdown);
            }
            _ => m.ops.push(WqOp::Get),
        }
    }
    WqTrace {
        header: WqHeader {
            workqueue: format!("random seed={seed} trace={index}"),
            about: None,
            backoff_holds: false,
        },
        ops: m.ops,
    }
}
