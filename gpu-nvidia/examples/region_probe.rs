//! Device check of region mode from Rust: `metron_gpu_nvidia::GpuCounters` in a bundle around a
//! `metron::scope!` that launches a hand-written PTX kernel twice through the driver API
//! (`libcuda.so.1` loaded at run time). Run with `METRON_GPU_METRICS=...` and
//! `METRON_GPU_COUNTER_MODE=region` (or `kernel`, to compare with per-kernel values).

#[path = "probe_support/mod.rs"]
mod probe_support;

#[derive(metron::Bundle, Default)]
struct Step {
    gpu: metron_gpu_nvidia::GpuCounters,
}

fn main() {
    assert!(metron::init());
    if let Err(e) = metron_gpu_nvidia::start() {
        eprintln!("region_probe: GPU backend off: {e}");
    }
    let kernel = probe_support::SpinKernel::load();
    // A warm-up launch outside any region, then 3 instances of a region with two launches.
    kernel.run(1, 10);
    for _ in 0..3 {
        let _r = metron::scope!("step", Step);
        kernel.run(1, 100);
        kernel.run(1, 1000);
    }
    let report = metron::finish().expect("the run finishes");
    println!("region_probe: wrote {}", report.output_dir.display());
    if let Some(why) = metron_gpu_nvidia::region_reason() {
        println!("region_probe: last NaN reason: {why}");
    }
}
