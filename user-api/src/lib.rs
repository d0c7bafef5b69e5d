//! The C API of Metron: `libmetron.so`, `libmetron.a` and `include/metron/metron.h`.
//!
//! Every export is `#[no_mangle] extern "C"`, runs its body under `catch_unwind`, and returns a
//! documented `metron_status` (see [`errors`]). Misuse from C — a NULL name, an end without a
//! begin, an end that does not match the innermost open region — returns an error code,
//! records nothing, is counted in `metadata.json` (`c_api.errors`), and leaves every thread's
//! data intact: each thread keeps its own stack of open regions ([`thread_state`]), checked
//! before anything reaches the recording layer.
//!
//! Names are interned once per distinct name and cached per thread by address (confirmed by
//! content), so `metron_region_begin("solve")` takes no lock after its first call on a thread.
//!
//! The same library is the `LD_PRELOAD` runtime of `metron run` ([`preload`]).
//!
//! # Speed
//! `metron_region_begin` + `metron_region_end` through the shared library: see the README
//! section "C call overhead" (measured next to the Rust `scope!` figure).

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod errors;
mod exec;
mod ids;
mod preload;
mod thread_state;

use errors::*;
use metron::{by_id, AnnotationValue, CallsiteKind};
use thread_state::{Open, OpenKind, ThreadState};

/// `METRON_ABI_VERSION` of the header this library implements.
pub const ABI_VERSION: u32 = 1;

/// `METRON_INIT_START_STOPPED`.
pub const INIT_START_STOPPED: u32 = 1;

/// `METRON_ANNOTATION_*` values.
pub mod annotation_type {
    /// `value.string`.
    pub const STRING: u32 = 1;
    /// `value.int64`.
    pub const INT64: u32 = 2;
    /// `value.uint64`.
    pub const UINT64: u32 = 3;
    /// `value.float64`.
    pub const DOUBLE: u32 = 4;
    /// `value.pointer`.
    pub const POINTER: u32 = 5;
}

/// `metron_init_args`: grows at the end; callers pass `struct_size`.
#[repr(C)]
pub struct InitArgs {
    /// `sizeof(metron_init_args)` of the caller.
    pub struct_size: u32,
    /// `METRON_INIT_*` bits.
    pub flags: u32,
    /// NULL or the run folder template.
    pub output_path: *const c_char,
}

/// The value of a `metron_annotation`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union AnnotationData {
    /// `METRON_ANNOTATION_STRING`.
    pub string: *const c_char,
    /// `METRON_ANNOTATION_INT64`.
    pub int64: i64,
    /// `METRON_ANNOTATION_UINT64`.
    pub uint64: u64,
    /// `METRON_ANNOTATION_DOUBLE`.
    pub float64: f64,
    /// `METRON_ANNOTATION_POINTER`.
    pub pointer: *const c_void,
}

/// `metron_annotation`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Annotation {
    /// The key (never NULL).
    pub key: *const c_char,
    /// `METRON_ANNOTATION_*`.
    pub kind: u32,
    /// Zero.
    pub reserved: u32,
    /// The value, as `kind` says.
    pub value: AnnotationData,
}

/// Runs an export's body: catches panics, counts failures and records their message.
#[inline(always)]
fn call(f: impl FnOnce() -> Result<(), Failure>) -> Status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => OK,
        Ok(Err(failure)) => fail(failure),
        Err(_) => internal(),
    }
}

/// Runs a hot-path export's body, which reports its own failures ([`fail_in`]): catches
/// panics. The body returns a plain status, so the success path moves no error value around.
#[inline(always)]
fn call_fast(f: impl FnOnce() -> Status) -> Status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(status) => status,
        Err(_) => internal(),
    }
}

#[cold]
#[inline(never)]
fn internal() -> Status {
    fail(Failure::new(
        ERROR_INTERNAL,
        "internal error in Metron (a panic, reported above on stderr); the call did nothing",
    ))
}

/// Counts a failure and records its message (unless [`fail_in`] already did).
#[cold]
#[inline(never)]
fn fail(failure: Failure) -> Status {
    if failure.reported {
        return failure.status;
    }
    count(failure.status);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        thread_state::with(|st| st.set_error(&failure.message))
    }));
    failure.status
}

