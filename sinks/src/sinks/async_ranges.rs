//! Async slices (ranges that may begin and end on different threads: NVTX start/end, `tracing`
//! spans of async tasks): pairing their [`Event::AsyncBegin`] and [`Event::AsyncEnd`] across
//! threads, and their statistics by name for the summary.
//!
//! # Pairing
//! A begin and an end pair when they have the same call site and the same cookie and the end
//! is not earlier than the begin. Threads' batches reach the sinks in any order, so an end may
//! arrive before its begin: it waits (as an *orphan*) until the begin comes. At the end of the
//! run, orphans still waiting are **unmatched ends** (counted and reported), and begins still
//! waiting are **open at exit**: they are closed at the run's end, like regions.
//!
//! Everything here runs on the flusher thread.

use super::perfetto_encode::FastMap;
use super::Stats;
use crate::callsite::Callsite;
use crate::sink::Event;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One end of a range, waiting for the other.
#[derive(Clone, Copy, Debug)]
struct Half {
    ts_ns: u64,
    /// The thread (index) that recorded it.
    thread: u64,
}

/// A begin paired with its end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Matched {
    /// The range.
    pub(crate) site: &'static Callsite,
    /// The cookie that paired them.
    pub(crate) cookie: u64,
    /// Begin, `CLOCK_MONOTONIC` ns.
    pub(crate) begin_ns: u64,
    /// End, `CLOCK_MONOTONIC` ns.
    pub(crate) end_ns: u64,
    /// Thread index of the begin.
    pub(crate) begin_thread: u64,
    /// Thread index of the end (the begin's for a range closed by Metron).
    pub(crate) end_thread: u64,
    /// True when Metron closed it at the end of the run (its end never came).
    pub(crate) closed_by_metron: bool,
}

/// Pairs async begins and ends across threads.
#[derive(Default)]
pub(crate) struct AsyncMatcher {
    /// Begins waiting for their end, by (site id, cookie).
    open: FastMap<(u32, u64), (&'static Callsite, Vec<Half>)>,
    /// Ends that arrived before their begin, by (site id, cookie).
    orphans: FastMap<(u32, u64), Vec<Half>>,
    /// Ends still without a begin at the end of the run.
    pub(crate) unmatched_ends: u64,
    /// Begins never ended (closed by Metron at the end of the run).
    pub(crate) open_at_exit: u64,
}

impl AsyncMatcher {
    /// Feeds one event of thread `thread`; returns the range it completes, if any. Events
    /// other than async begin/end are ignored.
    pub(crate) fn event(&mut self, thread: u64, event: &Event<'_>) -> Option<Matched> {
        match *event {
            Event::AsyncBegin {
                ts_ns,
                site,
                cookie,
            } => self.begin(site, cookie, Half { ts_ns, thread }),
            Event::AsyncEnd {
                ts_ns,
                site,
                cookie,
            } => self.end(site, cookie, Half { ts_ns, thread }),
            _ => None,
        }
    }

    fn begin(&mut self, site: &'static Callsite, cookie: u64, begin: Half) -> Option<Matched> {
        let key = (site.id(), cookie);
        if let Some(ends) = self.orphans.get_mut(&key) {
            // The earliest end not before this begin; else the latest one (see `end`).
            if let Some(i) = (0..ends.len())
                .filter(|&i| ends[i].ts_ns >= begin.ts_ns)
                .min_by_key(|&i| ends[i].ts_ns)
                .or_else(|| (0..ends.len()).max_by_key(|&i| ends[i].ts_ns))
            {
                let end = ends.swap_remove(i);
                if ends.is_empty() {
                    self.orphans.remove(&key);
                }
                return Some(matched(site, cookie, begin, end, false));
            }
        }
        self.open
            .entry(key)
            .or_insert_with(|| (site, Vec::new()))
            .1
            .push(begin);
        None
    }

