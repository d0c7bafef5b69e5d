//! [`MetronSubscriber`]: the standalone `tracing` subscriber, the cheapest path.
//!
//! A span's state (region id, creating thread and time, reference count) lives in the static
//! span table (`table.rs`), under an odd [`Id`] taken from a per-thread block of keys: no
//! allocation, no lock; `enter` and `exit` find it with one hash and write one Metron record
//! each. Spans with fields (or that found no free slot) get a heap node instead, whose
//! (even) address is their id, recycled through a small per-thread free list. It keeps no "current span"
//! (`Span::current()` is none under it) and does no filtering beyond a maximum level: use
//! [`MetronLayer`](crate::MetronLayer) with a `Registry` for `EnvFilter`, `fmt` and the rest.

use crate::fields::EventAnnotations;
use crate::sites;
use crate::span::{created_ticks, Options, SpanState};
use crate::table;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::subscriber::{Interest, Subscriber};
use tracing_core::{Event, LevelFilter, Metadata};

/// A `tracing` subscriber that records into Metron and does nothing else.
///
/// ```
/// let subscriber = metron_tracing::MetronSubscriber::new()
///     .with_max_level(tracing_core::LevelFilter::DEBUG);
/// tracing::subscriber::with_default(subscriber, || {
///     let _span = tracing::info_span!("load").entered(); // a Metron region "load"
///     tracing::info!("loaded");                             // an instant
/// });
/// ```
#[derive(Clone, Debug)]
pub struct MetronSubscriber {
    options: Options,
    max_level: LevelFilter,
}

impl Default for MetronSubscriber {
    fn default() -> Self {
        MetronSubscriber::new()
    }
}

/// A span's state and its reference count (`clone_span` / `try_close`).
struct Node {
    refs: AtomicUsize,
    state: SpanState,
}

/// Freed nodes kept per thread for the next spans (at most this many).
const FREE_LIST: usize = 64;

thread_local! {
    /// Freed nodes: the boxes are the point (their allocations are reused).
    #[allow(clippy::vec_box)]
    static FREE: RefCell<Vec<Box<Node>>> = const { RefCell::new(Vec::new()) };
    /// The next table key of this thread and the end of its block.
    static KEYS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Keys are handed to threads in blocks of this many.
const KEY_BLOCK: u64 = 1 << 16;
/// The next block of keys.
static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);

/// A span id for the span table, unique in the process: odd, so never a node's address.
#[inline(always)]
fn next_table_key() -> u64 {
    KEYS.with(|keys| {
        let (mut next, mut end) = keys.get();
        if next == end {
            next = NEXT_BLOCK.fetch_add(KEY_BLOCK, Ordering::Relaxed);
            end = next + KEY_BLOCK;
        }
        keys.set((next + 1, end));
        next << 1 | 1
    })
}

/// True for the ids of spans in the span table (odd), false for heap nodes (even addresses).
#[inline(always)]
fn is_table_key(id: &Id) -> bool {
    id.into_u64() & 1 == 1
}

impl MetronSubscriber {
    /// Every level, no fields, async slices on, plain names.
    pub fn new() -> MetronSubscriber {
        MetronSubscriber {
            options: Options {
                fields: false,
                level_prefix: false,
                async_slices: true,
            },
            max_level: LevelFilter::TRACE,
        }
    }

    /// Records only spans and events at `level` or more severe (`tracing` then skips the
    /// others at their call site).
    pub fn with_max_level(mut self, level: impl Into<LevelFilter>) -> Self {
        self.max_level = level.into();
        self
    }

    /// Records span and event fields as annotations (off by default; costs a visit of the
    /// fields per span and event, an allocation per span, and annotations per enter).
    pub fn with_fields(mut self, on: bool) -> Self {
        self.options.fields = on;
        self
    }

    /// Names regions and instants `"LEVEL name"` (e.g. `"INFO load"`), the level as a category
    /// visible in every output (off by default).
    pub fn with_level_prefix(mut self, on: bool) -> Self {
        self.options.level_prefix = on;
        self
    }

