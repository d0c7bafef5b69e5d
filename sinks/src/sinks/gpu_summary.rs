//! GPU totals in `summary.txt` / `summary.json` (key `gpu`): per kernel name, per Metron
//! region (the region open on the launching thread, see `crate::gpu`), per copy kind and
//! per API function, each a running aggregate updated as the records come (memory per
//! distinct name, none per record); a kernel's region is the join's when its record comes.
//!
//! With GPU counters (`METRON_GPU_METRICS`), `summary.json` also has `gpu.gpu_counters`: each
//! metric summed over the profiled kernels of each launching region and of each kernel name
//! (sums are exact for additive `.sum` metrics; ratios and percentages are not additive and
//! are better read per kernel in `kernels.csv`). A derived metric (`name=expression`) is
//! its expression evaluated on those sums.

//!
//! Region mode (`METRON_GPU_COUNTER_MODE=region`): each counted region instance's values
//! arrive as the region's `gpu.<metric>` annotations (or `gpu.counters_error` with the reason
//! it reads NaN); [`add_region_annotation`] keeps them per region and metric, and the summary
//! has a table "GPU counters by region" (count, total, mean, min, max per metric) and
//! `gpu_counters.by_region` in `summary.json` with the same numbers.

use super::stats::Stats;
use crate::sink::{GpuKind, GpuRecord};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::{Arc, Mutex};

/// Region-mode counter values of one region.
#[derive(Clone, Debug, Default)]
pub(crate) struct RegionCounterRow {
    /// metric → statistics over the region's counted instances.
    pub(crate) metrics: BTreeMap<String, Stats>,
    /// Instances that read NaN.
    pub(crate) nan: u64,
    /// Why (distinct reasons, first few).
    pub(crate) nan_reasons: Vec<String>,
    /// A metric set of N passes collected across instances: (passes, instances that gave a
    /// pass); each value is then one pass set's combination.
    pub(crate) combined: Option<(usize, u64)>,
}

/// region name → its counted values (region mode).
static REGION_COUNTERS: Mutex<BTreeMap<String, RegionCounterRow>> = Mutex::new(BTreeMap::new());
/// Metric columns in the order they were first seen.
static REGION_METRICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The annotation keys region mode writes: `gpu.<metric>` (a value) and this one (a reason).
pub const REGION_ERROR_KEY: &str = "gpu.counters_error";

/// Keeps a region-mode annotation of `region` (key `gpu.<metric>` with an F64 value, or
/// [`REGION_ERROR_KEY`] with the reason); other keys are ignored. Returns true when taken.
pub fn add_region_annotation(region: &str, key: &str, value: &crate::AnnotationValue<'_>) -> bool {
    let Some(metric) = key.strip_prefix("gpu.") else {
        return false;
    };
    if key == super::gpu_region_ranges::RANGE_KEY {
        if let crate::AnnotationValue::U64(id) = value {
            super::gpu_region_ranges::add_instance(region, *id);
            return true;
        }
        return false;
    }
    let mut all = REGION_COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let row = all.entry(region.to_string()).or_default();
    match (metric, value) {
        (_, crate::AnnotationValue::Str(why)) if key == REGION_ERROR_KEY => {
            row.nan += 1;
            if row.nan_reasons.len() < 4 && !row.nan_reasons.iter().any(|r| r == why) {
                row.nan_reasons.push(why.to_string());
            }
            true
        }
        (m, crate::AnnotationValue::F64(v)) => {
            row.metrics.entry(m.to_string()).or_default().push(*v);
            let mut order = REGION_METRICS.lock().unwrap_or_else(|e| e.into_inner());
            if !order.iter().any(|o| o == m) {
                order.push(m.to_string());
            }
            true
        }
        _ => false,
    }
}

