//! ROCTx ingestion: `libmetron.so` defines the ROCTx API (`roctx.h` of ROCprofiler-SDK), so an
//! application preloaded with it (`metron run`) has its ROCTx markers recorded by Metron. Each
//! call is recorded, then forwarded to the real ROCTx library found with `dlsym(RTLD_NEXT)`,
//! whose return value the application gets unchanged. Without a real library the return
//! values are ROCTx's own: push returns the 0-based level, pop the level it closed or a
//! negative value, the others 0.
//!
//! | ROCTx | Metron |
//! | --- | --- |
//! | `roctxRangePushA` / `roctxRangePop` | nested regions of the calling thread (a stack of their own, separate from NVTX's) |
//! | `roctxRangeStartA` / `roctxRangeStop` | async slices |
//! | `roctxMarkA` | an instant |
//! | `roctxProfilerPause(0)` / `roctxProfilerResume(0)` | `metron::set_collecting(false / true)`; with the calling thread's tid: `pause_thread` / `resume_thread` |
//! | `roctxNameOsThread` | the calling thread's name in the outputs |
//! | `roctxNameHsaAgent`, `roctxNameHipDevice`, `roctxNameHipStream` | forwarded only |

use crate::nvtx::{self, CText, Message, ROCTX_DOMAIN};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `roctx_range_id_t`.
pub type RangeId = u64;
/// `roctx_thread_id_t`.
pub type ThreadId = u64;

/// A lazily resolved symbol of the next library (`dlsym(RTLD_NEXT, name)`).
struct Next {
    name: &'static CStr,
    /// 0: not looked up yet; 1: absent; otherwise the address.
    addr: AtomicUsize,
}

impl Next {
    const fn new(name: &'static CStr) -> Next {
        Next {
            name,
            addr: AtomicUsize::new(0),
        }
    }

    /// The next definition's address, if there is one.
    #[inline]
    fn get(&self) -> Option<usize> {
        let mut addr = self.addr.load(Ordering::Acquire);
        if addr == 0 {
            // SAFETY: `name` is NUL-terminated; RTLD_NEXT is a valid pseudo-handle.
            let found = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) } as usize;
            addr = if found == 0 { 1 } else { found };
            self.addr.store(addr, Ordering::Release);
        }
        (addr > 1).then_some(addr)
    }
}

static NEXT_MARK: Next = Next::new(c"roctxMarkA");
static NEXT_PUSH: Next = Next::new(c"roctxRangePushA");
static NEXT_POP: Next = Next::new(c"roctxRangePop");
static NEXT_START: Next = Next::new(c"roctxRangeStartA");
static NEXT_STOP: Next = Next::new(c"roctxRangeStop");
static NEXT_PAUSE: Next = Next::new(c"roctxProfilerPause");
static NEXT_RESUME: Next = Next::new(c"roctxProfilerResume");
static NEXT_NAME_THREAD: Next = Next::new(c"roctxNameOsThread");
static NEXT_NAME_AGENT: Next = Next::new(c"roctxNameHsaAgent");
static NEXT_NAME_DEVICE: Next = Next::new(c"roctxNameHipDevice");
static NEXT_NAME_STREAM: Next = Next::new(c"roctxNameHipStream");

/// The real library's range ids → Metron's (start/stop with a real library present).
static RANGES: Mutex<Option<HashMap<RangeId, u64>>> = Mutex::new(None);

/// Reinterprets a resolved address as a function of type `F`.
macro_rules! next_fn {
    ($next:expr, $ty:ty) => {
        $next.get().map(|addr| {
            // SAFETY: `addr` is the address of the next library's definition of the same
            // ROCTx function, whose signature (roctx.h) is `$ty`.
            unsafe { std::mem::transmute::<usize, $ty>(addr) }
        })
    };
}

#[inline(always)]
fn guarded<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Marks an event.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn roctxMarkA(message: *const c_char) {
    guarded((), || {
        // SAFETY: NULL or NUL-terminated (contract).
        unsafe { nvtx::mark(&ROCTX_DOMAIN, message_of(message)) };
        if let Some(f) = next_fn!(NEXT_MARK, unsafe extern "C" fn(*const c_char)) {
            // SAFETY: the real roctxMarkA, called with the caller's argument.
            unsafe { f(message) }
        }
    })
}

/// Starts a nested range; returns its 0-based level.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn roctxRangePushA(message: *const c_char) -> c_int {
    // The fast path cannot panic (see `nvtx::push_fast`); the rest is guarded.
    // SAFETY: NULL or NUL-terminated (contract).
    let fast = unsafe { nvtx::push_fast(nvtx::ROCTX_INDEX, message) }
        // SAFETY: as above.
        .or_else(|| unsafe { nvtx::push_long(nvtx::ROCTX_INDEX, message) });
    guarded(-1, || {
        // SAFETY: NULL or NUL-terminated (contract).
        let level =
            fast.unwrap_or_else(|| unsafe { nvtx::push(&ROCTX_DOMAIN, message_of(message), None) });
        match next_fn!(NEXT_PUSH, unsafe extern "C" fn(*const c_char) -> c_int) {
            // SAFETY: the real roctxRangePushA, called with the caller's argument.
            Some(f) => unsafe { f(message) },
            None => level,
        }
    })
}

/// Ends the innermost nested range; returns the level it was started at, or a negative value
/// when none was open.
#[no_mangle]
pub extern "C" fn roctxRangePop() -> c_int {
    // The fast path cannot panic (see `nvtx::pop_fast`); the rest is guarded.
    let fast = nvtx::pop_fast(nvtx::ROCTX_INDEX);
    guarded(-1, || {
        let level = fast.unwrap_or_else(|| nvtx::pop(&ROCTX_DOMAIN));
        match next_fn!(NEXT_POP, unsafe extern "C" fn() -> c_int) {
            // SAFETY: the real roctxRangePop (no arguments).
            Some(f) => unsafe { f() },
            None => level,
        }
    })
}

