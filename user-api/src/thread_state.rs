//! What the C API keeps per thread: a name → id cache, the stack of open regions, and the last
//! error message.
//!
//! The cache is what keeps the global intern lock off the hot path. It is keyed by the name's
//! content, not its address, so a literal and a name built at run time in a new buffer each
//! time cost the same: a hash of the bytes read eight at a time ([`crate::c_words`]), then a
//! compare with the interned name (one word for names under eight bytes). A miss goes to the
//! interner, which takes the lock once per distinct name and thread. (An address-keyed cache
//! in front of it was measured: it saved nothing on a hit, since confirming the bytes costs
//! about what hashing them does, and cost a store on every miss.)
//!
//! The stack is how the C API detects an end without a begin and an end that does not match
//! the innermost open region, before anything reaches the recording layer: such a call returns
//! an error and records nothing, so the thread's trace stays balanced.

use crate::c_words::{CName, Short};
use crate::fast_tls::{self, Slot};
use crate::thread_block::{Block, Held, Pool};
use metron::by_id::ThreadBuffer;
use metron::CallsiteKind;
use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::sync::atomic::AtomicPtr;

/// Entries of the per-thread cache by content (direct-mapped by a hash of the bytes), for
/// names that come at new addresses (built at run time): found without the interner's lock.
const NAMED_ENTRIES: usize = 256;

#[derive(Clone, Copy)]
struct Named {
    hash: u64,
    kind: u8,
    /// 0 when empty (no name has id 0).
    id: u32,
    name: CName,
}

const NO_NAME: Named = Named {
    hash: 0,
    kind: 0,
    id: 0,
    name: CName::EMPTY,
};

/// Where a name of hash `hash` (and call-site kind `code`) goes in the content cache: the
/// hash's top byte, the one its last multiplication mixes every bit into (the low bits of a
/// product depend only on the low bits of its factors: names that differ after their first
/// byte would share a slot).
#[inline(always)]
fn named_slot(hash: u64, code: u8) -> usize {
    ((hash >> 56) ^ u64::from(code)) as usize % NAMED_ENTRIES
}

/// A hash of the NUL-terminated string at `name` and its length (eight bytes at a time:
/// [`crate::c_words`]).
///
/// # Safety
/// `name` must be a valid NUL-terminated string.
#[inline]
unsafe fn hash_name(name: *const c_char) -> (u64, usize) {
    // SAFETY: forwarded contract.
    unsafe { crate::c_words::hash_and_len(name) }
}

/// Which call opened a region; the matching end must be of the same kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum OpenKind {
    /// `metron_region_begin`.
    Region = 0,
    /// `metron_perf_marker_begin`.
    Marker = 1,
    /// `metron_push`.
    Push = 2,
}

impl OpenKind {
    pub(crate) fn begun_with(self) -> &'static str {
        match self {
            OpenKind::Region => "metron_region_begin",
            OpenKind::Marker => "metron_perf_marker_begin",
            OpenKind::Push => "metron_push",
        }
    }
}

/// A region open on this thread, as [`ThreadState::top`] returns it.
#[derive(Clone, Copy)]
pub(crate) struct Open {
    pub(crate) id: u32,
    pub(crate) kind: OpenKind,
    /// False when the begin was not recorded (collection off, thread paused, record dropped):
    /// then no end record is written either.
    pub(crate) recorded: bool,
    /// Begun by id (`metron_region_begin_id`): `name` is empty and the name is looked up
    /// from `id` only when needed (an end by name, an error message).
    pub(crate) by_id: bool,
    pub(crate) name: &'static [u8],
}

/// How many regions may be open at once on one thread.
pub(crate) const MAX_DEPTH: usize = 256;
/// Bytes kept of the last error message, NUL included.
const ERROR_BYTES: usize = 512;

/// How an open region is kept on the stack: one word (the id, the kind, whether it was
/// recorded and whether it was begun by id), written with one store and compared with one
/// compare at an end by id. The name of a region begun by name is kept apart
/// (`ThreadState::names`), written only by those.
pub(crate) mod meta {
    use super::OpenKind;