/// The region-mode values kept so far: (metric order, region → row).
/// Instances counted late (their range numbers, `gpu_region_ranges.rs`) are joined in here.
pub(crate) fn region_counters() -> (Vec<String>, BTreeMap<String, RegionCounterRow>) {
    let mut metrics = REGION_METRICS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let mut rows = REGION_COUNTERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let (columns, late) = super::gpu_region_ranges::resolve();
    for c in &columns {
        if !metrics.contains(c) {
            metrics.push(c.clone());
        }
    }
    for (region, r) in late {
        let row = rows.entry(region).or_default();
        for values in &r.values {
            for (c, v) in columns.iter().zip(values) {
                row.metrics.entry(c.clone()).or_default().push(*v);
            }
        }
        row.nan += r.nan;
        for why in r.nan_reasons {
            if row.nan_reasons.len() < 4 && !row.nan_reasons.contains(&why) {
                row.nan_reasons.push(why);
            }
        }
        row.combined = r.combined;
    }
    (metrics, rows)
}

/// "combined over N passes of M instances" (a metric set collected across instances).
fn combined_note(combined: Option<(usize, u64)>) -> Option<String> {
    combined.map(|(n, m)| format!("combined over {n} passes of {m} instances"))
}

/// `gpu_counters` for region mode: per region, each metric's count, total, mean, min, max.
fn region_counters_json(metrics: &[String], rows: &BTreeMap<String, RegionCounterRow>) -> Value {
    json!({
        "metrics": metrics,
        "scope": "per region instance (region mode: one CUPTI user range per region), summarized per region",
        "by_region": rows.iter().map(|(region, row)| {
            let instances = row.metrics.values().map(|s| s.count).max().unwrap_or(0);
            let stats: serde_json::Map<String, Value> = row.metrics.iter().map(|(m, s)| {
                (m.clone(), json!({"count": s.count, "total": s.total, "mean": s.mean(), "min": s.min, "max": s.max, "stddev": s.stddev()}))
            }).collect();
            let combined = row.combined.map(|(n, m)| json!({
                "passes": n,
                "instances": m,
                "note": combined_note(row.combined),
                "spread": "each metric's count/min/max/stddev are over the instances of the pass that collected it",
            }));
            let sums: serde_json::Map<String, Value> = row.metrics.iter().map(|(m, s)| (m.clone(), json!(s.total))).collect();
            json!({"region": region, "instances": instances, "sums": sums, "stats": stats, "nan": row.nan, "nan_reasons": row.nan_reasons, "combined": combined})
        }).collect::<Vec<_>>(),
    })
}

/// The "GPU counters by region" table of `summary.txt`.
fn write_region_counters(out: &mut String, rows: &BTreeMap<String, RegionCounterRow>) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nGPU counters by region (region mode)");
    let _ = writeln!(
        out,
        "  {:>8} {:>18} {:>16} {:>16} {:>16}  region / metric",
        "count", "total", "mean", "min", "max"
    );
    for (region, row) in rows {
        let nan = if row.nan > 0 {
            format!("  ({} NaN: {})", row.nan, row.nan_reasons.join("; "))
        } else {
            String::new()
        };
        let combined = combined_note(row.combined)
            .map(|n| format!("  ({n}; min/max between instances of the same pass)"))
            .unwrap_or_default();
        let _ = writeln!(out, "  {region}{combined}{nan}");
        for (m, s) in &row.metrics {
            if s.count == 0 {
                continue;
            }
            let _ = writeln!(
                out,
                "  {:>8} {:>18} {:>16.1} {:>16} {:>16}    {m}",
                s.count,
                super::kernels_csv::counter_text(s.total),
                s.mean(),
                super::kernels_csv::counter_text(s.min),
                super::kernels_csv::counter_text(s.max),
            );
        }
    }
}

/// The GPU records of the run, summarized as they come: per kernel name, launching region,
/// copy kind and API name one running [`Stats`] (memory grows with the distinct names, not
/// with the records). Kernel records are kept only while GPU counters are declared (their
/// values are resolved per launch at the end: `kernels_csv::KernelCounters::resolve`).
#[derive(Default)]
pub(crate) struct GpuSummary {
    totals: Totals,
    /// Records seen (metric samples excluded).
    seen: u64,
    /// Kernel records, kept for the counters' resolution (only with counters declared).
    counted: Vec<GpuRecord>,
    /// The launch → region join (filled by the GPU glue), handed over by the summary's config.
    context: crate::sink::gpu::GpuContext,
}

