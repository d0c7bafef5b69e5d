//! The region API behind the macros: guards, explicit regions, marks, counters, annotations.
//!
//! Every function here is the hot path. Without the `enabled` feature the guard types are
//! zero-sized and have no `Drop`, so nothing is emitted at all.

use metron_components::Bundle;
use metron_core::Callsite;
use std::marker::PhantomData;

use crate::record::{
    header, kind, slots_for_bytes, slots_for_words, value_type, Slot, END_FROM_BEGIN,
    MAX_STRING_BYTES,
};
use crate::{run_state, thread_buffer};
use metron_components::clock::now_ticks;

/// Whether instrumentation is compiled in (the `enabled` feature).
const ENABLED: bool = cfg!(feature = "enabled");

/// Makes a guard `!Send`: a region must end on the thread that began it.
type NotSend = PhantomData<*const ()>;

/// True when recording is on (one relaxed load once the runtime is up).
#[inline(always)]
pub fn collecting() -> bool {
    ENABLED && run_state::collecting()
}

/// Guard of a region measured with the default bundle (wall clock). Ends the region when
/// dropped. Made by [`scope!`](crate::scope) and `#[profile]`.
#[must_use = "the region ends when this guard is dropped: bind it with `let _guard = ...`"]
pub struct Scope {
    /// The header word of the END record to write, 0 when the region was not recorded.
    #[cfg(feature = "enabled")]
    end_header: u64,
    _not_send: NotSend,
}

impl Scope {
    /// Begins a region at `site`.
    #[inline(always)]
    pub fn enter(site: &'static Callsite) -> Scope {
        #[cfg(feature = "enabled")]
        {
            let mut end_header = 0;
            if run_state::collecting() {
                let begin = site.tagged_header();
                if thread_buffer::write(now_ticks(), begin, 2, false) {
                    end_header = begin + END_FROM_BEGIN;
                }
            }
            Scope {
                end_header,
                _not_send: PhantomData,
            }
        }
        #[cfg(not(feature = "enabled"))]
        {
            let _ = site;
            Scope::disabled()
        }
    }

    /// A guard that records nothing.
    #[inline(always)]
    pub const fn disabled() -> Scope {
        Scope {
            #[cfg(feature = "enabled")]
            end_header: 0,
            _not_send: PhantomData,
        }
    }
}

#[cfg(feature = "enabled")]
impl Drop for Scope {
    #[inline(always)]
    fn drop(&mut self) {
        if self.end_header != 0 {
            thread_buffer::write(now_ticks(), self.end_header, 1, true);
        }
    }
}

/// Guard of a region measured with bundle `B` (plus the wall clock of every region).
#[must_use = "the region ends when this guard is dropped: bind it with `let _guard = ...`"]
pub struct BundleScope<B: Bundle> {
    #[cfg(feature = "enabled")]
    id: u32,
    #[cfg(feature = "enabled")]
    bundle: B,
    _bundle: PhantomData<B>,
    _not_send: NotSend,
}

impl<B: Bundle> BundleScope<B> {
    /// Begins a region at `site` and starts the bundle's components.
    #[inline(always)]
    pub fn enter(site: &'static Callsite) -> BundleScope<B> {
        #[cfg(feature = "enabled")]
        {
            let mut scope = BundleScope {
                id: 0,
                bundle: B::default(),
                _bundle: PhantomData,
                _not_send: PhantomData,
            };
            if run_state::collecting() {
                let begin = site.tagged_header();
                if thread_buffer::write(now_ticks(), begin, 2, false) {
                    scope.id = begin as u32;
                    scope.bundle.start();
                }
            }
            scope
        }
        #[cfg(not(feature = "enabled"))]
        {
            let _ = site;
            BundleScope::disabled()
        }
    }

    /// A guard that records nothing.
    #[inline(always)]
    pub fn disabled() -> BundleScope<B> {
        BundleScope {
            #[cfg(feature = "enabled")]
            id: 0,
            #[cfg(feature = "enabled")]
            bundle: B::default(),
            _bundle: PhantomData,
            _not_send: PhantomData,
        }
    }

    /// The bundle, e.g. to read a component's value after a [`BundleScope::sample`].
    #[cfg(feature = "enabled")]
    pub fn bundle(&self) -> &B {
        &self.bundle
    }

