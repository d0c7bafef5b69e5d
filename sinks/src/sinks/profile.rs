//! Call-stack samples in the summary: a flat profile (self and inclusive, by function and by
//! source line) and a call tree, per sampling clock, and the backtraces taken at region starts
//! ("called from").
//!
//! Samples are kept as raw address stacks, counted per (thread, stack), while the run goes;
//! at the end each distinct address is symbolized once (the process-wide
//! [`metron_symbols::shared`] symbolizer, whose cache the other sinks share), inlined frames
//! expanded. Self time goes to the innermost frame (an inlined callee when there is one);
//! inclusive time counts a function once per sample however often it recurses.
//!
//! The merged profile (flat profiles, call tree) covers the program's threads; samples of
//! Metron's own threads (the flusher, which symbolizes and writes while the run goes) are
//! kept out of it and shown in their per-thread call trees only, so Metron's work never
//! passes for the program's.

use crate::callsite::Callsite;
use crate::sink::{SampleTrigger, ThreadInfo};
use metron_symbols::{Frame, Symbolizer};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// Rows of the flat profiles kept in `summary.json` (and in the text, [`TEXT_ROWS`]).
const JSON_ROWS: usize = 500;
/// Rows of each flat profile in `summary.txt`.
const TEXT_ROWS: usize = 25;
/// Sampled threads listed one by one in `summary.json`; past this, by name (see
/// `ClockProfile::threads_json`).
const JSON_THREADS: usize = 64;
/// Threads named in `summary.txt`'s line about a profile (the busiest; the rest counted).
const TEXT_THREADS: usize = 16;
/// Call-tree nodes below this share of the samples are left out of `summary.txt`.
const TEXT_TREE_MIN_PCT: f64 = 1.0;
/// Deepest call-tree level kept (deeper stacks are cut there).
const MAX_TREE_DEPTH: usize = 128;
/// Deepest call-tree level in `summary.json`: each level is two JSON nesting levels, and
/// common parsers stop at 128 (serde_json's default); a node cut there says `"cut": true`.
const JSON_TREE_DEPTH: usize = 48;
/// Distinct stacks listed per region under "called from".
const CALLED_FROM_STACKS: usize = 10;
/// Call-tree nodes in `summary.json` hold at least this share of the samples (per cent):
/// the narrower ones are folded into a count on their parent (`stacks.folded` has them all).
const JSON_TREE_MIN_PCT: f64 = 0.05;
/// At most this many call-tree nodes per clock in `summary.json` (the widest ones).
const JSON_TREE_NODES: usize = 10_000;

/// The sampling clocks, in the order they are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Clock {
    /// The thread's CPU time.
    CpuTime,
    /// Wall time.
    RealTime,
}

impl Clock {
    /// Name in outputs.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Clock::CpuTime => "cpu_time",
            Clock::RealTime => "real_time",
        }
    }
}

/// Distinct stacks and how often each was seen.
pub(crate) type StackCounts = HashMap<Box<[u64]>, u64>;

/// Timer samples and region backtraces as they arrive (raw addresses, innermost first).
#[derive(Default)]
pub(crate) struct SampleCollector {
    /// A call tree per thread in `summary.json` as well as the merged one
    /// (`METRON_SAMPLING_PER_THREAD`).
    pub(crate) per_thread: bool,
    /// Per clock, per thread index: the thread and its stacks.
    pub(crate) timer: BTreeMap<Clock, BTreeMap<u64, (ThreadInfo, StackCounts)>>,
    /// Per region call site (by address): the site and the stacks at its starts.
    regions: HashMap<usize, (&'static Callsite, StackCounts)>,
}

impl SampleCollector {
    /// An empty collector; `per_thread`: see [`SampleCollector::per_thread`].
    pub(crate) fn new(per_thread: bool) -> SampleCollector {
        SampleCollector {
            per_thread,
            ..Default::default()
        }
    }

