//! The replay: every node's start and end recomputed from its constraints, in dependency
//! order (a discrete-event simulation whose events are the nodes' starts and ends).

use crate::graph::{At, Graph};
use crate::speedup::Speedups;

/// What decided a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decided {
    /// The node's release time (a thread's first stretch, work with no known launch).
    Release,
    /// Start constraint `k` of the node (`after[k]`).
    After(usize),
    /// The node's own duration after its start.
    Own,
    /// End constraint `k` (`waits[k]`).
    Wait(usize),
}

/// The replayed times.
#[derive(Clone, Debug)]
pub struct Replay {
    /// Per node, its start, ns.
    pub start: Vec<i64>,
    /// Per node, its end, ns.
    pub end: Vec<i64>,
    /// Per node, what decided its start.
    pub start_by: Vec<Decided>,
    /// Per node, what decided its end.
    pub end_by: Vec<Decided>,
}

impl Replay {
    /// The node that ends last (the run's end), if any.
    pub fn last(&self) -> Option<usize> {
        (0..self.end.len()).max_by_key(|&n| (self.end[n], n))
    }

    /// The run's span: from the first start to the end of node `last` (the node that ended
    /// last in the recording: its thread or stream is the one whose end is the run's end; a
    /// thread that merely outlives the work, such as a helper thread idle until exit, does
    /// not pin the prediction).
    pub fn span_to(&self, last: usize) -> i64 {
        self.end[last] - self.start.iter().min().copied().unwrap_or(0)
    }

    /// Where a point of a `Work` node falls: its start plus its first `pieces` pieces
    /// (`prefixes`: the node's [`Speedups::prefixes`]).
    pub fn at(&self, node: usize, pieces: usize, prefixes: &[i64]) -> i64 {
        self.start[node] + prefixes[pieces]
    }
}

/// Replays `g` with `speedups`. Fails only if the graph has a cycle (a recording whose times
/// contradict each other).
pub fn replay(g: &Graph, speedups: &Speedups) -> Result<Replay, String> {
    let n = g.nodes.len();
    // Events: 2i is node i's start, 2i+1 its end.
    let mut waiting = vec![0u32; 2 * n];
    let mut first = vec![0usize; 2 * n + 1];
    for (i, node) in g.nodes.iter().enumerate() {
        waiting[2 * i] = node.after.len() as u32;
        waiting[2 * i + 1] = 1 + node.waits.len() as u32;
        for e in &node.after {
            first[event(e.from, e.at)] += 1;
        }
        first[2 * i] += 1; // a start releases its own end
        for e in &node.waits {
            first[event(e.from, e.at)] += 1;
        }
    }
    // Dependents of each event, in one array (counting sort).
    let mut total = 0;
    for slot in first.iter_mut() {
        let count = *slot;
        *slot = total;
        total += count;
    }
    let mut fill = first.clone();
    let mut dependents = vec![0usize; total];
    for (i, node) in g.nodes.iter().enumerate() {
        for e in &node.after {
            let ev = event(e.from, e.at);
            dependents[fill[ev]] = 2 * i;
            fill[ev] += 1;
        }
        dependents[fill[2 * i]] = 2 * i + 1;
        fill[2 * i] += 1;
        for e in &node.waits {
            let ev = event(e.from, e.at);
            dependents[fill[ev]] = 2 * i + 1;
            fill[ev] += 1;
        }
    }
    let mut r = Replay {
        start: vec![i64::MIN; n],
        end: vec![i64::MIN; n],
        start_by: vec![Decided::Release; n],
        end_by: vec![Decided::Own; n],
    };
    let mut ready: Vec<usize> = (0..2 * n).filter(|&e| waiting[e] == 0).collect();
    let mut done = 0;
    while let Some(ev) = ready.pop() {
        done += 1;
        let i = ev / 2;
        let node = &g.nodes[i];
        if ev % 2 == 0 {
            let mut best = (node.release.unwrap_or(i64::MIN), Decided::Release);
            for (k, e) in node.after.iter().enumerate() {
                let t = time(&r, e.from, e.at) + e.lag;
                if t > best.0 {
                    best = (t, Decided::After(k));
                }
            }
            r.start[i] = best.0;
            r.start_by[i] = best.1;
        } else {
            let mut best = (r.start[i] + speedups.duration(g, i), Decided::Own);
            for (k, e) in node.waits.iter().enumerate() {
                let t = r.end[e.from] + e.lag;
                if t > best.0 {
                    best = (t, Decided::Wait(k));
                }
            }
            r.end[i] = best.0;
            r.end_by[i] = best.1;
        }
        for &d in &dependents[first[ev]..first[ev + 1]] {
            waiting[d] -= 1;
            if waiting[d] == 0 {
                ready.push(d);
            }
        }
    }
    if done != 2 * n {
        return Err(format!(
            "the recording's constraints form a cycle ({} of {} events could not be placed)",
            2 * n - done,
            2 * n
        ));
    }
    Ok(r)
}

fn event(node: usize, at: At) -> usize {
    match at {
        At::Start => 2 * node,
        At::End => 2 * node + 1,
    }
}

fn time(r: &Replay, node: usize, at: At) -> i64 {
    match at {
        At::Start => r.start[node],
        At::End => r.end[node],
    }
}