/// Starts a process range (may stop on another thread); returns its id.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn roctxRangeStartA(message: *const c_char) -> RangeId {
    guarded(0, || {
        // SAFETY: NULL or NUL-terminated (contract).
        let ours = unsafe { nvtx::start(&ROCTX_DOMAIN, message_of(message)) };
        match next_fn!(NEXT_START, unsafe extern "C" fn(*const c_char) -> RangeId) {
            Some(f) => {
                // SAFETY: the real roctxRangeStartA, called with the caller's argument.
                let theirs = unsafe { f(message) };
                RANGES
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(HashMap::new)
                    .insert(theirs, ours);
                theirs
            }
            None => ours,
        }
    })
}

/// Stops a process range.
#[no_mangle]
pub extern "C" fn roctxRangeStop(id: RangeId) {
    guarded((), || {
        match next_fn!(NEXT_STOP, unsafe extern "C" fn(RangeId)) {
            Some(f) => {
                let ours = RANGES
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_mut()
                    .and_then(|m| m.remove(&id));
                if let Some(ours) = ours {
                    nvtx::end(ours);
                }
                // SAFETY: the real roctxRangeStop, called with the caller's argument.
                unsafe { f(id) }
            }
            None => nvtx::end(id),
        }
    })
}

/// Pauses collection: the whole process (`tid` 0) or the calling thread (its tid).
#[no_mangle]
pub extern "C" fn roctxProfilerPause(tid: ThreadId) -> c_int {
    guarded(-1, || {
        control(tid, false);
        match next_fn!(NEXT_PAUSE, unsafe extern "C" fn(ThreadId) -> c_int) {
            // SAFETY: the real roctxProfilerPause, called with the caller's argument.
            Some(f) => unsafe { f(tid) },
            None => 0,
        }
    })
}

/// Resumes collection: the whole process (`tid` 0) or the calling thread (its tid).
#[no_mangle]
pub extern "C" fn roctxProfilerResume(tid: ThreadId) -> c_int {
    guarded(-1, || {
        control(tid, true);
        match next_fn!(NEXT_RESUME, unsafe extern "C" fn(ThreadId) -> c_int) {
            // SAFETY: the real roctxProfilerResume, called with the caller's argument.
            Some(f) => unsafe { f(tid) },
            None => 0,
        }
    })
}

fn control(tid: ThreadId, on: bool) {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() } as ThreadId;
    match (tid, on) {
        (0, on) => metron::set_collecting(on),
        (t, false) if t == me => metron::pause_thread(),
        (t, true) if t == me => metron::resume_thread(),
        _ => {}
    }
}

/// Names the calling thread in the outputs (the thread itself is not renamed).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn roctxNameOsThread(name: *const c_char) -> c_int {
    guarded(-1, || {
        if !name.is_null() {
            // SAFETY: non-NULL and NUL-terminated (contract).
            let text = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            nvtx::name_thread(0, &text);
        }
        match next_fn!(
            NEXT_NAME_THREAD,
            unsafe extern "C" fn(*const c_char) -> c_int
        ) {
            // SAFETY: the real roctxNameOsThread, called with the caller's argument.
            Some(f) => unsafe { f(name) },
            None => 0,
        }
    })
}

/// Forwarded to the real library (Metron has no HSA agent names); 0 without one.
///
/// # Safety
/// The arguments are passed on unchanged.
#[no_mangle]
pub unsafe extern "C" fn roctxNameHsaAgent(name: *const c_char, agent: *const c_void) -> c_int {
    guarded(-1, || {
        match next_fn!(
            NEXT_NAME_AGENT,
            unsafe extern "C" fn(*const c_char, *const c_void) -> c_int
        ) {
            // SAFETY: the real roctxNameHsaAgent, called with the caller's arguments.
            Some(f) => unsafe { f(name, agent) },
            None => 0,
        }
    })
}

/// Forwarded to the real library; 0 without one.
///
/// # Safety
/// The arguments are passed on unchanged.
#[no_mangle]
pub unsafe extern "C" fn roctxNameHipDevice(name: *const c_char, device: c_int) -> c_int {
    guarded(-1, || {
        match next_fn!(
            NEXT_NAME_DEVICE,
            unsafe extern "C" fn(*const c_char, c_int) -> c_int
        ) {
            // SAFETY: the real roctxNameHipDevice, called with the caller's arguments.
            Some(f) => unsafe { f(name, device) },
            None => 0,
        }
    })
}

/// Forwarded to the real library; 0 without one.
///
/// # Safety
/// The arguments are passed on unchanged.
#[no_mangle]
pub unsafe extern "C" fn roctxNameHipStream(name: *const c_char, stream: *const c_void) -> c_int {
    guarded(-1, || {
        match next_fn!(
            NEXT_NAME_STREAM,
            unsafe extern "C" fn(*const c_char, *const c_void) -> c_int
        ) {
            // SAFETY: the real roctxNameHipStream, called with the caller's arguments.
            Some(f) => unsafe { f(name, stream) },
            None => 0,
        }
    })
}

/// The message of a C string (`Missing` for NULL).
///
/// # Safety
/// `ptr` is NULL or NUL-terminated, valid during the call.
unsafe fn message_of(ptr: *const c_char) -> Message {
    // SAFETY: forwarded contract.
    unsafe { CText::new(ptr) }.map_or(Message::Missing, Message::Ascii)
}
