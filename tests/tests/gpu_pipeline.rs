//! GPU records through Metron's sinks without a GPU: a fake backend registers with
//! `metron::gpu::set_backend`, records the launch annotations a CUPTI backend records, and
//! submits kernel, copy and API records; the run must write `kernels.csv`, the summary's `gpu`
//! totals (per kernel and per launching region), the `gpu` metadata section and GPU stream
//! tracks with flow arrows in the trace.

use metron::gpu::{GpuKind, GpuRecord};
use metron_tests::fake_gpu;
use std::sync::atomic::{AtomicBool, Ordering};

static FLUSHED_AT_END: AtomicBool = AtomicBool::new(false);

fn flush(at_end: bool) {
    if at_end {
        FLUSHED_AT_END.store(true, Ordering::SeqCst);
    }
}

fn metadata() -> serde_json::Value {
    serde_json::json!({"backend": "fake", "enabled": true, "cupti_dropped": 0})
}

fn kernel(name: &str, start: u64, end: u64, corr: u32) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::Kernel, name.into());
    r.start_ns = start;
    r.end_ns = end;
    r.stream = 7;
    r.correlation = corr;
    r.grid = [16384, 1, 1];
    r.block = [256, 1, 1];
    r.registers = 16;
    r.dynamic_shared = 1024;
    r.occupancy = Some(1.0);
    r
}

#[test]
fn gpu_records_reach_csv_summary_metadata_and_trace() {
    let dir = fake_gpu::start("metron-gpu-pipeline", flush, metadata, &["Fake GPU"]);
    let key = metron::intern(metron::gpu::LAUNCH_KEY, metron::CallsiteKind::AnnotationKey);
    let t0 = metron::clock::monotonic_ns();
    {
        let _r = metron::scope!("vector_add");
        metron::by_id::annotate(key, metron::AnnotationValue::U64(11));
    }
    {
        let _r = metron::scope!("matmul");
        metron::by_id::annotate(key, metron::AnnotationValue::U64(12));
    }
    let mut api = GpuRecord::new(GpuKind::RuntimeApi, "cudaLaunchKernel".into());
    api.start_ns = t0 + 1000;
    api.end_ns = t0 + 5000;
    api.correlation = 11;
    api.tid = 4242;
    let mut copy = GpuRecord::new(GpuKind::Memcpy, "HtoD".into());
    copy.start_ns = t0 + 100;
    copy.end_ns = t0 + 900;
    copy.stream = 7;
    copy.bytes = 4096;
    metron::gpu::submit(&[
        copy,
        api,
        kernel(
            "vector_add(float const*, float const*, float*, int)",
            t0 + 6000,
            t0 + 16000,
            11,
        ),
        kernel(
            "matmul_tiled(float const*, float const*, float*, int)",
            t0 + 17000,
            t0 + 47000,
            12,
        ),
    ]);
    let report = metron::finish().expect("finished");
    assert!(
        FLUSHED_AT_END.load(Ordering::SeqCst),
        "the backend was flushed before the sinks wrote"
    );
    let out = &report.output_dir;

    let csv = std::fs::read_to_string(out.join("kernels.csv")).expect("kernels.csv");
    let rows: Vec<&str> = csv.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(rows[1].starts_with("\"vector_add(float const*, float const*, float*, int) [Fake GPU]\",0,4242,\"{4194304,1,1}\",\"{256,1,1}\",1024,16,,0,100.00,0.010000,\"vector_add\""), "{}", rows[1]);
    assert!(rows[2].contains(",1,"), "{}", rows[2]);
    assert!(rows[2].contains("\"matmul\""), "{}", rows[2]);

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let kernels = summary["gpu"]["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2);
    let by_region = summary["gpu"]["kernels_by_region"].as_array().unwrap();
    let regions: Vec<&str> = by_region
        .iter()
        .map(|r| r["region"].as_str().unwrap())
        .collect();
    assert_eq!(regions, ["matmul", "vector_add"]);
    assert_eq!(summary["gpu"]["copies"][0]["bytes"], 4096);
    let text = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(text.contains("GPU kernels by launching region"), "{text}");

    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metadata.json")).unwrap()).unwrap();
    assert_eq!(meta["gpu"]["backend"], "fake");
    assert_eq!(meta["outputs"]["kernels_csv"]["rows"], 2);

    let trace = std::fs::read(out.join("trace.pftrace")).unwrap();
    let has = |s: &[u8]| trace.windows(s.len()).any(|w| w == s);
    assert!(has(b"GPU 0 Fake GPU stream 7"));
    assert!(has(b"CUDA runtime API tid 4242"));
    assert!(has(b"Memcpy HtoD"));
    // The launch annotations are not shown as region arguments.
    assert!(!has(metron::gpu::LAUNCH_KEY.as_bytes()));
    assert_eq!(
        meta["outputs"]["trace"]["complete"], true,
        "{}",
        meta["outputs"]["trace"]
    );
    validate(&out.join("trace.pftrace"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The independent validator (official protos), where the `perfetto` package is installed.
fn validate(trace: &std::path::Path) {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("perfetto/validate_trace.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(trace)
        .output();
    match out {
        Ok(o) if o.status.code() == Some(2) => {
            println!("SKIP validator: {}", String::from_utf8_lossy(&o.stderr))
        }
        Ok(o) => assert!(
            o.status.success(),
            "validate_trace.py: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => println!("SKIP validator: python3: {e}"),
    }
}
