//! The NVTX v3 injection ABI, as the `nvtx3` headers declare it (`nvToolsExt.h`,
//! `nvtxDetail/nvtxTypes.h`): the entry point, the handlers NVTX calls, and every unsafe
//! operation on what NVTX passes (attribute structures, C and wide strings, the handles this
//! library gave out, the callback tables). The handlers turn raw pointers into the safe
//! [`CText`], [`WideText`] and handle references, then call the safe core in `mod.rs`.
//!
//! Layout checked against the headers of the `nvidia-nvtx` 13.0.85 wheel: the tests in
//! `tests/tests/nvtx_*.rs` compile C and C++ programs with those headers and call every
//! handler through them.

use super::{
    create_domain, end, guarded, mark, name_category, name_thread, pop, push, register_string,
    start, Domain, Message, Registered, DEFAULT_DOMAIN, INITS,
};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

/// `NVTX_ETID_CALLBACKS`.
pub(crate) const ETID_CALLBACKS: u32 = 1;
/// `NVTX_CB_MODULE_CORE`.
pub(crate) const MODULE_CORE: c_int = 1;
/// `NVTX_CB_MODULE_CORE2`.
pub(crate) const MODULE_CORE2: c_int = 5;

/// `NVTX_CBID_CORE_*`.
pub(crate) mod core {
    pub(crate) const MARK_EX: usize = 1;
    pub(crate) const MARK_A: usize = 2;
    pub(crate) const MARK_W: usize = 3;
    pub(crate) const RANGE_START_EX: usize = 4;
    pub(crate) const RANGE_START_A: usize = 5;
    pub(crate) const RANGE_START_W: usize = 6;
    pub(crate) const RANGE_END: usize = 7;
    pub(crate) const RANGE_PUSH_EX: usize = 8;
    pub(crate) const RANGE_PUSH_A: usize = 9;
    pub(crate) const RANGE_PUSH_W: usize = 10;
    pub(crate) const RANGE_POP: usize = 11;
    pub(crate) const NAME_CATEGORY_A: usize = 12;
    pub(crate) const NAME_CATEGORY_W: usize = 13;
    pub(crate) const NAME_OS_THREAD_A: usize = 14;
    pub(crate) const NAME_OS_THREAD_W: usize = 15;
}

/// `NVTX_CBID_CORE2_*`.
pub(crate) mod core2 {
    pub(crate) const DOMAIN_MARK_EX: usize = 1;
    pub(crate) const DOMAIN_RANGE_START_EX: usize = 2;
    pub(crate) const DOMAIN_RANGE_END: usize = 3;
    pub(crate) const DOMAIN_RANGE_PUSH_EX: usize = 4;
    pub(crate) const DOMAIN_RANGE_POP: usize = 5;
    pub(crate) const DOMAIN_NAME_CATEGORY_A: usize = 8;
    pub(crate) const DOMAIN_NAME_CATEGORY_W: usize = 9;
    pub(crate) const DOMAIN_REGISTER_STRING_A: usize = 10;
    pub(crate) const DOMAIN_REGISTER_STRING_W: usize = 11;
    pub(crate) const DOMAIN_CREATE_A: usize = 12;
    pub(crate) const DOMAIN_CREATE_W: usize = 13;
    pub(crate) const DOMAIN_DESTROY: usize = 14;
}

/// `nvtxMessageType_t`.
pub(crate) const MESSAGE_ASCII: i32 = 1;
pub(crate) const MESSAGE_UNICODE: i32 = 2;
pub(crate) const MESSAGE_REGISTERED: i32 = 3;
/// `NVTX_COLOR_ARGB`.
pub(crate) const COLOR_ARGB: i32 = 1;
/// `nvtxPayloadType_t`.
pub(crate) mod payload {
    pub(crate) const U64: i32 = 1;
    pub(crate) const I64: i32 = 2;
    pub(crate) const F64: i32 = 3;
    pub(crate) const U32: i32 = 4;
    pub(crate) const I32: i32 = 5;
    pub(crate) const F32: i32 = 6;
}

