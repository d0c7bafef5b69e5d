//! One thread's NVTX state, and the fast paths of push and pop that use nothing else.
//!
//! # Layout
//! Everything the fast paths touch is a `Cell` of [`Hot`], reached through a shared reference
//! from the TLS descriptor slot ([`crate::fast_tls`]): the depth, the open ranges (one word
//! each), the per-domain depths and the name cache. The rest ([`Cold`]) is behind a `RefCell`
//! that only the slow path borrows.
//!
//! # A signal handler that calls NVTX
//! The slow path marks the state busy by storing [`BUSY`] as the depth (restored when it
//! returns, even on a panic), and both fast paths give up on that depth: a handler that
//! interrupts the slow path takes the slow path, which refuses it (push and pop return -1 and
//! nothing is recorded). The fast paths store [`BUSY`] too, from just before their record write
//! until they store the new depth (one store more than they need): a handler that interrupts
//! that write would write its records at the same place and lose them, so it is refused
//! instead. A handler that interrupts a fast path before that finds a consistent state: its
//! balanced push and pop leave the depth as they found it. A cache entry is written key last
//! (emptied first), so a handler never sees a key with another name's words.
//!
//! # Name cache
//! Direct-mapped, keyed by the string's address with the kind and domain above bit 48. A hit
//! is confirmed by content, because the same address can hold another string later: names of
//! up to fifteen bytes by two word loads and masks ([`TwoWords`]), cached only at addresses
//! where sixteen bytes stay on the string's page; others (longer names, and the few addresses
//! near a page's end) carry [`LONG`] in their key and are compared on a second, out-of-line
//! lookup ([`push_long`]): a word per eight bytes ([`NameWords`]), or byte by byte where those
//! words would leave the string's page.
//!
//! # Lifetime
//! A thread's state is on the heap ([`crate::thread_block`]: about 23 KB, made at its first
//! NVTX call, freed once the thread is gone), which keeps the library's thread-local block
//! small enough for static TLS when NVTX `dlopen`s it.

use super::{Kind, NAMES_GENERATION};
use crate::c_words::{CName, NameWords, TwoWords};
use crate::fast_tls::{self, Slot};
use crate::thread_block::{Block, Held, Pool};
use metron::by_id::{self, RegionWord, ThreadBuffer};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int};
use std::sync::atomic::Ordering;

/// Entries of the per-thread name cache (direct-mapped).
const CACHE_ENTRIES: usize = 256;
/// Ranges open at once on one thread (all domains together).
pub(super) const MAX_DEPTH: usize = 256;
/// Domains with an O(1) depth counter; others count by scanning the stack.
const COUNTED_DOMAINS: usize = 64;
/// The depth while the slow path runs or a fast path writes its record (and the idle one).
const BUSY: u32 = u32::MAX;
/// In a cache key: the name is compared on the second lookup ([`push_long`]).
const LONG: usize = 1 << 63;
/// The key of an empty entry (no string's: user addresses are below 2^47).
const EMPTY_KEY: usize = usize::MAX;
/// Domains whose names are cached (their index fits the key's bits 49..62).
const CACHED_DOMAINS: u32 = 1 << 14;
/// In an open range's word: its begin was not recorded.
const OPEN_UNRECORDED: u64 = 1 << 63;
/// Where an open range's word keeps its domain's index (bits 40..62, above the end word).
const OPEN_DOMAIN_SHIFT: u32 = 40;
const OPEN_DOMAIN_MASK: u64 = (1 << 23) - 1;

/// The cache key of a string at `addr`: the address itself for a range of the default domain
/// (one compare on the fast path; NULL is no entry's address).
#[inline(always)]
fn key_of(addr: usize, kind: Kind, domain: u32) -> usize {
    addr | ((kind as usize) | (domain as usize) << 1) << 48
}

/// An open range's word: its end record's header word (so that the fast pop writes the word it
/// reads), with its domain's index above and whether its begin went unrecorded at the top.
/// Domain indices stay far below 2^23 (one per distinct `nvtxDomainCreate` name).
#[inline(always)]
fn open_word(id: u32, domain: u32, recorded: bool) -> u64 {
    RegionWord::end(id).bits()
        | (u64::from(domain) & OPEN_DOMAIN_MASK) << OPEN_DOMAIN_SHIFT
        | if recorded { 0 } else { OPEN_UNRECORDED }
}