    fn end(&mut self, site: &'static Callsite, cookie: u64, end: Half) -> Option<Matched> {
        let key = (site.id(), cookie);
        if let Some((_, begins)) = self.open.get_mut(&key) {
            // The latest begin not after this end; else the earliest one: a cookie is unique
            // among open ranges, and two records a few ns apart converted with successive
            // refinements of the clock calibration can come out a few ns inverted.
            if let Some(i) = (0..begins.len())
                .filter(|&i| begins[i].ts_ns <= end.ts_ns)
                .max_by_key(|&i| begins[i].ts_ns)
                .or_else(|| (0..begins.len()).min_by_key(|&i| begins[i].ts_ns))
            {
                let begin = begins.swap_remove(i);
                if begins.is_empty() {
                    self.open.remove(&key);
                }
                return Some(matched(site, cookie, begin, end, false));
            }
        }
        self.orphans.entry(key).or_default().push(end);
        None
    }

    /// The run is over at `end_ns`: counts the orphan ends as unmatched and returns the ranges
    /// still open, closed at `end_ns` (in begin order).
    pub(crate) fn finish(&mut self, end_ns: u64) -> Vec<Matched> {
        self.unmatched_ends += self
            .orphans
            .drain()
            .map(|(_, v)| v.len() as u64)
            .sum::<u64>();
        let mut closed = Vec::new();
        for ((_, cookie), (site, begins)) in self.open.drain() {
            for begin in begins {
                let end = Half {
                    ts_ns: end_ns.max(begin.ts_ns),
                    thread: begin.thread,
                };
                closed.push(matched(site, cookie, begin, end, true));
            }
        }
        self.open_at_exit += closed.len() as u64;
        closed.sort_by_key(|m| (m.begin_ns, m.site.id(), m.cookie));
        closed
    }
}

fn matched(
    site: &'static Callsite,
    cookie: u64,
    begin: Half,
    end: Half,
    closed_by_metron: bool,
) -> Matched {
    Matched {
        site,
        cookie,
        begin_ns: begin.ts_ns,
        end_ns: end.ts_ns.max(begin.ts_ns),
        begin_thread: begin.thread,
        end_thread: end.thread,
        closed_by_metron,
    }
}

/// Statistics of one async range name.
#[derive(Default)]
struct RangeStats {
    wall: Stats,
    /// Every duration (ns), kept for the percentiles: 8 bytes per range, sorted at the end.
    durations: Vec<u64>,
    /// p50, p90, p99 (ns), set by [`AsyncSummary::finish`].
    percentiles: [u64; 3],
    /// Ranges that began and ended on different threads.
    cross_thread: u64,
    /// Ranges Metron closed at the end of the run.
    open_at_exit: u64,
}

/// The summary's part for async ranges: count, mean, p50/p90/p99, min, max and total of
/// their durations by name (the latency table of a server's requests), and the ends that
/// never found their begin.
#[derive(Default)]
pub(crate) struct AsyncSummary {
    matcher: AsyncMatcher,
    by_name: BTreeMap<&'static str, RangeStats>,
    finished: bool,
}

impl AsyncSummary {
    /// Feeds a thread's events (only async begin/end are looked at).
    pub(crate) fn events(&mut self, thread: u64, events: &[Event<'_>]) {
        for event in events {
            if let Some(m) = self.matcher.event(thread, event) {
                self.add(&m);
            }
        }
    }

    fn add(&mut self, m: &Matched) {
        let s = self.by_name.entry(m.site.name).or_default();
        let duration = m.end_ns.saturating_sub(m.begin_ns);
        s.wall.push(duration as f64);
        s.durations.push(duration);
        s.cross_thread += u64::from(m.begin_thread != m.end_thread);
        s.open_at_exit += u64::from(m.closed_by_metron);
    }

    /// Closes what is still open at `end_ns` (once; later calls do nothing).
    pub(crate) fn finish(&mut self, end_ns: u64) {
        if self.finished {
            return;
        }
        self.finished = true;
        for m in self.matcher.finish(end_ns) {
            self.add(&m);
        }
        for s in self.by_name.values_mut() {
            s.durations.sort_unstable();
            s.percentiles = [50, 90, 99].map(|p| nearest_rank(&s.durations, p));
        }
        if self.matcher.unmatched_ends > 0 {
            eprintln!(
                "metron: {} async range end(s) had no matching begin (NVTX range end or \
                 async span end with an unknown id); counted as `unmatched_ends` in summary.json",
                self.matcher.unmatched_ends
            );
        }
    }

    /// The `async_ranges` object of `summary.json` (call [`AsyncSummary::finish`] first).
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "ranges": self.by_name.iter().map(|(name, s)| json!({
                "name": name,
                "count": s.wall.count,
                "total_ns": s.wall.total,
                "mean_ns": s.wall.mean(),
                "p50_ns": s.percentiles[0],
                "p90_ns": s.percentiles[1],
                "p99_ns": s.percentiles[2],
                "min_ns": if s.wall.count > 0 { s.wall.min } else { 0.0 },
                "max_ns": if s.wall.count > 0 { s.wall.max } else { 0.0 },
                "cross_thread": s.cross_thread,
                "open_at_exit": s.open_at_exit,
            })).collect::<Vec<_>>(),
            "unmatched_ends": self.matcher.unmatched_ends,
            "open_at_exit": self.matcher.open_at_exit,
        })
    }

    /// The `async ranges` table of `summary.txt` (nothing when there were none).
    pub(crate) fn write_text(&self, out: &mut String) {
        if self.by_name.is_empty() && self.matcher.unmatched_ends == 0 {
            return;
        }
        let _ = writeln!(
            out,
            "\nwall_clock.elapsed [us], async ranges (begin and end may be on different threads)"
        );
        let _ = writeln!(
            out,
            "| {:<40} | {:>9} | {:>12} | {:>12} | {:>12} | {:>12} | {:>12} | {:>12} | {:>12} | {:>12} | {:>8} |",
            "range", "count", "mean", "p50", "p90", "p99", "min", "max", "total", "cross-thread", "open"
        );
        let _ = writeln!(
            out,
            "|{:-<42}|{:-<11}|{:-<14}|{:-<14}|{:-<14}|{:-<14}|{:-<14}|{:-<14}|{:-<14}|{:-<14}|{:-<10}|",
            "", "", "", "", "", "", "", "", "", "", ""
        );
        for (name, s) in &self.by_name {
            let _ = writeln!(
                out,
                "| {:<40} | {:>9} | {:>12.3} | {:>12.3} | {:>12.3} | {:>12.3} | {:>12.3} | {:>12.3} | {:>12.3} | {:>12} | {:>8} |",
                name,
                s.wall.count,
                s.wall.mean() / 1e3,
                s.percentiles[0] as f64 / 1e3,
                s.percentiles[1] as f64 / 1e3,
                s.percentiles[2] as f64 / 1e3,
                s.wall.min / 1e3,
                s.wall.max / 1e3,
                s.wall.total / 1e3,
                s.cross_thread,
                s.open_at_exit
            );
        }
        if self.matcher.unmatched_ends > 0 {
            let _ = writeln!(
                out,
                "  {} async range end(s) without a matching begin",
                self.matcher.unmatched_ends
            );
        }
    }
}

