//! NVTX v3 ingestion: `libmetron.so` is an NVTX injection library
//! (`NVTX_INJECTION64_PATH=libmetron.so`, which `metron run` sets), so the NVTX markers an
//! application already has (PyTorch, NCCL, cuDNN, HPC codes) become Metron records.
//!
//! Each NVTX copy in the process (PyTorch carries two) calls `InitializeInjectionNvtx2`
//! (`sys.rs`) once, with its own callback tables; every call installs the same handlers, which
//! share one state. `mod.rs` is the safe core; `sys.rs` holds the ABI, the handlers and every
//! `unsafe` operation.
//!
//! # Mapping
//! | NVTX | Metron |
//! | --- | --- |
//! | `nvtxRangePush*` / `nvtxRangePop`, `nvtxDomainRangePushEx` / `nvtxDomainRangePop` | nested regions of the calling thread; one stack per domain (push returns its 0-based level, pop the level it closed, or -1 when that domain has nothing open: counted and reported, never fatal) |
//! | `nvtxRangeStart*` / `nvtxRangeEnd`, `nvtxDomainRangeStartEx` / `nvtxDomainRangeEnd` | async slices (may end on another thread); the returned range id carries the name's id |
//! | `nvtxMark*`, `nvtxDomainMarkEx` | instants |
//! | domains (`nvtxDomainCreateA/W`) | the name's prefix: `domain::message` (the default domain has none) |
//! | registered strings | interned once, at registration |
//! | `nvtxNameOsThreadA/W` | the thread's name in the outputs (the thread itself is not renamed); a name given for another thread is applied at that thread's next NVTX call |
//! | payload, colour, category of a push | annotations `payload`, `color` (`#AARRGGBB`), `category` (its name when named) on the region |
//!
//! Payloads, colours and categories of marks and of start/end ranges are not recorded (Metron
//! annotates regions only). In a forked child where Metron is off, NVTX keeps its return values
//! and nothing is interned or recorded.
//!
//! # Hot path
//! Names are looked up in a per-thread direct-mapped cache keyed by the string's address and
//! confirmed by content; a miss interns the name (a lock, once per distinct name and thread).
//! Unicode (`W`) names are converted and interned on every call. Push/pop keep a fixed-size
//! per-thread stack; nothing allocates once a name is known.

mod fold;
mod sys;

use crate::c_words::CName;
use crate::fast_tls::{self, Slot};
use crate::ids;
use metron::by_id::{self, ThreadBuffer};
use metron::{AnnotationValue, CallsiteKind};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
pub(crate) use sys::CText;
use sys::{Attributes, WideText};

/// Categories per domain whose names are kept (lock-free); larger ones are shown as numbers.
const NAMED_CATEGORIES: usize = 64;

/// An NVTX domain (or ROCTx's): the prefix of its names and its own push/pop stack. Handles
/// given to the application are `&'static Domain` pointers; they are never freed.
pub(crate) struct Domain {
    /// Index of its per-thread depth counter (0: the default domain).
    index: u32,
    /// `None` for the default domain and ROCTx.
    name: Option<&'static str>,
    /// Names of categories `0..NAMED_CATEGORIES` (`nvtxDomainNameCategory*`; the first name
    /// given to a category is kept).
    categories: [OnceLock<String>; NAMED_CATEGORIES],
}

impl Domain {
    const fn new(index: u32, name: Option<&'static str>) -> Domain {
        Domain {
            index,
            name,
            categories: [const { OnceLock::new() }; NAMED_CATEGORIES],
        }
    }

    fn label(&self) -> &'static str {
        match (self.name, self.index) {
            (Some(name), _) => name,
            (None, 1) => "roctx",
            (None, _) => "(default)",
        }
    }
}

/// The default NVTX domain (a NULL domain handle).
pub(crate) static DEFAULT_DOMAIN: Domain = Domain::new(0, None);
/// ROCTx ranges: their own stack, names without prefix.
pub(crate) static ROCTX_DOMAIN: Domain = Domain::new(1, None);
/// Next domain index.
static NEXT_DOMAIN: AtomicU32 = AtomicU32::new(2);
/// Created domains by name (`nvtxDomainCreate` of a known name returns the same handle).
static DOMAINS: Mutex<Option<HashMap<String, &'static Domain>>> = Mutex::new(None);