    /// Records one `Event::Sample`.
    pub(crate) fn add(&mut self, thread: &ThreadInfo, frames: &[u64], trigger: SampleTrigger) {
        if frames.is_empty() {
            return;
        }
        let counts = match trigger {
            SampleTrigger::CpuTime | SampleTrigger::RealTime => {
                let clock = if matches!(trigger, SampleTrigger::CpuTime) {
                    Clock::CpuTime
                } else {
                    Clock::RealTime
                };
                let t = self
                    .timer
                    .entry(clock)
                    .or_default()
                    .entry(thread.index)
                    .or_insert_with(|| (thread.clone(), StackCounts::new()));
                t.0 = thread.clone();
                &mut t.1
            }
            SampleTrigger::RegionBegin(site) => {
                &mut self
                    .regions
                    .entry(site as *const Callsite as usize)
                    .or_insert_with(|| (site, StackCounts::new()))
                    .1
            }
        };
        match counts.get_mut(frames) {
            Some(n) => *n += 1,
            None => {
                counts.insert(frames.into(), 1);
            }
        }
    }

    /// Records the samples among `events` (of one thread).
    pub(crate) fn events(&mut self, thread: &ThreadInfo, events: &[crate::sink::Event<'_>]) {
        for e in events {
            if let crate::sink::Event::Sample {
                frames, trigger, ..
            } = *e
            {
                self.add(thread, frames, trigger);
            }
        }
    }

    /// True when no sample arrived.
    pub(crate) fn is_empty(&self) -> bool {
        self.timer.is_empty() && self.regions.is_empty()
    }

    /// Every distinct stack (timer samples and region backtraces).
    fn stacks(&self) -> impl Iterator<Item = &[u64]> {
        self.timer
            .values()
            .flat_map(|threads| threads.values())
            .flat_map(|(_, c)| c.keys())
            .chain(self.regions.values().flat_map(|(_, c)| c.keys()))
            .map(|s| &**s)
    }

    /// The profiles, symbolized.
    pub(crate) fn summarize(&self) -> ProfileSummary {
        if self.is_empty() {
            return ProfileSummary {
                profiles: Vec::new(),
                regions: Vec::new(),
                addresses: 0,
            };
        }
        let names = Names::of(self.stacks());
        let profiles = self
            .timer
            .iter()
            .map(|(clock, threads)| ClockProfile::build(*clock, threads, &names, self.per_thread))
            .collect();
        let mut regions: Vec<RegionBacktraces> = self
            .regions
            .values()
            .map(|(site, counts)| RegionBacktraces::build(site, counts, &names))
            .collect();
        regions.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(b.name)));
        ProfileSummary {
            profiles,
            regions,
            addresses: names.frames.len(),
        }
    }
}

/// Symbolized frames of every distinct lookup address of a set of stacks.
pub(crate) struct Names {
    frames: HashMap<u64, Box<[Frame]>>,
}

impl Names {
    /// Symbolizes every distinct address of `stacks` once, with the shared symbolizer.
    pub(crate) fn of<'a>(stacks: impl Iterator<Item = &'a [u64]>) -> Names {
        let mut frames: HashMap<u64, Box<[Frame]>> = HashMap::new();
        let mut symbolizer = metron_symbols::shared()
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for stack in stacks {
            for a in Symbolizer::lookup_addresses(stack) {
                frames
                    .entry(a)
                    .or_insert_with(|| symbolizer.symbolize(a).into());
            }
        }
        Names { frames }
    }

    /// The frames of `stack` with inlined frames expanded, innermost first.
    pub(crate) fn expand<'a>(&'a self, stack: &[u64], out: &mut Vec<&'a Frame>) {
        out.clear();
        for a in Symbolizer::lookup_addresses(stack) {
            if let Some(frames) = self.frames.get(&a) {
                out.extend(frames.iter());
            }
        }
    }
}

