//! `fifo-trace-rs`: the Rust twin of the Go `fifo-trace` program. Reads
//! traces from stdin (a header line, operations, `{"end":true}`) and answers
//! each with the same result lines, computed by kube-informer's DeltaFifo.

use std::io::{BufRead, Write};

use kube_informer_conformance::{
    rust_runner,
    trace::{Trace, is_end_line},
};
use serde_json::json;

fn main() -> std::io::Result<()> {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut block = String::new();
    for line in stdin.lines() {
        let line = line?;
        if !is_end_line(&line) {
            block.push_str(&line);
            block.push('\n');
            continue;
        }
        match Trace::parse(&block) {
            Ok(trace) => {
                writeln!(out, "{}", json!({ "trace": trace.header.trace }))?;
                for result in rust_runner::run(&trace) {
                    writeln!(out, "{result}")?;
                }
                writeln!(out, "{}", json!({ "end": true }))?;
                out.flush()?;
            }
            Err(e) => {
                eprintln!("fifo-trace-rs: {e}");
                std::process::exit(2);
            }
        }
        block.clear();
    }
    Ok(())
}