    /// Makes spans that move between threads async slices (on by default; see the crate docs).
    /// Off saves one clock read per span.
    pub fn with_async_slices(mut self, on: bool) -> Self {
        self.options.async_slices = on;
        self
    }

    #[inline(always)]
    fn node(id: &Id) -> &Node {
        // SAFETY: every `Id` this subscriber sees was made by `new_span` from a live
        // `Box<Node>` (tracing hands a subscriber only the ids it returned), and the node is
        // freed only by the `try_close` that drops its last reference, after which tracing
        // does not use the id again.
        unsafe { &*(id.into_u64() as usize as *const Node) }
    }
}

impl Subscriber for MetronSubscriber {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if *metadata.level() > self.max_level {
            return Interest::never();
        }
        let _ = sites::site(metadata);
        Interest::always()
    }

    #[inline]
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= self.max_level
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.max_level)
    }

    #[inline]
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let site = sites::site(attrs.metadata());
        if !self.options.fields {
            let key = next_table_key();
            let region = site.id_for(self.options.level_prefix);
            if table::insert(key, region, created_ticks(self.options)) {
                return Id::from_u64(key);
            }
        }
        // Fields, or no free slot in the table: a heap node (an even address).
        let state = SpanState::new(site, self.options, Some(attrs));
        let node = match FREE.try_with(|f| f.borrow_mut().pop()).ok().flatten() {
            Some(mut node) => {
                *node.refs.get_mut() = 1;
                node.state = state;
                node
            }
            None => Box::new(Node {
                refs: AtomicUsize::new(1),
                state,
            }),
        };
        Id::from_u64(Box::into_raw(node) as usize as u64)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if !is_table_key(span) {
            Self::node(span).state.record(values);
        }
    }

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    #[inline]
    fn event(&self, event: &Event<'_>) {
        let site = sites::site(event.metadata());
        metron::by_id::mark(site.id_for(self.options.level_prefix));
        if self.options.fields {
            EventAnnotations::record(site, event);
        }
    }

    #[inline]
    fn enter(&self, span: &Id) {
        if is_table_key(span) {
            if let Some(entry) = table::find(span.into_u64()) {
                entry.enter();
            }
        } else {
            Self::node(span).state.enter();
        }
    }

    #[inline]
    fn exit(&self, span: &Id) {
        if is_table_key(span) {
            if let Some(entry) = table::find(span.into_u64()) {
                metron::by_id::end(entry.region());
            }
        } else {
            Self::node(span).state.exit();
        }
    }

    #[inline]
    fn clone_span(&self, id: &Id) -> Id {
        if is_table_key(id) {
            if let Some(entry) = table::find(id.into_u64()) {
                entry.add_ref();
            }
        } else {
            Self::node(id).refs.fetch_add(1, Ordering::Relaxed);
        }
        id.clone()
    }

    #[inline]
    fn try_close(&self, id: Id) -> bool {
        if is_table_key(&id) {
            return match table::find(id.into_u64()) {
                Some(entry) if entry.release() => {
                    entry.close(self.options.async_slices, id.into_u64());
                    true
                }
                _ => false,
            };
        }
        let node = Self::node(&id);
        if node.refs.fetch_sub(1, Ordering::Release) != 1 {
            return false;
        }
        fence(Ordering::Acquire);
        node.state.close(self.options, id.into_u64());
        // SAFETY: this was the last reference: the pointer came from `Box::into_raw` in
        // `new_span` and nobody else holds it now.
        let node = unsafe { Box::from_raw(id.into_u64() as usize as *mut Node) };
        // A thread that is exiting has no free list any more: the node is then just freed.
        let _ = FREE.try_with(|f| {
            let mut free = f.borrow_mut();
            if free.len() < FREE_LIST {
                free.push(node);
            }
        });
        true
    }
}
