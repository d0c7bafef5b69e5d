//! `summary.txt` and `summary.json`: a tree of regions per thread and merged across threads,
//! with count, total, mean, min, max, stddev and % of parent for every metric of every region
//! (the timemory-style report).

use super::Stats;
use crate::callsite::Callsite;
use crate::sink::{Died, Event, RunInfo, Sink, ThreadInfo};
use metron_components::Unit;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The metric every region has.
pub const WALL_METRIC: &str = "wall_clock.elapsed";

/// The region Metron records around its own set-up work on an application thread (a GPU
/// feature's first-launch work that could not move off the program's timeline). Its time is
/// taken out of the wall time of every region that contains it, and said in the summary.
pub const SETUP_REGION: &str = "metron set-up";

/// Name and unit of metric `index` of a region at `site` (0 is the wall clock).
fn metric_names(site: &Callsite) -> Vec<(String, Unit)> {
    let mut names = vec![(WALL_METRIC.to_string(), Unit::Nanoseconds)];
    for component in site.components {
        for field in component.named_fields() {
            let base = format!("{}.{}", component.name, field.name);
            // A bundle may hold a WallClock, or one component twice: number the repeats so
            // no metric hides another (`wall_clock.elapsed#2`).
            let repeats = names
                .iter()
                .filter(|(n, _)| *n == base || n.starts_with(&format!("{base}#")))
                .count();
            let name = if repeats == 0 {
                base
            } else {
                format!("{base}#{}", repeats + 1)
            };
            names.push((name, field.unit));
        }
    }
    names
}

#[derive(Clone)]
struct Node {
    site: Option<&'static Callsite>,
    children: Vec<usize>,
    metrics: Vec<Stats>,
    /// Metron's set-up time (ns) taken out of this region's wall time ([`SETUP_REGION`]).
    setup_excluded_ns: u64,
}

/// A call tree; node 0 is the root and has no site.
#[derive(Clone)]
struct Tree {
    nodes: Vec<Node>,
}

impl Tree {
    fn new() -> Tree {
        Tree {
            nodes: vec![Node {
                site: None,
                children: Vec::new(),
                metrics: Vec::new(),
                setup_excluded_ns: 0,
            }],
        }
    }

    fn child(&mut self, parent: usize, site: &'static Callsite) -> usize {
        let found = self.nodes[parent]
            .children
            .iter()
            .copied()
            .find(|c| self.nodes[*c].site.is_some_and(|s| std::ptr::eq(s, site)));
        if let Some(child) = found {
            return child;
        }
        let width = 1 + metron_components::total_fields(site.components);
        self.nodes.push(Node {
            site: Some(site),
            children: Vec::new(),
            metrics: vec![Stats::default(); width],
            setup_excluded_ns: 0,
        });
        let id = self.nodes.len() - 1;
        self.nodes[parent].children.push(id);
        id
    }

    /// Adds `other`'s node `from` (and its subtree) under this tree's `into`.
    fn merge_from(&mut self, into: usize, other: &Tree, from: usize) {
        for &child in &other.nodes[from].children {
            let site = other.nodes[child].site.expect("non-root nodes have sites");
            let mine = self.child(into, site);
            for (m, o) in self.nodes[mine]
                .metrics
                .iter_mut()
                .zip(&other.nodes[child].metrics)
            {
                m.merge(o);
            }
            self.nodes[mine].setup_excluded_ns += other.nodes[child].setup_excluded_ns;
            self.merge_from(mine, other, child);
        }
    }
}

#[derive(Default)]
struct CounterStats {
    stats: Stats,
    last: f64,
    /// When `last` was recorded, so merging keeps the latest value in time.
    last_ns: u64,
}

struct ThreadSummary {
    info: ThreadInfo,
    tree: Tree,
    /// Open regions: their node and the set-up time (ns) that ended inside them so far.
    open: Vec<(usize, u64)>,
    /// Set-up slices ended on this thread, and their total time (ns).
    setup: (u64, u64),
    counters: BTreeMap<&'static str, CounterStats>,
    marks: BTreeMap<&'static str, u64>,
    dropped: u64,
}

/// The derived metrics (`METRON_METRICS`) of one region from its counter totals: called with
/// `total(counter)`, the region's total of `perf_counters.<counter>` if counted, it returns each
/// computable metric and its value.
pub type DerivedMetrics = Box<dyn Fn(&dyn Fn(&str) -> Option<f64>) -> Vec<(String, f64)> + Send>;