#[derive(Default)]
struct Totals {
    kernels: HashMap<Arc<str>, Stats>,
    regions: HashMap<&'static str, Stats>,
    copies: HashMap<(bool, Arc<str>), (Stats, u64)>,
    apis: HashMap<Arc<str>, Stats>,
}

impl GpuSummary {
    /// An empty summary that finds launch regions in `context`.
    pub(crate) fn with_context(context: crate::sink::gpu::GpuContext) -> GpuSummary {
        GpuSummary {
            context,
            ..GpuSummary::default()
        }
    }

    pub(crate) fn add(&mut self, records: &[GpuRecord]) {
        let keep = super::kernels_csv::counters_declared();
        let t = &mut self.totals;
        for r in records {
            let ns = r.duration_ns() as f64;
            match r.kind {
                GpuKind::Kernel => {
                    t.kernels.entry(Arc::clone(&r.name)).or_default().push(ns);
                    let region = self
                        .context
                        .region_of(r.correlation)
                        .map_or("(unknown)", |(name, _)| name);
                    t.regions.entry(region).or_default().push(ns);
                    if keep {
                        self.counted.push(r.clone());
                    }
                }
                GpuKind::Memcpy | GpuKind::Memset => {
                    let e = t
                        .copies
                        .entry((r.kind == GpuKind::Memset, Arc::clone(&r.name)))
                        .or_default();
                    e.0.push(ns);
                    e.1 += r.bytes;
                }
                GpuKind::RuntimeApi | GpuKind::DriverApi | GpuKind::HsaApi | GpuKind::HipApi => {
                    t.apis.entry(Arc::clone(&r.name)).or_default().push(ns);
                }
                // Metric samples (PM sampling) are summarized by the backend, not here;
                // synchronizations and event records say what waited for what (the trace).
                GpuKind::Counter | GpuKind::Sync | GpuKind::EventRecord => continue,
            }
            self.seen += 1;
        }
    }

    /// The tables, by name: (kernels, kernels by region, copies and sets with bytes, API calls).
    #[allow(clippy::type_complexity)]
    fn tables(
        &self,
    ) -> (
        BTreeMap<String, Stats>,
        BTreeMap<String, Stats>,
        BTreeMap<String, (Stats, u64)>,
        BTreeMap<String, Stats>,
    ) {
        let t = &self.totals;
        let mut copies: BTreeMap<String, (Stats, u64)> = BTreeMap::new();
        for ((set, name), (s, b)) in &t.copies {
            let key = if *set {
                "Memset".to_string()
            } else {
                format!("Memcpy {name}")
            };
            let e = copies.entry(key).or_insert((Stats::default(), 0));
            e.0.merge(s);
            e.1 += b;
        }
        (
            t.kernels.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
            t.regions.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
            copies,
            t.apis.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
        )
    }

    /// `gpu_counters`: per region and per kernel name, each metric's sum over its profiled
    /// kernels (`Null` without counters).
    pub(crate) fn counters_json(&self) -> Value {
        let (metrics, rows) = region_counters();
        if !rows.is_empty() {
            return region_counters_json(&metrics, &rows);
        }
        let Some(c) = super::kernels_csv::kernel_counters() else {
            return Value::Null;
        };
        counters_json(&self.context, &self.counted, &c)
    }

