//! `GET /metrics` over HTTP, read with a real exposition-format parser:
//! the scrape of `tests/metrics_scrape.rs` and `tests/dashboard.rs`.
#![allow(dead_code)] // each test uses the part it needs

use std::net::SocketAddr;

use http_body_util::{BodyExt, Empty};
use hyper::{Request, body::Bytes};
use hyper_util::rt::TokioIo;
use prometheus_parse::{Scrape, Value};
use tokio::net::TcpStream;

/// `GET /metrics` over a fresh connection, parsed.
pub async fn scrape(addr: SocketAddr) -> Page {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let request = Request::get("/metrics")
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let text = String::from_utf8(body.to_vec()).expect("utf-8");
    let scrape = Scrape::parse(text.lines().map(|line| Ok(line.to_owned()))).expect("parse");
    Page { scrape, text }
}

/// A scraped page: parsed, and as served (for failure messages).
pub struct Page {
    pub scrape: Scrape,
    pub text: String,
}

impl Page {
    /// The value of the one sample named `name` whose labels include
    /// `labels`.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let mut found = self.scrape.samples.iter().filter(|sample| {
            sample.metric == name && labels.iter().all(|(k, v)| sample.labels.get(k) == Some(*v))
        });
        let sample = found
            .next()
            .unwrap_or_else(|| panic!("no {name}{labels:?} in\n{}", self.text));
        assert!(found.next().is_none(), "{name}{labels:?} is not one sample");
        match &sample.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            other => panic!("{name} is not a number: {other:?}"),
        }
    }

    /// The value of `name` for the subscriber `subscriber`.
    pub fn sub(&self, name: &str, subscriber: &str) -> f64 {
        self.value(name, &[("subscriber", subscriber)])
    }
}