/// [`fail`] for a failure found while this thread's state is borrowed.
#[cold]
#[inline(never)]
fn fail_in(st: &mut ThreadState, failure: Failure) -> Status {
    count(failure.status);
    st.set_error(&failure.message);
    failure.status
}

/// Runs `f` with this thread's state.
#[inline(always)]
fn with_state(
    what: &'static str,
    f: impl FnOnce(&mut ThreadState) -> Result<(), Failure>,
) -> Result<(), Failure> {
    thread_state::with(f).unwrap_or_else(|| Err(reentrant(what)))
}

/// Runs `f` with this thread's state (hot path: `f` reports its failures with [`fail_in`]).
#[inline(always)]
fn with_state_fast(what: &'static str, f: impl FnOnce(&mut ThreadState) -> Status) -> Status {
    match thread_state::with(f) {
        Some(status) => status,
        None => fail(reentrant(what)),
    }
}

#[cold]
fn reentrant(what: &str) -> Failure {
    Failure::new(
        ERROR_REENTRANT,
        format!("{what}: called from a signal handler while this thread was inside Metron"),
    )
}

/// Turns a status already reported by a hot-path helper into a `Result`.
#[inline(always)]
fn reported(status: Status) -> Result<(), Failure> {
    if status == OK {
        Ok(())
    } else {
        Err(Failure::reported(status))
    }
}

/// True in a forked child whose Metron was turned off (every call is then a no-op).
#[inline(always)]
fn off_in_child() -> bool {
    metron::lifecycle::disabled_in_child()
}

#[cold]
fn null(what: &str) -> Failure {
    Failure::new(ERROR_NULL_ARGUMENT, format!("{what} is NULL"))
}

/// The text of a C string for messages.
///
/// # Safety
/// `ptr` is NULL or a valid NUL-terminated string.
unsafe fn text_of<'a>(ptr: *const c_char) -> std::borrow::Cow<'a, str> {
    if ptr.is_null() {
        return "(NULL)".into();
    }
    // SAFETY: non-NULL and NUL-terminated per the contract.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy()
}

/// Begins a region of `kind` on this thread. Hot path.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[inline(always)]
unsafe fn begin(what: &'static str, name: *const c_char, kind: OpenKind) -> Status {
    if name.is_null() {
        return fail(null(&format!("{what}: the name")));
    }
    if off_in_child() {
        return OK;
    }
    with_state_fast(what, |st| {
        // SAFETY: non-NULL and NUL-terminated per the caller's contract.
        let (id, interned) = unsafe { st.lookup(name, CallsiteKind::Region) };
        if st.is_full() {
            return fail_in(st, too_deep(what));
        }
        let recorded = st.buffer().begin(id);
        st.push(Open {
            id,
            kind,
            recorded,
            by_id: false,
            name: interned,
        });
        OK
    })
}

/// Begins region `id` (from `metron_region_id`) on this thread. Hot path: no name to check.
#[inline(always)]
fn begin_id(what: &'static str, id: u32) -> Status {
    if !ids::is_region(id) {
        return fail(bad_id(what, id));
    }
    if off_in_child() {
        return OK;
    }
    with_state_fast(what, |st| {
        if st.is_full() {
            return fail_in(st, too_deep(what));
        }
        let recorded = st.buffer().begin(id);
        st.push(Open {
            id,
            kind: OpenKind::Region,
            recorded,
            by_id: true,
            name: &[],
        });
        OK
    })
}

/// Ends region `id`, which must be the innermost open region (begun by id or by name). Hot
/// path: one integer compare against the open-region stack.
#[inline(always)]
fn end_id(what: &'static str, id: u32) -> Status {
    if off_in_child() {
        return if id == 0 { fail(bad_id(what, id)) } else { OK };
    }
    with_state_fast(what, |st| match st.top() {
        Some(top) if top.id == id && top.kind == OpenKind::Region => {
            st.pop();
            if top.recorded {
                st.buffer().end(id);
            }
            OK
        }
        top => {
            let failure = end_id_failure(what, id, top);
            fail_in(st, failure)
        }
    })
}

