//! The dependency graph of a run: what each CPU stretch, API call and device operation waited
//! for, with the latencies that separated them in the recording.
//!
//! Every node has a measured start and end and two kinds of constraint, both kept with the
//! lag the recording showed:
//! - **start** (`after`): the node cannot start before another node's start or end plus a lag
//!   (the previous stretch of its thread; the call that launched a kernel; the kernel before
//!   it on its stream; work on another stream that held it, found from the times);
//! - **end** (`waits`): a synchronizing call cannot return before the device work it waited
//!   for has ended plus the wake-up lag.
//!
//! The constraint that decided a time in the recording keeps its measured lag; the others get
//! the typical lag of their kind in the run (never more than their own measured one: the
//! smallest launch latency, the median gap after a stream or event that decided), so
//! the replay of the unchanged graph gives back every recorded time exactly, and a change moves
//! a node as soon as another constraint would have let it go earlier.

use std::collections::HashMap;

/// A kernel, copy or set that starts this long after every constraint the recording shows
/// (its launch and its stream) was held by something else: the latest work ending on another
/// stream within this window before it started (a `cudaStreamWaitEvent`).
pub const HELD_BY_ANOTHER_STREAM_NS: i64 = 10_000;

/// What a run recorded, before any dependency is worked out (input of [`Graph::build`]).
#[derive(Clone, Debug, Default)]
pub struct Recording {
    /// The CPU threads that made API calls or recorded regions.
    pub threads: Vec<ThreadRecord>,
    /// Kernels, copies and sets.
    pub ops: Vec<OpRecord>,
    /// What each synchronizing call waited for, as the GPU tracer recorded it (empty when the
    /// run has none: the waits are then found from the times).
    pub syncs: Vec<SyncRecord>,
    /// Where each CUDA event was recorded.
    pub events: Vec<EventRecord>,
}

/// What a synchronizing call waited for (CUPTI's synchronization record).
#[derive(Clone, Debug)]
pub struct SyncRecord {
    /// Which kind of wait.
    pub kind: Waited,
    /// The correlation id of the call.
    pub correlation: u64,
    /// The stream waited for (a stream synchronize) or made to wait (a stream wait event).
    pub stream: Option<u32>,
    /// The event record waited for (event synchronize, stream wait event).
    pub event_record: Option<u64>,
}

/// The kinds of recorded wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    /// The call returned once the event's work was done (`cudaEventSynchronize`).
    Event,
    /// The stream's later work waits for the event's work (`cudaStreamWaitEvent`).
    StreamWaitsEvent,
    /// The call returned once the stream's work was done (`cudaStreamSynchronize`).
    Stream,
    /// The call returned once all the context's work was done (`cudaDeviceSynchronize`).
    Context,
}

impl Waited {
    /// The kind of the synchronization slice named `name` in the trace.
    pub fn from_slice_name(name: &str) -> Option<Waited> {
        Some(match name {
            "Event synchronize" => Waited::Event,
            "Stream wait event" => Waited::StreamWaitsEvent,
            "Stream synchronize" => Waited::Stream,
            "Context synchronize" => Waited::Context,
            _ => return None,
        })
    }
}

/// A CUDA event recorded on a stream: it completes when the stream's work launched before the
/// `cudaEventRecord` call is done.
#[derive(Clone, Debug)]
pub struct EventRecord {
    /// The correlation id of the `cudaEventRecord` call.
    pub correlation: u64,
    /// The stream.
    pub stream: u32,
    /// The record's unique id (an event object recorded again gets a new one).
    pub id: u64,
}

/// One CPU thread's calls and regions.
#[derive(Clone, Debug, Default)]
pub struct ThreadRecord {
    /// The thread id.
    pub tid: u32,
    /// Its GPU API calls (calls nested in another, such as a driver call inside a runtime
    /// call, are folded into the outer one).
    pub calls: Vec<CallRecord>,
    /// Its regions (properly nested).
    pub regions: Vec<Span>,
}

/// A GPU API call.
#[derive(Clone, Debug)]
pub struct CallRecord {
    /// The API function (`cudaLaunchKernel`, `cudaStreamSynchronize`, ...).
    pub name: String,
    /// Start, ns.
    pub start: i64,
    /// End, ns.
    pub end: i64,
    /// Correlation ids of the device work it launched.
    pub correlations: Vec<u64>,
}

