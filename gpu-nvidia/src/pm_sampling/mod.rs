//! GPU metrics over time (CUPTI PM Sampling API, `METRON_GPU_PM_SAMPLING`,
//! `METRON_GPU_PM_INTERVAL`): SM throughput, DRAM read/write throughput, achieved occupancy,
//! tensor-pipe use... sampled at a fixed interval across the whole run, as Perfetto counter
//! tracks beside the kernel slices and as per-kernel / per-region mean and max.
//!
//! **Checked on the H100** (CUDA 13.0, docs/gpu-validation.md): on `pm_mix` (copy and
//! FMA kernels with idle gaps) the DRAM tracks are high in the copies and near zero elsewhere,
//! the SM track the reverse, samples fall inside their kernel slices, and the copies' mean DRAM
//! bytes/s is within 1 % of bytes moved / kernel time, in every run. CUPTI keeps pointers to the
//! chip name, the counter-availability image and the config image it is given, so all three live
//! as long as sampling does (freed after set-up, `DecodeData` failed or crashed).
//!
//! - **Set-up** (once, at the first kernel launch, on the launching thread: the context
//!   exists then): `cuptiProfilerInitialize`, the device's PM-sampling counter availability,
//!   a profiler host object of type `PM_SAMPLING` for the whole list (when it is refused or needs
//!   more than one pass, each metric is checked in turn and an unknown one, or one that would
//!   need a second pass, is dropped with the reason), the config image (must be one pass),
//!   `cuptiPmSamplingEnable(device)`, `SetConfig` (interval in ns or in GPU cycles, a
//!   [`HW_BUFFER_BYTES`] hardware buffer), a counter-data image for [`MAX_SAMPLES`] samples
//!   (initialized once and kept as a pristine copy), `Start`.
//! - **Decode** (Metron's thread `metron-pm-sampling`, every [`DECODE_PERIOD_MS`] ms, never an
//!   application thread): `DecodeData` into the image, `GetCounterDataInfo`, then each completed
//!   sample's timestamps (`CounterDataGetSampleInfo`) and values
//!   (`cuptiProfilerHostEvaluateToGpuValues`) into buffers allocated at set-up; the image is
//!   reset by copying the pristine copy over it. Decoding repeats at once while CUPTI says the
//!   image was full. No allocation per sample: the batch of records handed to
//!   [`metron::gpu::submit`] has its capacity reserved at set-up.
//! - **End of the run** ([`finish`], from PM sampling's own exit handler, registered at set-up
//!   and so run before the CUDA libraries' exit handlers, while the context is alive): the
//!   decode thread returns after the image under way; the finishing thread decodes up to the
//!   moment the end began, then `Stop`, the rest up to that moment, `Disable`, the host objects'
//!   deinitialization and `cuptiProfilerDeInitialize` (`finished_cleanly` in `metadata.json`).
//! - **Clock.** PM samples carry GPU timestamps. At the first sample Metron checks which host
//!   clock they follow (CUPTI's timestamp callback, `CLOCK_MONOTONIC`, or CUPTI's default
//!   `CLOCK_REALTIME`) by their distance to both clocks read at that moment, and converts with
//!   the `CLOCK_REALTIME − CLOCK_MONOTONIC` offset when they are real time ([`TimeBase`]); the
//!   choice is in `metadata.json`.
//! - **Losses.** `DecodeData`'s `overflow` flag and `CUPTI_ERROR_OUT_OF_MEMORY` (hardware buffer
//!   overflowed), decodes that stopped on a full image, and evaluation errors are counted in
//!   `metadata.json` section `gpu_pm_sampling`.
//! - **Outputs.** Counter records ([`GpuKind::Counter`]: metric name, device, the sample's start
//!   and end, its value) go to the sinks: the Perfetto trace has one counter track per metric
//!   under the device's `GPU <n> <name> metrics` track. At the end of the run
//!   `gpu_pm_sampling.csv` has per kernel name and per region the mean (weighted by the time
//!   each sample overlaps the kernel) and max of each metric over the GPU time spent there
//!   ([`aggregate`]); the same rows are in `metadata.json`, in `summary.json`
//!   (`gpu_pm_sampling`) and as a section of `summary.txt`.
//! - **Not with** Range Profiler counters (`METRON_GPU_METRICS`) or PC sampling
//!   (`METRON_GPU_PC_SAMPLING`): they program the same performance monitors, so PM sampling is
//!   refused at start with the reason (stderr once, `metadata.json`).