    /// The kind's bits.
    pub(crate) const KIND_SHIFT: u32 = 32;
    /// Set when the begin was recorded.
    pub(crate) const RECORDED: u64 = 1 << 40;
    /// Set when begun by id.
    pub(crate) const BY_ID: u64 = 1 << 41;
    /// Set when GPU region mode was on at the begin (the end must go through the library,
    /// which closes the CUPTI range): keeps the header's inline end off such a region.
    pub(crate) const GPU: u64 = 1 << 42;
    /// The id and the kind: what an end must match.
    pub(crate) const MATCH: u64 = 0xFF_FFFF_FFFF;

    /// The word of a region `id` of `kind`.
    #[inline(always)]
    pub(crate) const fn of(id: u32, kind: OpenKind, recorded: bool, by_id: bool) -> u64 {
        id as u64
            | (kind as u64) << KIND_SHIFT
            | if recorded { RECORDED } else { 0 }
            | if by_id { BY_ID } else { 0 }
    }

    /// The kind of a word.
    pub(crate) fn kind(word: u64) -> OpenKind {
        match (word >> KIND_SHIFT) as u8 {
            1 => OpenKind::Marker,
            2 => OpenKind::Push,
            _ => OpenKind::Region,
        }
    }
}

/// The part of a thread's state that the C header's inline begin/end by id reads and writes
/// (`metron_fast_thread` in `metron.h`, same layout: `FAST_ABI` names it, and
/// `metron_fast_thread_get()` refuses a header with another version or size). The open-region
/// stack lives here, so the inline path and the library keep one stack.
///
/// The inline begin runs when `depth < open_limit`, the id's byte in the map `*ids` points at
/// is set (the map is all zeros while the run does not record: `metron::by_id::inline_gate`)
/// and the producer's cursor is below its limit; it then writes
/// the BEGIN record exactly as the Rust producer does (the slot, then a `Release` store of the
/// new end) and pushes `id | RECORDED | BY_ID`. The inline end runs when `open[depth]` (with
/// `open[0]`, `floor`, always 0) is exactly that word and the cursor is below the limit.
/// Everything else calls the library: a limit of 0 (the thread's first call, an unusable
/// header, GPU region mode) sends every inline begin there, and the producer's limit folds in
/// a full segment, a paused thread, a detached or retired producer (a forked child, a copy of
/// Metron that joined another, an exiting thread).
#[repr(C)]
pub struct FastThread {
    /// `size_of::<FastThread>()`.
    pub(crate) struct_size: u32,
    /// [`FAST_ABI`].
    pub(crate) abi: u32,
    /// Inline begins run while `depth < open_limit` (0 or [`MAX_DEPTH`]).
    pub(crate) open_limit: usize,
    /// How many regions are open (`stack[..depth]`).
    pub(crate) depth: usize,
    /// The thread's producer (`RawProducer`: its end-word pointer, then its limit).
    pub(crate) cursor: *const (),
    /// The run's gate: a pointer to one byte per id below `METRON_FAST_REGION_IDS`, 1 for a
    /// region the inline begin may record (all 0 while the run does not record).
    pub(crate) ids: *const AtomicPtr<u8>,
    /// `open[0]` in C: always 0 (matches no end), so an end with nothing open needs no test.
    pub(crate) floor: u64,
    /// The open regions, innermost last: see [`meta`].
    pub(crate) stack: [u64; MAX_DEPTH],
}

/// Version of [`FastThread`]'s layout and of the records the inline path writes
/// (`METRON_FAST_ABI` in `metron.h`).
pub const FAST_ABI: u32 = 2;

/// `METRON_FAST_REGION_IDS` in `metron.h`: the inline begin indexes the gate's map with any id
/// below it, so the map must cover exactly that many.
const FAST_REGION_IDS: usize = 65536;
const _: () = assert!(metron::by_id::INLINE_ID_COUNT == FAST_REGION_IDS);

/// A thread state that never lets the inline path run (limit 0, nothing open): what
/// `metron_fast_thread_get()` hands out when the inline path must not be used. Never written.
struct Refused(FastThread);
// SAFETY: never written after initialisation; the pointers in it are null or static.
unsafe impl Sync for Refused {}

static REFUSED: Refused = Refused(FastThread::EMPTY);