/// A named interval (a region).
#[derive(Clone, Debug)]
pub struct Span {
    /// Its name.
    pub name: String,
    /// Start, ns.
    pub start: i64,
    /// End, ns.
    pub end: i64,
}

/// A kernel, copy or set on a stream.
#[derive(Clone, Debug)]
pub struct OpRecord {
    /// The kernel's name, or the copy's or set's kind.
    pub name: String,
    /// The stream (its track's name).
    pub stream: String,
    /// Start, ns.
    pub start: i64,
    /// End, ns.
    pub end: i64,
    /// The correlation id of the call that launched it.
    pub correlation: Option<u64>,
}

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// CPU time of a thread between two API calls.
    Work {
        /// Index into [`Graph::threads`].
        thread: usize,
    },
    /// A GPU API call.
    Call {
        /// Index into [`Graph::threads`].
        thread: usize,
    },
    /// A kernel, copy or set.
    Op {
        /// Index into [`Graph::streams`].
        stream: usize,
    },
}

/// Why one time waits for another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Why {
    /// The previous stretch of the same thread.
    Program,
    /// The call that launched the work (launch latency).
    Launch,
    /// The previous work on the same stream.
    Stream,
    /// Work on another stream (an event wait: recorded by the GPU tracer, or found from the
    /// times).
    OtherStream,
    /// Device work a synchronizing call waited for (wake-up latency).
    Sync,
}

/// Which time of a node a constraint starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// The node's start.
    Start,
    /// The node's end.
    End,
}

/// A constraint: `from`'s start or end plus `lag`.
#[derive(Clone, Copy, Debug)]
pub struct Edge {
    /// The node waited for.
    pub from: usize,
    /// Which of its times.
    pub at: At,
    /// The lag after it, ns.
    pub lag: i64,
    /// Why.
    pub why: Why,
}

/// A stretch of a `Work` node with the regions open over it.
#[derive(Clone, Copy, Debug)]
pub struct Piece {
    /// Its length, ns.
    pub len: i64,
    /// The open regions, an index into [`Graph::stacks`].
    pub stack: usize,
}

/// A node of the graph.
#[derive(Clone, Debug)]
pub struct Node {
    /// What it is.
    pub kind: Kind,
    /// The API function or kernel name (an index into [`Graph::names`]; 0 for CPU work).
    pub name: usize,
    /// Recorded start, ns.
    pub start: i64,
    /// Recorded end, ns.
    pub end: i64,
    /// A start it cannot precede (the first stretch of a thread, work whose launch the
    /// recording lacks).
    pub release: Option<i64>,
    /// Start constraints.
    pub after: Vec<Edge>,
    /// End constraints (a synchronizing call).
    pub waits: Vec<Edge>,
    /// Its own duration, ns: the end is at least the start plus this, shortened by a speedup.
    pub base: i64,
    /// A `Work` node's stretches (empty for calls and operations).
    pub pieces: Vec<Piece>,
}

/// A region instance, located in its thread's `Work` nodes.
#[derive(Clone, Copy, Debug)]
pub struct RegionInstance {
    /// Its name, an index into [`Graph::names`].
    pub name: usize,
    /// Its thread.
    pub thread: usize,
    /// Where it begins: a `Work` node and how many of its pieces come before.
    pub begin: (usize, usize),
    /// Where it ends.
    pub end: (usize, usize),
    /// Recorded start and end, ns.
    pub start_ns: i64,
    /// Recorded end, ns.
    pub end_ns: i64,
}

/// The dependency graph.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Every node; within a thread in program order, within a stream in start order.
    pub nodes: Vec<Node>,
    /// Names of calls, kernels and regions (0 is the empty name of CPU work).
    pub names: Vec<String>,
    /// The sets of open regions of `Work` pieces, innermost last (name indices).
    pub stacks: Vec<Vec<usize>>,
    /// Thread ids, by thread index.
    pub threads: Vec<u32>,
    /// Stream names, by stream index.
    pub streams: Vec<String>,
    /// Every region instance.
    pub regions: Vec<RegionInstance>,
    /// Start constraints found from the times alone (work held by another stream).
    pub inferred_other_stream: usize,
    /// Waits taken from the GPU tracer's synchronization and event records (stream waits and
    /// synchronizing calls).
    pub recorded_waits: usize,
    /// Synchronizing calls that waited for device work in the recording.
    pub blocked_syncs: usize,
}