/// The domain of an open range's word.
#[inline(always)]
fn open_domain(word: u64) -> u32 {
    (word >> OPEN_DOMAIN_SHIFT & OPEN_DOMAIN_MASK) as u32
}

/// One cached name (64 bytes: a cache line, and an index the fast path scales by a shift).
#[repr(C, align(64))]
struct Entry {
    /// [`key_of`] the string's address (with [`LONG`] for a byte-by-byte compare), or
    /// [`EMPTY_KEY`].
    key: Cell<usize>,
    words: Cell<TwoWords>,
    /// The begin record's header word of a push of this name (derivable from `open`; kept so
    /// that the fast push loads it rather than builds it).
    begin: Cell<RegionWord>,
    /// The open range's word of a recorded push ([`open_word`]); its low 32 bits are the id.
    open: Cell<u64>,
}

impl Entry {
    const fn empty() -> Entry {
        Entry {
            key: Cell::new(EMPTY_KEY),
            words: Cell::new(TwoWords::NEVER),
            begin: Cell::new(RegionWord::begin(0)),
            open: Cell::new(0),
        }
    }
}

/// What the fast paths read and write. `depth` comes first: the fast paths read it through
/// the TLS slot before they know whether the slot points at a thread's state or at
/// [`fast_tls::NVTX_IDLE`].
#[repr(C)]
pub(super) struct Hot {
    /// Ranges open on this thread (all domains); [`BUSY`] while a record is written or the
    /// slow path runs.
    depth: Cell<u32>,
    /// Open ranges of other domains than the default one (whose level is `depth - others`).
    others: Cell<u32>,
    /// [`NAMES_GENERATION`] when this thread last looked for a name given to it.
    names_generation: Cell<u32>,
    /// This thread's record buffer: set before the first cache entry is made, so a cache hit
    /// (and a recorded open range) finds it set.
    buffer: Cell<Option<ThreadBuffer>>,
    /// Open ranges per domain (index 0, the default domain's, is not kept: `depth - others`).
    domain_depth: [Cell<u32>; COUNTED_DOMAINS],
    /// `open[0..depth]`: the open ranges ([`open_word`]), innermost last.
    open: [Cell<u64>; MAX_DEPTH],
    cache: [Entry; CACHE_ENTRIES],
    /// The names of the entries keyed [`LONG`] as interned (after the domain's prefix), for
    /// their compare.
    names: [Cell<LongName>; CACHE_ENTRIES],
}

/// How an entry keyed [`LONG`] is compared.
#[derive(Clone, Copy)]
enum LongName {
    /// A word per eight bytes, no page check (the words lie on the string's page).
    Words(NameWords),
    /// Byte by byte near a page's end.
    Bytes(CName),
}

/// What only the slow path uses.
pub(super) struct Cold {
    pub(super) tid: u32,
    /// The last name looked up was folded (`METRON_NVTX_FOLD`): its push annotates the raw name.
    pub(super) last_folded: bool,
}

#[repr(C)]
struct NvtxThread {
    hot: Hot,
    cold: RefCell<Cold>,
}

const _: () = assert!(BUSY == u32::MAX && std::mem::offset_of!(NvtxThread, hot) == 0);

impl Block for NvtxThread {
    fn pool() -> &'static Pool<NvtxThread> {
        &POOL
    }

    fn fresh() -> Box<NvtxThread> {
        Box::new(
            const {
                NvtxThread {
                    hot: Hot {
                        depth: Cell::new(0),
                        others: Cell::new(0),
                        names_generation: Cell::new(0),
                        buffer: Cell::new(None),
                        domain_depth: [const { Cell::new(0) }; COUNTED_DOMAINS],
                        open: [const { Cell::new(0) }; MAX_DEPTH],
                        cache: [const { Entry::empty() }; CACHE_ENTRIES],
                        names: [const { Cell::new(LongName::Bytes(CName::EMPTY)) }; CACHE_ENTRIES],
                    },
                    cold: RefCell::new(Cold {
                        tid: 0,
                        last_folded: false,
                    }),
                }
            },
        )
    }
}