    /// Samples every component of the bundle (their values become absolute readings).
    #[inline]
    pub fn sample(&mut self) {
        #[cfg(feature = "enabled")]
        self.bundle.sample();
    }
}

#[cfg(feature = "enabled")]
impl<B: Bundle> Drop for BundleScope<B> {
    #[inline]
    fn drop(&mut self) {
        if self.id == 0 {
            return;
        }
        self.bundle.stop();
        let ticks = now_ticks();
        if B::WORDS == 0 {
            // No fields (a default `Region`): a plain END record.
            thread_buffer::write(ticks, header(self.id, kind::END, 0, 0), 1, true);
            return;
        }
        let payload = slots_for_words(B::WORDS);
        let bundle = &self.bundle;
        let id = self.id;
        thread_buffer::write_with(1 + payload, 1, true, |slots| {
            slots[0] = Slot {
                ticks,
                header: header(id, kind::BUNDLE_END, payload as u8, B::WORDS as u16),
            };
            let words = as_words(&mut slots[1..]);
            bundle.write_fields(&mut words[..B::WORDS]);
        });
    }
}

/// The payload slots of a record as f64 words.
#[inline(always)]
fn as_words(slots: &mut [Slot]) -> &mut [f64] {
    let len = slots.len() * 2;
    // SAFETY: `Slot` is `repr(C)` of two u64 (16-byte aligned, no padding), so `len` f64
    // values occupy exactly the same bytes; every bit pattern is a valid f64; the borrow of
    // `slots` is moved into the returned slice.
    unsafe { std::slice::from_raw_parts_mut(slots.as_mut_ptr().cast::<f64>(), len) }
}

/// A region begun with [`begin!`](crate::begin) and ended explicitly with [`Region::end`].
/// Unlike a guard it does nothing when dropped: a region never ended stays open and is
/// reported as such (`open_at_exit` in `metadata.json`).
#[must_use = "end the region with `.end()`"]
pub struct Region<B: Bundle = NoBundle> {
    /// Its `Drop` ends the region; it runs only when [`Region::end`] takes it.
    scope: std::mem::ManuallyDrop<BundleScope<B>>,
}

/// The default bundle of a [`Region`]: the wall clock every region has, nothing more.
#[derive(Default)]
pub struct NoBundle;

impl Bundle for NoBundle {
    const COMPONENTS: &'static [metron_components::ComponentInfo] = &[];
    const WORDS: usize = 0;
    fn start(&mut self) {}
    fn stop(&mut self) {}
    fn sample(&mut self) {}
    fn write_fields(&self, _out: &mut [f64]) {}
}

impl Region<NoBundle> {
    /// Begins a region with the default bundle.
    #[inline(always)]
    pub fn begin(site: &'static Callsite) -> Region<NoBundle> {
        Region {
            scope: std::mem::ManuallyDrop::new(BundleScope::enter(site)),
        }
    }
}

impl<B: Bundle> Region<B> {
    /// Begins a region measured with bundle `B`.
    #[inline(always)]
    pub fn begin_bundle(site: &'static Callsite) -> Region<B> {
        Region {
            scope: std::mem::ManuallyDrop::new(BundleScope::enter(site)),
        }
    }

    /// Ends the region.
    #[inline(always)]
    #[allow(clippy::drop_non_drop)] // the guards have no Drop when instrumentation is compiled out
    pub fn end(mut self) {
        // SAFETY: `scope` is taken exactly once, here; `self` is consumed.
        drop(unsafe { std::mem::ManuallyDrop::take(&mut self.scope) });
    }
}

/// Records an instant mark.
#[inline(always)]
pub fn mark(site: &'static Callsite) {
    if collecting() {
        by_id::mark(site.id());
    }
}

/// Begins an async slice at `site` (a region call site) paired by `cookie` with its
/// [`async_end`], which may run on another thread. See [`by_id::async_begin`].
#[inline(always)]
pub fn async_begin(site: &'static Callsite, cookie: u64) -> bool {
    collecting() && by_id::async_begin(site.id(), cookie)
}

/// Ends the async slice begun at `site` with `cookie` (any thread). See [`by_id::async_end`].
#[inline(always)]
pub fn async_end(site: &'static Callsite, cookie: u64) -> bool {
    by_id::async_end(site.id(), cookie)
}

