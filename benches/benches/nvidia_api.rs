//! Criterion bench of Metron's own work per traced CUDA runtime API call (the target: "per
//! traced API call ≤ 50 ns of Metron's own work"): one non-launch call (`cudaGetDevice`)
//! through Metron's CUPTI subscriber callback as CUPTI invokes it, enter and exit — the
//! thread's runtime-depth count, two TSC reads, the stash in the call's correlation slot and
//! one 32-byte record in the thread's API buffer. CUPTI's own dispatch is not in it (measured
//! on the device: `tests/cuda/torch_api_cost.sh`, `METRON_GPU_DIAG=api_empty`).

use criterion::{criterion_group, criterion_main, Criterion};

fn api_call(c: &mut Criterion) {
    let mut correlation = 0u32;
    let mut since_drain = 0u32;
    c.bench_function("nvidia_traced_api_call(enter+exit)", |b| {
        b.iter(|| {
            correlation = correlation.wrapping_add(1);
            metron_gpu_nvidia::bench_traced_call(std::hint::black_box(correlation));
            since_drain += 1;
            if since_drain == 4096 {
                // The flusher's job in a real run: the buffers are bounded.
                since_drain = 0;
                std::hint::black_box(metron_gpu_nvidia::bench_drain_calls());
            }
        })
    });
}

criterion_group!(benches, api_call);
criterion_main!(benches);