/// The threads' states: on the heap (about 23 KB each), which keeps the library's
/// thread-local block small ([`crate::thread_block`]).
static POOL: Pool<NvtxThread> = Pool::new();

thread_local! {
    static THREAD: Held<NvtxThread> = const { Held::new() };
}

/// This thread's state from the fast slot (`None` before the thread's first slow call).
fn cached() -> Option<&'static NvtxThread> {
    let ptr = fast_tls::get(Slot::Nvtx);
    if ptr == std::ptr::addr_of!(fast_tls::NVTX_IDLE).cast() {
        return None;
    }
    // SAFETY: the slot holds the idle depth's address (above) or this thread's block (set by
    // `thread_state` on this thread), valid for the rest of the thread's life (even after its
    // holder is destroyed: `thread_block`); the slot is per thread too. Only shared
    // references are made.
    unsafe { ptr.cast::<NvtxThread>().as_ref() }
}

/// The fast paths' view of the slot: its pointer and the depth it points at (the idle one,
/// [`BUSY`], before the thread's first slow call).
#[inline(always)]
fn fast_depth() -> (*const NvtxThread, u32) {
    let ptr = fast_tls::get(Slot::Nvtx);
    // SAFETY: the slot holds `NVTX_IDLE`'s address or this thread's `THREAD`'s (as in
    // `cached`); both start with a `u32` depth (`Hot` is `repr(C)`, first in `NvtxThread`).
    // The read is a plain load of a `Cell`'s value; nothing else runs on this thread meanwhile.
    (ptr.cast(), unsafe { ptr.cast::<u32>().read() })
}

/// The state behind a depth that [`fast_depth`] read and a fast path accepted (below
/// [`MAX_DEPTH`] for a push, from 1 to it for a pop: never the idle depth).
#[inline(always)]
fn accepted(ptr: *const NvtxThread) -> &'static Hot {
    // SAFETY: a depth other than `BUSY` means the slot holds this thread's `THREAD` (see
    // `cached`).
    unsafe { &(*ptr).hot }
}

/// This thread's state, found through the `thread_local!` once and remembered in the fast slot.
#[cold]
#[inline(never)]
fn thread_state() -> Option<&'static NvtxThread> {
    THREAD
        .try_with(|held| {
            let t = held.get();
            let ptr: *const NvtxThread = t;
            fast_tls::set(Slot::Nvtx, ptr.cast());
            t
        })
        .ok()
}

/// Where the cache entry of a string at `addr` is: eight times its index (the address's bits
/// 3..10, kept in place), so that the entry's address is `cache + 8 * slot` with no shifts.
#[inline(always)]
fn slot_of(addr: usize) -> usize {
    addr & ((CACHE_ENTRIES - 1) << 3)
}

/// What [`Hot::matches_short`] found.
enum Match {
    Hit,
    Miss,
    /// The entry is keyed for the longer compare ([`Hot::long_matches`]).
    Long,
}

impl Hot {
    /// True when entry `slot` holds the string at `text` under `key`.
    ///
    /// # Safety
    /// `text` is NULL or a valid NUL-terminated string.
    #[inline(always)]
    unsafe fn matches(&self, slot: usize, text: *const c_char, key: usize) -> bool {
        // SAFETY: forwarded contract.
        match unsafe { self.matches_short(slot, text, key) } {
            Match::Hit => true,
            Match::Miss => false,
            // SAFETY: forwarded contract (a LONG key has a non-NULL address).
            Match::Long => unsafe { self.long_matches(slot, text) },
        }
    }

