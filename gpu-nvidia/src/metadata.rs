//! The `gpu` section of `metadata.json`: the backend's status, record and drop counts, and the
//! sections of counters, PC sampling and PM sampling.

use super::*;

/// Why the backend never started (asked at the end of the run, not on a hot path). Nothing is
/// loaded or searched for: trying to load the driver here cost every process that never used
/// CUDA a search of the library folders at its end (and the driver's start on a GPU host).
pub(crate) fn not_started() -> Status {
    if metron::gpu::object_loaded("libcuda.so") {
        return Status::off(
            "the CUDA driver is loaded but CUPTI was not started: run under `metron run` \
             (CUDA_INJECTION64_PATH) or call metron_gpu_nvidia::start()"
                .into(),
        );
    }
    Status::off("the process did not use CUDA (libcuda.so.1 was never loaded)".into())
}

/// The `gpu` section of `metadata.json`.
pub fn metadata() -> Value {
    let mut v = status().unwrap_or_else(not_started).to_json();
    // Each device's limits (read when the first context is created), for `metron export`'s occupancy file.
    if let (Some(info), Some(list)) = (device_info(), v["devices"].as_array_mut()) {
        for (dev, limits) in list.iter_mut().zip(&info.limits_json) {
            if !limits.is_null() {
                dev["limits"] = limits.clone();
            }
        }
    }
    v["records"] = json!({
        "kernels": COUNTS[0].load(Ordering::Relaxed),
        "memcpy": COUNTS[1].load(Ordering::Relaxed),
        "memset": COUNTS[2].load(Ordering::Relaxed),
        "runtime_api": COUNTS[3].load(Ordering::Relaxed),
        "driver_api": COUNTS[4].load(Ordering::Relaxed),
        "synchronizations": COUNTS[5].load(Ordering::Relaxed),
        "event_records": COUNTS[6].load(Ordering::Relaxed),
        "event_records_without_time": COUNTS[7].load(Ordering::Relaxed),
    });
    {
        let d = DEPENDENCIES.lock().unwrap_or_else(|e| e.into_inner());
        v["dependencies"] = json!({
            "recorded": d.0,
            "source": "CUPTI SYNCHRONIZATION and CUDA_EVENT activity records (METRON_GPU_SYNC)",
            "note": d.1,
        });
    }
    v["cupti_dropped"] = json!(CUPTI_DROPPED.load(Ordering::Relaxed));
    v["cupti_internal_kernels"] = json!({
        "filtered": CUPTI_INTERNAL.load(Ordering::Relaxed),
        "names": *INTERNAL_NAMES.lock().unwrap_or_else(|e| e.into_inner()),
    });
    let (recorded, dropped, chunks) = api_log::counts();
    v["api_tracing"] = json!({
        "mode": ApiMode::from_u8(API_MODE.load(Ordering::Relaxed)).as_str(),
        "source": if API_MODE.load(Ordering::Relaxed) == ApiMode::Activity as u8 { "CUPTI RUNTIME/DRIVER activity records" } else { "CUPTI Callback API enter/exit into Metron's per-thread buffers" },
        "calls_recorded": recorded,
        "calls_dropped": dropped,
        "chunks": chunks,
        "chunk_bytes": api_log::CHUNK_RECORDS * 32,
    });
    v["counters"] = range_profiler::metadata();
    v["setup"] = json!({
        "slices": SETUP_COUNT.load(Ordering::Relaxed),
        "warm_up": WARM_UP.load(Ordering::Relaxed),
        "warm_up_kernels": WARM_UP_KERNELS.load(Ordering::Relaxed),
    });
    v["activity_buffers"] = json!({
        "bytes_each": BUFFER_BYTES.load(Ordering::Relaxed),
        "preallocated": POOL_BUFFERS,
        "allocated": BUFFERS_ALLOCATED.load(Ordering::Relaxed),
        "refused": BUFFERS_REFUSED.load(Ordering::Relaxed),
    });
    v
}
