//! R9 without double reporting: the source yields its errors and does not
//! log them (whoever reads the stream reports each once), and its debug
//! events sit in spans that name the resource.

mod cache_mode_common;
mod source_helpers;

use crate::cache_mode_common::CacheModeExt;
use std::sync::{Arc, Mutex};

use kube_informer::{informer::SyncError, source::Config};
use kube_informer_testing::{ApiStatus, FakeApiServer, RequestMatch};
use source_helpers::*;
use tracing::{
    Event, Level, Subscriber,
    field::{Field, Visit},
    span::{Attributes, Id},
};
use tracing_subscriber::{Layer, layer::Context, prelude::*, registry::LookupSpan};

/// An event as seen: its level, message and the fields of its spans.
#[derive(Debug, Clone)]
struct Seen {
    target: String,
    level: Level,
    message: String,
    span_fields: Vec<(String, String)>,
}

#[derive(Default)]
struct Fields(Vec<(String, String)>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Seen>>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let message = fields
            .0
            .iter()
            .find(|(name, _)| name == "message")
            .map(|(_, value)| value.clone())
            .unwrap_or_default();
        let mut span_fields = Vec::new();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(fields) = span.extensions().get::<Fields>() {
                    span_fields.extend(fields.0.iter().cloned());
                }
            }
        }
        self.0.lock().unwrap().push(Seen {
            target: event.metadata().target().to_owned(),
            level: *event.metadata().level(),
            message,
            span_fields,
        });
    }
}

// R9: a 403 on every list is yielded each time, never logged by the
// source; its debug events name the resource.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn r9_source_errors_are_yielded_not_logged_and_events_name_the_resource() {
    let recorder = Recorder::default();
    let _guard = tracing_subscriber::registry()
        .with(recorder.clone())
        .set_default();

    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.fail_requests(RequestMatch::List, ApiStatus::forbidden(), 3);
    let mut events = cm_source(&server, Config::default().label_selector("app=web"));
    for _ in 0..3 {
        assert_eq!(next_error(&mut events).await.status_code(), Some(403));
    }
    let (names, _) = read_relist(&mut events).await;
    assert_eq!(names, ["a"]);
    wait_watches(&server, 1).await;

    let seen = recorder.0.lock().unwrap().clone();
    let ours: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.target.starts_with("kube_informer::source"))
        .collect();
    let loud: Vec<&Seen> = seen.iter().filter(|s| s.level <= Level::WARN).collect();
    assert!(loud.is_empty(), "a yielded error was logged: {loud:?}");
    assert!(ours.iter().all(|s| s.level == Level::DEBUG), "{ours:?}");
    // The client's own events inside the source's spans carry its names too.
    assert!(
        seen.iter()
            .filter(|s| s.target.starts_with("kube_client"))
            .all(|s| s
                .span_fields
                .contains(&("resource".to_owned(), "configmaps".to_owned())))
    );
    let field = |s: &Seen, name: &str| {
        s.span_fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let relists: Vec<&&Seen> = ours
        .iter()
        .filter(|s| s.message == "relist started")
        .collect();
    assert_eq!(relists.len(), 4, "one per attempt: {ours:?}");
    for relist in relists {
        assert_eq!(field(relist, "phase").as_deref(), Some("list"));
        assert_eq!(field(relist, "resource").as_deref(), Some("configmaps"));
        assert_eq!(field(relist, "version").as_deref(), Some("v1"));
        assert_eq!(field(relist, "group").as_deref(), Some(""));
        assert_eq!(field(relist, "namespace").as_deref(), Some("default"));
        assert_eq!(field(relist, "labels").as_deref(), Some("app=web"));
    }
    assert!(ours.iter().any(|s| s.message == "relist done"));
    assert_eq!(
        ours.iter().filter(|s| s.message == "backing off").count(),
        3
    );
    let watch = ours
        .iter()
        .find(|s| s.message == "watch started")
        .expect("a watch started");
    assert_eq!(field(watch, "phase").as_deref(), Some("watch"));
    assert_eq!(field(watch, "resource").as_deref(), Some("configmaps"));
}

// R9 and ER2, the informer's side: an informer built from an `Api` logs each
// source error once, at WARN, inside its span, and that span names the
// resource the way the source does (not the Rust type).
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn r9_an_informer_logs_each_source_error_once_in_a_span_naming_the_resource() {
    let recorder = Recorder::default();
    let _guard = tracing_subscriber::registry()
        .with(recorder.clone())
        .set_default();

    let server = FakeApiServer::start().await;
    server.create(&cm("a", "web")).unwrap();
    server.fail_requests(RequestMatch::List, ApiStatus::forbidden(), 2);
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::default_namespaced(server.client());
    let informer = kube_informer::Informer::builder(api)
        .cache_from_env()
        .source_config(
            Config::default()
                .label_selector("app=web")
                .backoff(exact_backoff()),
        )
        .build();
    let run = tokio::spawn(informer.run());
    // The first two lists are refused, which a wait answers at once (I7);
    // the informer retries (R9) until a list is answered.
    while let Err(error) = informer.wait_until_synced().await {
        assert!(
            matches!(error, SyncError::Refused { status: 403, .. }),
            "{error:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(informer.metrics().errors, 2);
    informer.stop();
    run.await.unwrap().unwrap();

    let seen = recorder.0.lock().unwrap().clone();
    let warnings: Vec<&Seen> = seen.iter().filter(|s| s.level <= Level::WARN).collect();
    assert_eq!(warnings.len(), 2, "one line per error: {warnings:?}");
    for warning in warnings {
        assert!(
            warning.span_fields.contains(&(
                "resource".to_owned(),
                r#"configmaps in namespace default with labels "app=web""#.to_owned()
            )),
            "{warning:?}"
        );
    }
}
