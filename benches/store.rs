//! Placeholder until the store bench is written.
fn main() {}