/// A line of a flat profile.
#[derive(Clone, Debug, Default)]
struct FlatRow {
    self_count: u64,
    inclusive: u64,
    module: String,
    /// For functions: where the samples fell most (file of the first frame seen).
    file: Option<String>,
}

/// A call-tree node (root-first: children are callees).
#[derive(Default)]
struct TreeNode {
    function: String,
    module: String,
    total: u64,
    self_count: u64,
    children: Vec<usize>,
    /// Children by the [`FrameIds`] id of their (function, module).
    index: HashMap<u32, usize>,
}

#[derive(Default)]
struct CallTree {
    nodes: Vec<TreeNode>,
}

impl CallTree {
    fn new() -> CallTree {
        CallTree {
            nodes: vec![TreeNode::default()],
        }
    }

    /// Adds a stack given innermost first, with each frame's ids from one [`FrameIds`].
    fn add(&mut self, frames: &[&Frame], ids: &[FrameId], count: u64) {
        let mut node = 0;
        self.nodes[0].total += count;
        for (f, id) in frames.iter().zip(ids).rev().take(MAX_TREE_DEPTH) {
            let next = match self.nodes[node].index.get(&id.node) {
                Some(&n) => n,
                None => {
                    self.nodes.push(TreeNode {
                        function: f.function.clone(),
                        module: f.module.to_string(),
                        ..TreeNode::default()
                    });
                    let n = self.nodes.len() - 1;
                    self.nodes[node].children.push(n);
                    self.nodes[node].index.insert(id.node, n);
                    n
                }
            };
            node = next;
            self.nodes[node].total += count;
        }
        if node != 0 {
            self.nodes[node].self_count += count;
        }
    }

    fn sorted_children(&self, node: usize) -> Vec<usize> {
        let mut c = self.nodes[node].children.clone();
        c.sort_by(|a, b| {
            self.nodes[*b]
                .total
                .cmp(&self.nodes[*a].total)
                .then_with(|| self.nodes[*a].function.cmp(&self.nodes[*b].function))
        });
        c
    }

    /// Which nodes `summary.json` shows: those holding at least [`JSON_TREE_MIN_PCT`] of the
    /// samples, the [`JSON_TREE_NODES`] widest of them. A child never holds more samples than
    /// its parent and comes after it in `nodes`, so the widest first (ties in node order)
    /// keeps every shown node's parent.
    fn shown(&self, samples: u64) -> Vec<bool> {
        let mut shown = vec![false; self.nodes.len()];
        shown[0] = true;
        let mut order: Vec<usize> = (1..self.nodes.len())
            .filter(|&i| pct(self.nodes[i].total, samples) >= JSON_TREE_MIN_PCT)
            .collect();
        order.sort_by(|a, b| {
            self.nodes[*b]
                .total
                .cmp(&self.nodes[*a].total)
                .then(a.cmp(b))
        });
        for i in order.into_iter().take(JSON_TREE_NODES) {
            shown[i] = true;
        }
        shown
    }

    /// The children of `node` as JSON, the nodes not `shown` folded into a count on their
    /// parent (`"folded": {"callees", "samples"}`).
    fn to_json(&self, node: usize, samples: u64, depth: usize, shown: &[bool]) -> Vec<Value> {
        self.sorted_children(node)
            .into_iter()
            .filter(|c| shown[*c])
            .map(|c| {
                let n = &self.nodes[c];
                let cut = depth + 1 >= JSON_TREE_DEPTH && !n.children.is_empty();
                let children = if cut {
                    Vec::new()
                } else {
                    self.to_json(c, samples, depth + 1, shown)
                };
                let mut v = json!({
                    "function": n.function,
                    "module": n.module,
                    "total": n.total,
                    "total_pct": pct(n.total, samples),
                    "self": n.self_count,
                    "self_pct": pct(n.self_count, samples),
                });
                // Moved in: `json!` would serialize the subtree again at every level.
                v["children"] = Value::Array(children);
                if cut {
                    v["cut"] = json!(true);
                } else {
                    let folded: Vec<usize> =
                        n.children.iter().copied().filter(|k| !shown[*k]).collect();
                    if !folded.is_empty() {
                        v["folded"] = json!({
                            "callees": folded.len(),
                            "samples": folded.iter().map(|k| self.nodes[*k].total).sum::<u64>(),
                        });
                    }
                }
                v
            })
            .collect()
    }

