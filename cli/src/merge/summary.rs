//! `summary.json` and `summary.txt` across ranks: for every region (by its path in the call
//! tree, merged over each rank's threads) and every metric, the per-rank totals, their
//! min/mean/max, the imbalance (max − mean) / max and the rank with the max.

use super::inputs::RankRun;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Jobs of at most this many ranks get a column per rank in summary.txt.
const PER_RANK_COLUMNS: usize = 8;

/// The wall-clock metric every region has.
const WALL: &str = "wall_clock.elapsed";

/// One value per rank (`None`: the rank has none).
type PerRank = Vec<Option<f64>>;

struct Metric {
    unit: String,
    totals: Vec<Option<f64>>,
}

struct Region {
    path: Vec<String>,
    counts: Vec<Option<f64>>,
    metrics: Vec<(String, Metric)>,
}

/// Accumulates the ranks' summaries, one at a time (each is read, folded in and dropped).
pub(crate) struct CrossRank {
    ranks: usize,
    regions: Vec<Region>,
    /// Counter name → each rank's last value.
    counters: Vec<(String, Vec<Option<f64>>)>,
    /// MPI call name → each rank's calls and bytes (from the trace).
    mpi: Vec<(String, PerRank, PerRank)>,
    index: HashMap<Vec<String>, usize>,
    /// Ranks without a summary.json, and why.
    pub(crate) missing: Vec<(u32, String)>,
}

impl CrossRank {
    pub(crate) fn new(ranks: usize) -> CrossRank {
        CrossRank {
            ranks,
            regions: Vec::new(),
            counters: Vec::new(),
            mpi: Vec::new(),
            index: HashMap::new(),
            missing: Vec::new(),
        }
    }

    /// Folds in the MPI calls of the rank at position `slot`: name → (calls, bytes).
    pub(crate) fn add_mpi(
        &mut self,
        slot: usize,
        calls: &std::collections::BTreeMap<String, (u64, u64)>,
    ) {
        for (name, (n, bytes)) in calls {
            let at = match self.mpi.iter().position(|(m, _, _)| m == name) {
                Some(at) => at,
                None => {
                    self.mpi
                        .push((name.clone(), vec![None; self.ranks], vec![None; self.ranks]));
                    self.mpi.len() - 1
                }
            };
            self.mpi[at].1[slot] = Some(*n as f64);
            self.mpi[at].2[slot] = Some(*bytes as f64);
        }
    }

    /// Folds in the summary of the rank at position `slot`.
    pub(crate) fn add(&mut self, slot: usize, run: &RankRun) {
        let Some(path) = &run.summary else {
            self.missing.push((run.rank, "no summary.json".into()));
            return;
        };
        let summary: Value = match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(v) => v,
            Err(e) => {
                self.missing
                    .push((run.rank, format!("{}: {e}", path.display())));
                return;
            }
        };
        for c in summary["counters"].as_array().into_iter().flatten() {
            let (Some(name), Some(last)) = (c["name"].as_str(), c["last"].as_f64()) else {
                continue;
            };
            let at = match self.counters.iter().position(|(n, _)| n == name) {
                Some(at) => at,
                None => {
                    self.counters
                        .push((name.to_string(), vec![None; self.ranks]));
                    self.counters.len() - 1
                }
            };
            self.counters[at].1[slot] = Some(last);
        }
        let mut stack: Vec<(Vec<String>, &Value)> = Vec::new();
        if let Some(nodes) = summary.get("merged").and_then(Value::as_array) {
            for n in nodes.iter().rev() {
                stack.push((Vec::new(), n));
            }
        }
        while let Some((parent, node)) = stack.pop() {
            let mut path = parent;
            path.push(node["name"].as_str().unwrap_or("?").to_string());
            let i = match self.index.get(&path) {
                Some(&i) => i,
                None => {
                    self.regions.push(Region {
                        path: path.clone(),
                        counts: vec![None; self.ranks],
                        metrics: Vec::new(),
                    });
                    self.index.insert(path.clone(), self.regions.len() - 1);
                    self.regions.len() - 1
                }
            };
            let region = &mut self.regions[i];
            region.counts[slot] = node["count"].as_f64();
            if let Some(metrics) = node["metrics"].as_object() {
                for (name, m) in metrics {
                    let Some(total) = m["total"].as_f64() else {
                        continue;
                    };
                    let at = match region.metrics.iter().position(|(n, _)| n == name) {
                        Some(at) => at,
                        None => {
                            region.metrics.push((
                                name.clone(),
                                Metric {
                                    unit: m["unit"].as_str().unwrap_or("").to_string(),
                                    totals: vec![None; self.ranks],
                                },
                            ));
                            region.metrics.len() - 1
                        }
                    };
                    region.metrics[at].1.totals[slot] = Some(total);
                }
            }
            if let Some(children) = node["children"].as_array() {
                for c in children.iter().rev() {
                    stack.push((path.clone(), c));
                }
            }
        }
    }
}

/// min/mean/max/imbalance of per-rank values (a rank without the region counts as 0).
struct Stat {
    min: f64,
    min_slot: usize,
    mean: f64,
    max: f64,
    max_slot: usize,
    imbalance: f64,
    present: usize,
}

