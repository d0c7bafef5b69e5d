//! Region-mode GPU counters without a GPU (this machine, CI): a `GpuCounters` bundle member
//! reads NaN with a reason and never panics; its fields are named after `METRON_GPU_METRICS`;
//! the mode decision (region mode for any metric set: several passes across instances).

use metron::Component;
use metron_gpu_nvidia::{GpuCounters, MAX_GPU_FIELDS};

#[derive(metron::Bundle, Default)]
struct WithGpu {
    gpu: GpuCounters,
}

#[test]
fn mode_setting_and_decision() {
    assert_eq!(metron_gpu_nvidia::parse_gpu_counter_mode(None), "kernel");
    assert_eq!(
        metron_gpu_nvidia::parse_gpu_counter_mode(Some(" Region ")),
        "region"
    );
    assert_eq!(
        metron_gpu_nvidia::parse_gpu_counter_mode(Some("bogus")),
        "kernel"
    );
    assert_eq!(
        metron_gpu_nvidia::decide_gpu_counter_mode("region", 1),
        ("region", None)
    );
    let (mode, note) = metron_gpu_nvidia::decide_gpu_counter_mode("region", 10);
    assert_eq!(
        mode, "region",
        "several passes are collected across instances"
    );
    let note = note.unwrap();
    assert!(
        note.contains("k-th instance") && note.contains("fewer than 10 times"),
        "{note}"
    );
    assert_eq!(
        metron_gpu_nvidia::decide_gpu_counter_mode("kernel", 10),
        ("kernel", None)
    );
}

#[test]
fn without_a_gpu_the_component_reads_nan_with_a_reason() {
    if metron_gpu_nvidia::probe().enabled || metron_gpu_nvidia::probe().driver_path.is_some() {
        println!("SKIP: an NVIDIA driver is present here; the off path is not reachable");
        return;
    }
    std::env::set_var(
        "METRON_GPU_METRICS",
        "smsp__inst_executed.sum,gpu__time_duration.sum,ipc=smsp__inst_executed.sum/sm__cycles_elapsed.max",
    );
    std::env::set_var("METRON_GPU_COUNTER_MODE", "region");
    let dir = std::env::temp_dir().join(format!("metron-gpu-region-{}", std::process::id()));
    metron::set_output_path(&dir.to_string_lossy()).expect("nothing flushed yet");
    assert!(metron_gpu_nvidia::start().is_err());
    assert!(!metron_gpu_nvidia::c_region_mode());

    let mut c = GpuCounters::default();
    c.start();
    c.stop();
    assert!(c.value().iter().all(|v| v.is_nan()), "{:?}", c.value());
    let mut out = [0.0; MAX_GPU_FIELDS];
    c.write_fields(&mut out);
    assert!(out.iter().all(|v| v.is_nan()));
    let why = metron_gpu_nvidia::region_reason().expect("a reason");
    assert!(why.contains("GPU counters are off"), "{why}");

    let names: Vec<&str> = GpuCounters::active_fields()
        .iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(names.len(), MAX_GPU_FIELDS);
    assert_eq!(
        &names[..4],
        &[
            "smsp__inst_executed.sum",
            "gpu__time_duration.sum",
            "sm__cycles_elapsed.max",
            "ipc"
        ]
    );
    assert_eq!(names[4], "metric4");

    // In a bundle through scope!: the run goes on and finishes.
    {
        let _r = metron::scope!("step", WithGpu);
    }
    // The C hooks are no-ops when region mode is off.
    metron_gpu_nvidia::c_region_begin(1);
    metron_gpu_nvidia::c_region_end(1);
    let report = metron::finish().expect("the run finishes");
    assert!(report.output_dir.join("summary.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
