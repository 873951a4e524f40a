//! IR1: how often the informer's task runs: once for each event that
//! arrives on its own, as a live watch delivers them. The source and the
//! writer share the task; an event read must be written in the same poll,
//! not in a second one the task schedules for itself (on a multi-threaded
//! runtime that second poll also woke an idle worker for every event).

use crate::informer_common;

use crate::cache_mode_common::CacheModeExt;
use std::{
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
};

use futures::StreamExt;
use informer_common::*;
use kube_informer::{Informer, dispatch::SubscribeOptions, source::Event};

/// A future that counts how often it is polled.
struct Counted<F> {
    inner: Pin<Box<F>>,
    polls: Arc<AtomicUsize>,
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.fetch_add(1, Ordering::Relaxed);
        self.inner.as_mut().poll(cx)
    }
}

const EVENTS: usize = 100;

async fn polls_for_lone_events(subscribers: usize) -> usize {
    let (source, events) = hand_source();
    let informer = Informer::builder_from_stream(events)
        .cache_from_env()
        .build();
    let mut subscriptions: Vec<_> = (0..subscribers)
        .map(|_| informer.subscribe(SubscribeOptions::default()).unwrap())
        .collect();
    let polls = Arc::new(AtomicUsize::new(0));
    let run = tokio::spawn(Counted {
        inner: Box::pin(informer.run()),
        polls: Arc::clone(&polls),
    });

    relist(&source, &[cm("a", "1")], "1");
    for subscription in &mut subscriptions {
        assert_eq!(
            describe(&subscription.next().await.unwrap()),
            "added a@1 initial=true"
        );
    }
    let before = polls.load(Ordering::Relaxed);
    for version in 2..2 + EVENTS {
        send(&source, Event::Modified(cm("a", &version.to_string())));
        // The next event is sent only once this one has been handed out.
        for subscription in &mut subscriptions {
            assert_eq!(
                describe(&subscription.next().await.unwrap()),
                format!("updated a@{}->{version} resync=false", version - 1)
            );
        }
    }
    let polls = polls.load(Ordering::Relaxed) - before;
    informer.stop();
    run.await.unwrap().unwrap();
    polls
}

/// One poll per event; a few more would be scheduling noise, two per
/// event the task waking itself.
fn assert_one_poll_per_event(polls: usize) {
    assert!(
        polls <= EVENTS + EVENTS / 10,
        "{polls} polls of the informer's task for {EVENTS} events"
    );
}

// IR1
#[tokio::test]
async fn ir1_an_event_that_arrives_alone_is_written_in_the_poll_that_read_it() {
    assert_one_poll_per_event(polls_for_lone_events(1).await);
}

// IR1
#[tokio::test]
async fn ir1_every_subscriber_is_told_in_that_same_poll() {
    assert_one_poll_per_event(polls_for_lone_events(3).await);
}