/// `nvtxEventAttributes_v2` (48 bytes on LP64).
#[repr(C)]
pub(crate) struct EventAttributes {
    pub(crate) version: u16,
    pub(crate) size: u16,
    pub(crate) category: u32,
    pub(crate) color_type: i32,
    pub(crate) color: u32,
    pub(crate) payload_type: i32,
    pub(crate) reserved0: i32,
    /// `payload_t` union: read as the type `payload_type` names.
    pub(crate) payload: u64,
    pub(crate) message_type: i32,
    /// `nvtxMessageValue_t` union: a `const char*`, `const wchar_t*` or string handle.
    pub(crate) message: *const c_void,
}

const _: () = assert!(std::mem::size_of::<EventAttributes>() == 48);
const _: () = assert!(std::mem::offset_of!(EventAttributes, payload) == 24);
const _: () = assert!(std::mem::offset_of!(EventAttributes, message) == 40);

/// Bytes of the attribute fields Metron reads (up to and including `message`).
const ATTRIBUTES_READ: u16 = 48;

/// `NvtxGetExportTableFunc_t`.
pub(crate) type GetExportTable = Option<unsafe extern "C" fn(u32) -> *const c_void>;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table: Option<
        unsafe extern "C" fn(c_int, *mut *mut *mut NvtxFunctionPointer, *mut c_uint) -> c_int,
    >,
}

/// `NvtxFunctionPointer`: a slot the NVTX copy calls through.
pub(crate) type NvtxFunctionPointer = Option<unsafe extern "C" fn()>;

/// The fields of an event's attributes that Metron uses.
#[derive(Clone, Copy)]
pub(crate) struct Attributes {
    pub(crate) category: u32,
    /// ARGB, when the colour is set.
    pub(crate) color: Option<u32>,
    /// (payload type, raw 8 bytes), when a payload is set.
    pub(crate) payload: Option<(i32, u64)>,
    pub(crate) message_type: i32,
    pub(crate) message: *const c_void,
}

/// Reads an event's attributes; `None` for a NULL pointer or a structure too small to hold
/// the message (an older or malformed caller).
///
/// # Safety
/// `attr` is NULL or points to an `nvtxEventAttributes_t` whose first `size` bytes are valid.
#[inline(always)]
pub(crate) unsafe fn attributes(attr: *const EventAttributes) -> Option<Attributes> {
    if attr.is_null() {
        return None;
    }
    // SAFETY:
    // - `attr` is non-NULL and points to at least `size` valid bytes (caller's contract);
    // - every field is read only once `size` says the caller's structure holds it.
    unsafe {
        let a = &*attr;
        if a.size < ATTRIBUTES_READ {
            return None;
        }
        Some(Attributes {
            category: a.category,
            color: (a.color_type == COLOR_ARGB).then_some(a.color),
            payload: (a.payload_type != 0).then_some((a.payload_type, a.payload)),
            message_type: a.message_type,
            message: a.message,
        })
    }
}

/// The text of a wide (`wchar_t`, UTF-32 on Linux) NUL-terminated string, at most `max`
/// characters; invalid code points become U+FFFD.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated `wchar_t` string.
unsafe fn wide_text(ptr: *const i32, max: usize) -> String {
    let mut out = String::new();
    if ptr.is_null() {
        return out;
    }
    let mut i = 0;
    while i < max {
        // SAFETY: no terminator was seen before index `i`, so element `i` is in the string.
        let c = unsafe { *ptr.add(i) };
        if c == 0 {
            break;
        }
        out.push(char::from_u32(c as u32).unwrap_or('\u{FFFD}'));
        i += 1;
    }
    out
}

/// A NUL-terminated C string passed by the application, valid for the call that passed it
/// (never kept beyond: the name cache keeps only its address).
#[derive(Clone, Copy)]
pub(crate) struct CText(NonNull<c_char>);

