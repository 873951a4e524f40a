//! Property: a queue with priorities (W14) and ageing (W15) hands out, for
//! any sequence of adds at either level, hand-outs, releases and clock
//! steps, exactly what a plain model of the rules hands out, and counts
//! the same items waiting at each level (W11). The model keeps each level
//! as a list and searches it; the queue drops entries lazily and keeps
//! one map, so a stale entry standing in for a live one, or a lost or
//! doubled item, shows up as a difference. Runs on tokio's paused clock.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use kube_informer::queue::{Priority, WorkItem, WorkQueue};
use proptest::prelude::*;
use tokio::time::Instant;

const KEYS: u8 = 6;
const AGEING: Duration = Duration::from_millis(20);

#[derive(Debug, Clone)]
enum Op {
    Add(u8, Priority),
    Take,
    /// Releases the held item at this index (modulo how many are held).
    Release(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let priority = prop_oneof![Just(Priority::High), Just(Priority::Low)];
    prop_oneof![
        5 => (0..KEYS, priority).prop_map(|(k, p)| Op::Add(k, p)),
        3 => Just(Op::Take),
        2 => (0..8usize).prop_map(Op::Release),
        1 => (0..15u64).prop_map(Op::Advance),
    ]
}

/// W14 and W15, written out as plainly as possible.
#[derive(Default)]
struct Model {
    high: Vec<u8>,
    /// Low items with when they joined.
    low: Vec<(u8, Instant)>,
    /// Dirty items (queued, or processing and added again) and the level
    /// they are queued at or rejoin at.
    dirty: HashMap<u8, Priority>,
    processing: HashSet<u8>,
    last_was_low: bool,
}

impl Model {
    fn add(&mut self, key: u8, priority: Priority, now: Instant) {
        match self.dirty.get(&key).copied() {
            Some(Priority::Low) if priority == Priority::High => {
                self.dirty.insert(key, Priority::High);
                if let Some(at) = self.low.iter().position(|(k, _)| *k == key) {
                    self.low.remove(at);
                    self.high.push(key);
                }
            }
            Some(_) => {}
            None => {
                self.dirty.insert(key, priority);
                if !self.processing.contains(&key) {
                    self.push(key, priority, now);
                }
            }
        }
    }

    fn push(&mut self, key: u8, level: Priority, now: Instant) {
        match level {
            Priority::High => self.high.push(key),
            Priority::Low => self.low.push((key, now)),
        }
    }

    fn take(&mut self, now: Instant) -> Option<u8> {
        let low_first = match self.low.first() {
            None => false,
            Some(_) if self.high.is_empty() => true,
            Some((_, joined)) => !self.last_was_low && now - *joined >= AGEING,
        };
        let key = if low_first {
            self.low.remove(0).0
        } else if self.high.is_empty() {
            return None;
        } else {
            self.high.remove(0)
        };
        self.last_was_low = low_first;
        self.dirty.remove(&key);
        self.processing.insert(key);
        Some(key)
    }

    fn release(&mut self, key: u8, now: Instant) {
        self.processing.remove(&key);
        if let Some(level) = self.dirty.get(&key).copied() {
            self.push(key, level, now);
        }
    }
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let queue = WorkQueue::<u8>::with_config(
            kube_informer::queue::QueueConfig {
                priorities: true,
                priority_ageing: AGEING,
                ..Default::default()
            },
            kube_informer::queue::default_rate_limiter(),
        );
        let mut model = Model::default();
        let mut held: Vec<WorkItem<u8>> = Vec::new();
        for (step, op) in ops.into_iter().enumerate() {
            let now = Instant::now();
            match op {
                Op::Add(key, priority) => {
                    queue.add_with_priority(key, priority);
                    model.add(key, priority, now);
                }
                Op::Take => {
                    let item = queue.try_next();
                    let got = item.as_ref().map(|item| **item);
                    prop_assert_eq!(got, model.take(now), "step {}: {:?}", step, op);
                    held.extend(item);
                }
                Op::Release(index) if !held.is_empty() => {
                    let item = held.remove(index % held.len());
                    let key = *item;
                    drop(item);
                    model.release(key, now);
                }
                Op::Release(_) => {}
                Op::Advance(ms) => tokio::time::advance(Duration::from_millis(ms)).await,
            }
            prop_assert_eq!(
                (queue.len_at(Priority::High), queue.len_at(Priority::Low)),
                (model.high.len(), model.low.len()),
                "W11 at step {}",
                step
            );
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn w14_w15_the_queue_hands_out_what_the_model_of_the_rules_does(
        ops in prop::collection::vec(op(), 0..120)
    ) {
        run(ops)?;
    }
}
