//! Threads in proportion: a program of many threads (a thread per task) gets the busiest
//! threads' tables one by one and the others folded, one group per thread name, so that the
//! summary grows with the program's distinct thread names rather than with its threads.
//!
//! Folding happens twice. While the run goes, once more than [`LIVE_THREADS`] threads have
//! tables, the threads with no region open, save the [`THREADS_APART`] busiest, are merged into
//! their group and their tables given back (a thread that records again after that starts a
//! table of its own, folded into the same group later). At the end, a run of more than
//! [`THREADS_MANY`] threads is folded the same way down to the [`THREADS_APART`] busiest.
//! Metron's own threads are never folded. Every region count and time stays in the merged
//! tree and in some thread's or group's table.

use super::*;
use std::collections::HashSet;

/// Above this many threads, the summary shows the busiest apart and the others by name.
pub(super) const THREADS_MANY: usize = 64;
/// Threads shown one by one when the others are folded (the busiest by wall time).
pub(super) const THREADS_APART: usize = 16;
/// Threads with tables of their own while the run goes: past this, idle ones are folded.
pub(super) const LIVE_THREADS: usize = 256;

/// The threads of one name folded together.
pub(super) struct ThreadGroup {
    /// The name, Metron's own or not (`tid` 0; `index`: the first thread folded in).
    pub(super) summary: ThreadSummary,
    /// The threads folded in, by index (a thread folded twice counts once).
    pub(super) members: HashSet<u64>,
}

impl ThreadGroup {
    fn new(info: &ThreadInfo) -> ThreadGroup {
        ThreadGroup {
            summary: ThreadSummary::new(ThreadInfo {
                tid: 0,
                name: info.name.clone(),
                index: info.index,
                is_metron: info.is_metron,
            }),
            members: HashSet::new(),
        }
    }

    /// Adds `thread`'s regions, counters, marks, drops and set-up slices.
    fn absorb(&mut self, thread: &ThreadSummary) {
        self.members.insert(thread.info.index);
        let g = &mut self.summary;
        g.tree.merge_from(0, &thread.tree, 0);
        g.dropped += thread.dropped;
        g.setup.0 += thread.setup.0;
        g.setup.1 += thread.setup.1;
        for (name, c) in &thread.counters {
            let entry = g.counters.entry(name).or_default();
            entry.stats.merge(&c.stats);
            if c.last_ns >= entry.last_ns {
                entry.last = c.last;
                entry.last_ns = c.last_ns;
            }
        }
        for (name, n) in &thread.marks {
            *g.marks.entry(name).or_default() += n;
        }
    }
}

/// A thread's wall time in regions (its top-level regions' totals): what "busiest" means.
pub(super) fn busy_ns(t: &ThreadSummary) -> f64 {
    t.tree.nodes[0]
        .children
        .iter()
        .filter_map(|c| t.tree.nodes[*c].metrics.first())
        .map(|s| s.total)
        .sum()
}

impl SummarySink {
    /// Folds threads while the run goes, when more than [`LIVE_THREADS`] have tables.
    pub(super) fn fold_while_running(&mut self) {
        if self.threads.len() > LIVE_THREADS {
            self.fold_threads();
        }
    }

    /// Folds every thread with no region open into its name's group, save Metron's own and the
    /// [`THREADS_APART`] busiest (the busiest of those folded before stay in their groups).
    pub(super) fn fold_threads(&mut self) {
        let mut order: Vec<(f64, u64)> = self
            .threads
            .values()
            .filter(|t| !t.info.is_metron)
            .map(|t| (busy_ns(t), t.info.index))
            .collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, index) in order.iter().skip(THREADS_APART) {
            if !self.threads[&index].open.is_empty() {
                continue;
            }
            let t = self.threads.remove(&index).expect("listed above");
            let key = (t.info.name.clone(), t.info.is_metron);
            self.groups
                .entry(key)
                .or_insert_with(|| ThreadGroup::new(&t.info))
                .absorb(&t);
        }
    }

    /// Threads the run had: those with tables and those folded (each counted once).
    pub(super) fn thread_count(&self) -> usize {
        let folded: HashSet<u64> = self
            .groups
            .values()
            .flat_map(|g| g.members.iter().copied())
            .filter(|i| !self.threads.contains_key(i))
            .collect();
        self.threads.len() + folded.len()
    }

    /// Every table: the threads apart, then the groups.
    pub(super) fn tables(&self) -> impl Iterator<Item = (&ThreadSummary, Option<usize>)> {
        self.threads.values().map(|t| (t, None)).chain(
            self.groups
                .values()
                .map(|g| (&g.summary, Some(g.members.len()))),
        )
    }
}
