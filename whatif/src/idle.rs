//! GPU idle time and its cause: per device, the time no kernel ran between its first and last
//! work, split by why the next kernel had not started.
//!
//! - **copies only**: copies or sets ran, no kernel (the device waited for data);
//! - **after a sync**: nothing ran, and the thread that launched the next work had been
//!   blocked in a synchronizing call that returned during the gap (the CPU waited for the GPU
//!   to drain, then had to prepare the next work);
//! - **waiting for launches**: nothing ran, and the next work had not been launched yet (the
//!   CPU was busy elsewhere, or the launch latency).

use crate::graph::{Graph, Kind, Why};
use crate::op_kind::OpKind;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One device's idle time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Idle {
    /// From the device's first work to its last, ns.
    pub span: i64,
    /// No kernel running, ns (the sum of the three below).
    pub idle: i64,
    /// Copies or sets only.
    pub copies_only: i64,
    /// Nothing running after the launching thread's sync returned.
    pub after_sync: i64,
    /// Nothing running, the next work not launched yet.
    pub waiting_for_launches: i64,
}

impl Idle {
    /// As JSON.
    pub fn json(&self) -> Value {
        json!({
            "span_ns": self.span,
            "idle_ns": self.idle,
            "copies_only_ns": self.copies_only,
            "after_a_sync_ns": self.after_sync,
            "waiting_for_launches_ns": self.waiting_for_launches,
        })
    }
}

/// The device a stream track belongs to (`GPU <dev> ...`), or the stream's name.
fn device_of(stream: &str) -> String {
    let mut words = stream.split(' ');
    match (words.next(), words.next()) {
        (Some("GPU"), Some(dev)) => format!("GPU {dev}"),
        _ => stream.to_string(),
    }
}

/// Per device, its idle time and the causes.
pub fn idle(g: &Graph) -> BTreeMap<String, Idle> {
    let mut ops: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if let Kind::Op { stream } = n.kind {
            ops.entry(device_of(&g.streams[stream]))
                .or_default()
                .push(i);
        }
    }
    let mut out = BTreeMap::new();
    for (device, mut list) in ops {
        list.sort_by_key(|&o| (g.nodes[o].start, g.nodes[o].end));
        let mut idle = Idle {
            span: list.iter().map(|&o| g.nodes[o].end).max().unwrap_or(0)
                - list.first().map_or(0, |&o| g.nodes[o].start),
            ..Idle::default()
        };
        // What copies and sets covered, as disjoint intervals in time order: a gap between
        // kernels counts the part of it they cover, wherever in the gap they ran (a copy
        // to the device just before the next kernel as well as one back after the last).
        let copies = union(
            list.iter()
                .map(|&o| &g.nodes[o])
                .filter(|n| OpKind::of(&g.names[n.name]) != OpKind::Kernel)
                .map(|n| (n.start, n.end)),
        );
        // Sweep the kernels in start order: the end of the kernels seen so far.
        let mut kernels_until = None::<i64>;
        for &o in &list {
            let n = &g.nodes[o];
            if OpKind::of(&g.names[n.name]) != OpKind::Kernel {
                continue;
            }
            if let Some(until) = kernels_until.filter(|&u| n.start > u) {
                let gap = n.start - until;
                let copying = covered(&copies, until, n.start);
                let nothing = gap - copying;
                idle.idle += gap;
                idle.copies_only += copying;
                if synced_during(g, o, until, n.start) {
                    idle.after_sync += nothing;
                } else {
                    idle.waiting_for_launches += nothing;
                }
            }
            kernels_until = Some(kernels_until.map_or(n.end, |u| u.max(n.end)));
        }
        out.insert(device, idle);
    }
    out
}

/// The union of `intervals` (sorted by start) as disjoint intervals in time order.
fn union(intervals: impl Iterator<Item = (i64, i64)>) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (start, end) in intervals {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// How much of `from`..`to` the disjoint, ordered `intervals` cover.
fn covered(intervals: &[(i64, i64)], from: i64, to: i64) -> i64 {
    let first = intervals.partition_point(|&(_, end)| end <= from);
    intervals[first..]
        .iter()
        .take_while(|&&(start, _)| start < to)
        .map(|&(start, end)| end.min(to) - start.max(from))
        .sum()
}

/// Whether the thread that launched op `o` came out of a synchronizing call between `from`
/// and `to`.
fn synced_during(g: &Graph, o: usize, from: i64, to: i64) -> bool {
    let Some(launch) = g.nodes[o]
        .after
        .iter()
        .find(|e| e.why == Why::Launch)
        .map(|e| e.from)
    else {
        return false;
    };
    let Kind::Call { thread } = g.nodes[launch].kind else {
        return false;
    };
    let same_thread =
        |k: &Kind| matches!(*k, Kind::Work { thread: t } | Kind::Call { thread: t } if t == thread);
    // A thread's nodes are consecutive and in program order: look back until before `from`.
    g.nodes[..launch]
        .iter()
        .rev()
        .take_while(|n| same_thread(&n.kind) && n.end >= from)
        .any(|n| matches!(n.kind, Kind::Call { .. }) && !n.waits.is_empty() && n.end <= to)
}
