//! The end of the run: `metadata.json`'s section, the sink that joins the counter records
//! with the kernels and regions and hands them to the writers (`metron::sinks::gpu_pm_sampling`),
//! and the replay of recorded samples without a GPU.

use super::*;

/// The `gpu_pm_sampling` section of `metadata.json`.
pub fn metadata() -> Value {
    let cfg = CONFIG.lock().unwrap_or_else(|e| e.into_inner()).clone();
    // try_lock: a decode stuck in CUPTI holds the sampler; metadata.json is written anyway.
    let s = match SAMPLER.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => {
            return json!({"enabled": true, "note": "the decode thread was still inside CUPTI at the end", "notes": *NOTES.lock().unwrap_or_else(|e| e.into_inner())})
        }
    };
    let counts = s.as_ref().map(|s| s.counts).unwrap_or_default();
    json!({
        "enabled": s.is_some(),
        "refused": *REFUSED.lock().unwrap_or_else(|e| e.into_inner()),
        "notes": *NOTES.lock().unwrap_or_else(|e| e.into_inner()),
        "metrics_asked": cfg.as_ref().map(|c| c.0.metrics.clone()),
        "metrics": *ACTIVE_METRICS.lock().unwrap_or_else(|e| e.into_inner()),
        "interval": cfg.as_ref().map(|c| c.0.interval.to_json()),
        "devices": s.as_ref().map(|s| s.devices.iter().map(|d| d.index).collect::<Vec<_>>()),
        "timestamp_domain": s.as_ref().and_then(|s| s.base).map(|b| b.domain),
        "timestamp_offset_ns": s.as_ref().and_then(|s| s.base).map(|b| b.offset),
        "samples": counts.samples,
        "decodes": counts.decodes,
        "hardware_buffer_overflows": counts.overflows,
        "image_full_decodes": counts.image_full,
        "sample_errors": counts.sample_errors,
        "decode_errors": counts.decode_errors,
        "hardware_buffer_bytes": HW_BUFFER_BYTES,
        "max_samples_per_decode": MAX_SAMPLES,
        "setup_ms": SETUP_NS.load(Ordering::Relaxed) as f64 / 1e6,
        "finished_cleanly": FINISHED_CLEANLY.load(Ordering::Acquire),
        "summary": *FINAL.lock().unwrap_or_else(|e| e.into_inner()),
    })
}

/// One recorded PM sample: its start and end GPU timestamps and one value per metric, as
/// `cuptiPmSamplingCounterDataGetSampleInfo` and `cuptiProfilerHostEvaluateToGpuValues` gave
/// them.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedSample {
    /// Start timestamp (GPU clock as CUPTI reports it).
    pub start: u64,
    /// End timestamp.
    pub end: u64,
    /// One value per metric, in the metric order.
    pub values: Vec<f64>,
}

/// Recorded decodes as a [`SampleSource`]: one image per `decode`, all but the last full.
pub(super) struct Recorded {
    images: Vec<Vec<RecordedSample>>,
    at: usize,
}

impl SampleSource for Recorded {
    fn decode(&mut self) -> (i32, i32, bool) {
        self.at += 1;
        let stop = if self.at < self.images.len() {
            pm::STOP_COUNTER_DATA_FULL
        } else {
            pm::STOP_END_OF_RECORDS
        };
        (CUPTI_SUCCESS, stop, false)
    }
    fn completed(&mut self) -> Result<usize, String> {
        Ok(self.images.get(self.at - 1).map_or(0, Vec::len))
    }
    fn times(&mut self, i: usize) -> Result<(u64, u64), String> {
        let s = &self.images[self.at - 1][i];
        Ok((s.start, s.end))
    }
    fn values(&mut self, i: usize, out: &mut [f64]) -> Result<(), String> {
        let v = &self.images[self.at - 1][i].values;
        if v.len() != out.len() {
            return Err(format!("{} values for {} metrics", v.len(), out.len()));
        }
        out.copy_from_slice(v);
        Ok(())
    }
    fn reset(&mut self) {}
}

