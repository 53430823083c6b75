//! The `switchyard` binary.
fn main() {}
