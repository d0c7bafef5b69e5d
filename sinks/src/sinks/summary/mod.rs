//! `summary.txt` and `summary.json`: a tree of regions per thread and merged across threads,
//! with count, total, mean, min, max, stddev and % of parent for every metric of every region
//! (the timemory-style report).

use super::perfetto_encode::FastMap;
use super::Stats;
use crate::callsite::Callsite;
use crate::sink::{Died, EmptyRegion, Event, Present, RunInfo, Sink, ThreadInfo};
use metron_components::Unit;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

mod json;
mod text;
mod threads;

use json::{Document, Nodes, ThreadDoc};
use text::{write_tree_tables, TOP_REGIONS};
use threads::ThreadGroup;

/// The metric every region has.
pub const WALL_METRIC: &str = "wall_clock.elapsed";

/// The region Metron records around its own set-up work on an application thread (a GPU
/// feature's first-launch work that could not move off the program's timeline). Its time is
/// taken out of the wall time of every region that contains it, and said in the summary.
pub const SETUP_REGION: &str = "metron set-up";

/// Names and units of the metrics of a region at `site` (0 is the wall clock), made once per
/// bundle (they follow from the site's component list alone): the text and JSON summaries ask
/// for every node and every metric table. A region with no components (almost all, in a
/// program of many names) shares one list and keeps nothing in the cache.
fn metric_names(site: &Callsite) -> Arc<[(String, Unit)]> {
    type Names = Arc<[(String, Unit)]>;
    static WALL_ONLY: OnceLock<Names> = OnceLock::new();
    // Keyed by the component list (its address and length): sites of one bundle share it.
    static BY_BUNDLE: Mutex<Option<FastMap<(usize, usize), Names>>> = Mutex::new(None);
    if site.components.is_empty() {
        return Arc::clone(
            WALL_ONLY.get_or_init(|| Arc::from(vec![(WALL_METRIC.to_string(), Unit::Nanoseconds)])),
        );
    }
    let mut cache = BY_BUNDLE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(FastMap::default);
    let key = (site.components.as_ptr() as usize, site.components.len());
    let names = cache
        .entry(key)
        .or_insert_with(|| Arc::from(component_metric_names(site)));
    Arc::clone(names)
}

fn component_metric_names(site: &Callsite) -> Vec<(String, Unit)> {
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
    /// This node is a [`SETUP_REGION`] (decided once, not by a name compare per region).
    is_setup: bool,
    /// The child found last under this node (call site address, child): a loop that opens
    /// the same region again under the same parent finds it with one compare, at every depth
    /// (a region holding one small region alternates between two parents).
    last_child: (usize, usize),
}

/// Children a node looks through one by one; past this many, its children are found through
/// the tree's index (a program with 10^5 region names under one parent would otherwise pay a
/// scan of every sibling for each new name: quadratic time).
const SCANNED_CHILDREN: usize = 8;

/// A call tree; node 0 is the root and has no site.
#[derive(Clone)]
struct Tree {
    nodes: Vec<Node>,
    /// (parent, call site address) -> child, for parents with many children.
    index: FastMap<(usize, usize), usize>,
}

impl Tree {
    fn new() -> Tree {
        Tree {
            nodes: vec![Node {
                site: None,
                children: Vec::new(),
                metrics: Vec::new(),
                setup_excluded_ns: 0,
                is_setup: false,
                last_child: (0, 0),
            }],
            index: FastMap::default(),
        }
    }

    /// The child of `parent` for `site`, made if new. Constant time per call whatever the
    /// number of siblings.
    #[inline]
    fn child(&mut self, parent: usize, site: &'static Callsite) -> usize {
        let address = site as *const Callsite as usize;
        let (last, child) = self.nodes[parent].last_child;
        if last == address {
            return child;
        }
        let child = self.find_or_add(parent, site, (parent, address));
        self.nodes[parent].last_child = (address, child);
        child
    }

