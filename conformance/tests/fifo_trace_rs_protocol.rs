//! `fifo-trace-rs` speaks the Go harness's pipe protocol: fed the whole
//! corpus in one stream, it answers every trace with the name echo, the
//! runner's lines and the end line, in order.

use std::{
    io::Write,
    process::{Command, Stdio},
};

use kube_informer_conformance::{corpus, rust_runner, trace::is_end_line};
use serde_json::{Value, json};

#[test]
fn answers_each_trace_of_a_stream_like_the_go_harness() {
    let traces = corpus::load(&corpus::default_dir()).expect("corpus loads");
    let mut input = String::new();
    let mut expected: Vec<Value> = Vec::new();
    for trace in &traces {
        input.push_str(&trace.to_jsonl());
        input.push_str("{\"end\":true}\n");
        expected.push(json!({ "trace": trace.header.trace }));
        expected.extend(rust_runner::run(trace));
        expected.push(json!({ "end": true }));
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_fifo-trace-rs"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("fifo-trace-rs starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("fifo-trace-rs runs");
    writer
        .join()
        .expect("writer thread")
        .expect("input written");
    assert!(output.status.success());
    let got: Vec<Value> = String::from_utf8(output.stdout)
        .expect("utf-8 output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(got.len(), expected.len());
    assert_eq!(got, expected);
    assert_eq!(
        got.iter().filter(|v| is_end_line(&v.to_string())).count(),
        traces.len()
    );
}