fn stat(values: &[Option<f64>]) -> Stat {
    let v: Vec<f64> = values.iter().map(|x| x.unwrap_or(0.0)).collect();
    let (mut min_slot, mut max_slot) = (0, 0);
    for (i, x) in v.iter().enumerate() {
        if *x < v[min_slot] {
            min_slot = i;
        }
        if *x > v[max_slot] {
            max_slot = i;
        }
    }
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let max = v.get(max_slot).copied().unwrap_or(0.0);
    Stat {
        min: v.get(min_slot).copied().unwrap_or(0.0),
        min_slot,
        mean,
        max,
        max_slot,
        imbalance: if max > 0.0 { (max - mean) / max } else { 0.0 },
        present: values.iter().filter(|x| x.is_some()).count(),
    }
}

fn stat_json(values: &[Option<f64>], unit: &str, ranks: &[u32]) -> Value {
    let s = stat(values);
    json!({
        "unit": unit,
        "per_rank": values,
        "min": s.min,
        "min_rank": ranks[s.min_slot],
        "mean": s.mean,
        "max": s.max,
        "max_rank": ranks[s.max_slot],
        "imbalance": s.imbalance,
        "ranks_with_region": s.present,
    })
}

impl CrossRank {
    /// `summary.json` of the merge.
    pub(crate) fn to_json(&self, runs: &[RankRun], alignment: &Value) -> Value {
        let ranks: Vec<u32> = runs.iter().map(|r| r.rank).collect();
        let regions: Vec<Value> = self
            .regions
            .iter()
            .map(|r| {
                let mut metrics = Map::new();
                for (name, m) in &r.metrics {
                    metrics.insert(name.clone(), stat_json(&m.totals, &m.unit, &ranks));
                }
                let slowest = r
                    .metrics
                    .iter()
                    .find(|(n, _)| n == WALL)
                    .map(|(_, m)| ranks[stat(&m.totals).max_slot]);
                json!({
                    "name": r.path.last(),
                    "path": r.path,
                    "depth": r.path.len() - 1,
                    "slowest_rank": slowest,
                    "count": stat_json(&r.counts, "", &ranks),
                    "metrics": metrics,
                })
            })
            .collect();
        json!({
            "schema": "metron.merge-summary/1",
            "what": "per region (path in the call tree, merged over each rank's threads) and metric: the total of each rank (per_rank, in rank order; null: the rank never entered the region, counted as 0), min/mean/max over ranks, imbalance = (max - mean) / max, and the rank with the max (slowest_rank: by wall clock)",
            "ranks": runs.iter().map(|r| json!({
                "rank": r.rank,
                "host": r.host,
                "pid": r.pid,
                "exe": r.exe,
                "run_folder": r.dir,
                "duration_ns": r.end_monotonic_ns.saturating_sub(r.start_monotonic_ns),
            })).collect::<Vec<_>>(),
            "ranks_without_summary": self.missing.iter().map(|(r, why)| json!({"rank": r, "why": why})).collect::<Vec<_>>(),
            "alignment": alignment,
            "regions": regions,
            "mpi_calls": self.mpi.iter().map(|(name, calls, bytes)| json!({
                "name": name,
                "what": "each rank's calls and the sum of their mpi.bytes, from the trace",
                "calls": stat_json(calls, "", &ranks),
                "bytes": stat_json(bytes, "B", &ranks),
            })).collect::<Vec<_>>(),
            "counters": self.counters.iter().map(|(name, values)| {
                let mut v = stat_json(values, "", &ranks);
                v["name"] = json!(name);
                v["what"] = json!("each rank's last value of the counter");
                v
            }).collect::<Vec<_>>(),
        })
    }