    fn write_text(&self, out: &mut String, node: usize, depth: usize, samples: u64) {
        for c in self.sorted_children(node) {
            let n = &self.nodes[c];
            if pct(n.total, samples) < TEXT_TREE_MIN_PCT {
                continue;
            }
            let _ = writeln!(
                out,
                "| {:>7.2} | {:>7.2} | {}{}",
                pct(n.total, samples),
                pct(n.self_count, samples),
                "  ".repeat(depth),
                n.function
            );
            self.write_text(out, c, depth + 1, samples);
        }
    }
}

/// The profile of one sampling clock.
struct ClockProfile {
    clock: Clock,
    samples: u64,
    /// Each thread, its samples, and its call tree (when asked for per thread).
    threads: Vec<(ThreadInfo, u64, Option<CallTree>)>,
    functions: Vec<(String, FlatRow)>,
    lines: Vec<((String, String), FlatRow)>,
    tree: CallTree,
}

/// A frame's ids in one [`FrameIds`].
#[derive(Clone, Copy, Debug)]
struct FrameId {
    /// Its (function, module): a call-tree node's key.
    node: u32,
    /// Its function: a row of the flat profile.
    function: u32,
    /// Its (file, line, function): a row of the lines profile.
    line: u32,
}

/// Small ids for the frames of one profile: each distinct frame (one object per symbolized
/// address and inlining level, shared by every stack through it) is looked up by its strings
/// once; counting a stack then hashes a pointer per frame, never a function name (C++ names
/// run to hundreds of bytes, and a deep profile has millions of frame visits).
#[derive(Default)]
struct FrameIds<'a> {
    by_frame: HashMap<*const Frame, FrameId>,
    nodes: HashMap<(&'a str, &'a str), u32>,
    functions: HashMap<&'a str, u32>,
    lines: HashMap<LineKey<'a>, u32>,
    function_names: Vec<&'a str>,
    line_keys: Vec<LineKey<'a>>,
}

impl<'a> FrameIds<'a> {
    fn of(&mut self, f: &'a Frame) -> FrameId {
        if let Some(&id) = self.by_frame.get(&(f as *const Frame)) {
            return id;
        }
        let n = self.nodes.len() as u32;
        let node = *self.nodes.entry((&f.function, &f.module)).or_insert(n);
        let n = self.functions.len() as u32;
        let function = *self.functions.entry(&f.function).or_insert_with(|| {
            self.function_names.push(&f.function);
            n
        });
        let key = LineKey::of(f);
        let n = self.lines.len() as u32;
        let line = *self.lines.entry(key).or_insert_with(|| {
            self.line_keys.push(key);
            n
        });
        let id = FrameId {
            node,
            function,
            line,
        };
        self.by_frame.insert(f as *const Frame, id);
        id
    }