/// Records a counter value.
#[inline(always)]
pub fn counter(site: &'static Callsite, value: f64) {
    if collecting() {
        by_id::counter(site.id(), value);
    }
}

/// The region API by interned id ([`crate::intern`]), for names known only at run time (the
/// C API, bindings). The caller keeps begin/end balanced per thread; each function returns
/// whether the record was stored (false when not collecting, paused, or dropped).
pub mod by_id {
    use super::*;

    /// The header word of a region's begin or end record, for [`ThreadBuffer::try_region`]:
    /// only these two kinds can be made.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct RegionWord(u64);

    impl RegionWord {
        /// The begin of region `id`.
        #[inline(always)]
        pub const fn begin(id: u32) -> RegionWord {
            RegionWord(header(id, kind::BEGIN, 0, 0))
        }

        /// The end of region `id`.
        #[inline(always)]
        pub const fn end(id: u32) -> RegionWord {
            RegionWord(header(id, kind::END, 0, 0))
        }

        /// The word's bits (the id in the low 32, the kind above).
        #[inline(always)]
        pub const fn bits(self) -> u64 {
            self.0
        }

        /// The end word whose bits are `bits`, `None` when `bits` are not an end's.
        #[inline(always)]
        pub const fn end_from_bits(bits: u64) -> Option<RegionWord> {
            if bits >> 32 == kind::END as u64 {
                Some(RegionWord(bits))
            } else {
                None
            }
        }
    }

    /// Begins region `id` on this thread.
    #[inline]
    pub fn begin(id: u32) -> bool {
        ENABLED
            && run_state::collecting()
            && thread_buffer::write(now_ticks(), header(id, kind::BEGIN, 0, 0), 2, false)
    }

    /// Ends region `id` on this thread (written even while collection is off or the thread is
    /// paused, so regions begun before stay balanced).
    #[inline]
    pub fn end(id: u32) -> bool {
        ENABLED && thread_buffer::write(now_ticks(), header(id, kind::END, 0, 0), 1, true)
    }

    /// Records instant mark `id`.
    #[inline]
    pub fn mark(id: u32) -> bool {
        ENABLED
            && run_state::collecting()
            && thread_buffer::write(now_ticks(), header(id, kind::INSTANT, 0, 0), 1, false)
    }

    /// Records `value` for counter `id`.
    #[inline]
    pub fn counter(id: u32, value: f64) -> bool {
        if !(ENABLED && run_state::collecting()) {
            return false;
        }
        let ticks = now_ticks();
        thread_buffer::write_with(2, 1, false, |slots| {
            slots[0] = Slot {
                ticks,
                header: header(id, kind::COUNTER, 1, 0),
            };
            slots[1] = Slot {
                ticks: value.to_bits(),
                header: 0,
            };
        })
    }

    /// Begins async slice `id` (a region call site, [`crate::CallsiteKind::Region`]) with
    /// `cookie`, which pairs it with its [`async_end`]: a range that may end on another thread
    /// (NVTX start/end, `tracing` spans of async tasks). Cookies must be unique among the
    /// slices of the process open at once. One 2-slot record; false when not collecting,
    /// paused, or dropped (then do not record its end either).
    #[inline]
    pub fn async_begin(id: u32, cookie: u64) -> bool {
        ENABLED && run_state::collecting() && async_record(id, kind::ASYNC_BEGIN, cookie, false)
    }

    /// Ends async slice `id` begun with `cookie`, on any thread. Written even while
    /// collection is off or the thread is paused (like [`end`]), so a slice begun before
    /// still ends; an end whose begin was never recorded is counted as unmatched. False when
    /// dropped (or instrumentation is compiled out).
    #[inline]
    pub fn async_end(id: u32, cookie: u64) -> bool {
        ENABLED && async_record(id, kind::ASYNC_END, cookie, true)
    }

    /// [`async_begin`] with its time given: `ticks` is a [`crate::clock::now_ticks`] read
    /// earlier, on any thread. For ranges known to be async only later (a `tracing` span is
    /// known to have moved between threads when it closes: `metron-tracing` writes its begin,
    /// with its creation time, and its end then). The begin is written on this thread.
    #[inline]
    pub fn async_begin_at_ticks(id: u32, cookie: u64, ticks: u64) -> bool {
        ENABLED
            && run_state::collecting()
            && thread_buffer::write_with(2, 1, false, |slots| {
                slots[0] = Slot {
                    ticks,
                    header: header(id, kind::ASYNC_BEGIN, 1, 0),
                };
                slots[1] = Slot {
                    ticks: cookie,
                    header: 0,
                };
            })
    }

