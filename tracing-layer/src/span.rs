//! What Metron keeps per `tracing` span, shared by the layer and the subscriber: its region
//! id, the thread that created it and when, whether it was suspended or moved to another
//! thread, and (only when fields are asked for) its field values.
//!
//! # The async rule
//! Every enter/exit of a span is a region (begin/end) on the thread that entered it. A span
//! that was **suspended at least once** (entered more than once: an instrumented future polled
//! again after a `Pending`) **or that crossed threads** (entered on, or closed on, a thread
//! other than the one that created it) is also an *async slice* from its creation to its
//! close (`Event::AsyncBegin`/`AsyncEnd`, the cookie being the span's id), whatever thread
//! closes it: a request served by one worker from start to end is in the latency table as
//! much as one that moved. Whether a span qualifies is only known when it closes, so both
//! records are written then, by the closing thread, the begin with the creation timestamp kept
//! in the span ([`metron::by_id::async_begin_at_ticks`]; the decoder does not clamp an async
//! begin to the thread's latest time, since it lies on a track of its own). A span created,
//! entered once and closed on one thread (the common synchronous case) costs no async record:
//! its one region is the whole span.
//!
//! The state is two flag bits beside the creator's thread token: [`ENTERED`] (a plain store
//! on the first entry on the creator, the common path) and [`ASYNC`] (an atomic `or` on the
//! cold path of any later entry or an entry on another thread). Two threads entering one span
//! for the first time at the same instant could lose the creator's `ENTERED`; the span then
//! still gets its slice if it closes on the other thread, the only case where that matters.

use crate::fields::{FieldValues, OwnedValue};
use crate::sites::Site;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

thread_local! {
    /// Its address identifies the thread (no lazy initialisation, no destructor).
    static TOKEN: u64 = const { 0 };
}

/// Flag of a span's creator word: it was entered once.
pub(crate) const ENTERED: usize = 2;
/// Flag of a span's creator word: it was entered again, or on another thread (it gets its
/// async slice).
pub(crate) const ASYNC: usize = 1;
/// The flag bits (thread tokens are 8-aligned).
pub(crate) const FLAGS: usize = ENTERED | ASYNC;

/// An identity of the calling thread, unique among live threads (an 8-aligned address: its
/// low bit is free for flags).
#[inline(always)]
pub(crate) fn thread_token() -> usize {
    TOKEN.with(|t| t as *const u64 as usize)
}

/// The creation time of a span: a clock read when async slices are on, else 0.
#[inline(always)]
pub(crate) fn created_ticks(options: Options) -> u64 {
    if options.async_slices {
        metron::clock::now_ticks()
    } else {
        0
    }
}

/// Writes the async slice of a span that was suspended or moved: its begin with the creation time, its end now.
#[cold]
#[inline(never)]
pub(crate) fn write_async_slice(region: u32, cookie: u64, created_ticks: u64) {
    if metron::by_id::async_begin_at_ticks(region, cookie, created_ticks) {
        metron::by_id::async_end(region, cookie);
    }
}

/// How a span or event is recorded (the builder options of the layer and the subscriber).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// Record fields as annotations.
    pub(crate) fields: bool,
    /// Name regions and instants `"LEVEL name"`.
    pub(crate) level_prefix: bool,
    /// Make spans that move between threads async slices.
    pub(crate) async_slices: bool,
}

/// Per-span state.
pub(crate) struct SpanState {
    /// Its call site.
    site: &'static Site,
    /// The Metron region id of the span.
    pub(crate) region: u32,
    /// [`thread_token`] of the creating thread.
    creator: usize,
    /// `metron::clock::now_ticks()` at creation (0 when async slices are off).
    created_ticks: u64,
    /// [`ENTERED`] and [`ASYNC`].
    flags: AtomicUsize,
    /// Field values, when asked for.
    fields: Option<Mutex<Vec<(u32, OwnedValue)>>>,
}

impl SpanState {
    /// The state of a new span of `site`, with its initial `values` when fields are asked for.
    #[inline]
    pub(crate) fn new(
        site: &'static Site,
        options: Options,
        values: Option<&tracing_core::span::Attributes<'_>>,
    ) -> SpanState {
        SpanState {
            site,
            region: site.id_for(options.level_prefix),
            creator: thread_token(),
            created_ticks: created_ticks(options),
            flags: AtomicUsize::new(0),
            fields: match values {
                Some(attrs) if options.fields => {
                    let mut out = FieldValues::new(site);
                    attrs.record(&mut out);
                    Some(Mutex::new(out.into_values()))
                }
                _ => None,
            },
        }
    }

    /// The span is entered on this thread: notes a first entry, or a suspension or move,
    /// begins its region (and annotates it with the fields).
    #[inline(always)]
    pub(crate) fn enter(&self) {
        if thread_token() == self.creator && self.flags.load(Ordering::Relaxed) == 0 {
            self.flags.store(ENTERED, Ordering::Relaxed);
        } else {
            self.entered_again_or_moved();
        }
        metron::by_id::begin(self.region);
        if let Some(fields) = &self.fields {
            annotate(fields);
        }
    }

    #[cold]
    #[inline(never)]
    fn entered_again_or_moved(&self) {
        self.flags.fetch_or(ASYNC | ENTERED, Ordering::Relaxed);
    }

    /// The span is exited on this thread: ends its region.
    #[inline(always)]
    pub(crate) fn exit(&self) {
        metron::by_id::end(self.region);
    }

    /// New values recorded into the span (`Span::record`).
    pub(crate) fn record(&self, values: &tracing_core::span::Record<'_>) {
        if let Some(fields) = &self.fields {
            let mut out = FieldValues::new(self.site);
            values.record(&mut out);
            let mut fields = fields.lock().unwrap_or_else(|e| e.into_inner());
            for (key, value) in out.into_values() {
                match fields.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = value,
                    None => fields.push((key, value)),
                }
            }
        }
    }

    /// The span closed on this thread. If it was suspended or moved (the async rule, in the
    /// module docs), writes its async slice from creation to now, paired by `cookie`.
    #[inline(always)]
    pub(crate) fn close(&self, options: Options, cookie: u64) {
        if options.async_slices
            && (self.flags.load(Ordering::Relaxed) & ASYNC != 0 || thread_token() != self.creator)
        {
            write_async_slice(self.region, cookie, self.created_ticks);
        }
    }
}

#[cold]
fn annotate(fields: &Mutex<Vec<(u32, OwnedValue)>>) {
    let fields = fields.lock().unwrap_or_else(|e| e.into_inner());
    for (key, value) in fields.iter() {
        metron::by_id::annotate(*key, value.as_annotation());
    }
}