impl FastThread {
    const EMPTY: FastThread = FastThread {
        struct_size: std::mem::size_of::<FastThread>() as u32,
        abi: FAST_ABI,
        open_limit: 0,
        depth: 0,
        cursor: std::ptr::null(),
        ids: std::ptr::null(),
        floor: 0,
        stack: [0; MAX_DEPTH],
    };
}

/// Fixed-size, made once per thread (its first C API call): the hot path never allocates.
pub(crate) struct ThreadState {
    /// Names by content: see [`NAMED_ENTRIES`].
    named: [Named; NAMED_ENTRIES],
    /// The open regions and what the inline path needs.
    fast: FastThread,
    /// The names of the open regions begun by name (by index into `fast.stack`).
    names: [CName; MAX_DEPTH],
    /// The thread's record buffer, looked up on first use (saves the sdk's thread-local
    /// access on every begin and end).
    buffer: Option<ThreadBuffer>,
    /// NUL-terminated message of the last failed call (empty string when none).
    last_error: [u8; ERROR_BYTES],
}

/// A thread's state, in a `RefCell` (a signal handler that interrupts a Metron call finds it
/// borrowed).
pub(crate) struct StateCell(RefCell<ThreadState>);

impl Block for StateCell {
    fn pool() -> &'static Pool<StateCell> {
        &POOL
    }

    fn fresh() -> Box<StateCell> {
        // A C program linked against `libmetron.a` may lack the archive member with Metron's
        // constructors: its first thread state lets threads record instead.
        metron::__private::let_threads_record();
        Box::new(
            const {
                StateCell(RefCell::new(ThreadState {
                    named: [NO_NAME; NAMED_ENTRIES],
                    fast: FastThread::EMPTY,
                    names: [CName::EMPTY; MAX_DEPTH],
                    buffer: None,
                    last_error: [0; ERROR_BYTES],
                }))
            },
        )
    }
}

/// The threads' states: on the heap (about 19 KB each), which keeps the library's
/// thread-local block small ([`crate::thread_block`]); a state outlives its holder until its
/// thread is gone, as the C header's inline path keeps its address.
static POOL: Pool<StateCell> = Pool::new();

thread_local! {
    static STATE: Held<StateCell> = const { Held::new() };
}

/// Runs `f` with this thread's state; `None` when the state is already in use (a signal
/// handler interrupted a Metron call on this thread) or the thread is exiting.
///
/// The state is reached through an initial-exec TLS slot ([`crate::fast_tls`]) holding its
/// address: two instructions, where the `thread_local!` itself costs a call to
/// `__tls_get_addr` in a shared library.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    let cached = fast_tls::get(Slot::CApi).cast::<RefCell<ThreadState>>();
    let cell = if cached.is_null() {
        state_cell()?
    } else {
        // SAFETY: the slot holds the address of this thread's state (set by `state_cell` on
        // this thread), valid for the rest of the thread's life, even after its holder is
        // destroyed (`thread_block`); the slot is per thread too.
        unsafe { &*cached }
    };
    cell.try_borrow_mut().ok().map(|mut st| f(&mut st))
}

/// The fast path's access to this thread's state: `f`'s answer, or false (nothing done) when
/// the thread has no state yet or it is in use (the caller then takes the checked path, which
/// sets the state up or reports the reentrant call). Never panics: a pointer load, a test and
/// `RefCell::try_borrow_mut`.
#[inline(always)]
pub(crate) fn with_fast(f: impl FnOnce(&mut ThreadState) -> bool) -> bool {
    with_fast_or(false, f)
}

/// [`with_fast`] with another result type: `none` when the state is not at hand.
#[inline(always)]
pub(crate) fn with_fast_or<R>(none: R, f: impl FnOnce(&mut ThreadState) -> R) -> R {
    let cached = fast_tls::get(Slot::CApi).cast::<RefCell<ThreadState>>();
    if cached.is_null() {
        return none;
    }
    // SAFETY: as in `with`.
    let cell = unsafe { &*cached };
    match cell.try_borrow_mut() {
        Ok(mut st) => f(&mut st),
        Err(_) => none,
    }
}

