//! A long GPU run in bounded memory, without a GPU: 10⁷ CUPTI-shaped records (5·10⁶ launches,
//! each a `cudaLaunchKernel` call and its kernel, with the launch annotation a CUDA backend
//! records in the region open on the launching thread) delivered in batches the size of a
//! CUPTI activity buffer through a fake backend. The records reach every output as they come:
//! the peak RSS (`getrusage`, not a timer) after the first 10⁶ records is the peak at the end
//! within a few MiB, every launch is in the trace, in `kernels.csv` and in the summary, and
//! the trace takes at most 96 bytes per launch (81 with each launch's correlation id).

use metron::gpu::{GpuKind, GpuRecord};
use metron_tests::fake_gpu;
use std::sync::Arc;

/// Launches in the run (two records each).
const LAUNCHES: u32 = 5_000_000;
/// Launches per delivered batch: a 4 MiB CUPTI buffer holds about this many kernel and API
/// records.
const BATCH: u32 = 10_000;
/// Launches before the first RSS reading (everything that is made once is made by then).
const WARM_UP: u32 = 500_000;
/// The most the peak RSS may grow after the warm-up (allocator slack, the file buffers).
const RSS_GROWTH_LIMIT_KB: i64 = 24 << 10;

/// The peak RSS so far, in KiB (`ru_maxrss`).
fn peak_rss_kb() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid out-pointer for one `rusage`, read only when the call returns 0.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage");
    // SAFETY: getrusage returned 0: it filled the struct.
    unsafe { usage.assume_init() }.ru_maxrss
}

#[test]
fn ten_million_gpu_records_take_the_memory_of_the_first_million() {
    let dir = fake_gpu::start(
        "metron-gpu-long-run",
        fake_gpu::no_flush,
        fake_gpu::metadata,
        &["Fake GPU"],
    );
    let key = metron::intern(metron::gpu::LAUNCH_KEY, metron::CallsiteKind::AnnotationKey);
    let api_name: Arc<str> = "cudaLaunchKernel".into();
    let kernel_name: Arc<str> = "empty_kernel()".into();
    let tid = std::process::id();
    let t0 = metron::clock::monotonic_ns();
    let mut batch = Vec::with_capacity(2 * BATCH as usize);
    let mut after_warm_up = 0;
    for first in (0..LAUNCHES).step_by(BATCH as usize) {
        batch.clear();
        {
            let _step = metron::scope!("train_step");
            for i in first..first + BATCH {
                let corr = i + 1;
                metron::by_id::annotate(key, metron::AnnotationValue::U64(u64::from(corr)));
                // A call of 2.5 µs every 4.5 µs, its kernel 1.5 µs long after it: the times of
                // an empty kernel launched in a loop.
                let t = t0 + u64::from(i) * 4_500;
                let mut api = GpuRecord::new(GpuKind::RuntimeApi, Arc::clone(&api_name));
                api.start_ns = t;
                api.end_ns = t + 2_500;
                api.correlation = corr;
                api.tid = tid;
                let mut k = GpuRecord::new(GpuKind::Kernel, Arc::clone(&kernel_name));
                k.start_ns = t + 4_000;
                k.end_ns = t + 5_500;
                k.correlation = corr;
                k.stream = 7;
                k.grid = [1, 1, 1];
                k.block = [1, 1, 1];
                k.registers = 16;
                k.occupancy = Some(0.5);
                batch.push(api);
                batch.push(k);
            }
        }
        metron::gpu::submit(&batch);
        if first + BATCH == WARM_UP {
            after_warm_up = peak_rss_kb();
        }
    }
    let before_finish = peak_rss_kb();
    let report = metron::finish().expect("finished");
    let out = &report.output_dir;
    let growth = before_finish - after_warm_up;
    eprintln!(
        "peak RSS after {} records: {} KiB; after {}: {} KiB (+{growth} KiB)",
        2 * WARM_UP,
        after_warm_up,
        2 * LAUNCHES,
        before_finish
    );
    assert!(
        growth <= RSS_GROWTH_LIMIT_KB,
        "the peak RSS grew by {growth} KiB over the last {} records",
        2 * (LAUNCHES - WARM_UP)
    );

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["gpu"]["kernels"][0]["count"], LAUNCHES);
    assert_eq!(summary["gpu"]["api"][0]["count"], LAUNCHES);
    let regions = summary["gpu"]["kernels_by_region"].as_array().unwrap();
    assert_eq!(regions.len(), 1, "{regions:?}");
    assert_eq!(regions[0]["region"], "train_step");
    assert_eq!(regions[0]["count"], LAUNCHES);

    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metadata.json")).unwrap()).unwrap();
    assert_eq!(meta["outputs"]["kernels_csv"]["rows"], LAUNCHES);
    let csv = std::fs::File::open(out.join("kernels.csv")).unwrap();
    let rows = std::io::BufRead::lines(std::io::BufReader::new(csv))
        .map(Result::unwrap)
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .count();
    assert_eq!(rows, LAUNCHES as usize);

    let trace_meta = &meta["outputs"]["trace"];
    assert_eq!(trace_meta["complete"], true, "{trace_meta}");
    let bytes = std::fs::metadata(out.join("trace.pftrace")).unwrap().len();
    let per_launch = bytes as f64 / f64::from(LAUNCHES);
    eprintln!("trace: {bytes} bytes, {per_launch:.1} per launch (regions and service included)");
    assert!(per_launch <= 96.0, "{per_launch:.1} trace bytes per launch");
    // Every record written (the layout is validated by `gpu_pipeline.rs` with the independent
    // decoder; at this size it would take minutes).
    assert_eq!(trace_meta["gpu"]["records_written"], 2 * LAUNCHES);
    assert_eq!(trace_meta["track_events_lost"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}
