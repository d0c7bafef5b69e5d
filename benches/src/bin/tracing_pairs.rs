//! Instruction-count harness of the `tracing` paths: `tracing_pairs <impl> <n>` runs `n`
//! `tracing::info_span!("pair").entered()` pairs (`new_span`, `enter`, `exit`, `try_close`
//! through the global dispatcher) under one subscriber, in chunks with `metron::flush()`
//! between them, and exits.
//!
//! Every implementation runs the same [`run_chunk`]; only the global subscriber differs:
//!
//! | impl | subscriber |
//! | --- | --- |
//! | `minimal` | the minimal recording subscriber of the peers table (`peers::tracing_impl`) |
//! | `metron` | [`metron_tracing::MetronSubscriber`] |
//! | `metron-no-async` | the same with `with_async_slices(false)` (no clock read per span) |
//! | `registry` | `tracing_subscriber::registry()` with a layer that does nothing |
//! | `metron-layer` | `tracing_subscriber::registry()` with [`metron_tracing::MetronLayer`] |
//!
//! Metron's own share is `metron − minimal` and `metron-layer − registry`; with
//! `HOT_TOGGLE='<metron_tracing::subscriber::MetronSubscriber as*'` callgrind counts the
//! standalone subscriber's own functions directly. Run it with
//! `PAIRS_BIN=tracing_pairs HOT_TOGGLE='tracing_pairs::run_chunk' scripts/bench-callgrind.sh`.

use std::hint::black_box;
use tracing_subscriber::layer::Layer;
use tracing_subscriber::prelude::*;

const IMPLS: &[&str] = &[
    "minimal",
    "metron",
    "metron-no-async",
    "registry",
    "metron-layer",
];

/// A layer that does nothing: the cost of the `Registry` alone, plus one layer's dispatch.
struct NoopLayer;

impl<S: tracing::Subscriber> Layer<S> for NoopLayer {}

fn setup(imp: &str) {
    match imp {
        "minimal" => metron_benches::peers::tracing_impl::setup(),
        "metron" => {
            metron::init();
            tracing::subscriber::set_global_default(metron_tracing::MetronSubscriber::new())
                .expect("the first global subscriber");
        }
        "metron-no-async" => {
            metron::init();
            tracing::subscriber::set_global_default(
                metron_tracing::MetronSubscriber::new().with_async_slices(false),
            )
            .expect("the first global subscriber");
        }
        "registry" => tracing_subscriber::registry().with(NoopLayer).init(),
        "metron-layer" => {
            metron::init();
            tracing_subscriber::registry()
                .with(metron_tracing::MetronLayer::new())
                .init();
        }
        _ => unreachable!(),
    }
}

/// Runs `k` pairs back to back (the hot path callgrind counts).
#[inline(never)]
fn run_chunk(k: u64) {
    for _ in 0..k {
        let _span = tracing::info_span!("pair").entered();
        black_box(());
    }
}

fn main() {
    metron_benches::configure_env();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let imp = args.first().map(String::as_str).unwrap_or("");
    let n = args.get(1).and_then(|a| a.parse::<u64>().ok());
    let (true, Some(n)) = (IMPLS.contains(&imp), n) else {
        eprintln!(
            "usage: tracing_pairs <impl> <n>\nimpl: {}",
            IMPLS.join(", ")
        );
        std::process::exit(2);
    };
    setup(imp);
    // Half of Metron's default buffer segment per chunk, as `pairs` does.
    const CHUNK: u64 = 16_384;
    let mut left = n;
    let mut total = std::time::Duration::ZERO;
    while left > 0 {
        let k = left.min(CHUNK);
        let t0 = std::time::Instant::now();
        run_chunk(k);
        total += t0.elapsed();
        left -= k;
        metron::flush();
    }
    eprintln!(
        "tracing_pairs: {imp} x {n}: {:.2} ns/pair",
        total.as_nanos() as f64 / n.max(1) as f64
    );
}