/// How a call synchronizes with the device, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKind {
    /// Not a synchronizing call.
    None,
    /// Waits for all work of the device (`cudaDeviceSynchronize`, `cudaFree`).
    Device,
    /// Waits for one stream (which: the stream of the work it was seen waiting for).
    Stream,
    /// Waits for one event (the work it was seen waiting for).
    Event,
    /// A copy that returns when its own work is done (`cudaMemcpy`).
    OwnWork,
}

/// The synchronization of the CUDA and HIP API function `name`.
pub fn sync_kind(name: &str) -> SyncKind {
    let n = name.to_ascii_lowercase();
    let n = n.strip_suffix("_v2").unwrap_or(&n);
    if n.ends_with("devicesynchronize")
        || n.ends_with("threadsynchronize")
        || n.ends_with("ctxsynchronize")
        || matches!(n, "cudafree" | "cumemfree" | "hipfree")
    {
        SyncKind::Device
    } else if n.ends_with("streamsynchronize") {
        SyncKind::Stream
    } else if n.ends_with("eventsynchronize") {
        SyncKind::Event
    } else if (n.starts_with("cudamemcpy")
        || n.starts_with("cumemcpy")
        || n.starts_with("hipmemcpy"))
        && !n.contains("async")
        && !n.contains("tosymbol")
    {
        SyncKind::OwnWork
    } else {
        SyncKind::None
    }
}

/// Interns names.
#[derive(Default)]
struct Names {
    list: Vec<String>,
    index: HashMap<String, usize>,
}

impl Names {
    fn new() -> Names {
        let mut n = Names::default();
        n.get("");
        n
    }

    fn get(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.list.push(name.to_string());
        self.index.insert(name.to_string(), self.list.len() - 1);
        self.list.len() - 1
    }
}

/// A point of a thread's timeline, in the order the sweep visits equal times: a call ends,
/// then regions end, then regions begin, then a call starts (a region that encloses a call
/// begins before it and ends after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Cut {
    CallEnd(usize),
    RegionEnd(usize),
    RegionBegin(usize),
    CallStart(usize),
}

