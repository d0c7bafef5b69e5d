//! PM sampling's outputs (the NVIDIA backend's GPU metrics over time, `METRON_GPU_PM_SAMPLING`):
//! per kernel name and per region of the launch, the mean and max of each sampled metric over
//! the GPU time spent there, as `gpu_pm_sampling.csv`, a section of `summary.txt` and
//! `gpu_pm_sampling` in `summary.json`. The backend collects the samples (counter records) and
//! the kernels and joins them to regions; this module aggregates and writes.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// A kernel execution as the aggregation sees it.
#[derive(Clone, Debug)]
pub struct KernelSpan {
    /// Kernel name.
    pub name: Arc<str>,
    /// The Metron region open at its launch.
    pub region: String,
    /// Device index.
    pub device: u32,
    /// Start, Metron's clock.
    pub start: u64,
    /// End, Metron's clock.
    pub end: u64,
}

/// One metric sample on Metron's clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Device index.
    pub device: u32,
    /// Index into the metric list.
    pub metric: usize,
    /// Sample start, Metron's clock.
    pub start: u64,
    /// Sample end, Metron's clock.
    pub end: u64,
    /// The metric's value over the sample.
    pub value: f64,
}

/// One output row: a kernel name or region, a metric, the mean and max over its GPU time.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `kernel` or `region`.
    pub scope: &'static str,
    /// Kernel name or region name.
    pub name: String,
    /// Metric name.
    pub metric: String,
    /// Kernel executions that had samples.
    pub launches: u64,
    /// GPU time covered by samples, ns.
    pub covered_ns: u64,
    /// Mean over the covered time (each sample weighted by its overlap with the kernel).
    pub mean: f64,
    /// Largest sample overlapping a kernel.
    pub max: f64,
}

#[derive(Default, Clone, Copy)]
struct Acc {
    launches: u64,
    weight: u64,
    sum: f64,
    max: f64,
}

/// Per kernel name and per region (of the launch), the mean and max of each metric over the
/// time the GPU spent in those kernels. Samples are sorted per (device, metric) by start.
pub fn aggregate(kernels: &[KernelSpan], samples: &[Sample], metrics: &[String]) -> Vec<Row> {
    let mut by: HashMap<(u32, usize), Vec<Sample>> = HashMap::new();
    for s in samples {
        by.entry((s.device, s.metric)).or_default().push(*s);
    }
    for v in by.values_mut() {
        v.sort_by_key(|s| s.start);
    }
    let mut acc: HashMap<(&'static str, String, usize), Acc> = HashMap::new();
    for k in kernels {
        for m in 0..metrics.len() {
            let Some(list) = by.get(&(k.device, m)) else {
                continue;
            };
            // First sample that may overlap: the one before the first starting at/after k.start.
            let from = list
                .partition_point(|s| s.start < k.start)
                .saturating_sub(1);
            let mut a = Acc {
                max: f64::MIN,
                ..Acc::default()
            };
            for s in &list[from..] {
                if s.start >= k.end {
                    break;
                }
                let lo = s.start.max(k.start);
                let hi = s.end.min(k.end);
                if hi <= lo {
                    continue;
                }
                let w = hi - lo;
                a.weight += w;
                a.sum += s.value * w as f64;
                a.max = a.max.max(s.value);
            }
            if a.weight == 0 {
                continue;
            }
            for key in [
                ("kernel", k.name.to_string(), m),
                ("region", k.region.clone(), m),
            ] {
                let e = acc.entry(key).or_insert(Acc {
                    max: f64::MIN,
                    ..Acc::default()
                });
                e.launches += 1;
                e.weight += a.weight;
                e.sum += a.sum;
                e.max = e.max.max(a.max);
            }
        }
    }
    let mut rows: Vec<Row> = acc
        .into_iter()
        .map(|((scope, name, m), a)| Row {
            scope,
            name,
            metric: metrics[m].clone(),
            launches: a.launches,
            covered_ns: a.weight,
            mean: a.sum / a.weight as f64,
            max: a.max,
        })
        .collect();
    rows.sort_by(|a, b| (a.scope, &a.name, &a.metric).cmp(&(b.scope, &b.name, &b.metric)));
    rows
}

/// `gpu_pm_sampling.csv`.
pub fn csv(rows: &[Row]) -> String {
    let mut s = String::from("scope,name,metric,launches,covered_ns,mean,max\n");
    for r in rows {
        let q = |x: &str| {
            if x.contains([',', '"', '\n']) {
                format!("\"{}\"", x.replace('"', "\"\""))
            } else {
                x.to_string()
            }
        };
        s.push_str(&format!(
            "{},{},{},{},{},{:.4},{:.4}\n",
            r.scope,
            q(&r.name),
            q(&r.metric),
            r.launches,
            r.covered_ns,
            r.mean,
            r.max
        ));
    }
    s
}

/// A metric value for `summary.txt`: large rates in scientific notation, percentages as such.
fn value_text(v: f64) -> String {
    if v.abs() >= 1e5 {
        format!("{v:.3e}")
    } else {
        format!("{v:.2}")
    }
}

/// The `summary.txt` section: per kernel name and per region, each metric's mean / max.
pub fn summary_text(rows: &[Row]) -> String {
    let mut s = String::from(
        "\nGPU metrics over time (PM sampling): mean / max of each metric over the GPU time spent in each kernel and region\n",
    );
    let width = rows.iter().map(|r| r.metric.len()).max().unwrap_or(0);
    let mut last: Option<(&str, &str)> = None;
    for r in rows {
        if last != Some((r.scope, r.name.as_str())) {
            s.push_str(&format!("  {} {}\n", r.scope, r.name));
            last = Some((r.scope, r.name.as_str()));
        }
        s.push_str(&format!(
            "    {:width$}  {} / {}\n",
            r.metric,
            value_text(r.mean),
            value_text(r.max)
        ));
    }
    s
}

/// Adds the rows to the `summary.txt` / `summary.json` the summary sink wrote in `dir` before
/// (it is registered first): a section in the text, `gpu_pm_sampling` (`metrics`, `by_kernel`,
/// `by_region`) in the JSON.
pub fn add_to_summaries(
    dir: &std::path::Path,
    metrics: &[String],
    rows: &[Row],
) -> std::io::Result<()> {
    let txt = dir.join("summary.txt");
    if txt.is_file() && !rows.is_empty() {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&txt)?;
        f.write_all(summary_text(rows).as_bytes())?;
    }
    let js = dir.join("summary.json");
    if let Ok(text) = std::fs::read_to_string(&js) {
        if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
            let of = |scope: &str| -> Vec<Value> {
                rows.iter()
                    .filter(|r| r.scope == scope)
                    .map(|r| {
                        json!({"name": r.name, "metric": r.metric, "launches": r.launches,
                               "covered_ns": r.covered_ns, "mean": r.mean, "max": r.max})
                    })
                    .collect()
            };
            v["gpu_pm_sampling"] = json!({
                "metrics": metrics,
                "by_kernel": of("kernel"),
                "by_region": of("region"),
            });
            std::fs::write(&js, serde_json::to_string_pretty(&v)? + "\n")?;
        }
    }
    Ok(())
}