/// Why `metron_region_end_id(id)` failed with `top` innermost.
#[cold]
#[inline(never)]
fn end_id_failure(what: &str, id: u32, top: Option<Open>) -> Failure {
    if !ids::is_region(id) {
        return bad_id(what, id);
    }
    let shown = format!("({id} = \"{}\")", String::from_utf8_lossy(ids::name_of(id)));
    match top {
        None => Failure::new(
            ERROR_NO_OPEN_REGION,
            format!("{what}{shown}: no region is open on this thread (end without begin)"),
        ),
        Some(top) => mismatch_failure(what, &shown, top),
    }
}

#[cold]
fn bad_id(what: &str, id: u32) -> Failure {
    Failure::new(
        ERROR_INVALID_ARGUMENT,
        format!("{what}({id}): not a region id (0, or not returned by metron_region_id); nothing was done"),
    )
}

#[cold]
fn too_deep(what: &str) -> Failure {
    Failure::new(
        ERROR_TOO_DEEP,
        format!(
            "{what}: {} regions are already open on this thread (the limit); nothing was begun",
            thread_state::MAX_DEPTH
        ),
    )
}

/// Ends the innermost open region, which must be of `kind` (and named `name` when given).
/// Hot path.
///
/// # Safety
/// `name` is None or a NULL or valid NUL-terminated string.
#[inline(always)]
unsafe fn end(what: &'static str, name: Option<*const c_char>, kind: OpenKind) -> Status {
    if name.is_some_and(|n| n.is_null()) {
        return fail(null(&format!("{what}: the name")));
    }
    if off_in_child() {
        return OK;
    }
    with_state_fast(what, |st| {
        let Some(top) = st.top() else {
            return fail_in(st, no_open(what, name));
        };
        // SAFETY: `n` is non-NULL (checked above) and NUL-terminated per the contract.
        let name_matches = name.is_none_or(|n| unsafe {
            thread_state::same_name(
                n,
                if top.by_id {
                    ids::name_of(top.id)
                } else {
                    top.name
                },
            )
        });
        if top.kind != kind || !name_matches {
            // SAFETY: as above.
            let failure = unsafe { mismatch(what, name, top) };
            return fail_in(st, failure);
        }
        st.pop();
        if top.recorded {
            st.buffer().end(top.id);
        }
        OK
    })
}

/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[cold]
fn no_open(what: &str, name: Option<*const c_char>) -> Failure {
    let shown = match name {
        // SAFETY: checked non-NULL by the caller; NUL-terminated per the contract.
        Some(n) => format!("(\"{}\")", unsafe { text_of(n) }),
        None => "()".into(),
    };
    Failure::new(
        ERROR_NO_OPEN_REGION,
        format!("{what}{shown}: no region is open on this thread (end without begin)"),
    )
}

/// # Safety
/// `name` is None or a valid NUL-terminated string.
#[cold]
unsafe fn mismatch(what: &str, name: Option<*const c_char>, top: Open) -> Failure {
    let shown = match name {
        // SAFETY: per the contract.
        Some(n) => format!("(\"{}\")", unsafe { text_of(n) }),
        None => "()".into(),
    };
    mismatch_failure(what, &shown, top)
}

#[cold]
fn mismatch_failure(what: &str, shown: &str, top: Open) -> Failure {
    let (name, begun_with) = if top.by_id {
        (ids::name_of(top.id), "metron_region_begin_id")
    } else {
        (top.name, top.kind.begun_with())
    };
    Failure::new(
        ERROR_MISMATCHED_END,
        format!(
            "{what}{shown}: the innermost open region on this thread is \"{}\", begun with {begun_with}; nothing was ended",
            String::from_utf8_lossy(name),
        ),
    )
}