impl Graph {
    /// Builds the graph of a recording.
    pub fn build(recording: &Recording) -> Graph {
        let mut g = Graph::default();
        let mut names = Names::new();
        let mut children: HashMap<(usize, usize), usize> = HashMap::new();
        g.stacks.push(Vec::new());
        // Per correlation id, the call node that launched it.
        let mut launched_by: HashMap<u64, usize> = HashMap::new();
        let mut calls_of_thread: Vec<Vec<usize>> = Vec::new();
        for (ti, thread) in recording.threads.iter().enumerate() {
            g.threads.push(thread.tid);
            let calls = outer_calls(&thread.calls);
            // At equal times the outer of two regions begins first and ends last.
            let mut cuts: Vec<(i64, Cut, i64)> = Vec::new();
            for (i, c) in calls.iter().enumerate() {
                cuts.push((c.start, Cut::CallStart(i), 0));
                cuts.push((c.end, Cut::CallEnd(i), 0));
            }
            for (i, r) in thread.regions.iter().enumerate() {
                cuts.push((r.start, Cut::RegionBegin(i), -r.end));
                cuts.push((r.end, Cut::RegionEnd(i), -r.start));
            }
            cuts.sort_by_key(|&(t, cut, tie)| (t, rank(cut), tie, cut));
            let Some(&(first, _, _)) = cuts.first() else {
                calls_of_thread.push(Vec::new());
                continue;
            };
            // Open regions (indices), and the stack id with each of them open: a stack is
            // found from its parent and its innermost name, so a piece costs no hashing of
            // the whole stack.
            let region_name: Vec<usize> =
                thread.regions.iter().map(|r| names.get(&r.name)).collect();
            let mut open: Vec<usize> = Vec::new();
            let mut open_stack: Vec<usize> = Vec::new();
            let mut region_begin: Vec<Option<(usize, usize)>> = vec![None; thread.regions.len()];
            let mut work = g.push_work(ti, first, None);
            g.nodes[work].release = Some(first);
            let mut at = first;
            let mut in_call = false;
            let mut thread_calls = Vec::new();
            for (t, cut, _) in cuts {
                if !in_call && t > at {
                    let s = open_stack.last().copied().unwrap_or(0);
                    let node = &mut g.nodes[work];
                    node.pieces.push(Piece {
                        len: t - at,
                        stack: s,
                    });
                    node.base += t - at;
                    node.end = t;
                    at = t;
                }
                let here = (work, g.nodes[work].pieces.len());
                match cut {
                    Cut::RegionBegin(r) => {
                        let parent = open_stack.last().copied().unwrap_or(0);
                        open.push(r);
                        open_stack.push(g.child_stack(&mut children, parent, region_name[r]));
                        region_begin[r] = Some(here);
                    }
                    Cut::RegionEnd(r) => {
                        if let Some(p) = open.iter().rposition(|&o| o == r) {
                            open.remove(p);
                            open_stack.truncate(p);
                            // Improperly nested: the stacks above it are rebuilt.
                            for &o in &open[p..] {
                                let parent = open_stack.last().copied().unwrap_or(0);
                                open_stack.push(g.child_stack(
                                    &mut children,
                                    parent,
                                    region_name[o],
                                ));
                            }
                        }
                        if let Some(begin) = region_begin[r].take() {
                            let span = &thread.regions[r];
                            g.regions.push(RegionInstance {
                                name: region_name[r],
                                thread: ti,
                                begin,
                                end: here,
                                start_ns: span.start,
                                end_ns: span.end,
                            });
                        }
                    }
                    Cut::CallStart(c) => {
                        let call = &calls[c];
                        let node = g.nodes.len();
                        g.nodes.push(Node {
                            kind: Kind::Call { thread: ti },
                            name: names.get(&call.name),
                            start: call.start,
                            end: call.end,
                            release: None,
                            after: vec![program(work)],
                            waits: Vec::new(),
                            base: call.end - call.start,
                            pieces: Vec::new(),
                        });
                        for &id in &call.correlations {
                            launched_by.insert(id, node);
                        }
                        thread_calls.push(node);
                        in_call = true;
                    }
                    Cut::CallEnd(_) => {
                        let call = g.nodes.len() - 1;
                        work = g.push_work(ti, t, Some(call));
                        at = t;
                        in_call = false;
                    }
                }
            }
            calls_of_thread.push(thread_calls);
        }
        let recorded = Recorded::new(recording, &launched_by);
        g.add_ops(recording, &mut names, &launched_by, &recorded);
        g.names = names.list;
        let calls: Vec<usize> = calls_of_thread.into_iter().flatten().collect();
        g.add_waits(&calls, &recorded);
        g
    }

    /// The stack of `parent` with region name `name` opened inside it.
    fn child_stack(
        &mut self,
        children: &mut HashMap<(usize, usize), usize>,
        parent: usize,
        name: usize,
    ) -> usize {
        *children.entry((parent, name)).or_insert_with(|| {
            let mut stack = self.stacks[parent].clone();
            stack.push(name);
            self.stacks.push(stack);
            self.stacks.len() - 1
        })
    }

    fn push_work(&mut self, thread: usize, start: i64, after_call: Option<usize>) -> usize {
        self.nodes.push(Node {
            kind: Kind::Work { thread },
            name: 0,
            start,
            end: start,
            release: None,
            after: after_call.map(program).into_iter().collect(),
            waits: Vec::new(),
            base: 0,
            pieces: Vec::new(),
        });
        self.nodes.len() - 1
    }

