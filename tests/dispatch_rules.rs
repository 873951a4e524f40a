//! The listener rules (L1–L6) and resync routing (I3) at the distributor
//! level.

use crate::store_common;

use std::{sync::Arc, time::Duration};

use futures::{FutureExt, StreamExt, poll, stream::FusedStream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_informer::{
    Notification,
    dispatch::{EndReason, Lag, SubscribeOptions},
    informer::SyncError,
    unstable::dispatch::{Distributor, SubscribeRequest},
};
use store_common::*;
use tokio::{sync::watch, time::Instant};

fn distributor(check: Duration) -> (watch::Sender<bool>, Distributor<ConfigMap>) {
    let (tx, rx) = watch::channel(false);
    (tx, Distributor::new(check, rx))
}

async fn send(d: &mut Distributor<ConfigMap>, n: Notification<ConfigMap>) {
    let k = key_of(n.object());
    d.distribute(&k, n).await;
}

#[tokio::test]
async fn l1_late_subscriber_gets_replay_then_live_without_interleaving() {
    let (_synced, mut d) = distributor(Duration::ZERO);
    let mut early = d.subscribe(SubscribeOptions::default(), []);
    send(&mut d, added(cm("ns", "a", "1"), false)).await;
    send(&mut d, added(cm("ns", "b", "1"), false)).await;
    // The writer registers the late subscriber between batches with the
    // store snapshot.
    let (mut late, request) = SubscribeRequest::new(SubscribeOptions::default());
    assert!(
        poll!(late.next()).is_pending(),
        "nothing before registration"
    );
    d.register(
        request,
        [
            (key("ns/a"), cm("ns", "a", "1")),
            (key("ns/b"), cm("ns", "b", "1")),
        ],
    );
    send(&mut d, updated(cm("ns", "a", "1"), cm("ns", "a", "2"))).await;
    send(&mut d, deleted(cm("ns", "b", "1"))).await;
    assert_eq!(
        drain(&mut late),
        ["A ns/a@1*", "A ns/b@1*", "U ns/a@1->2", "D ns/b@1"]
    );
    assert_eq!(
        drain(&mut early),
        ["A ns/a@1", "A ns/b@1", "U ns/a@1->2", "D ns/b@1"]
    );
}

#[tokio::test]
async fn l2_has_synced_needs_upstream_and_every_initial_item_yielded() {
    let (synced, mut d) = distributor(Duration::ZERO);
    let mut sub = d.subscribe(
        SubscribeOptions::default(),
        [(key("ns/a"), cm("ns", "a", "1"))],
    );
    let status = sub.sync_status();
    send(&mut d, added(cm("ns", "b", "1"), true)).await;
    assert!(!sub.sync_status().has_synced());
    let waiter = tokio::spawn(async move { status.wait_until_synced().await });

    // Upstream synced, but two initial items are still queued.
    synced.send_replace(true);
    assert!(!sub.sync_status().has_synced());
    assert_eq!(sub.next().await.map(|n| show(&n)).unwrap(), "A ns/a@1*");
    assert!(!sub.sync_status().has_synced());
    assert_eq!(sub.next().await.map(|n| show(&n)).unwrap(), "A ns/b@1*");
    assert!(sub.sync_status().has_synced());
    waiter.await.unwrap().unwrap();

    // Live items do not count.
    send(&mut d, added(cm("ns", "c", "1"), false)).await;
    assert!(sub.sync_status().has_synced());
}

#[tokio::test]
async fn l2_subscriber_with_nothing_initial_syncs_with_upstream() {
    let (synced, mut d) = distributor(Duration::ZERO);
    let sub = d.subscribe(SubscribeOptions::default(), []);
    assert!(!sub.sync_status().has_synced());
    synced.send_replace(true);
    assert!(sub.sync_status().has_synced());
    sub.wait_until_synced().await.unwrap();
}

#[tokio::test]
async fn l2_wait_until_synced_fails_when_stopped_before_sync() {
    let (_synced, mut d) = distributor(Duration::ZERO);
    let sub = d.subscribe(SubscribeOptions::default(), []);
    let status = sub.sync_status();
    let waiter = tokio::spawn(async move { status.wait_until_synced().await });
    tokio::task::yield_now().await;
    d.close();
    assert!(matches!(
        waiter.await.unwrap(),
        Err(SyncError::Stopped { .. })
    ));
    assert!(!sub.sync_status().has_synced());
}

#[tokio::test(start_paused = true)]
async fn l3_periods_under_one_second_are_raised_to_one_second() {
    let (_s, mut d) = distributor(Duration::from_secs(5));
    let _sub = d.subscribe(
        SubscribeOptions::default().resync(Duration::from_millis(10)),
        [],
    );
    // Before start, the 1 s period lowered the check period from 5 s.
    assert_eq!(d.resync_check_period(), Duration::from_secs(1));
    let start = Instant::now();
    assert!(!d.should_resync(start + Duration::from_millis(999)));
    assert!(d.should_resync(start + Duration::from_secs(1)));
}

#[tokio::test(start_paused = true)]
async fn l3_before_start_a_smaller_period_lowers_the_check_period() {
    let (_s, mut d) = distributor(Duration::from_secs(30));
    let mut slow = d.subscribe(
        SubscribeOptions::default().resync(Duration::from_secs(40)),
        [],
    );
    let mut fast = d.subscribe(
        SubscribeOptions::default().resync(Duration::from_secs(10)),
        [],
    );
    let mut never = d.subscribe(SubscribeOptions::default(), []);
    assert_eq!(d.resync_check_period(), Duration::from_secs(10));
    d.mark_started();

    tokio::time::advance(Duration::from_secs(10)).await;
    assert!(d.should_resync(Instant::now()));
    send(&mut d, updated(cm("ns", "a", "1"), cm("ns", "a", "1"))).await;
    assert_eq!(drain(&mut fast), ["U ns/a@1->1*"]);
    assert!(drain(&mut slow).is_empty());
    assert!(drain(&mut never).is_empty());

    tokio::time::advance(Duration::from_secs(30)).await;
    assert!(d.should_resync(Instant::now()));
    send(&mut d, updated(cm("ns", "a", "1"), cm("ns", "a", "1"))).await;
    assert_eq!(drain(&mut fast), ["U ns/a@1->1*"]);
    assert_eq!(drain(&mut slow), ["U ns/a@1->1*"]);
    assert!(drain(&mut never).is_empty());
}

#[tokio::test(start_paused = true)]
async fn l3_after_start_a_smaller_period_is_raised_to_the_check_period() {
    let (_s, mut d) = distributor(Duration::from_secs(30));
    d.mark_started();
    let _sub = d.subscribe(
        SubscribeOptions::default().resync(Duration::from_secs(5)),
        [],
    );
    assert_eq!(d.resync_check_period(), Duration::from_secs(30));
    let start = Instant::now();
    assert!(!d.should_resync(start + Duration::from_secs(29)));
    assert!(d.should_resync(start + Duration::from_secs(30)));
    // next = now + period
    assert!(!d.should_resync(start + Duration::from_secs(59)));
    assert!(d.should_resync(start + Duration::from_secs(60)));
}

#[tokio::test(start_paused = true)]
async fn l3_zero_means_never_and_a_zero_check_period_disables_resync() {
    let (_s, mut d) = distributor(Duration::from_secs(1));
    let _never = d.subscribe(SubscribeOptions::default(), []);
    assert!(!d.should_resync(Instant::now() + Duration::from_secs(3600)));

    let (_s, mut off) = distributor(Duration::ZERO);
    let _sub = off.subscribe(
        SubscribeOptions::default().resync(Duration::from_secs(5)),
        [],
    );
    assert_eq!(off.resync_check_period(), Duration::ZERO);
    assert!(!off.should_resync(Instant::now() + Duration::from_secs(3600)));
}

#[tokio::test(start_paused = true)]
async fn i3_resync_updates_reach_only_the_due_set_and_real_updates_reach_all() {
    let (_s, mut d) = distributor(Duration::from_secs(1));
    let mut due = d.subscribe(
        SubscribeOptions::default().resync(Duration::from_secs(1)),
        [],
    );
    let mut not_due = d.subscribe(
        SubscribeOptions::default().resync(Duration::from_secs(60)),
        [],
    );
    d.mark_started();
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(d.should_resync(Instant::now()));
    send(&mut d, updated(cm("ns", "a", "3"), cm("ns", "a", "3"))).await;
    send(&mut d, updated(cm("ns", "a", "3"), cm("ns", "a", "4"))).await;
    assert_eq!(drain(&mut due), ["U ns/a@3->3*", "U ns/a@3->4"]);
    assert_eq!(drain(&mut not_due), ["U ns/a@3->4"]);

    // A round where nobody is due: nobody gets resync updates.
    assert!(!d.should_resync(Instant::now()));
    send(&mut d, updated(cm("ns", "a", "4"), cm("ns", "a", "4"))).await;
    assert!(drain(&mut due).is_empty());
    assert!(drain(&mut not_due).is_empty());
}

// I3: every new subscriber is in the due set until the next round decides,
// whatever its period, as client-go's new listeners are in its syncing set
// (conformance script i3_relist_same_rv_after_resync_round, step 1).
#[tokio::test(start_paused = true)]
async fn i3_new_subscribers_are_due_until_the_next_round() {
    let (_s, mut d) = distributor(Duration::from_secs(60));
    let mut never = d.subscribe(SubscribeOptions::default(), []);
    let mut hourly = d.subscribe(
        SubscribeOptions::default().resync(Duration::from_secs(3600)),
        [],
    );
    d.mark_started();
    // Before any round: a resync update reaches both.
    send(&mut d, updated(cm("ns", "a", "1"), cm("ns", "a", "1"))).await;
    assert_eq!(drain(&mut never), ["U ns/a@1->1*"]);
    assert_eq!(drain(&mut hourly), ["U ns/a@1->1*"]);

    // A round where nobody is due ends that.
    tokio::time::advance(Duration::from_secs(60)).await;
    assert!(!d.should_resync(Instant::now()));
    send(&mut d, updated(cm("ns", "a", "1"), cm("ns", "a", "1"))).await;
    assert!(drain(&mut never).is_empty());
    assert!(drain(&mut hourly).is_empty());

    // A subscriber joining later is due until the next round too.
    let mut late = d.subscribe(SubscribeOptions::default(), []);
    send(&mut d, updated(cm("ns", "a", "1"), cm("ns", "a", "1"))).await;
    assert_eq!(drain(&mut late), ["U ns/a@1->1*"]);
    assert!(drain(&mut never).is_empty());
    assert!(!d.should_resync(Instant::now()));
    send(&mut d, updated(cm("ns", "a", "1"), cm("ns", "a", "1"))).await;
    assert!(drain(&mut late).is_empty());
}

#[tokio::test]
async fn l4_a_stalled_unbounded_subscriber_does_not_delay_others() {
    let (_s, mut d) = distributor(Duration::ZERO);
    let stalled = d.subscribe(SubscribeOptions::default(), []);
    let mut live = d.subscribe(SubscribeOptions::default(), []);
    for i in 0..1000 {
        // Completes at once: nothing waits for the stalled subscriber.
        d.distribute(&key("ns/a"), added(cm("ns", "a", &i.to_string()), false))
            .now_or_never()
            .expect("distribute must not wait under Unbounded");
    }
    assert_eq!(drain(&mut live).len(), 1000);
    assert_eq!(stalled.stats().pending, 1000);
}

#[tokio::test]
async fn l4_a_stalled_coalesce_subscriber_does_not_delay_others_and_stays_small() {
    let (_s, mut d) = distributor(Duration::ZERO);
    let mut stalled = d.subscribe(SubscribeOptions::default().lag(Lag::Coalesce), []);
    let mut live = d.subscribe(SubscribeOptions::default(), []);
    for k in 0..10 {
        send(&mut d, added(cm("ns", &format!("k{k}"), "0"), false)).await;
    }
    for i in 1..=200 {
        let k = format!("k{}", i % 10);
        d.distribute(
            &key(&format!("ns/{k}")),
            updated(
                cm("ns", &k, &(i - 10).to_string()),
                cm("ns", &k, &i.to_string()),
            ),
        )
        .now_or_never()
        .expect("distribute must not wait under Coalesce");
        assert!(stalled.stats().pending_keys <= 10);
    }
    assert_eq!(drain(&mut live).len(), 210);
    let got = drain(&mut stalled);
    assert_eq!(got.len(), 10);
    assert_eq!(got[0], "A ns/k0@200");
    assert_eq!(got[1], "A ns/k1@191");
}

#[tokio::test]
async fn l4_bounded_applies_back_pressure_to_the_distributor() {
    let (_s, mut d) = distributor(Duration::ZERO);
    let mut bounded = d.subscribe(SubscribeOptions::default().lag(Lag::Bounded(2)), []);
    let mut other = d.subscribe(SubscribeOptions::default(), []);
    send(&mut d, added(cm("ns", "a", "1"), false)).await;
    send(&mut d, added(cm("ns", "b", "1"), false)).await;
    {
        let c = key("ns/c");
        let third = d.distribute(&c, added(cm("ns", "c", "1"), false));
        tokio::pin!(third);
        assert!(
            poll!(third.as_mut()).is_pending(),
            "full: the distributor waits"
        );
        assert!(poll!(third.as_mut()).is_pending());
        // The other subscriber is held up behind the full one (documented).
        assert_eq!(other.stats().pending, 2);
        assert_eq!(show(&bounded.next().await.unwrap()), "A ns/a@1");
        assert!(poll!(third.as_mut()).is_ready(), "room made: it proceeds");
    }
    assert_eq!(drain(&mut bounded), ["A ns/b@1", "A ns/c@1"]);
    assert_eq!(drain(&mut other), ["A ns/a@1", "A ns/b@1", "A ns/c@1"]);
}

#[tokio::test]
async fn l4_bounded_waiting_ends_when_that_subscriber_is_dropped() {
    let (_s, mut d) = distributor(Duration::ZERO);
    let bounded = d.subscribe(SubscribeOptions::default().lag(Lag::Bounded(1)), []);
    send(&mut d, added(cm("ns", "a", "1"), false)).await;
    let b = key("ns/b");
    {
        let second = d.distribute(&b, added(cm("ns", "b", "1"), false));
        tokio::pin!(second);
        assert!(poll!(second.as_mut()).is_pending());
        drop(bounded);
        assert!(poll!(second.as_mut()).is_ready());
    }
    assert_eq!(d.len(), 0);
}

#[tokio::test]
async fn l4_replay_into_a_bounded_queue_is_queued_whole() {
    let (_s, mut d) = distributor(Duration::ZERO);
    let replay: Vec<_> = (0..5)
        .map(|i| (key(&format!("ns/o{i}")), cm("ns", &format!("o{i}"), "1")))
        .collect();
    let mut sub = d.subscribe(SubscribeOptions::default().lag(Lag::Bounded(2)), replay);
    assert_eq!(drain(&mut sub).len(), 5);
}

#[tokio::test]
async fn l5_dropping_a_subscription_unsubscribes() {
    let (_s, mut d) = distributor(Duration::ZERO);
    let gone = d.subscribe(SubscribeOptions::default(), []);
    let mut stays = d.subscribe(SubscribeOptions::default(), []);
    send(&mut d, added(cm("ns", "a", "1"), false)).await;
    assert_eq!(d.len(), 2);
    drop(gone);
    assert_eq!(d.len(), 1);
    send(&mut d, added(cm("ns", "b", "1"), false)).await;
    assert_eq!(drain(&mut stays), ["A ns/a@1", "A ns/b@1"]);
}

#[tokio::test]
async fn l5_a_subscriber_panicking_in_its_task_does_not_break_others() {
    let (_s, mut d) = distributor(Duration::ZERO);
    let mut doomed = d.subscribe(SubscribeOptions::default(), []);
    let mut fine = d.subscribe(SubscribeOptions::default(), []);
    let task = tokio::spawn(async move {
        let _n = doomed.next().await;
        panic!("handler bug");
    });
    send(&mut d, added(cm("ns", "a", "1"), false)).await;
    assert!(task.await.unwrap_err().is_panic());
    send(&mut d, added(cm("ns", "b", "1"), false)).await;
    assert_eq!(d.len(), 1);
    assert_eq!(drain(&mut fine), ["A ns/a@1", "A ns/b@1"]);
}

#[tokio::test]
async fn l6_subscribing_after_close_ends_at_once_with_a_reason() {
    let (_s, mut d) = distributor(Duration::ZERO);
    let mut before = d.subscribe(SubscribeOptions::default(), []);
    send(&mut d, added(cm("ns", "a", "1"), false)).await;
    d.close();
    // What was queued is still delivered, then the stream ends.
    assert_eq!(show(&before.next().await.unwrap()), "A ns/a@1");
    assert!(before.next().await.is_none());
    assert!(before.is_terminated());
    assert_eq!(before.end_reason(), Some(EndReason::Stopped));

    let mut after = d.subscribe(SubscribeOptions::default(), []);
    assert!(after.next().await.is_none());
    assert_eq!(after.end_reason(), Some(EndReason::Stopped));
    assert!(after.wait_until_synced().await.is_err());
}

#[tokio::test]
async fn l6_a_request_the_writer_never_registers_ends_the_subscription() {
    let (mut sub, request) = SubscribeRequest::<ConfigMap>::new(SubscribeOptions::default());
    let waiting = tokio::spawn(async move {
        sub.next().await.is_none() && sub.end_reason() == Some(EndReason::Stopped)
    });
    tokio::task::yield_now().await;
    drop(request);
    assert!(waiting.await.unwrap());
}

#[tokio::test]
async fn dropping_the_distributor_closes_every_subscription() {
    let (_s, mut d) = distributor(Duration::ZERO);
    let mut sub = d.subscribe(SubscribeOptions::default(), []);
    let waiting = tokio::spawn(async move { sub.next().await.is_none() });
    tokio::task::yield_now().await;
    drop(d);
    assert!(waiting.await.unwrap());
}

#[tokio::test]
async fn handle_drives_a_handler_until_the_stream_ends() {
    use kube_informer::dispatch::ResourceEventHandler;
    use std::sync::Mutex;

    struct Recorder(Arc<Mutex<Vec<String>>>);
    impl ResourceEventHandler<ConfigMap> for Recorder {
        fn on_add(&mut self, o: &Arc<ConfigMap>, initial: bool) {
            self.0
                .lock()
                .unwrap()
                .push(format!("add {} {initial}", key_of(o)));
        }
        fn on_update(&mut self, _: &Arc<ConfigMap>, n: &Arc<ConfigMap>) {
            self.0.lock().unwrap().push(format!("update {}", key_of(n)));
        }
        fn on_delete(&mut self, o: &Arc<ConfigMap>, unknown: bool) {
            self.0
                .lock()
                .unwrap()
                .push(format!("delete {} {unknown}", key_of(o)));
        }
    }

    let (_s, mut d) = distributor(Duration::ZERO);
    let sub = d.subscribe(
        SubscribeOptions::default(),
        [(key("ns/a"), cm("ns", "a", "1"))],
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = Recorder(seen.clone());
    let task = tokio::spawn(sub.handle(handler));
    send(&mut d, updated(cm("ns", "a", "1"), cm("ns", "a", "2"))).await;
    send(
        &mut d,
        Notification::Deleted {
            object: cm("ns", "a", "2"),
            final_state_unknown: true,
        },
    )
    .await;
    d.close();
    task.await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        ["add ns/a true", "update ns/a", "delete ns/a true"]
    );
}