/// What the runtime hands the summary besides the events: plain values and functions it chose,
/// so that the summary never reads a source's state itself.
#[derive(Default)]
pub struct SummaryConfig {
    /// The derived metrics asked for (`None`: none asked for).
    pub derived: Option<DerivedMetrics>,
    /// How the run died, asked at the end of the run (`None`: crash handling off).
    pub died: Option<fn() -> Option<Died>>,
    /// The GPU facts besides the records (launch → region), filled by the GPU glue.
    pub gpu: crate::sink::gpu::GpuContext,
}

/// The summary sink.
pub struct SummarySink {
    config: SummaryConfig,
    threads: BTreeMap<u64, ThreadSummary>,
    /// Async ranges by name (`async_ranges.rs`).
    async_ranges: super::async_ranges::AsyncSummary,
    /// Call-stack samples and region backtraces (`profile.rs`).
    samples: super::profile::SampleCollector,
    /// GPU totals per kernel and per region (`gpu_summary.rs`).
    gpu: super::gpu_summary::GpuSummary,
}

impl Default for SummarySink {
    fn default() -> Self {
        SummarySink::new()
    }
}

impl SummarySink {
    /// An empty summary.
    pub fn new() -> SummarySink {
        SummarySink::with_config(SummaryConfig::default())
    }

    /// An empty summary with the runtime's derived metrics and crash report.
    pub fn with_config(config: SummaryConfig) -> SummarySink {
        SummarySink {
            gpu: super::gpu_summary::GpuSummary::with_context(config.gpu.clone()),
            config,
            threads: BTreeMap::new(),
            async_ranges: Default::default(),
            samples: Default::default(),
        }
    }

    fn merged(&self) -> Tree {
        let mut merged = Tree::new();
        for thread in self.threads.values() {
            merged.merge_from(0, &thread.tree, 0);
        }
        merged
    }

    fn died(&self) -> Option<Died> {
        self.config.died.and_then(|died| died())
    }

    /// The summary as JSON (the `summary.json` schema, see `docs/src/outputs.md`).
    pub fn to_json(&self, run: &RunInfo) -> Value {
        let derived = self.config.derived.as_ref();
        let merged = self.merged();
        let mut counters: BTreeMap<&str, CounterStats> = BTreeMap::new();
        let mut marks: BTreeMap<&str, u64> = BTreeMap::new();
        for t in self.threads.values() {
            for (name, c) in &t.counters {
                let entry = counters.entry(name).or_default();
                entry.stats.merge(&c.stats);
                if c.last_ns >= entry.last_ns {
                    entry.last = c.last;
                    entry.last_ns = c.last_ns;
                }
            }
            for (name, n) in &t.marks {
                *marks.entry(name).or_default() += n;
            }
        }
        json!({
            "schema": "metron.summary/1",
            "exe": run.exe,
            "pid": run.pid,
            "duration_ns": run.end_ns.saturating_sub(run.start_ns),
            "merged": nodes_json(&merged, 0, derived),
            "threads": self.threads.values().map(|t| json!({
                "tid": t.info.tid,
                "name": t.info.name,
                "index": t.info.index,
                "is_metron": t.info.is_metron,
                "records_dropped": t.dropped,
                "regions": nodes_json(&t.tree, 0, derived),
            })).collect::<Vec<_>>(),
            "counters": counters.iter().map(|(name, c)| json!({
                "name": name,
                "count": c.stats.count,
                "last": c.last,
                "min": c.stats.min,
                "max": c.stats.max,
                "mean": c.stats.mean(),
            })).collect::<Vec<_>>(),
            "marks": marks.iter().map(|(name, n)| json!({"name": name, "count": n})).collect::<Vec<_>>(),
            "async_ranges": self.async_ranges.to_json(),
            "sampling": self.samples.summarize().to_json(),
            "gpu": self.gpu.to_json(),
            "died": self.died(),
            "setup": {
                "region": SETUP_REGION,
                "slices": self.setup().0,
                "ns": self.setup().1,
            },
        })
    }

    /// Set-up slices on every thread and their total time (ns).
    fn setup(&self) -> (u64, u64) {
        self.threads
            .values()
            .fold((0, 0), |(n, ns), t| (n + t.setup.0, ns + t.setup.1))
    }

