//! GPU totals in `summary.txt` / `summary.json` (key `gpu`): per kernel name, per Metron
//! region (the region open on the launching thread, see [`crate::gpu`]), per copy kind and
//! per API function. Resolved at the end of the run, when every launch has been joined.

use super::stats::Stats;
use crate::gpu::{GpuKind, GpuRecord};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The GPU records of the run, summarized at its end.
#[derive(Default)]
pub(crate) struct GpuSummary {
    records: Vec<GpuRecord>,
}

#[derive(Default)]
struct Totals {
    kernels: BTreeMap<String, Stats>,
    regions: BTreeMap<String, (Stats, u64)>,
    copies: BTreeMap<String, (Stats, u64)>,
    apis: BTreeMap<String, Stats>,
}

impl GpuSummary {
    pub(crate) fn add(&mut self, records: &[GpuRecord]) {
        self.records.extend_from_slice(records);
    }

    fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for r in &self.records {
            let ns = r.duration_ns() as f64;
            match r.kind {
                GpuKind::Kernel => {
                    t.kernels.entry(r.name.to_string()).or_default().push(ns);
                    let region =
                        crate::gpu::region_of(r.correlation).map_or("(unknown)", |(name, _)| name);
                    let e = t.regions.entry(region.to_string()).or_default();
                    e.0.push(ns);
                }
                GpuKind::Memcpy | GpuKind::Memset => {
                    let name = if r.kind == GpuKind::Memset {
                        "Memset".to_string()
                    } else {
                        format!("Memcpy {}", r.name)
                    };
                    let e = t.copies.entry(name).or_default();
                    e.0.push(ns);
                    e.1 += r.bytes;
                }
                GpuKind::RuntimeApi | GpuKind::DriverApi => {
                    t.apis.entry(r.name.to_string()).or_default().push(ns);
                }
            }
        }
        t
    }

    pub(crate) fn to_json(&self) -> Value {
        if self.records.is_empty() {
            return Value::Null;
        }
        let t = self.totals();
        let stats = |s: &Stats| json!({"count": s.count, "total_ns": s.total, "min_ns": s.min, "max_ns": s.max, "mean_ns": s.mean()});
        json!({
            "kernels": t.kernels.iter().map(|(n, s)| { let mut v = stats(s); v["name"] = json!(n); v }).collect::<Vec<_>>(),
            "kernels_by_region": t.regions.iter().map(|(n, (s, _))| { let mut v = stats(s); v["region"] = json!(n); v }).collect::<Vec<_>>(),
            "copies": t.copies.iter().map(|(n, (s, b))| { let mut v = stats(s); v["name"] = json!(n); v["bytes"] = json!(b); v }).collect::<Vec<_>>(),
            "api": t.apis.iter().map(|(n, s)| { let mut v = stats(s); v["name"] = json!(n); v }).collect::<Vec<_>>(),
        })
    }

    pub(crate) fn write_text(&self, out: &mut String) {
        if self.records.is_empty() {
            return;
        }
        let t = self.totals();
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
            t.kernels
                .iter()
                .map(|(n, s)| (n.clone(), s, None))
                .collect(),
        );
        table(
            "GPU kernels by launching region",
            t.regions
                .iter()
                .map(|(n, (s, _))| (n.clone(), s, None))
                .collect(),
        );
        table(
            "GPU copies and sets",
            t.copies
                .iter()
                .map(|(n, (s, b))| (n.clone(), s, Some(*b)))
                .collect(),
        );
        table(
            "CUDA API calls (host)",
            t.apis.iter().map(|(n, s)| (n.clone(), s, None)).collect(),
        );
    }
}