impl CText {
    /// `None` for NULL.
    ///
    /// # Safety
    /// `ptr` is NULL or a NUL-terminated string that stays valid while the value is used.
    #[inline(always)]
    pub(crate) unsafe fn new(ptr: *const c_char) -> Option<CText> {
        NonNull::new(ptr.cast_mut()).map(CText)
    }

    /// The string's address (the name cache's key).
    #[inline(always)]
    pub(crate) fn addr(self) -> usize {
        self.0.as_ptr() as usize
    }

    /// The string.
    #[inline(always)]
    pub(crate) fn ptr(self) -> *const c_char {
        self.0.as_ptr()
    }

    /// The text (lossy UTF-8).
    pub(crate) fn text(&self) -> std::borrow::Cow<'_, str> {
        // SAFETY: non-NULL and NUL-terminated (constructor's contract).
        unsafe { CStr::from_ptr(self.0.as_ptr()) }.to_string_lossy()
    }
}

/// A NUL-terminated `wchar_t` string passed by the application, valid for the call.
#[derive(Clone, Copy)]
pub(crate) struct WideText(NonNull<i32>);

impl WideText {
    /// `None` for NULL.
    ///
    /// # Safety
    /// `ptr` is NULL or a NUL-terminated `wchar_t` string that stays valid while the value is
    /// used.
    #[inline(always)]
    pub(crate) unsafe fn new(ptr: *const i32) -> Option<WideText> {
        NonNull::new(ptr.cast_mut()).map(WideText)
    }

    /// The text, at most 4096 characters.
    pub(crate) fn text(&self) -> String {
        // SAFETY: NUL-terminated (constructor's contract).
        unsafe { wide_text(self.0.as_ptr(), 4096) }
    }
}

/// The message of a NUL-terminated C string (or `Missing` for NULL).
///
/// # Safety
/// `ptr` is NULL or NUL-terminated, valid during the call.
#[inline(always)]
pub(crate) unsafe fn ascii(ptr: *const c_char) -> Message {
    // SAFETY: forwarded contract.
    unsafe { CText::new(ptr) }.map_or(Message::Missing, Message::Ascii)
}

/// The message of a wide string (or `Missing` for NULL).
///
/// # Safety
/// `ptr` is NULL or a NUL-terminated `wchar_t` string, valid during the call.
#[inline(always)]
unsafe fn wide(ptr: *const i32) -> Message {
    // SAFETY: forwarded contract.
    unsafe { WideText::new(ptr) }.map_or(Message::Missing, Message::Wide)
}

/// The message of an event's attributes.
///
/// # Safety
/// The attributes come from NVTX (their message is what `message_type` says, valid during
/// the call; a registered string is a handle this library returned).
#[inline(always)]
pub(crate) unsafe fn message(a: &Attributes) -> Message {
    match a.message_type {
        // SAFETY: forwarded contract.
        MESSAGE_ASCII => unsafe { ascii(a.message.cast()) },
        // SAFETY: forwarded contract.
        MESSAGE_UNICODE => unsafe { wide(a.message.cast()) },
        MESSAGE_REGISTERED if !a.message.is_null() => {
            // SAFETY: registered-string handles are leaked `Registered`s returned by
            // `register_string`, valid for the life of the process.
            Message::Registered(unsafe { &*a.message.cast::<Registered>() })
        }
        _ => Message::Missing,
    }
}

/// The domain of a handle (NULL: the default domain).
///
/// # Safety
/// `handle` is NULL or a domain handle this library returned.
#[inline(always)]
unsafe fn domain_of(handle: *const c_void) -> &'static Domain {
    if handle.is_null() {
        &DEFAULT_DOMAIN
    } else {
        // SAFETY: non-NULL domain handles are leaked `Domain`s from `create_domain`, never
        // freed (`nvtxDomainDestroy` does nothing).
        unsafe { &*handle.cast::<Domain>() }
    }
}