    /// The ids of `frames`, into `out`.
    fn all(&mut self, frames: &[&'a Frame], out: &mut Vec<FrameId>) {
        out.clear();
        out.extend(frames.iter().map(|f| self.of(f)));
    }
}

/// Whether row `i` is seen for the first time in stack `stack_no` (and notes that it is now).
fn first_in_stack(seen: &mut Vec<u64>, i: u32, stack_no: u64) -> bool {
    let i = i as usize;
    if seen.len() <= i {
        seen.resize(i + 1, 0);
    }
    let first = seen[i] != stack_no;
    seen[i] = stack_no;
    first
}

/// Row `i` of `rows`, made (empty) if there is none yet.
fn row_at(rows: &mut Vec<FlatRow>, i: u32) -> &mut FlatRow {
    let i = i as usize;
    if rows.len() <= i {
        rows.resize_with(i + 1, FlatRow::default);
    }
    &mut rows[i]
}

impl ClockProfile {
    fn build(
        clock: Clock,
        threads: &BTreeMap<u64, (ThreadInfo, StackCounts)>,
        names: &Names,
        tree_per_thread: bool,
    ) -> ClockProfile {
        // Rows by frame id (see `FrameIds`), made into owned rows once at the end.
        let mut ids = FrameIds::default();
        let mut functions: Vec<FlatRow> = Vec::new();
        let mut lines: Vec<FlatRow> = Vec::new();
        // The last stack that counted each row's inclusive samples (a recursive stack counts a
        // function once): stack numbers start at 1.
        let mut seen_f: Vec<u64> = Vec::new();
        let mut seen_l: Vec<u64> = Vec::new();
        let mut stack_no = 0u64;
        let mut tree = CallTree::new();
        let mut per_thread = Vec::new();
        let mut samples = 0;
        let mut expanded = Vec::new();
        let mut frame_ids = Vec::new();
        for (info, counts) in threads.values() {
            let merged = !info.is_metron;
            let mut thread_tree = tree_per_thread.then(CallTree::new);
            let mut thread_samples = 0;
            // Stacks in a fixed order, so equal runs give equal trees.
            let mut stacks: Vec<(&Box<[u64]>, &u64)> = counts.iter().collect();
            stacks.sort();
            for (stack, &count) in stacks {
                names.expand(stack, &mut expanded);
                if expanded.is_empty() {
                    continue;
                }
                ids.all(&expanded, &mut frame_ids);
                thread_samples += count;
                if let Some(t) = &mut thread_tree {
                    t.add(&expanded, &frame_ids, count);
                }
                if !merged {
                    continue;
                }
                tree.add(&expanded, &frame_ids, count);
                let inner = frame_ids[0];
                row_at(&mut functions, inner.function).self_count += count;
                row_at(&mut lines, inner.line).self_count += count;
                stack_no += 1;
                for (f, id) in expanded.iter().zip(&frame_ids) {
                    if first_in_stack(&mut seen_f, id.function, stack_no) {
                        let row = row_at(&mut functions, id.function);
                        row.inclusive += count;
                        if row.module.is_empty() {
                            row.module = f.module.to_string();
                            row.file = f.file.clone();
                        }
                    }
                    if first_in_stack(&mut seen_l, id.line, stack_no) {
                        let row = row_at(&mut lines, id.line);
                        row.inclusive += count;
                        if row.module.is_empty() {
                            row.module = f.module.to_string();
                        }
                    }
                }
            }
            if merged {
                samples += thread_samples;
            }
            per_thread.push((info.clone(), thread_samples, thread_tree));
        }
        let mut functions: Vec<(String, FlatRow)> = functions
            .into_iter()
            .enumerate()
            .filter(|(_, row)| row.inclusive > 0)
            .map(|(i, row)| (ids.function_names[i].to_string(), row))
            .collect();
        functions.sort_by(|a, b| {
            (b.1.self_count, b.1.inclusive)
                .cmp(&(a.1.self_count, a.1.inclusive))
                .then_with(|| a.0.cmp(&b.0))
        });
        let mut lines: Vec<((String, String), FlatRow)> = lines
            .into_iter()
            .enumerate()
            .filter(|(_, row)| row.inclusive > 0)
            .map(|(i, row)| (ids.line_keys[i].owned(), row))
            .collect();
        lines.sort_by(|a, b| {
            (b.1.self_count, b.1.inclusive)
                .cmp(&(a.1.self_count, a.1.inclusive))
                .then_with(|| a.0.cmp(&b.0))
        });
        ClockProfile {
            clock,
            samples,
            threads: per_thread,
            functions,
            lines,
            tree,
        }
    }

