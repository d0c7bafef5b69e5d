//! Progress points: counters of visits, by name, that the experiments read.
//!
//! A counter has Coz's layout (`coz_counter_t`: a `size_t` count and a `size_t` backoff that
//! Coz leaves unused), so a program built with `coz.h` increments the very counters
//! `_coz_get_counter` hands it, with its own `__atomic_add_fetch`. Counters are interned by
//! (kind, name) on first use (cold: a lock and one allocation, leaked so the pointer stays
//! valid for the life of the process); a visit is one relaxed atomic add.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// One progress counter, laid out as Coz's `coz_counter_t`.
#[repr(C)]
pub struct ProgressCounter {
    /// Visits so far.
    pub count: AtomicUsize,
    /// Coz's unused batching field, kept for the layout.
    backoff: usize,
}

impl ProgressCounter {
    /// One visit.
    #[inline]
    pub fn visit(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn total(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

/// What a counter counts, with Coz's numbers (`COZ_COUNTER_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum ProgressKind {
    /// A throughput point: visits per unit of time.
    Throughput = 1,
    /// The start of a latency point's transaction.
    Begin = 2,
    /// The end of a latency point's transaction.
    End = 3,
}

impl ProgressKind {
    /// Coz's number, or `None` when it is none of the three.
    pub fn from_coz(kind: i32) -> Option<ProgressKind> {
        match kind {
            1 => Some(ProgressKind::Throughput),
            2 => Some(ProgressKind::Begin),
            3 => Some(ProgressKind::End),
            _ => None,
        }
    }
}

struct Point {
    name: String,
    kind: ProgressKind,
    counter: &'static ProgressCounter,
}

static POINTS: Mutex<Vec<Point>> = Mutex::new(Vec::new());

/// The counter of `(kind, name)`, made on first use. Cold: takes a lock and may allocate.
pub fn counter(kind: ProgressKind, name: &str) -> &'static ProgressCounter {
    let mut points = POINTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = points.iter().find(|p| p.kind == kind && p.name == name) {
        return p.counter;
    }
    let counter: &'static ProgressCounter = Box::leak(Box::new(ProgressCounter {
        count: AtomicUsize::new(0),
        backoff: 0,
    }));
    points.push(Point {
        name: name.to_string(),
        kind,
        counter,
    });
    counter
}

/// A call site's cached counter (what [`crate::progress!`] expands to).
pub struct ProgressSite {
    cached: AtomicPtr<ProgressCounter>,
    kind: ProgressKind,
    name: &'static str,
}

impl ProgressSite {
    /// A site of `kind` named `name`.
    pub const fn new(kind: ProgressKind, name: &'static str) -> ProgressSite {
        ProgressSite {
            cached: AtomicPtr::new(std::ptr::null_mut()),
            kind,
            name,
        }
    }

    /// One visit: one relaxed load and one relaxed add once the counter is known.
    #[inline]
    pub fn visit(&'static self) {
        let p = self.cached.load(Ordering::Relaxed);
        if p.is_null() {
            self.register_slow().visit();
        } else {
            // SAFETY: `p` was stored by `register_slow` from a `&'static ProgressCounter`
            // (leaked, never freed).
            unsafe { &*p }.visit();
        }
    }

    #[cold]
    #[inline(never)]
    fn register_slow(&'static self) -> &'static ProgressCounter {
        let c = counter(self.kind, self.name);
        self.cached
            .store(c as *const ProgressCounter as *mut _, Ordering::Relaxed);
        c
    }
}

/// A throughput point: counts one visit each time it runs. Causal profiling (`metron causal`)
/// predicts how much faster these visits would come if a line were faster. Costs one relaxed
/// atomic add (and nothing else) whether or not a causal run is going on.
///
/// ```
/// for _ in 0..3 {
///     // ... one request, one frame, one item ...
///     metron::progress!("items");
/// }
/// ```
#[macro_export]
macro_rules! progress {
    ($name:expr) => {{
        static SITE: $crate::sampling::causal::ProgressSite =
            $crate::sampling::causal::ProgressSite::new(
                $crate::sampling::causal::ProgressKind::Throughput,
                $name,
            );
        SITE.visit();
    }};
}

/// The start of a latency point's transaction (pair with [`crate::progress_end!`] of the same
/// name): causal profiling predicts how the time between begin and end would change.
#[macro_export]
macro_rules! progress_begin {
    ($name:expr) => {{
        static SITE: $crate::sampling::causal::ProgressSite =
            $crate::sampling::causal::ProgressSite::new(
                $crate::sampling::causal::ProgressKind::Begin,
                $name,
            );
        SITE.visit();
    }};
}

/// The end of a latency point's transaction (see [`crate::progress_begin!`]).
#[macro_export]
macro_rules! progress_end {
    ($name:expr) => {{
        static SITE: $crate::sampling::causal::ProgressSite =
            $crate::sampling::causal::ProgressSite::new(
                $crate::sampling::causal::ProgressKind::End,
                $name,
            );
        SITE.visit();
    }};
}

/// The values of every point now: throughput points `(name, visits)`, latency points
/// `(name, begins, ends)`.
pub(crate) struct Snapshot {
    pub(crate) throughput: Vec<(String, usize)>,
    pub(crate) latency: Vec<(String, usize, usize)>,
}

impl Snapshot {
    pub(crate) fn take() -> Snapshot {
        let points = POINTS.lock().unwrap_or_else(|e| e.into_inner());
        let mut throughput = Vec::new();
        let mut latency: Vec<(String, usize, usize)> = Vec::new();
        for p in points.iter() {
            match p.kind {
                ProgressKind::Throughput => throughput.push((p.name.clone(), p.counter.total())),
                ProgressKind::Begin | ProgressKind::End => {
                    let i = match latency.iter().position(|l| l.0 == p.name) {
                        Some(i) => i,
                        None => {
                            latency.push((p.name.clone(), 0, 0));
                            latency.len() - 1
                        }
                    };
                    if p.kind == ProgressKind::Begin {
                        latency[i].1 = p.counter.total();
                    } else {
                        latency[i].2 = p.counter.total();
                    }
                }
            }
        }
        Snapshot {
            throughput,
            latency,
        }
    }

    /// True when no point exists yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.throughput.is_empty() && self.latency.is_empty()
    }
}