    /// [`Hot::matches`] without the longer compare: [`Match::Long`] when it is needed.
    ///
    /// # Safety
    /// As [`Hot::matches`].
    #[inline(always)]
    unsafe fn matches_short(&self, slot: usize, text: *const c_char, key: usize) -> Match {
        let e = &self.cache[slot / 8];
        let k = e.key.get();
        if k == key {
            const WORDS: usize =
                std::mem::offset_of!(Hot, cache) + std::mem::offset_of!(Entry, words);
            let base: *const Hot = self;
            // SAFETY: cached with this key only where `TwoWords::readable_at(addr)` (so not
            // NULL); `text` is valid and NUL-terminated (the contract); entry `slot`'s words
            // are at `base + 8 * slot + WORDS` (64-byte entries, tested).
            if unsafe { TwoWords::is_at_in::<WORDS>(base.cast(), slot, text) } {
                Match::Hit
            } else {
                Match::Miss
            }
        } else if k == key | LONG {
            Match::Long
        } else {
            Match::Miss
        }
    }

    /// Counts a range of `domain` opened at `depth` (all domains); its level in `domain`
    /// (0 for a domain past [`COUNTED_DOMAINS`], which is counted by scanning the open ranges:
    /// `Slow::domain_depth`; the fast paths take only counted domains).
    #[inline(always)]
    fn domain_enter(&self, domain: u32, depth: u32) -> u32 {
        if domain == super::DEFAULT_INDEX {
            return depth.wrapping_sub(self.others.get());
        }
        self.others.set(self.others.get().wrapping_add(1));
        let Some(d) = self.domain_depth.get(domain as usize) else {
            return 0;
        };
        let level = d.get();
        d.set(level.wrapping_add(1));
        level
    }

    /// Counts the close of a range of `domain` (`top` ranges stay open); its level in `domain`
    /// (0 past [`COUNTED_DOMAINS`], as [`Hot::domain_enter`]).
    #[inline(always)]
    fn domain_leave(&self, domain: u32, top: u32) -> u32 {
        if domain == super::DEFAULT_INDEX {
            return top.wrapping_sub(self.others.get());
        }
        self.others.set(self.others.get().wrapping_sub(1));
        let Some(d) = self.domain_depth.get(domain as usize) else {
            return 0;
        };
        let level = d.get().wrapping_sub(1);
        d.set(level);
        level
    }

    /// Marks the state busy while a fast path writes its record (the caller then stores the
    /// new depth): a signal handler that interrupts the write is refused, where it would
    /// otherwise write its own records at the same place of the buffer and lose them.
    #[inline(always)]
    fn set_busy(&self) {
        self.depth.set(BUSY);
        // Keeps the record's stores after this one (a handler runs on this thread: no CPU
        // fence is needed, only the compiler's order).
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    }

    /// The byte-by-byte compare of a [`LONG`] entry (out of line).
    ///
    /// # Safety
    /// `text` is a valid NUL-terminated string.
    #[inline(never)]
    unsafe fn long_matches(&self, slot: usize, text: *const c_char) -> bool {
        match self.names[slot / 8].get() {
            // SAFETY: forwarded contract; cached as `Words` only where they are readable at
            // the string's address.
            LongName::Words(words) => unsafe { words.is_at(text) },
            // SAFETY: forwarded contract. `is_fast` reads words only within the pages of the
            // string's bytes and gives up (false) where a word would cross a page;
            // `same_name` then compares exactly, reading no byte past the first that differs.
            LongName::Bytes(name) => unsafe {
                name.is_fast(text) || crate::thread_state::same_name(text, name.bytes())
            },
        }
    }
}

/// The slow path's view of the thread: the hot state, the cold one borrowed, the depth (the
/// hot one reads [`BUSY`] meanwhile).
pub(super) struct Slow<'a> {
    hot: &'a Hot,
    pub(super) cold: &'a mut Cold,
    depth: u32,
}

impl Drop for Slow<'_> {
    fn drop(&mut self) {
        self.hot.depth.set(self.depth);
    }
}