    pub(crate) fn to_json(&self) -> Value {
        if self.seen == 0 {
            return Value::Null;
        }
        let (kernels, regions, copies, apis) = self.tables();
        let stats = |s: &Stats| json!({"count": s.count, "total_ns": s.total, "min_ns": s.min, "max_ns": s.max, "mean_ns": s.mean()});
        json!({
            "kernels": kernels.iter().map(|(n, s)| { let mut v = stats(s); v["name"] = json!(n); v }).collect::<Vec<_>>(),
            "kernels_by_region": regions.iter().map(|(n, s)| { let mut v = stats(s); v["region"] = json!(n); v }).collect::<Vec<_>>(),
            "copies": copies.iter().map(|(n, (s, b))| { let mut v = stats(s); v["name"] = json!(n); v["bytes"] = json!(b); v }).collect::<Vec<_>>(),
            "api": apis.iter().map(|(n, s)| { let mut v = stats(s); v["name"] = json!(n); v }).collect::<Vec<_>>(),
            "gpu_counters": self.counters_json(),
        })
    }

    pub(crate) fn write_text(&self, out: &mut String) {
        write_region_counters(out, &region_counters().1);
        if self.seen == 0 {
            return;
        }
        let (kernels, regions, copies, apis) = self.tables();
        let mut table = |title: &str, rows: Vec<(String, &Stats, Option<u64>)>| {
            if rows.is_empty() {
                return;
            }
            let _ = writeln!(out, "\n{title}");
            let _ = writeln!(
                out,
                "  {:>8} {:>12} {:>11} {:>11} {:>11}  name",
                "count", "total ms", "mean us", "min us", "max us"
            );
            let mut rows = rows;
            rows.sort_by(|a, b| b.1.total.total_cmp(&a.1.total));
            for (name, s, bytes) in rows {
                let bytes = bytes.map_or(String::new(), |b| format!("  ({b} bytes)"));
                let _ = writeln!(
                    out,
                    "  {:>8} {:>12.3} {:>11.3} {:>11.3} {:>11.3}  {name}{bytes}",
                    s.count,
                    s.total / 1e6,
                    s.mean() / 1e3,
                    s.min / 1e3,
                    s.max / 1e3
                );
            }
        };
        table(
            "GPU kernels",
            kernels.iter().map(|(n, s)| (n.clone(), s, None)).collect(),
        );
        table(
            "GPU kernels by launching region",
            regions.iter().map(|(n, s)| (n.clone(), s, None)).collect(),
        );
        table(
            "GPU copies and sets",
            copies
                .iter()
                .map(|(n, (s, b))| (n.clone(), s, Some(*b)))
                .collect(),
        );
        table(
            "CUDA API calls (host)",
            apis.iter().map(|(n, s)| (n.clone(), s, None)).collect(),
        );
    }
}