/// The `p`th percentile of sorted `values` by the nearest-rank method (the smallest value
/// with at least `p` % of the values at or below it); 0 when empty.
fn nearest_rank(sorted: &[u64], p: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as u64).div_ceil(100).max(1);
    sorted[rank as usize - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callsite::CallsiteKind;

    static SITE: Callsite = Callsite::new("async", "", 0, "", CallsiteKind::Region, &[]);

    fn begin(ts_ns: u64, cookie: u64) -> Event<'static> {
        Event::AsyncBegin {
            ts_ns,
            site: &SITE,
            cookie,
        }
    }

    fn end(ts_ns: u64, cookie: u64) -> Event<'static> {
        Event::AsyncEnd {
            ts_ns,
            site: &SITE,
            cookie,
        }
    }

    #[test]
    fn an_end_delivered_before_its_begin_still_pairs() {
        let mut m = AsyncMatcher::default();
        assert!(m.event(1, &end(50, 7)).is_none());
        let r = m.event(0, &begin(10, 7)).expect("paired");
        assert_eq!(
            (r.begin_ns, r.end_ns, r.begin_thread, r.end_thread),
            (10, 50, 0, 1)
        );
        assert!(m.finish(100).is_empty());
        assert_eq!(m.unmatched_ends, 0);
    }

    #[test]
    fn an_end_a_few_ns_before_its_begin_still_matches() {
        // Successive calibration refinements can invert two records a few ns apart.
        let mut m = AsyncMatcher::default();
        assert!(m.event(1, &begin(1_000_005, 7)).is_none());
        let r = m.event(1, &end(1_000_002, 7)).expect("matched");
        assert_eq!((r.begin_ns, r.end_ns), (1_000_005, 1_000_005));
        assert!(m.event(1, &end(2_000_000, 8)).is_none());
        let r = m.event(1, &begin(2_000_001, 8)).expect("matched");
        assert_eq!(r.end_ns, 2_000_001);
        m.finish(3_000_000);
        assert_eq!(m.unmatched_ends, 0);
    }

    #[test]
    fn unmatched_ends_are_counted_and_open_ranges_closed_at_exit() {
        let mut m = AsyncMatcher::default();
        assert!(m.event(0, &begin(10, 1)).is_none());
        assert!(m.event(0, &end(20, 2)).is_none());
        let closed = m.finish(100);
        assert_eq!(closed.len(), 1);
        assert!(closed[0].closed_by_metron);
        assert_eq!(closed[0].end_ns, 100);
        assert_eq!((m.unmatched_ends, m.open_at_exit), (1, 1));
    }

    #[test]
    fn summary_reports_duration_statistics_by_name() {
        let mut s = AsyncSummary::default();
        s.events(0, &[begin(0, 1), begin(5, 2), end(10, 1)]);
        s.events(1, &[end(35, 2)]);
        s.finish(100);
        let j = s.to_json();
        let r = &j["ranges"][0];
        assert_eq!(r["name"], "async");
        assert_eq!(r["count"], 2);
        assert_eq!(r["min_ns"], 10.0);
        assert_eq!(r["max_ns"], 30.0);
        assert_eq!(r["cross_thread"], 1);
        assert_eq!(j["unmatched_ends"], 0);
    }

    #[test]
    fn percentiles_are_nearest_rank_over_every_range() {
        let mut s = AsyncSummary::default();
        // Durations 1..=200 µs, delivered out of order.
        let events: Vec<Event<'static>> = (1..=200u64)
            .rev()
            .flat_map(|d| [begin(1_000_000 * d, d), end(1_000_000 * d + 1_000 * d, d)])
            .collect();
        s.events(0, &events);
        s.finish(u64::MAX);
        let j = s.to_json();
        let r = &j["ranges"][0];
        assert_eq!(r["count"], 200);
        assert_eq!(r["p50_ns"], 100_000);
        assert_eq!(r["p90_ns"], 180_000);
        assert_eq!(r["p99_ns"], 198_000);
        assert_eq!(r["max_ns"], 200_000.0);
        let mut text = String::new();
        s.write_text(&mut text);
        assert!(text.contains(" p50 |"), "{text}");
        assert!(
            text.contains("100.000 |      180.000 |      198.000 |"),
            "{text}"
        );
        assert_eq!(nearest_rank(&[], 50), 0);
        assert_eq!(nearest_rank(&[7], 99), 7);
    }
}
