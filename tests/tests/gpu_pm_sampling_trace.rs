//! GPU metrics over time (PM sampling) in the Perfetto trace and the summary, without a
//! GPU: PM samples recorded on the H100 (`tests/data/pm_sampling_h100.json`: 318 samples of the
//! five default metrics at 100 µs across three copy and three FMA kernels of `pm_mix`, with the
//! run's kernels) go through `metron_gpu_nvidia::pm_sampling::replay`, the decode path of a real run
//! (time base, counter records, batch), while a fake backend submits the kernels. The trace,
//! decoded by the independent validator with the official Perfetto protos, must have one counter
//! track per metric under the GPU's metrics track with exactly the recorded values, and
//! `gpu_pm_sampling.csv` must hold per kernel and per region the overlap-weighted means and the
//! maxima worked out here from the recorded data; on those means the check holds: DRAM
//! bytes/s over the copies within 10 % of bytes moved / kernel time, SM instructions high in the
//! FMA kernels and low in the copies.

use metron::gpu::{GpuKind, GpuRecord};
use metron_gpu_nvidia::pm_sampling::{replay, RecordedSample};
use metron_tests::fake_gpu;
use serde_json::Value;
use std::collections::HashMap;

const DEVICE: &str = "NVIDIA H100 80GB HBM3";

/// A recorded kernel: (name, start, end, correlation id, region), on the recording's clock.
type Kernel = (String, u64, u64, u32, String);

struct Recording {
    metrics: Vec<String>,
    interval: u64,
    bytes_per_copy: f64,
    kernels: Vec<Kernel>,
    /// (start, values) on the recording's clock.
    samples: Vec<(u64, Vec<f64>)>,
}

fn recording() -> Recording {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/pm_sampling_h100.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let u = |v: &Value| v.as_u64().unwrap();
    Recording {
        metrics: doc["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().to_string())
            .collect(),
        interval: u(&doc["interval_ns"]),
        bytes_per_copy: doc["bytes_per_copy"].as_f64().unwrap(),
        kernels: doc["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| {
                (
                    k[0].as_str().unwrap().to_string(),
                    u(&k[1]),
                    u(&k[2]),
                    u(&k[3]) as u32,
                    k[4].as_str().unwrap().to_string(),
                )
            })
            .collect(),
        samples: doc["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let s = s.as_array().unwrap();
                (
                    u(&s[0]),
                    s[1..].iter().map(|v| v.as_f64().unwrap()).collect(),
                )
            })
            .collect(),
    }
}

/// Overlap-weighted mean and max of metric `m` over the kernels named `name` (or in `region`).
fn expected(
    rec: &Recording,
    shift: u64,
    m: usize,
    pick: &dyn Fn(&Kernel) -> bool,
) -> (f64, f64, u64) {
    let (mut sum, mut weight, mut max) = (0.0, 0u64, f64::MIN);
    for k in rec.kernels.iter().filter(|k| pick(k)) {
        for (start, values) in &rec.samples {
            let (s, e) = (start + shift, start + shift + rec.interval);
            let (lo, hi) = (s.max(k.1 + shift), e.min(k.2 + shift));
            if hi > lo {
                sum += values[m] * (hi - lo) as f64;
                weight += hi - lo;
                max = max.max(values[m]);
            }
        }
    }
    (sum / weight as f64, max, weight)
}

