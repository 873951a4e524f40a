//! Placeholder until the informer bench is written.
fn main() {}