    #[inline(always)]
    fn async_record(id: u32, record_kind: u8, cookie: u64, ends: bool) -> bool {
        let ticks = now_ticks();
        thread_buffer::write_with(2, 1, ends, |slots| {
            slots[0] = Slot {
                ticks,
                header: header(id, record_kind, 1, 0),
            };
            slots[1] = Slot {
                ticks: cookie,
                header: 0,
            };
        })
    }

    /// True while the run records (one relaxed load): what [`begin`] asks first. False in a
    /// forked child where Metron is off.
    #[inline(always)]
    pub fn collecting() -> bool {
        ENABLED && run_state::collecting()
    }

    /// Where the C header's inline begin looks an id up: the address of a pointer to one byte
    /// per id below [`INLINE_ID_COUNT`], 1 for a region it may record, which points at a map
    /// of zeros while the run does not record (so one test answers both). Read with relaxed
    /// loads. Without the `enabled` feature, a gate that stays closed.
    pub fn inline_gate() -> *const std::sync::atomic::AtomicPtr<u8> {
        if ENABLED {
            run_state::inline_gate()
        } else {
            run_state::closed_gate()
        }
    }

    /// Ids that [`inline_gate`]'s map covers.
    pub const INLINE_ID_COUNT: usize = run_state::INLINE_ID_COUNT;

    /// Lets the C header's inline begin record region `id` (an id from [`INLINE_ID_COUNT`] on
    /// always goes through the library).
    pub fn accept_inline(id: u32) {
        run_state::accept_inline(id);
    }

    /// The calling thread's record buffer, looked up once: callers that keep their own
    /// per-thread state (the C API) store it there and save a thread-local access per record.
    /// Valid for the life of the thread that made it, which is the only one that may use it.
    #[derive(Clone, Copy)]
    pub struct ThreadBuffer {
        #[cfg(feature = "enabled")]
        producer: &'static crate::buffer::producer::RawProducer<crate::record::Slot>,
        _not_send: NotSend,
    }

    impl ThreadBuffer {
        /// The calling thread's buffer.
        #[inline(always)]
        pub fn current() -> ThreadBuffer {
            ThreadBuffer {
                #[cfg(feature = "enabled")]
                producer: thread_buffer::current(),
                _not_send: PhantomData,
            }
        }

        /// The address of this buffer's producer, whose first two words are the address of
        /// its write cursor (the current segment's published end) and its limit: what the C
        /// header's inline path writes records through (`metron_fast_cursor`). Null without
        /// the `enabled` feature.
        pub fn cursor(self) -> *const () {
            #[cfg(feature = "enabled")]
            {
                let p: *const crate::buffer::producer::RawProducer<Slot> = self.producer;
                p.cast()
            }
            #[cfg(not(feature = "enabled"))]
            {
                std::ptr::null()
            }
        }

        /// [`begin`] into this buffer.
        #[inline(always)]
        pub fn begin(self, id: u32) -> bool {
            #[cfg(feature = "enabled")]
            {
                run_state::collecting()
                    && thread_buffer::write_to(
                        self.producer,
                        now_ticks(),
                        header(id, kind::BEGIN, 0, 0),
                        2,
                        false,
                    )
            }
            #[cfg(not(feature = "enabled"))]
            {
                let _ = id;
                false
            }
        }

        /// [`ThreadBuffer::begin`] without the cold path and without asking whether the run
        /// is collecting ([`collecting`]: the caller asked), for callers with a fast path of
        /// their own: false when the record needs the cold path (no room left in the segment,
        /// the thread's first record, a paused thread): nothing was written, call
        /// [`ThreadBuffer::begin`]. Never panics, allocates, blocks or calls out: two loads, a
        /// compare and three stores.
        #[inline(always)]
        pub fn try_begin(self, id: u32) -> bool {
            #[cfg(feature = "enabled")]
            {
                self.producer.push(Slot {
                    ticks: now_ticks(),
                    header: header(id, kind::BEGIN, 0, 0),
                })
            }
            #[cfg(not(feature = "enabled"))]
            {
                let _ = id;
                false
            }
        }