/// Records one annotation on the innermost open region.
///
/// # Safety
/// `a.key` and, for strings, `a.value.string` are NULL or valid NUL-terminated strings.
unsafe fn annotate_one(st: &mut ThreadState, what: &str, a: &Annotation) -> Result<(), Failure> {
    if a.key.is_null() {
        return Err(null(&format!("{what}: the annotation key")));
    }
    let mut hex = [0u8; 18];
    // SAFETY: the union field read is the one `kind` names, as the C contract requires.
    let value = unsafe {
        match a.kind {
            annotation_type::STRING => {
                if a.value.string.is_null() {
                    return Err(null(&format!("{what}: the string value")));
                }
                None
            }
            annotation_type::INT64 => Some(AnnotationValue::I64(a.value.int64)),
            annotation_type::UINT64 => Some(AnnotationValue::U64(a.value.uint64)),
            annotation_type::DOUBLE => Some(AnnotationValue::F64(a.value.float64)),
            annotation_type::POINTER => Some(AnnotationValue::Str(pointer_text(
                a.value.pointer as usize,
                &mut hex,
            ))),
            other => {
                return Err(Failure::new(
                    ERROR_INVALID_ARGUMENT,
                    format!("{what}: annotation type {other} is not one of METRON_ANNOTATION_STRING (1), INT64 (2), UINT64 (3), DOUBLE (4), POINTER (5)"),
                ))
            }
        }
    };
    let Some(top) = st.top() else {
        return Err(Failure::new(
            ERROR_NO_OPEN_REGION,
            format!("{what}: no region is open on this thread to annotate"),
        ));
    };
    if !top.recorded {
        return Ok(());
    }
    // SAFETY: `key` is non-NULL (checked) and NUL-terminated per the contract.
    let (key, _) = unsafe { st.lookup(a.key, CallsiteKind::AnnotationKey) };
    match value {
        Some(v) => {
            by_id::annotate(key, v);
        }
        None => {
            // SAFETY: checked non-NULL above; NUL-terminated per the contract.
            let text = unsafe { CStr::from_ptr(a.value.string) }.to_string_lossy();
            by_id::annotate(key, AnnotationValue::Str(&text));
        }
    }
    Ok(())
}

/// `0x...` of an address, written into `buf`.
fn pointer_text(addr: usize, buf: &mut [u8; 18]) -> &str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = (usize::BITS - addr.leading_zeros()).div_ceil(4).max(1) as usize;
    buf[0] = b'0';
    buf[1] = b'x';
    for i in 0..digits {
        buf[2 + i] = DIGITS[(addr >> (4 * (digits - 1 - i))) & 0xF];
    }
    std::str::from_utf8(&buf[..2 + digits]).unwrap_or("0x?")
}

// ---- version and errors ---------------------------------------------------------------------

/// The ABI version of this library (`METRON_ABI_VERSION`).
#[no_mangle]
pub extern "C" fn metron_abi_version() -> u32 {
    ABI_VERSION
}

/// The library's version, NUL-terminated, in static storage.
#[no_mangle]
pub extern "C" fn metron_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// A one-line description of `status`, NUL-terminated, in static storage.
#[no_mangle]
pub extern "C" fn metron_status_string(status: Status) -> *const c_char {
    let text = usize::try_from(status)
        .ok()
        .and_then(|i| STATUSES.get(i))
        .map_or(UNKNOWN_STATUS, |(_, text)| text);
    text.as_ptr().cast()
}

/// The message of this thread's last failed call, or "" (valid until this thread's next
/// Metron call).
#[no_mangle]
pub extern "C" fn metron_last_error() -> *const c_char {
    catch_unwind(|| thread_state::with(|st| st.last_error()))
        .ok()
        .flatten()
        .unwrap_or(c"".as_ptr())
}

// ---- process ----------------------------------------------------------------------------------

/// Starts Metron now. `args` may be NULL.
///
/// # Safety
/// `args` is NULL or points to at least `args->struct_size` readable bytes laid out as
/// `metron_init_args`; its `output_path` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_init(args: *const InitArgs) -> Status {
    call(|| {
        register_metadata();
        let mut flags = 0;
        if !args.is_null() {
            // SAFETY: non-NULL; the caller guarantees the first 4 bytes (struct_size) exist.
            let size = unsafe { std::ptr::addr_of!((*args).struct_size).read_unaligned() };
            if size < 8 {
                return Err(Failure::new(
                    ERROR_INVALID_ARGUMENT,
                    format!("metron_init: args->struct_size is {size}; set it to sizeof(metron_init_args)"),
                ));
            }
            // SAFETY: struct_size >= 8 covers `flags`.
            flags = unsafe { (*args).flags };
            if size as usize >= std::mem::size_of::<InitArgs>() {
                // SAFETY: struct_size covers `output_path`.
                let path = unsafe { (*args).output_path };
                if !path.is_null() {
                    if preload::started() {
                        return Err(Failure::new(
                            ERROR_ALREADY_STARTED,
                            "metron_init: output_path given after Metron already started (an earlier Metron call started it); call metron_init first",
                        ));
                    }
                    // SAFETY: non-NULL and NUL-terminated per the contract.
                    let path = unsafe { CStr::from_ptr(path) }
                        .to_string_lossy()
                        .into_owned();
                    std::env::set_var("METRON_OUTPUT_PATH", path);
                }
            }
        }
        preload::mark_started();
        if off_in_child() || !metron::init() {
            return Err(Failure::new(
                ERROR_DISABLED,
                "metron_init: Metron is turned off (METRON_ENABLED=0, or a forked child with METRON_FORK=disable); every call will succeed and record nothing",
            ));
        }
        if flags & INIT_START_STOPPED != 0 {
            metron::set_collecting(false);
        }
        Ok(())
    })
}