    fn find_or_add(
        &mut self,
        parent: usize,
        site: &'static Callsite,
        key: (usize, usize),
    ) -> usize {
        let siblings = &self.nodes[parent].children;
        let found = if siblings.len() <= SCANNED_CHILDREN {
            siblings
                .iter()
                .copied()
                .find(|c| self.nodes[*c].site.is_some_and(|s| std::ptr::eq(s, site)))
        } else {
            self.index.get(&key).copied()
        };
        if let Some(child) = found {
            return child;
        }
        let width = 1 + metron_components::total_fields(site.components);
        self.nodes.push(Node {
            site: Some(site),
            children: Vec::new(),
            metrics: vec![Stats::default(); width],
            setup_excluded_ns: 0,
            is_setup: site.name == SETUP_REGION,
            last_child: (0, 0),
        });
        let id = self.nodes.len() - 1;
        self.nodes[parent].children.push(id);
        let len = self.nodes[parent].children.len();
        if len == SCANNED_CHILDREN + 1 {
            // The parent just outgrew the scan: index the siblings it already had.
            for i in 0..len {
                let c = self.nodes[parent].children[i];
                let s = self.nodes[c].site.expect("non-root");
                self.index
                    .insert((parent, s as *const Callsite as usize), c);
            }
        } else if len > SCANNED_CHILDREN {
            self.index.insert(key, id);
        }
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

impl ThreadSummary {
    fn new(info: ThreadInfo) -> ThreadSummary {
        ThreadSummary {
            info,
            tree: Tree::new(),
            open: Vec::new(),
            counters: BTreeMap::new(),
            marks: BTreeMap::new(),
            dropped: 0,
            setup: (0, 0),
        }
    }
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
    /// Calls refused by a documented limit (nesting depth, name length, ...), asked at the end
    /// of the run: (what, count), shown in the summary's header (`None`: none reported).
    pub refused: Option<Refusals>,
    /// A sampling call tree per thread in `summary.json` besides the merged one
    /// (`METRON_SAMPLING_PER_THREAD`).
    pub sampling_per_thread: bool,
}

/// Reports calls refused by a documented limit: (what was refused, how many times).
pub type Refusals = fn() -> Vec<(String, u64)>;

/// The summary sink.
pub struct SummarySink {
    config: SummaryConfig,
    /// Threads with tables of their own, by index.
    threads: BTreeMap<u64, ThreadSummary>,
    /// Threads folded by (name, Metron's own) when there are many (`threads.rs`).
    groups: BTreeMap<(String, bool), ThreadGroup>,
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
    /// The summary of `thread`, made at its first batch (and its name kept current).
    fn thread(&mut self, thread: &ThreadInfo) -> &mut ThreadSummary {
        if !self.threads.contains_key(&thread.index) {
            self.fold_while_running();
        }
        let t = self
            .threads
            .entry(thread.index)
            .or_insert_with(|| ThreadSummary::new(thread.clone()));
        if t.info != *thread {
            t.info = thread.clone();
        }
        t
    }

    /// An empty summary.
    pub fn new() -> SummarySink {
        SummarySink::with_config(SummaryConfig::default())
    }

    /// An empty summary with the runtime's derived metrics and crash report.
    pub fn with_config(config: SummaryConfig) -> SummarySink {
        SummarySink {
            gpu: super::gpu_summary::GpuSummary::with_context(config.gpu.clone()),
            samples: super::profile::SampleCollector::new(config.sampling_per_thread),
            config,
            threads: BTreeMap::new(),
            groups: BTreeMap::new(),
            async_ranges: Default::default(),
        }
    }

    fn merged(&self) -> Tree {
        let mut merged = Tree::new();
        for (thread, _) in self.tables() {
            merged.merge_from(0, &thread.tree, 0);
        }
        merged
    }

    fn died(&self) -> Option<Died> {
        self.config.died.and_then(|died| died())
    }

    /// The summary as JSON (the `summary.json` schema, see `docs/src/outputs.md`).
    pub fn to_json(&self, run: &RunInfo) -> Value {
        let merged = self.merged();
        serde_json::to_value(self.document(run, &merged)).unwrap_or(Value::Null)
    }

    /// `summary.json`'s document, written as it is serialized: the region trees go straight
    /// from the trees to the file (no `Value` per region, which cost kilobytes per name).
    fn document<'a>(&'a self, run: &'a RunInfo, merged: &'a Tree) -> Document<'a> {
        let derived = self.config.derived.as_ref();
        let mut counters: BTreeMap<&str, CounterStats> = BTreeMap::new();
        let mut marks: BTreeMap<&str, u64> = BTreeMap::new();
        for (t, _) in self.tables() {
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
        let mut rest = json!({
            "schema": "metron.summary/1",
            "exe": run.exe,
            "pid": run.pid,
            "duration_ns": run.end_ns.saturating_sub(run.start_ns),
            "refused": self
                .refused()
                .into_iter()
                .map(|(what, n)| (what, json!(n)))
                .collect::<serde_json::Map<String, Value>>(),
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
            "gpu": self.gpu.to_json(),
            "died": self.died(),
            "setup": {
                "region": SETUP_REGION,
                "slices": self.setup().0,
                "ns": self.setup().1,
            },
        });
        // Moved in: through `json!` the sampled call trees would be serialized once more.
        rest["sampling"] = self.samples.summarize().to_json();
        Document {
            rest,
            merged: Nodes {
                tree: merged,
                node: 0,
                derive: derived,
            },
            threads: self
                .tables()
                .map(|(t, folded)| ThreadDoc {
                    summary: t,
                    folded,
                    regions: Nodes {
                        tree: &t.tree,
                        node: 0,
                        derive: derived,
                    },
                })
                .collect(),
        }
    }

    /// Set-up slices on every thread and their total time (ns).
    fn setup(&self) -> (u64, u64) {
        self.tables()
            .fold((0, 0), |(n, ns), (t, _)| (n + t.setup.0, ns + t.setup.1))
    }

    /// Calls refused by a documented limit, by what was refused (the runtime's report).
    fn refused(&self) -> Vec<(String, u64)> {
        self.config.refused.map(|f| f()).unwrap_or_default()
    }

    /// The summary as text (`summary.txt`).
    pub fn to_text(&self, run: &RunInfo) -> String {
        self.text(run, &self.merged())
    }

    fn text(&self, run: &RunInfo, merged: &Tree) -> String {
        let mut out = String::new();
        let regions: u64 = self
            .tables()
            .flat_map(|(t, _)| t.tree.nodes.iter().skip(1))
            .map(|n| n.metrics[0].count)
            .sum();
        let _ = writeln!(
            out,
            "metron summary: {} (pid {}), {} threads, {} regions, {:.3} ms",
            run.exe,
            run.pid,
            self.thread_count(),
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
        let refused = self.refused();
        if !refused.is_empty() {
            let list: Vec<String> = refused
                .iter()
                .map(|(what, n)| format!("{n} {what}"))
                .collect();
            let _ = writeln!(
                out,
                "refused by a documented limit (not in these tables): {}",
                list.join(", ")
            );
        }
        if !self.groups.is_empty() {
            let folded: usize = self.groups.values().map(|g| g.members.len()).sum();
            let _ = writeln!(
                out,
                "threads: the {} busiest have tables of their own; {folded} others are folded into {} table(s), one per thread name",
                self.threads.len(),
                self.groups.len()
            );
        }
        let folded = std::iter::once(merged)
            .chain(self.tables().map(|(t, _)| &t.tree))
            .any(|t| t.nodes.len() > TOP_REGIONS + 1);
        if folded {
            let _ = writeln!(
                out,
                "each table shows the {TOP_REGIONS} regions with the most total time (and their parents); \
                 the others are folded into one line per parent; summary.json has every region"
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
        write_tree_tables(
            &mut out,
            &format!("merged across {} threads", self.thread_count()),
            merged,
            self.config.derived.as_ref(),
        );
        for (t, folded) in self.tables() {
            let role = if t.info.is_metron {
                ", metron's own"
            } else {
                ""
            };
            let title = match folded {
                None => format!(
                    "thread {} \"{}\" (#{}{})",
                    t.info.tid, t.info.name, t.info.index, role
                ),
                Some(n) => format!("{n} threads \"{}\" folded{}", t.info.name, role),
            };
            write_tree_tables(&mut out, &title, &t.tree, self.config.derived.as_ref());
            if t.dropped > 0 {
                let _ = writeln!(out, "  {} records dropped on this thread", t.dropped);
            }
        }
        let mut counters: Vec<(&str, &CounterStats, u32)> = Vec::new();
        for (t, _) in self.tables() {
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
            .tables()
            .flat_map(|(t, _)| t.marks.iter().map(|(k, v)| (*k, *v)))
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

/// A duration in ns as f64 through the signed conversion (one instruction on x86-64; the
/// unsigned one takes a branch and several): no duration reaches 2^63 ns, and one that did
/// would be clamped there.
#[inline(always)]
fn ns_to_f64(ns: u64) -> f64 {
    ns.min(i64::MAX as u64) as i64 as f64
}

impl Sink for SummarySink {
    fn name(&self) -> &str {
        "summary"
    }

    fn events(&mut self, thread: &ThreadInfo, events: &[Event<'_>]) {
        self.batch(thread, events, Present::of(events));
    }

    fn empty_regions(&mut self, thread: &ThreadInfo, regions: &[EmptyRegion]) {
        let t = self.thread(thread);
        let parent = t.open.last().map_or(0, |o| o.0);
        // The latest region's node in locals: a loop opens the same region again and again.
        let (mut last_site, mut last_node): (*const Callsite, usize) = (std::ptr::null(), 0);
        for (k, r) in regions.iter().enumerate() {
            let node = if std::ptr::eq(r.site, last_site) {
                last_node
            } else {
                let node = t.tree.child(parent, r.site);
                let n = &t.tree.nodes[node];
                if n.is_setup || n.metrics.is_empty() {
                    // A set-up slice (its time comes out of the regions around it) or a
                    // region without wall time: the general path, from this one on.
                    let events: Vec<Event<'static>> =
                        regions[k..].iter().flat_map(EmptyRegion::events).collect();
                    self.batch(thread, &events, Present::REGIONS_ONLY);
                    return;
                }
                (last_site, last_node) = (r.site, node);
                node
            };
            t.tree.nodes[node].metrics[0].push(ns_to_f64(r.end_ns.saturating_sub(r.begin_ns)));
        }
    }

    fn batch(&mut self, thread: &ThreadInfo, events: &[Event<'_>], present: Present) {
        if present.samples {
            self.samples.events(thread, events);
        }
        let t = self.thread(thread);
        let mut i = 0;
        while i < events.len() {
            let event = &events[i];
            i += 1;
            match *event {
                Event::Begin { site, .. } => {
                    let parent = t.open.last().map_or(0, |o| o.0);
                    let node = t.tree.child(parent, site);
                    // A region with nothing inside (its end next, with no values): its time
                    // goes to its node without passing through the open stack.
                    if let Some(&Event::End {
                        begin_ns,
                        ts_ns,
                        values: [],
                        ..
                    }) = events.get(i)
                    {
                        let n = &mut t.tree.nodes[node];
                        if !n.is_setup {
                            if let Some(wall) = n.metrics.first_mut() {
                                wall.push(ns_to_f64(ts_ns.saturating_sub(begin_ns)));
                                i += 1;
                                continue;
                            }
                        }
                    }
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
                    let n = &mut t.tree.nodes[node];
                    if n.is_setup {
                        // Every region this set-up slice interrupted loses its time.
                        t.setup.0 += 1;
                        t.setup.1 += wall;
                        for open in &mut t.open {
                            open.1 += wall;
                        }
                    }
                    n.setup_excluded_ns += excluded;
                    let Some((wall_stats, rest)) = n.metrics.split_first_mut() else {
                        continue;
                    };
                    wall_stats.push(ns_to_f64(wall.saturating_sub(excluded)));
                    if !values.is_empty() {
                        for (m, v) in rest.iter_mut().zip(values) {
                            m.push(*v);
                        }
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
                Event::AsyncBegin { .. } | Event::AsyncEnd { .. } => {}
                Event::Sample { .. } => {}
                Event::Annotation { .. } | Event::ThreadName { .. } => {}
            }
        }
        // Async ranges are paired across threads: only batches that have some go there.
        if present.asyncs {
            self.async_ranges.events(thread.index, events);
        }
    }

    fn gpu_records(&mut self, records: &[crate::sink::GpuRecord]) {
        self.gpu.add(records);
    }

    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let txt = run.output_dir.join("summary.txt");
        let json_path = run.output_dir.join("summary.json");
        self.async_ranges.finish(run.end_ns);
        if self.thread_count() > threads::THREADS_MANY {
            self.fold_threads();
        }
        let merged = self.merged();
        std::fs::write(&txt, self.text(run, &merged))?;
        let mut file =
            std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&json_path)?);
        // Compact: indentation was most of a large file (`jq .` pretty-prints for people).
        serde_json::to_writer(&mut file, &self.document(run, &merged))?;
        std::io::Write::write_all(&mut file, b"\n")?;
        std::io::Write::flush(&mut file)?;
        Ok(vec![txt, json_path])
    }
}