    /// The device work nodes and their start constraints.
    fn add_ops(
        &mut self,
        rec: &Recording,
        names: &mut Names,
        launched_by: &HashMap<u64, usize>,
        recorded: &Recorded,
    ) {
        let mut order: Vec<usize> = (0..rec.ops.len()).collect();
        order.sort_by_key(|&i| (rec.ops[i].start, rec.ops[i].end, i));
        let mut stream_index: HashMap<&str, usize> = HashMap::new();
        let mut last_on_stream: Vec<Option<usize>> = Vec::new();
        let first_op = self.nodes.len();
        for &i in &order {
            let op = &rec.ops[i];
            let stream = *stream_index.entry(&op.stream).or_insert_with(|| {
                self.streams.push(op.stream.clone());
                last_on_stream.push(None);
                self.streams.len() - 1
            });
            let node = self.nodes.len();
            let mut after = Vec::new();
            if let Some(call) = op.correlation.and_then(|c| launched_by.get(&c)) {
                after.push(Edge {
                    from: *call,
                    at: At::Start,
                    lag: op.start - self.nodes[*call].start,
                    why: Why::Launch,
                });
            }
            if let Some(prev) = last_on_stream[stream] {
                after.push(Edge {
                    from: prev,
                    at: At::End,
                    lag: op.start - self.nodes[prev].end,
                    why: Why::Stream,
                });
            }
            last_on_stream[stream] = Some(node);
            self.nodes.push(Node {
                kind: Kind::Op { stream },
                name: names.get(&op.name),
                start: op.start,
                end: op.end,
                release: None,
                after,
                waits: Vec::new(),
                base: op.end - op.start,
                pieces: Vec::new(),
            });
        }
        self.add_stream_waits(recorded);
        // The smallest lag of each kind: what a constraint that did not decide costs.
        let least = |why: Why, g: &Graph| {
            g.nodes[first_op..]
                .iter()
                .flat_map(|n| n.after.iter())
                .filter(|e| e.why == why)
                .map(|e| e.lag.max(0))
                .min()
                .unwrap_or(0)
        };
        let launch_lag = least(Why::Launch, self);
        // Deciding which constraint held an op, a stream edge costs nothing: the next work of
        // a stream can start as soon as the previous one ended.
        let typical = |e: &Edge| match e.why {
            Why::Launch => launch_lag,
            _ => 0,
        };
        // Ops by end time, to find what held an op that none of its constraints explains.
        let mut by_end: Vec<usize> = (first_op..self.nodes.len()).collect();
        by_end.sort_by_key(|&n| self.nodes[n].end);
        let mut decided_by = vec![None; self.nodes.len()];
        #[allow(clippy::needless_range_loop)] // `n` indexes the nodes it reads and pushes to
        for n in first_op..self.nodes.len() {
            let start = self.nodes[n].start;
            let earliest = self.nodes[n]
                .after
                .iter()
                .map(|e| self.time(e.from, e.at) + typical(e).min(e.lag))
                .max();
            let Some(earliest) = earliest else {
                self.nodes[n].release = Some(start);
                continue;
            };
            if !recorded.any() && start - earliest > HELD_BY_ANOTHER_STREAM_NS {
                let Kind::Op { stream } = self.nodes[n].kind else {
                    unreachable!()
                };
                let upto = by_end.partition_point(|&o| self.nodes[o].end <= start);
                let held_by = by_end[..upto]
                    .iter()
                    .rev()
                    .copied()
                    .take_while(|&o| self.nodes[o].end >= start - HELD_BY_ANOTHER_STREAM_NS)
                    .find(|&o| self.nodes[o].kind != (Kind::Op { stream }));
                if let Some(o) = held_by {
                    let lag = start - self.nodes[o].end;
                    self.nodes[n].after.push(Edge {
                        from: o,
                        at: At::End,
                        lag,
                        why: Why::OtherStream,
                    });
                    self.inferred_other_stream += 1;
                    decided_by[n] = Some(self.nodes[n].after.len() - 1);
                    continue;
                }
            }
            decided_by[n] = (0..self.nodes[n].after.len()).max_by_key(|&k| {
                let e = self.nodes[n].after[k];
                self.time(e.from, e.at) + typical(&e).min(e.lag)
            });
        }
        // Once a stream or an event decided, the GPU took this long to start the next work:
        // the gap a stream edge that did not decide gets (the median of those that did).
        let mut gaps: Vec<i64> = (first_op..self.nodes.len())
            .filter_map(|n| decided_by[n].map(|k| self.nodes[n].after[k]))
            .filter(|e| matches!(e.why, Why::Stream | Why::OtherStream))
            .map(|e| e.lag.max(0))
            .collect();
        gaps.sort_unstable();
        let device_gap = gaps.get(gaps.len() / 2).copied().unwrap_or(0);
        for (node, decided) in self.nodes.iter_mut().zip(&decided_by).skip(first_op) {
            for (k, e) in node.after.iter_mut().enumerate() {
                if Some(k) != *decided {
                    e.lag = e.lag.min(match e.why {
                        Why::Launch => launch_lag,
                        _ => device_gap,
                    });
                }
            }
        }
    }

