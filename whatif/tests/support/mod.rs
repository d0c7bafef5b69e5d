//! What the known-answer tests share: records built in µs, the predicted span, the exact
//! replay of an unchanged graph.
#![allow(dead_code)] // each test file uses its own part

use metron_whatif::graph::{CallRecord, Graph, OpRecord, Span};
use metron_whatif::replay::replay;
use metron_whatif::speedup::{Speedup, Speedups};

pub const US: i64 = 1000;

pub fn call(name: &str, start: i64, end: i64, correlations: &[u64]) -> CallRecord {
    CallRecord {
        name: name.into(),
        start: start * US,
        end: end * US,
        correlations: correlations.to_vec(),
    }
}

pub fn op(name: &str, stream: &str, start: i64, end: i64, correlation: u64) -> OpRecord {
    OpRecord {
        name: name.into(),
        stream: stream.into(),
        start: start * US,
        end: end * US,
        correlation: Some(correlation),
    }
}

pub fn region(name: &str, start: i64, end: i64) -> Span {
    Span {
        name: name.into(),
        start: start * US,
        end: end * US,
    }
}

/// The run's span predicted with `changes` (µs).
pub fn predicted(g: &Graph, changes: &[&str]) -> f64 {
    let list = changes.iter().map(|c| Speedup::parse(c).unwrap()).collect();
    let s = Speedups::resolve(list, g).unwrap();
    let last = replay(g, &Speedups::none(g)).unwrap().last().unwrap();
    replay(g, &s).unwrap().span_to(last) as f64 / US as f64
}

/// Replaying the unchanged graph gives back every recorded start and end.
pub fn assert_replays_exactly(g: &Graph) {
    let r = replay(g, &Speedups::none(g)).unwrap();
    for (i, n) in g.nodes.iter().enumerate() {
        assert_eq!(
            (r.start[i], r.end[i]),
            (n.start, n.end),
            "node {i} {:?} {}",
            n.kind,
            g.names[n.name]
        );
    }
}