use crate::sys::{Cupti, CUPTI_SUCCESS};
use crate::sys_pmsampling::{self as pm, Handle, PmApi};
use crate::sys_profiler::Names;
use metron::gpu::{GpuKind, GpuRecord};
use metron::sinks::gpu_pm_sampling::add_to_summaries;

mod collect;
mod decode;
mod outputs;
pub use collect::*;
pub use decode::*;
pub use metron::sinks::gpu_pm_sampling::{aggregate, csv, summary_text, KernelSpan, Row, Sample};
pub use outputs::*;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The metrics sampled by `METRON_GPU_PM_SAMPLING=on`, in order (names the H100's CUPTI
/// accepts for PM sampling; docs/gpu-validation.md): DRAM bytes read and written per
/// second, SM instruction throughput (% of peak), tensor pipe active (%), DRAM throughput (% of
/// peak): one pass on GH100. (Achieved occupancy, `sm__warps_active.avg.pct_of_peak_sustained_elapsed`,
/// would need a second pass with them there; `dramc__read_throughput`/`dramc__write_throughput`
/// read about 1/80 of ncu's PmSampling values there, so the DRAM tracks are in bytes/s.)
pub const DEFAULT_METRICS: &[&str] = &[
    "dram__bytes_read.sum.per_second",
    "dram__bytes_write.sum.per_second",
    "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
];
/// `METRON_GPU_PM_INTERVAL`'s default: 100 µs (10 kHz, as Nsight Systems' GPU metrics).
pub const DEFAULT_INTERVAL_NS: u64 = 100_000;
/// Samples per decode (the counter-data image's capacity).
pub const MAX_SAMPLES: u32 = 4096;
/// The decode thread's period.
pub const DECODE_PERIOD_MS: u64 = 20;
/// CUPTI's hardware buffer for the samples.
pub const HW_BUFFER_BYTES: usize = 256 << 20;
/// Devices sampled at most.
const MAX_DEVICES: usize = 16;

/// The interval as CUPTI takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    /// Nanoseconds (`GPU_TIME_INTERVAL`).
    Ns(u64),
    /// GPU cycles (`GPU_SYSCLK_INTERVAL`).
    Cycles(u64),
}

impl Interval {
    fn trigger(self) -> (i32, u64) {
        match self {
            Interval::Ns(n) => (pm::TRIGGER_TIME, n),
            Interval::Cycles(n) => (pm::TRIGGER_SYSCLK, n),
        }
    }

    fn to_json(self) -> Value {
        match self {
            Interval::Ns(n) => json!({"ns": n}),
            Interval::Cycles(n) => json!({"cycles": n}),
        }
    }
}

/// The settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Metric names, in track order.
    pub metrics: Vec<String>,
    /// Sampling interval.
    pub interval: Interval,
}