    fn time(&self, node: usize, at: At) -> i64 {
        match at {
            At::Start => self.nodes[node].start,
            At::End => self.nodes[node].end,
        }
    }

    /// The device work each synchronizing call waits for, its own duration, and the lags of
    /// the waits that did not decide its end (the smallest wake-up seen in the run).
    fn add_waits(&mut self, calls: &[usize], recorded: &Recorded) {
        let index = OpIndex::new(self);
        let mut decided_by_wait = Vec::new();
        for &c in calls {
            let waited = match recorded.sync_of(c) {
                // A stream made to wait holds its work (`add_stream_waits`), not the call.
                Some(sync) if sync.kind == Waited::StreamWaitsEvent => continue,
                Some(sync) if index.resolves(self, sync, recorded) => {
                    self.recorded_waits += 1;
                    index.recorded(self, c, sync, recorded)
                }
                _ => {
                    let kind = sync_kind(&self.names[self.nodes[c].name]);
                    if kind == SyncKind::None {
                        continue;
                    }
                    index.waited(self, c, kind)
                }
            };
            let (s, f) = (self.nodes[c].start, self.nodes[c].end);
            let latest = waited
                .iter()
                .copied()
                .max_by_key(|&o| (self.nodes[o].end, o));
            for &o in &waited {
                let lag = f - self.nodes[o].end;
                self.nodes[c].waits.push(Edge {
                    from: o,
                    at: At::End,
                    lag,
                    why: Why::Sync,
                });
            }
            // Blocked: the work it waited for was still running when it was called.
            if let Some(o) = latest.filter(|&o| self.nodes[o].end >= s) {
                self.blocked_syncs += 1;
                decided_by_wait.push((c, o));
            }
        }
        let wake = decided_by_wait
            .iter()
            .map(|&(c, o)| self.nodes[c].end - self.nodes[o].end)
            .min()
            .unwrap_or(0);
        // The shortest unblocked duration of each synchronizing function: a blocked call's
        // own cost when its work is done in time.
        let mut own: HashMap<usize, i64> = HashMap::new();
        for &c in calls {
            let n = &self.nodes[c];
            if !n.waits.is_empty() && !decided_by_wait.iter().any(|&(d, _)| d == c) {
                let e = own.entry(n.name).or_insert(i64::MAX);
                *e = (*e).min(n.end - n.start);
            }
        }
        let decided: HashMap<usize, usize> = decided_by_wait.into_iter().collect();
        for &c in calls {
            let n = &mut self.nodes[c];
            if n.waits.is_empty() {
                continue;
            }
            let deciding = decided.get(&c).copied();
            if deciding.is_some() {
                n.base = n.base.min(own.get(&n.name).copied().unwrap_or(0));
            }
            for w in &mut n.waits {
                if Some(w.from) != deciding {
                    w.lag = w.lag.min(wake);
                }
            }
        }
    }
}

/// The device work, indexed for the synchronizing calls' questions.
struct OpIndex {
    /// Operation nodes by end time.
    by_end: Vec<usize>,
    /// Per stream, its operation nodes in stream order.
    per_stream: Vec<Vec<usize>>,
}

impl OpIndex {
    fn new(g: &Graph) -> OpIndex {
        let mut by_end = Vec::new();
        let mut per_stream = vec![Vec::new(); g.streams.len()];
        for (i, n) in g.nodes.iter().enumerate() {
            if let Kind::Op { stream } = n.kind {
                by_end.push(i);
                per_stream[stream].push(i);
            }
        }
        by_end.sort_by_key(|&o| (g.nodes[o].end, o));
        OpIndex { by_end, per_stream }
    }

