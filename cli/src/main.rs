//! The `metron` command.
fn main() {}