    /// The summary as text (`summary.txt`).
    pub fn to_text(&self, run: &RunInfo) -> String {
        let mut out = String::new();
        let regions: u64 = self
            .threads
            .values()
            .flat_map(|t| t.tree.nodes.iter().skip(1))
            .map(|n| n.metrics[0].count)
            .sum();
        let _ = writeln!(
            out,
            "metron summary: {} (pid {}), {} threads, {} regions, {:.3} ms",
            run.exe,
            run.pid,
            self.threads.len(),
            regions,
            run.end_ns.saturating_sub(run.start_ns) as f64 / 1e6
        );
        let (slices, setup_ns) = self.setup();
        if slices > 0 {
            let _ = writeln!(
                out,
                "metron set-up: {slices} slice(s), {:.3} ms of Metron's own set-up on application threads, taken out of the wall time of the regions that contain them",
                setup_ns as f64 / 1e6
            );
        }
        if let Some(died) = self.died() {
            let _ = writeln!(
                out,
                "died: {} (address {}) on thread {} \"{}\" at {} ns; regions still open were ended there (open_at_crash)",
                died.signal, died.address, died.thread, died.thread_name, died.ts_ns
            );
            for (i, frame) in died.frames.iter().enumerate() {
                let _ = writeln!(out, "  #{i:<3} {frame}");
            }
        }
        let merged = self.merged();
        write_tree_tables(
            &mut out,
            &format!("merged across {} threads", self.threads.len()),
            &merged,
            self.config.derived.as_ref(),
        );
        for t in self.threads.values() {
            let role = if t.info.is_metron {
                ", metron's own"
            } else {
                ""
            };
            let title = format!(
                "thread {} \"{}\" (#{}{})",
                t.info.tid, t.info.name, t.info.index, role
            );
            write_tree_tables(&mut out, &title, &t.tree, self.config.derived.as_ref());
            if t.dropped > 0 {
                let _ = writeln!(out, "  {} records dropped on this thread", t.dropped);
            }
        }
        let mut counters: Vec<(&str, &CounterStats, u32)> = Vec::new();
        for t in self.threads.values() {
            for (name, c) in &t.counters {
                counters.push((name, c, t.info.tid));
            }
        }
        if !counters.is_empty() {
            let _ = writeln!(out, "\ncounters");
            let _ = writeln!(
                out,
                "| {:<32} | {:>8} | {:>8} | {:>14} | {:>14} | {:>14} | {:>14} |",
                "counter", "thread", "count", "last", "min", "max", "mean"
            );
            for (name, c, tid) in counters {
                let _ = writeln!(
                    out,
                    "| {:<32} | {:>8} | {:>8} | {:>14.3} | {:>14.3} | {:>14.3} | {:>14.3} |",
                    name,
                    tid,
                    c.stats.count,
                    c.last,
                    c.stats.min,
                    c.stats.max,
                    c.stats.mean()
                );
            }
        }
        let marks: BTreeMap<&str, u64> = self
            .threads
            .values()
            .flat_map(|t| t.marks.iter().map(|(k, v)| (*k, *v)))
            .fold(BTreeMap::new(), |mut m, (k, v)| {
                *m.entry(k).or_default() += v;
                m
            });
        if !marks.is_empty() {
            let _ = writeln!(out, "\nmarks");
            for (name, n) in marks {
                let _ = writeln!(out, "  {name}: {n}");
            }
        }
        self.async_ranges.write_text(&mut out);
        self.samples.summarize().write_text(&mut out);
        self.gpu.write_text(&mut out);
        out
    }
}

fn nodes_json(tree: &Tree, node: usize, derive: Option<&DerivedMetrics>) -> Vec<Value> {
    let parent_wall = tree.nodes[node].metrics.first().map(|s| s.total);
    tree.nodes[node]
        .children
        .iter()
        .map(|&c| {
            let n = &tree.nodes[c];
            let site = n.site.expect("non-root");
            // A set-up slice's time is already out of this region's wall time.
            let children_wall: f64 = n
                .children
                .iter()
                .filter(|k| tree.nodes[**k].site.is_none_or(|s| s.name != SETUP_REGION))
                .map(|k| tree.nodes[*k].metrics[0].total)
                .sum();
            let mut metrics = serde_json::Map::new();
            for ((name, unit), s) in metric_names(site).into_iter().zip(&n.metrics) {
                // Fields with no value (unused or unavailable counters) are left out.
                if s.count == 0 && name != WALL_METRIC {
                    continue;
                }
                let mut m = json!({
                    "unit": unit.symbol(),
                    "count": s.count,
                    "total": s.total,
                    "mean": s.mean(),
                    "min": finite(s.min),
                    "max": finite(s.max),
                    "stddev": s.stddev(),
                });
                if name == WALL_METRIC {
                    m["pct_parent"] = json!(parent_wall
                        .filter(|p| *p > 0.0)
                        .map(|p| 100.0 * s.total / p));
                    m["self"] = json!(s.total - children_wall);
                    if n.setup_excluded_ns > 0 {
                        m["setup_excluded"] = json!(n.setup_excluded_ns);
                    }
                }
                metrics.insert(name, m);
            }
            let derived: serde_json::Map<String, Value> = derived_metrics(derive, site, &n.metrics)
                .into_iter()
                .map(|(name, v)| (name, json!(v)))
                .collect();
            json!({
                "name": site.name,
                "file": site.file,
                "line": site.line,
                "module": site.module,
                "count": n.metrics[0].count,
                "metrics": metrics,
                "derived": derived,
                "children": nodes_json(tree, c, derive),
            })
        })
        .collect()
}