/// Per region and per kernel name: profiled kernels and each metric's sum.
fn counters_json(
    gpu: &crate::sink::gpu::GpuContext,
    records: &[GpuRecord],
    c: &super::kernels_csv::KernelCounters,
) -> Value {
    type Acc = BTreeMap<String, (u64, Vec<f64>)>;
    let mut regions: Acc = BTreeMap::new();
    let mut kernels: Acc = BTreeMap::new();
    let delivered: Vec<&GpuRecord> = records
        .iter()
        .filter(|r| r.kind == GpuKind::Kernel)
        .collect();
    let counted = c.resolve(&delivered);
    let mut nan = 0u64;
    for (i, r) in delivered.iter().enumerate() {
        let (values, kernel_key, kernels_in) = match counted.get(&i) {
            Some(super::kernels_csv::Counted::Values(v)) => (v, r.name.to_string(), 1),
            Some(super::kernels_csv::Counted::LaunchSum(v, n)) => (
                v,
                format!("CUDA graph {} launch (sum over its kernels)", r.graph_id),
                *n as u64,
            ),
            Some(super::kernels_csv::Counted::Nan(_)) => {
                nan += 1;
                continue;
            }
            Some(super::kernels_csv::Counted::InLaunchSum(_)) | None => continue,
        };
        let region = gpu
            .region_of(r.correlation)
            .map_or("(unknown)", |(name, _)| name);
        for (map, key) in [
            (&mut regions, region.to_string()),
            (&mut kernels, kernel_key),
        ] {
            let e = map
                .entry(key)
                .or_insert_with(|| (0, vec![0.0; c.metrics.len()]));
            e.0 += kernels_in;
            for (sum, v) in e.1.iter_mut().zip(values) {
                *sum += v;
            }
        }
    }
    let rows = |acc: &Acc, key: &str| -> Vec<Value> {
        acc.iter()
            .map(|(name, (n, sums))| {
                let values: serde_json::Map<String, Value> = c
                    .metrics
                    .iter()
                    .zip(sums)
                    .map(|(m, v)| (m.clone(), json!(v)))
                    .collect();
                let mut values = values;
                // Derived metrics: the expression of the sums (a ratio of totals), not a sum.
                for (name, source) in &c.derived {
                    let hw: std::collections::HashMap<&str, f64> = c
                        .metrics
                        .iter()
                        .zip(sums)
                        .map(|(m, v)| (m.as_str(), *v))
                        .collect();
                    let v = metron_metrics::Expr::parse(source)
                        .ok()
                        .and_then(|e| e.evaluate(&|n| hw.get(n).map(std::slice::from_ref)).ok());
                    values.insert(name.clone(), json!(v));
                }
                json!({key: name, "kernels": n, "sums": values})
            })
            .collect()
    };
    json!({
        "metrics": c.metrics,
        "scope": "per kernel, summed per launching region and per kernel name",
        "kernels_nan": nan,
        "by_region": rows(&regions, "region"),
        "by_kernel": rows(&kernels, "name"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn counters_are_summed_per_kernel_name() {
        let mut a = GpuRecord::new(GpuKind::Kernel, "saxpy".into());
        a.correlation = 1;
        let mut b = a.clone();
        b.correlation = 2;
        let mut d = a.clone();
        d.correlation = 3; // not profiled
        let c = super::super::kernels_csv::KernelCounters {
            metrics: vec![
                "smsp__inst_executed.sum".into(),
                "gpu__time_duration.sum".into(),
                "ipns".into(),
            ],
            derived: vec![(
                "ipns".into(),
                "smsp__inst_executed.sum / gpu__time_duration.sum".into(),
            )],
            values: HashMap::from([(1, vec![10.0, 1.0, 10.0]), (2, vec![32.0, 2.0, 16.0])]),
            ..Default::default()
        };
        let v = counters_json(&Default::default(), &[a, b, d], &c);
        assert_eq!(v["by_kernel"][0]["name"], "saxpy");
        assert_eq!(v["by_kernel"][0]["kernels"], 2);
        assert_eq!(v["by_kernel"][0]["sums"]["smsp__inst_executed.sum"], 42.0);
        // 42 instructions in 3 ns, not 10 + 16.
        assert_eq!(v["by_kernel"][0]["sums"]["ipns"], 14.0);
        assert_eq!(v["by_region"][0]["region"], "(unknown)");
    }

    /// A graph launch counted as one range: its sum is added once to its region, with all its
    /// kernels, and listed under the graph rather than under its first kernel's name.
    #[test]
    fn a_graph_launch_sum_counts_once_for_its_kernels() {
        let mut ks = Vec::new();
        for node in 1..=3 {
            let mut k = GpuRecord::new(GpuKind::Kernel, format!("k{node}").into());
            k.correlation = 9;
            k.graph_id = 5;
            k.graph_node = node;
            ks.push(k);
        }
        let c = super::super::kernels_csv::KernelCounters {
            metrics: vec!["smsp__inst_executed.sum".into()],
            sums: HashMap::from([(9, vec![300.0])]),
            ..Default::default()
        };
        let v = counters_json(&Default::default(), &ks, &c);
        assert_eq!(v["by_region"][0]["kernels"], 3);
        assert_eq!(v["by_region"][0]["sums"]["smsp__inst_executed.sum"], 300.0);
        assert_eq!(v["by_kernel"].as_array().unwrap().len(), 1);
        assert_eq!(
            v["by_kernel"][0]["name"],
            "CUDA graph 5 launch (sum over its kernels)"
        );
    }
}