    fn to_json(&self) -> Value {
        let s = self.samples;
        let shown = self.tree.shown(s);
        let mut v = json!({
            "clock": self.clock.name(),
            "samples": s,
            "threads": self.threads_json(),
            "functions": self.functions.iter().take(JSON_ROWS).map(|(name, r)| json!({
                "function": name,
                "module": r.module,
                "file": r.file,
                "self": r.self_count,
                "self_pct": pct(r.self_count, s),
                "inclusive": r.inclusive,
                "inclusive_pct": pct(r.inclusive, s),
            })).collect::<Vec<_>>(),
            "functions_total": self.functions.len(),
            "lines": self.lines.iter().take(JSON_ROWS).map(|((loc, function), r)| json!({
                "location": loc,
                "function": function,
                "module": r.module,
                "self": r.self_count,
                "self_pct": pct(r.self_count, s),
                "inclusive": r.inclusive,
                "inclusive_pct": pct(r.inclusive, s),
            })).collect::<Vec<_>>(),
            "lines_total": self.lines.len(),
            "call_tree_nodes": {
                "shown": shown.iter().filter(|s| **s).count() - 1,
                "total": self.tree.nodes.len() - 1,
                "min_pct": JSON_TREE_MIN_PCT,
            },
        });
        // Moved in (not through `json!`, which would serialize the tree again).
        v["call_tree"] = Value::Array(self.tree.to_json(0, s, 0, &shown));
        if self.threads.iter().any(|(_, _, tree)| tree.is_some()) {
            v["call_tree_by_thread"] = self
                .threads
                .iter()
                .filter_map(|(t, n, tree)| {
                    let tree = tree.as_ref()?;
                    let shown = tree.shown(*n);
                    let mut v = json!({
                        "tid": t.tid, "name": t.name, "index": t.index, "is_metron": t.is_metron,
                        "samples": n,
                    });
                    v["call_tree"] = Value::Array(tree.to_json(0, *n, 0, &shown));
                    Some(v)
                })
                .collect::<Vec<_>>()
                .into();
        }
        v
    }