/// The derived metrics of `METRON_METRICS` for one region, from its counter totals.
fn derived_metrics(
    derived: Option<&DerivedMetrics>,
    site: &Callsite,
    metrics: &[Stats],
) -> Vec<(String, f64)> {
    let Some(derived) = derived else {
        return Vec::new();
    };
    let names = metric_names(site);
    let total = |counter: &str| {
        let wanted = format!(
            "{}.{counter}",
            <metron_components::PerfCounters as metron_components::Component>::NAME
        );
        names
            .iter()
            .zip(metrics)
            .find(|((n, _), s)| *n == wanted && s.count > 0)
            .map(|(_, s)| s.total)
    };
    derived(&total)
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// How a unit is shown in text: (suffix, divisor).
fn display_unit(unit: Unit) -> (&'static str, f64) {
    match unit {
        Unit::Nanoseconds => ("us", 1e3),
        Unit::Bytes => ("KiB", 1024.0),
        Unit::Count => ("count", 1.0),
        Unit::Number => ("", 1.0),
    }
}

fn write_tree_tables(out: &mut String, title: &str, tree: &Tree, derive: Option<&DerivedMetrics>) {
    // Every metric that appears in this tree, wall clock first.
    let mut metrics: Vec<(String, Unit)> = Vec::new();
    for node in tree.nodes.iter().skip(1) {
        let names = metric_names(node.site.expect("non-root"));
        for (m, s) in names.into_iter().zip(&node.metrics) {
            if (s.count > 0 || m.0 == WALL_METRIC) && !metrics.iter().any(|(n, _)| *n == m.0) {
                metrics.push(m);
            }
        }
    }
    if metrics.is_empty() {
        let _ = writeln!(out, "\n{title}: no regions");
        return;
    }
    for (metric, unit) in metrics {
        let (suffix, divisor) = display_unit(unit);
        let _ = writeln!(out, "\n{metric} [{suffix}], {title}");
        let _ = writeln!(
            out,
            "| {:<40} | {:>9} | {:>12} | {:>12} | {:>12} | {:>12} | {:>12} | {:>8} | {:>8} |",
            "region", "count", "total", "mean", "min", "max", "stddev", "% parent", "% self"
        );
        let _ = writeln!(
            out,
            "|{}|",
            ["-"; 9]
                .iter()
                .zip([42, 11, 14, 14, 14, 14, 14, 10, 10])
                .map(|(d, w)| d.repeat(w))
                .collect::<Vec<_>>()
                .join("|")
        );
        write_rows(out, tree, 0, 0, &metric, divisor);
    }
    write_derived(out, title, tree, derive);
}

/// One line per region and derived metric (`METRON_METRICS`), from the region's totals.
fn write_derived(out: &mut String, title: &str, tree: &Tree, derive: Option<&DerivedMetrics>) {
    let mut rows = Vec::new();
    for node in tree.nodes.iter().skip(1) {
        let site = node.site.expect("non-root");
        for (metric, value) in derived_metrics(derive, site, &node.metrics) {
            rows.push((site.name, metric, value));
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "
derived metrics, {title}"
    );
    let _ = writeln!(
        out,
        "| {:<40} | {:<24} | {:>14} |",
        "region", "metric", "value"
    );
    for (region, metric, value) in rows {
        let region: String = region.chars().take(40).collect();
        let _ = writeln!(out, "| {region:<40} | {metric:<24} | {value:>14.4} |");
    }
}

fn write_rows(
    out: &mut String,
    tree: &Tree,
    node: usize,
    depth: usize,
    metric: &str,
    divisor: f64,
) {
    for &c in &tree.nodes[node].children {
        let n = &tree.nodes[c];
        let site = n.site.expect("non-root");
        let names = metric_names(site);
        if let Some(index) = names
            .iter()
            .position(|(name, _)| name == metric)
            .filter(|i| n.metrics[*i].count > 0 || *i == 0)
        {
            let s = &n.metrics[index];
            let parent = tree.nodes[node]
                .metrics
                .get(index)
                .filter(|_| node != 0)
                .map(|p| p.total);
            let pct_parent = match parent {
                Some(p) if p > 0.0 => format!("{:.1}", 100.0 * s.total / p),
                _ => "-".into(),
            };
            let children: f64 = n
                .children
                .iter()
                .filter_map(|k| tree.nodes[*k].metrics.get(index))
                .map(|m| m.total)
                .sum();
            let pct_self = if s.total > 0.0 && index == 0 {
                format!("{:.1}", 100.0 * (s.total - children) / s.total)
            } else {
                "-".into()
            };
            let label = if depth == 0 {
                site.name.to_string()
            } else {
                format!("{}|_ {}", "  ".repeat(depth - 1), site.name)
            };
            let label: String = label.chars().take(40).collect();
            let _ = writeln!(
                out,
                "| {:<40} | {:>9} | {:>12.3} | {:>12.3} | {:>12.3} | {:>12.3} | {:>12.3} | {:>8} | {:>8} |",
                label,
                s.count,
                s.total / divisor,
                s.mean() / divisor,
                finite(s.min) / divisor,
                finite(s.max) / divisor,
                s.stddev() / divisor,
                pct_parent,
                pct_self
            );
        }
        write_rows(out, tree, c, depth + 1, metric, divisor);
    }
}

impl Sink for SummarySink {
    fn name(&self) -> &str {
        "summary"
    }

    fn events(&mut self, thread: &ThreadInfo, events: &[Event<'_>]) {
        self.async_ranges.events(thread.index, events);
        self.samples.events(thread, events);
        let t = self
            .threads
            .entry(thread.index)
            .or_insert_with(|| ThreadSummary {
                info: thread.clone(),
                tree: Tree::new(),
                open: Vec::new(),
                counters: BTreeMap::new(),
                marks: BTreeMap::new(),
                dropped: 0,
                setup: (0, 0),
            });
        t.info = thread.clone();
        for event in events {
            match *event {
                Event::Begin { site, .. } => {
                    let parent = t.open.last().map_or(0, |o| o.0);
                    let node = t.tree.child(parent, site);
                    t.open.push((node, 0));
                }
                Event::End {
                    begin_ns,
                    ts_ns,
                    values,
                    ..
                } => {
                    let Some((node, excluded)) = t.open.pop() else {
                        continue;
                    };
                    let wall = ts_ns.saturating_sub(begin_ns);
                    let is_setup = t.tree.nodes[node]
                        .site
                        .is_some_and(|s| s.name == SETUP_REGION);
                    if is_setup {
                        // Every region this set-up slice interrupted loses its time.
                        t.setup.0 += 1;
                        t.setup.1 += wall;
                        for open in &mut t.open {
                            open.1 += wall;
                        }
                    }
                    t.tree.nodes[node].setup_excluded_ns += excluded;
                    let metrics = &mut t.tree.nodes[node].metrics;
                    metrics[0].push(wall.saturating_sub(excluded) as f64);
                    for (m, v) in metrics[1..].iter_mut().zip(values) {
                        m.push(*v);
                    }
                }
                Event::Counter { site, value, ts_ns } => {
                    let c = t.counters.entry(site.name).or_default();
                    c.stats.push(value);
                    c.last = value;
                    c.last_ns = ts_ns;
                }
                Event::Instant { site, .. } => *t.marks.entry(site.name).or_default() += 1,
                Event::Dropped { count, .. } => t.dropped += count,
                Event::Sample { .. } | Event::AsyncBegin { .. } | Event::AsyncEnd { .. } => {}
                Event::Annotation { .. } | Event::ThreadName { .. } => {}
            }
        }
    }

    fn gpu_records(&mut self, records: &[crate::sink::GpuRecord]) {
        self.gpu.add(records);
    }

    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let txt = run.output_dir.join("summary.txt");
        let json_path = run.output_dir.join("summary.json");
        self.async_ranges.finish(run.end_ns);
        std::fs::write(&txt, self.to_text(run))?;
        std::fs::write(
            &json_path,
            serde_json::to_string_pretty(&self.to_json(run))? + "\n",
        )?;
        Ok(vec![txt, json_path])
    }
}