/// Ends the run and writes the run folder (idempotent).
#[no_mangle]
pub extern "C" fn metron_finalize() -> Status {
    call(|| {
        if !off_in_child() {
            metron::finish();
        }
        Ok(())
    })
}

/// Delivers everything recorded so far.
#[no_mangle]
pub extern "C" fn metron_flush() -> Status {
    call(|| {
        if !off_in_child() {
            metron::flush();
        }
        Ok(())
    })
}

/// Turns recording on for the whole process.
#[no_mangle]
pub extern "C" fn metron_start() -> Status {
    call(|| {
        preload::mark_started();
        if !off_in_child() {
            metron::set_collecting(true);
        }
        Ok(())
    })
}

/// Turns recording off for the whole process (open regions still end).
#[no_mangle]
pub extern "C" fn metron_stop() -> Status {
    call(|| {
        preload::mark_started();
        if !off_in_child() {
            metron::set_collecting(false);
        }
        Ok(())
    })
}

/// Turns recording on for the calling thread.
#[no_mangle]
pub extern "C" fn metron_thread_start() -> Status {
    call(|| {
        metron::resume_thread();
        Ok(())
    })
}

/// Turns recording off for the calling thread (open regions still end).
#[no_mangle]
pub extern "C" fn metron_thread_stop() -> Status {
    call(|| {
        metron::pause_thread();
        Ok(())
    })
}

/// Names the calling thread.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_set_thread_name(name: *const c_char) -> Status {
    call(|| {
        if name.is_null() {
            return Err(null("metron_set_thread_name: the name"));
        }
        if !off_in_child() {
            // SAFETY: non-NULL and NUL-terminated per the contract.
            metron::set_thread_name(&unsafe { CStr::from_ptr(name) }.to_string_lossy());
        }
        Ok(())
    })
}

// ---- regions ----------------------------------------------------------------------------------

/// Begins region `name` on this thread.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_region_begin(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    call_fast(|| unsafe { begin("metron_region_begin", name, OpenKind::Region) })
}

/// Ends region `name`, the innermost open region of this thread.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_region_end(name: *const c_char) -> Status {
    // SAFETY: forwarded contract.
    call_fast(|| unsafe { end("metron_region_end", Some(name), OpenKind::Region) })
}

/// `metron_id`: an interned region name; 0 is never a valid id.
pub type Id = u32;

/// The id of region `name` for `metron_region_begin_id` / `metron_region_end_id`, or 0 when
/// `name` is NULL (an error, counted). Interns `name` (a locked table): call it once per name
/// and keep the id.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_region_id(name: *const c_char) -> Id {
    let interned = catch_unwind(AssertUnwindSafe(|| {
        if name.is_null() {
            fail(null("metron_region_id: the name"));
            return 0;
        }
        // SAFETY: non-NULL and NUL-terminated per the contract.
        unsafe { thread_state::intern_region(name) }
    }));
    interned.unwrap_or_else(|_| {
        internal();
        0
    })
}

/// Begins region `id` (from `metron_region_id`) on this thread.
#[no_mangle]
pub extern "C" fn metron_region_begin_id(id: Id) -> Status {
    call_fast(|| begin_id("metron_region_begin_id", id))
}

/// Ends region `id`, the innermost open region of this thread.
#[no_mangle]
pub extern "C" fn metron_region_end_id(id: Id) -> Status {
    call_fast(|| end_id("metron_region_end_id", id))
}

