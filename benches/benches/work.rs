//! Criterion benches of the overhead around real work: each iteration runs ~100 ns of
//! dependent arithmetic ([`metron_benches::work`]), bare or inside one region of each
//! implementation. The difference from `work/bare` is the time a region adds to a region
//! that does something; out-of-order execution can overlap part of the instrumentation with
//! the work, so it is usually less than the tight-loop time of a pair.

use criterion::{criterion_group, criterion_main, Criterion};
use metron_benches::Impl;
use std::time::Duration;

fn around_work(c: &mut Criterion) {
    metron_benches::configure_env();
    let mut group = c.benchmark_group("work");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    group.bench_function("bare", |b| b.iter_custom(Impl::run_bare_work_timed));
    for &imp in Impl::ALL {
        if matches!(imp, Impl::MetronEnvOff | Impl::MetronBundle4) {
            // METRON_ENABLED is read once per process; the syscall bundle costs far more than
            // the work itself.
            continue;
        }
        imp.setup();
        group.bench_function(imp.name(), |b| {
            b.iter_custom(|iters| imp.run_work_timed(iters))
        });
        imp.teardown();
    }
    group.finish();
}

criterion_group!(benches, around_work);
criterion_main!(benches);