        /// [`ThreadBuffer::end`] without the cold path: false when nothing was written and
        /// the record needs [`ThreadBuffer::end`]. As [`ThreadBuffer::try_begin`], it never
        /// panics, allocates, blocks or calls out.
        #[inline(always)]
        pub fn try_end(self, id: u32) -> bool {
            #[cfg(feature = "enabled")]
            {
                self.producer.push(Slot {
                    ticks: now_ticks(),
                    header: header(id, kind::END, 0, 0),
                })
            }
            #[cfg(not(feature = "enabled"))]
            {
                let _ = id;
                true
            }
        }

        /// [`ThreadBuffer::try_begin`] or [`ThreadBuffer::try_end`] given the record's header
        /// word, for a caller that keeps it (the NVTX handlers keep a region's end word as
        /// its open range). The time stamp is stored as `rdtsc` gives it, in halves.
        #[inline(always)]
        pub fn try_region(self, word: RegionWord) -> bool {
            #[cfg(feature = "enabled")]
            {
                self.producer
                    .push_stamped(metron_components::clock::now_ticks_halves(), word.0)
            }
            #[cfg(not(feature = "enabled"))]
            {
                word.0 >> 32 == u64::from(kind::END)
            }
        }

        /// [`end`] into this buffer.
        #[inline(always)]
        pub fn end(self, id: u32) -> bool {
            #[cfg(feature = "enabled")]
            {
                thread_buffer::write_to(
                    self.producer,
                    now_ticks(),
                    header(id, kind::END, 0, 0),
                    1,
                    true,
                )
            }
            #[cfg(not(feature = "enabled"))]
            {
                let _ = id;
                false
            }
        }
    }

    /// Records `name` as the calling thread's name in the outputs, without renaming the
    /// thread itself (for tools that only label threads, e.g. `nvtxNameOsThread`).
    pub fn thread_name(name: &str) -> bool {
        if !(ENABLED && run_state::collecting()) {
            return false;
        }
        let text = truncate(name, MAX_STRING_BYTES);
        write_string(now_ticks(), 0, kind::THREAD_NAME, text.len() as u16, text)
    }

    /// Annotates the innermost open region of this thread with key `key_id` (interned as
    /// [`crate::CallsiteKind::AnnotationKey`]).
    #[inline]
    pub fn annotate(key_id: u32, value: super::AnnotationValue<'_>) -> bool {
        ENABLED && run_state::collecting() && annotate_inner(key_id, value)
    }
}

pub use metron_core::AnnotationValue;

/// Cuts `text` to at most `max` bytes at a character boundary.
pub(crate) fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Annotates the innermost open region of this thread with `key = value`.
#[inline]
pub fn annotate(key: &'static Callsite, value: AnnotationValue<'_>) {
    if collecting() {
        by_id::annotate(key.id(), value);
    }
}

fn annotate_inner(id: u32, value: AnnotationValue<'_>) -> bool {
    {
        let ticks = now_ticks();
        let (kind_bits, word) = match value {
            AnnotationValue::I64(v) => (value_type::I64, v as u64),
            AnnotationValue::U64(v) => (value_type::U64, v),
            AnnotationValue::F64(v) => (value_type::F64, v.to_bits()),
            AnnotationValue::Bool(v) => (value_type::BOOL, v as u64),
            AnnotationValue::Str(text) => {
                let text = truncate(text, MAX_STRING_BYTES);
                return write_string(
                    ticks,
                    id,
                    kind::ANNOTATION,
                    value_type::STR | (text.len() as u16) << 4,
                    text,
                );
            }
        };
        thread_buffer::write_with(2, 1, false, |slots| {
            slots[0] = Slot {
                ticks,
                header: header(id, kind::ANNOTATION, 1, kind_bits),
            };
            slots[1] = Slot {
                ticks: word,
                header: 0,
            };
        })
    }
}