/// `metron_fast_thread_get()`: the calling thread's [`FastThread`], set up for the header's inline
/// path, or [`REFUSED`] (the inline path then always calls the library) when the header's
/// `abi`/`size` are not this library's, GPU region mode may be used, or the state is in use
/// or gone. Never panics (no unwinding into C): `try_with`, `try_borrow_mut`, field stores.
pub(crate) fn fast_thread(abi: u32, size: u32) -> *mut FastThread {
    let refused = std::ptr::addr_of!(REFUSED.0).cast_mut();
    if abi != FAST_ABI
        || size as usize != std::mem::size_of::<FastThread>()
        || !cfg!(target_arch = "x86_64")
        || gpu_region_mode_requested()
    {
        return refused;
    }
    let Some(cell) = state_cell() else {
        return refused;
    };
    let Ok(mut st) = cell.try_borrow_mut() else {
        return refused;
    };
    let buffer = st.buffer();
    let fast = &mut st.fast;
    fast.cursor = buffer.cursor();
    fast.ids = metron::by_id::inline_gate();
    fast.open_limit = MAX_DEPTH;
    drop(st);
    // SAFETY: `cell` is this thread's state, which lives as long as the thread; the C caller
    // uses the pointer only on this thread, outside any borrow (no Metron call is running).
    unsafe { std::ptr::addr_of_mut!((*cell.as_ptr()).fast) }
}

/// True when `METRON_GPU_COUNTER_MODE` asks for region mode (its regions must call into the
/// library, which opens and closes CUPTI ranges). Read once; any value containing "region"
/// counts, so the test errs on the side of the library's path.
fn gpu_region_mode_requested() -> bool {
    static REQUESTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REQUESTED.get_or_init(|| {
        std::env::var_os("METRON_GPU_COUNTER_MODE")
            .is_some_and(|v| v.to_string_lossy().to_ascii_lowercase().contains("region"))
    })
}

/// Byte offsets of [`FastThread`]'s fields, in the order of `metron_fast_thread`'s fields in
/// `metron.h` (`metron_fast_layout`), then its size: the test that compiles the header
/// compares them with `offsetof`.
pub(crate) const FAST_LAYOUT: [usize; 9] = [
    std::mem::offset_of!(FastThread, struct_size),
    std::mem::offset_of!(FastThread, abi),
    std::mem::offset_of!(FastThread, open_limit),
    std::mem::offset_of!(FastThread, depth),
    std::mem::offset_of!(FastThread, cursor),
    std::mem::offset_of!(FastThread, ids),
    std::mem::offset_of!(FastThread, floor),
    std::mem::offset_of!(FastThread, stack),
    std::mem::size_of::<FastThread>(),
];

/// This thread's state, found through the `thread_local!` once and remembered in the fast slot.
#[cold]
#[inline(never)]
fn state_cell() -> Option<&'static RefCell<ThreadState>> {
    STATE
        .try_with(|held| {
            let cell = &held.get().0;
            let ptr: *const RefCell<ThreadState> = cell;
            fast_tls::set(Slot::CApi, ptr.cast());
            cell
        })
        .ok()
}

fn kind_code(kind: CallsiteKind) -> u8 {
    match kind {
        CallsiteKind::Region => 0,
        CallsiteKind::Instant => 1,
        CallsiteKind::Counter => 2,
        CallsiteKind::AnnotationKey => 3,
    }
}

/// True when the NUL-terminated string at `ptr` is exactly `name` (compared eight bytes at a
/// time: [`crate::c_words`]).
///
/// # Safety
/// `ptr` must point to a NUL-terminated string.
#[inline]
pub(crate) unsafe fn same_name(ptr: *const c_char, name: &[u8]) -> bool {
    // SAFETY: forwarded contract.
    unsafe { crate::c_words::same_name(ptr, name) }
}

impl ThreadState {
    /// The interned id and name of the non-NULL C string `name`.
    ///
    /// # Safety
    /// `name` must be a valid NUL-terminated string.
    #[inline]
    pub(crate) unsafe fn lookup(
        &mut self,
        name: *const c_char,
        kind: CallsiteKind,
    ) -> (u32, CName) {
        let code = kind_code(kind);
        // SAFETY: forwarded contract.
        if let Some(found) = unsafe { self.lookup_cached(name, code) } {
            return found;
        }
        // SAFETY: forwarded contract.
        let (id, interned) = unsafe { intern_slow(name, kind) };
        let interned = CName::new(interned);
        // SAFETY: forwarded contract.
        let (hash, _) = unsafe { hash_name(name) };
        self.named[named_slot(hash, code)] = Named {
            hash,
            kind: code,
            id,
            name: interned,
        };
        (id, interned)
    }

