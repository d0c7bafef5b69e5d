//! Without a GPU, driver or CUPTI (this machine, CI): the backend is off, says why, and
//! nothing panics; the run still writes its outputs, and `metadata.json` has the reason.
//! On a machine with an NVIDIA driver these checks do not apply and the test says so.

use std::process::Command;

fn driver_present() -> bool {
    // The same lookup the backend does, without starting it.
    let probe = metron_gpu_nvidia::probe();
    probe.driver_path.is_some()
}

#[test]
fn without_a_driver_start_fails_with_the_reason_and_the_run_goes_on() {
    if driver_present() {
        println!("SKIP: an NVIDIA driver is present here; the off path is not reachable");
        return;
    }
    let probe = metron_gpu_nvidia::probe();
    let why = probe.reason.clone().expect("a reason when off");
    assert!(why.contains("libcuda.so.1"), "{why}");
    assert!(!probe.enabled);
    let dir = std::env::temp_dir().join(format!("metron-gpu-off-{}", std::process::id()));
    // SAFETY-free: environment before the runtime starts, single-threaded test binary.
    metron::set_output_path(&dir.to_string_lossy()).expect("nothing flushed yet");
    // GPU counters asked for: they are off with the backend, nothing panics.
    std::env::set_var(
        "METRON_GPU_METRICS",
        "smsp__inst_executed.sum,dram__bytes_read.sum",
    );
    let err = metron_gpu_nvidia::start().expect_err("no driver here");
    assert!(err.contains("libcuda.so.1 not found"), "{err}");
    // A second start answers the same, without loading anything again.
    assert_eq!(metron_gpu_nvidia::start().expect_err("still off"), err);
    {
        let _r = metron::scope!("cpu work");
    }
    let report = metron::finish().expect("the run finishes");
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(report.output_dir.join("metadata.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["gpu"]["enabled"], false);
    assert!(meta["gpu"]["reason"]
        .as_str()
        .unwrap()
        .contains("libcuda.so.1"));
    assert!(!report.output_dir.join("kernels.csv").exists());
    // Counters were never configured: no `counters` section, the reason is the backend's.
    assert!(meta["gpu"]["counters"].is_null(), "{}", meta["gpu"]);
    println!("SKIP (GPU counters): {}", meta["gpu"]["reason"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn metron_avail_names_the_reason() {
    if driver_present() {
        println!("SKIP: an NVIDIA driver is present here");
        return;
    }
    let exe = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("target");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or(exe);
    let metron = ["release", "debug"]
        .iter()
        .map(|p| target.join(p).join("metron"))
        .find(|p| p.is_file());
    let Some(metron) = metron else {
        println!("SKIP: no built `metron` binary under {}", target.display());
        return;
    };
    let out = Command::new(metron).arg("avail").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("gpu: none: libcuda.so.1 not found: no NVIDIA driver"),
        "{text}"
    );
}

/// Without a driver: no GPU metrics (with the reason), `metron::info` knows only `cpu`, and a
/// GPU device is the unknown-device error naming the devices. With one: `gpu0` is listed with
/// its CUPTI metrics.
#[test]
fn gpu_metrics_and_info_devices_follow_the_driver() {
    use metron::info::{self, InfoKind};
    metron_gpu_nvidia::register_info();
    if driver_present() {
        let devices = info::devices();
        assert!(devices.iter().any(|d| d == "gpu0"), "{devices:?}");
        let metrics = info::list("gpu0", InfoKind::Metric).unwrap();
        assert!(!metrics.is_empty());
        return;
    }
    let why = metron_gpu_nvidia::metrics(0).expect_err("no driver here");
    assert!(why.contains("libcuda.so.1"), "{why}");
    assert_eq!(info::devices(), ["cpu"]);
    let err = info::iterate("gpu0", InfoKind::Metric, |_| {
        std::ops::ControlFlow::Continue(())
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("unknown device \"gpu0\"; devices on this machine: cpu"),
        "{err}"
    );
}