    /// The sampled threads: each one while they are few; past [`JSON_THREADS`], the busiest
    /// apart and the others one entry per name (`"threads"`: how many, `"samples"`: theirs).
    fn threads_json(&self) -> Vec<Value> {
        let one = |t: &ThreadInfo, n: u64| {
            json!({
                "tid": t.tid, "name": t.name, "index": t.index, "is_metron": t.is_metron,
                "samples": n,
            })
        };
        if self.threads.len() <= JSON_THREADS {
            return self.threads.iter().map(|(t, n, _)| one(t, *n)).collect();
        }
        let mut order: Vec<&(ThreadInfo, u64, Option<CallTree>)> = self.threads.iter().collect();
        order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.index.cmp(&b.0.index)));
        let (apart, rest) = order.split_at(JSON_THREADS / 2);
        let mut apart: Vec<_> = apart.to_vec();
        apart.sort_by_key(|(t, _, _)| t.index);
        let mut out: Vec<Value> = apart.iter().map(|(t, n, _)| one(t, *n)).collect();
        let mut by_name: BTreeMap<(&str, bool), (u64, u64)> = BTreeMap::new();
        for (t, n, _) in rest {
            let e = by_name.entry((&t.name, t.is_metron)).or_default();
            e.0 += 1;
            e.1 += n;
        }
        for ((name, is_metron), (threads, samples)) in by_name {
            out.push(json!({
                "name": name, "is_metron": is_metron, "threads": threads, "samples": samples,
            }));
        }
        out
    }

    fn write_text(&self, out: &mut String) {
        let s = self.samples;
        // The busiest threads by name; the others counted (a program of many threads would
        // otherwise make this one line longer than the rest of the file).
        let mut program: Vec<&(ThreadInfo, u64, Option<CallTree>)> = self
            .threads
            .iter()
            .filter(|(t, _, _)| !t.is_metron)
            .collect();
        program.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.index.cmp(&b.0.index)));
        let mut threads: Vec<String> = program
            .iter()
            .take(TEXT_THREADS)
            .map(|(t, n, _)| format!("{} \"{}\": {}", t.tid, t.name, n))
            .collect();
        if program.len() > TEXT_THREADS {
            let rest: u64 = program.iter().skip(TEXT_THREADS).map(|(_, n, _)| n).sum();
            threads.push(format!(
                "{} more threads: {rest}",
                program.len() - TEXT_THREADS
            ));
        }
        let own: u64 = self
            .threads
            .iter()
            .filter(|(t, _, _)| t.is_metron)
            .map(|(_, n, _)| n)
            .sum();
        let _ = writeln!(
            out,
            "\nsampled profile ({}): {} samples on {} threads ({}); {} more on Metron's own \
             threads, left out",
            self.clock.name(),
            s,
            program.len(),
            threads.join(", "),
            own
        );
        let _ = writeln!(out, "\nby function (top {TEXT_ROWS})");
        let _ = writeln!(
            out,
            "| {:>7} | {:>7} | {:>8} | {:<60} | {:<20} |",
            "self %", "incl %", "self", "function", "module"
        );
        for (name, r) in self.functions.iter().take(TEXT_ROWS) {
            let _ = writeln!(
                out,
                "| {:>7.2} | {:>7.2} | {:>8} | {:<60} | {:<20} |",
                pct(r.self_count, s),
                pct(r.inclusive, s),
                r.self_count,
                cut(name, 60),
                cut(&r.module, 20)
            );
        }
        let _ = writeln!(out, "\nby source line (top {TEXT_ROWS})");
        let _ = writeln!(
            out,
            "| {:>7} | {:>7} | {:>8} | {:<50} | {:<40} |",
            "self %", "incl %", "self", "location", "function"
        );
        for ((loc, function), r) in self.lines.iter().take(TEXT_ROWS) {
            let _ = writeln!(
                out,
                "| {:>7.2} | {:>7.2} | {:>8} | {:<50} | {:<40} |",
                pct(r.self_count, s),
                pct(r.inclusive, s),
                r.self_count,
                cut_left(loc, 50),
                cut(function, 40)
            );
        }
        let _ = writeln!(
            out,
            "\ncall tree, merged over threads (nodes under {TEXT_TREE_MIN_PCT} % left out)"
        );
        let _ = writeln!(out, "| {:>7} | {:>7} | function", "total %", "self %");
        self.tree.write_text(out, 0, 0, s);
    }
}

/// (`file:line`, or `?` without line tables; function) of a frame.
/// A line of the flat profile while it is counted: the frame's file, line and function,
/// borrowed.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct LineKey<'a> {
    file: Option<&'a str>,
    line: Option<u32>,
    function: &'a str,
}