#[test]
fn recorded_samples_become_counter_tracks_and_per_kernel_means() {
    let rec = recording();
    assert_eq!(rec.metrics.len(), 5);
    let dir = fake_gpu::start(
        "metron-pm-trace",
        fake_gpu::no_flush,
        fake_gpu::metadata,
        &[DEVICE],
    );
    // The recording's clock moved onto this process's: the first sample 1 ms from now.
    let first = rec.samples[0].0;
    let shift = metron::clock::monotonic_ns() + 1_000_000 - first;
    let last_end = rec.samples.last().unwrap().0 + rec.interval + shift;
    // Two decodes, the first one a full image, as CUPTI hands them over.
    let samples: Vec<RecordedSample> = rec
        .samples
        .iter()
        .map(|(s, v)| RecordedSample {
            start: s + shift,
            end: s + shift + rec.interval,
            values: v.clone(),
        })
        .collect();
    let images = vec![samples[..200].to_vec(), samples[200..].to_vec()];
    // Decoded 1 ms after the last sample ended; CLOCK_REALTIME far away (2026).
    let counts = replay(
        0,
        &rec.metrics,
        images,
        (last_end + 1_000_000, 1_795_317_845_342_000_842),
    );
    assert_eq!(counts.samples, rec.samples.len() as u64);
    assert_eq!((counts.decodes, counts.image_full), (2, 1));
    assert_eq!(
        counts.overflows + counts.sample_errors + counts.decode_errors,
        0
    );

    // The launches: copies in region "memory", FMA kernels in "compute", warm-ups in none.
    let key = metron::intern(metron::gpu::LAUNCH_KEY, metron::CallsiteKind::AnnotationKey);
    for k in &rec.kernels {
        let value = metron::AnnotationValue::U64(u64::from(k.3));
        match k.4.as_str() {
            "memory" => {
                let _r = metron::scope!("memory");
                metron::by_id::annotate(key, value);
            }
            "compute" => {
                let _r = metron::scope!("compute");
                metron::by_id::annotate(key, value);
            }
            _ => {
                metron::by_id::annotate(key, value);
            }
        }
    }
    let kernels: Vec<GpuRecord> = rec
        .kernels
        .iter()
        .map(|k| {
            let mut r = GpuRecord::new(GpuKind::Kernel, k.0.as_str().into());
            r.start_ns = k.1 + shift;
            r.end_ns = k.2 + shift;
            r.stream = 7;
            r.correlation = k.3;
            r
        })
        .collect();
    metron::gpu::submit(&kernels);
    // The run ends after the last sample (the records are in the past when it is written).
    while metron::clock::monotonic_ns() < last_end + 2_000_000 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let report = metron::finish().expect("finished");
    let out = &report.output_dir;

    // The trace: one counter track per metric under the GPU's metrics track, the values as
    // recorded, in order.
    let trace = metron_tests::validated_trace(
        &out.join("trace.pftrace"),
        &["--slices", "--max-values", "1000"],
    );
    let tracks = trace["tracks"].as_array().unwrap();
    let group = tracks
        .iter()
        .find(|t| t["name"] == format!("GPU 0 {DEVICE} metrics"))
        .unwrap_or_else(|| panic!("the GPU's metrics track: {tracks:?}"));
    let counters: HashMap<&str, &Value> = trace["counters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["parent"] == group["uuid"])
        .map(|c| (c["name"].as_str().unwrap(), c))
        .collect();
    assert_eq!(counters.len(), rec.metrics.len(), "{counters:?}");
    for (m, name) in rec.metrics.iter().enumerate() {
        let c = counters[name.as_str()];
        assert_eq!(c["count"], rec.samples.len(), "{name}");
        let got = metron_tests::f64s(&c["values"]);
        let want: Vec<f64> = rec.samples.iter().map(|s| s.1[m]).collect();
        assert_eq!(got, want, "{name}: the recorded values, in order");
    }
    // The kernel slices are on the same timeline: their times are the recorded ones, shifted.
    let stream = tracks
        .iter()
        .find(|t| t["name"] == format!("GPU 0 {DEVICE} stream 7"))
        .expect("the stream track");
    let slices: Vec<&Value> = trace["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["track"] == stream["uuid"])
        .collect();
    assert_eq!(slices.len(), rec.kernels.len());
    for k in &rec.kernels {
        assert!(
            slices
                .iter()
                .any(|s| s["ts"] == k.1 + shift && s["dur"] == k.2 - k.1),
            "slice of {k:?}"
        );
    }

    // gpu_pm_sampling.csv: per kernel name and region, mean (weighted by overlap) and max.
    let csv = std::fs::read_to_string(out.join("gpu_pm_sampling.csv")).unwrap();
    let mut rows: HashMap<(String, String, String), (f64, f64, u64)> = HashMap::new();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("scope,name,metric,launches,covered_ns,mean,max")
    );
    for line in lines {
        // Names with commas are quoted: split the numbers off the end.
        let f: Vec<&str> = line.rsplitn(5, ',').collect();
        let (max, mean, covered) = (f[0], f[1], f[2]);
        let (scope, rest) = f[4].split_once(',').unwrap();
        let (name, metric) = rest.rsplit_once(',').unwrap();
        rows.insert(
            (scope.into(), name.trim_matches('"').into(), metric.into()),
            (
                mean.parse().unwrap(),
                max.parse().unwrap(),
                covered.parse().unwrap(),
            ),
        );
    }
    // The first kernel whose name contains `part`.
    let named = |part: &str| {
        rec.kernels
            .iter()
            .find(|k| k.0.contains(part))
            .unwrap()
            .0
            .clone()
    };
    let (copy, fma) = (named("copy"), named("fma"));
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-4 * b.abs() + 1e-4;
    for (m, metric) in rec.metrics.iter().enumerate() {
        for (scope, name) in [
            ("kernel", copy.as_str()),
            ("kernel", fma.as_str()),
            ("region", "memory"),
            ("region", "compute"),
        ] {
            let got = rows
                .get(&(scope.to_string(), name.to_string(), metric.clone()))
                .unwrap_or_else(|| panic!("row {scope} {name} {metric} in:\n{csv}"));
            let pick = |k: &Kernel| {
                if scope == "kernel" {
                    k.0 == name
                } else {
                    k.4 == name
                }
            };
            let (mean, max, covered) = expected(&rec, shift, m, &pick);
            assert_eq!(got.2, covered, "{scope} {name} {metric}");
            assert!(
                close(got.0, mean),
                "{scope} {name} {metric}: mean {} vs {mean}",
                got.0
            );
            assert!(
                close(got.1, max),
                "{scope} {name} {metric}: max {} vs {max}",
                got.1
            );
        }
    }
    // The check on the sampled means: DRAM bytes/s over the copies (read + write)
    // within 10 % of bytes moved / kernel time; SM instructions high in FMA, low in copies.
    let mean = |scope: &str, name: &str, metric: &str| {
        rows[&(scope.to_string(), name.to_string(), metric.to_string())].0
    };
    let copies: Vec<_> = rec.kernels.iter().filter(|k| k.4 == "memory").collect();
    let copy_ns: u64 = copies.iter().map(|k| k.2 - k.1).sum();
    let want = rec.bytes_per_copy * copies.len() as f64 / (copy_ns as f64 / 1e9);
    let dram = mean("region", "memory", "dram__bytes_read.sum.per_second")
        + mean("region", "memory", "dram__bytes_write.sum.per_second");
    assert!(
        (dram / want - 1.0).abs() <= 0.10,
        "DRAM {dram:.4e} B/s against {want:.4e} B/s moved"
    );
    let sm = "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed";
    assert!(mean("region", "compute", sm) > 10.0 * mean("region", "memory", sm));
    let dram_fma = mean("region", "compute", "dram__bytes_read.sum.per_second");
    assert!(dram_fma < 0.01 * dram, "DRAM in FMA kernels {dram_fma:.3e}");
    // The summary: the same rows in summary.json, a section in summary.txt.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let section = &summary["gpu_pm_sampling"];
    assert_eq!(section["metrics"], serde_json::json!(rec.metrics));
    for (scope, key) in [("kernel", "by_kernel"), ("region", "by_region")] {
        let list = section[key].as_array().unwrap();
        assert_eq!(
            list.len(),
            rows.keys().filter(|k| k.0 == scope).count(),
            "{key}"
        );
        for r in list {
            let k = (
                scope.to_string(),
                r["name"].as_str().unwrap().to_string(),
                r["metric"].as_str().unwrap().to_string(),
            );
            let (mean, max, covered) = rows[&k];
            assert!(close(r["mean"].as_f64().unwrap(), mean), "{r}");
            assert!(close(r["max"].as_f64().unwrap(), max), "{r}");
            assert_eq!(r["covered_ns"], covered, "{r}");
        }
    }
    let text = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(
        text.contains("GPU metrics over time (PM sampling)") && text.contains("  region memory\n"),
        "{text}"
    );
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metadata.json")).unwrap()).unwrap();
    assert_eq!(meta["outputs"]["trace"]["complete"], true);
    let _ = std::fs::remove_dir_all(&dir);
}