/// Runs `f` with this thread's NVTX state; `None` when it is in use (a signal handler
/// interrupted the slow path) or the thread is exiting.
pub(super) fn with_thread<R>(f: impl FnOnce(&mut Slow<'_>) -> R) -> Option<R> {
    let t = match cached() {
        Some(t) => t,
        None => thread_state()?,
    };
    let mut cold = t.cold.try_borrow_mut().ok()?;
    let depth = t.hot.depth.replace(BUSY);
    if depth == BUSY {
        // A signal handler interrupted a fast path's record write.
        return None;
    }
    let mut slow = Slow {
        hot: &t.hot,
        cold: &mut cold,
        depth,
    };
    if slow.hot.names_generation.get() != NAMES_GENERATION.load(Ordering::Relaxed)
        && !super::off_in_child()
    {
        slow.apply_other_name();
    }
    Some(f(&mut slow))
}

impl Slow<'_> {
    /// This thread's record buffer.
    pub(super) fn buffer(&self) -> ThreadBuffer {
        match self.hot.buffer.get() {
            Some(b) => b,
            None => {
                let b = ThreadBuffer::current();
                self.hot.buffer.set(Some(b));
                b
            }
        }
    }

    pub(super) fn depth(&self) -> usize {
        self.depth as usize
    }

    /// The cached id of the string at `text` as `kind` in `domain`.
    ///
    /// # Safety
    /// `text` is a valid NUL-terminated string.
    pub(super) unsafe fn cached_id(
        &self,
        text: *const c_char,
        kind: Kind,
        domain: u32,
    ) -> Option<u32> {
        let slot = slot_of(text as usize);
        // SAFETY: forwarded contract.
        let hit = unsafe {
            self.hot
                .matches(slot, text, key_of(text as usize, kind, domain))
        };
        hit.then(|| self.hot.cache[slot / 8].open.get() as u32)
    }

    /// Caches `id` for the string at `addr` (as `kind` in `domain`): `name` is the interned
    /// name after the domain's prefix; `None` for a name never to be cached as confirmed
    /// (folded), which is then looked up again each time.
    pub(super) fn cache(
        &self,
        addr: usize,
        kind: Kind,
        domain: u32,
        id: u32,
        name: Option<&'static [u8]>,
    ) {
        if domain >= CACHED_DOMAINS {
            return;
        }
        // Before any entry: a cache hit finds the buffer set (see `Hot::buffer`).
        self.buffer();
        let slot = slot_of(addr);
        let e = &self.hot.cache[slot / 8];
        let mut key = key_of(addr, kind, domain);
        let (words, long) = match name {
            Some(n) => match TwoWords::of(n) {
                Some(w) if TwoWords::readable_at(addr) => (w, LongName::Bytes(CName::EMPTY)),
                _ => {
                    key |= LONG;
                    let words = super::name_words(id, n);
                    let long = if words.readable_at(addr) {
                        LongName::Words(words)
                    } else {
                        LongName::Bytes(CName::new(n))
                    };
                    (TwoWords::NEVER, long)
                }
            },
            None => (TwoWords::NEVER, LongName::Bytes(CName::EMPTY)),
        };
        // Key last: a signal handler that interrupts this sees an empty entry or a whole one.
        e.key.set(EMPTY_KEY);
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        e.words.set(words);
        e.begin.set(RegionWord::begin(id));
        e.open.set(open_word(id, domain, true));
        self.hot.names[slot / 8].set(long);
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        e.key.set(key);
    }

    /// Open ranges of `domain` on this thread.
    pub(super) fn domain_depth(&self, domain: u32) -> u32 {
        if domain == super::DEFAULT_INDEX {
            return self.depth - self.hot.others.get();
        }
        match self.hot.domain_depth.get(domain as usize) {
            Some(d) => d.get(),
            None => self.hot.open[..self.depth()]
                .iter()
                .filter(|o| open_domain(o.get()) == domain)
                .count() as u32,
        }
    }

    /// Pushes a range (the caller checked the depth).
    pub(super) fn push_open(&mut self, id: u32, domain: u32, recorded: bool) {
        self.hot.open[self.depth()].set(open_word(id, domain, recorded));
        self.hot.domain_enter(domain, self.depth);
        self.depth += 1;
    }

    /// Removes the innermost open range of `domain` (ranges of other domains opened inside it
    /// stay open); its id and whether it was recorded, `None` when `domain` has none open.
    pub(super) fn pop_open(&mut self, domain: u32) -> Option<(u32, bool)> {
        let open = &self.hot.open[..self.depth()];
        let at = open.iter().rposition(|o| open_domain(o.get()) == domain)?;
        let word = open[at].get();
        for i in at + 1..open.len() {
            open[i - 1].set(open[i].get());
        }
        self.depth -= 1;
        self.hot.domain_leave(domain, self.depth);
        Some((word as u32, word & OPEN_UNRECORDED == 0))
    }

    /// Applies a name another thread gave this one (`nvtxNameOsThread` with its tid).
    #[cold]
    fn apply_other_name(&mut self) {
        self.hot
            .names_generation
            .set(NAMES_GENERATION.load(Ordering::Relaxed));
        if self.cold.tid == 0 {
            self.cold.tid = crate::sys::gettid();
        }
        if let Some(name) = super::take_other_name(self.cold.tid) {
            by_id::thread_name(&name);
        }
    }
}

