//! Criterion bench of Metron's cost per AMD kernel dispatch, against an in-process stand-in
//! for the HSA runtime (`metron_gpu_amd::fake_runtime`, whose entries do nothing): one packet
//! through Metron's intercept handler (a signal from the pool, the slot filled, the launch
//! annotation, the packet copied to the writer) and its completion handler (times read and
//! converted, the record queued, the application's signal completed, the slot freed).
//! The runtime's own cost (ROCr's interception and signal handling) is not in it. With
//! `METRON_GPU_METRICS=SQ_WAVES,GRBM_COUNT` set, each dispatch is counted (start and stop packets,
//! the counters read back in the completion handler).
//!
//! `amd_hsa_api_call` is one HSA call through the runtime's table as an application makes it:
//! `traced` through Metron's wrapper (`METRON_GPU_AMD_HSA_API=hsa_signal_store_relaxed`: two
//! clock reads and a record queued), `untraced` straight to the runtime's entry.

use criterion::{criterion_group, criterion_main, Criterion};

fn dispatch(c: &mut Criterion) {
    metron_benches::configure_env_with(&[("METRON_GPU_AMD_HSA_API", "hsa_signal_store_relaxed")]);
    metron::init();
    if let Err(why) = metron_gpu_amd::fake_runtime::install() {
        println!("SKIPPED amd_dispatch: {why}");
        return;
    }
    let _outer = metron::scope!("bench");
    c.bench_function("amd_dispatch(intercept+completion)", |b| {
        b.iter(|| std::hint::black_box(metron_gpu_amd::fake_runtime::dispatch()))
    });
    let mut api = c.benchmark_group("amd_hsa_api_call");
    api.bench_function("traced", |b| {
        b.iter(|| metron_gpu_amd::fake_runtime::signal_store_relaxed(1, std::hint::black_box(2)))
    });
    api.bench_function("untraced", |b| {
        b.iter(|| {
            metron_gpu_amd::fake_runtime::signal_subtract_screlease(1, std::hint::black_box(2))
        })
    });
    api.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