/// Feeds recorded PM samples through the decode path of a real run ([`drain`]: the time base,
/// one counter record per sample and metric, the preallocated batch) into the sinks, and
/// registers the end-of-run summary (`gpu_pm_sampling.csv`) for `metrics` on `device`: for
/// testing the outputs without a GPU. `images`: the samples as successive `DecodeData` calls
/// returned them; `clocks`: `(CLOCK_MONOTONIC, CLOCK_REALTIME)` at the first decode (which
/// clock the timestamps follow is decided from them). Call it after `metron::init`; it does
/// nothing when PM sampling runs for real. Returns the counts a run puts in `metadata.json`.
pub fn replay(
    device: u32,
    metrics: &[String],
    images: Vec<Vec<RecordedSample>>,
    clocks: (u64, u64),
) -> Counts {
    let mut counts = Counts::default();
    if SAMPLER.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
        return counts;
    }
    *ACTIVE_METRICS.lock().unwrap_or_else(|e| e.into_inner()) = metrics.to_vec();
    metron::add_sink(Box::new(PmSink::default()));
    let names: Vec<Arc<str>> = metrics.iter().map(|m| Arc::from(m.as_str())).collect();
    let most = images.iter().map(Vec::len).max().unwrap_or(0);
    let mut batch = Vec::with_capacity(most * metrics.len());
    let mut values = vec![0.0; metrics.len()];
    let mut base = None;
    let mut src = Recorded { images, at: 0 };
    drain(
        &mut src,
        device,
        &names,
        &mut base,
        &mut || clocks,
        &mut values,
        &mut batch,
        &mut counts,
        &mut |b| metron::gpu::submit(b),
        &|_| false,
    );
    counts
}

/// Collects kernels and counter samples; writes `gpu_pm_sampling.csv` at the end.
#[derive(Default)]
pub(super) struct PmSink {
    kernels: Vec<(Arc<str>, u32, u32, u64, u64)>,
    samples: Vec<(u32, Arc<str>, u64, u64, f64)>,
}

impl metron::Sink for PmSink {
    fn name(&self) -> &str {
        "gpu_pm_sampling"
    }

    fn events(&mut self, _thread: &metron::ThreadInfo, _events: &[metron::Event<'_>]) {}

    fn gpu_records(&mut self, records: &[GpuRecord]) {
        for r in records {
            match r.kind {
                GpuKind::Kernel => self.kernels.push((
                    r.name.clone(),
                    r.correlation,
                    r.device,
                    r.start_ns,
                    r.end_ns,
                )),
                GpuKind::Counter => {
                    self.samples
                        .push((r.device, r.name.clone(), r.start_ns, r.end_ns, r.value))
                }
                _ => {}
            }
        }
    }

    fn finish(&mut self, run: &metron::RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let metrics = ACTIVE_METRICS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if metrics.is_empty() {
            return Ok(Vec::new());
        }
        let kernels: Vec<KernelSpan> = self
            .kernels
            .iter()
            .map(|(n, c, d, s, e)| KernelSpan {
                name: n.clone(),
                region: metron::gpu::region_of(*c)
                    .map_or("(no region)", |(r, _)| r)
                    .to_string(),
                device: *d,
                start: *s,
                end: *e,
            })
            .collect();
        let samples: Vec<Sample> = self
            .samples
            .iter()
            .filter_map(|(d, n, s, e, v)| {
                Some(Sample {
                    device: *d,
                    metric: metrics.iter().position(|m| **m == **n)?,
                    start: *s,
                    end: *e,
                    value: *v,
                })
            })
            .collect();
        let rows = aggregate(&kernels, &samples, &metrics);
        let path = run.output_dir.join("gpu_pm_sampling.csv");
        std::fs::write(&path, csv(&rows))?;
        let json_rows: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({"scope": r.scope, "name": r.name, "metric": r.metric, "launches": r.launches,
                       "covered_ns": r.covered_ns, "mean": r.mean, "max": r.max})
            })
            .collect();
        add_to_summaries(&run.output_dir, &metrics, &rows)?;
        *FINAL.lock().unwrap_or_else(|e| e.into_inner()) = Some(json!({
            "samples_in_trace": self.samples.len() / metrics.len().max(1),
            "kernels": kernels.len(),
            "rows": json_rows,
        }));
        Ok(vec![path])
    }
}
