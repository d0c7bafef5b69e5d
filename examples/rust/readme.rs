//! The README's Rust example, exactly as the README shows it below this header (the test
//! `tests/tests/readme_examples.rs` compares them): `cargo run --release --example readme`.

#[metron::profile] // every call is a region named "solve"
fn solve(n: u64) -> u64 {
    let _load = metron::scope!("load"); // a region until `_load` is dropped
    metron::counter!("queue_depth", n); // a named counter
    metron::annotate!("rows", 1024); // key/value on the innermost open region
    (0..n).sum()
}

fn main() {
    let phase = metron::begin!("phase 1");
    solve(10);
    phase.end();
}