/// Installs `handlers` (callback id, function) into module `module`'s table of the NVTX copy
/// behind `get`. Returns false when the copy offers no callback table or no such module.
///
/// # Safety
/// `get` is the `NvtxGetExportTableFunc_t` NVTX passed to `InitializeInjectionNvtx2`, and each
/// handler has the signature NVTX declares for its callback id (the caller casts it).
pub(crate) unsafe fn install(
    get: GetExportTable,
    module: c_int,
    handlers: &[(usize, unsafe extern "C" fn())],
) -> bool {
    let Some(get) = get else { return false };
    // SAFETY: `get` is NVTX's export-table getter; NVTX_ETID_CALLBACKS is a valid id.
    let table = unsafe { get(ETID_CALLBACKS) }.cast::<ExportTableCallbacks>();
    if table.is_null() {
        return false;
    }
    // SAFETY: a non-NULL callbacks table is an `NvtxExportTableCallbacks` that lives as long
    // as the NVTX copy; `struct_size` says whether it holds the getter.
    let get_module = unsafe {
        if (*table).struct_size < std::mem::size_of::<ExportTableCallbacks>() {
            return false;
        }
        (*table).get_module_function_table
    };
    let Some(get_module) = get_module else {
        return false;
    };
    let mut slots: *mut *mut NvtxFunctionPointer = std::ptr::null_mut();
    let mut size: c_uint = 0;
    // SAFETY: both out-pointers are valid locals; NVTX fills them for a known module.
    if unsafe { get_module(module, &mut slots, &mut size) } == 0 || slots.is_null() {
        return false;
    }
    for &(id, handler) in handlers {
        if id >= size as usize {
            continue;
        }
        // SAFETY: `slots` has `size` entries (NVTX's contract), `id < size`; each non-NULL
        // entry is the address of the NVTX copy's function-pointer slot for callback `id`,
        // which NVTX reads only after `InitializeInjectionNvtx2` returns.
        unsafe {
            let slot = *slots.add(id);
            if !slot.is_null() {
                *slot = Some(handler);
            }
        }
    }
    true
}

// ---------------------------------------------------------------------------------------
// The handlers NVTX calls (signatures: `nvtxTypes.h`, one per callback id). Each body runs under
// `guarded`: a panic never unwinds into the application, which then gets NVTX's error value.

unsafe extern "C" fn mark_ex(attr: *const EventAttributes) {
    guarded((), || {
        // SAFETY: NVTX passes NULL or valid attributes whose message is what its type says.
        if let Some(a) = unsafe { attributes(attr) } {
            // SAFETY: as above.
            mark(&DEFAULT_DOMAIN, unsafe { message(&a) });
        }
    })
}

unsafe extern "C" fn mark_a(text: *const c_char) {
    // SAFETY: NVTX passes NULL or a NUL-terminated string, valid during the call.
    guarded((), || mark(&DEFAULT_DOMAIN, unsafe { ascii(text) }))
}

unsafe extern "C" fn mark_w(text: *const i32) {
    // SAFETY: NVTX passes NULL or a NUL-terminated wide string, valid during the call.
    guarded((), || mark(&DEFAULT_DOMAIN, unsafe { wide(text) }))
}

unsafe extern "C" fn range_start_ex(attr: *const EventAttributes) -> u64 {
    guarded(0, || {
        // SAFETY: as in `mark_ex`.
        match unsafe { attributes(attr) } {
            // SAFETY: as in `mark_ex`.
            Some(a) => start(&DEFAULT_DOMAIN, unsafe { message(&a) }),
            None => 0,
        }
    })
}

unsafe extern "C" fn range_start_a(text: *const c_char) -> u64 {
    // SAFETY: as in `mark_a`.
    guarded(0, || start(&DEFAULT_DOMAIN, unsafe { ascii(text) }))
}

unsafe extern "C" fn range_start_w(text: *const i32) -> u64 {
    // SAFETY: as in `mark_w`.
    guarded(0, || start(&DEFAULT_DOMAIN, unsafe { wide(text) }))
}

