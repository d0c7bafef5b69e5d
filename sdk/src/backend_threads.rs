//! `METRON_BACKEND_THREADS`: the trace sink on a thread of its own.
//!
//! The flusher decodes a batch once; with two back-end threads the trace sink encodes and
//! writes it on a pool thread (`metron-encode`) while the flusher hands the same events to the
//! summary and the other sinks, and the batch is done when both are. Each sink still sees
//! every batch in order, and the trace is written by one thread: it stays one valid trace.
//! Small batches (under [`PARALLEL_EVENTS`]) stay on the flusher: waking the other thread
//! would cost more than it saves.

use crate::sink::{Event, Present, Sink, ThreadInfo};
use std::sync::OnceLock;

/// Batches with fewer events are handed to every sink on the flusher thread.
pub(crate) const PARALLEL_EVENTS: usize = 8192;

/// The sink that goes to the second thread (the costliest per event).
const TRACE_SINK: &str = "trace";

pub(crate) struct BackendThreads {
    threads: usize,
    /// The pool of one thread, made when first needed.
    pool: OnceLock<Option<rayon_core::ThreadPool>>,
    /// Batches the two threads shared, and batches the flusher took alone.
    shared: u64,
    alone: u64,
}

impl BackendThreads {
    pub(crate) fn new(threads: usize) -> BackendThreads {
        BackendThreads {
            threads: threads.clamp(1, 2),
            pool: OnceLock::new(),
            shared: 0,
            alone: 0,
        }
    }

    /// The pool (a free function of the field, so the counters stay borrowable).
    fn pool(pool: &OnceLock<Option<rayon_core::ThreadPool>>) -> Option<&rayon_core::ThreadPool> {
        pool.get_or_init(|| {
                rayon_core::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .thread_name(|_| "metron-encode".to_string())
                    .build()
                    .map_err(|e| eprintln!("metron: the trace is encoded on the flusher thread (cannot start a second back-end thread: {e})"))
                    .ok()
            })
            .as_ref()
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
        let split = (self.threads > 1 && events.len() >= PARALLEL_EVENTS && sinks.len() > 1)
            .then(|| sinks.iter().position(|s| s.name() == TRACE_SINK))
            .flatten();
        let pool = split.and_then(|_| Self::pool(&self.pool));
        let (Some(at), Some(pool)) = (split, pool) else {
            self.alone += 1;
            for sink in sinks.iter_mut() {
                sink.batch(thread, events, present);
            }
            return;
        };
        self.shared += 1;
        let (before, rest) = sinks.split_at_mut(at);
        let (trace, after) = rest.split_first_mut().expect("the trace sink is at `at`");
        // `in_place_scope`: this closure runs here, the spawned one on the pool thread, and
        // the scope returns when both are done (so the borrowed events outlive both).
        pool.in_place_scope(|scope| {
            scope.spawn(|_| trace.batch(thread, events, present));
            for sink in before.iter_mut().chain(after.iter_mut()) {
                sink.batch(thread, events, present);
            }
        });
    }

    pub(crate) fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "threads": self.threads,
            "batches_shared": self.shared,
            "batches_alone": self.alone,
        })
    }
}