/// A string registered with `nvtxDomainRegisterString*`: the handle NVTX passes back.
pub(crate) struct Registered {
    region: u32,
    mark: u32,
}

/// What the run reports in `metadata.json` under `nvtx`.
pub(crate) static INITS: AtomicU64 = AtomicU64::new(0);
static UNBALANCED_POPS: AtomicU64 = AtomicU64::new(0);
static TOO_DEEP: AtomicU64 = AtomicU64::new(0);
static INVALID_ENDS: AtomicU64 = AtomicU64::new(0);

/// Names given to other threads (`nvtxNameOsThread` with another tid), and a generation that
/// tells each thread to look.
static OTHER_NAMES: Mutex<Option<HashMap<u32, String>>> = Mutex::new(None);
static NAMES_GENERATION: AtomicU32 = AtomicU32::new(0);

/// Range ids of start/end ranges: `site id << 32 | RECORDED | sequence`.
static RANGE_SEQUENCE: AtomicU32 = AtomicU32::new(1);
const RECORDED: u64 = 1 << 31;

/// Entries of the per-thread name cache (direct-mapped).
const CACHE_ENTRIES: usize = 256;
/// Ranges open at once on one thread (all domains together).
const MAX_DEPTH: usize = 256;
/// Domains with an O(1) depth counter; others count by scanning the stack.
const COUNTED_DOMAINS: usize = 64;

#[derive(Clone, Copy)]
struct Entry {
    ptr: usize,
    /// `kind | domain index << 1`.
    key: u32,
    id: u32,
    /// The message part of the interned name, for the content check.
    message: CName,
}

#[derive(Clone, Copy)]
struct Open {
    domain: u32,
    id: u32,
    recorded: bool,
}

struct NvtxThread {
    cache: [Entry; CACHE_ENTRIES],
    stack: [Open; MAX_DEPTH],
    depth: usize,
    domain_depth: [u32; COUNTED_DOMAINS],
    buffer: Option<ThreadBuffer>,
    tid: u32,
    names_generation: u32,
    /// The last name looked up was folded (`METRON_NVTX_FOLD`): its push annotates the raw name.
    last_folded: bool,
}

thread_local! {
    static THREAD: RefCell<NvtxThread> = const {
        RefCell::new(NvtxThread {
            cache: [Entry { ptr: 0, key: 0, id: 0, message: CName::EMPTY }; CACHE_ENTRIES],
            stack: [Open { domain: 0, id: 0, recorded: false }; MAX_DEPTH],
            depth: 0,
            domain_depth: [0; COUNTED_DOMAINS],
            buffer: None,
            tid: 0,
            names_generation: 0,
            last_folded: false,
        })
    };
}

/// Runs `f` with this thread's NVTX state; `None` when it is in use (a signal handler
/// interrupted an NVTX call) or the thread is exiting.
///
/// The state is reached through a TLS descriptor slot ([`crate::fast_tls`]) holding its
/// address, where the `thread_local!` itself costs a call to `__tls_get_addr`.
#[inline(always)]
fn with_thread<R>(f: impl FnOnce(&mut NvtxThread) -> R) -> Option<R> {
    let cached = fast_tls::get(Slot::Nvtx).cast::<RefCell<NvtxThread>>();
    let cell = if cached.is_null() {
        thread_cell()?
    } else {
        // SAFETY: the slot holds the address of this thread's `THREAD` (set by `thread_cell`
        // on this thread); a `const` thread-local with no destructor lives as long as the
        // thread, and the slot is per thread too.
        unsafe { &*cached }
    };
    let mut st = cell.try_borrow_mut().ok()?;
    if st.names_generation != NAMES_GENERATION.load(Ordering::Relaxed) && !off_in_child() {
        st.apply_other_name();
    }
    Some(f(&mut st))
}

/// This thread's NVTX state, found through the `thread_local!` once and remembered in the
/// fast slot.
#[cold]
#[inline(never)]
fn thread_cell() -> Option<&'static RefCell<NvtxThread>> {
    THREAD
        .try_with(|cell| {
            let ptr: *const RefCell<NvtxThread> = cell;
            fast_tls::set(Slot::Nvtx, ptr.cast());
            // SAFETY: as in `with_thread`: valid for the life of this thread, used only on it.
            unsafe { &*ptr }
        })
        .ok()
}

