//! Property: several tasks adding, delaying, taking and releasing keys at
//! random never give one key to two holders (W3), every key is handed out
//! after its last add (W1–W5: nothing is lost), and no key is handed out
//! more often than it was added (W1: dedup, nothing invented). Runs on tokio's
//! paused clock, so delays are exact and runs are fast.

use std::{
    cell::RefCell,
    collections::{HashMap, HashSet},
    rc::Rc,
    time::Duration,
};

use kube_informer::queue::WorkQueue;
use proptest::prelude::*;

/// Keys below this are only ever added directly; the rest also with delays.
const PLAIN_KEYS: u8 = 4;
const KEYS: u8 = 7;

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    AddAfter(u8, u64),
    /// Wait up to 30 ms for an item, hold it this many ms, release it.
    Take(u64),
    Sleep(u64),
    Yield,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..PLAIN_KEYS).prop_map(Op::Add),
        2 => (PLAIN_KEYS..KEYS).prop_map(Op::Add),
        2 => ((PLAIN_KEYS..KEYS), 0..40u64).prop_map(|(k, d)| Op::AddAfter(k, d)),
        4 => (0..15u64).prop_map(Op::Take),
        1 => (0..10u64).prop_map(Op::Sleep),
        1 => Just(Op::Yield),
    ]
}

#[derive(Default)]
struct Log {
    seq: u64,
    holders: HashSet<u8>,
    double_holds: Vec<u8>,
    last_add: HashMap<u8, u64>,
    adds: HashMap<u8, usize>,
    handouts: HashMap<u8, Vec<u64>>,
}

impl Log {
    fn tick(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn added(&mut self, key: u8) {
        let seq = self.tick();
        self.last_add.insert(key, seq);
        *self.adds.entry(key).or_default() += 1;
    }

    fn handed_out(&mut self, key: u8) {
        if !self.holders.insert(key) {
            self.double_holds.push(key);
        }
        let seq = self.tick();
        self.handouts.entry(key).or_default().push(seq);
    }
}

async fn take(queue: &WorkQueue<u8>, log: &Rc<RefCell<Log>>, hold: u64) {
    let Ok(Some(item)) = tokio::time::timeout(Duration::from_millis(30), queue.next()).await else {
        return;
    };
    log.borrow_mut().handed_out(*item);
    tokio::time::sleep(Duration::from_millis(hold)).await;
    log.borrow_mut().holders.remove(&*item);
    drop(item);
}

fn run(tasks: Vec<Vec<Op>>) -> Log {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let queue = WorkQueue::<u8>::new();
        let log = Rc::new(RefCell::new(Log::default()));
        let handles: Vec<_> = tasks
            .into_iter()
            .map(|ops| {
                let (queue, log) = (queue.clone(), log.clone());
                tokio::task::spawn_local(async move {
                    for op in ops {
                        match op {
                            Op::Add(k) => {
                                log.borrow_mut().added(k);
                                queue.add(k);
                            }
                            Op::AddAfter(k, ms) => {
                                log.borrow_mut().added(k);
                                queue.add_after(k, Duration::from_millis(ms));
                            }
                            Op::Take(hold) => take(&queue, &log, hold).await,
                            Op::Sleep(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                            Op::Yield => tokio::task::yield_now().await,
                        }
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.await.unwrap();
        }
        // Every delay has passed; take until nothing is left.
        tokio::time::sleep(Duration::from_secs(1)).await;
        while let Some(item) = queue.try_next() {
            log.borrow_mut().handed_out(*item);
            log.borrow_mut().holders.remove(&*item);
        }
        assert_eq!(queue.len(), 0);
        assert_eq!(queue.processing(), 0);
        Rc::try_unwrap(log).ok().unwrap().into_inner()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn w3_one_holder_and_every_add_handed_out_after_it(
        tasks in prop::collection::vec(prop::collection::vec(op(), 0..40), 2..5)
    ) {
        let log = run(tasks);
        prop_assert!(log.double_holds.is_empty(), "keys held twice: {:?}", log.double_holds);
        for (key, last_add) in &log.last_add {
            let handouts = log.handouts.get(key).map_or(&[][..], Vec::as_slice);
            let after = handouts.iter().filter(|&&h| h > *last_add).count();
            prop_assert!(after >= 1, "key {key} lost: last add {last_add}, handouts {handouts:?}");
            if *key < PLAIN_KEYS {
                // Only direct adds: exactly one hand-out after the last add.
                prop_assert_eq!(after, 1, "key {} handed out {:?} after {}", key, handouts, last_add);
            }
            prop_assert!(handouts.len() <= log.adds[key], "key {key}: more hand-outs than adds");
        }
        for key in log.handouts.keys() {
            prop_assert!(log.last_add.contains_key(key), "key {key} was never added");
        }
    }
}
