//! The critical path: from the run's end (or a region's end) back along the constraints that
//! decided each time, and the time each kernel, region, API function and latency has on it.

use crate::graph::{At, Graph, Kind, Why};
use crate::op_kind::OpKind;
use crate::replay::{replay, Decided, Replay};
use crate::speedup::{Speedup, Speedups};
use std::collections::HashMap;

/// What a stretch of the critical path is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Item {
    /// A device operation: a kernel, copy or set (by name; labelled by its [`OpKind`]).
    Kernel(String),
    /// CPU time in a region (the innermost open one).
    Region(String),
    /// CPU time of a thread outside any region.
    Thread(u32),
    /// A GPU API call's own time (by function).
    Api(String),
    /// A latency between two nodes: launch to start, stream gap, wake-up after a wait.
    Latency(Why),
}

impl Item {
    /// How the item is written in the table.
    pub fn label(&self) -> String {
        match self {
            Item::Kernel(n) => format!("{} {n}", OpKind::of(n).word()),
            Item::Region(n) => format!("region {n}"),
            Item::Thread(t) => format!("thread {t} (outside regions)"),
            Item::Api(n) => format!("API {n}"),
            Item::Latency(w) => match w {
                Why::Launch => "latency: launch to start".to_string(),
                Why::Stream => "latency: stream gap".to_string(),
                Why::OtherStream => "latency: wait for another stream".to_string(),
                Why::Sync => "latency: wake-up after a sync".to_string(),
                Why::Program => "latency: program order".to_string(),
            },
        }
    }

    /// The name a `--faster` speedup of this item would use (none for threads and latencies).
    pub fn speedup_name(&self) -> Option<&str> {
        match self {
            Item::Kernel(n) | Item::Region(n) | Item::Api(n) => Some(n),
            _ => None,
        }
    }
}

/// What resource a stretch ran on.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// A CPU thread (its tid).
    Thread(u32),
    /// A GPU stream (its track's name).
    Stream(String),
    /// Between two resources (a latency).
    Between,
}

/// The critical path's time per item and per resource.
#[derive(Clone, Debug, Default)]
pub struct Path {
    /// ns on the path per item, largest first.
    pub items: Vec<(Item, i64)>,
    /// ns on the path per resource, largest first.
    pub resources: Vec<(Resource, i64)>,
    /// The path's length, ns (from its first node's release to the end it was asked for).
    pub length: i64,
}

/// The critical path that ends at node `n`'s end in replay `r`.
pub fn path(g: &Graph, s: &Speedups, r: &Replay, n: usize) -> Path {
    path_to(g, s, r, n, At::End)
}

/// An item or a resource by indices, while the path is walked (named at the end).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Kernel(usize),
    Region(usize),
    Thread(usize),
    Api(usize),
    Latency(Why),
    OnThread(usize),
    OnStream(usize),
    Between,
}

/// The critical path that ends at node `n`'s start or end.
pub fn path_to(g: &Graph, s: &Speedups, r: &Replay, mut n: usize, at: At) -> Path {
    let mut at = at;
    let mut items: HashMap<Key, i64> = HashMap::new();
    let mut resources: HashMap<Key, i64> = HashMap::new();
    let end = if at == At::End { r.end[n] } else { r.start[n] };
    let mut add = |item: Key, resource: Key, ns: i64| {
        if ns > 0 {
            *items.entry(item).or_default() += ns;
            *resources.entry(resource).or_default() += ns;
        }
    };
    let begin;
    loop {
        if at == At::End {
            match r.end_by[n] {
                Decided::Wait(k) => {
                    let e = g.nodes[n].waits[k];
                    add(Key::Latency(Why::Sync), Key::Between, e.lag);
                    n = e.from;
                    at = e.at;
                    continue;
                }
                _ => own_time(g, s, r, n, &mut add),
            }
        }
        match r.start_by[n] {
            Decided::After(k) => {
                let e = g.nodes[n].after[k];
                add(Key::Latency(e.why), Key::Between, e.lag);
                n = e.from;
                at = e.at;
            }
            _ => {
                begin = r.start[n];
                break;
            }
        }
    }
    let item = |k: Key| match k {
        Key::Kernel(i) => Item::Kernel(g.names[i].clone()),
        Key::Region(i) => Item::Region(g.names[i].clone()),
        Key::Thread(t) => Item::Thread(g.threads[t]),
        Key::Api(i) => Item::Api(g.names[i].clone()),
        Key::Latency(w) => Item::Latency(w),
        _ => unreachable!("resources are not items"),
    };
    let resource = |k: Key| match k {
        Key::OnThread(t) => Resource::Thread(g.threads[t]),
        Key::OnStream(s) => Resource::Stream(g.streams[s].clone()),
        _ => Resource::Between,
    };
    let mut items: Vec<(Item, i64)> = items.into_iter().map(|(k, ns)| (item(k), ns)).collect();
    items.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut resources: Vec<(Resource, i64)> = resources
        .into_iter()
        .map(|(k, ns)| (resource(k), ns))
        .collect();
    resources.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Path {
        items,
        resources,
        length: end - begin,
    }
}

/// Adds node `n`'s own time to the path.
fn own_time(g: &Graph, s: &Speedups, r: &Replay, n: usize, add: &mut impl FnMut(Key, Key, i64)) {
    let node = &g.nodes[n];
    match node.kind {
        Kind::Op { stream } => add(
            Key::Kernel(node.name),
            Key::OnStream(stream),
            r.end[n] - r.start[n],
        ),
        Kind::Call { thread } => add(
            Key::Api(node.name),
            Key::OnThread(thread),
            r.end[n] - r.start[n],
        ),
        Kind::Work { thread } => {
            for (k, piece) in node.pieces.iter().enumerate() {
                let item = match g.stacks[piece.stack].last() {
                    Some(&name) => Key::Region(name),
                    None => Key::Thread(thread),
                };
                add(item, Key::OnThread(thread), s.piece(g, n, k));
            }
        }
    }
}

/// One row of the critical-path table: an item, its time on the path, and what the run would
/// gain were it twice as fast (a replay with it 50 % faster).
#[derive(Clone, Debug)]
pub struct Row {
    /// The item.
    pub item: Item,
    /// ns on the critical path.
    pub on_path: i64,
    /// ns the run would be shorter with the item 2× faster (None for latencies and threads).
    pub gain_if_2x: Option<i64>,
}

/// The critical-path table of the run as recorded: the `top` items with the most time on the
/// path, each with its predicted gain if twice as fast.
pub fn table(g: &Graph, top: usize) -> Result<(Path, Vec<Row>), String> {
    let none = Speedups::none(g);
    let base = replay(g, &none)?;
    let Some(last) = base.last() else {
        return Ok((Path::default(), Vec::new()));
    };
    let p = path(g, &none, &base, last);
    let span = base.span_to(last);
    let mut rows = Vec::new();
    for (item, on_path) in p.items.iter().take(top) {
        let gain_if_2x = match item.speedup_name() {
            Some(name) => {
                let speedup = Speedup {
                    pattern: name.to_string(),
                    fraction: 0.5,
                    exact: true,
                };
                let s = Speedups::resolve(vec![speedup], g)?;
                Some(span - replay(g, &s)?.span_to(last))
            }
            None => None,
        };
        rows.push(Row {
            item: item.clone(),
            on_path: *on_path,
            gain_if_2x,
        });
    }
    Ok((p, rows))
}