/// Writes a record whose payload is `text` (at most [`MAX_STRING_BYTES`]).
fn write_string(ticks: u64, id: u32, record_kind: u8, aux: u16, text: &str) -> bool {
    let payload = slots_for_bytes(text.len());
    thread_buffer::write_with(1 + payload, 1, false, |slots| {
        slots[0] = Slot {
            ticks,
            header: header(id, record_kind, payload as u8, aux),
        };
        for (slot, chunk) in slots[1..].iter_mut().zip(text.as_bytes().chunks(16)) {
            let mut bytes = [0u8; 16];
            bytes[..chunk.len()].copy_from_slice(chunk);
            *slot = Slot {
                ticks: u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")),
                header: u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes")),
            };
        }
    })
}

/// Names the calling thread (kernel name, cut to 15 bytes) and records the full name for the
/// outputs.
pub fn set_thread_name(name: &str) {
    crate::sys::set_current_thread_name(name);
    if collecting() {
        let text = truncate(name, MAX_STRING_BYTES);
        let _ = write_string(now_ticks(), 0, kind::THREAD_NAME, text.len() as u16, text);
    }
}

pin_project_lite::pin_project! {
    /// A future whose every poll is a region (made by `#[profile]` on an `async fn`), and whose
    /// whole call, from its first poll to its completion, is also an async range when it was
    /// suspended at least once or polled on several threads (the rule of `metron-tracing`'s
    /// spans; a call done in one poll is its one region and costs no async record).
    pub struct Instrumented<F, B> {
        site: &'static Callsite,
        #[pin]
        future: F,
        call: CallRange,
        _bundle: PhantomData<fn() -> B>,
    }
}

impl<F, B> Instrumented<F, B> {
    /// Wraps `future`; each poll is a region at `site`.
    pub fn new(site: &'static Callsite, future: F) -> Self {
        Instrumented {
            site,
            future,
            call: CallRange {
                first_poll_ticks: 0,
                poller: 0,
            },
            _bundle: PhantomData,
        }
    }
}

thread_local! {
    /// Its address identifies the thread (no lazy initialisation, no destructor).
    static POLLER: u64 = const { 0 };
}

/// The call range of an [`Instrumented`] future: when it was first polled, and by whom.
#[doc(hidden)]
pub struct CallRange {
    /// `now_ticks()` at the first poll.
    first_poll_ticks: u64,
    /// 0 before the first poll; then the first poller's thread token (an 8-aligned address)
    /// with bit 0 set once polled again or on another thread.
    poller: usize,
}

impl CallRange {
    /// A poll begins on this thread.
    #[inline(always)]
    fn poll(&mut self) {
        if !ENABLED {
            return;
        }
        if self.poller == 0 {
            self.first_poll_ticks = now_ticks();
            self.poller = POLLER.with(|t| t as *const u64 as usize);
        } else {
            self.poller |= 1;
        }
    }

    /// The call completed: its async range, first poll to now, if it was suspended or moved.
    /// The cookie is this state's address, unique among live calls; both records are written
    /// now, on one thread, so the address need not stay the same between polls.
    #[inline(always)]
    fn completed(&self, site: &'static Callsite) {
        if ENABLED && self.poller & 1 != 0 {
            write_call_range(site, self as *const CallRange as u64, self.first_poll_ticks);
        }
    }
}

#[cold]
#[inline(never)]
fn write_call_range(site: &'static Callsite, cookie: u64, first_poll_ticks: u64) {
    let id = site.id();
    if by_id::async_begin_at_ticks(id, cookie, first_poll_ticks) {
        by_id::async_end(id, cookie);
    }
}

impl<F: std::future::Future> std::future::Future for Instrumented<F, NoBundle> {
    type Output = F::Output;
    #[inline]
    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let this = self.project();
        let _scope = Scope::enter(this.site);
        this.call.poll();
        let poll = this.future.poll(cx);
        if poll.is_ready() {
            this.call.completed(this.site);
        }
        poll
    }
}

/// Marks [`Instrumented`] futures measured with a user bundle.
pub struct WithBundle<B>(PhantomData<B>);

impl<F: std::future::Future, B: Bundle> std::future::Future for Instrumented<F, WithBundle<B>> {
    type Output = F::Output;
    #[inline]
    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let this = self.project();
        let _scope = BundleScope::<B>::enter(this.site);
        this.call.poll();
        let poll = this.future.poll(cx);
        if poll.is_ready() {
            this.call.completed(this.site);
        }
        poll
    }
}