unsafe extern "C" fn range_end(range: u64) {
    guarded((), || end(range))
}

unsafe extern "C" fn range_push_ex(attr: *const EventAttributes) -> c_int {
    // SAFETY: as in `mark_ex` (`attributes` only reads).
    match unsafe { attributes(attr) } {
        // SAFETY: as in `mark_ex`; `push_with` guards what can panic.
        Some(a) => unsafe { super::push_with(&DEFAULT_DOMAIN, &a) },
        None => -1,
    }
}

unsafe extern "C" fn range_push_a(text: *const c_char) -> c_int {
    // The fast path cannot panic (see `push_fast`); everything else is guarded, out of line
    // so that the fast path needs no stack frame.
    // SAFETY: NULL or NUL-terminated (NVTX's contract).
    match unsafe { super::push_fast(super::DEFAULT_INDEX, text) } {
        Some(level) => level,
        // SAFETY: as above.
        None => unsafe { range_push_a_long(text) },
    }
}

/// A cached name that needs the longer compare, else the slow path (no `catch_unwind` here,
/// so the long names' path needs only a small frame: `push_long` cannot panic either).
#[inline(never)]
unsafe fn range_push_a_long(text: *const c_char) -> c_int {
    // SAFETY: NULL or NUL-terminated (NVTX's contract).
    match unsafe { super::push_long(super::DEFAULT_INDEX, text) } {
        Some(level) => level,
        // SAFETY: as above.
        None => unsafe { range_push_a_slow(text) },
    }
}

#[cold]
#[inline(never)]
unsafe fn range_push_a_slow(text: *const c_char) -> c_int {
    // SAFETY: as in `mark_a`.
    guarded(-1, || push(&DEFAULT_DOMAIN, unsafe { ascii(text) }, None))
}

unsafe extern "C" fn range_push_w(text: *const i32) -> c_int {
    // SAFETY: as in `mark_w`.
    guarded(-1, || push(&DEFAULT_DOMAIN, unsafe { wide(text) }, None))
}

unsafe extern "C" fn range_pop() -> c_int {
    // The fast path cannot panic (see `pop_fast`); everything else is guarded, out of line.
    match super::pop_fast(super::DEFAULT_INDEX) {
        Some(level) => level,
        None => range_pop_slow(),
    }
}

#[cold]
#[inline(never)]
fn range_pop_slow() -> c_int {
    guarded(-1, || pop(&DEFAULT_DOMAIN))
}

unsafe extern "C" fn name_category_a(category: u32, name: *const c_char) {
    guarded((), || {
        // SAFETY: as in `mark_a`.
        if let Some(name) = unsafe { CText::new(name) } {
            name_category(&DEFAULT_DOMAIN, category, name.text().into_owned());
        }
    })
}

unsafe extern "C" fn name_category_w(category: u32, name: *const i32) {
    guarded((), || {
        // SAFETY: as in `mark_w`.
        if let Some(name) = unsafe { WideText::new(name) } {
            name_category(&DEFAULT_DOMAIN, category, name.text());
        }
    })
}

unsafe extern "C" fn name_os_thread_a(tid: u32, name: *const c_char) {
    guarded((), || {
        // SAFETY: as in `mark_a`.
        if let Some(name) = unsafe { CText::new(name) } {
            name_thread(tid, &name.text());
        }
    })
}

unsafe extern "C" fn name_os_thread_w(tid: u32, name: *const i32) {
    guarded((), || {
        // SAFETY: as in `mark_w`.
        if let Some(name) = unsafe { WideText::new(name) } {
            name_thread(tid, &name.text());
        }
    })
}

unsafe extern "C" fn domain_mark_ex(domain: *const c_void, attr: *const EventAttributes) {
    guarded((), || {
        // SAFETY: as in `mark_ex`.
        if let Some(a) = unsafe { attributes(attr) } {
            // SAFETY: NVTX passes a domain handle this library returned, or NULL; the message
            // as in `mark_ex`.
            unsafe { mark(domain_of(domain), message(&a)) };
        }
    })
}

