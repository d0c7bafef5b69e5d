//! `METRON_BACKEND_THREADS`: the trace sink on a thread of its own.
//!
//! The flusher decodes a batch once; with two back-end threads the trace sink encodes and
//! writes it on a scoped thread (`metron-encode`) while the flusher hands the same events to
//! the summary and the other sinks, and the batch is done when both are. Each sink still sees
//! every batch in order, and the trace is written by one thread: it stays one valid trace.
//! Small batches (under [`PARALLEL_EVENTS`]) stay on the flusher: starting the thread (about
//! 30 µs) would cost more than it saves; a batch above it takes milliseconds to encode.
//!
//! A scoped thread per batch rather than a pool: it borrows the batch's events without
//! `unsafe`, and a pool crate's thread-locals would push `libmetron.so`'s thread-local block
//! past glibc's spare static TLS (`tests/tests/tls_block.rs`).

use crate::sink::{Event, Present, Sink, ThreadInfo};

/// Batches with fewer events are handed to every sink on the flusher thread.
pub(crate) const PARALLEL_EVENTS: usize = 8192;

/// Events per part of a batch on one back-end thread ([`BackendThreads::part_events`]):
/// about 200 KB of decoded events, well inside a core's L2 cache.
pub(crate) const PART_EVENTS: usize = 4096;

/// The sink that goes to the second thread (the costliest per event).
const TRACE_SINK: &str = "trace";

pub(crate) struct BackendThreads {
    threads: usize,
    /// Batches the two threads shared, and batches the flusher took alone.
    shared: u64,
    alone: u64,
    /// Set when a thread could not be started: every later batch stays on the flusher.
    failed: bool,
}

impl BackendThreads {
    pub(crate) fn new(threads: usize) -> BackendThreads {
        BackendThreads {
            threads: threads.clamp(1, 2),
            shared: 0,
            alone: 0,
            failed: false,
        }
    }

    /// How many decoded events the flusher hands over at a time: a long batch goes in parts
    /// whose events stay in the cache between the decoder writing them and the sinks reading
    /// them (a whole 256 KiB segment decodes to 0.8 MB of events). With a second thread the
    /// batch goes whole, large enough to be worth that thread ([`PARALLEL_EVENTS`]).
    pub(crate) fn part_events(&self) -> usize {
        if self.threads > 1 && !self.failed {
            usize::MAX
        } else {
            PART_EVENTS
        }
    }

    /// Whether the flusher hands runs of empty regions to the sinks apart from the other
    /// events ([`crate::sink::Sink::empty_regions`]): on one thread; with a second one the
    /// events go whole, in batches large enough to be worth sharing.
    pub(crate) fn empty_region_runs(&self) -> bool {
        self.part_events() != usize::MAX
    }

    /// Hands `events` of `thread` to every sink: the trace sink on the second thread when there
    /// is one and the batch is large, the others here.
    pub(crate) fn deliver(
        &mut self,
        sinks: &mut [Box<dyn Sink>],
        thread: &ThreadInfo,
        events: &[Event<'_>],
        present: Present,
    ) {
        let split = (self.threads > 1
            && !self.failed
            && events.len() >= PARALLEL_EVENTS
            && sinks.len() > 1)
            .then(|| sinks.iter().position(|s| s.name() == TRACE_SINK))
            .flatten();
        let Some(at) = split else {
            self.alone += 1;
            for sink in sinks.iter_mut() {
                sink.batch(thread, events, present);
            }
            return;
        };
        let (before, rest) = sinks.split_at_mut(at);
        let (trace, after) = rest.split_first_mut().expect("the trace sink is at `at`");
        // The scope returns when both halves are done, so the borrowed events outlive both.
        let failed = std::thread::scope(|scope| {
            let encoder = std::thread::Builder::new()
                .name("metron-encode".into())
                .spawn_scoped(scope, || trace.batch(thread, events, present));
            let failed = match encoder {
                Ok(_) => false,
                Err(e) => {
                    eprintln!("metron: the trace is encoded on the flusher thread (cannot start a second back-end thread: {e})");
                    true
                }
            };
            for sink in before.iter_mut().chain(after.iter_mut()) {
                sink.batch(thread, events, present);
            }
            failed
        });
        if failed {
            // After the scope: the closure that could not run no longer borrows the sink.
            trace.batch(thread, events, present);
            self.failed = true;
            self.alone += 1;
        } else {
            self.shared += 1;
        }
    }

    pub(crate) fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "threads": self.threads,
            "batches_shared": self.shared,
            "batches_alone": self.alone,
        })
    }
}
