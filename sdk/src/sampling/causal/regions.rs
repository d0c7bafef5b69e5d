//! Metron regions named as latency points (`--latency REGION`, `METRON_CAUSAL_LATENCY`).
//!
//! A region's begin is an arrival and its end a departure, exactly as `COZ_BEGIN` /
//! `COZ_END` placed at the region's begin and end would count them. Nothing is added to the
//! region hot path: a sink (on the flusher thread) keeps the begin and end times of the named
//! regions, and when `profile.coz` is written, after the last flush, each experiment's window
//! gets its `latency-point` line: arrivals and departures inside the window, and the
//! transactions in flight at its end (Coz's `difference`).
//!
//! What follows from counting after the fact: region events reach the sink only at flushes,
//! so these points cannot lengthen an experiment while it runs (a counter can); an experiment
//! that saw fewer than 5 begins or 5 ends of a named region is not logged (as Coz does with
//! every point) and is counted in `experiments_short_of_transactions`. Only transactions that
//! began after the watch started count (a begin before it has no matching arrival).

use crate::sink::{Event, RunInfo, Sink, ThreadInfo};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

/// Experiments not logged because a named region had fewer than 5 begins or ends in them.
pub(crate) static SHORT: AtomicU64 = AtomicU64::new(0);

/// Visits a point needs in an experiment (the controller's `TARGET_DELTA`, Coz's
/// `ExperimentTargetDelta`).
const TARGET: usize = 5;

/// The begin and end times (`CLOCK_MONOTONIC` ns) of each named region's transactions.
struct Times {
    names: Vec<String>,
    /// Transactions that began before this are not counted.
    since_ns: u64,
    begins: Vec<Vec<u64>>,
    ends: Vec<Vec<u64>>,
}

static TIMES: Mutex<Option<Times>> = Mutex::new(None);

fn times() -> std::sync::MutexGuard<'static, Option<Times>> {
    TIMES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts counting the regions `names` (called on the `metron-causal` thread, which may wait
/// here until the runtime has finished starting).
pub(crate) fn watch(names: &[String]) {
    *times() = Some(Times {
        names: names.to_vec(),
        since_ns: super::super::sys::monotonic_ns(),
        begins: vec![Vec::new(); names.len()],
        ends: vec![Vec::new(); names.len()],
    });
    crate::runtime::add_sink(Box::new(RegionSink {
        index: HashMap::new(),
        names: names.to_vec(),
    }));
}

/// Keeps the times of the named regions' begins and ends.
struct RegionSink {
    /// Call site address → index in `names` (`None`: not a named region).
    index: HashMap<usize, Option<usize>>,
    names: Vec<String>,
}

impl RegionSink {
    fn which(&mut self, site: &'static crate::Callsite) -> Option<usize> {
        let names = &self.names;
        *self
            .index
            .entry(site as *const crate::Callsite as usize)
            .or_insert_with(|| names.iter().position(|n| n == site.name))
    }
}

impl Sink for RegionSink {
    fn name(&self) -> &str {
        "causal-latency-regions"
    }

    fn events(&mut self, _thread: &ThreadInfo, events: &[Event<'_>]) {
        let mut guard = times();
        let Some(t) = guard.as_mut() else {
            return;
        };
        for e in events {
            match *e {
                Event::Begin { ts_ns, site } if ts_ns >= t.since_ns => {
                    if let Some(i) = self.which(site) {
                        t.begins[i].push(ts_ns);
                    }
                }
                Event::End {
                    begin_ns,
                    ts_ns,
                    site,
                    closed_by_metron: false,
                    ..
                } if begin_ns >= t.since_ns => {
                    if let Some(i) = self.which(site) {
                        t.ends[i].push(ts_ns);
                    }
                }
                _ => {}
            }
        }
    }

    fn finish(&mut self, _run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }
}

/// How many of `sorted` are below `t`.
fn below(sorted: &[u64], t: u64) -> usize {
    sorted.partition_point(|v| *v < t)
}

/// The `latency-point` lines of the window `start_ns..end_ns`, or `None` when a named region
/// had fewer than 5 begins or ends in it. Empty when no region is watched.
pub(crate) struct Windows {
    names: Vec<String>,
    begins: Vec<Vec<u64>>,
    ends: Vec<Vec<u64>>,
}

impl Windows {
    /// The times recorded so far, sorted (call after the last flush).
    pub(crate) fn take() -> Windows {
        let guard = times();
        let Some(t) = guard.as_ref() else {
            return Windows {
                names: Vec::new(),
                begins: Vec::new(),
                ends: Vec::new(),
            };
        };
        let sorted = |v: &Vec<Vec<u64>>| {
            v.iter()
                .map(|x| {
                    let mut x = x.clone();
                    x.sort_unstable();
                    x
                })
                .collect::<Vec<_>>()
        };
        Windows {
            names: t.names.clone(),
            begins: sorted(&t.begins),
            ends: sorted(&t.ends),
        }
    }

    pub(crate) fn lines(&self, start_ns: u64, end_ns: u64) -> Option<String> {
        let mut text = String::new();
        for (i, name) in self.names.iter().enumerate() {
            let (b, e) = (&self.begins[i], &self.ends[i]);
            let arrivals = below(b, end_ns) - below(b, start_ns);
            let departures = below(e, end_ns) - below(e, start_ns);
            if arrivals < TARGET || departures < TARGET {
                return None;
            }
            let in_flight = below(b, end_ns).saturating_sub(below(e, end_ns));
            let _ = writeln!(
                text,
                "latency-point\tname={name}\tarrivals={arrivals}\tdepartures={departures}\tdifference={in_flight}"
            );
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_counts_the_begins_and_ends_inside_it_and_those_in_flight_at_its_end() {
        // Transactions [10,20), [15,40), [30,35), [50,60) ... and six more inside 100..200.
        let mut begins = vec![10, 15, 30, 50];
        let mut ends = vec![20, 40, 35, 60];
        for k in 0..6 {
            begins.push(100 + 10 * k);
            ends.push(105 + 10 * k);
        }
        begins.push(190); // still open at 200
        begins.sort_unstable();
        ends.sort_unstable();
        let w = Windows {
            names: vec!["req".into()],
            begins: vec![begins],
            ends: vec![ends],
        };
        assert_eq!(
            w.lines(100, 200).as_deref(),
            Some("latency-point\tname=req\tarrivals=7\tdepartures=6\tdifference=1\n")
        );
        // 10..45: 3 begins, 3 ends: fewer than 5, not logged.
        assert_eq!(w.lines(10, 45), None);
        assert_eq!(
            w.lines(0, 200).as_deref(),
            Some("latency-point\tname=req\tarrivals=11\tdepartures=10\tdifference=1\n")
        );
    }
}