unsafe extern "C" fn domain_range_start_ex(
    domain: *const c_void,
    attr: *const EventAttributes,
) -> u64 {
    guarded(0, || {
        // SAFETY: as in `mark_ex`.
        match unsafe { attributes(attr) } {
            // SAFETY: as in `domain_mark_ex`.
            Some(a) => unsafe { start(domain_of(domain), message(&a)) },
            None => 0,
        }
    })
}

unsafe extern "C" fn domain_range_end(_domain: *const c_void, range: u64) {
    guarded((), || end(range))
}

unsafe extern "C" fn domain_range_push_ex(
    domain: *const c_void,
    attr: *const EventAttributes,
) -> c_int {
    // SAFETY: as in `mark_ex` (`attributes` only reads).
    match unsafe { attributes(attr) } {
        // SAFETY: as in `domain_mark_ex`; `push_with` guards what can panic.
        Some(a) => unsafe { super::push_with(domain_of(domain), &a) },
        None => -1,
    }
}

unsafe extern "C" fn domain_range_pop(domain: *const c_void) -> c_int {
    // SAFETY: a domain handle this library returned, or NULL.
    let domain = unsafe { domain_of(domain) };
    // The fast path cannot panic (see `pop_fast`); the rest is guarded.
    match super::pop_fast(domain.index) {
        Some(level) => level,
        None => guarded(-1, || pop(domain)),
    }
}

unsafe extern "C" fn domain_name_category_a(
    domain: *const c_void,
    category: u32,
    name: *const c_char,
) {
    guarded((), || {
        // SAFETY: as in `domain_mark_ex` and `mark_a`.
        if let Some(name) = unsafe { CText::new(name) } {
            // SAFETY: as in `domain_mark_ex`.
            let domain = unsafe { domain_of(domain) };
            name_category(domain, category, name.text().into_owned());
        }
    })
}

unsafe extern "C" fn domain_name_category_w(
    domain: *const c_void,
    category: u32,
    name: *const i32,
) {
    guarded((), || {
        // SAFETY: as in `domain_mark_ex` and `mark_w`.
        if let Some(name) = unsafe { WideText::new(name) } {
            // SAFETY: as in `domain_mark_ex`.
            let domain = unsafe { domain_of(domain) };
            name_category(domain, category, name.text());
        }
    })
}

unsafe extern "C" fn domain_register_string_a(
    domain: *const c_void,
    text: *const c_char,
) -> *const c_void {
    guarded(std::ptr::null(), || {
        // SAFETY: as in `mark_a`.
        let Some(text) = (unsafe { CText::new(text) }) else {
            return std::ptr::null();
        };
        // SAFETY: as in `domain_mark_ex`.
        let domain = unsafe { domain_of(domain) };
        (register_string(domain, &text.text()) as *const Registered).cast()
    })
}

unsafe extern "C" fn domain_register_string_w(
    domain: *const c_void,
    text: *const i32,
) -> *const c_void {
    guarded(std::ptr::null(), || {
        // SAFETY: as in `mark_w`.
        let Some(text) = (unsafe { WideText::new(text) }) else {
            return std::ptr::null();
        };
        // SAFETY: as in `domain_mark_ex`.
        let domain = unsafe { domain_of(domain) };
        (register_string(domain, &text.text()) as *const Registered).cast()
    })
}

unsafe extern "C" fn domain_create_a(name: *const c_char) -> *const c_void {
    guarded(std::ptr::null(), || {
        // SAFETY: as in `mark_a`.
        match unsafe { CText::new(name) } {
            Some(name) => (create_domain(name.text().into_owned()) as *const Domain).cast(),
            None => std::ptr::null(),
        }
    })
}

unsafe extern "C" fn domain_create_w(name: *const i32) -> *const c_void {
    guarded(std::ptr::null(), || {
        // SAFETY: as in `mark_w`.
        match unsafe { WideText::new(name) } {
            Some(name) => (create_domain(name.text()) as *const Domain).cast(),
            None => std::ptr::null(),
        }
    })
}