/// Begins perf marker `name` of `group` (group may be NULL).
///
/// # Safety
/// `name` and `group` are NULL or valid NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn metron_perf_marker_begin(
    name: *const c_char,
    group: *const c_char,
) -> Status {
    call(|| {
        // SAFETY: forwarded contract.
        reported(unsafe { begin("metron_perf_marker_begin", name, OpenKind::Marker) })?;
        if group.is_null() || off_in_child() {
            return Ok(());
        }
        let annotation = Annotation {
            key: c"group".as_ptr(),
            kind: annotation_type::STRING,
            reserved: 0,
            value: AnnotationData { string: group },
        };
        with_state("metron_perf_marker_begin", |st| {
            // SAFETY: the key is a literal; `group` is non-NULL and NUL-terminated per the
            // contract.
            unsafe { annotate_one(st, "metron_perf_marker_begin", &annotation) }
        })
    })
}

/// Ends the most recently begun perf marker.
#[no_mangle]
pub extern "C" fn metron_perf_marker_end() -> Status {
    // SAFETY: no name is passed.
    call_fast(|| unsafe { end("metron_perf_marker_end", None, OpenKind::Marker) })
}

/// Begins region `name` with `count` annotations.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string; `annotations` is NULL or points to
/// `count` valid `metron_annotation`s whose strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn metron_push(
    name: *const c_char,
    annotations: *const Annotation,
    count: usize,
) -> Status {
    call(|| {
        if annotations.is_null() && count > 0 {
            return Err(null("metron_push: the annotation array (count > 0)"));
        }
        let list: &[Annotation] = if count == 0 {
            &[]
        } else {
            // SAFETY: non-NULL with `count` elements per the contract.
            unsafe { std::slice::from_raw_parts(annotations, count) }
        };
        // Check every annotation before beginning, so a bad one leaves nothing open.
        for a in list {
            if a.key.is_null() {
                return Err(null("metron_push: an annotation key"));
            }
            if a.kind == annotation_type::STRING
                // SAFETY: the union field named by `kind`.
                && unsafe { a.value.string }.is_null()
            {
                return Err(null("metron_push: an annotation's string value"));
            }
            if !(annotation_type::STRING..=annotation_type::POINTER).contains(&a.kind) {
                return Err(Failure::new(
                    ERROR_INVALID_ARGUMENT,
                    format!("metron_push: annotation type {} is not one of METRON_ANNOTATION_STRING (1), INT64 (2), UINT64 (3), DOUBLE (4), POINTER (5)", a.kind),
                ));
            }
        }
        // SAFETY: forwarded contract.
        reported(unsafe { begin("metron_push", name, OpenKind::Push) })?;
        if list.is_empty() || off_in_child() {
            return Ok(());
        }
        with_state("metron_push", |st| {
            for a in list {
                // SAFETY: forwarded contract (checked non-NULL above).
                unsafe { annotate_one(st, "metron_push", a) }?;
            }
            Ok(())
        })
    })
}

/// Ends the innermost region begun with `metron_push`.
#[no_mangle]
pub extern "C" fn metron_pop() -> Status {
    // SAFETY: no name is passed.
    call_fast(|| unsafe { end("metron_pop", None, OpenKind::Push) })
}

/// Annotates the innermost open region.
///
/// # Safety
/// `annotation` is NULL or points to a valid `metron_annotation` whose strings are NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate(annotation: *const Annotation) -> Status {
    call(|| {
        if annotation.is_null() {
            return Err(null("metron_annotate: the annotation"));
        }
        if off_in_child() {
            return Ok(());
        }
        // SAFETY: non-NULL and valid per the contract.
        let a = unsafe { *annotation };
        // SAFETY: forwarded contract.
        with_state("metron_annotate", |st| unsafe {
            annotate_one(st, "metron_annotate", &a)
        })
    })
}

/// Annotates with a typed value: the body shared by the `metron_annotate_*` exports.
///
/// # Safety
/// `key` is NULL or NUL-terminated; `value` is valid for `kind`.
unsafe fn annotate_typed(
    what: &'static str,
    key: *const c_char,
    kind: u32,
    value: AnnotationData,
) -> Status {
    call(|| {
        if off_in_child() {
            return if key.is_null() {
                Err(null(&format!("{what}: the key")))
            } else {
                Ok(())
            };
        }
        let a = Annotation {
            key,
            kind,
            reserved: 0,
            value,
        };
        // SAFETY: forwarded contract.
        with_state(what, |st| unsafe { annotate_one(st, what, &a) })
    })
}

