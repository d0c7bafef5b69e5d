//! Device check of PC sampling from Rust: `metron_gpu_nvidia::GpuPcSampling` in a bundle around a
//! `metron::scope!` that launches a hand-written PTX kernel (JIT-compiled: no line information,
//! so samples show as function + offset) twice through the driver API (`libcuda.so.1` loaded at
//! run time). Run with `METRON_GPU_PC_SAMPLING=10`: each `step` reads `sampled_launches` = 2,
//! and the samples of its launches are attributed to `step` (summary.json `gpu_pc_sampling`).

#[path = "probe_support/mod.rs"]
mod probe_support;

#[derive(metron::Bundle, Default)]
struct Step {
    pc: metron_gpu_nvidia::GpuPcSampling,
}

fn main() {
    assert!(metron::init());
    if let Err(e) = metron_gpu_nvidia::start() {
        eprintln!("pc_probe: GPU backend off: {e}");
    }
    let kernel = probe_support::SpinKernel::load();
    // A warm-up launch outside any region, then 3 instances of a region with two launches.
    kernel.run(132, 10);
    for _ in 0..3 {
        let _r = metron::scope!("step", Step);
        kernel.run(132, 100_000);
        kernel.run(132, 1_000_000);
    }
    let report = metron::finish().expect("the run finishes");
    println!("pc_probe: wrote {}", report.output_dir.display());
}