    /// Whether operation `o` was launched before call `c` started (or by `c` itself).
    fn launched_before(g: &Graph, o: usize, c: usize) -> bool {
        match g.launch_of(o) {
            Some(call) => call == c || g.nodes[call].start < g.nodes[c].start,
            None => g.nodes[o].start < g.nodes[c].start,
        }
    }

    /// The last operation of `stream` launched before `c` that ended before `c` returned.
    fn last_of_stream(&self, g: &Graph, stream: usize, c: usize) -> Option<usize> {
        let ops = &self.per_stream[stream];
        // Work that ended before `c` returned started before that too.
        let upto = ops.partition_point(|&o| g.nodes[o].start <= g.nodes[c].end);
        ops[..upto]
            .iter()
            .rev()
            .copied()
            .filter(|&o| g.nodes[o].end <= g.nodes[c].end)
            .find(|&o| Self::launched_before(g, o, c))
    }

    fn waited(&self, g: &Graph, c: usize, kind: SyncKind) -> Vec<usize> {
        let (s, f) = (g.nodes[c].start, g.nodes[c].end);
        let from = self.by_end.partition_point(|&o| g.nodes[o].end < s);
        let to = self.by_end.partition_point(|&o| g.nodes[o].end <= f);
        // The work it was seen waiting for: the latest to end while it ran.
        let seen = self.by_end[from..to]
            .iter()
            .rev()
            .copied()
            .find(|&o| Self::launched_before(g, o, c));
        match kind {
            SyncKind::Device => (0..self.per_stream.len())
                .filter_map(|stream| self.last_of_stream(g, stream, c))
                .collect(),
            SyncKind::Stream => seen
                .and_then(|o| match g.nodes[o].kind {
                    Kind::Op { stream } => self.last_of_stream(g, stream, c),
                    _ => None,
                })
                .into_iter()
                .collect(),
            SyncKind::Event => seen.into_iter().collect(),
            SyncKind::OwnWork => self.by_end[..to]
                .iter()
                .copied()
                .filter(|&o| g.launch_of(o) == Some(c))
                .collect(),
            SyncKind::None => Vec::new(),
        }
    }
}

impl OpIndex {
    /// What call `c` waited for by its synchronization record.
    fn recorded(&self, g: &Graph, c: usize, sync: &SyncRecord, recorded: &Recorded) -> Vec<usize> {
        match sync.kind {
            Waited::Context => (0..self.per_stream.len())
                .filter_map(|stream| self.last_of_stream(g, stream, c))
                .collect(),
            Waited::Stream => sync
                .stream
                .and_then(|n| g.stream_numbered(n))
                .and_then(|stream| self.last_of_stream(g, stream, c))
                .into_iter()
                .collect(),
            Waited::Event => sync
                .event_record
                .and_then(|id| recorded.event_work(g, self, id))
                .into_iter()
                .collect(),
            Waited::StreamWaitsEvent => Vec::new(),
        }
    }

    /// Whether the records say what `sync` waited for (an event synchronize needs the event's
    /// record; without it the wait is found from the times).
    fn resolves(&self, g: &Graph, sync: &SyncRecord, recorded: &Recorded) -> bool {
        match sync.kind {
            Waited::Event => sync
                .event_record
                .is_some_and(|id| recorded.events.contains_key(&id)),
            Waited::Stream => sync.stream.and_then(|n| g.stream_numbered(n)).is_some(),
            _ => true,
        }
    }

    /// The last operation of `stream` launched before call `c` started, done or not.
    fn last_launched_before(&self, g: &Graph, stream: usize, c: usize) -> Option<usize> {
        self.per_stream[stream]
            .iter()
            .rev()
            .copied()
            .find(|&o| g.launch_of(o) != Some(c) && Self::launched_before(g, o, c))
    }
}

/// The recorded synchronizations and event records, joined to the calls that made them.
struct Recorded {
    /// Call node → its synchronization record.
    syncs: HashMap<usize, SyncRecord>,
    /// Event record id → (the `cudaEventRecord` call node, the stream number).
    events: HashMap<u64, (usize, u32)>,
}

impl Recording {
    /// Whether the GPU tracer recorded what the waits waited for.
    pub fn has_recorded_waits(&self) -> bool {
        !self.syncs.is_empty() || !self.events.is_empty()
    }
}