/// True in a forked child where Metron is off (`METRON_FORK=disable`): NVTX keeps its return
/// values there, but nothing is interned (a lock another parent thread may have held at the
/// fork) or recorded.
#[inline(always)]
fn off_in_child() -> bool {
    metron::lifecycle::disabled_in_child()
}

/// Runs a handler body; a panic (a bug in Metron) never unwinds into the application, which
/// gets `fallback`.
#[inline(always)]
pub(crate) fn guarded<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Which record a name is interned for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Region = 0,
    Mark = 1,
}

impl Kind {
    fn callsite(self) -> CallsiteKind {
        match self {
            Kind::Region => CallsiteKind::Region,
            Kind::Mark => CallsiteKind::Instant,
        }
    }
}

/// An event's message.
#[derive(Clone, Copy)]
pub(crate) enum Message {
    Ascii(CText),
    Wide(WideText),
    Registered(&'static Registered),
    Missing,
}

impl NvtxThread {
    #[inline(always)]
    fn buffer(&mut self) -> ThreadBuffer {
        *self.buffer.get_or_insert_with(ThreadBuffer::current)
    }

    /// The interned id of `message` in `domain`.
    #[inline(always)]
    fn id(&mut self, message: Message, kind: Kind, domain: &'static Domain) -> u32 {
        match message {
            Message::Ascii(text) => {
                let addr = text.addr();
                let key = kind as u32 | domain.index << 1;
                let slot = ((addr >> 3) ^ (addr >> 11) ^ key as usize) % CACHE_ENTRIES;
                let e = self.cache[slot];
                if e.ptr == addr && e.key == key && text.is(e.message.bytes()) {
                    return e.id;
                }
                let (id, message) = intern(&text.text(), kind, domain);
                self.last_folded = std::ptr::eq(message, FOLDED_MARK);
                self.cache[slot] = Entry {
                    ptr: addr,
                    key,
                    id,
                    message: CName::new(message),
                };
                id
            }
            Message::Wide(text) => intern(&text.text(), kind, domain).0,
            Message::Registered(r) => match kind {
                Kind::Region => r.region,
                Kind::Mark => r.mark,
            },
            Message::Missing => intern("(no message)", kind, domain).0,
        }
    }

    fn domain_depth(&self, domain: &Domain) -> u32 {
        match self.domain_depth.get(domain.index as usize) {
            Some(d) => *d,
            None => self.stack[..self.depth]
                .iter()
                .filter(|o| o.domain == domain.index)
                .count() as u32,
        }
    }