    /// The interned id and name of `name` (a call site of kind `code`) if this thread has
    /// seen it (the cache by content). `None` when it must be interned, or when the string
    /// sits where reading it a word at a time would cross a page. Never panics, allocates or
    /// blocks (the fast path's lookup).
    ///
    /// # Safety
    /// `name` must be a valid NUL-terminated string.
    #[inline(always)]
    pub(crate) unsafe fn lookup_cached(
        &mut self,
        name: *const c_char,
        code: u8,
    ) -> Option<(u32, CName)> {
        // SAFETY: forwarded contract.
        let hashed = unsafe { crate::c_words::hash_fast(name) }?;
        let named = *self.named.get(named_slot(hashed.hash, code))?;
        if named.hash != hashed.hash
            || named.kind != code
            || named.id == 0
            // SAFETY: forwarded contract; `hashed` is of `name`.
            || !unsafe { named.name.is_hashed(name, hashed) }
        {
            return None;
        }
        Some((named.id, named.name))
    }

    /// [`ThreadState::lookup_cached`] for names of up to seven bytes (no loop: see
    /// [`crate::c_words::Short`]).
    ///
    /// # Safety
    /// `name` must be a valid NUL-terminated string.
    #[inline(always)]
    pub(crate) unsafe fn lookup_short(
        &mut self,
        name: *const c_char,
        code: u8,
    ) -> Short<(u32, CName)> {
        // SAFETY: forwarded contract.
        let hashed = match unsafe { crate::c_words::hash_short(name) } {
            Short::Yes(h) => h,
            Short::No => return Short::No,
            Short::Long => return Short::Long,
        };
        let Some(&named) = self.named.get(named_slot(hashed.hash, code)) else {
            return Short::No;
        };
        if named.hash != hashed.hash
            || named.kind != code
            || named.id == 0
            // SAFETY: forwarded contract; `hashed` is of `name`.
            || !unsafe { named.name.is_hashed(name, hashed) }
        {
            return Short::No;
        }
        Short::Yes((named.id, named.name))
    }

    /// The fast path's begin, while the run is collecting: records the begin of region `id`
    /// (`word` without `RECORDED`) and opens it, or does nothing and returns false when the
    /// checked path is needed (too deep, no buffer yet, the record needs the buffer's cold
    /// path). Never panics, allocates or blocks.
    #[inline(always)]
    pub(crate) fn try_begin(&mut self, id: u32, word: u64, name: Option<CName>) -> bool {
        let depth = self.fast.depth;
        let (Some(slot), Some(buffer)) = (self.fast.stack.get_mut(depth), self.buffer) else {
            return false;
        };
        if !buffer.try_begin(id) {
            return false;
        }
        *slot = word | meta::RECORDED;
        if let (Some(name), Some(n)) = (name, self.names.get_mut(depth)) {
            *n = name;
        }
        self.fast.depth = depth + 1;
        true
    }

    /// The fast path's end: when the innermost region's word matches `expect` (id and kind)
    /// and `check(word, name)` agrees, records its end (if its begin was) and closes it;
    /// otherwise does nothing and returns false (the checked path reports what is wrong).
    /// Never panics, allocates or blocks.
    #[inline(always)]
    pub(crate) fn try_end(&mut self, matches: impl FnOnce(u64, CName) -> bool) -> bool {
        let Some(top) = self.fast.depth.checked_sub(1) else {
            return false;
        };
        let (Some(&word), Some(&name)) = (self.fast.stack.get(top), self.names.get(top)) else {
            return false;
        };
        if !matches(word, name) {
            return false;
        }
        if word & meta::RECORDED != 0 {
            match self.buffer {
                Some(buffer) if buffer.try_end(word as u32) => {}
                _ => return false,
            }
        }
        self.fast.depth = top;
        true
    }