impl Recorded {
    fn new(rec: &Recording, call_of: &HashMap<u64, usize>) -> Recorded {
        let syncs = rec
            .syncs
            .iter()
            .filter_map(|s| Some((*call_of.get(&s.correlation)?, s.clone())))
            .collect();
        let events = rec
            .events
            .iter()
            .filter_map(|e| Some((e.id, (*call_of.get(&e.correlation)?, e.stream))))
            .collect();
        Recorded { syncs, events }
    }

    /// Whether the run recorded where its events were recorded (then no stream wait is found
    /// from the times).
    fn any(&self) -> bool {
        !self.events.is_empty()
    }

    fn sync_of(&self, call: usize) -> Option<&SyncRecord> {
        self.syncs.get(&call)
    }

    /// The work event record `id` completes after: the last operation of its stream launched
    /// before its `cudaEventRecord` call (none: the stream was idle, the event completes at
    /// once).
    fn event_work(&self, g: &Graph, index: &OpIndex, id: u64) -> Option<usize> {
        let &(call, number) = self.events.get(&id)?;
        let stream = g.stream_numbered(number)?;
        index.last_launched_before(g, stream, call)
    }
}

impl Graph {
    /// The stream index of stream number `n` (the number its track's name ends with).
    pub fn stream_numbered(&self, n: u32) -> Option<usize> {
        self.streams
            .iter()
            .position(|name| stream_number(name) == Some(n))
    }

    /// Each recorded stream wait: the first operation its stream launched after the
    /// `cudaStreamWaitEvent` call starts after the event's work ends.
    fn add_stream_waits(&mut self, recorded: &Recorded) {
        if !recorded.any() {
            return;
        }
        let index = OpIndex::new(self);
        let mut waits: Vec<(usize, usize)> = Vec::new();
        for (&call, sync) in &recorded.syncs {
            if sync.kind != Waited::StreamWaitsEvent {
                continue;
            }
            let Some(work) = sync
                .event_record
                .and_then(|id| recorded.event_work(self, &index, id))
            else {
                continue;
            };
            let Some(stream) = sync.stream.and_then(|n| self.stream_numbered(n)) else {
                continue;
            };
            let held = index.per_stream[stream]
                .iter()
                .copied()
                .find(|&o| !OpIndex::launched_before(self, o, call) && o != work);
            if let Some(o) = held {
                waits.push((o, work));
            }
        }
        waits.sort_unstable();
        for (o, work) in waits {
            let lag = self.nodes[o].start - self.nodes[work].end;
            self.nodes[o].after.push(Edge {
                from: work,
                at: At::End,
                lag,
                why: Why::OtherStream,
            });
            self.recorded_waits += 1;
        }
    }

    /// The call that launched operation `o`.
    pub fn launch_of(&self, o: usize) -> Option<usize> {
        self.nodes[o]
            .after
            .iter()
            .find(|e| e.why == Why::Launch)
            .map(|e| e.from)
    }
}

/// The number a stream track's name ends with (`GPU 0 NVIDIA H100 stream 7` → 7).
pub fn stream_number(track: &str) -> Option<u32> {
    track.rsplit(' ').next()?.parse().ok()
}

/// The order of cuts at one time (see [`Cut`]).
fn rank(cut: Cut) -> u8 {
    match cut {
        Cut::CallEnd(_) => 0,
        Cut::RegionEnd(_) => 1,
        Cut::RegionBegin(_) => 2,
        Cut::CallStart(_) => 3,
    }
}

fn program(from: usize) -> Edge {
    Edge {
        from,
        at: At::End,
        lag: 0,
        why: Why::Program,
    }
}

/// The calls that are not inside another (a driver call made by a runtime call is part of
/// it: its launches are the outer call's).
fn outer_calls(calls: &[CallRecord]) -> Vec<CallRecord> {
    let mut sorted: Vec<&CallRecord> = calls.iter().collect();
    sorted.sort_by_key(|c| (c.start, std::cmp::Reverse(c.end)));
    let mut out: Vec<CallRecord> = Vec::new();
    for c in sorted {
        match out.last_mut() {
            Some(outer) if c.start >= outer.start && c.end <= outer.end => {
                outer.correlations.extend(&c.correlations);
            }
            _ => out.push(c.clone()),
        }
    }
    out
}