unsafe extern "C" fn domain_destroy(_domain: *const c_void) {
    // Handles stay valid (ranges of the domain may still be open): nothing to do.
}

/// Erases a handler's signature for the callback table (NVTX calls it back through the
/// signature of its callback id).
macro_rules! erased {
    ($f:expr) => {{
        let f = $f as *const ();
        // SAFETY: a function pointer turned into a function pointer of another signature, of
        // the same size; NVTX calls it only through the signature of its callback id, which
        // is `$f`'s (checked by the C tests that call every one of them).
        unsafe { std::mem::transmute::<*const (), unsafe extern "C" fn()>(f) }
    }};
}

/// The NVTX v3 injection entry point: NVTX calls it once per NVTX copy in the process (from
/// the first NVTX call of that copy) when `NVTX_INJECTION64_PATH` names this library.
/// Installs Metron's handlers and returns 1, or 0 (NVTX stays a no-op in that copy) when
/// Metron is disabled (`METRON_ENABLED=false`) or the copy offers no callback table.
///
/// # Safety
/// `get_export_table` is NVTX's export-table getter.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(get_export_table: GetExportTable) -> c_int {
    guarded(0, || {
        INITS.fetch_add(1, Ordering::Relaxed);
        super::register_metadata();
        if !metron::init() {
            return 0;
        }
        let core_handlers = [
            (core::MARK_EX, erased!(mark_ex)),
            (core::MARK_A, erased!(mark_a)),
            (core::MARK_W, erased!(mark_w)),
            (core::RANGE_START_EX, erased!(range_start_ex)),
            (core::RANGE_START_A, erased!(range_start_a)),
            (core::RANGE_START_W, erased!(range_start_w)),
            (core::RANGE_END, erased!(range_end)),
            (core::RANGE_PUSH_EX, erased!(range_push_ex)),
            (core::RANGE_PUSH_A, erased!(range_push_a)),
            (core::RANGE_PUSH_W, erased!(range_push_w)),
            (core::RANGE_POP, erased!(range_pop)),
            (core::NAME_CATEGORY_A, erased!(name_category_a)),
            (core::NAME_CATEGORY_W, erased!(name_category_w)),
            (core::NAME_OS_THREAD_A, erased!(name_os_thread_a)),
            (core::NAME_OS_THREAD_W, erased!(name_os_thread_w)),
        ];
        let core2_handlers = [
            (core2::DOMAIN_MARK_EX, erased!(domain_mark_ex)),
            (core2::DOMAIN_RANGE_START_EX, erased!(domain_range_start_ex)),
            (core2::DOMAIN_RANGE_END, erased!(domain_range_end)),
            (core2::DOMAIN_RANGE_PUSH_EX, erased!(domain_range_push_ex)),
            (core2::DOMAIN_RANGE_POP, erased!(domain_range_pop)),
            (
                core2::DOMAIN_NAME_CATEGORY_A,
                erased!(domain_name_category_a),
            ),
            (
                core2::DOMAIN_NAME_CATEGORY_W,
                erased!(domain_name_category_w),
            ),
            (
                core2::DOMAIN_REGISTER_STRING_A,
                erased!(domain_register_string_a),
            ),
            (
                core2::DOMAIN_REGISTER_STRING_W,
                erased!(domain_register_string_w),
            ),
            (core2::DOMAIN_CREATE_A, erased!(domain_create_a)),
            (core2::DOMAIN_CREATE_W, erased!(domain_create_w)),
            (core2::DOMAIN_DESTROY, erased!(domain_destroy)),
        ];
        // SAFETY: `get_export_table` comes from NVTX; each handler has the signature of its
        // callback id (nvtxTypes.h).
        let ok = unsafe {
            install(get_export_table, MODULE_CORE, &core_handlers)
                && install(get_export_table, MODULE_CORE2, &core2_handlers)
        };
        c_int::from(ok)
    })
}