/// The fast path of [`super::push`] for an ASCII message with no attributes in the domain of
/// index `domain`: the range's level, or `None` having done nothing (NULL or new message, a name
/// that needs the byte-by-byte compare, too deep, not collecting, a thread name to apply, the
/// thread's first call or first record, a full segment, the slow path interrupted). Never
/// panics (so the handlers call it outside `catch_unwind`): compares, `Cell` loads and stores,
/// relaxed loads, the TLS slot, the word compare and `ThreadBuffer::try_region`. It calls
/// nothing, so that it needs no stack frame; on `None` the handler tries [`push_long`] before
/// the slow path.
///
/// # Safety
/// `text` is NULL or a valid NUL-terminated string.
#[inline(always)]
pub(crate) unsafe fn push_fast(domain: u32, text: *const c_char) -> Option<c_int> {
    // SAFETY: forwarded contract.
    unsafe { push_cached::<false>(domain, text) }
}

/// [`push_fast`] with the compare of names of sixteen bytes or more (a word per eight bytes,
/// or byte by byte for strings near a page's end), for a handler's out-of-line path.
///
/// # Safety
/// As [`push_fast`].
#[inline(always)]
pub(crate) unsafe fn push_long(domain: u32, text: *const c_char) -> Option<c_int> {
    // SAFETY: forwarded contract.
    unsafe { push_cached::<true>(domain, text) }
}

/// [`push_fast`] (`LONG_NAMES` false) and [`push_long`].
///
/// # Safety
/// As [`push_fast`].
#[inline(always)]
unsafe fn push_cached<const LONG_NAMES: bool>(domain: u32, text: *const c_char) -> Option<c_int> {
    let (ptr, depth) = fast_depth();
    if depth as usize >= MAX_DEPTH || domain as usize >= COUNTED_DOMAINS {
        return None;
    }
    let hot = accepted(ptr);
    if hot.names_generation.get() != NAMES_GENERATION.load(Ordering::Relaxed) {
        return None;
    }
    let slot = slot_of(text as usize);
    let key = key_of(text as usize, Kind::Region, domain);
    // SAFETY: forwarded contract. A NULL `text` matches no key (no entry has address 0).
    let hit = match unsafe { hot.matches_short(slot, text, key) } {
        Match::Hit => true,
        Match::Miss => false,
        // SAFETY: forwarded contract (a LONG key has a non-NULL address).
        Match::Long => LONG_NAMES && unsafe { hot.long_matches(slot, text) },
    };
    if !hit || !by_id::collecting() {
        return None;
    }
    let (e, open) = (&hot.cache[slot / 8], hot.open.get(depth as usize)?);
    // SAFETY: set before the entry was made (`Slow::cache`).
    let buffer = unsafe { hot.buffer.get().unwrap_unchecked() };
    hot.set_busy();
    if !buffer.try_region(e.begin.get()) {
        hot.depth.set(depth);
        return None;
    }
    open.set(e.open.get());
    let level = hot.domain_enter(domain, depth);
    hot.depth.set(depth + 1);
    Some(level as c_int)
}

