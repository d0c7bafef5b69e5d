//! Criterion benches of one `tracing::info_span!("pair").entered()` pair (`new_span`, `enter`,
//! `exit`, `try_close`) under each subscriber: the minimal recording subscriber of the peers
//! table, Metron's standalone [`MetronSubscriber`] (with and without async slices), a bare
//! `Registry` with a layer that does nothing, and the `Registry` with [`MetronLayer`].
//!
//! All run in one process, so each subscriber is the thread's scoped default
//! (`tracing::subscriber::with_default`): `tracing` then dispatches through its thread-local
//! state, which costs the same for every row (`tracing_pairs`, the callgrind harness, uses the
//! global default instead). Chunks of pairs are timed; `metron::flush()` runs between chunks,
//! untimed.

use criterion::{criterion_group, criterion_main, Criterion};
use metron_tracing::{MetronLayer, MetronSubscriber};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tracing::Dispatch;
use tracing_subscriber::layer::Layer;
use tracing_subscriber::prelude::*;

/// A layer that does nothing: the `Registry`'s own cost plus one layer's dispatch.
struct NoopLayer;

impl<S: tracing::Subscriber> Layer<S> for NoopLayer {}

const CHUNK: u64 = 16_384;

/// `n` pairs in chunks, timing the chunks only.
fn run(n: u64) -> Duration {
    let mut left = n;
    let mut total = Duration::ZERO;
    while left > 0 {
        let k = left.min(CHUNK);
        let t0 = Instant::now();
        for _ in 0..k {
            let _span = tracing::info_span!("pair").entered();
            black_box(());
        }
        total += t0.elapsed();
        left -= k;
        metron::flush();
    }
    total
}

fn pairs(c: &mut Criterion) {
    metron_benches::configure_env();
    metron::init();
    let subscribers: Vec<(&str, Dispatch)> = vec![
        (
            "minimal",
            Dispatch::new(metron_benches::peers::tracing_impl::MinimalSubscriber),
        ),
        ("metron", Dispatch::new(MetronSubscriber::new())),
        (
            "metron-no-async",
            Dispatch::new(MetronSubscriber::new().with_async_slices(false)),
        ),
        (
            "registry",
            Dispatch::new(tracing_subscriber::registry().with(NoopLayer)),
        ),
        (
            "metron-layer",
            Dispatch::new(tracing_subscriber::registry().with(MetronLayer::new())),
        ),
    ];
    let mut group = c.benchmark_group("tracing_pair");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    for (name, dispatch) in subscribers {
        tracing::dispatcher::with_default(&dispatch, || {
            group.bench_function(name, |b| b.iter_custom(run));
        });
    }
    group.finish();
}

criterion_group!(benches, pairs);
criterion_main!(benches);