    /// Applies a name another thread gave this one (`nvtxNameOsThread` with its tid).
    #[cold]
    fn apply_other_name(&mut self) {
        self.names_generation = NAMES_GENERATION.load(Ordering::Relaxed);
        if self.tid == 0 {
            self.tid = sys::gettid();
        }
        let name = OTHER_NAMES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .and_then(|m| m.remove(&self.tid));
        if let Some(name) = name {
            by_id::thread_name(&name);
        }
    }
}

/// Interns `text` in `domain` (`domain::text`); returns the id and the `text` part of the
/// interned name. Cold: takes the interner's lock.
#[cold]
#[inline(never)]
fn intern(text: &str, kind: Kind, domain: &Domain) -> (u32, &'static [u8]) {
    crate::errors::register_metadata();
    register_metadata();
    if kind == Kind::Region {
        if let Some(folded) = fold::current().apply(text) {
            FOLDED.fetch_add(1, Ordering::Relaxed);
            let id = match domain.name {
                Some(d) => metron::intern(&format!("{d}::{folded}"), kind.callsite()),
                None => metron::intern(&folded, kind.callsite()),
            };
            ids::mark_region(id);
            // No content for the cache check: a folded name is looked up again (PyTorch's
            // names are unique per op instance anyway), so its raw name is annotated.
            return (id, FOLDED_MARK);
        }
    }
    let id = match domain.name {
        Some(d) => metron::intern(&format!("{d}::{text}"), kind.callsite()),
        None => metron::intern(text, kind.callsite()),
    };
    if kind == Kind::Region {
        ids::mark_region(id);
    }
    let name = metron::resolve(id).map_or(&[][..], |s| s.name.as_bytes());
    (id, &name[name.len().saturating_sub(text.len())..])
}

/// The "message" of a folded name's cache entry: never equal to a C string's content (it has
/// a NUL), so folded names always take the slow path, which annotates the raw name.
const FOLDED_MARK: &[u8] = b"\0folded";
static FOLDED: AtomicU64 = AtomicU64::new(0);
static RAW_NAME_KEY: AtomicU32 = AtomicU32::new(0);

/// Annotation keys (interned once).
fn key(slot: &AtomicU32, name: &str) -> u32 {
    match slot.load(Ordering::Relaxed) {
        0 => {
            let id = metron::intern(name, CallsiteKind::AnnotationKey);
            slot.store(id, Ordering::Relaxed);
            id
        }
        id => id,
    }
}

static KEY_PAYLOAD: AtomicU32 = AtomicU32::new(0);
static KEY_COLOR: AtomicU32 = AtomicU32::new(0);
static KEY_CATEGORY: AtomicU32 = AtomicU32::new(0);

/// Annotates the region just pushed with the attributes' payload, colour and category.
fn annotate(a: &Attributes, domain: &Domain) {
    if let Some((kind, raw)) = a.payload {
        let value = match kind {
            sys::payload::U64 => AnnotationValue::U64(raw),
            sys::payload::I64 => AnnotationValue::I64(raw as i64),
            sys::payload::F64 => AnnotationValue::F64(f64::from_bits(raw)),
            sys::payload::U32 => AnnotationValue::U64(u64::from(raw as u32)),
            sys::payload::I32 => AnnotationValue::I64(i64::from(raw as u32 as i32)),
            sys::payload::F32 => AnnotationValue::F64(f64::from(f32::from_bits(raw as u32))),
            _ => AnnotationValue::U64(raw),
        };
        by_id::annotate(key(&KEY_PAYLOAD, "payload"), value);
    }
    if let Some(argb) = a.color {
        let mut text = [0u8; 9];
        text[0] = b'#';
        for (i, b) in text[1..].iter_mut().enumerate() {
            *b = b"0123456789ABCDEF"[(argb >> (28 - 4 * i) & 0xF) as usize];
        }
        let text = std::str::from_utf8(&text).unwrap_or("#");
        by_id::annotate(key(&KEY_COLOR, "color"), AnnotationValue::Str(text));
    }
    if a.category != 0 {
        let named = domain
            .categories
            .get(a.category as usize)
            .and_then(OnceLock::get);
        let value = match named {
            Some(name) => AnnotationValue::Str(name),
            None => AnnotationValue::U64(u64::from(a.category)),
        };
        by_id::annotate(key(&KEY_CATEGORY, "category"), value);
    }
}

// ---------------------------------------------------------------------------------------
// The operations, shared by the NVTX handlers and the ROCTx exports.

/// Pushes a range of `domain`; returns its 0-based level, or -1 when too many are open.
#[inline(always)]
pub(crate) fn push(domain: &'static Domain, message: Message, attrs: Option<&Attributes>) -> c_int {
    let level = with_thread(|st| {
        if st.depth == MAX_DEPTH {
            TOO_DEEP.fetch_add(1, Ordering::Relaxed);
            return -1;
        }
        let level = st.domain_depth(domain) as c_int;
        let off = off_in_child();
        let id = if off {
            0
        } else {
            st.id(message, Kind::Region, domain)
        };
        let recorded = !off && st.buffer().begin(id);
        if recorded && st.last_folded {
            st.last_folded = false;
            if let Message::Ascii(raw) = message {
                let k = key(&RAW_NAME_KEY, "nvtx.name");
                by_id::annotate(k, AnnotationValue::Str(&raw.text()));
            }
        }
        st.stack[st.depth] = Open {
            domain: domain.index,
            id,
            recorded,
        };
        st.depth += 1;
        if let Some(d) = st.domain_depth.get_mut(domain.index as usize) {
            *d += 1;
        }
        if recorded {
            if let Some(a) = attrs {
                if a.payload.is_some() || a.color.is_some() || a.category != 0 {
                    annotate(a, domain);
                }
            }
        }
        level
    });
    level.unwrap_or(-1)
}

/// The fast path of [`push`] for an ASCII message with no attributes: the range's level, or
/// `None` having done nothing when [`push`] is needed (NULL or new message, too deep, not
/// collecting, a thread name to apply, the thread's first call, a full segment, a reentrant
/// call). Never panics (so the handlers call it outside `catch_unwind`): compares,
/// `slice::get`, relaxed loads, the TLS slot, `RefCell::try_borrow_mut`, the byte compare and
/// `ThreadBuffer::try_begin`.
///
/// # Safety
/// `text` is NULL or a valid NUL-terminated string.
#[inline(always)]
pub(crate) unsafe fn push_fast(domain: &'static Domain, text: *const c_char) -> Option<c_int> {
    if text.is_null() || !by_id::collecting() {
        return None;
    }
    let st = fast_tls::get(Slot::Nvtx).cast::<RefCell<NvtxThread>>();
    if st.is_null() {
        return None;
    }
    // SAFETY: as in `with_thread`.
    let mut st = unsafe { &*st }.try_borrow_mut().ok()?;
    if st.names_generation != NAMES_GENERATION.load(Ordering::Relaxed) || st.last_folded {
        return None;
    }
    let depth = st.depth;
    let index = domain.index as usize;
    let level = *st.domain_depth.get(index)?;
    let addr = text as usize;
    let key = Kind::Region as u32 | domain.index << 1;
    let e = *st
        .cache
        .get(((addr >> 3) ^ (addr >> 11) ^ key as usize) % CACHE_ENTRIES)?;
    // SAFETY: non-NULL and NUL-terminated per the contract. A string the word compare
    // cannot tell about (at a page's end) takes `push`, which compares it byte by byte.
    if e.ptr != addr || e.key != key || !unsafe { e.message.is_fast(text) } {
        return None;
    }
    let buffer = st.buffer?;
    if depth >= MAX_DEPTH || !buffer.try_begin(e.id) {
        return None;
    }
    let st = &mut *st;
    if let (Some(slot), Some(d)) = (st.stack.get_mut(depth), st.domain_depth.get_mut(index)) {
        *slot = Open {
            domain: domain.index,
            id: e.id,
            recorded: true,
        };
        *d = level + 1;
    }
    st.depth = depth + 1;
    Some(level as c_int)
}

/// The fast path of [`pop`]: the innermost range of this thread is of `domain`. `None`
/// having done nothing otherwise (as [`push_fast`]).
#[inline(always)]
pub(crate) fn pop_fast(domain: &'static Domain) -> Option<c_int> {
    if !by_id::collecting() {
        return None;
    }
    let st = fast_tls::get(Slot::Nvtx).cast::<RefCell<NvtxThread>>();
    if st.is_null() {
        return None;
    }
    // SAFETY: as in `with_thread`.
    let mut st = unsafe { &*st }.try_borrow_mut().ok()?;
    if st.names_generation != NAMES_GENERATION.load(Ordering::Relaxed) {
        return None;
    }
    let top = st.depth.checked_sub(1)?;
    let open = *st.stack.get(top)?;
    let index = domain.index as usize;
    let level = st.domain_depth.get(index)?.checked_sub(1)?;
    if open.domain != domain.index {
        return None;
    }
    if open.recorded {
        let buffer = st.buffer?;
        if !buffer.try_end(open.id) {
            return None;
        }
    }
    let st = &mut *st;
    if let Some(d) = st.domain_depth.get_mut(index) {
        *d = level;
    }
    st.depth = top;
    Some(level as c_int)
}

/// Pops the innermost range of `domain` on this thread; returns the level it was pushed at,
/// or -1 when `domain` has no open range here (counted and reported).
#[inline(always)]
pub(crate) fn pop(domain: &'static Domain) -> c_int {
    let level = with_thread(|st| {
        let Some(at) = st.stack[..st.depth]
            .iter()
            .rposition(|o| o.domain == domain.index)
        else {
            return -1;
        };
        let open = st.stack[at];
        if at + 1 != st.depth {
            // Another domain's ranges are open inside this one: close this one, keep them.
            st.stack.copy_within(at + 1..st.depth, at);
        }
        st.depth -= 1;
        if let Some(d) = st.domain_depth.get_mut(domain.index as usize) {
            *d -= 1;
        }
        if open.recorded && !off_in_child() {
            st.buffer().end(open.id);
        }
        st.domain_depth(domain) as c_int
    });
    match level {
        Some(level) if level >= 0 => level,
        _ => {
            unbalanced_pop(domain);
            -1
        }
    }
}

#[cold]
#[inline(never)]
fn unbalanced_pop(domain: &Domain) {
    if off_in_child() {
        return;
    }
    register_metadata();
    if UNBALANCED_POPS.fetch_add(1, Ordering::Relaxed) == 0 {
        eprintln!(
            "metron: a range pop found no open range of domain {} on thread {} (ignored; \
             counted as `nvtx.unbalanced_pops` in metadata.json)",
            domain.label(),
            sys::gettid()
        );
    }
}

/// Records an instant.
#[inline(always)]
pub(crate) fn mark(domain: &'static Domain, message: Message) {
    if off_in_child() {
        return;
    }
    with_thread(|st| {
        let id = st.id(message, Kind::Mark, domain);
        by_id::mark(id);
    });
}

/// Starts an async range; returns its range id (never 0).
#[inline(always)]
pub(crate) fn start(domain: &'static Domain, message: Message) -> u64 {
    let seq = u64::from(RANGE_SEQUENCE.fetch_add(1, Ordering::Relaxed) & 0x7fff_ffff);
    if off_in_child() {
        return seq;
    }
    with_thread(|st| {
        let id = st.id(message, Kind::Region, domain);
        let range = u64::from(id) << 32 | seq;
        if by_id::async_begin(id, range | RECORDED) {
            range | RECORDED
        } else {
            range
        }
    })
    .unwrap_or(seq)
}

/// Ends the async range `range` (from [`start`], any thread).
#[inline(always)]
pub(crate) fn end(range: u64) {
    if range & RECORDED == 0 || off_in_child() {
        return;
    }
    let id = (range >> 32) as u32;
    if !ids::is_region(id) {
        INVALID_ENDS.fetch_add(1, Ordering::Relaxed);
        register_metadata();
        return;
    }
    by_id::async_end(id, range);
}

/// Names thread `tid` (the calling one, or another).
pub(crate) fn name_thread(tid: u32, name: &str) {
    if off_in_child() {
        return;
    }
    if tid == 0 || tid == sys::gettid() {
        by_id::thread_name(name);
        return;
    }
    OTHER_NAMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(tid, name.to_string());
    NAMES_GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// `nvtxDomainCreate*`: the domain named `name` (the same handle for the same name).
fn create_domain(name: String) -> &'static Domain {
    let mut domains = DOMAINS.lock().unwrap_or_else(|e| e.into_inner());
    let domains = domains.get_or_insert_with(HashMap::new);
    if let Some(d) = domains.get(&name) {
        return d;
    }
    let index = NEXT_DOMAIN.fetch_add(1, Ordering::Relaxed);
    let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
    let domain: &'static Domain = Box::leak(Box::new(Domain::new(index, Some(leaked))));
    domains.insert(name, domain);
    domain
}

/// `nvtxDomainRegisterString*`: interned once, for regions and marks; the handle is never freed.
fn register_string(domain: &'static Domain, text: &str) -> &'static Registered {
    let r = Registered {
        region: intern(text, Kind::Region, domain).0,
        mark: intern(text, Kind::Mark, domain).0,
    };
    Box::leak(Box::new(r))
}

/// `nvtxNameCategory*`: the first name given to a category is kept.
fn name_category(domain: &Domain, category: u32, name: String) {
    if let Some(slot) = domain.categories.get(category as usize) {
        let _ = slot.set(name);
    }
}

pub(crate) fn register_metadata() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        metron::add_metadata_section("nvtx", || {
            let mut domains: Vec<String> = DOMAINS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            domains.sort();
            serde_json::json!({
                "initializations": INITS.load(Ordering::Relaxed),
                "unbalanced_pops": UNBALANCED_POPS.load(Ordering::Relaxed),
                "too_deep": TOO_DEEP.load(Ordering::Relaxed),
                "invalid_range_ends": INVALID_ENDS.load(Ordering::Relaxed),
                "domains": domains,
                "names_folded": FOLDED.load(Ordering::Relaxed),
                "fold": std::env::var("METRON_NVTX_FOLD").unwrap_or_else(|_| "pytorch".into()),
            })
        });
    });
}