impl<'a> LineKey<'a> {
    fn of(f: &'a Frame) -> LineKey<'a> {
        LineKey {
            file: f.file.as_deref(),
            line: f.line,
            function: &f.function,
        }
    }

    /// `(location, function)`: the location as `Frame::location` writes it, `?` when unknown.
    fn owned(&self) -> (String, String) {
        let location = match (self.file, self.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            (Some(f), None) => f.to_string(),
            _ => "?".to_string(),
        };
        (location, self.function.to_string())
    }
}

/// The backtraces taken at the starts of one region.
struct RegionBacktraces {
    name: &'static str,
    site: &'static Callsite,
    count: u64,
    /// (count, frames innermost first as `function (file:line)`), most frequent first.
    stacks: Vec<(u64, Vec<String>)>,
}

impl RegionBacktraces {
    fn build(site: &'static Callsite, counts: &StackCounts, names: &Names) -> RegionBacktraces {
        let mut expanded = Vec::new();
        let mut stacks: Vec<(u64, Vec<String>)> = counts
            .iter()
            .map(|(stack, &n)| {
                names.expand(stack, &mut expanded);
                (n, expanded.iter().map(|f| describe(f)).collect())
            })
            .collect();
        stacks.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        RegionBacktraces {
            name: site.name,
            site,
            count: counts.values().sum(),
            stacks,
        }
    }
}

/// `function (file:line)` or `function`.
pub(crate) fn describe(f: &Frame) -> String {
    match f.location() {
        Some(loc) => format!("{} ({loc})", f.function),
        None => f.function.clone(),
    }
}

/// What the summary shows of the samples.
pub(crate) struct ProfileSummary {
    profiles: Vec<ClockProfile>,
    regions: Vec<RegionBacktraces>,
    addresses: usize,
}

impl ProfileSummary {
    /// The `sampling` object of `summary.json` (schema in `docs/src/outputs.md`).
    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({
            "region_backtraces": self.regions.iter().map(|r| json!({
                "region": r.name,
                "file": r.site.file,
                "line": r.site.line,
                "count": r.count,
                "called_from": r.stacks.iter().take(CALLED_FROM_STACKS).map(|(n, frames)| json!({
                    "count": n,
                    "frames": frames,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        v["symbolized_addresses"] = self.addresses.into();
        // Moved in (not through `json!`, which would serialize every call tree again).
        v["profiles"] = Value::Array(self.profiles.iter().map(ClockProfile::to_json).collect());
        v
    }

    /// The sampled profiles and region backtraces as text (appended to `summary.txt`).
    pub(crate) fn write_text(&self, out: &mut String) {
        for p in &self.profiles {
            p.write_text(out);
        }
        if !self.regions.is_empty() {
            let _ = writeln!(
                out,
                "\nregion backtraces (called from, innermost frame first)"
            );
            for r in &self.regions {
                let _ = writeln!(
                    out,
                    "  {} ({}:{}), {} backtraces",
                    r.name, r.site.file, r.site.line, r.count
                );
                for (n, frames) in r.stacks.iter().take(3) {
                    let _ = writeln!(out, "    {n} x");
                    for f in frames.iter().take(12) {
                        let _ = writeln!(out, "      {f}");
                    }
                }
            }
        }
    }
}

fn pct(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

/// At most `n` characters, from the start.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(n - 1).collect();
        c.push('…');
        c
    }
}

/// At most `n` characters, keeping the end (file paths: the file name matters most).
fn cut_left(s: &str, n: usize) -> String {
    let len = s.chars().count();
    if len <= n {
        s.to_string()
    } else {
        let mut c = String::from("…");
        c.extend(s.chars().skip(len - (n - 1)));
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn frame(name: String) -> Frame {
        Frame {
            function: name,
            file: None,
            line: None,
            module: Arc::from("m"),
            inlined: false,
        }
    }

    #[test]
    fn a_deep_call_tree_is_cut_so_json_parsers_read_it_back() {
        let frames: Vec<Frame> = (0..300).map(|i| frame(format!("f{i}"))).collect();
        let refs: Vec<&Frame> = frames.iter().collect();
        let mut tree = CallTree::new();
        let mut ids = FrameIds::default();
        let mut frame_ids = Vec::new();
        ids.all(&refs, &mut frame_ids);
        tree.add(&refs, &frame_ids, 3);
        let text = serde_json::to_string(
            &json!({ "a": { "b": [ { "call_tree": tree.to_json(0, 3, 0, &tree.shown(3)) } ] } }),
        )
        .unwrap();
        let back: Value = serde_json::from_str(&text).expect("within serde_json's nesting limit");
        let mut node = &back["a"]["b"][0]["call_tree"][0];
        let mut depth = 1;
        // Innermost first in `frames`: the tree starts at the outermost, f299.
        assert_eq!(node["function"], "f299");
        while node.get("cut").is_none() {
            node = &node["children"][0];
            depth += 1;
        }
        assert_eq!(depth, JSON_TREE_DEPTH);
        assert_eq!(node["total"], 3);
        assert_eq!(node["children"], json!([]));
    }
}