/// The fast path of [`super::push`] for a registered string (its interned `id`) in the domain
/// of index `domain`: as [`push_fast`], with no name to look up.
#[inline(always)]
pub(crate) fn push_id_fast(domain: u32, id: u32) -> Option<c_int> {
    let (ptr, depth) = fast_depth();
    if depth as usize >= MAX_DEPTH || domain as usize >= COUNTED_DOMAINS {
        return None;
    }
    let hot = accepted(ptr);
    if hot.names_generation.get() != NAMES_GENERATION.load(Ordering::Relaxed)
        || !by_id::collecting()
    {
        return None;
    }
    let (buffer, open) = (hot.buffer.get()?, hot.open.get(depth as usize)?);
    hot.set_busy();
    if !buffer.try_region(RegionWord::begin(id)) {
        hot.depth.set(depth);
        return None;
    }
    open.set(open_word(id, domain, true));
    let level = hot.domain_enter(domain, depth);
    hot.depth.set(depth + 1);
    Some(level as c_int)
}

/// The fast path of [`super::pop`]: the innermost range of this thread is of the domain of
/// index `domain` and was recorded. `None` having done nothing otherwise (as [`push_fast`]).
/// The end is recorded whether or not the run still collects, as the C header's inline end.
#[inline(always)]
pub(crate) fn pop_fast(domain: u32) -> Option<c_int> {
    let (ptr, depth) = fast_depth();
    // No range open, or BUSY (also the idle depth): out of range.
    let top = depth.wrapping_sub(1);
    if top as usize >= MAX_DEPTH || domain as usize >= COUNTED_DOMAINS {
        return None;
    }
    let hot = accepted(ptr);
    let word = hot.open.get(top as usize)?.get();
    // The end word itself when the range is of this domain and was recorded.
    let end =
        RegionWord::end_from_bits(word ^ open_word(0, domain, true) ^ RegionWord::end(0).bits())?;
    // SAFETY: the range was recorded, so its push found the buffer set.
    let buffer = unsafe { hot.buffer.get().unwrap_unchecked() };
    hot.set_busy();
    if !buffer.try_region(end) {
        hot.depth.set(depth);
        return None;
    }
    let level = hot.domain_leave(domain, top);
    hot.depth.set(top);
    Some(level as c_int)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_a_cache_line() {
        assert_eq!(std::mem::size_of::<Entry>(), 64);
    }

    #[test]
    fn open_words_keep_id_domain_and_recorded() {
        let w = open_word(0xdead_beef, 5, true);
        assert_eq!(w as u32, 0xdead_beef);
        assert_eq!(open_domain(w), 5);
        assert_eq!(w & OPEN_UNRECORDED, 0);
        assert_eq!(
            open_domain(open_word(7, CACHED_DOMAINS * 4, false)),
            CACHED_DOMAINS * 4
        );
        assert_ne!(open_word(1, 0, false) & OPEN_UNRECORDED, 0);
        // A recorded range of the default domain is its end record's word.
        assert_eq!(open_word(42, 0, true), RegionWord::end(42).bits());
        assert_eq!(RegionWord::end_from_bits(open_word(42, 0, false)), None);
        assert_eq!(RegionWord::end_from_bits(open_word(42, 1, true)), None);
    }

    #[test]
    fn keys_never_collide_with_empty_or_other_kinds() {
        assert_ne!(
            key_of(0x7fff_ffff_ffff, Kind::Region, CACHED_DOMAINS - 1) | LONG,
            EMPTY_KEY
        );
        let k = key_of(0x7fff_ffff_f000, Kind::Region, 0);
        assert_eq!(k, 0x7fff_ffff_f000);
        assert_ne!(k, key_of(0x7fff_ffff_f000, Kind::Mark, 0));
        assert_ne!(k, key_of(0x7fff_ffff_f000, Kind::Region, 1));
        assert_ne!(
            key_of(0x1000, Kind::Region, CACHED_DOMAINS - 1),
            key_of(0x1000, Kind::Region, CACHED_DOMAINS - 2)
        );
        assert_eq!(key_of(0x1000, Kind::Region, CACHED_DOMAINS - 1) & LONG, 0);
    }
}