/// Annotates the innermost open region with a string.
///
/// # Safety
/// `key` and `value` are NULL or valid NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate_string(
    key: *const c_char,
    value: *const c_char,
) -> Status {
    // SAFETY: forwarded contract.
    unsafe {
        annotate_typed(
            "metron_annotate_string",
            key,
            annotation_type::STRING,
            AnnotationData { string: value },
        )
    }
}

/// Annotates the innermost open region with a signed integer.
///
/// # Safety
/// `key` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate_int64(key: *const c_char, value: i64) -> Status {
    // SAFETY: forwarded contract.
    unsafe {
        annotate_typed(
            "metron_annotate_int64",
            key,
            annotation_type::INT64,
            AnnotationData { int64: value },
        )
    }
}

/// Annotates the innermost open region with an unsigned integer.
///
/// # Safety
/// `key` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate_uint64(key: *const c_char, value: u64) -> Status {
    // SAFETY: forwarded contract.
    unsafe {
        annotate_typed(
            "metron_annotate_uint64",
            key,
            annotation_type::UINT64,
            AnnotationData { uint64: value },
        )
    }
}

/// Annotates the innermost open region with a double.
///
/// # Safety
/// `key` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate_double(key: *const c_char, value: f64) -> Status {
    // SAFETY: forwarded contract.
    unsafe {
        annotate_typed(
            "metron_annotate_double",
            key,
            annotation_type::DOUBLE,
            AnnotationData { float64: value },
        )
    }
}

/// Annotates the innermost open region with an address (shown as `0x...`).
///
/// # Safety
/// `key` is NULL or a valid NUL-terminated string. `value` is never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn metron_annotate_pointer(
    key: *const c_char,
    value: *const c_void,
) -> Status {
    // SAFETY: forwarded contract.
    unsafe {
        annotate_typed(
            "metron_annotate_pointer",
            key,
            annotation_type::POINTER,
            AnnotationData { pointer: value },
        )
    }
}

// ---- instants and counters --------------------------------------------------------------------

/// Records instant mark `name`.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_mark(name: *const c_char) -> Status {
    call_fast(|| {
        if name.is_null() {
            return fail(null("metron_mark: the name"));
        }
        if off_in_child() {
            return OK;
        }
        with_state_fast("metron_mark", |st| {
            // SAFETY: non-NULL and NUL-terminated per the contract.
            let (id, _) = unsafe { st.lookup(name, CallsiteKind::Instant) };
            by_id::mark(id);
            OK
        })
    })
}

/// Records `value` for counter `name`.
///
/// # Safety
/// `name` is NULL or a valid NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn metron_counter(name: *const c_char, value: f64) -> Status {
    call_fast(|| {
        if name.is_null() {
            return fail(null("metron_counter: the name"));
        }
        if off_in_child() {
            return OK;
        }
        with_state_fast("metron_counter", |st| {
            // SAFETY: non-NULL and NUL-terminated per the contract.
            let (id, _) = unsafe { st.lookup(name, CallsiteKind::Counter) };
            by_id::counter(id, value);
            OK
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_are_shown_in_hex() {
        let mut buf = [0u8; 18];
        assert_eq!(pointer_text(0, &mut buf), "0x0");
        assert_eq!(pointer_text(0xdead_beef, &mut buf), "0xdeadbeef");
        assert_eq!(pointer_text(usize::MAX, &mut buf), "0xffffffffffffffff");
    }

    #[test]
    fn every_status_has_a_nul_terminated_description() {
        for (name, text) in STATUSES {
            assert!(text.ends_with('\0'), "{name}");
        }
        assert_eq!(STATUSES.len(), ERROR_TOO_DEEP as usize + 1);
    }

    #[test]
    fn the_struct_layouts_match_the_header() {
        assert_eq!(std::mem::size_of::<InitArgs>(), 16);
        assert_eq!(std::mem::size_of::<Annotation>(), 24);
        assert_eq!(std::mem::offset_of!(Annotation, value), 16);
    }
}
