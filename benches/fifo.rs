//! Placeholder until the fifo bench is written.
fn main() {}
