//! Examples live in `rust/`; run them with `cargo run --release --example NAME`.
