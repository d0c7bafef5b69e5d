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
mod thread;

use crate::ids;
use metron::by_id;
use metron::{AnnotationValue, CallsiteKind};
use std::collections::HashMap;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
pub(crate) use sys::CText;
use sys::{Attributes, WideText};
pub(crate) use thread::{pop_fast, push_fast, push_id_fast, push_long};
use thread::{with_thread, Slow};

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
            (None, ROCTX_INDEX) => "roctx",
            (None, _) => "(default)",
        }
    }
}

/// The index of the default NVTX domain (a NULL domain handle) and of ROCTx's.
pub(crate) const DEFAULT_INDEX: u32 = 0;
pub(crate) const ROCTX_INDEX: u32 = 1;
/// The default NVTX domain.
pub(crate) static DEFAULT_DOMAIN: Domain = Domain::new(DEFAULT_INDEX, None);
/// ROCTx ranges: their own stack, names without prefix.
pub(crate) static ROCTX_DOMAIN: Domain = Domain::new(ROCTX_INDEX, None);
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

/// The interned id of `message` as `kind` in `domain`, from this thread's cache when it is
/// there.
fn id_of(st: &mut Slow<'_>, message: Message, kind: Kind, domain: &'static Domain) -> u32 {
    st.cold.last_folded = false;
    match message {
        Message::Ascii(text) => {
            // SAFETY: `CText` is a valid NUL-terminated string.
            if let Some(id) = unsafe { st.cached_id(text.ptr(), kind, domain.index) } {
                return id;
            }
            let (id, interned) = intern(&text.text(), kind, domain);
            let folded = std::ptr::eq(interned, FOLDED_MARK);
            st.cold.last_folded = folded;
            st.cache(
                text.addr(),
                kind,
                domain.index,
                id,
                (!folded).then_some(interned),
            );
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

/// The words of interned name `id`'s message part `text`, made (and leaked) once per id for
/// every thread's cache.
fn name_words(id: u32, text: &[u8]) -> crate::c_words::NameWords {
    static WORDS: Mutex<Option<HashMap<u32, crate::c_words::NameWords>>> = Mutex::new(None);
    *WORDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .entry(id)
        .or_insert_with(|| crate::c_words::NameWords::leak(text))
}

/// Takes the name another thread gave thread `tid`, if any.
fn take_other_name(tid: u32) -> Option<String> {
    OTHER_NAMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .and_then(|m| m.remove(&tid))
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
        // SAFETY: every byte is '#' or an ASCII hex digit: valid UTF-8.
        let text = unsafe { std::str::from_utf8_unchecked(&text) };
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
pub(crate) fn push(domain: &'static Domain, message: Message, attrs: Option<&Attributes>) -> c_int {
    let level = with_thread(|st| {
        if st.depth() == thread::MAX_DEPTH {
            TOO_DEEP.fetch_add(1, Ordering::Relaxed);
            return -1;
        }
        let level = st.domain_depth(domain.index) as c_int;
        let off = off_in_child();
        let id = if off {
            0
        } else {
            id_of(st, message, Kind::Region, domain)
        };
        let recorded = !off && st.buffer().begin(id);
        if recorded && st.cold.last_folded {
            if let Message::Ascii(raw) = message {
                let k = key(&RAW_NAME_KEY, "nvtx.name");
                by_id::annotate(k, AnnotationValue::Str(&raw.text()));
            }
        }
        st.push_open(id, domain.index, recorded);
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

/// [`push`] with attributes (`nvtxRangePushEx`, `nvtxDomainRangePushEx`): the fast path for a
/// cached ASCII message or a registered string, then the annotations; else [`push`]. Guarded:
/// a panic (a bug in Metron) returns -1.
///
/// # Safety
/// `a`'s message is what its type says (NVTX's contract).
pub(crate) unsafe fn push_with(domain: &'static Domain, a: &Attributes) -> c_int {
    let fast = match a.message_type {
        // SAFETY: an ASCII message is NULL or NUL-terminated (NVTX's contract).
        sys::MESSAGE_ASCII => unsafe {
            push_fast(domain.index, a.message.cast())
                .or_else(|| push_long(domain.index, a.message.cast()))
        },
        sys::MESSAGE_REGISTERED if !a.message.is_null() => {
            // SAFETY: registered-string handles are leaked `Registered`s returned by
            // `register_string`, valid for the life of the process.
            push_id_fast(
                domain.index,
                unsafe { &*a.message.cast::<Registered>() }.region,
            )
        }
        _ => None,
    };
    guarded(-1, || match fast {
        Some(level) => {
            if a.payload.is_some() || a.color.is_some() || a.category != 0 {
                annotate(a, domain);
            }
            level
        }
        // SAFETY: forwarded contract.
        None => push(domain, unsafe { sys::message(a) }, Some(a)),
    })
}

/// Pops the innermost range of `domain` on this thread; returns the level it was pushed at,
/// or -1 when `domain` has no open range here (counted and reported).
pub(crate) fn pop(domain: &'static Domain) -> c_int {
    let level = with_thread(|st| {
        let (id, recorded) = st.pop_open(domain.index)?;
        if recorded && !off_in_child() {
            st.buffer().end(id);
        }
        Some(st.domain_depth(domain.index) as c_int)
    });
    match level {
        Some(Some(level)) => level,
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
            crate::sys::gettid()
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
        let id = id_of(st, message, Kind::Mark, domain);
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
        let id = id_of(st, message, Kind::Region, domain);
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
    if tid == 0 || tid == crate::sys::gettid() {
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
