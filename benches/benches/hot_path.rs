//! Criterion benches of one region begin/end pair in a tight loop, for every implementation of
//! [`metron_benches::Impl`] (the bare two-`rdtsc` floor, Metron's variants, the peers), all in
//! one process and one run so that their times compare. Each iteration is one pair; chunks of
//! pairs are timed and the implementation's housekeeping (Metron's flush, fastrace's new root,
//! puffin's new frame) runs between chunks, untimed.

use criterion::{criterion_group, criterion_main, Criterion};
use metron_benches::Impl;
use std::time::Duration;

fn pairs(c: &mut Criterion) {
    metron_benches::configure_env();
    let mut group = c.benchmark_group("pair");
    for &imp in Impl::ALL {
        if imp == Impl::MetronEnvOff {
            // METRON_ENABLED is read once per process: measured by the callgrind harness only.
            continue;
        }
        configure(&mut group, imp);
        imp.setup();
        group.bench_function(imp.name(), |b| b.iter_custom(|iters| imp.run_timed(iters)));
        imp.teardown();
    }
    group.finish();
}

/// Per-implementation run lengths: Tracy with no profiler connected keeps every event in
/// memory, so its runs are kept short.
fn configure(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    imp: Impl,
) {
    #[cfg(feature = "peers")]
    if imp == Impl::Tracy {
        group
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_millis(600))
            .sample_size(20);
        return;
    }
    let _ = imp;
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
}

criterion_group!(benches, pairs);
criterion_main!(benches);