    /// `summary.txt` of the merge: one table per metric.
    pub(crate) fn to_text(&self, runs: &[RankRun], header: &str) -> String {
        let ranks: Vec<u32> = runs.iter().map(|r| r.rank).collect();
        let mut out = String::new();
        let _ = writeln!(out, "{header}");
        let _ = writeln!(
            out,
            "imbalance = (max - mean) / max of the per-rank totals: 0 when all ranks do the same, \
             1 - 1/{n} = {:.2} when one rank does everything; a rank without the region counts 0.",
            1.0 - 1.0 / runs.len().max(1) as f64,
            n = runs.len()
        );
        for (r, why) in &self.missing {
            let _ = writeln!(out, "rank {r}: left out of the tables ({why})");
        }
        // Metrics in order of first appearance, wall clock first.
        let mut names: Vec<(String, String)> = vec![(WALL.to_string(), "ns".to_string())];
        for r in &self.regions {
            for (n, m) in &r.metrics {
                if !names.iter().any(|(x, _)| x == n) {
                    names.push((n.clone(), m.unit.clone()));
                }
            }
        }
        names.push(("count".to_string(), String::new()));
        let width = self
            .regions
            .iter()
            .map(|r| 2 * (r.path.len() - 1) + r.path.last().map_or(0, |n| n.chars().count()))
            .max()
            .unwrap_or(6)
            .clamp(6, 60);
        for (name, unit) in &names {
            let _ = writeln!(
                out,
                "\n{name}{}: per-rank totals",
                if unit.is_empty() {
                    String::new()
                } else {
                    format!(" [{unit}]")
                }
            );
            // Up to PER_RANK_COLUMNS ranks, each rank's total gets a column too.
            let per_rank = ranks.len() <= PER_RANK_COLUMNS;
            let mut head = format!(
                "{:<width$}  {:>5}  {:>12}  {:>12}  {:>12}  {:>9}  {:>8}  {:>8}",
                "region", "ranks", "min", "mean", "max", "imbalance", "min rank", "max rank"
            );
            if per_rank {
                for rank in &ranks {
                    let _ = write!(head, "  {:>12}", format!("rank {rank}"));
                }
            }
            let _ = writeln!(out, "{}", head.trim_end());
            for r in &self.regions {
                let values = if name == "count" {
                    &r.counts
                } else {
                    match r.metrics.iter().find(|(n, _)| n == name) {
                        Some((_, m)) => &m.totals,
                        None => continue,
                    }
                };
                let s = stat(values);
                let label = format!(
                    "{}{}",
                    "  ".repeat(r.path.len() - 1),
                    r.path.last().map_or("?", String::as_str)
                );
                let mut line = format!(
                    "{label:<width$}  {:>5}  {:>12}  {:>12}  {:>12}  {:>9.3}  {:>8}  {:>8}",
                    s.present,
                    show(s.min, unit),
                    show(s.mean, unit),
                    show(s.max, unit),
                    s.imbalance,
                    ranks[s.min_slot],
                    ranks[s.max_slot],
                );
                if per_rank {
                    for v in values {
                        let cell = v.map_or_else(|| "-".to_string(), |v| show(v, unit));
                        let _ = write!(line, "  {cell:>12}");
                    }
                }
                let _ = writeln!(out, "{line}");
            }
        }
        if !self.mpi.is_empty() {
            let _ = writeln!(
                out,
                "\nMPI bytes: each rank's sum of mpi.bytes per call (calls in parentheses: min/max)"
            );
            let _ = writeln!(
                out,
                "{:<16}  {:>5}  {:>12}  {:>12}  {:>12}  {:>9}  {:>8}  {:>8}  {:>13}",
                "call", "ranks", "min", "mean", "max", "imbalance", "min rank", "max rank", "calls"
            );
            for (name, calls, bytes) in &self.mpi {
                let s = stat(bytes);
                let c = stat(calls);
                let _ = writeln!(
                    out,
                    "{name:<16}  {:>5}  {:>12}  {:>12}  {:>12}  {:>9.3}  {:>8}  {:>8}  {:>13}",
                    s.present,
                    show(s.min, ""),
                    show(s.mean, ""),
                    show(s.max, ""),
                    s.imbalance,
                    ranks[s.min_slot],
                    ranks[s.max_slot],
                    format!("({}/{})", show(c.min, ""), show(c.max, "")),
                );
            }
        }
        if !self.counters.is_empty() {
            let _ = writeln!(out, "\ncounters: each rank's last value");
            let width = self
                .counters
                .iter()
                .map(|(n, _)| n.chars().count())
                .max()
                .unwrap_or(7)
                .clamp(7, 60);
            let _ = writeln!(
                out,
                "{:<width$}  {:>5}  {:>12}  {:>12}  {:>12}  {:>9}  {:>8}  {:>8}",
                "counter", "ranks", "min", "mean", "max", "imbalance", "min rank", "max rank"
            );
            for (name, values) in &self.counters {
                let s = stat(values);
                let _ = writeln!(
                    out,
                    "{name:<width$}  {:>5}  {:>12}  {:>12}  {:>12}  {:>9.3}  {:>8}  {:>8}",
                    s.present,
                    show(s.min, ""),
                    show(s.mean, ""),
                    show(s.max, ""),
                    s.imbalance,
                    ranks[s.min_slot],
                    ranks[s.max_slot],
                );
            }
        }
        out
    }
}

/// A value for a table: nanoseconds as ns/µs/ms/s, other units as numbers.
fn show(v: f64, unit: &str) -> String {
    if unit == "ns" {
        match v {
            v if v >= 1e9 => format!("{:.3} s", v / 1e9),
            v if v >= 1e6 => format!("{:.3} ms", v / 1e6),
            v if v >= 1e3 => format!("{:.3} µs", v / 1e3),
            v => format!("{v:.0} ns"),
        }
    } else if (v.fract() == 0.0 || v.abs() >= 1e3) && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imbalance_of_three_to_one() {
        let s = stat(&[Some(1.0), Some(1.0), Some(3.0), Some(1.0)]);
        assert_eq!((s.max_slot, s.min_slot), (2, 0));
        assert!((s.mean - 1.5).abs() < 1e-12);
        assert!((s.imbalance - 0.5).abs() < 1e-12);
        let even = stat(&[Some(2.0), Some(2.0)]);
        assert_eq!(even.imbalance, 0.0);
        let absent = stat(&[Some(4.0), None]);
        assert_eq!((absent.present, absent.imbalance), (1, 0.5));
    }
}