    /// This thread's record buffer.
    #[inline(always)]
    pub(crate) fn buffer(&mut self) -> ThreadBuffer {
        *self.buffer.get_or_insert_with(ThreadBuffer::current)
    }

    /// The innermost open region.
    #[inline(always)]
    pub(crate) fn top(&self) -> Option<Open> {
        let i = self.fast.depth.checked_sub(1)?;
        let word = *self.fast.stack.get(i)?;
        let by_id = word & meta::BY_ID != 0;
        Some(Open {
            id: word as u32,
            kind: meta::kind(word),
            recorded: word & meta::RECORDED != 0,
            by_id,
            name: if by_id { &[] } else { self.names[i].bytes() },
        })
    }

    /// The innermost open region's word ([`meta`]); `None` when none is open.
    #[inline(always)]
    pub(crate) fn top_word(&self) -> Option<u64> {
        self.fast
            .depth
            .checked_sub(1)
            .and_then(|i| self.fast.stack.get(i))
            .copied()
    }

    /// True when [`MAX_DEPTH`] regions are open.
    #[inline(always)]
    pub(crate) fn is_full(&self) -> bool {
        self.fast.depth >= MAX_DEPTH
    }

    /// Opens a region given as its word ([`meta`]) and, when begun by name, its name; false
    /// when [`MAX_DEPTH`] regions are already open.
    #[inline(always)]
    pub(crate) fn push_word(&mut self, word: u64, name: Option<CName>) -> bool {
        let depth = self.fast.depth;
        let gpu = metron::gpu::region_counters_on();
        match self.fast.stack.get_mut(depth) {
            Some(slot) => {
                *slot = if gpu { word | meta::GPU } else { word };
                if let (Some(name), Some(n)) = (name, self.names.get_mut(depth)) {
                    *n = name;
                }
                self.fast.depth = depth + 1;
                // METRON_GPU_COUNTER_MODE=region: the outermost GPU-counted region opens a
                // CUPTI user range (one relaxed load when off).
                if gpu {
                    metron::gpu::region_counters_begin(self.fast.depth, word as u32);
                }
                true
            }
            None => false,
        }
    }

    /// Closes the innermost region.
    #[inline(always)]
    pub(crate) fn pop(&mut self) {
        // Region mode: the range closes and its values annotate the region (still open: the
        // callers end it in the record buffer after this).
        if metron::gpu::region_counters_on() {
            metron::gpu::region_counters_end(self.fast.depth);
        }
        self.fast.depth = self.fast.depth.saturating_sub(1);
    }

    /// Remembers `message` as this thread's last error (cut to fit, at a character boundary).
    pub(crate) fn set_error(&mut self, message: &str) {
        let mut len = message.len().min(ERROR_BYTES - 1);
        while !message.is_char_boundary(len) {
            len -= 1;
        }
        for (dst, src) in self
            .last_error
            .iter_mut()
            .zip(message.as_bytes()[..len].iter())
        {
            *dst = if *src == 0 { b' ' } else { *src };
        }
        self.last_error[len] = 0;
    }

    /// The last error, NUL-terminated (static storage of this thread).
    pub(crate) fn last_error(&self) -> *const c_char {
        self.last_error.as_ptr().cast()
    }
}

/// The interned id of `name` as a region, for `metron_region_id` (takes the global lock:
/// callers keep the id).
///
/// # Safety
/// `name` must be a valid NUL-terminated string.
pub(crate) unsafe fn intern_region(name: *const c_char) -> u32 {
    // SAFETY: forwarded contract.
    unsafe { intern_slow(name, CallsiteKind::Region) }.0
}

/// Interns a name seen for the first time on this thread (cold: takes the global lock).
///
/// # Safety
/// `name` must be a valid NUL-terminated string.
#[cold]
#[inline(never)]
unsafe fn intern_slow(name: *const c_char, kind: CallsiteKind) -> (u32, &'static [u8]) {
    crate::errors::register_metadata();
    // SAFETY: the caller guarantees a valid NUL-terminated string.
    let text = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    let id = metron::intern(&text, kind);
    if kind == CallsiteKind::Region {
        crate::ids::mark_region(id);
    }
    let interned = metron::resolve(id).map_or(&[][..], |site| site.name.as_bytes());
    (id, interned)
}