/// `METRON_GPU_PM_SAMPLING` and `METRON_GPU_PM_INTERVAL`: `Ok(None)` when off.
pub fn parse_settings(
    metrics: Option<&str>,
    interval: Option<&str>,
) -> Result<Option<Config>, String> {
    let m = metrics.map(str::trim).unwrap_or("");
    let metrics: Vec<String> = match m {
        "" | "off" | "0" | "false" | "no" => return Ok(None),
        "on" | "1" | "true" | "yes" | "default" => {
            DEFAULT_METRICS.iter().map(|s| s.to_string()).collect()
        }
        list => {
            let mut v: Vec<String> = Vec::new();
            for n in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if n.contains(char::is_whitespace) {
                    return Err(format!(
                        "METRON_GPU_PM_SAMPLING: {n:?} is not a metric name (accepted: off, on, or a comma-separated list of CUPTI PM-sampling metrics)"
                    ));
                }
                let n = n.strip_prefix("pmsampling:").unwrap_or(n).to_string();
                if !v.contains(&n) {
                    v.push(n);
                }
            }
            v
        }
    };
    Ok(Some(Config {
        metrics,
        interval: parse_interval(interval)?,
    }))
}

/// `METRON_GPU_PM_INTERVAL`: `N` or `Nns` (ns), `Nus`, `Nms`, or `Ncycles` (GPU cycles).
pub fn parse_interval(raw: Option<&str>) -> Result<Interval, String> {
    let s = raw.map(str::trim).unwrap_or("");
    if s.is_empty() {
        return Ok(Interval::Ns(DEFAULT_INTERVAL_NS));
    }
    let bad = || {
        format!(
            "METRON_GPU_PM_INTERVAL: {s:?} is not an interval (accepted: N or Nns, Nus, Nms in time, Ncycles in GPU cycles; N > 0)"
        )
    };
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..digits].parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(bad());
    }
    let unit = s[digits..].trim();
    Ok(match unit {
        "" | "ns" => Interval::Ns(n),
        "us" => Interval::Ns(n.checked_mul(1_000).ok_or_else(bad)?),
        "ms" => Interval::Ns(n.checked_mul(1_000_000).ok_or_else(bad)?),
        "cycles" | "cycle" | "c" => Interval::Cycles(n),
        _ => return Err(bad()),
    })
}

/// Why PM sampling cannot run beside the other settings (`None`: it can).
pub fn conflict(counters_on: bool, pc_sampling_on: bool) -> Option<String> {
    let other = match (counters_on, pc_sampling_on) {
        (true, true) => "METRON_GPU_METRICS and METRON_GPU_PC_SAMPLING are set",
        (true, false) => "METRON_GPU_METRICS is set",
        (false, true) => "METRON_GPU_PC_SAMPLING is set",
        (false, false) => return None,
    };
    Some(format!(
        "GPU PM sampling is off: {other}; the Range Profiler and PC sampling use the same performance monitors as PM sampling, which cannot run together on one context (unset the others to sample metrics over time)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_refuse_clearly() {
        assert_eq!(parse_settings(None, None), Ok(None));
        assert_eq!(parse_settings(Some("off"), Some("junk")), Ok(None));
        let on = parse_settings(Some("on"), None).unwrap().unwrap();
        assert_eq!(on.metrics.len(), DEFAULT_METRICS.len());
        assert_eq!(on.interval, Interval::Ns(DEFAULT_INTERVAL_NS));
        let l = parse_settings(Some(" pmsampling:a.sum, b.avg ,a.sum"), Some("20us"))
            .unwrap()
            .unwrap();
        assert_eq!(l.metrics, vec!["a.sum", "b.avg"]);
        assert_eq!(l.interval, Interval::Ns(20_000));
        assert_eq!(parse_interval(Some("1500")), Ok(Interval::Ns(1500)));
        assert_eq!(parse_interval(Some("2ms")), Ok(Interval::Ns(2_000_000)));
        assert_eq!(
            parse_interval(Some("4096cycles")),
            Ok(Interval::Cycles(4096))
        );
        for bad in ["0", "ten", "5 s", "-3"] {
            let e = parse_interval(Some(bad)).unwrap_err();
            assert!(e.contains("accepted"), "{e}");
        }
        assert!(parse_settings(Some("a b"), None)
            .unwrap_err()
            .contains("accepted"));
        assert!(conflict(false, false).is_none());
        assert!(conflict(true, false)
            .unwrap()
            .contains("METRON_GPU_METRICS"));
        assert!(conflict(false, true)
            .unwrap()
            .contains("METRON_GPU_PC_SAMPLING"));
    }

    #[test]
    fn timestamps_are_put_on_the_monotonic_clock() {
        let mono = 5_000_000_000_000u64; // 5000 s since boot
        let real = 1_795_317_845_342_000_842u64; // 2026
                                                 // Already monotonic (CUPTI's timestamp callback applied): unchanged.
        let tb = TimeBase::detect(mono - 3_000_000, mono, real);
        assert_eq!(tb.domain, "monotonic");
        assert_eq!(tb.convert(mono - 10), mono - 10);
        // CLOCK_REALTIME timestamps: shifted by the clocks' difference.
        let tb = TimeBase::detect(real - 3_000_000, mono, real);
        assert_eq!(tb.domain, "realtime");
        assert_eq!(tb.convert(real - 3_000_000), mono - 3_000_000);
    }

    /// A fake CUPTI: images of samples, decoded one image per `decode`, the first ones full.
    struct Fake {
        images: Vec<Vec<(u64, u64, [f64; 2])>>,
        at: usize,
        current: Vec<(u64, u64, [f64; 2])>,
        overflow_at: Option<usize>,
        resets: usize,
    }

    impl SampleSource for Fake {
        fn decode(&mut self) -> (i32, i32, bool) {
            self.current = self.images.get(self.at).cloned().unwrap_or_default();
            self.at += 1;
            let full = self.at < self.images.len();
            let stop = if full {
                pm::STOP_COUNTER_DATA_FULL
            } else {
                pm::STOP_END_OF_RECORDS
            };
            (0, stop, self.overflow_at == Some(self.at - 1))
        }
        fn completed(&mut self) -> Result<usize, String> {
            Ok(self.current.len())
        }
        fn times(&mut self, i: usize) -> Result<(u64, u64), String> {
            if self.current[i].0 == 0 {
                return Err("bad".into());
            }
            Ok((self.current[i].0, self.current[i].1))
        }
        fn values(&mut self, i: usize, out: &mut [f64]) -> Result<(), String> {
            out.copy_from_slice(&self.current[i].2);
            Ok(())
        }
        fn reset(&mut self) {
            self.resets += 1;
        }
    }

    #[test]
    fn drain_reads_full_images_again_counts_losses_and_does_not_grow_its_batch() {
        let real = 1_800_000_000_000_000_000u64;
        let mono = 1_000_000_000u64;
        let mut fake = Fake {
            images: vec![
                vec![
                    (real, real + 100, [1.0, 2.0]),
                    (real + 100, real + 200, [3.0, 4.0]),
                ],
                vec![(0, 0, [0.0, 0.0]), (real + 200, real + 300, [5.0, 6.0])],
            ],
            at: 0,
            current: Vec::new(),
            overflow_at: Some(1),
            resets: 0,
        };
        let names: Vec<Arc<str>> = vec!["a".into(), "b".into()];
        let mut base = None;
        let mut values = vec![0.0; 2];
        let mut batch = Vec::with_capacity(4);
        let cap = batch.capacity();
        let mut counts = Counts::default();
        let mut got: Vec<GpuRecord> = Vec::new();
        drain(
            &mut fake,
            3,
            &names,
            &mut base,
            &mut || (mono, real + 400),
            &mut values,
            &mut batch,
            &mut counts,
            &mut |b| got.extend_from_slice(b),
            &|_| false,
        );
        assert_eq!(batch.capacity(), cap, "the batch is reused, never grown");
        assert_eq!(fake.resets, 2);
        assert_eq!(
            counts,
            Counts {
                samples: 3,
                decodes: 2,
                overflows: 1,
                image_full: 1,
                sample_errors: 1,
                decode_errors: 0,
                last_end_ns: mono - 100,
            }
        );
        assert_eq!(base.unwrap().domain, "realtime");
        assert_eq!(got.len(), 6);
        assert!(got
            .iter()
            .all(|r| r.kind == GpuKind::Counter && r.device == 3));
        // Sample 0 ended 300 ns before "now": on the monotonic clock, 300 ns before mono.
        assert_eq!((got[0].start_ns, got[0].end_ns), (mono - 400, mono - 300));
        assert_eq!((&*got[3].name, got[3].value), ("b", 4.0));
        assert_eq!(
            (&*got[5].name, got[5].value, got[5].end_ns),
            ("b", 6.0, mono - 100)
        );
    }

    #[test]
    fn per_kernel_and_region_means_weigh_samples_by_overlap() {
        let metrics = vec!["dram".to_string(), "sm".to_string()];
        let mut samples = Vec::new();
        // 10 ns samples from 0 to 100: dram 80 in [10, 40), sm 90 in [50, 90), else 0..1.
        for i in 0..10u64 {
            let (dram, sm) = match i {
                1..=3 => (80.0, 5.0),
                5..=8 => (2.0, 90.0),
                _ => (0.0, 0.0),
            };
            samples.push(Sample {
                device: 0,
                metric: 0,
                start: i * 10,
                end: i * 10 + 10,
                value: dram,
            });
            samples.push(Sample {
                device: 0,
                metric: 1,
                start: i * 10,
                end: i * 10 + 10,
                value: sm,
            });
        }
        // A sample on another device never counts.
        samples.push(Sample {
            device: 1,
            metric: 0,
            start: 10,
            end: 20,
            value: 1e9,
        });
        let k = |name: &str, region: &str, s, e| KernelSpan {
            name: name.into(),
            region: region.into(),
            device: 0,
            start: s,
            end: e,
        };
        let kernels = vec![
            k("copy", "r1", 10, 40),
            k("fma", "r1", 50, 90),
            k("copy", "r2", 15, 25),
        ];
        let rows = aggregate(&kernels, &samples, &metrics);
        let find = |scope: &str, name: &str, metric: &str| {
            rows.iter()
                .find(|r| r.scope == scope && r.name == name && r.metric == metric)
                .unwrap()
                .clone()
        };
        let c = find("kernel", "copy", "dram");
        assert_eq!(
            (c.launches, c.covered_ns, c.mean, c.max),
            (2, 40, 80.0, 80.0)
        );
        let f = find("kernel", "fma", "sm");
        assert_eq!((f.mean, f.max), (90.0, 90.0));
        assert_eq!(find("kernel", "fma", "dram").mean, 2.0);
        // A kernel straddling samples: [5, 15) is half of sample 0 (0) and half of 1 (80).
        let rows = aggregate(&[k("half", "r", 5, 15)], &samples, &metrics);
        let h = rows
            .iter()
            .find(|r| r.metric == "dram" && r.scope == "kernel")
            .unwrap();
        assert_eq!((h.covered_ns, h.mean, h.max), (10, 40.0, 80.0));
        // Region r1 holds copy (30 ns of dram 80) and fma (40 ns of dram 2).
        let r1 = find("region", "r1", "dram");
        assert_eq!(r1.covered_ns, 70);
        assert!((r1.mean - (80.0 * 30.0 + 2.0 * 40.0) / 70.0).abs() < 1e-9);
        let text = csv(&rows);
        assert!(text.starts_with("scope,name,metric,launches,covered_ns,mean,max\n"));
        let summary = summary_text(&rows);
        assert!(
            summary.ends_with("  kernel half\n    dram  40.00 / 80.00\n    sm    2.50 / 5.00\n  region r\n    dram  40.00 / 80.00\n    sm    2.50 / 5.00\n"),
            "{summary}"
        );
        assert!(text.contains("kernel,half,dram,1,10,40.0000,80.0000"));
    }
}
